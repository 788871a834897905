"""GPU and MIG memory: the v2 call (which splits out reserved memory) first, v1 as fallback."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gputui.backends.nvml.calls import NvmlCalls, NvmlGpu
from gputui.core.frozen import frozen


@frozen(slots=False)
class Memory:
    total: int
    used: int
    free: int
    reserved: int | None  # None with the v1 call, whose "used" includes the reserved part


def read_memory(calls: NvmlCalls, gpu: NvmlGpu, handle: Any, key: str) -> Memory | None:
    """Memory info of ``handle`` (the GPU or one of its MIG slices, ``key`` its call-key
    prefix); whichever call works is remembered."""
    mem = calls.query(gpu, key + "memory_v2", _memory_v2(calls.nvml), handle)
    if mem is not None:
        return Memory(
            total=int(mem.total), used=int(mem.used), free=int(mem.free), reserved=int(mem.reserved)
        )
    if not calls.is_unsupported(gpu, key + "memory_v2"):
        return None  # v2 exists but failed this time
    mem = calls.query(gpu, key + "memory_v1", "nvmlDeviceGetMemoryInfo", handle)
    if mem is None:
        return None
    return Memory(total=int(mem.total), used=int(mem.used), free=int(mem.free), reserved=None)


def _memory_v2(nvml: Any) -> Callable[[Any], Any]:
    """The v2 memory call; a binding without it raises FunctionNotFound (remembered)."""

    def call(handle: Any) -> Any:
        version = getattr(nvml, "nvmlMemory_v2", None)
        if version is None:
            raise nvml.NVMLError_FunctionNotFound()
        try:
            return nvml.nvmlDeviceGetMemoryInfo(handle, version=version)
        except TypeError:  # a binding older than the version= keyword
            raise nvml.NVMLError_FunctionNotFound() from None

    return call
