"""Ring buffers of recent readings, per GPU and per process, for history plots.

The sampler thread records; the UI thread reads. A lock keeps a read from seeing a buffer while
it is being appended to. Values are kept compactly (:class:`Ring`: an ``array`` of 32-bit floats
that grows up to its capacity, 4 bytes a value instead of a 24-byte float object in a deque), so
15 minutes of 8 GPUs and their processes costs a few hundred KB, and a node with 2,000 processes
stays bounded.
"""

from __future__ import annotations

import math
import threading
from array import array
from collections.abc import Iterable

from gputui.core.model import GpuSample, ProcessSample, Snapshot

GPU_METRICS: tuple[str, ...] = (
    "utilization_gpu_pct",
    "memory_used_pct",
    "power_w",
    "temperature_gpu_c",
    "clock_sm_mhz",
    "pcie_rx_bytes_per_s",
    "pcie_tx_bytes_per_s",
    "nvlink_rx_bytes_per_s",
    "nvlink_tx_bytes_per_s",
)
"""GPU metrics kept in history. All are GpuSample fields except the derived memory_used_pct."""

PROCESS_METRICS: tuple[str, ...] = ("gpu_memory_bytes", "sm_pct", "cpu_pct", "host_rss_bytes")

DEFAULT_CAPACITY = 900
"""15 minutes at the default 1 s interval (the brief asks for at least 10)."""

PROCESS_RETENTION_S = 120.0
"""How long a vanished process's history is kept (a detail screen may still be showing it)."""

NAN = math.nan


def gpu_metric(sample: GpuSample, metric: str) -> float:
    """The value of one history metric in a sample; NaN when unknown (plots leave a gap)."""
    if metric == "memory_used_pct":
        total = sample.memory_total_bytes
        if sample.memory_used_bytes is None or not total:
            return NAN
        return 100.0 * sample.memory_used_bytes / total
    value = getattr(sample, metric)
    return NAN if value is None else float(value)


class Ring:
    """The last ``capacity`` values, oldest first, in an ``array`` (``typecode`` ``f``: 32-bit
    floats, ~7 significant digits, NaN for unknown; ``d`` where a value needs more, such as epoch
    timestamps). The array grows with the values until it holds ``capacity`` of them, then
    wraps: a process seen for a minute keeps a minute of values, not 15 minutes of room."""

    __slots__ = ("_data", "_next", "capacity")

    def __init__(self, capacity: int, typecode: str = "f", fill: int = 0) -> None:
        self.capacity = capacity
        self._data: array[float] = array(typecode)
        self._next = 0
        """Where the next value goes once the array is full."""
        for _ in range(min(fill, capacity)):
            self.append(NAN)

    def append(self, value: float) -> None:
        data = self._data
        if len(data) < self.capacity:
            data.append(value)
            return
        data[self._next] = value
        self._next = (self._next + 1) % self.capacity

    def tail(self, last: int | None = None) -> list[float]:
        """The newest ``last`` values (all when None), oldest first."""
        data = self._data
        size = len(data)
        n = size if last is None else max(min(last, size), 0)
        if size < self.capacity:  # not yet wrapped: oldest first already
            return data[size - n :].tolist()
        start = (self._next - n) % size
        end = start + n
        if end <= size:
            return data[start:end].tolist()
        return data[start:].tolist() + data[: end - size].tolist()

    def clear(self) -> None:
        self._data = array(self._data.typecode)  # its memory goes too
        self._next = 0

    def __len__(self) -> int:
        return len(self._data)


class History:
    """Fixed-size history per (GPU, metric) and per (process, metric)."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()
        self._timestamps = Ring(capacity, "d")
        self._gpu: dict[tuple[int, str], Ring] = {}
        self._proc: dict[tuple[int, int], dict[str, Ring]] = {}
        self._proc_last_seen: dict[tuple[int, int], float] = {}

    def record(self, snapshot: Snapshot) -> None:
        with self._lock:
            self._timestamps.append(snapshot.timestamp)
            for sample in snapshot.gpus:
                for metric in GPU_METRICS:
                    self._series(sample.index, metric).append(gpu_metric(sample, metric))
            self._record_processes(snapshot.timestamp, snapshot.processes)

    def _series(self, index: int, metric: str) -> Ring:
        key = (index, metric)
        series = self._gpu.get(key)
        if series is None:
            # A GPU that appears late is padded so all series stay aligned with the timestamps.
            pad = max(len(self._timestamps) - 1, 0)
            series = self._gpu[key] = Ring(self.capacity, fill=pad)
        return series

    def _record_processes(self, now: float, processes: Iterable[ProcessSample]) -> None:
        for proc in processes:
            key = (proc.pid, proc.gpu_index)
            buffers = self._proc.get(key)
            if buffers is None:
                buffers = self._proc[key] = {m: Ring(self.capacity) for m in PROCESS_METRICS}
            for metric in PROCESS_METRICS:
                value = getattr(proc, metric)
                buffers[metric].append(NAN if value is None else float(value))
            self._proc_last_seen[key] = now
        stale = [k for k, seen in self._proc_last_seen.items() if now - seen > PROCESS_RETENTION_S]
        for key in stale:
            del self._proc[key]
            del self._proc_last_seen[key]

    def clear(self) -> None:
        """Forget everything (e.g. after seeking in a replay)."""
        with self._lock:
            self._timestamps.clear()
            self._gpu.clear()
            self._proc.clear()
            self._proc_last_seen.clear()

    def gpu_series(self, index: int, metric: str, last: int | None = None) -> list[float]:
        """Oldest-first values of one metric for one GPU (NaN where unknown)."""
        with self._lock:
            series = self._gpu.get((index, metric))
            if series is None:
                return []
            return series.tail(last)

    def process_series(
        self, pid: int, gpu_index: int, metric: str, last: int | None = None
    ) -> list[float]:
        with self._lock:
            buffers = self._proc.get((pid, gpu_index))
            if buffers is None:
                return []
            return buffers[metric].tail(last)

    def timestamps(self, last: int | None = None) -> list[float]:
        with self._lock:
            return self._timestamps.tail(last)

    def __len__(self) -> int:
        return len(self._timestamps)
