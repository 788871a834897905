"""The one polling thread between a backend and everything that shows its readings.

Tiers: static facts are read once by ``open()``; the fast tier (utilization, memory, power,
temperatures, clocks) every ``interval``; the slow tier (processes, PCIe/NVLink throughput, ECC)
every ``slow_interval``. Slow fields are carried forward between slow reads, so every snapshot is
complete.

Polls never overlap: a single long-lived thread polls, then sleeps until the next due time. If a
poll overruns, the ticks it missed are skipped, not queued.

Deadlines: a driver call can hang for seconds or for ever (a sick GPU, a wedged driver) and
cannot be interrupted. ``poll(deadline=...)`` reads on a separate daemon thread and waits at most
that long; when the backend has not answered, it publishes the last reading again marked with a
:class:`~gputui.core.model.Stall` (the health rules turn it into a "not responding for N s" failure)
and starts no new read until the hung one returns. Nothing waits on the backend lock without a
timeout, so closing, quitting and signalling stay prompt while a call hangs.

Usage: every reading also goes through :attr:`Sampler.usage` (a
:class:`~gputui.core.usage.UsageMeter`) and the snapshot carries the energy and idle time per GPU
since the session started (``Snapshot.usage``); a replay carries the usage that was recorded.
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
from gputui.core.history import History
from gputui.core.model import (
    SLOW_SAMPLE_FIELDS,
    Finding,
    GpuSample,
    NodeInfo,
    ProcessSample,
    Snapshot,
    Stall,
    Usage,
)
from gputui.core.usage import UsageMeter
from gputui.health.performance import PerformanceJudge
from gputui.host.processes import ProcessEnricher

log = logging.getLogger(__name__)

MIN_INTERVAL = 0.1
INTERVAL_PRESETS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0)
"""The steps of the dashboard's interval keys (+/-) and palette commands."""
DEFAULT_SLOW_INTERVAL = 3.0
MIN_DEADLINE_S = 5.0
"""A reading that has not returned after max(this, 3 intervals) counts as not answered."""
LOCK_TIMEOUT_S = 1.0
"""How long closing or signalling waits for a reading in progress (a hung call holds it)."""


class HealthEvaluator(Protocol):
    """Turns each reading (and the history so far) into the findings listed with it."""

    def update(self, snapshot: Snapshot, history: History) -> tuple[Finding, ...]: ...

    def acknowledge(self, key: str | None = None) -> int:
        """Drop acknowledged findings (one key, or every cleared / event one); how many."""


class BackendBusy(TimeoutError):
    """The backend is in the middle of a reading that does not return (a hung driver call)."""


SnapshotCallback = Callable[[Snapshot], None]
ErrorCallback = Callable[[BaseException], None]


class _Pending:
    """One reading in progress on the reading thread."""

    def __init__(self, started_at: float) -> None:
        self.started_at = started_at
        """The sampler's clock when the reading was asked for."""
        self.started = time.monotonic()
        self.done = threading.Event()
        self.result: Snapshot | None = None
        self.error: BaseException | None = None


