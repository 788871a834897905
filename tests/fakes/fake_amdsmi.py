"""A fake ``amdsmi`` (ROCm AMD SMI Python package, 7.0.2) for testing the AMD backend without a GPU.

It mirrors the real module as read from the amdsmi 7.0.2 wheel (``amdsmi_interface.py``,
``amdsmi_exception.py``, ``amdsmi_wrapper.py``): the same function names and parameter names
(recorded in :data:`REAL_SIGNATURES`, checked by a test), the same return shapes (dicts with the
same keys; "N/A" strings exactly where the wrapper makes them, e.g. ``power_info`` maps only 0xFFFF,
so 0xFFFFFFFF comes through raw as on real hardware), the same enums (values from
``amdsmi_wrapper``), the same exception classes and ``amdsmi_wrapper.AMDSMI_STATUS_*`` codes, and
the same argument checks (a handle that is not a processor handle, or a plain int where an enum is
expected, raises :class:`AmdSmiParameterException`).

Build one with :func:`make_fake_amdsmi` from a list of :class:`FakeAmdGpu` (presets:
:func:`mi210_gpu`, :func:`mi300x_gpu` (no EDGE sensor, XGMI links, residency counters),
:func:`w7900_gpu` (a fan), :func:`mi300x_partitions` (the handles of one MI300X in a compute
partition mode)); whole nodes: :func:`mi300x_node` (8 MI300X in a full XGMI mesh, two NUMA nodes),
:func:`mi300x_cpx_node` (MI300X in CPX mode: 8 handles each) and :func:`pcie_pair` (two MI210s that
reach each other only over PCIe). Knobs on
:class:`FakeAmdGpu`: every value, ``unsupported`` (function names that raise NOT_SUPPORTED),
``errors`` (function name -> status code, every call), ``retry`` (function name -> how many next
calls raise AmdSmiRetryException), ``lost`` (every call raises ``lost_code``, NOT_FOUND by default),
``fail_code`` / ``fail_after`` (every call on the GPU raises that status, e.g. DRIVER_NOT_LOADED,
from the moment a test sets it, or once ``fail_after`` calls have answered; clear it and the GPU
answers again), processes and XGMI link counters (mutable: advance them between reads),
``xgmi_lanes`` (``amdsmi_get_xgmi_info``; None or no XGMI links: NOT_SUPPORTED), ``numa_node``,
``link_status`` (the XGMI status letters, e.g. ``["U", "D"]``; default one "U" per XGMI link),
``compute_partition`` / ``memory_partition`` (None: NOT_SUPPORTED) and ``partition_id``.
``unsupported`` also covers the topology calls (for a pair call, the source GPU's set counts). Knobs
on :class:`FakeAmdSmi`: ``init_error``, ``init_noise`` (printed by ``amdsmi_init``),
``handles_error``, ``rocm_version``, ``lib_version``, ``missing`` (functions this amdsmi lacks),
``indep_throttle_as_int`` (amdsmi 6.x: gpu_metrics' ``indep_throttle_status`` is the raw SMU bitmask
instead of a bool), ``pairs`` ((a, b) -> :class:`FakePair`, how two GPUs are wired; a pair not
listed is XGMI, 1 hop, weight 15 when one GPU has a link metrics entry naming the other's BDF, else
PCIe, 2 hops, weight 40, P2P accessible), and the process list as ROCm had it before its fix
(``duplicate_processes``: every process under every GPU; ``hide_other_users`` with
``caller_root=False``: only the caller's own processes, those ``mine``). Calls are counted in
``calls`` (per function) and ``gpu_calls`` (per function and GPU index).

:func:`write_broken_amdsmi` writes a throwaway ``amdsmi`` package that behaves like the real one
without ROCm: importing it prints two lines to stdout and raises ``KeyError('libamd_smi.so')``.
"""

from __future__ import annotations

import dataclasses
import types
from collections import Counter
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import Any

MiB = 1 << 20
GiB = 1 << 30
UINT8_MAX = 0xFF
UINT16_MAX = 0xFFFF
UINT32_MAX = 0xFFFFFFFF
UINT64_MAX = 0xFFFFFFFFFFFFFFFF
AMDSMI_MAX_NUM_XGMI_LINKS = 8
NA = "N/A"

# ------------------------------------------------------------------------------ amdsmi_wrapper

STATUS: dict[str, int] = {
    "SUCCESS": 0,
    "INVAL": 1,
    "NOT_SUPPORTED": 2,
    "NOT_YET_IMPLEMENTED": 3,
    "FAIL_LOAD_MODULE": 4,
    "FAIL_LOAD_SYMBOL": 5,
    "DRM_ERROR": 6,
    "API_FAILED": 7,
    "TIMEOUT": 8,
    "RETRY": 9,
    "NO_PERM": 10,
    "INTERRUPT": 11,
    "IO": 12,
    "ADDRESS_FAULT": 13,
    "FILE_ERROR": 14,
    "OUT_OF_RESOURCES": 15,
    "INTERNAL_EXCEPTION": 16,
    "INPUT_OUT_OF_BOUNDS": 17,
    "INIT_ERROR": 18,
    "REFCOUNT_OVERFLOW": 19,
    "DIRECTORY_NOT_FOUND": 20,
    "BUSY": 30,
    "NOT_FOUND": 31,
    "NOT_INIT": 32,
    "NO_SLOT": 33,
    "DRIVER_NOT_LOADED": 34,
    "MORE_DATA": 39,
    "NO_DATA": 40,
    "INSUFFICIENT_SIZE": 41,
    "UNEXPECTED_SIZE": 42,
    "UNEXPECTED_DATA": 43,
    "FILE_NOT_FOUND": 52,
    "ARG_PTR_NULL": 53,
    "AMDGPU_RESTART_ERR": 54,
    "SETTING_UNAVAILABLE": 55,
    "CORRUPTED_EEPROM": 56,
    "MAP_ERROR": 4294967294,
    "UNKNOWN_ERROR": 4294967295,
}
_STATUS_TEXT = {
    "INVAL": "Invalid parameters",
    "NOT_SUPPORTED": "Feature not supported",
    "NOT_YET_IMPLEMENTED": "Feature not yet implemented",
    "DRM_ERROR": "Error when called libdrm",
    "TIMEOUT": "Timeout in API call",
    "RETRY": "Retry operation",
    "NO_PERM": "Permission Denied",
    "IO": "I/O Error",
    "INIT_ERROR": "Initialization error",
    "BUSY": "Device busy",
    "NOT_FOUND": "Device Not found",
    "NOT_INIT": "Device not initialized",
    "DRIVER_NOT_LOADED": "Driver not loaded",
    "AMDGPU_RESTART_ERR": "AMDGPU restart failed, please check dmsg for errors",
}
_INFO_BY_CODE = {
    code: f"AMDSMI_STATUS_{name} - {_STATUS_TEXT[name]}"
    for name, code in STATUS.items()
    if name in _STATUS_TEXT
}


class FakeHandle:
    """Plays ``amdsmi_wrapper.amdsmi_processor_handle`` (a ctypes c_void_p in the real module)."""

    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self) -> str:
        return f"<amdsmi_processor_handle gpu={self.index}>"


amdsmi_wrapper = types.ModuleType("amdsmi.amdsmi_wrapper")
for _name, _code in STATUS.items():
    setattr(amdsmi_wrapper, f"AMDSMI_STATUS_{_name}", _code)
