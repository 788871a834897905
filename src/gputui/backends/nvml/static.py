"""The static tier: what a GPU is (name, limits, maxima, modes) and its MIG slices, read once."""

from __future__ import annotations

from typing import Any

from gputui.backends.nvml.calls import MigSlice, NvmlCalls, NvmlGpu
from gputui.backends.nvml.memory import read_memory
from gputui.backends.nvml.values import (
    MIB,
    clock_types,
    optional_text,
    text,
    to_float,
    to_int,
    watts,
)
from gputui.model import GpuInfo, MigDeviceInfo

ARCHITECTURES = {
    2: "Kepler",
    3: "Maxwell",
    4: "Pascal",
    5: "Volta",
    6: "Turing",
    7: "Ampere",
    8: "Ada Lovelace",
    9: "Hopper",
    10: "Blackwell",
    13: "Rubin",
}
_PCIE_MAX_GEN_CALLS = (
    "nvmlDeviceGetGpuMaxPcieLinkGeneration",
    "nvmlDeviceGetMaxPcieLinkGeneration",
)


def static_info(calls: NvmlCalls, gpu: NvmlGpu) -> GpuInfo:
    """The GpuInfo of ``gpu``; also opens its MIG slices (``gpu.migs``)."""
    nvml, h = calls.nvml, gpu.handle

    def q(key: str, fn: str, *args: Any) -> Any:
        return calls.query(gpu, key, fn, *args)

    pci = q("pci", "nvmlDeviceGetPciInfo", h)
    cc = q("cuda_cc", "nvmlDeviceGetCudaComputeCapability", h)
    attrs = q("attributes", "nvmlDeviceGetAttributes", h)
    memory = read_memory(calls, gpu, h, "")
    constraints = q("power_constraints", "nvmlDeviceGetPowerManagementLimitConstraints", h)
    mig_mode = q("mig_mode", "nvmlDeviceGetMigMode", h)
    mig_enabled = None if mig_mode is None else mig_mode[0] == 1  # NVML_DEVICE_MIG_ENABLE
    ecc = q("ecc_mode", "nvmlDeviceGetEccMode", h)
    persistence = q("persistence", "nvmlDeviceGetPersistenceMode", h)
    clocks = {
        kind: to_int(q(f"max_clock_{kind}", "nvmlDeviceGetMaxClockInfo", h, clock))
        for kind, clock in clock_types(nvml).items()
    }
    thresholds = {
        kind: q(f"temp_threshold_{kind}", "nvmlDeviceGetTemperatureThreshold", h, threshold)
        for kind, threshold in (
            ("slowdown", getattr(nvml, "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN", 1)),
            ("shutdown", getattr(nvml, "NVML_TEMPERATURE_THRESHOLD_SHUTDOWN", 0)),
        )
    }
    gpu.migs = open_migs(calls, gpu) if mig_enabled else []
    return GpuInfo(
        index=gpu.index,
        name=optional_text(q("name", "nvmlDeviceGetName", h)) or "unknown",
        uuid=optional_text(q("uuid", "nvmlDeviceGetUUID", h)) or "",
        vendor="nvidia",
        pci_bus_id=text(pci.busId) if pci is not None else None,
        architecture=_architecture(q("architecture", "nvmlDeviceGetArchitecture", h)),
        compute_capability=f"{cc[0]}.{cc[1]}" if cc else None,
        sm_count=(int(attrs.multiprocessorCount) or None) if attrs is not None else None,
        memory_total_bytes=memory.total if memory else None,
        power_default_limit_w=watts(
            q("power_default", "nvmlDeviceGetPowerManagementDefaultLimit", h)
        ),
        power_min_limit_w=watts(constraints[0]) if constraints else None,
        power_max_limit_w=watts(constraints[1]) if constraints else None,
        sm_clock_max_mhz=clocks["sm"],
        memory_clock_max_mhz=clocks["memory"],
        graphics_clock_max_mhz=clocks["graphics"],
        pcie_max_gen=to_int(calls.first(gpu, "pcie_max_gen", _PCIE_MAX_GEN_CALLS, h)),
        pcie_max_width=to_int(q("pcie_max_width", "nvmlDeviceGetMaxPcieLinkWidth", h)),
        temperature_slowdown_c=to_float(thresholds["slowdown"]),
        temperature_shutdown_c=to_float(thresholds["shutdown"]),
        fan_count=to_int(q("fan_count", "nvmlDeviceGetNumFans", h)),
        mig_enabled=mig_enabled,
        mig_devices=tuple(mig.info for mig in gpu.migs),
        ecc_enabled=bool(ecc[0]) if ecc else None,
        persistence_mode=None if persistence is None else bool(persistence),
        vbios_version=optional_text(q("vbios", "nvmlDeviceGetVbiosVersion", h)),
        serial=optional_text(q("serial", "nvmlDeviceGetSerial", h)),
    )


def _architecture(code: Any) -> str | None:
    number = to_int(code)
    return ARCHITECTURES.get(number) if number is not None else None


def open_migs(calls: NvmlCalls, gpu: NvmlGpu) -> list[MigSlice]:
    """The MIG slices of a GPU in MIG mode, each with its handle and facts."""
    slots = to_int(calls.query(gpu, "mig_count", "nvmlDeviceGetMaxMigDeviceCount", gpu.handle))
    migs = []
    for slot in range(slots or 0):
        # An empty slot answers NotFound: a transient-looking error, so not remembered.
        handle = calls.query(
            gpu, f"mig_handle{slot}", "nvmlDeviceGetMigDeviceHandleByIndex", gpu.handle, slot
        )
        if handle is None:
            continue
        key = f"mig{slot}/"

        def q(name: str, fn: str, handle: Any = handle, key: str = key) -> Any:
            return calls.query(gpu, key + name, fn, handle)

        gi = to_int(q("gi", "nvmlDeviceGetGpuInstanceId"))
        ci = to_int(q("ci", "nvmlDeviceGetComputeInstanceId"))
        uuid = optional_text(q("uuid", "nvmlDeviceGetUUID"))
        if gi is None or ci is None or not uuid:
            continue  # a slice we cannot identify is of no use
        attrs = q("attributes", "nvmlDeviceGetAttributes")
        memory_total = int(attrs.memorySizeMB) * MIB if attrs is not None else None
        if memory_total is None and (memory := read_memory(calls, gpu, handle, key)) is not None:
            memory_total = memory.total
        info = MigDeviceInfo(
            parent_index=gpu.index,
            gpu_instance_id=gi,
            compute_instance_id=ci,
            uuid=uuid,
            name=optional_text(q("name", "nvmlDeviceGetName")),
            memory_total_bytes=memory_total,
            sm_count=int(attrs.multiprocessorCount) if attrs is not None else None,
        )
        migs.append(MigSlice(handle=handle, info=info, key=key))
    return migs
