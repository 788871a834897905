"""The one polling thread between a backend and everything that shows its readings.

Tiers: static facts are read once by ``open()``; the fast tier (utilization, memory, power,
temperatures, clocks) every ``interval``; the slow tier (processes, PCIe/NVLink throughput, ECC)
every ``slow_interval``. Slow fields are carried forward between slow reads, so every snapshot is
complete.

Polls never overlap: a single long-lived thread polls, then sleeps until the next due time. If a
poll overruns (a hung driver call), the ticks it missed are skipped, not queued.
"""

from __future__ import annotations

import dataclasses
import logging
import signal
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from gputui.backends.base import Backend
from gputui.history import History
from gputui.host import ProcessEnricher
from gputui.model import (
    SLOW_SAMPLE_FIELDS,
    Finding,
    GpuSample,
    NodeInfo,
    ProcessSample,
    Snapshot,
)

log = logging.getLogger(__name__)

MIN_INTERVAL = 0.1
INTERVAL_PRESETS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0)
"""The steps of the dashboard's interval keys (+/-) and palette commands."""
DEFAULT_SLOW_INTERVAL = 3.0


class HealthEvaluator(Protocol):
    """Turns each reading (and the history so far) into the findings listed with it."""

    def update(self, snapshot: Snapshot, history: History) -> tuple[Finding, ...]: ...

    def acknowledge(self, key: str | None = None) -> int:
        """Drop acknowledged findings (one key, or every cleared / event one); how many."""


SnapshotCallback = Callable[[Snapshot], None]
ErrorCallback = Callable[[BaseException], None]