amdsmi_wrapper.amdsmi_processor_handle = FakeHandle  # type: ignore[attr-defined]
amdsmi_wrapper.AMDSMI_LINK_TYPE_INTERNAL = 0  # type: ignore[attr-defined]
amdsmi_wrapper.AMDSMI_LINK_TYPE_PCIE = 1  # type: ignore[attr-defined]
amdsmi_wrapper.AMDSMI_LINK_TYPE_XGMI = 2  # type: ignore[attr-defined]
amdsmi_wrapper.AMDSMI_MEM_PAGE_STATUS_RESERVED = 0  # type: ignore[attr-defined]
amdsmi_wrapper.AMDSMI_MEM_PAGE_STATUS_PENDING = 1  # type: ignore[attr-defined]
amdsmi_wrapper.AMDSMI_MEM_PAGE_STATUS_UNRESERVABLE = 2  # type: ignore[attr-defined]

# ----------------------------------------------------------------------------------- exceptions


class AmdSmiException(Exception):
    """Base smi exception class"""


class AmdSmiLibraryException(AmdSmiException):
    def __init__(self, err_code: int) -> None:
        err_code = abs(err_code)
        super().__init__(err_code)
        self.err_code = err_code
        self.set_err_info()

    def __str__(self) -> str:
        return f"Error code:\n\t{self.err_code} | {self.err_info}"

    def get_error_info(self, detailed: bool = True) -> str:
        return self.err_info if detailed else str(self.err_info).split(" - ")[0]

    def get_error_code(self) -> int:
        return self.err_code

    def set_err_info(self) -> None:
        self.err_info = _INFO_BY_CODE.get(
            self.err_code, "AMDSMI_STATUS_UNKNOWN_ERROR - An unknown error occurred"
        )


class AmdSmiRetryException(AmdSmiLibraryException):
    def __init__(self) -> None:
        super().__init__(STATUS["RETRY"])


class AmdSmiTimeoutException(AmdSmiLibraryException):
    def __init__(self) -> None:
        super().__init__(STATUS["TIMEOUT"])


class AmdSmiParameterException(AmdSmiException):
    def __init__(self, receivedValue: Any, expectedType: Any, msg: str | None = None) -> None:
        super().__init__(msg)
        self.err_code = None
        self.actualType = type(receivedValue)
        self.expectedType = expectedType
        self.err_msg = msg or (
            f"Invalid parameter:\nActual type: {self.actualType}\nExpected type: {expectedType}"
        )

    def __str__(self) -> str:
        return self.err_msg


class AmdSmiKeyException(AmdSmiException):
    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key
        self.err_msg = "Key " + key + " is missing from dictionary"

    def __str__(self) -> str:
        return self.err_msg


class AmdSmiBdfFormatException(AmdSmiException):
    def __init__(self, bdf: str) -> None:
        super().__init__()
        self.bdf = bdf

    def __str__(self) -> str:
        return f"Wrong BDF format: {self.bdf}."


# ---------------------------------------------------------------------------------------- enums


class AmdSmiInitFlags(IntEnum):
    INIT_ALL_PROCESSORS = 0xFFFFFFFF
    INIT_AMD_CPUS = 1
    INIT_AMD_GPUS = 2
    INIT_AMD_APUS = 3
    INIT_NON_AMD_CPUS = 4
    INIT_NON_AMD_GPUS = 8


class AmdSmiClkType(IntEnum):
    SYS = 0
    GFX = 0  # an alias of SYS, as in the real enum
    DF = 1
    DCEF = 2
    SOC = 3
    MEM = 4
    PCIE = 5
    VCLK0 = 6
    VCLK1 = 7
    DCLK0 = 8
    DCLK1 = 9


class AmdSmiTemperatureType(IntEnum):
    EDGE = 0
    HOTSPOT = 1
    JUNCTION = 1  # an alias of HOTSPOT
    VRAM = 2
    HBM_0 = 3
    HBM_1 = 4
    HBM_2 = 5
    HBM_3 = 6
    PLX = 7


class AmdSmiTemperatureMetric(IntEnum):
    CURRENT = 0
    MAX = 1
    MIN = 2
    MAX_HYST = 3
    MIN_HYST = 4
    CRITICAL = 5
    CRITICAL_HYST = 6
    EMERGENCY = 7
    EMERGENCY_HYST = 8
    CRIT_MIN = 9
    CRIT_MIN_HYST = 10
    OFFSET = 11
    LOWEST = 12
    HIGHEST = 13


class AmdSmiMemoryType(IntEnum):
    VRAM = 0
    VIS_VRAM = 1
    GTT = 2


class AmdSmiGpuBlock(IntEnum):
    INVALID = 0
    UMC = 1
    SDMA = 2
    GFX = 4
    MMHUB = 8
    ATHUB = 16
    PCIE_BIF = 32
    HDP = 64
    XGMI_WAFL = 128
    DF = 256
    SMN = 512
    SEM = 1024
    MP0 = 2048
    MP1 = 4096
    FUSE = 8192


class AmdSmiMemoryPageStatus(IntEnum):
    RESERVED = 0
    PENDING = 1
    UNRESERVABLE = 2


class AmdSmiLinkType(IntEnum):
    AMDSMI_LINK_TYPE_INTERNAL = 0
    AMDSMI_LINK_TYPE_PCIE = 1
    AMDSMI_LINK_TYPE_XGMI = 2
    AMDSMI_LINK_TYPE_NOT_APPLICABLE = 3
    AMDSMI_LINK_TYPE_UNKNOWN = 4


# Parameter names of the real amdsmi 7.0.2 functions this fake provides (read from the wheel's
# amdsmi_interface.py with ast); tests check the fake's signatures against them.
REAL_SIGNATURES: dict[str, tuple[str, ...]] = {
    "amdsmi_init": ("flag",),
    "amdsmi_shut_down": (),
    "amdsmi_get_processor_handles": (),
    "amdsmi_get_lib_version": (),
    "amdsmi_get_rocm_version": (),
    "amdsmi_get_gpu_device_bdf": ("processor_handle",),
    "amdsmi_get_gpu_device_uuid": ("processor_handle",),
    "amdsmi_get_gpu_asic_info": ("processor_handle",),
    "amdsmi_get_gpu_board_info": ("processor_handle",),
    "amdsmi_get_gpu_driver_info": ("processor_handle",),
    "amdsmi_get_gpu_vbios_info": ("processor_handle",),
    "amdsmi_get_power_cap_info": ("processor_handle",),
    "amdsmi_get_power_info": ("processor_handle",),
    "amdsmi_get_energy_count": ("processor_handle",),
    "amdsmi_get_gpu_vram_info": ("processor_handle",),
    "amdsmi_get_gpu_vram_usage": ("processor_handle",),
    "amdsmi_get_gpu_memory_total": ("processor_handle", "mem_type"),
    "amdsmi_get_gpu_memory_usage": ("processor_handle", "mem_type"),
    "amdsmi_get_gpu_activity": ("processor_handle",),
    "amdsmi_get_clock_info": ("processor_handle", "clock_type"),
    "amdsmi_get_temp_metric": ("processor_handle", "sensor_type", "metric"),
    "amdsmi_get_gpu_fan_speed": ("processor_handle", "sensor_idx"),
    "amdsmi_get_pcie_info": ("processor_handle",),
    "amdsmi_get_gpu_pci_throughput": ("processor_handle",),
    "amdsmi_get_gpu_metrics_info": ("processor_handle",),
    "amdsmi_get_gpu_ecc_enabled": ("processor_handle",),
    "amdsmi_get_gpu_total_ecc_count": ("processor_handle",),
    "amdsmi_get_gpu_bad_page_info": ("processor_handle",),
    "amdsmi_get_link_metrics": ("processor_handle",),
    "amdsmi_get_gpu_process_list": ("processor_handle",),
    "amdsmi_get_gpu_kfd_info": ("processor_handle",),
    "amdsmi_get_gpu_compute_partition": ("processor_handle",),
    "amdsmi_get_gpu_memory_partition": ("processor_handle",),
    "amdsmi_topo_get_numa_node_number": ("processor_handle",),
    "amdsmi_topo_get_link_type": ("processor_handle_src", "processor_handle_dst"),
    "amdsmi_topo_get_link_weight": ("processor_handle_src", "processor_handle_dst"),
    "amdsmi_get_minmax_bandwidth_between_processors": (
        "processor_handle_src",
        "processor_handle_dst",
    ),
    "amdsmi_is_P2P_accessible": ("processor_handle_src", "processor_handle_dst"),
    "amdsmi_get_gpu_xgmi_link_status": ("processor_handle",),
    "amdsmi_get_xgmi_info": ("processor_handle",),
}

