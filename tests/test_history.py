"""History ring buffers: bounded, aligned, NaN for unknown values, processes expire."""

from __future__ import annotations

import math

from gputui.core.history import PROCESS_RETENTION_S, History
from gputui.core.model import GpuSample, NodeInfo, ProcessSample, Snapshot

NODE = NodeInfo(hostname="h", backend="test", gpus=())


def snap(t: float, util: float | None, gpus: int = 1, procs: tuple = ()) -> Snapshot:
    samples = tuple(
        GpuSample(i, t, utilization_gpu_pct=util, memory_used_bytes=30, memory_free_bytes=70)
        for i in range(gpus)
    )
    return Snapshot(timestamp=t, node=NODE, gpus=samples, processes=procs)


def test_capacity_bounds_every_series() -> None:
    history = History(capacity=5)
    for t in range(12):
        history.record(snap(float(t), float(t)))
    assert history.gpu_series(0, "utilization_gpu_pct") == [7.0, 8.0, 9.0, 10.0, 11.0]
    assert history.timestamps() == [7.0, 8.0, 9.0, 10.0, 11.0]
    assert history.gpu_series(0, "utilization_gpu_pct", last=2) == [10.0, 11.0]


def test_unknown_values_are_nan_and_memory_pct_is_derived() -> None:
    history = History()
    history.record(snap(0.0, None))
    assert math.isnan(history.gpu_series(0, "utilization_gpu_pct")[0])
    assert history.gpu_series(0, "memory_used_pct") == [30.0]
    assert history.gpu_series(5, "utilization_gpu_pct") == []


def test_late_gpu_is_padded_to_stay_aligned() -> None:
    history = History()
    history.record(snap(0.0, 1.0, gpus=1))
    history.record(snap(1.0, 2.0, gpus=2))
    series = history.gpu_series(1, "utilization_gpu_pct")
    assert len(series) == len(history.timestamps()) == 2
    assert math.isnan(series[0]) and series[1] == 2.0


def test_process_history_expires_after_retention() -> None:
    history = History()
    proc = ProcessSample(pid=7, gpu_index=0, gpu_memory_bytes=100, sm_pct=50.0)
    history.record(snap(0.0, 1.0, procs=(proc,)))
    history.record(snap(1.0, 1.0, procs=(proc,)))
    assert history.process_series(7, 0, "sm_pct") == [50.0, 50.0]
    assert math.isnan(history.process_series(7, 0, "cpu_pct")[0])
    history.record(snap(2.0 + PROCESS_RETENTION_S, 1.0))
    assert history.process_series(7, 0, "sm_pct") == []


def test_clear_forgets_everything() -> None:
    history = History()
    history.record(snap(0.0, 1.0, procs=(ProcessSample(pid=7, gpu_index=0),)))
    history.clear()
    assert len(history) == 0
    assert history.gpu_series(0, "utilization_gpu_pct") == []
    assert history.process_series(7, 0, "sm_pct") == []


def test_ring_keeps_the_newest_values_in_order() -> None:
    import math

    from gputui.core.history import Ring

    ring = Ring(4)
    assert ring.tail() == [] and len(ring) == 0
    for v in range(1, 7):
        ring.append(float(v))
    assert ring.tail() == [3.0, 4.0, 5.0, 6.0] and len(ring) == 4
    assert ring.tail(2) == [5.0, 6.0] and ring.tail(0) == [] and ring.tail(99) == ring.tail()
    padded = Ring(3, fill=2)
    padded.append(7.0)
    head, second, last = padded.tail()
    assert math.isnan(head) and math.isnan(second) and last == 7.0
    stamps = Ring(2, "d")
    stamps.append(1_700_000_000.25)
    assert stamps.tail() == [1_700_000_000.25]  # epoch seconds keep their fraction
    ring.clear()
    assert ring.tail() == []


def test_a_ring_holds_room_only_for_the_values_it_was_given() -> None:
    """A process seen for a few readings keeps a few values, not a full window's worth of room
    (2,000 processes on a crowded node); full, the ring wraps and keeps its size."""
    from collections import deque

    from gputui.core.history import Ring

    ring, kept = Ring(900), deque[float](maxlen=900)
    for v in range(3):
        ring.append(float(v))
        kept.append(float(v))
    assert ring._data.buffer_info()[1] == 3 and ring.tail() == list(kept)
    for v in range(3, 2000):
        ring.append(float(v))
        kept.append(float(v))
        if v % 97 == 0:
            assert ring.tail() == list(kept) and ring.tail(5) == list(kept)[-5:]
    assert ring._data.buffer_info()[1] == 900 and ring.tail() == list(kept)
    ring.clear()
    assert ring._data.buffer_info()[1] == 0 and len(ring) == 0
