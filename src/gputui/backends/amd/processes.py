"""GPU processes from ``amdsmi_get_gpu_process_list``, with a GFX busy % per process from the
cumulative engine time between two reads."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

from gputui.backends.amd.calls import AmdCalls, GpuGone
from gputui.backends.amd.values import counter, get, text, to_int
from gputui.backends.common import CounterRates
from gputui.model import ProcessSample

_NS_PER_S = 1e9


class ProcessReader:
    """Lists the processes of every GPU; keeps each process's GFX engine time between reads."""

    def __init__(self, calls: AmdCalls) -> None:
        self._calls = calls
        self._busy_ns: CounterRates[tuple[int, int]] = CounterRates()  # (GPU, PID)

    def read(self, now: float) -> list[ProcessSample]:
        processes: list[ProcessSample] = []
        seen: set[tuple[int, int]] = set()
        listed: set[int] = set()  # GPUs whose list we read: their vanished PIDs are forgotten
        for index in range(len(self._calls.handles)):
            try:
                entries = self._calls.call(index, "process_list", "amdsmi_get_gpu_process_list")
            except GpuGone:
                listed.add(index)  # a lost GPU has no processes to show
                continue
            except Exception:
                continue
            if isinstance(entries, Sequence) and not isinstance(entries, str):
                listed.add(index)
                with contextlib.suppress(Exception):
                    processes.extend(self._processes_on(index, entries, now, seen))
        self._busy_ns.forget_where(lambda key: key[0] in listed and key not in seen)
        return processes

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
            result.append(
                ProcessSample(
                    pid=pid,
                    gpu_index=index,
                    type="compute",
                    gpu_memory_bytes=memory,
                    sm_pct=self._gfx_pct(index, pid, get(entry.get("engine_usage"), "gfx"), now),
                    name=text(entry.get("name")),
                )
            )
        return result

    def _gfx_pct(self, index: int, pid: int, gfx_ns: Any, now: float) -> float | None:
        """GFX busy % from the cumulative engine time (ns) between two reads of one process."""
        busy = counter(gfx_ns)
        if busy is None:
            self._busy_ns.forget((index, pid))
            return None
        ns_per_s = self._busy_ns.rate((index, pid), busy, now)
        if ns_per_s is None:
            return None
        return min(max(ns_per_s / _NS_PER_S * 100.0, 0.0), 100.0)
