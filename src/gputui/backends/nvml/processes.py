"""GPU processes: the compute and graphics lists merged by PID, with each process's SM % from
the per-process utilization samples. On a GPU in MIG mode the lists are read per slice. The lists
are decoded from the driver's raw records (:mod:`.records`), whatever their size."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from gputui.backends.nvml.calls import NvmlCalls, NvmlGpu
from gputui.backends.nvml.records import (
    MAX_PID,
    ProcessRecord,
    process_calls,
    read_records,
)
from gputui.core.model import ProcessSample, ProcessType

_PROCESS_UTIL_CALLS = ("nvmlDeviceGetProcessesUtilizationInfo", "nvmlDeviceGetProcessUtilization")


def gpu_processes(calls: NvmlCalls, gpu: NvmlGpu) -> list[ProcessSample]:
    """The processes on ``gpu`` (on each of its MIG slices when MIG is enabled)."""
    info = gpu.info
    targets: list[tuple[Any, str, str | None, int | None]]
    if info is not None and info.mig_enabled:
        targets = [(m.handle, m.key, m.info.uuid, m.info.memory_total_bytes) for m in gpu.migs]
    else:
        targets = [(gpu.handle, "", None, info.memory_total_bytes if info else None)]
    processes: list[ProcessSample] = []
    for handle, key, mig_uuid, memory_limit in targets:
        compute = _process_list(calls, gpu, key, "compute", handle, memory_limit)
        graphics = _process_list(calls, gpu, key, "graphics", handle, memory_limit)
        if not compute and not graphics:
            continue
        sm = _process_sm(calls, gpu, handle, key)
        rows = merge_processes(compute or [], graphics or [])
        processes.extend(
            ProcessSample(
                pid=pid,
                gpu_index=gpu.index,
                type=kind,
                gpu_memory_bytes=memory,
                sm_pct=None if sm is None else sm.get(pid, 0.0),
                mig_uuid=mig_uuid,
            )
            for pid, (kind, memory) in rows.items()
        )
    return processes


def _process_list(
    calls: NvmlCalls, gpu: NvmlGpu, key: str, kind: str, handle: Any, memory_limit: int | None
) -> list[ProcessRecord] | None:
    """The first process-list entry point the driver has (``_v2``, then ``_v3``, then the
    unversioned one), decoded from its raw records; None when none answers."""
    entry_points = [
        (call.symbol, functools.partial(read_records, calls.nvml, call))
        for call in process_calls(kind)
    ]
    records: list[ProcessRecord] | None = calls.first(
        gpu, f"{key}{kind}_procs", entry_points, handle, memory_limit
    )
    return records


def _process_sm(calls: NvmlCalls, gpu: NvmlGpu, handle: Any, key: str) -> dict[int, float] | None:
    """SM % per PID from samples newer than the last one seen on this handle.

    None when the driver cannot tell; {} when it can but has no new samples (idle: 0 %).
    """
    last_seen = gpu.util_seen_us.get(key, 0)
    samples = None
    for name in _PROCESS_UTIL_CALLS:
        call = _samples_since(calls.nvml, getattr(calls.nvml, name, None))
        samples = calls.query(gpu, f"{key}process_util:{name}", call, handle, last_seen)
        if not calls.is_unsupported(gpu, f"{key}process_util:{name}"):
            break
    if samples is None:
        return None
    newest: dict[int, tuple[int, float]] = {}
    for sample in samples:
        pid, stamp = int(sample.pid), int(sample.timeStamp)
        last_seen = max(last_seen, stamp)
        if pid not in newest or stamp >= newest[pid][0]:
            newest[pid] = (stamp, min(max(float(sample.smUtil), 0.0), 100.0))
    gpu.util_seen_us[key] = last_seen
    return {pid: sm for pid, (_, sm) in newest.items()}


def _samples_since(nvml: Any, fn: Callable[..., Any] | None) -> Callable[..., Any] | None:
    """Wrap a per-process utilization call so NotFound ("no samples since then") reads as []."""
    if fn is None:
        return None

    def call(handle: Any, last_seen_us: int) -> Any:
        try:
            return fn(handle, last_seen_us)
        except nvml.NVMLError_NotFound:
            return []

    return call


def merge_processes(
    compute: Sequence[ProcessRecord],
    graphics: Sequence[ProcessRecord],
) -> dict[int, tuple[ProcessType, int | None]]:
    """Merge the compute and graphics lists by PID (their rows are plausible already: see
    :func:`.records.read_records`)."""
    kinds: dict[int, set[str]] = {}
    memory: dict[int, int | None] = {}
    for kind, rows in (("compute", compute), ("graphics", graphics)):
        for row in rows:
            pid, used = row.pid, row.used_memory
            kinds.setdefault(pid, set()).add(kind)
            if used is not None:
                memory[pid] = max(memory.get(pid) or 0, used)
            else:
                memory.setdefault(pid, None)
    return {pid: (_process_type(found), memory.get(pid)) for pid, found in kinds.items()}


def _process_type(found: set[str]) -> ProcessType:
    if len(found) == 2:
        return "compute+graphics"
    return "compute" if "compute" in found else "graphics"


__all__ = ["MAX_PID", "gpu_processes", "merge_processes"]