# ---------------------------------------------------------------------------------- fake GPUs


@dataclass
class FakeAmdProcess:
    """One entry of ``amdsmi_get_gpu_process_list``; ``gfx_ns``/``enc_ns`` are cumulative."""

    pid: int
    name: str = ""  # "" comes back as "N/A", as from the real wrapper
    vram_mem: int = 0
    gtt_mem: int = 0
    cpu_mem: int = 0
    mem: int | None = None  # defaults to vram + gtt + cpu
    gfx_ns: int = 0
    enc_ns: int = 0
    cu_occupancy: int = UINT32_MAX
    mine: bool = False  # the caller's own process (see FakeAmdSmi.hide_other_users)


@dataclass
class FakeXgmiLink:
    """One ``amdsmi_get_link_metrics`` link; ``read``/``write`` are cumulative KB. ``bit_rate``
    is Gb/s per lane; ``max_bandwidth`` is what older amdsmi puts there (the link width, 16),
    amdsmi 7 documents the link's Gb/s (512 on MI300X)."""

    read: int = 0
    write: int = 0
    bdf: str = "0000:00:00.0"
    bit_rate: int = 32
    max_bandwidth: int = 16
    link_type: int = 2  # AMDSMI_LINK_TYPE_XGMI


@dataclass
class FakePair:
    """How two GPUs reach each other (``amdsmi_topo_get_link_type`` / ``_link_weight`` /
    ``amdsmi_is_P2P_accessible`` / ``amdsmi_get_minmax_bandwidth_between_processors``)."""

    link_type: int = 1  # AMDSMI_LINK_TYPE_PCIE
    hops: int = 2
    weight: int = 40
    p2p: bool = True
    min_bandwidth: int = 0  # MB/s; answered only for XGMI peers 1 hop apart
    max_bandwidth: int = 0


XGMI_PAIR = FakePair(link_type=2, hops=1, weight=15, p2p=True, min_bandwidth=64, max_bandwidth=64)


def _default_temps() -> dict[tuple[str, str], int]:
    return {
        ("EDGE", "CURRENT"): 52,
        ("HOTSPOT", "CURRENT"): 61,
        ("VRAM", "CURRENT"): 58,
        ("EDGE", "CRITICAL"): 100,
        ("HOTSPOT", "CRITICAL"): 105,
        ("HOTSPOT", "EMERGENCY"): 110,
        ("VRAM", "CRITICAL"): 95,
    }


@dataclass
class FakeAmdGpu:
    """One AMD GPU. Defaults model an Instinct MI210 (CDNA2, PCIe card, no fan)."""

    market_name: str = "AMD Instinct MI210"
    product_name: str = "Instinct MI210"
    product_serial: str = "692223000123"
    asic_serial: str = "ABCDEF0123456789"  # hex string, as the C struct has it
    uuid: str = "b3ff740f-0000-1000-8031-a8b2c7d9e0f1"
    bdf: str = "0000:03:00.0"
    target_graphics_version: int = 0x90A  # raw value; the wrapper renders "gfx" + hex
    num_compute_units: int = 104
    device_id: int = 0x740F
    vram_size_mb: int = 65520
    vram_total_bytes: int = 65520 * MiB
    vram_used_bytes: int = 12 * GiB
    gfx_activity: int = 87
    umc_activity: int = 41
    mm_activity: int = UINT16_MAX
    socket_power: int = 243
    current_socket_power: int = UINT16_MAX  # MI300+ only
    average_socket_power: int = 243
    power_limit: int = 300
    power_cap_uw: int = 300_000_000
    default_power_cap_uw: int = 300_000_000
    min_power_cap_uw: int = 100_000_000
    max_power_cap_uw: int = 300_000_000
    dpm_cap_mhz: int = 1700
    energy_accumulator: int = 1_000_000_000
    counter_resolution: float = 15.259  # µJ per count
    temps: dict[tuple[str, str], int] = field(default_factory=_default_temps)
    clocks: dict[str, tuple[int, int, int]] = field(
        default_factory=lambda: {"GFX": (1700, 500, 1700), "MEM": (1600, 1600, 1600)}
    )  # name -> (clk, min_clk, max_clk) in MHz
    fan_speed: int | None = None  # 0..255; None: NOT_SUPPORTED (passively cooled)
    max_pcie_width: int = 16
    max_pcie_speed: int = 16000  # MT/s
    pcie_interface_version: int = 4
    pcie_width: int = 16
    pcie_speed: int = 16000  # MT/s
    pcie_bandwidth: int = UINT32_MAX
    # gpu_metrics: residency counters (MI300 class) and throttle status (older GPUs)
    accumulation_counter: int = UINT64_MAX
    residency: dict[str, int] = field(default_factory=dict)  # e.g. {"ppt_residency_acc": 5}
    throttle_status: int = 0
    indep_throttle_status: int = 0
    ecc_enabled_mask: int = 0x3FFF
    ecc_correctable: int = 0
    ecc_uncorrectable: int = 0
    ecc_deferred: int = 0
    bad_pages: list[tuple[int, int, int]] = field(default_factory=list)  # (addr, size, status)
    processes: list[FakeAmdProcess] = field(default_factory=list)
    xgmi_links: list[FakeXgmiLink] = field(default_factory=list)
    num_links: int | None = None  # defaults to len(xgmi_links)
    link_status: list[str] | None = None  # "U"/"D"/"X"/"N/A"; defaults to "U" per XGMI link
    xgmi_lanes: int | None = 16  # lanes per XGMI link (amdsmi_get_xgmi_info)
    numa_node: int = 0
    pci_sent: int = 1000
    pci_received: int = 3000
    max_pkt_sz: int = 256
    driver_version: str = "6.8.5"
    # Compute / memory partition mode (amdsmi_get_gpu_compute_partition / _memory_partition);
    # None: NOT_SUPPORTED (a GPU that cannot be partitioned, or a secondary partition).
    compute_partition: str | None = None
    memory_partition: str | None = None
    partition_id: int = 0  # amdsmi_get_gpu_kfd_info's current_partition_id
    vbios_version: str = "113-D67301-063"
    vbios_part_number: str = "113-D67301-063"
    unsupported: set[str] = field(default_factory=set)
    errors: dict[str, int] = field(default_factory=dict)
    retry: dict[str, int] = field(default_factory=dict)
    lost: bool = False
    lost_code: int = STATUS["NOT_FOUND"]
    fail_code: int | None = None  # every call raises this status (the driver stops answering)
    fail_after: int | None = None  # ... once this many calls have answered (None: at once)
    call_count: int = 0  # calls that reached this GPU


def mi210_gpu(**overrides: Any) -> FakeAmdGpu:
    return dataclasses.replace(FakeAmdGpu(), **overrides)


