"""GPU process lists read as the driver wrote them, whatever the size of its records.

The process calls fill an array of ``nvmlProcessInfo`` records, and the size of that record has
moved under the bindings' feet: drivers 535.43 to 535.86 write 32-byte ``_v3`` records
(``usedGpuCcProtectedMemory`` appended) where nvidia-ml-py reads 24-byte ones, 535.98 dropped
``_v3``, 535.104 brought it back at 24 bytes, the unversioned symbol writes the old 16-byte record,
and nvidia-ml-py 12.535.77 itself declared a 32-byte ``_v2`` (nvitop PRs #79, #89, #94, #226;
gpustat #161: "reports only the first program on driver 535"). Decoded at the wrong size, the
list keeps one process in two or three, and the rest become garbage such as PIDs 1 and 2.

So the records are read here from the raw buffer (the C entry point through the binding's
function-pointer lookup, as nvitop does), and the record size is the one under which every record
is plausible: a PID the kernel could hand out, memory the GPU could hold, MIG instance ids that are
"none" (0xFFFFFFFF) or small. ``_v2`` is asked first (24 bytes since R450 and still exported),
``_v3`` only where ``_v2`` is missing, the unversioned symbol last (drivers older than R450).
"""

from __future__ import annotations

import ctypes
import functools
import struct
from collections.abc import Iterable, Sequence
from typing import Any

from gputui.core.frozen import frozen

MAX_PID = 4_194_304
"""Linux PID_MAX_LIMIT: no PID is ever above it, whatever ``pid_max`` says."""
NOT_AVAILABLE = 0xFFFFFFFFFFFFFFFF  # NVML_VALUE_NOT_AVAILABLE_ulonglong: memory not reported
NO_INSTANCE = 0xFFFFFFFF  # gpuInstanceId / computeInstanceId of a process outside MIG
MAX_INSTANCE_ID = 32
"""MIG instance ids are small (at most 7 GPU instances, 8 compute instances per GPU today)."""

NVML_SUCCESS = 0
NVML_ERROR_INSUFFICIENT_SIZE = 7

# Record layouts by size (little-endian, natural alignment as in nvml.h):
# 16: pid, (pad), usedGpuMemory                                          (nvmlProcessInfo_v1_t)
# 24: ... gpuInstanceId, computeInstanceId                               (nvmlProcessInfo_v2_t)
# 32: ... usedGpuCcProtectedMemory                                       (R535.43-86's _v3)
LAYOUTS: dict[int, struct.Struct] = {
    16: struct.Struct("<I4xQ"),
    24: struct.Struct("<I4xQII"),
    32: struct.Struct("<I4xQIIQ"),
}
LARGEST_RECORD = max(LAYOUTS)


@frozen
class ProcessRecord:
    """One process row as the driver wrote it."""

    pid: int
    used_memory: int | None  # None: the driver does not report it (NOT_AVAILABLE)
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None
    protected_memory: int | None = None  # 32-byte records: confidential-computing memory


@frozen
class ProcessCall:
    """One process-list entry point and the record sizes worth trying, most likely first."""

    symbol: str
    strides: tuple[int, ...]


def process_calls(kind: str) -> tuple[ProcessCall, ...]:
    """The entry points for ``compute`` or ``graphics`` processes, in the order to ask them."""
    base = f"nvmlDeviceGet{'Compute' if kind == 'compute' else 'Graphics'}RunningProcesses"
    return (
        ProcessCall(f"{base}_v2", (24, 32, 16)),
        ProcessCall(f"{base}_v3", (24, 32, 16)),
        ProcessCall(base, (16, 24, 32)),
    )


@functools.cache
def pid_max(path: str = "/proc/sys/kernel/pid_max") -> int:
    """The largest PID this kernel hands out (``kernel.pid_max``), at most PID_MAX_LIMIT."""
    try:
        with open(path, encoding="ascii") as f:
            value = int(f.read().strip())
    except (OSError, ValueError):
        return MAX_PID
    return value if 0 < value <= MAX_PID else MAX_PID


def plausible(record: ProcessRecord, memory_limit: int | None, highest_pid: int) -> bool:
    """Whether a decoded record can be a real process row."""
    if not 0 < record.pid <= highest_pid:
        return False
    if memory_limit is not None and any(
        used is not None and used > memory_limit
        for used in (record.used_memory, record.protected_memory)
    ):
        return False
    return all(
        ident is None or ident == NO_INSTANCE or ident < MAX_INSTANCE_ID
        for ident in (record.gpu_instance_id, record.compute_instance_id)
    )