class Sampler:
    """Polls a backend into immutable snapshots and keeps their history."""

    def __init__(
        self,
        backend: Backend,
        *,
        interval: float = 1.0,
        slow_interval: float | None = None,
        clock: Callable[[], float] | None = None,
        history: History | None = None,
        node: NodeInfo | None = None,
        health: HealthEvaluator | None = None,
    ) -> None:
        """``node`` is passed when the backend is already open (see ``backends.open_backend``).
        ``clock`` defaults to the wall clock, or to the replay clock of a backend with playback."""
        self.backend = backend
        self.playback = backend.playback
        """The replay controls when the backend plays back a recording, else None."""
        self.interval = max(interval, MIN_INTERVAL)
        self.slow_interval = max(
            slow_interval if slow_interval is not None else DEFAULT_SLOW_INTERVAL, self.interval
        )
        if clock is None:
            clock = self.playback.clock if self.playback is not None else time.time
        self.clock = clock
        self.history = history if history is not None else History()
        self.health = health
        self.node: NodeInfo | None = node
        self.latest: Snapshot | None = None
        self._enricher = ProcessEnricher() if backend.enrich_processes else None
        self._last_slow: float | None = None
        self._slow_fields: dict[int, dict[str, Any]] = {}
        self._processes: tuple[ProcessSample, ...] = ()
        self._backend_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._listeners: list[SnapshotCallback] = []
        self._polls_in_flight = 0
        self.max_polls_in_flight = 0
        """Highest number of polls ever running at once: 1 unless polls overlapped (a bug)."""

    # -- one-shot use -----------------------------------------------------------------------------

    def open(self) -> NodeInfo:
        """Open the backend (static tier). Raises BackendUnavailable."""
        with self._backend_lock:
            self.node = self.backend.open()
        return self.node

    def poll(self) -> Snapshot:
        """Take one reading now (fast tier, plus the slow tier when it is due)."""
        if self.node is None:
            self.open()
        assert self.node is not None
        with self._backend_lock:
            self._polls_in_flight += 1
            self.max_polls_in_flight = max(self.max_polls_in_flight, self._polls_in_flight)
            try:
                snapshot = self._read(self.node)
            finally:
                self._polls_in_flight -= 1
        self.history.record(snapshot)
        if self.health is not None:
            snapshot = dataclasses.replace(
                snapshot, findings=self.health.update(snapshot, self.history)
            )
        self.latest = snapshot
        for listener in tuple(self._listeners):
            try:
                listener(snapshot)
            except Exception:  # a failing listener (a full disk) must not stop the readings
                log.exception("snapshot listener failed; removing it")
                self.remove_listener(listener)
        return snapshot

    def add_listener(self, listener: SnapshotCallback) -> None:
        """Call ``listener(snapshot)`` after every poll, on the polling thread (e.g. a recorder
        writing each reading to a file). A listener that raises is removed."""
        self._listeners.append(listener)

    def remove_listener(self, listener: SnapshotCallback) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def _read(self, node: NodeInfo) -> Snapshot:
        now = self.clock()
        # A replayed reading is complete as recorded: carrying slow fields over could mix in
        # another moment's (after a seek).
        slow = (
            self.playback is not None
            or self._last_slow is None
            or now - self._last_slow >= self.slow_interval - 1e-6
        )
        gpus = self.backend.read_gpus(now, slow=slow)
        if slow:
            self._last_slow = now
            self._slow_fields = {
                s.index: {f: getattr(s, f) for f in SLOW_SAMPLE_FIELDS} for s in gpus if not s.lost
            }
            processes = self.backend.read_processes(now)
            if self._enricher is not None:
                processes = self._enricher.enrich(processes)
            self._processes = tuple(processes)
        else:
            gpus = [self._carry_slow_fields(s) for s in gpus]
        lost = {s.index for s in gpus if s.lost}
        if lost:
            self._processes = tuple(p for p in self._processes if p.gpu_index not in lost)
        host = self.backend.read_host(now)
        events = tuple(self.backend.read_events(now))
        return Snapshot(
            timestamp=now,
            node=node,
            gpus=tuple(gpus),
            processes=self._processes,
            host=host,
            events=events,
        )

    def _carry_slow_fields(self, sample: GpuSample) -> GpuSample:
        carried = self._slow_fields.get(sample.index)
        if sample.lost or not carried:
            return sample
        return dataclasses.replace(sample, **carried)

    def acknowledge(self, key: str | None = None) -> int:
        """Acknowledge findings in the health evaluator (see ``HealthMonitor.acknowledge``)."""
        return 0 if self.health is None else self.health.acknowledge(key)

    def signal_process(self, pid: int, sig: signal.Signals) -> None:
        """Send a signal through the backend (between polls, never during one)."""
        with self._backend_lock:
            self.backend.signal_process(pid, sig)

    def close(self) -> None:
        self.stop()
        with self._backend_lock:
            self.backend.close()

    # -- background use ---------------------------------------------------------------------------

    def start(
        self,
        on_snapshot: SnapshotCallback,
        on_error: ErrorCallback | None = None,
    ) -> None:
        """Poll on a background thread, calling ``on_snapshot`` (from that thread) after each
        poll. ``on_snapshot`` must be cheap and thread-safe, e.g. Textual's ``post_message``."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._run, args=(on_snapshot, on_error), name="gputui-sampler", daemon=True
        )
        self._thread.start()

    def _run(self, on_snapshot: SnapshotCallback, on_error: ErrorCallback | None) -> None:
        next_due = time.monotonic()
        while not self._stop.is_set():
            try:
                on_snapshot(self.poll())
            except Exception as exc:  # a backend bug must not silently kill the sampler
                log.exception("poll failed")
                if on_error is not None:
                    on_error(exc)
            next_due += self.interval
            now = time.monotonic()
            if next_due <= now:  # overran: skip the missed ticks rather than queue them
                next_due = now + self.interval
            self._wake.wait(next_due - now)
            if self._wake.is_set():
                self._wake.clear()
                next_due = time.monotonic()

    def refresh_now(self) -> None:
        """Poll as soon as the current poll (if any) finishes."""
        self._wake.set()

    def set_interval(self, interval: float) -> None:
        self.interval = max(interval, MIN_INTERVAL)
        self.slow_interval = max(self.slow_interval, self.interval)

    def stop(self, timeout: float = 2.0) -> None:
        thread = self._thread
        if thread is None:
            return
        self._stop.set()
        self._wake.set()
        thread.join(timeout)
        self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()