def mi300x_gpu(**overrides: Any) -> FakeAmdGpu:
    """An Instinct MI300X: no EDGE sensor, current_socket_power only, XGMI, residency counters."""
    temps = {
        ("HOTSPOT", "CURRENT"): 45,
        ("VRAM", "CURRENT"): 38,
        ("HOTSPOT", "CRITICAL"): 100,
        ("HOTSPOT", "EMERGENCY"): 105,
        ("VRAM", "CRITICAL"): 95,
    }
    base = FakeAmdGpu(
        market_name="AMD Instinct MI300X",
        product_name="AMD Instinct MI300X OAM",
        target_graphics_version=0x942,
        num_compute_units=304,
        device_id=0x74A1,
        vram_size_mb=196592,
        vram_total_bytes=196592 * MiB,
        socket_power=350,
        current_socket_power=350,
        average_socket_power=UINT16_MAX,
        power_cap_uw=750_000_000,
        default_power_cap_uw=750_000_000,
        min_power_cap_uw=0,
        max_power_cap_uw=750_000_000,
        temps=temps,
        clocks={"GFX": (2100, 500, 2100), "MEM": (1300, 900, 1300)},
        max_pcie_speed=32000,
        pcie_interface_version=5,
        pcie_speed=32000,
        accumulation_counter=1000,
        residency={
            "prochot_residency_acc": 0,
            "ppt_residency_acc": 0,
            "socket_thm_residency_acc": 0,
            "vr_thm_residency_acc": 0,
            "hbm_thm_residency_acc": 0,
        },
        throttle_status=UINT32_MAX,
        indep_throttle_status=UINT64_MAX,
        xgmi_links=[FakeXgmiLink() for _ in range(7)],
        # The mode after driver load: all XCCs in one partition, HBM interleaved as one node.
        compute_partition="SPX",
        memory_partition="NPS1",
    )
    return dataclasses.replace(base, **overrides)


MI300X_BDFS = (
    "0000:05:00.0",
    "0000:26:00.0",
    "0000:46:00.0",
    "0000:65:00.0",
    "0000:85:00.0",
    "0000:a6:00.0",
    "0000:c6:00.0",
    "0000:e5:00.0",
)


def mi300x_node(count: int = 8, **knobs: Any) -> FakeAmdSmi:
    """An MI300X platform: ``count`` GPUs, each with one XGMI link to every other GPU (link n of a
    GPU goes to the n-th other GPU), every pair XGMI, 1 hop, weight 15; the first half on NUMA
    node 0, the rest on 1."""
    bdfs = MI300X_BDFS[:count]
    gpus = []
    for i, bdf in enumerate(bdfs):
        peers = [other for other in bdfs if other != bdf]
        gpus.append(
            mi300x_gpu(
                bdf=bdf,
                uuid=f"a1ff74a1-0000-1000-80{i:02x}-000000000000",
                numa_node=0 if i < (count + 1) // 2 else 1,
                xgmi_links=[
                    FakeXgmiLink(bdf=peer, bit_rate=32, max_bandwidth=512) for peer in peers
                ],
            )
        )
    pairs = {(a, b): XGMI_PAIR for a in range(count) for b in range(a + 1, count)}
    return make_fake_amdsmi(gpus, pairs=pairs, **knobs)


# An MI300X in CPX mode is 8 processor handles, one per XCC, whose BDFs differ only by PCI function
# ("0000:0c:00.0" through "0000:0c:00.7"), each with its own UUID and partition ID (kfd_info's
# current_partition_id); DPX is 2, QPX 4. Partition 0, the primary, is the only one backed by the
# PCIe device and its device-wide sysfs files: it alone reports device-wide metrics (gpu_metrics:
# socket power ...), the ASIC and board serials and the partition modes; the secondaries answer
# NOT_SUPPORTED or N/A there (here also for PCIe, ECC and XGMI, which live on the PCIe device),
# and their own partition metrics (clocks). Source: AMD SMI's "GPU partitioning" guide
# (rocm.docs.amd.com/projects/amdsmi, "GPU partitioning"; projects/amdsmi/docs/conceptual/
# partition.md in ROCm/rocm-systems: "Primary and secondary partitions", "Device enumeration",
# "BDF encoding"), and the `amd-smi` table in ROCm/amdsmi#132 (ROCm 7.0.2, DPX/NPS1), where the
# secondary 0000:05:00.1 shows N/A for GFX utilization, temperature, power and partition mode and
# its own share of VRAM. The same guide: before ROCm 6.4.1 the secondaries mirrored the primary's
# DRM node, so every partition reported the primary's mode and device metrics (``mirror=True``).
MI300X_PARTITIONS = {"SPX": 1, "DPX": 2, "QPX": 4, "CPX": 8}  # MI300X: 8 XCCs; no TPX
MI300X_CUS = 304


def mi300x_partitions(
    bus: str = "05",
    *,
    mode: str = "CPX",
    memory: str = "NPS4",
    serial: int = 0,
    mirror: bool = False,
) -> list[FakeAmdGpu]:
    """The handles of one MI300X in compute partition ``mode`` at ``0000:<bus>:00.0`` and up,
    each with its share of the CUs and VRAM; ``mirror``: as amdsmi before ROCm 6.4.1."""
    count = MI300X_PARTITIONS[mode]
    primary = mi300x_gpu(
        bdf=f"0000:{bus}:00.0",
        uuid=f"a1ff74a1-0000-1000-80{serial:02x}-000000000000",
        compute_partition=mode,
        memory_partition=memory,
        num_compute_units=MI300X_CUS // count,
        vram_size_mb=196592 // count,
        vram_total_bytes=196592 // count * MiB,
        vram_used_bytes=GiB // 2,
        gfx_activity=12,
    )
    gpus = [primary]
    for n in range(1, count):
        ids = {
            "bdf": f"0000:{bus}:00.{n}",
            "uuid": f"a1ff74a1-0000-1000-80{serial:02x}-0000000000{n:02x}",
            "partition_id": n,
        }
        if mirror:  # ROCm < 6.4.1: the primary's node answers for every partition
            gpus.append(dataclasses.replace(primary, **ids))
            continue
        gpus.append(
            dataclasses.replace(
                primary,
                **ids,
                product_serial="",
                asic_serial="",
                compute_partition=None,
                memory_partition=None,
                socket_power=UINT16_MAX,
                current_socket_power=UINT16_MAX,
                average_socket_power=UINT16_MAX,
                gfx_activity=UINT16_MAX,
                umc_activity=UINT16_MAX,
                temps={},
                xgmi_links=[],
                residency={},
                accumulation_counter=UINT64_MAX,
                unsupported={
                    "amdsmi_get_power_cap_info",
                    "amdsmi_get_energy_count",
                    "amdsmi_get_gpu_metrics_info",
                    "amdsmi_get_pcie_info",
                    "amdsmi_get_gpu_total_ecc_count",
                    "amdsmi_get_gpu_bad_page_info",
                },
            )
        )
    return gpus


def mi300x_cpx_node(
    count: int = 1, *, mode: str = "CPX", mirror: bool = False, **knobs: Any
) -> FakeAmdSmi:
    """``count`` MI300X in compute partition ``mode`` (CPX: 8 handles each), their primaries in a
    full XGMI mesh (link n of a primary goes to the n-th other GPU's primary); NUMA node 0 for
    the first half."""
    gpus: list[FakeAmdGpu] = []
    bdfs = MI300X_BDFS[:count]
    for g, bdf in enumerate(bdfs):
        handles = mi300x_partitions(bdf.split(":")[1], mode=mode, serial=g, mirror=mirror)
        links = [FakeXgmiLink(bdf=peer, bit_rate=32, max_bandwidth=512) for peer in bdfs]
        for handle in handles:
            handle.numa_node = 0 if g < (count + 1) // 2 else 1
            if handle.partition_id == 0 or mirror:
                handle.xgmi_links = [dataclasses.replace(x) for x in links if x.bdf != bdf]
        gpus.extend(handles)
    knobs.setdefault("rocm_version", (True, "6.3.1" if mirror else "7.0.2"))
    return make_fake_amdsmi(gpus, **knobs)


