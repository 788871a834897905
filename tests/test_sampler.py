"""The sampler: tiers, carried slow fields, lost GPUs, one thread, no overlapping polls."""

from __future__ import annotations

import itertools
import signal
import threading
import time

from tests.fakes.clock import FakeClock

from gputui.backends.base import Backend
from gputui.core.model import GpuInfo, GpuSample, NodeInfo, ProcessSample
from gputui.engine.sampler import Sampler


class CountingBackend(Backend):
    """A scripted backend that records how it was called."""

    name = "counting"
    enrich_processes = False

    def __init__(self, gpus: int = 2, poll_seconds: float = 0.0) -> None:
        self.gpus = gpus
        self.poll_seconds = poll_seconds
        self.reads: list[tuple[float, bool]] = []
        self.process_reads = 0
        self.lost: set[int] = set()
        self.active = 0
        self.max_active = 0
        self.signals: list[tuple[int, signal.Signals]] = []
        self.closed = False

    def open(self) -> NodeInfo:
        infos = tuple(GpuInfo(i, "Fake GPU", f"GPU-{i}", "nvidia") for i in range(self.gpus))
        return NodeInfo(hostname="test", backend=self.name, gpus=infos)

    def read_gpus(self, now: float, *, slow: bool) -> list[GpuSample]:
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            if self.poll_seconds:
                time.sleep(self.poll_seconds)
            self.reads.append((now, slow))
            return [
                GpuSample(i, now, lost=True)
                if i in self.lost
                else GpuSample(
                    i,
                    now,
                    utilization_gpu_pct=float(len(self.reads)),
                    ecc_volatile_uncorrected=len(self.reads) if slow else None,
                )
                for i in range(self.gpus)
            ]
        finally:
            self.active -= 1

    def read_processes(self, now: float) -> list[ProcessSample]:
        self.process_reads += 1
        return [ProcessSample(pid=100 + i, gpu_index=i) for i in range(self.gpus)]

    def read_host(self, now: float):
        return None

    def signal_process(self, pid: int, sig: signal.Signals) -> None:
        self.signals.append((pid, sig))

    def close(self) -> None:
        self.closed = True


def test_slow_tier_runs_on_its_own_period_and_its_fields_are_carried() -> None:
    backend = CountingBackend()
    clock = FakeClock(1000.0)
    sampler = Sampler(backend, interval=1.0, slow_interval=3.0, clock=clock)
    snapshots = []
    for _ in range(7):
        snapshots.append(sampler.poll())
        clock.now += 1.0
    assert [slow for _, slow in backend.reads] == [True, False, False, True, False, False, True]
    assert backend.process_reads == 3
    # Between slow reads the last slow values are carried, so every snapshot is complete.
    assert [s.gpus[0].ecc_volatile_uncorrected for s in snapshots] == [1, 1, 1, 4, 4, 4, 7]
    assert all(len(s.processes) == 2 for s in snapshots)
    assert len(sampler.history) == 7


def test_refresh_now_with_processes_reads_them_at_the_next_poll() -> None:
    """After a signal the process list is read again at once, not when the slow tier is due
    (a killed process would otherwise stay listed with its memory for seconds)."""
    backend = CountingBackend()
    clock = FakeClock(1000.0)
    sampler = Sampler(backend, interval=1.0, slow_interval=10.0, clock=clock)
    sampler.poll()
    clock.now += 1
    sampler.poll()
    assert backend.process_reads == 1
    sampler.refresh_now(processes=True)
    clock.now += 1
    sampler.poll()
    assert backend.process_reads == 2
    clock.now += 1
    sampler.poll()  # then the slow tier's own period again
    assert backend.process_reads == 2
    assert not sampler.local_processes  # nothing enriched from this machine's /proc


def test_lost_gpu_drops_its_processes_and_keeps_others() -> None:
    backend = CountingBackend()
    clock = FakeClock(1000.0)
    sampler = Sampler(backend, interval=1.0, slow_interval=10.0, clock=clock)
    sampler.poll()
    backend.lost.add(1)
    clock.now += 1
    snapshot = sampler.poll()
    assert snapshot.sample(1).lost and snapshot.sample(1).ecc_volatile_uncorrected is None
    assert snapshot.sample(0).utilization_gpu_pct == 2.0
    assert [p.gpu_index for p in snapshot.processes] == [0]


