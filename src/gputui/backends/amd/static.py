"""The static tier: what each GPU is (name, limits, maxima, modes) and the node's versions."""

from __future__ import annotations

import contextlib
from typing import Any

from gputui.backends.amd.calls import AmdCalls, GpuGone
from gputui.backends.amd.loader import quiet
from gputui.backends.amd.sensors import clock_info, temperature
from gputui.backends.amd.values import (
    MIB,
    architecture_from_gfx,
    get,
    gfx_target,
    is_hex_id,
    pcie_gen,
    positive,
    text,
    to_int,
    watts_from_uw,
)
from gputui.core.frozen import frozen
from gputui.core.model import GpuInfo

_UMC_BLOCK = 1  # AMDSMI_GPU_BLOCK_UMC: the memory controller, i.e. VRAM ECC


def static_info(calls: AmdCalls, index: int) -> GpuInfo:
    """The GpuInfo of GPU ``index``; a bare one when it cannot be read (lost during start-up,
    or a bug): its samples will say what is wrong."""
    try:
        return _read_static(calls, index)
    except Exception:
        return GpuInfo(index=index, name="AMD GPU", uuid="", vendor="amd")


def _read_static(calls: AmdCalls, i: int) -> GpuInfo:
    asic = calls.call(i, "asic_info", "amdsmi_get_gpu_asic_info")
    board = calls.call(i, "board_info", "amdsmi_get_gpu_board_info")
    market = text(get(asic, "market_name"))
    product = text(get(board, "product_name"))
    name = market if market and not is_hex_id(market) else (product or market or "AMD GPU")
    gfx = gfx_target(get(asic, "target_graphics_version"))
    memory_total = _memory_total(calls, i)

    cap = calls.call(i, "power_cap_info", "amdsmi_get_power_cap_info")
    gfx_clock = clock_info(calls, i, "GFX")
    mem_clock = clock_info(calls, i, "MEM")
    pcie_static = get(calls.call(i, "pcie_info", "amdsmi_get_pcie_info"), "pcie_static")
    # amdsmi has one maximum and does not say whether the slot limits it: it is the link's
    # maximum (pcie_max_gen), and the GPU's own maximum (pcie_gpu_max_gen) stays unknown.
    max_gen = pcie_gen(get(pcie_static, "max_pcie_speed"))
    if max_gen is None:
        max_gen = positive(get(pcie_static, "pcie_interface_version"))
    limits = temperature_limits(calls, i)
    ecc_mask = to_int(calls.call(i, "ecc_enabled", "amdsmi_get_gpu_ecc_enabled"))
    vbios = calls.call(i, "vbios_info", "amdsmi_get_gpu_vbios_info")

    return GpuInfo(
        index=i,
        name=name,
        uuid=text(calls.call(i, "uuid", "amdsmi_get_gpu_device_uuid")) or "",
        vendor="amd",
        pci_bus_id=text(calls.call(i, "bdf", "amdsmi_get_gpu_device_bdf")),
        architecture=architecture_from_gfx(gfx),
        compute_capability=gfx,
        sm_count=positive(get(asic, "num_compute_units")),
        memory_total_bytes=memory_total,
        power_default_limit_w=watts_from_uw(get(cap, "default_power_cap")),
        power_min_limit_w=watts_from_uw(get(cap, "min_power_cap")),
        power_max_limit_w=watts_from_uw(get(cap, "max_power_cap")),
        sm_clock_max_mhz=positive(get(gfx_clock, "max_clk")),
        memory_clock_max_mhz=positive(get(mem_clock, "max_clk")),
        graphics_clock_max_mhz=positive(get(gfx_clock, "max_clk")),
        pcie_max_gen=max_gen,
        pcie_max_width=positive(get(pcie_static, "max_pcie_width")),
        pcie_gpu_max_gen=None,
        temperature_slowdown_c=limits.main,
        temperature_shutdown_c=temperature(calls, i, "HOTSPOT", "EMERGENCY", threshold=True),
        temperature_hotspot_limit_c=limits.hotspot,
        temperature_memory_limit_c=limits.memory,
        mig_enabled=None,
        ecc_enabled=None if ecc_mask is None else bool(ecc_mask & _UMC_BLOCK),
        vbios_version=text(get(vbios, "version")) or text(get(vbios, "part_number")),
        serial=text(get(board, "product_serial")) or text(get(asic, "asic_serial")),
    )


@frozen(slots=False)
class TemperatureLimits:
    """The CRITICAL temperature (what ``amd-smi static --limit`` calls the slowdown
    temperature) of each sensor, each compared with its own sensor's reading."""

    main: float | None
    """The sensor ``temperature_gpu_c`` reads: edge, or the hotspot on GPUs without an edge
    sensor (MI300 class)."""
    hotspot: float | None
    memory: float | None


def temperature_limits(calls: AmdCalls, i: int) -> TemperatureLimits:
    """Each sensor's limit. The main one follows the rule the readings use (edge when it
    reads, else the hotspot), so a 114 °C junction is never judged against the edge's limit nor
    an edge temperature against the junction's."""
    edge = temperature(calls, i, "EDGE", "CRITICAL", threshold=True)
    hotspot = temperature(calls, i, "HOTSPOT", "CRITICAL", threshold=True)
    memory = temperature(calls, i, "VRAM", "CRITICAL", threshold=True)
    no_edge_sensor = edge is None and temperature(calls, i, "EDGE", "CURRENT") is None
    return TemperatureLimits(
        main=hotspot if no_edge_sensor else edge, hotspot=hotspot, memory=memory
    )


def _memory_total(calls: AmdCalls, i: int) -> int | None:
    """VRAM size in bytes; the MB-granular VRAM info as fallback."""
    vram = calls.enum("AmdSmiMemoryType", "VRAM")
    total = positive(calls.call(i, "memory_total_vram", "amdsmi_get_gpu_memory_total", vram))
    if total is not None:
        return total
    vram_mb = positive(get(calls.call(i, "vram_info", "amdsmi_get_gpu_vram_info"), "vram_size"))
    return vram_mb * MIB if vram_mb is not None else None


def driver_version(calls: AmdCalls) -> str | None:
    """The amdgpu driver version, from the first GPU that tells it."""
    for index in range(len(calls.handles)):
        with contextlib.suppress(GpuGone):
            info = calls.call(index, "driver_info", "amdsmi_get_gpu_driver_info")
            version = text(get(info, "driver_version"))
            if version:
                return version
    return None


def rocm_version(lib: Any) -> str | None:
    fn = getattr(lib, "amdsmi_get_rocm_version", None)
    try:
        with quiet():
            result = fn() if fn is not None else None
    except Exception:
        return None
    if isinstance(result, (tuple, list)) and len(result) == 2 and result[0] is True:
        return text(result[1])
    return None


def library_version(lib: Any) -> str | None:
    fn = getattr(lib, "amdsmi_get_lib_version", None)
    try:
        with quiet():
            version = fn() if fn is not None else None
    except Exception:
        return None
    # "build" is skipped: the 7.0.2 wrapper returns only its first character.
    parts = [to_int(get(version, key)) for key in ("major", "minor", "release")]
    if any(part is None for part in parts):
        return None
    return ".".join(str(part) for part in parts)