def pcie_pair(**knobs: Any) -> FakeAmdSmi:
    """Two MI210 PCIe cards on different NUMA nodes: no XGMI, PCIe only."""
    gpus = [mi210_gpu(bdf="0000:03:00.0", numa_node=0), mi210_gpu(bdf="0000:83:00.0", numa_node=1)]
    knobs.setdefault("pairs", {(0, 1): FakePair(link_type=1, hops=2, weight=72, p2p=True)})
    return make_fake_amdsmi(gpus, **knobs)


def w7900_gpu(**overrides: Any) -> FakeAmdGpu:
    """A Radeon PRO W7900 (RDNA3, actively cooled, no XGMI)."""
    base = FakeAmdGpu(
        market_name="AMD Radeon PRO W7900",
        product_name="Radeon PRO W7900",
        target_graphics_version=0x1100,
        num_compute_units=96,
        device_id=0x7448,
        vram_size_mb=49136,
        vram_total_bytes=49136 * MiB,
        fan_speed=102,
        ecc_enabled_mask=0,
    )
    return dataclasses.replace(base, **overrides)


# ------------------------------------------------------------------------------- the module


def _validate(value: Any, max_value: int, *, is_bool: bool = False) -> Any:
    """amdsmi_interface._validate_if_max_uint for scalars."""
    if value == max_value:
        return NA
    return bool(value) if is_bool else value


def _pad_hex_value(value: str, length: int) -> str:
    if (
        len(value) > 2
        and length > 1
        and value[:2].lower() == "0x"
        and all(c in "0123456789abcdefABCDEF" for c in value[2:])
    ):
        return "0x" + value[2:].zfill(length)
    return value