class _ReadingThread:
    """A daemon thread that takes one reading at a time on request. A reading that does not
    return is left running (it cannot be interrupted); asking again meanwhile gets the same one."""

    def __init__(self, read: Callable[[], Snapshot]) -> None:
        self._read = read
        self._cv = threading.Condition()
        self._pending: _Pending | None = None
        self._requested = False
        self._thread: threading.Thread | None = None

    def submit(self, started_at: float) -> _Pending:
        with self._cv:
            pending = self._pending
            if pending is not None and not pending.done.is_set():
                return pending
            pending = self._pending = _Pending(started_at)
            self._requested = True
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="gputui-reading", daemon=True
                )
                self._thread.start()
            self._cv.notify()
            return pending

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._requested:
                    self._cv.wait()
                self._requested = False
                pending = self._pending
            assert pending is not None
            try:
                pending.result = self._read()
            except BaseException as exc:  # handed to the poller, which raises it
                pending.error = exc
            pending.done.set()


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
        deadline: float | None = None,
        gpu_hour_price: float | None = None,
    ) -> None:
        """``node`` is passed when the backend is already open (see ``backends.open_backend``).
        ``clock`` defaults to the wall clock, or to the replay clock of a backend with playback.
        ``deadline``: how long the polling thread waits for a reading (default: max(5 s, 3
        intervals)). ``gpu_hour_price`` prices the idle GPUs (see :mod:`gputui.core.usage`)."""
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
        self.performance = PerformanceJudge()
        """Sets each reading's ``GpuSample.performance`` (why a GPU is as fast as it is)."""
        self._enricher = (
            ProcessEnricher(proc_root=backend.proc_root) if backend.enrich_processes else None
        )
        self.node: NodeInfo | None = None if node is None else self._with_namespace(node)
        self.latest: Snapshot | None = None
        self._deadline = deadline
        self.usage = UsageMeter(gpu_hour_price=gpu_hour_price)
        """Energy and idle accounting; its ``gpu_hour_price`` prices the idle GPUs on each
        snapshot's ``usage``."""
        self._last_slow: float | None = None
        self._slow_next = False
        """The next reading reads the slow tier too (the processes, after a signal)."""
        self._slow_fields: dict[int, dict[str, Any]] = {}
        self._processes: tuple[ProcessSample, ...] = ()
        self._process_errors: dict[int, str] = {}
        self._backend_lock = threading.Lock()
        self._reading = _ReadingThread(self._read_locked)
        self._last_complete: Snapshot | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._listeners: list[SnapshotCallback] = []

    @property
    def deadline(self) -> float:
        """Seconds a reading may take before it counts as not answered."""
        if self._deadline is not None:
            return self._deadline
        return max(MIN_DEADLINE_S, 3 * self.interval)

    # -- one-shot use -----------------------------------------------------------------------------

    def open(self) -> NodeInfo:
        """Open the backend (static tier). Raises BackendUnavailable."""
        with self._backend_lock:
            self.node = self._with_namespace(self.backend.open())
        return self.node

    def _with_namespace(self, node: NodeInfo) -> NodeInfo:
        """The node with the PID namespace gputui runs in, where gputui looks its processes up
        (views then say when the PIDs are host PIDs it cannot look up or signal)."""
        if self._enricher is None:
            return node
        return dataclasses.replace(node, pid_namespace=self._enricher.pid_namespace)

    def poll(self, *, deadline: float | None = None) -> Snapshot:
        """Take one reading now (fast tier, plus the slow tier when it is due).

        Without ``deadline`` the reading runs on the calling thread. With one, it runs on the
        reading thread and a backend that has not answered within ``deadline`` seconds gives a
        snapshot marked with a :class:`Stall` (see the module docstring)."""
        if self.node is None:
            self.open()
        if deadline is None:
            snapshot = self._read_locked()
        else:
            pending = self._reading.submit(self.clock())
            if self._wait(pending, deadline):
                if pending.error is not None:
                    raise pending.error
                assert pending.result is not None
                snapshot = pending.result
            else:
                snapshot = self._stalled(pending)
        return self._publish(snapshot)

    def _wait(self, pending: _Pending, deadline: float) -> bool:
        """Wait until ``deadline`` seconds after the reading started (not after this call: a
        reading already overdue is reported at once); False when it has not returned."""
        end = pending.started + deadline
        while not pending.done.wait(min(max(end - time.monotonic(), 0.0), 0.2)):
            if time.monotonic() >= end or self._stop.is_set():
                return pending.done.is_set()
        return True

    def _stalled(self, pending: _Pending) -> Snapshot:
        """The last complete reading again, marked as not answered since ``pending`` (the
        reading in progress) started."""
        last = self._last_complete
        node = self.node
        assert node is not None
        stall = Stall(
            since=pending.started_at,
            gpu_index=self.backend.reading_gpu,
            last_reading=last.timestamp if last is not None else None,
        )
        now = self.clock()
        if last is None:
            return Snapshot(timestamp=now, node=node, gpus=(), stall=stall)
        return dataclasses.replace(last, timestamp=now, events=(), findings=(), stall=stall)

    def _publish(self, snapshot: Snapshot) -> Snapshot:
        snapshot = self.performance.judge(snapshot, replayed=self.playback is not None)
        if snapshot.stall is None:
            self._last_complete = snapshot
            self.history.record(snapshot)  # a stalled reading adds no new values
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

    def _read_locked(self) -> Snapshot:
        with self._backend_lock:
            if self.backend.topology_pending:  # left out of open() for a faster first frame
                topology = self.backend.discover_topology()
                if topology is not None and self.node is not None:
                    self.node = dataclasses.replace(self.node, topology=topology)
            node = self.node
            assert node is not None
            return self._read(node)

    def _read(self, node: NodeInfo) -> Snapshot:
        now = self.clock()
        # A replayed reading is complete as recorded: carrying slow fields over could mix in
        # another moment's (after a seek).
        slow = (
            self.playback is not None
            or self._last_slow is None
            or self._slow_next
            or now - self._last_slow >= self.slow_interval - 1e-6
        )
        self._slow_next = False
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
            self._process_errors = self.backend.process_errors()
        else:
            gpus = [self._carry_slow_fields(s) for s in gpus]
        if self._process_errors:  # the process list's, as of its last read (like the list)
            gpus = [self._with_process_error(s) for s in gpus]
        lost = {s.index for s in gpus if s.lost}
        if lost:
            self._processes = tuple(p for p in self._processes if p.gpu_index not in lost)
        host = self.backend.read_host(now)
        events = tuple(self.backend.read_events(now))
        recorded = self._recorded(now)
        return Snapshot(
            timestamp=now,
            node=node,
            gpus=tuple(gpus),
            processes=self._processes,
            host=host,
            events=events,
            # A replayed reading the driver did not answer is replayed as not answered.
            stall=recorded.stall if recorded is not None else None,
            usage=self._usage(now, gpus, recorded),
        )

    def _recorded(self, now: float) -> Snapshot | None:
        """The recorded reading a replay is at (None for a live backend)."""
        if self.playback is None:
            return None
        recorded = getattr(self.backend, "snapshot_at", None)
        snapshot = recorded(now) if callable(recorded) else None
        return snapshot if isinstance(snapshot, Snapshot) else None

    def _usage(self, now: float, gpus: list[GpuSample], recorded: Snapshot | None) -> Usage | None:
        """This reading counted into the session's usage; for a replay, the usage recorded with
        the reading (counting again would start at the replay's start, or go back on a seek)."""
        if self.playback is None:
            return self.usage.update(now, gpus, interval=self.interval)
        return self.usage.priced(recorded.usage if recorded is not None else None)

    def _with_process_error(self, sample: GpuSample) -> GpuSample:
        error = self._process_errors.get(sample.index)
        if error is None or sample.lost or sample.error is not None:
            return sample
        return dataclasses.replace(sample, unanswered=(*sample.unanswered, ("processes", error)))

    def _carry_slow_fields(self, sample: GpuSample) -> GpuSample:
        """The last slow read's values of the slow fields this fast read left None."""
        carried = self._slow_fields.get(sample.index)
        if sample.lost or not carried:
            return sample
        missing = {k: v for k, v in carried.items() if getattr(sample, k) is None}
        return dataclasses.replace(sample, **missing) if missing else sample

    def acknowledge(self, key: str | None = None) -> int:
        """Acknowledge findings in the health evaluator (see ``HealthMonitor.acknowledge``)."""
        return 0 if self.health is None else self.health.acknowledge(key)

    def signal_process(self, pid: int, sig: signal.Signals) -> None:
        """Send a signal through the backend (between polls, never during one). Raises
        :class:`BackendBusy` while a reading hangs."""
        if not self._backend_lock.acquire(timeout=LOCK_TIMEOUT_S):
            raise BackendBusy("the GPU library is not answering; try again later")
        try:
            self.backend.signal_process(pid, sig)
        finally:
            self._backend_lock.release()

    def close(self) -> None:
        """Stop polling and close the backend. A reading that hangs keeps the backend: then it
        is left open (its thread is a daemon) rather than waited for."""
        self.stop()
        if self._enricher is not None:
            self._enricher.close()
        if not self._backend_lock.acquire(timeout=LOCK_TIMEOUT_S):
            log.debug("a reading is hung in the backend; leaving it open")
            return
        try:
            self.backend.close()
        finally:
            self._backend_lock.release()

    @property
    def stalled(self) -> bool:
        """Whether the latest snapshot says the backend has not answered."""
        latest = self.latest
        return latest is not None and latest.stall is not None

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
                snapshot = self.poll(deadline=self.deadline)
                if not self._stop.is_set():
                    on_snapshot(snapshot)
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

    def refresh_now(self, *, processes: bool = False) -> None:
        """Poll as soon as the current poll (if any) finishes; ``processes``: that reading
        reads the process list too, whenever the slow tier is due (after a signal)."""
        if processes:
            self._slow_next = True
        self._wake.set()

    @property
    def local_processes(self) -> bool:
        """Whether the processes are this machine's (their host facts are read here): not a
        simulated node's or a recording's."""
        return self._enricher is not None

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
