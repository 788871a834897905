"""How a GPU is attached, read once at open: its host link (PCIe, or NVLink-C2C on Grace Hopper
and Grace Blackwell), whether it is virtualised (a whole GPU passed through to a VM, a vGPU
guest ...), and whether it belongs to an NVSwitch fabric that has finished setting it up."""

from __future__ import annotations

import ctypes
import os
from typing import Any

from gputui.backends.nvml.calls import NvmlCalls, NvmlGpu
from gputui.backends.nvml.fields import read_fields
from gputui.backends.nvml.values import to_int
from gputui.core.frozen import frozen

# nvmlGpuVirtualizationMode_t (nvml.h).
VIRTUALIZATION_MODES = {0: "none", 1: "passthrough", 2: "vgpu", 3: "host_vgpu", 4: "host_vsga"}
# nvmlBusType_t (nvml.h): UNKNOWN 0, PCI 1, PCIE 2, FPCI 3, AGP 4.
BUS_PCI, BUS_PCIE = 1, 2
# Field values of the C2C (chip-to-chip, NVLink-C2C) host link, nvml.h:
FI_C2C_LINK_COUNT = 170  # C2C links present on the device
FI_C2C_LINK_GET_STATUS = 171  # 0 inactive, 1 active (scopeId: the link)
FI_C2C_LINK_GET_MAX_BW = 172  # MB/s of each active link
C2C_LINK_FIELDS = (FI_C2C_LINK_GET_STATUS, FI_C2C_LINK_GET_MAX_BW)
# nvmlGpuFabricState_t.
FABRIC_STATES = {0: "not_supported", 1: "not_started", 2: "in_progress", 3: "completed"}
NVML_SUCCESS = 0


@frozen
class Attachment:
    host_link: str | None = None
    host_link_bandwidth_gbs: float | None = None
    virtualization_mode: str | None = None
    fabric_state: str | None = None
    fabric_error: str | None = None


def read_attachment(calls: NvmlCalls, gpu: NvmlGpu) -> Attachment:
    """Host link, virtualization and NVLink fabric of ``gpu`` (what the driver cannot answer
    is None)."""
    host_link, bandwidth = _host_link(calls, gpu)
    mode = to_int(calls.query(gpu, "virtualization", "nvmlDeviceGetVirtualizationMode", gpu.handle))
    state, error = _fabric(calls, gpu)
    return Attachment(
        host_link=host_link,
        host_link_bandwidth_gbs=bandwidth,
        virtualization_mode=VIRTUALIZATION_MODES.get(mode) if mode is not None else None,
        fabric_state=state,
        fabric_error=error,
    )


def _host_link(calls: NvmlCalls, gpu: NvmlGpu) -> tuple[str | None, float | None]:
    """("nvlink-c2c", GB/s) where the C2C mode is on; ("pcie", None) on a PCI(e) bus; else
    (None, None). GH200's PCIe queries answer a placeholder Gen1 x1 (its host link is C2C)."""
    c2c = calls.query(gpu, "c2c_mode", "nvmlDeviceGetC2cModeInfoV", gpu.handle)
    if c2c is not None and bool(getattr(c2c, "isC2cEnabled", None)):
        return "nvlink-c2c", _c2c_bandwidth(calls, gpu)
    bus = to_int(calls.query(gpu, "bus_type", "nvmlDeviceGetBusType", gpu.handle))
    if bus in (BUS_PCI, BUS_PCIE):
        return "pcie", None
    return None, None


def _c2c_bandwidth(calls: NvmlCalls, gpu: NvmlGpu) -> float | None:
    """GB/s over the active C2C links (link count x each link's MB/s), or None."""
    count = read_fields(calls, gpu, ((FI_C2C_LINK_COUNT, 0),)).get((FI_C2C_LINK_COUNT, 0))
    if not count:
        return None
    links = range(int(count))
    wanted = [(field_id, link) for link in links for field_id in C2C_LINK_FIELDS]
    values = read_fields(calls, gpu, wanted)
    total = sum(
        float(values.get((FI_C2C_LINK_GET_MAX_BW, link), 0))
        for link in links
        if values.get((FI_C2C_LINK_GET_STATUS, link), 1)
    )
    return total / 1000 if total > 0 else None


def _fabric(calls: NvmlCalls, gpu: NvmlGpu) -> tuple[str | None, str | None]:
    """The NVSwitch fabric's state for this GPU (``nvmlDeviceGetGpuFabricInfoV``, else the
    older ``nvmlDeviceGetGpuFabricInfo``), with the error it finished with, if any."""
    nvml = calls.nvml
    info = calls.query(gpu, "fabric", _fabric_call(nvml), gpu.handle)
    if info is None:
        return None, None
    state = FABRIC_STATES.get(int(info.state))
    status = int(info.status)
    error = None
    if state == "completed" and status != NVML_SUCCESS:
        try:
            error = str(nvml.nvmlErrorString(status))
        except Exception:
            error = f"NVML error {status}"
    return state, error


def _fabric_call(nvml: Any) -> Any:
    """A call filling the newest fabric-info struct the binding and driver both have."""

    def call(handle: Any) -> Any:
        versioned = getattr(nvml, "c_nvmlGpuFabricInfoV_t", None)
        if versioned is not None and getattr(nvml, "nvmlDeviceGetGpuFabricInfoV", None):
            try:
                info = versioned()
                nvml.nvmlDeviceGetGpuFabricInfoV(handle, ctypes.byref(info))
                return info
            except (nvml.NVMLError_FunctionNotFound, nvml.NVMLError_ArgumentVersionMismatch):
                pass  # a driver older than the binding's struct: the unversioned call
        legacy = getattr(nvml, "c_nvmlGpuFabricInfo_t", None)
        if legacy is None or getattr(nvml, "nvmlDeviceGetGpuFabricInfo", None) is None:
            raise nvml.NVMLError_FunctionNotFound()
        info = legacy()
        nvml.nvmlDeviceGetGpuFabricInfo(handle, ctypes.byref(info))
        return info

    return call


def driver_gpu_count(root: str = "/proc/driver/nvidia/gpus") -> int | None:
    """GPUs the NVIDIA kernel driver has bound (one directory per PCI address), read without
    NVML: known before ``nvmlInit``, which may spend seconds a GPU initialising them."""
    try:
        return sum(1 for entry in os.scandir(root) if entry.is_dir()) or None
    except OSError:
        return None