class FakeAmdSmi(types.ModuleType):
    """The fake ``amdsmi`` module. Functions are methods so each instance has its own GPUs."""

    AmdSmiException = AmdSmiException
    AmdSmiLibraryException = AmdSmiLibraryException
    AmdSmiRetryException = AmdSmiRetryException
    AmdSmiTimeoutException = AmdSmiTimeoutException
    AmdSmiParameterException = AmdSmiParameterException
    AmdSmiKeyException = AmdSmiKeyException
    AmdSmiBdfFormatException = AmdSmiBdfFormatException
    AmdSmiInitFlags = AmdSmiInitFlags
    AmdSmiClkType = AmdSmiClkType
    AmdSmiTemperatureType = AmdSmiTemperatureType
    AmdSmiTemperatureMetric = AmdSmiTemperatureMetric
    AmdSmiMemoryType = AmdSmiMemoryType
    AmdSmiGpuBlock = AmdSmiGpuBlock
    AmdSmiMemoryPageStatus = AmdSmiMemoryPageStatus
    AmdSmiLinkType = AmdSmiLinkType
    amdsmi_wrapper = amdsmi_wrapper
    AMDSMI_MAX_FAN_SPEED = 255
    AMDSMI_MAX_NUM_XGMI_LINKS = AMDSMI_MAX_NUM_XGMI_LINKS

    def __init__(
        self,
        gpus: list[FakeAmdGpu],
        *,
        init_error: int | BaseException | None = None,
        init_noise: str | None = None,
        handles_error: int | None = None,
        rocm_version: tuple[bool, str] = (True, "6.3.1"),
        lib_version: tuple[int, int, int, str] = (25, 1, 0, "25.1.0"),
        missing: tuple[str, ...] = (),
        indep_throttle_as_int: bool = False,
        pairs: dict[tuple[int, int], FakePair] | None = None,
        duplicate_processes: bool = False,
        caller_root: bool = True,
        hide_other_users: bool = False,
    ) -> None:
        super().__init__("amdsmi")
        self.gpus = gpus
        self.init_error = init_error
        self.init_noise = init_noise
        self.handles_error = handles_error
        self.rocm_version = rocm_version
        self.lib_version = lib_version
        self.indep_throttle_as_int = indep_throttle_as_int
        self.pairs = dict(pairs or {})
        self.duplicate_processes = duplicate_processes
        self.caller_root = caller_root
        self.hide_other_users = hide_other_users
        self.calls: Counter[str] = Counter()
        self.gpu_calls: Counter[tuple[str, int]] = Counter()
        self.initialized = False
        self.init_flag: Any = None
        for name in missing:  # an older amdsmi without these functions
            setattr(self, name, None)

    # -------------------------------------------------------------------------- plumbing

    def _enter(self, fn: str, handle: Any) -> FakeAmdGpu:
        self.calls[fn] += 1
        if not isinstance(handle, FakeHandle):
            raise AmdSmiParameterException(handle, FakeHandle)
        self.gpu_calls[fn, handle.index] += 1
        if not self.initialized:
            raise AmdSmiLibraryException(STATUS["NOT_INIT"])
        gpu = self.gpus[handle.index]
        if gpu.lost:
            raise AmdSmiLibraryException(gpu.lost_code)
        gpu.call_count += 1
        if gpu.fail_code is not None and (
            gpu.fail_after is None or gpu.call_count > gpu.fail_after
        ):
            raise AmdSmiLibraryException(gpu.fail_code)
        if fn in gpu.errors:
            raise AmdSmiLibraryException(gpu.errors[fn])
        if gpu.retry.get(fn, 0) > 0:
            gpu.retry[fn] -= 1
            raise AmdSmiRetryException()
        if fn in gpu.unsupported:
            raise AmdSmiLibraryException(STATUS["NOT_SUPPORTED"])
        return gpu

    @staticmethod
    def _check_enum(value: Any, enum: type[IntEnum]) -> None:
        if not isinstance(value, enum):
            raise AmdSmiParameterException(value, enum)

    @staticmethod
    def _not_supported() -> AmdSmiLibraryException:
        return AmdSmiLibraryException(STATUS["NOT_SUPPORTED"])

    # ------------------------------------------------------------------ library lifecycle

    def amdsmi_init(self, flag: Any = AmdSmiInitFlags.INIT_AMD_GPUS) -> None:
        self.calls["amdsmi_init"] += 1
        if not isinstance(flag, AmdSmiInitFlags):
            raise AmdSmiParameterException(flag, AmdSmiInitFlags)
        if self.init_noise:
            print(self.init_noise)
        if isinstance(self.init_error, BaseException):
            raise self.init_error
        if self.init_error is not None:
            raise AmdSmiLibraryException(self.init_error)
        self.init_flag = flag
        self.initialized = True

    def amdsmi_shut_down(self) -> None:
        self.calls["amdsmi_shut_down"] += 1
        if not self.initialized:
            raise AmdSmiLibraryException(STATUS["NOT_INIT"])
        self.initialized = False

    def amdsmi_get_processor_handles(self) -> list[FakeHandle]:
        self.calls["amdsmi_get_processor_handles"] += 1
        if not self.initialized:
            raise AmdSmiLibraryException(STATUS["NOT_INIT"])
        if self.handles_error is not None:
            raise AmdSmiLibraryException(self.handles_error)
        return [FakeHandle(i) for i in range(len(self.gpus))]

    def amdsmi_get_lib_version(self) -> dict[str, Any]:
        self.calls["amdsmi_get_lib_version"] += 1
        major, minor, release, build = self.lib_version
        # The real wrapper returns only the first character of the build string.
        return {"major": major, "minor": minor, "release": release, "build": build[:1]}

    def amdsmi_get_rocm_version(self) -> tuple[bool, str]:
        self.calls["amdsmi_get_rocm_version"] += 1
        return self.rocm_version

    # -------------------------------------------------------------------------- identity

    def amdsmi_get_gpu_device_bdf(self, processor_handle: Any) -> str:
        return self._enter("amdsmi_get_gpu_device_bdf", processor_handle).bdf

    def amdsmi_get_gpu_device_uuid(self, processor_handle: Any) -> str:
        return self._enter("amdsmi_get_gpu_device_uuid", processor_handle).uuid

    def amdsmi_get_gpu_kfd_info(self, processor_handle: Any) -> dict[str, Any]:
        gpu = self._enter("amdsmi_get_gpu_kfd_info", processor_handle)
        index = self.gpus.index(gpu)
        return {
            "kfd_id": 0x4000 + index,
            "node_id": 2 + index,
            "current_partition_id": gpu.partition_id,
        }

    # ------------------------------------------------------------------------ partitions

    def amdsmi_get_gpu_compute_partition(self, processor_handle: Any) -> str:
        gpu = self._enter("amdsmi_get_gpu_compute_partition", processor_handle)
        if gpu.compute_partition is None:
            raise self._not_supported()
        return gpu.compute_partition

    def amdsmi_get_gpu_memory_partition(self, processor_handle: Any) -> str:
        gpu = self._enter("amdsmi_get_gpu_memory_partition", processor_handle)
        if gpu.memory_partition is None:
            raise self._not_supported()
        return gpu.memory_partition

    def amdsmi_get_gpu_asic_info(self, processor_handle: Any) -> dict[str, Any]:
        gpu = self._enter("amdsmi_get_gpu_asic_info", processor_handle)
        serial = gpu.asic_serial
        return {
            "market_name": _pad_hex_value(gpu.market_name, 4) or NA,
            "vendor_id": hex(0x1002),
            "vendor_name": "Advanced Micro Devices Inc. [AMD/ATI]",
            "subvendor_id": "0x1002",
            "device_id": hex(gpu.device_id) if gpu.device_id else NA,
            "rev_id": "0x00",
            "asic_serial": f"0x{int(serial, 16):016X}" if serial else NA,
            "oam_id": NA,
            "num_compute_units": _validate(gpu.num_compute_units, UINT32_MAX),
            "target_graphics_version": "gfx" + hex(gpu.target_graphics_version)[2:],
            "subsystem_id": "0x0c34",
        }

    def amdsmi_get_gpu_board_info(self, processor_handle: Any) -> dict[str, Any]:
        gpu = self._enter("amdsmi_get_gpu_board_info", processor_handle)
        info = {
            "model_number": "102-D67302-00",
            "product_serial": gpu.product_serial,
            "fru_id": "",
            "product_name": _pad_hex_value(gpu.product_name, 4),
            "manufacturer_name": "AMD",
        }
        return {key: value or NA for key, value in info.items()}

    def amdsmi_get_gpu_driver_info(self, processor_handle: Any) -> dict[str, Any]:
        gpu = self._enter("amdsmi_get_gpu_driver_info", processor_handle)
        info = {"driver_name": "amdgpu", "driver_version": gpu.driver_version, "driver_date": ""}
        return {key: value or NA for key, value in info.items()}

    def amdsmi_get_gpu_vbios_info(self, processor_handle: Any) -> dict[str, Any]:
        gpu = self._enter("amdsmi_get_gpu_vbios_info", processor_handle)
        return {
            "name": "MI210",
            "build_date": "2022/06/01 09:00",
            "part_number": gpu.vbios_part_number,
            "version": gpu.vbios_version,
        }

    # ---------------------------------------------------------------------- power, memory

    def amdsmi_get_power_cap_info(self, processor_handle: Any) -> dict[str, Any]:
        gpu = self._enter("amdsmi_get_power_cap_info", processor_handle)
        return {
            "power_cap": gpu.power_cap_uw,
            "default_power_cap": gpu.default_power_cap_uw,
            "dpm_cap": gpu.dpm_cap_mhz,
            "min_power_cap": gpu.min_power_cap_uw,
            "max_power_cap": gpu.max_power_cap_uw,
        }

    def amdsmi_get_power_info(self, processor_handle: Any) -> dict[str, Any]:
        gpu = self._enter("amdsmi_get_power_info", processor_handle)
        info = {
            "socket_power": gpu.socket_power,
            "current_socket_power": gpu.current_socket_power,
            "average_socket_power": gpu.average_socket_power,
            "gfx_voltage": 806,
            "soc_voltage": 918,
            "mem_voltage": 1250,
            "power_limit": gpu.power_limit,
        }
        # The real wrapper maps only 0xFFFF to "N/A"; 0xFFFFFFFF comes through as a number.
        return {key: NA if value == UINT16_MAX else value for key, value in info.items()}

    def amdsmi_get_energy_count(self, processor_handle: Any) -> dict[str, Any]:
        gpu = self._enter("amdsmi_get_energy_count", processor_handle)
        return {
            "energy_accumulator": gpu.energy_accumulator,
            "counter_resolution": gpu.counter_resolution,
            "timestamp": 1_700_000_000_000_000,
        }

    def amdsmi_get_gpu_vram_info(self, processor_handle: Any) -> dict[str, Any]:
        gpu = self._enter("amdsmi_get_gpu_vram_info", processor_handle)
        return {
            "vram_type": 4,  # AMDSMI_VRAM_TYPE_HBM2E
            "vram_vendor": "SAMSUNG",
            "vram_size": gpu.vram_size_mb,
            "vram_bit_width": 4096,
            "vram_max_bandwidth": NA,
        }

    def amdsmi_get_gpu_vram_usage(self, processor_handle: Any) -> dict[str, Any]:
        gpu = self._enter("amdsmi_get_gpu_vram_usage", processor_handle)
        return {"vram_total": gpu.vram_total_bytes // MiB, "vram_used": gpu.vram_used_bytes // MiB}

    def amdsmi_get_gpu_memory_total(self, processor_handle: Any, mem_type: Any) -> int:
        gpu = self._enter("amdsmi_get_gpu_memory_total", processor_handle)
        self._check_enum(mem_type, AmdSmiMemoryType)
        if mem_type != AmdSmiMemoryType.VRAM:
            raise self._not_supported()
        return gpu.vram_total_bytes

    def amdsmi_get_gpu_memory_usage(self, processor_handle: Any, mem_type: Any) -> int:
        gpu = self._enter("amdsmi_get_gpu_memory_usage", processor_handle)
        self._check_enum(mem_type, AmdSmiMemoryType)
        if mem_type != AmdSmiMemoryType.VRAM:
            raise self._not_supported()
        return gpu.vram_used_bytes

    # --------------------------------------------------------------- activity, clocks, temps

    def amdsmi_get_gpu_activity(self, processor_handle: Any) -> dict[str, Any]:
        gpu = self._enter("amdsmi_get_gpu_activity", processor_handle)
        info = {
            "gfx_activity": gpu.gfx_activity,
            "umc_activity": gpu.umc_activity,
            "mm_activity": gpu.mm_activity,
        }
        return {key: NA if value == UINT16_MAX else value for key, value in info.items()}

    def amdsmi_get_clock_info(self, processor_handle: Any, clock_type: Any) -> dict[str, Any]:
        gpu = self._enter("amdsmi_get_clock_info", processor_handle)
        self._check_enum(clock_type, AmdSmiClkType)
        name = {0: "GFX", 3: "SOC", 4: "MEM"}.get(int(clock_type))
        if name not in gpu.clocks:
            raise self._not_supported()
        clk, min_clk, max_clk = gpu.clocks[name]
        return {
            "clk": _validate(clk, UINT32_MAX),
            "min_clk": _validate(min_clk, UINT32_MAX),
            "max_clk": _validate(max_clk, UINT32_MAX),
            "clk_locked": NA,
            "clk_deep_sleep": 0,
        }

    def amdsmi_get_temp_metric(self, processor_handle: Any, sensor_type: Any, metric: Any) -> int:
        gpu = self._enter("amdsmi_get_temp_metric", processor_handle)
        self._check_enum(sensor_type, AmdSmiTemperatureType)
        self._check_enum(metric, AmdSmiTemperatureMetric)
        key = (AmdSmiTemperatureType(int(sensor_type)).name, metric.name)
        if key not in gpu.temps:
            raise self._not_supported()
        return gpu.temps[key]

    def amdsmi_get_gpu_fan_speed(self, processor_handle: Any, sensor_idx: Any) -> int:
        gpu = self._enter("amdsmi_get_gpu_fan_speed", processor_handle)
        if not isinstance(sensor_idx, int):
            raise AmdSmiParameterException(sensor_idx, int)
        if gpu.fan_speed is None or sensor_idx != 0:
            raise self._not_supported()
        return gpu.fan_speed

    # ------------------------------------------------------------------------------ PCIe

    def amdsmi_get_pcie_info(self, processor_handle: Any) -> dict[str, Any]:
        gpu = self._enter("amdsmi_get_pcie_info", processor_handle)
        return {
            "pcie_static": {
                "max_pcie_width": _validate(gpu.max_pcie_width, UINT16_MAX),
                "max_pcie_speed": _validate(gpu.max_pcie_speed, UINT32_MAX),
                "pcie_interface_version": _validate(gpu.pcie_interface_version, UINT32_MAX),
                "slot_type": "OAM" if gpu.xgmi_links else "PCIE",
            },
            "pcie_metric": {
                "pcie_width": _validate(gpu.pcie_width, UINT16_MAX),
                "pcie_speed": _validate(gpu.pcie_speed, UINT32_MAX),
                "pcie_bandwidth": _validate(gpu.pcie_bandwidth, UINT32_MAX),
                "pcie_replay_count": 0,
                "pcie_l0_to_recovery_count": 0,
                "pcie_replay_roll_over_count": 0,
                "pcie_nak_sent_count": 0,
                "pcie_nak_received_count": 0,
                "pcie_lc_perf_other_end_recovery_count": NA,
            },
        }

    def amdsmi_get_gpu_pci_throughput(self, processor_handle: Any) -> dict[str, Any]:
        gpu = self._enter("amdsmi_get_gpu_pci_throughput", processor_handle)
        return {"sent": gpu.pci_sent, "received": gpu.pci_received, "max_pkt_sz": gpu.max_pkt_sz}

    # ------------------------------------------------------------------------- gpu_metrics

    def amdsmi_get_gpu_metrics_info(self, processor_handle: Any) -> dict[str, Any]:
        gpu = self._enter("amdsmi_get_gpu_metrics_info", processor_handle)
        temps = gpu.temps
        links = gpu.xgmi_links[:AMDSMI_MAX_NUM_XGMI_LINKS]
        pad = AMDSMI_MAX_NUM_XGMI_LINKS - len(links)
        if self.indep_throttle_as_int:  # amdsmi 6.x: the raw SMU_THROTTLER_* bitmask
            indep = NA if gpu.indep_throttle_status == UINT64_MAX else gpu.indep_throttle_status
        else:  # amdsmi 7.x: isBool=True
            indep = _validate(gpu.indep_throttle_status, UINT64_MAX, is_bool=True)
        metrics: dict[str, Any] = {
            "temperature_edge": temps.get(("EDGE", "CURRENT"), NA),
            "temperature_hotspot": temps.get(("HOTSPOT", "CURRENT"), NA),
            "temperature_mem": temps.get(("VRAM", "CURRENT"), NA),
            "average_gfx_activity": gpu.gfx_activity if gpu.gfx_activity <= 100 else NA,
            "average_umc_activity": gpu.umc_activity if gpu.umc_activity <= 100 else NA,
            "average_socket_power": _validate(gpu.average_socket_power, UINT16_MAX),
            "current_socket_power": _validate(gpu.current_socket_power, UINT16_MAX),
            "energy_accumulator": gpu.energy_accumulator,
            "current_gfxclk": gpu.clocks.get("GFX", (NA,))[0],
            "throttle_status": _validate(gpu.throttle_status, UINT32_MAX, is_bool=True),
            "indep_throttle_status": indep,
            "pcie_link_width": gpu.pcie_width,
            "pcie_link_speed": gpu.pcie_speed // 100,
            "xgmi_read_data_acc": [link.read for link in links] + [NA] * pad,
            "xgmi_write_data_acc": [link.write for link in links] + [NA] * pad,
            "accumulation_counter": _validate(gpu.accumulation_counter, UINT64_MAX),
        }
        for key in (
            "prochot_residency_acc",
            "ppt_residency_acc",
            "socket_thm_residency_acc",
            "vr_thm_residency_acc",
            "hbm_thm_residency_acc",
        ):
            metrics[key] = _validate(gpu.residency.get(key, UINT64_MAX), UINT64_MAX)
        return metrics

    # --------------------------------------------------------------------------------- ECC

    def amdsmi_get_gpu_ecc_enabled(self, processor_handle: Any) -> int:
        return self._enter("amdsmi_get_gpu_ecc_enabled", processor_handle).ecc_enabled_mask

    def amdsmi_get_gpu_total_ecc_count(self, processor_handle: Any) -> dict[str, Any]:
        gpu = self._enter("amdsmi_get_gpu_total_ecc_count", processor_handle)
        return {
            "correctable_count": gpu.ecc_correctable,
            "uncorrectable_count": gpu.ecc_uncorrectable,
            "deferred_count": gpu.ecc_deferred,
        }

    def amdsmi_get_gpu_bad_page_info(self, processor_handle: Any) -> list[dict[str, Any]]:
        gpu = self._enter("amdsmi_get_gpu_bad_page_info", processor_handle)
        return [
            {"value": i, "page_address": address, "page_size": size, "status": status}
            for i, (address, size, status) in enumerate(gpu.bad_pages)
        ]

    # ------------------------------------------------------------------------------ XGMI

    def amdsmi_get_link_metrics(self, processor_handle: Any) -> dict[str, Any]:
        gpu = self._enter("amdsmi_get_link_metrics", processor_handle)
        if not gpu.xgmi_links:
            raise self._not_supported()
        links = [
            {
                "bdf": link.bdf,
                "bit_rate": link.bit_rate,
                "max_bandwidth": link.max_bandwidth,
                "link_type": link.link_type,
                "read": link.read,
                "write": link.write,
            }
            for link in gpu.xgmi_links[:AMDSMI_MAX_NUM_XGMI_LINKS]
        ]
        # The real wrapper always returns AMDSMI_MAX_NUM_XGMI_LINKS entries; the unused ones
        # hold whatever the struct had (here: large leftover counters, so slicing matters).
        filler = {
            "bdf": "0000:00:00.0",
            "bit_rate": 0,
            "max_bandwidth": 0,
            "link_type": 0,
            "read": 987_654_321,
            "write": 123_456_789,
        }
        links += [dict(filler) for _ in range(AMDSMI_MAX_NUM_XGMI_LINKS - len(links))]
        count = gpu.num_links if gpu.num_links is not None else len(gpu.xgmi_links)
        return {"num_links": count, "links": links}

    def amdsmi_get_xgmi_info(self, processor_handle: Any) -> dict[str, Any]:
        gpu = self._enter("amdsmi_get_xgmi_info", processor_handle)
        if not gpu.xgmi_links or gpu.xgmi_lanes is None:
            raise self._not_supported()
        return {
            "xgmi_lanes": gpu.xgmi_lanes,
            "xgmi_hive_id": 0x6A1F3E2D5C4B3A29,
            "xgmi_node_id": 0x1000 + self.gpus.index(gpu),
            "index": self.gpus.index(gpu),
        }

    def amdsmi_get_gpu_xgmi_link_status(self, processor_handle: Any) -> dict[str, Any]:
        gpu = self._enter("amdsmi_get_gpu_xgmi_link_status", processor_handle)
        status = gpu.link_status
        if status is None:
            if not gpu.xgmi_links:
                raise self._not_supported()
            status = ["U"] * min(len(gpu.xgmi_links), AMDSMI_MAX_NUM_XGMI_LINKS)
        # The real wrapper stops at total_links and maps the enum to letters.
        return {"status": list(status), "total_links": len(status)}

    # -------------------------------------------------------------------------- topology

    def amdsmi_topo_get_numa_node_number(self, processor_handle: Any) -> int:
        gpu = self._enter("amdsmi_topo_get_numa_node_number", processor_handle)
        return gpu.numa_node & UINT32_MAX  # c_uint32: -1 (no NUMA) comes back as 0xFFFFFFFF

    def _pair(self, fn: str, src: Any, dst: Any) -> FakePair:
        self._enter(fn, src)
        if not isinstance(dst, FakeHandle):
            raise AmdSmiParameterException(dst, FakeHandle)
        if self.gpus[dst.index].lost:
            raise AmdSmiLibraryException(self.gpus[dst.index].lost_code)
        a, b = sorted((src.index, dst.index))
        if (a, b) in self.pairs:
            return self.pairs[a, b]
        peers = {link.bdf for link in self.gpus[a].xgmi_links}
        peers |= {link.bdf for link in self.gpus[b].xgmi_links}
        if self.gpus[a].bdf in peers or self.gpus[b].bdf in peers:
            return XGMI_PAIR
        return FakePair()

    def amdsmi_topo_get_link_type(
        self, processor_handle_src: Any, processor_handle_dst: Any
    ) -> dict[str, Any]:
        pair = self._pair("amdsmi_topo_get_link_type", processor_handle_src, processor_handle_dst)
        return {"hops": pair.hops, "type": pair.link_type}

    def amdsmi_topo_get_link_weight(
        self, processor_handle_src: Any, processor_handle_dst: Any
    ) -> int:
        return self._pair(
            "amdsmi_topo_get_link_weight", processor_handle_src, processor_handle_dst
        ).weight

    def amdsmi_get_minmax_bandwidth_between_processors(
        self, processor_handle_src: Any, processor_handle_dst: Any
    ) -> dict[str, Any]:
        pair = self._pair(
            "amdsmi_get_minmax_bandwidth_between_processors",
            processor_handle_src,
            processor_handle_dst,
        )
        if pair.link_type != AmdSmiLinkType.AMDSMI_LINK_TYPE_XGMI or pair.hops != 1:
            raise self._not_supported()  # only XGMI peers 1 hop apart (amdsmi.h)
        return {"min_bandwidth": pair.min_bandwidth, "max_bandwidth": pair.max_bandwidth}

    def amdsmi_is_P2P_accessible(
        self, processor_handle_src: Any, processor_handle_dst: Any
    ) -> bool:
        return self._pair(
            "amdsmi_is_P2P_accessible", processor_handle_src, processor_handle_dst
        ).p2p

    # ------------------------------------------------------------------------- processes

    # ROCm before rocm-systems PR #8396 ("fix(amdsmi): process visibility, per-GPU attribution"):
    # - "The same compute process was reported under every GPU, rather than only the GPU(s) it
    #   actually uses" (also ROCm/legacy-rocm-build#2292: "refer to the memory usage for each
    #   GPU"): with ``duplicate_processes`` each GPU's list also holds every other GPU's processes,
    #   with this GPU's own VRAM and engine time for them (none).
    # - A caller without permission to read another user's /proc/<pid>/fd got "No running
    #   processes detected" although the jobs were using the GPUs: the first KFD PID was taken as
    #   proof of a PID namespace and the /proc scan then dropped every unreadable process. With
    #   ``hide_other_users`` and not ``caller_root``, processes not ``mine`` are left out. (Since
    #   the fix they are listed with the name "N/A".)
    def _listed(self, gpu: FakeAmdGpu) -> list[FakeAmdProcess]:
        procs = list(gpu.processes)
        if self.duplicate_processes:
            pids = {proc.pid for proc in procs}
            for other in self.gpus:
                for proc in other.processes if other is not gpu else ():
                    if proc.pid not in pids:
                        pids.add(proc.pid)
                        procs.append(FakeAmdProcess(pid=proc.pid, name=proc.name, mine=proc.mine))
        if self.hide_other_users and not self.caller_root:
            procs = [proc for proc in procs if proc.mine]
        return procs

    def amdsmi_get_gpu_process_list(self, processor_handle: Any) -> list[dict[str, Any]]:
        gpu = self._enter("amdsmi_get_gpu_process_list", processor_handle)
        result = []
        for proc in self._listed(gpu):
            mem = proc.mem if proc.mem is not None else proc.vram_mem + proc.gtt_mem + proc.cpu_mem
            result.append(
                {
                    "name": proc.name.strip() or NA,
                    "pid": proc.pid,
                    "mem": mem,
                    "engine_usage": {"gfx": proc.gfx_ns, "enc": proc.enc_ns},
                    "memory_usage": {
                        "gtt_mem": proc.gtt_mem,
                        "cpu_mem": proc.cpu_mem,
                        "vram_mem": proc.vram_mem,
                    },
                    "cu_occupancy": _validate(proc.cu_occupancy, UINT32_MAX),
                }
            )
        return result


def make_fake_amdsmi(gpus: list[FakeAmdGpu] | None = None, **knobs: Any) -> FakeAmdSmi:
    """A fake ``amdsmi`` module with ``gpus`` (one MI210 by default; ``[]`` for none)."""
    return FakeAmdSmi([mi210_gpu()] if gpus is None else gpus, **knobs)


# ------------------------------------------------------------------- the real import failure

_BROKEN_INIT = "from . import amdsmi_wrapper  # noqa: F401\n"
_BROKEN_WRAPPER = """\
# What amdsmi 7.0.2's amdsmi_wrapper.py does when libamd_smi.so cannot be loaded.
_libraries = {}
try:
    raise OSError(
        "/opt/rocm/lib/libamd_smi.so: cannot open shared object file: No such file or directory"
    )
except OSError as e:
    print(e)
    print(
        "Unable to find libamd_smi.so library try installing amd-smi-lib from your package manager"
    )

amdsmi_free_name_value_pairs = _libraries['libamd_smi.so'].amdsmi_free_name_value_pairs
"""


def write_broken_amdsmi(root: Path) -> Path:
    """Write an ``amdsmi`` package under ``root`` that fails to import like the real one without
    ROCm (two lines on stdout, then ``KeyError('libamd_smi.so')``). Put ``root`` on sys.path."""
    package = root / "amdsmi"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text(_BROKEN_INIT)
    (package / "amdsmi_wrapper.py").write_text(_BROKEN_WRAPPER)
    return package


__all__ = [
    "MI300X_BDFS",
    "MI300X_PARTITIONS",
    "REAL_SIGNATURES",
    "STATUS",
    "XGMI_PAIR",
    "AmdSmiException",
    "AmdSmiLibraryException",
    "AmdSmiParameterException",
    "AmdSmiRetryException",
    "FakeAmdGpu",
    "FakeAmdProcess",
    "FakeAmdSmi",
    "FakeHandle",
    "FakePair",
    "FakeXgmiLink",
    "make_fake_amdsmi",
    "mi210_gpu",
    "mi300x_cpx_node",
    "mi300x_gpu",
    "mi300x_node",
    "mi300x_partitions",
    "pcie_pair",
    "w7900_gpu",
    "write_broken_amdsmi",
]
