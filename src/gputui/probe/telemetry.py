"""GPU readings taken while the probe runs, so that each result can say what the GPU was doing
(clocks, power, throttling) during its test."""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Collection
from typing import Protocol

from gputui.core.model import GpuSample, Snapshot
from gputui.probe.verdict import Telemetry, summarize_samples

TELEMETRY_INTERVAL_S = 0.1
"""While a probe runs: about ten readings in a 1 s test, so a clock drop during it shows."""
WINDOW_SLACK_S = 0.1
"""Readings this long before a test's start still count for it (the poll interval jitters)."""


class TelemetrySource(Protocol):
    """Anything that takes a fresh reading on demand (a :class:`gputui.engine.sampler.Sampler`)."""

    def poll(self) -> Snapshot: ...


ReadingFn = Callable[[], "Snapshot | None"]
"""Returns the latest reading, or None when there is none yet."""


class TelemetryRecorder:
    """Polls ``read`` every ``interval`` seconds on its own thread and keeps the readings of
    ``gpus``; :meth:`window` summarises the ones taken during one test."""

    def __init__(
        self,
        gpus: Collection[int],
        read: ReadingFn | None = None,
        interval: float = TELEMETRY_INTERVAL_S,
    ) -> None:
        self.gpus = frozenset(gpus)
        self.read = read
        self.interval = interval
        self._samples: dict[int, list[tuple[float, GpuSample]]] = collections.defaultdict(list)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start polling (no-op without a reading function)."""
        if self.read is None or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout)

    def add(self, when: float, sample: GpuSample) -> None:
        """Record a reading taken at ``when`` (time.time())."""
        self._samples[sample.index].append((when, sample))

    def window(self, gpu: int, start: float, end: float) -> Telemetry | None:
        """Medians of the readings of ``gpu`` taken between ``start`` and ``end``, if any."""
        samples = [s for when, s in self._samples.get(gpu, []) if start <= when <= end]
        return summarize_samples(samples) if samples else None

    def for_test(self, gpu: int, received: float, seconds: float) -> Telemetry | None:
        """The readings of a test that took ``seconds`` and reported at ``received``."""
        return self.window(gpu, received - seconds - WINDOW_SLACK_S, received)

    def _loop(self) -> None:
        assert self.read is not None
        while not self._stop.is_set():
            try:
                snapshot = self.read()
            except Exception:  # telemetry is a bonus; the probe goes on without it
                snapshot = None
            now = time.time()
            if snapshot is not None:
                for sample in snapshot.gpus:
                    if sample.index in self.gpus:
                        self.add(now, sample)
            self._stop.wait(self.interval)