def decode(data: bytes, count: int, stride: int) -> list[ProcessRecord] | None:
    """``count`` records of ``stride`` bytes from ``data``; None if they do not fit in it."""
    layout = LAYOUTS[stride]
    if count * stride > len(data):
        return None
    records = []
    for offset in range(0, count * stride, stride):
        fields = layout.unpack_from(data, offset)
        protected = fields[4] if len(fields) > 4 else None
        records.append(
            ProcessRecord(
                pid=fields[0],
                used_memory=_memory(fields[1]),
                gpu_instance_id=fields[2] if len(fields) > 2 else None,
                compute_instance_id=fields[3] if len(fields) > 3 else None,
                protected_memory=_memory(protected),
            )
        )
    return records


def _memory(value: int | None) -> int | None:
    return None if value is None or value == NOT_AVAILABLE else value


def decode_plausible(
    data: bytes,
    count: int,
    strides: Sequence[int],
    memory_limit: int | None,
    highest_pid: int | None = None,
) -> list[ProcessRecord]:
    """The records under the first record size in ``strides`` that makes every one plausible;
    where none does, the plausible records of the first size (garbage rows dropped)."""
    top = pid_max() if highest_pid is None else highest_pid
    first: list[ProcessRecord] | None = None
    for stride in strides:
        records = decode(data, count, stride)
        if records is None:
            continue
        if first is None:
            first = records
        if all(plausible(r, memory_limit, top) for r in records):
            return records
    return [r for r in first or [] if plausible(r, memory_limit, top)]


def read_raw(nvml: Any, symbol: str, handle: Any) -> tuple[bytes, int]:
    """The raw buffer and record count of one process-list call, asked as nvidia-ml-py asks it
    (size first, then twice that and five more), into room for the largest record size. Errors
    raise the binding's ``NVMLError`` subclass, as its own wrappers do."""
    fn = nvml._nvmlGetFunctionPointer(symbol)
    count = ctypes.c_uint(0)
    ret = fn(handle, ctypes.byref(count), None)
    if ret == NVML_SUCCESS:
        return b"", 0
    if ret != NVML_ERROR_INSUFFICIENT_SIZE:
        raise nvml.NVMLError(ret)
    capacity = count.value * 2 + 5
    buffer = (ctypes.c_ubyte * (capacity * LARGEST_RECORD))()
    count.value = capacity
    ret = fn(handle, ctypes.byref(count), buffer)
    if ret != NVML_SUCCESS:
        raise nvml.NVMLError(ret)
    return bytes(buffer), min(count.value, capacity)


def from_binding(rows: Iterable[Any]) -> list[ProcessRecord]:
    """Records from the binding's own decoding (where its function-pointer lookup is missing)."""
    records = []
    for row in rows:
        pid, used = getattr(row, "pid", None), getattr(row, "usedGpuMemory", None)
        if not isinstance(pid, int):
            continue
        records.append(
            ProcessRecord(
                pid=pid,
                used_memory=used if isinstance(used, int) and used != NOT_AVAILABLE else None,
                gpu_instance_id=getattr(row, "gpuInstanceId", None),
                compute_instance_id=getattr(row, "computeInstanceId", None),
            )
        )
    return records


def read_records(
    nvml: Any, call: ProcessCall, handle: Any, memory_limit: int | None
) -> list[ProcessRecord]:
    """The plausible process records of one entry point. Raises the binding's errors (the
    caller's query path turns FunctionNotFound into "use the next entry point")."""
    if getattr(nvml, "_nvmlGetFunctionPointer", None) is None:
        fn = getattr(nvml, call.symbol, None)
        if fn is None:
            raise nvml.NVMLError_FunctionNotFound()
        top = pid_max()
        return [r for r in from_binding(fn(handle)) if plausible(r, memory_limit, top)]
    data, count = read_raw(nvml, call.symbol, handle)
    return decode_plausible(data, count, call.strides, memory_limit)


__all__ = [
    "MAX_PID",
    "ProcessCall",
    "ProcessRecord",
    "decode",
    "decode_plausible",
    "pid_max",
    "plausible",
    "process_calls",
    "read_raw",
    "read_records",
]
