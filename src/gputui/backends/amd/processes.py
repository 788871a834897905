"""GPU processes from ``amdsmi_get_gpu_process_list``, with a GFX busy % per process from the
cumulative engine time between two reads.

ROCm before its 2026 fix (rocm-systems PR #8396) got the list wrong in two ways: the same compute
process was listed under every GPU, not only the ones it uses; and a caller without permission to
inspect another user's processes got an empty list although they were using the GPUs. So a
(GPU, PID) row is kept only where the process holds VRAM on that GPU or its GFX engine time there
grew since the last read, and a GPU whose list came back empty to a caller that is not root while
VRAM is in use is marked as possibly incomplete (``GpuSample.process_list_incomplete``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any

from gputui.backends.amd.calls import AmdCalls, GpuGone
from gputui.backends.amd.values import counter, get, text, to_int
from gputui.backends.common import CounterRates
from gputui.core.frozen import frozen
from gputui.core.model import GpuSample, ProcessSample

_NS_PER_S = 1e9
IN_USE_BYTES = 1 << 30
"""VRAM in use that some process must hold: well above what an idle GPU holds itself (an idle
MI300X shows 283 MB, a secondary partition 492 MB, in ROCm/amdsmi#132's amd-smi output)."""


def caller_is_root() -> bool:
    """Whether this process may inspect every user's processes (effective uid 0)."""
    geteuid = getattr(os, "geteuid", None)
    return geteuid is not None and geteuid() == 0


@frozen
class ProcessListing:
    """One read of every GPU's process list."""

    timestamp: float
    processes: tuple[ProcessSample, ...]
    listed: frozenset[int]
    """GPUs whose list was read."""
    empty: frozenset[int]
    """GPUs whose list was read and came back empty."""
    failed: tuple[tuple[int, str], ...] = ()
    """(GPU, why) for each list that failed with an error (not "not supported")."""


class ProcessReader:
    """Lists the processes of every GPU; keeps each process's GFX engine time between reads."""

    def __init__(self, calls: AmdCalls) -> None:
        self._calls = calls
        self._busy_ns: CounterRates[tuple[int, int]] = CounterRates()  # (GPU, PID)

    def read(self, now: float) -> ProcessListing:
        processes: list[ProcessSample] = []
        seen: set[tuple[int, int]] = set()
        listed: set[int] = set()  # GPUs whose list we read: their vanished PIDs are forgotten
        empty: set[int] = set()
        failed: list[tuple[int, str]] = []
        for index in range(len(self._calls.handles)):
            try:
                entries = self._calls.call(index, "process_list", "amdsmi_get_gpu_process_list")
            except GpuGone:
                listed.add(index)  # a lost GPU has no processes to show
                continue
            except Exception:
                continue
            error = self._calls.failure(index, "process_list")
            if error is not None:
                failed.append((index, error))
            if isinstance(entries, Sequence) and not isinstance(entries, str):
                listed.add(index)
                if not entries:
                    empty.add(index)
                with contextlib.suppress(Exception):
                    processes.extend(self._processes_on(index, entries, now, seen))
        self._busy_ns.forget_where(lambda key: key[0] in listed and key not in seen)
        return ProcessListing(
            now, tuple(processes), frozenset(listed), frozenset(empty), tuple(failed)
        )

    def _processes_on(
        self, index: int, entries: Sequence[Any], now: float, seen: set[tuple[int, int]]
    ) -> list[ProcessSample]:
        result = []
        for entry in entries:
            if not isinstance(entry, Mapping):
                continue  # ROCm < 6.1.2 returned handles instead of dicts: not supported
            pid = to_int(entry.get("pid"))
            if pid is None or pid <= 0 or (index, pid) in seen:
                continue
            seen.add((index, pid))
            memory = counter(get(entry.get("memory_usage"), "vram_mem"))
            if memory is None:
                memory = counter(entry.get("mem"))
            busy = self._busy_rate(index, pid, get(entry.get("engine_usage"), "gfx"), now)
            if memory == 0 and not busy:
                continue  # listed here but not using this GPU (ROCm before rocm-systems#8396)
            result.append(
                ProcessSample(
                    pid=pid,
                    gpu_index=index,
                    type="compute",
                    gpu_memory_bytes=memory,
                    sm_pct=None if busy is None else min(max(busy / _NS_PER_S * 100, 0.0), 100.0),
                    name=text(entry.get("name")),
                )
            )
        return result

    def _busy_rate(self, index: int, pid: int, gfx_ns: Any, now: float) -> float | None:
        """GFX engine ns per second from the cumulative engine time between two reads of one
        process on one GPU; None at first sight or when not reported."""
        busy = counter(gfx_ns)
        if busy is None:
            self._busy_ns.forget((index, pid))
            return None
        return self._busy_ns.rate((index, pid), busy, now)


def with_completeness(sample: GpuSample, listing: ProcessListing) -> GpuSample:
    """``sample`` with ``process_list_incomplete`` from ``listing`` (read at the same time): True
    when its list came back empty to a caller that is not root while VRAM is in use."""
    if sample.lost or sample.error is not None or sample.index not in listing.listed:
        return sample
    used = sample.memory_used_bytes
    incomplete = (
        sample.index in listing.empty
        and used is not None
        and used >= IN_USE_BYTES
        and not caller_is_root()
    )
    return dataclasses.replace(sample, process_list_incomplete=incomplete)
