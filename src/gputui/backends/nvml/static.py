"""The static tier: what a GPU is (name, limits, maxima, modes) and its MIG slices, read once."""

from __future__ import annotations

from typing import Any

from gputui import specs
from gputui.backends.nvml.attachment import read_attachment
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
from gputui.core.model import GpuInfo, MigDeviceInfo

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
# CUDA cores per SM by compute capability (major, minor), as the CUDA samples' _ConvertSMVer2Cores
# table has them: nvmlDeviceGetNumGpuCores / this = the SM count of a whole GPU.
CORES_PER_SM: dict[tuple[int, int], int] = {
    (3, 0): 192,
    (3, 2): 192,
    (3, 5): 192,
    (3, 7): 192,
    (5, 0): 128,
    (5, 2): 128,
    (5, 3): 128,
    (6, 0): 64,
    (6, 1): 128,
    (6, 2): 128,
    (7, 0): 64,
    (7, 2): 64,
    (7, 5): 64,
    (8, 0): 64,
    (8, 6): 128,
    (8, 7): 128,
    (8, 9): 128,
    (9, 0): 128,
    (10, 0): 128,
    (10, 1): 128,
    (10, 3): 128,
    (11, 0): 128,
    (12, 0): 128,
    (12, 1): 128,
}


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
    # The slowdown and shutdown thresholds belong to the GPU (die) sensor that temperature_gpu_c
    # reads; MEM_MAX is the memory (HBM) sensor's maximum operating temperature. NVML has no
    # hotspot sensor on most boards, so no hotspot limit either.
    thresholds = {
        kind: q(f"temp_threshold_{kind}", "nvmlDeviceGetTemperatureThreshold", h, threshold)
        for kind, threshold in (
            ("slowdown", getattr(nvml, "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN", 1)),
            ("shutdown", getattr(nvml, "NVML_TEMPERATURE_THRESHOLD_SHUTDOWN", 0)),
            ("memory", getattr(nvml, "NVML_TEMPERATURE_THRESHOLD_MEM_MAX", 2)),
        )
    }
    # What the link should train to (GPU and slot/host together), and what the GPU alone can do.
    host_max_gen = to_int(q("pcie_max_gen", "nvmlDeviceGetMaxPcieLinkGeneration", h))
    gpu_max_gen = to_int(q("pcie_gpu_max_gen", "nvmlDeviceGetGpuMaxPcieLinkGeneration", h))
    name = optional_text(q("name", "nvmlDeviceGetName", h)) or "unknown"
    compute_capability = f"{cc[0]}.{cc[1]}" if cc else None
    sm_count = (int(attrs.multiprocessorCount) or None) if attrs is not None else None
    if sm_count is None:
        sm_count = _sm_count(calls, gpu, cc, name, compute_capability)
    gpu.migs = open_migs(calls, gpu) if mig_enabled else []
    attachment = read_attachment(calls, gpu)
    pcie_max_width = to_int(q("pcie_max_width", "nvmlDeviceGetMaxPcieLinkWidth", h))
    if attachment.host_link == "nvlink-c2c":
        # No PCIe link of its own: the PCIe queries answer a placeholder Gen1 x1.
        host_max_gen = gpu_max_gen = pcie_max_width = None
    return GpuInfo(
        index=gpu.index,
        name=name,
        uuid=optional_text(q("uuid", "nvmlDeviceGetUUID", h)) or "",
        vendor="nvidia",
        pci_bus_id=text(pci.busId) if pci is not None else None,
        architecture=_architecture(q("architecture", "nvmlDeviceGetArchitecture", h)),
        compute_capability=compute_capability,
        sm_count=sm_count,
        memory_total_bytes=memory.total if memory else None,
        power_default_limit_w=watts(
            q("power_default", "nvmlDeviceGetPowerManagementDefaultLimit", h)
        ),
        power_min_limit_w=watts(constraints[0]) if constraints else None,
        power_max_limit_w=watts(constraints[1]) if constraints else None,
        sm_clock_max_mhz=clocks["sm"],
        memory_clock_max_mhz=clocks["memory"],
        graphics_clock_max_mhz=clocks["graphics"],
        # Without the host-limited call, the GPU's own maximum is the best there is.
        pcie_max_gen=host_max_gen if host_max_gen is not None else gpu_max_gen,
        pcie_max_width=pcie_max_width,
        pcie_gpu_max_gen=gpu_max_gen,
        temperature_slowdown_c=to_float(thresholds["slowdown"]),
        temperature_shutdown_c=to_float(thresholds["shutdown"]),
        temperature_hotspot_limit_c=None,
        temperature_memory_limit_c=_limit(thresholds["memory"]),
        fan_count=to_int(q("fan_count", "nvmlDeviceGetNumFans", h)),
        mig_enabled=mig_enabled,
        mig_devices=tuple(mig.info for mig in gpu.migs),
        ecc_enabled=bool(ecc[0]) if ecc else None,
        persistence_mode=None if persistence is None else bool(persistence),
        vbios_version=optional_text(q("vbios", "nvmlDeviceGetVbiosVersion", h)),
        serial=optional_text(q("serial", "nvmlDeviceGetSerial", h)),
        host_link=attachment.host_link,
        host_link_bandwidth_gbs=attachment.host_link_bandwidth_gbs,
        virtualization_mode=attachment.virtualization_mode,
        fabric_state=attachment.fabric_state,
        fabric_error=attachment.fabric_error,
        minor_number=to_int(q("minor_number", "nvmlDeviceGetMinorNumber", h)),
    )


def _limit(value: Any) -> float | None:
    """A temperature threshold; 0 (what some boards answer for a sensor they lack) is none."""
    number = to_float(value)
    return number if number is not None and number > 0 else None


def _sm_count(
    calls: NvmlCalls, gpu: NvmlGpu, cc: Any, name: str, compute_capability: str | None
) -> int | None:
    """SMs of a whole GPU (``nvmlDeviceGetAttributes`` answers only for MIG slices): the CUDA
    cores over the cores per SM of its compute capability, else the spec table's count for a GPU
    whose name matches a row exactly and whose compute capability the driver confirms."""
    cores = to_int(calls.query(gpu, "gpu_cores", "nvmlDeviceGetNumGpuCores", gpu.handle))
    per_sm = CORES_PER_SM.get((int(cc[0]), int(cc[1]))) if cc else None
    if cores and per_sm and cores % per_sm == 0:
        return cores // per_sm
    if compute_capability is None:
        return None
    match = specs.lookup(name)
    if match is None or match.how != "exact" or match.spec.cc_or_gfx != compute_capability:
        return None
    return match.spec.sm_count


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