def test_polls_never_overlap_and_missed_ticks_are_skipped() -> None:
    backend = CountingBackend(poll_seconds=0.15)
    sampler = Sampler(backend, interval=0.1)
    received: list[float] = []
    done = threading.Event()

    def on_snapshot(snapshot) -> None:
        received.append(snapshot.timestamp)
        if len(received) >= 4:
            done.set()

    threads_before = threading.active_count()
    sampler.start(on_snapshot)
    assert done.wait(5.0)
    # Two extra threads at most (the polling thread and the one reading the backend, so that a
    # hung driver call can be reported), however slow the backend is compared with the interval.
    assert threading.active_count() <= threads_before + 2
    sampler.stop()
    assert not sampler.running
    assert backend.max_active == 1  # counted in the backend, outside the sampler's lock
    # Each poll takes 0.15 s > interval: ticks were skipped, not queued back to back at 0 gap.
    gaps = [b - a for a, b in itertools.pairwise(received)]
    assert all(gap >= 0.14 for gap in gaps)


def test_refresh_now_wakes_the_thread_early() -> None:
    backend = CountingBackend()
    sampler = Sampler(backend, interval=60.0)
    got = threading.Semaphore(0)
    sampler.start(lambda s: got.release())
    assert got.acquire(timeout=5.0)  # the first poll happens at once
    sampler.refresh_now()
    assert got.acquire(timeout=5.0)  # not 60 s later
    sampler.stop()


def test_backend_error_is_reported_and_the_thread_survives() -> None:
    backend = CountingBackend()
    calls = {"n": 0}
    original = backend.read_gpus

    def flaky(now, *, slow):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("driver hiccup")
        return original(now, slow=slow)

    backend.read_gpus = flaky  # type: ignore[method-assign]
    sampler = Sampler(backend, interval=0.1)
    errors: list[BaseException] = []
    ok = threading.Event()
    sampler.start(lambda s: ok.set(), errors.append)
    assert ok.wait(5.0)
    sampler.stop()
    assert [str(e) for e in errors] == ["driver hiccup"]


def test_signal_goes_through_the_backend_and_close_closes_it() -> None:
    backend = CountingBackend()
    sampler = Sampler(backend)
    sampler.open()
    sampler.signal_process(123, signal.SIGTERM)
    sampler.close()
    assert backend.signals == [(123, signal.SIGTERM)]
    assert backend.closed


def test_events_and_findings_ride_on_each_snapshot() -> None:
    from gputui.core.model import Finding, GpuEvent

    backend = CountingBackend()
    queued = [GpuEvent(timestamp=1000.0, kind="xid", gpu_index=1, code=79)]
    backend.read_events = lambda now: [queued.pop()] if queued else []  # type: ignore[method-assign]

    class Health:
        def __init__(self) -> None:
            self.seen: list[tuple] = []

        def update(self, snapshot, history):
            self.seen.append((snapshot.events, len(history)))
            return (Finding("rule", "warn", f"{len(snapshot.events)} events"),)

    health = Health()
    sampler = Sampler(backend, clock=FakeClock(1000.0), health=health)
    first = sampler.poll()
    second = sampler.poll()
    assert [e.code for e in first.events] == [79] and second.events == ()
    assert first.findings[0].message == "1 events" and second.findings[0].message == "0 events"
    # Findings are evaluated after the reading went into history.
    assert [n for _, n in health.seen] == [1, 2]
    assert sampler.latest is second


def test_listeners_see_every_snapshot_and_a_failing_one_is_dropped() -> None:
    sampler = Sampler(CountingBackend(), clock=FakeClock(1000.0))
    seen: list = []

    def broken(snapshot) -> None:
        raise OSError("disk full")

    sampler.add_listener(seen.append)
    sampler.add_listener(broken)
    first = sampler.poll()
    second = sampler.poll()
    assert seen == [first, second]
    sampler.remove_listener(seen.append)
    sampler.poll()
    assert len(seen) == 2
