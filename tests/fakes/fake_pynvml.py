"""A fake nvidia-ml-py (``pynvml``) for testing the NVML backend without a GPU.

It mirrors the real module: the same function names and parameters (a test checks them against
the installed ``pynvml``), the same return types (the real ctypes structs, lists and tuples, a
``c_uint`` from ``nvmlDeviceIsMigDeviceHandle``, a ctypes array of ``c_nvmlFieldValue_t``) and the
genuine error classes and constants, copied from the real module.

Build one with :func:`make_fake_nvml` from a list of :class:`FakeGpu`. Every behaviour a test
needs is a knob on :class:`FakeGpu` (values, ``unsupported``, ``errors``, ``all_unsupported``,
``lost``, ``lost_after``, ``hang`` / ``hang_after`` (a ``threading.Event``: every call on the GPU
blocks until the test sets it, as a wedged driver does), ``fail_with`` / ``fail_after`` (every
call on the GPU raises that
error, e.g. ``NVMLError_DriverNotLoaded``, from the moment a test sets it, or after that many
calls; clear it and the GPU answers again), MIG slices, processes) or on :class:`FakeNvml`
(``init_error``,
``missing`` C symbols that raise FunctionNotFound, ``absent`` names the binding lacks). Calls are
counted in ``calls`` (per function), ``gpu_calls`` (per GPU index and function) and logged in
``log``.

Topology and NVLink: ``FakeGpu.nvlinks`` lists the GPU's links (:class:`FakeLink`: state, version,
remote PCI bus id and device type, error counters, cumulative per-link KiB counters read through
field values 138/139 with scopeId = link id); an empty list answers NotSupported for every link
(a consumer or PCIe card), a link id past the list InvalidArgument. ``FakeLink.version`` is
what NVML answers: the ``nvmlNvlinkVersion_t`` enum (``NVML_NVLINK_VERSION_4_0`` = 6 on H100),
not the generation. ``nvswitch_links`` and ``direct_links`` build the usual layouts.
``FakeGpu.nvlink_speed_mbps`` is field 90, ``cpu_affinity`` (CPU ids, packed into 64-bit words)
and ``numa_node`` feed ``nvmlDeviceGetCpuAffinity`` / ``nvmlDeviceGetNumaNodeId`` (None:
NotSupported; the latter is the "GPU NUMA ID" of coherent systems, not the PCI device's NUMA
node, which lives in sysfs). On
:class:`FakeNvml`, ``topology_levels`` (a GPU x GPU matrix of ``NVML_TOPOLOGY_*``; default NODE)
and ``p2p_status`` ((a, b, index) -> status, looked up both ways; default OK) answer the pair
queries, and a P2P index that is not an int (the binding's tuple ``NVML_P2P_CAPS_INDEX_READ``)
raises ``ctypes.ArgumentError`` as the real call does. FunctionNotFound for one call (remote
device type, NUMA node): ``missing={...}``. A link going down mid-run: set its ``state = 0``.

Events: ``nvmlEventSetCreate`` / ``nvmlDeviceRegisterEvents`` / ``nvmlEventSetWait`` /
``nvmlEventSetFree`` work on :class:`FakeEventSet` objects (listed in ``FakeNvml.event_sets``).
A test feeds them with :meth:`FakeNvml.emit_event` (delivered to every live set registered for that
GPU and type) and :meth:`FakeNvml.emit_wait_error` (the next waits raise it); ``nvmlEventSetWait``
blocks on a thread-safe queue up to its timeout and then raises the real ``NVMLError_Timeout``.
Make the event API unsupported with ``FakeGpu.supported_event_types=0``, ``FakeGpu.unsupported``
/ ``errors`` (e.g. ``{"nvmlDeviceRegisterEvents": NVMLError_NoPermission}``), ``missing`` or
``absent`` (e.g. ``{"nvmlEventSetCreate"}``).
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import queue
import struct
import threading
import time
import types
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pynvml as _real

GiB = 1 << 30
MiB = 1 << 20
UINT_MAX = 0xFFFFFFFF

# The genuine error classes, so ``except pynvml.NVMLError_NotSupported`` behaves as in production.
NVMLError = _real.NVMLError
NVMLLibraryMismatchError = _real.NVMLLibraryMismatchError
NVMLError_NotSupported = _real.NVMLError_NotSupported
NVMLError_NoPermission = _real.NVMLError_NoPermission
NVMLError_NotFound = _real.NVMLError_NotFound
NVMLError_InvalidArgument = _real.NVMLError_InvalidArgument
NVMLError_FunctionNotFound = _real.NVMLError_FunctionNotFound
NVMLError_LibraryNotFound = _real.NVMLError_LibraryNotFound
NVMLError_DriverNotLoaded = _real.NVMLError_DriverNotLoaded
NVMLError_GpuIsLost = _real.NVMLError_GpuIsLost
NVMLError_Uninitialized = _real.NVMLError_Uninitialized
NVMLError_Unknown = _real.NVMLError_Unknown
NVMLError_Timeout = _real.NVMLError_Timeout

# What an H100 reports from nvmlDeviceGetSupportedEventTypes.
DEFAULT_EVENT_TYPES = (
    _real.nvmlEventTypeSingleBitEccError
    | _real.nvmlEventTypeDoubleBitEccError
    | _real.nvmlEventTypePState
    | _real.nvmlEventTypeXidCriticalError
    | _real.nvmlEventTypeClock
)

# Device calls that still answer when a FakeGpu has ``all_unsupported=True``.
ALWAYS_SUPPORTED = frozenset(
    {
        "nvmlDeviceGetHandleByIndex",
        "nvmlDeviceGetName",
        "nvmlDeviceGetUUID",
        "nvmlDeviceGetIndex",
        "nvmlDeviceGetFieldValues",  # answers, with NOT_SUPPORTED in every entry
    }
)

ErrorSpec = type[NVMLError] | BaseException


@dataclass
class FakeProcess:
    """A row of ``nvmlDeviceGet{Compute,Graphics}RunningProcesses``."""

    pid: int
    used_gpu_memory: int | None = GiB
    gpu_instance_id: int = UINT_MAX
    compute_instance_id: int = UINT_MAX


@dataclass
class FakeProcUtil:
    """A per-process utilization sample (timestamp in µs)."""

    pid: int
    timestamp_us: int
    sm: int
    mem: int = 0
    enc: int = 0
    dec: int = 0


@dataclass
class FakeMig:
    """A MIG device (slice) living in one slot of its parent."""

    gpu_instance_id: int
    compute_instance_id: int = 0
    uuid: str = ""
    name: str = "NVIDIA H100 80GB HBM3 MIG 1g.10gb"
    memory_total: int = 10 * GiB
    memory_used: int = GiB
    memory_reserved: int = 0
    sm_count: int = 16
    compute_processes: list[FakeProcess] = field(default_factory=list)
    graphics_processes: list[FakeProcess] = field(default_factory=list)


@dataclass
class FakeLink:
    """One NVLink of a GPU. ``None`` in a field makes its query answer NotSupported."""

    state: int = 1  # NVML_FEATURE_ENABLED; 0: the link is down
    version: int | None = _real.NVML_NVLINK_VERSION_4_0  # the enum (6), as NVML answers
    remote_bus_id: str | None = "00000000:C1:00.0"  # an NVSwitch by default
    remote_type: int | None = _real.NVML_NVLINK_DEVICE_TYPE_SWITCH
    replay_errors: int | None = 0
    recovery_errors: int | None = 0
    crc_flit_errors: int | None = 0
    crc_data_errors: int | None = 0
    tx_kib: int | None = 0  # cumulative (field 138, scopeId = link id)
    rx_kib: int | None = 0


def nvswitch_links(count: int = 18, switch_bus_ids: tuple[str, ...] = ()) -> list[FakeLink]:
    """``count`` NVLink4 links to NVSwitches (an HGX H100 board: 18 links over 4 switches)."""
    buses = switch_bus_ids or tuple(f"00000000:{0xC1 + i:02X}:00.0" for i in range(4))
    return [FakeLink(remote_bus_id=buses[i % len(buses)]) for i in range(count)]


def unwired_links(count: int = 18) -> list[FakeLink]:
    """An H100's links where nothing is at the far end: a one-GPU VM carved out of an HGX board,
    or an HGX partition without the NVSwitch fabric. Every link answers "inactive", its remote
    PCI info all zeros and its remote type NotSupported (reported for such VMs: the links exist
    on the chip but were never trained)."""
    return [
        FakeLink(state=0, remote_bus_id="00000000:00:00.0", remote_type=None, tx_kib=None)
        for _ in range(count)
    ]


def direct_links(
    peer_bus_id: str, count: int = 4, version: int = _real.NVML_NVLINK_VERSION_3_0
) -> list[FakeLink]:
    """``count`` links straight to one peer GPU (an NVLink bridge between two cards, NVLink 3
    by default; ``version`` is NVML's enum)."""
    return [
        FakeLink(
            version=version,
            remote_bus_id=peer_bus_id,
            remote_type=_real.NVML_NVLINK_DEVICE_TYPE_GPU,
        )
        for _ in range(count)
    ]


def _default_clocks() -> dict[int, int]:
    return {_real.NVML_CLOCK_GRAPHICS: 1755, _real.NVML_CLOCK_SM: 1755, _real.NVML_CLOCK_MEM: 2619}


def _default_max_clocks() -> dict[int, int]:
    return {_real.NVML_CLOCK_GRAPHICS: 1980, _real.NVML_CLOCK_SM: 1980, _real.NVML_CLOCK_MEM: 2619}


@dataclass
class FakeGpu:
    """One physical GPU. Defaults describe a healthy H100 SXM; change any field in a test.

    Raw NVML units: power in mW, energy in mJ, NVLink counters in KiB, PCIe throughput in KB/s.
    A value of ``None`` makes the matching call raise NotSupported (or the field entry report it).
    """

    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = ""
    pci_bus_id: str = ""
    architecture: int = _real.NVML_DEVICE_ARCH_HOPPER
    cuda_compute_capability: tuple[int, int] = (9, 0)
    sm_count: int | None = 132  # nvmlDeviceGetAttributes (None: NotSupported)
    num_gpu_cores: int | None = 132 * 128  # nvmlDeviceGetNumGpuCores: CUDA cores
    memory_total: int = 80 * GiB
    memory_used: int = 10 * GiB
    memory_reserved: int = 512 * MiB
    util_gpu: int = 50
    util_memory: int = 20
    power_mw: int | None = 350_000
    enforced_power_limit_mw: int | None = 700_000
    power_limit_mw: int | None = 700_000
    power_default_limit_mw: int | None = 700_000
    power_min_limit_mw: int = 200_000
    power_max_limit_mw: int = 700_000
    energy_mj: int | None = 123_456_789
    temperature: int | None = 45
    memory_temperature: int | None = 52
    temp_slowdown: int | None = 87
    temp_shutdown: int | None = 92
    temp_gpu_max: int | None = 85  # NVML_TEMPERATURE_THRESHOLD_GPU_MAX
    temp_memory_max: int | None = 95  # NVML_TEMPERATURE_THRESHOLD_MEM_MAX (HBM3)
    fan_speeds: list[int] = field(default_factory=list)  # empty: fanless (NumFans 0)
    clocks: dict[int, int] = field(default_factory=_default_clocks)
    max_clocks: dict[int, int] = field(default_factory=_default_max_clocks)
    pstate: int = 0
    pcie_gen: int = 4  # trained as far as the host allows
    pcie_width: int = 16
    pcie_max_gen: int | None = 4  # what the GPU and the system (slot) allow together
    gpu_max_pcie_gen: int | None = 5  # what the GPU alone can do
    pcie_max_width: int = 16
    encoder: int = 0
    decoder: int = 0
    throttle_reasons: int = 0
    # Cumulative slowdown durations in ns, by field id: 269 SW thermal, 270 HW thermal, 271 HW
    # power brake (nvml.h NVML_FI_DEV_CLOCKS_EVENT_REASON_*), 75 the perf-policy thermal counter.
    # A test grows them to make a slowdown real; a bit set without growth is the transient NVIDIA
    # documents for HW slowdown ("may be also reported during PState or clock change"). Drivers
    # without them: ``unsupported_fields={269, 270, 271, 75}``.
    slowdown_ns: dict[int, int] = field(default_factory=lambda: {269: 0, 270: 0, 271: 0, 75: 0})
    ecc_mode: int | None = 1
    # (NVML_MEMORY_ERROR_TYPE_*, NVML_VOLATILE_ECC / NVML_AGGREGATE_ECC) -> count
    ecc_errors: dict[tuple[int, int], int] = field(default_factory=dict)
    retired_pages_pending: int | None = 0
    remapped_rows: tuple[int, int, int, int] | None = (0, 0, 0, 0)
    persistence_mode: int = 1
    vbios: str = "96.00.99.00.01"
    serial: str = "1650123456789"
    # nvml.h, nvmlDeviceGetMinorNumber: "The minor number for the device is such that the Nvidia
    # device node file for each GPU will have the form /dev/nvidia[minor number]" (Linux only,
    # all products; NVML_ERROR_NOT_SUPPORTED "if this query is not supported by the device").
    # The driver numbers device nodes in its own probe order, so the minor need not equal the
    # NVML index (PCI bus order). -1: the GPU's index (set by FakeNvml); None: NotSupported.
    minor_number: int | None = -1
    mig_mode: int | None = 0  # None: MIG not supported (pre-Ampere)
    max_mig_devices: int = 7
    migs: list[FakeMig | None] = field(default_factory=list)  # slot i -> slice (None: empty)
    compute_processes: list[FakeProcess] = field(default_factory=list)
    graphics_processes: list[FakeProcess] = field(default_factory=list)
    process_utilization: list[FakeProcUtil] = field(default_factory=list)
    pcie_tx_bytes: int | None = 0  # cumulative counters (field values 197/198)
    pcie_rx_bytes: int | None = 0
    pcie_throughput_kbs: tuple[int, int] = (0, 0)  # (tx, rx) from nvmlDeviceGetPcieThroughput
    nvlink_tx_kib: int | None = 0  # cumulative, all links (field values 138/139)
    nvlink_rx_kib: int | None = 0
    supported_event_types: int = DEFAULT_EVENT_TYPES  # 0: no events on this GPU
    nvlinks: list[FakeLink] = field(default_factory=list)  # empty: no NVLink (NotSupported)
    nvlink_speed_mbps: int | None = None  # field 90 (NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON)
    cpu_affinity: tuple[int, ...] | None = None  # CPU ids close to the GPU
    numa_node: int | None = None
    # How the GPU is attached. nvmlDeviceGetVirtualizationMode: 0 bare metal, 1 passthrough (a
    # real H100 in a VM answered 1: tests/data/real/), 2 a vGPU guest. nvmlDeviceGetBusType: 2 is
    # PCIe. GH200 / GB200 run their host link over NVLink-C2C: nvmlDeviceGetC2cModeInfoV says
    # isC2cEnabled=1, fields 170-172 give the C2C links and their MB/s (nvml.h; hwloc issue #633),
    # and the PCIe queries answer a placeholder Gen1 x1 (see ``grace_hopper``).
    virtualization_mode: int | None = 0
    bus_type: int | None = 2
    c2c_enabled: int | None = 0
    c2c_link_mbps: list[int] = field(default_factory=list)  # one entry per C2C link
    # nvmlDeviceGetGpuFabricInfoV (HGX boards with NVSwitch): nvmlGpuFabricState_t (0 not
    # supported, 1 not started, 2 in progress, 3 completed) and the nvmlReturn_t it finished
    # with; None: the call answers NotSupported (no fabric: PCIe cards, VMs without the fabric,
    # the real H100 VM of tests/data/real/ answered N/A in nvidia-smi).
    fabric_state: int | None = None
    fabric_status: int = 0
    # Knobs for failures.
    unsupported: set[str] = field(default_factory=set)  # function names raising NotSupported
    unsupported_fields: set[int] = field(default_factory=set)  # field ids reported NOT_SUPPORTED
    field_returns: dict[int, int] = field(default_factory=dict)  # field id -> NVML_ERROR_* code
    # Entries the driver leaves as the caller zeroed them (SUCCESS, type double, 0): a real H100
    # on 580.159.04 did this for fields 270 and 271 (tests/data/real/*/nvml_fields_extra.json).
    unfilled_fields: set[int] = field(default_factory=set)
    errors: dict[str, ErrorSpec] = field(default_factory=dict)  # function name -> error raised
    all_unsupported: bool = False  # every optional call raises NotSupported
    lost: bool = False  # flip to make every call on this GPU raise GpuIsLost
    lost_after: int | None = None  # ... or let this many calls succeed first
    fail_with: ErrorSpec | None = None  # every call on this GPU raises it (driver gone ...)
    fail_after: int | None = None  # ... once this many calls have succeeded (None: at once)
    hang: threading.Event | None = None  # while set-able and not set, every call on it blocks
    hang_after: int | None = None  # ... once this many calls have succeeded (None: at once)
    # nvml.h (nvmlDeviceGetCount_v2): "returns count of all devices in the system even if
    # nvmlDeviceGetHandleByIndex_v2 returns NVML_ERROR_NO_PERMISSION for such device" -- a
    # container or cgroup that denies the GPU's /dev/nvidiaN does this.
    no_permission: bool = False
    # Without persistence mode the driver initialises a GPU when a program first opens it, 1-3 s
    # a GPU (NVIDIA's "Driver Persistence" docs; arrayfire #2467 "time of the first execution is
    # proportional to the number of GPUs"): the first call that touches this GPU takes this long
    # when ``persistence_mode`` is 0.
    cold_open_s: float = 0.0
    _opened: bool = False
    index: int = -1  # set by FakeNvml
    call_count: int = 0  # calls that touched this GPU (its handles and MIG handles)

    def check(self, name: str) -> None:
        """Fail the way NVML would for ``name`` on this GPU, or return."""
        self.call_count += 1
        if not self._opened:
            self._opened = True
            if self.cold_open_s and not self.persistence_mode:
                time.sleep(self.cold_open_s)
        if self.lost_after is not None and self.call_count > self.lost_after:
            self.lost = True
        if self.lost:
            raise NVMLError_GpuIsLost()
        if self.hang is not None and (self.hang_after is None or self.call_count > self.hang_after):
            self.hang.wait()  # a driver call that does not return until the test releases it
        if self.fail_with is not None and (
            self.fail_after is None or self.call_count > self.fail_after
        ):
            _raise(self.fail_with)
        if name in self.errors:
            _raise(self.errors[name])
        if name in self.unsupported or (self.all_unsupported and name not in ALWAYS_SUPPORTED):
            raise NVMLError_NotSupported()


class FakeHandle:
    """An opaque device handle; a new object per lookup, as with the real ctypes pointers."""

    __slots__ = ("gpu_index", "mig_slot")

    def __init__(self, gpu_index: int, mig_slot: int | None = None) -> None:
        self.gpu_index = gpu_index
        self.mig_slot = mig_slot

    def __repr__(self) -> str:
        suffix = "" if self.mig_slot is None else f", mig={self.mig_slot}"
        return f"FakeHandle({self.gpu_index}{suffix})"


@dataclass(eq=False)
class FakeEventSet:
    """An ``nvmlEventSet_t``: the GPUs registered on it (index -> event mask) and what waits
    will return, in order: ``("event", gpu_index, type, data)`` or ``("error", spec)``."""

    registered: dict[int, int] = field(default_factory=dict)
    pending: queue.Queue[tuple[Any, ...]] = field(default_factory=queue.Queue)
    freed: bool = False


def _raise(spec: ErrorSpec) -> None:
    raise spec() if isinstance(spec, type) else spec


F = TypeVar("F", bound=Callable[..., Any])


def _api(fn: F) -> F:
    """Wrap a fake NVML call: count and log it, then fail like the real library would."""
    name = fn.__name__

    @functools.wraps(fn)
    def wrapper(self: FakeNvml, *args: Any, **kwargs: Any) -> Any:
        handle = args[0] if args and isinstance(args[0], FakeHandle) else None
        gpu_index = handle.gpu_index if handle is not None else None
        self.calls[name] += 1
        self.log.append((name, gpu_index, args, kwargs))
        if not self.initialized:
            raise NVMLError_Uninitialized()
        if name in self.missing:
            raise NVMLError_FunctionNotFound()
        if name in self.errors:
            _raise(self.errors[name])
        if handle is not None:
            self.gpu_calls[(handle.gpu_index, name)] += 1
            self.gpus[handle.gpu_index].check(name)
        return fn(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


class FakeNvml:
    """Module-like stand-in for ``pynvml``: names and call signatures match the real one."""

    def __init__(
        self,
        gpus: Iterable[FakeGpu] = (),
        *,
        init_error: ErrorSpec | None = None,
        missing: Iterable[str] = (),
        absent: Iterable[str] = (),
        errors: dict[str, ErrorSpec] | None = None,
        driver_version: str = "550.54.15",
        cuda_driver_version: int = 12040,
        nvml_version: str = "12.550.54.15",
        topology_levels: list[list[int]] | None = None,
        p2p_status: dict[tuple[int, int, int], int] | None = None,
        init_hang: threading.Event | None = None,
        process_record_sizes: dict[str, int] | None = None,
        version_mismatch: Iterable[str] = (),
        event_wait_hang: threading.Event | None = None,
    ) -> None:
        self.absent = set(absent)  # names the binding lacks -> AttributeError
        self.init_hang = init_hang  # nvmlInit blocks until the test sets it (a wedged driver)
        self.gpus = list(gpus)
        for i, gpu in enumerate(self.gpus):
            gpu.index = i
            gpu.uuid = gpu.uuid or f"GPU-{i:08d}-fake-uuid"
            gpu.pci_bus_id = gpu.pci_bus_id or f"00000000:{0x18 + i:02X}:00.0"
            if gpu.minor_number == -1:
                gpu.minor_number = i
            for slot, mig in enumerate(gpu.migs):
                if mig is not None and not mig.uuid:
                    mig.uuid = f"MIG-{i:04d}-{slot:04d}-fake"
        self.errors: dict[str, ErrorSpec] = dict(errors or {})
        if init_error is not None:
            self.errors["nvmlInitWithFlags"] = init_error
        self.missing = set(missing)  # C symbols the driver lacks -> FunctionNotFound
        self.driver_version = driver_version
        self.cuda_driver_version = cuda_driver_version
        self.nvml_version = nvml_version
        self.initialized = 0
        self.calls: Counter[str] = Counter()
        self.gpu_calls: Counter[tuple[int, str]] = Counter()
        self.log: list[tuple[str, int | None, tuple[Any, ...], dict[str, Any]]] = []
        self.event_sets: list[FakeEventSet] = []
        self.topology_levels = topology_levels  # [a][b] -> NVML_TOPOLOGY_*; None: all NODE
        self.p2p_status = dict(p2p_status or {})  # (a, b, p2pIndex) -> NVML_P2P_STATUS_*
        # Versioned calls whose struct version this driver does not know (a binding newer than
        # the driver): NVML answers NVML_ERROR_ARGUMENT_VERSION_MISMATCH (nvml.h).
        self.version_mismatch = set(version_mismatch)
        # nvmlEventSetWait blocks on this, whatever its timeout, until the test sets it: a
        # driver stuck in the wait, under which nvmlShutdown would free the set.
        self.event_wait_hang = event_wait_hang
        # Process-list symbol -> the size of the records the driver writes (see "processes").
        self.process_record_sizes = {**R580_RECORD_SIZES, **(process_record_sizes or {})}

    def __getattribute__(self, name: str) -> Any:
        if name != "absent" and not name.startswith("_") and name in self.absent:
            raise AttributeError(f"module 'pynvml' has no attribute {name!r}")
        return super().__getattribute__(name)

    # -- helpers for tests -------------------------------------------------------------------

    def calls_on(self, gpu_index: int, name: str | None = None) -> int:
        """Calls made with a handle of GPU ``gpu_index`` (one function, or all)."""
        return sum(
            n for (i, f), n in self.gpu_calls.items() if i == gpu_index and name in (None, f)
        )

    def args_of(self, name: str, gpu_index: int | None = None) -> list[tuple[Any, ...]]:
        return [a for n, i, a, _ in self.log if n == name and gpu_index in (None, i)]

    def kwargs_of(self, name: str) -> list[dict[str, Any]]:
        return [k for n, _, _, k in self.log if n == name]

    def live_event_sets(self) -> list[FakeEventSet]:
        return [s for s in self.event_sets if not s.freed]

    def emit_event(self, gpu_index: int, event_type: int, data: int = 0) -> int:
        """Queue an event from GPU ``gpu_index`` on every live set registered for ``event_type``
        there (as the driver does); returns how many sets got it."""
        sets = [s for s in self.live_event_sets() if s.registered.get(gpu_index, 0) & event_type]
        for event_set in sets:
            event_set.pending.put(("event", gpu_index, event_type, data))
        return len(sets)

    def emit_wait_error(self, error: ErrorSpec, count: int = 1) -> None:
        """Make the next ``count`` waits on every live set raise ``error`` (right away)."""
        for event_set in self.live_event_sets():
            for _ in range(count):
                event_set.pending.put(("error", error))

    def _dev(self, handle: FakeHandle) -> tuple[FakeGpu, FakeMig | None]:
        gpu = self.gpus[handle.gpu_index]
        mig = None if handle.mig_slot is None else gpu.migs[handle.mig_slot]
        return gpu, mig

    def _parent_only(self, handle: FakeHandle) -> FakeGpu:
        """Queries NVML does not answer on a MIG-enabled parent or on a MIG handle."""
        gpu, mig = self._dev(handle)
        if mig is not None or gpu.mig_mode:
            raise NVMLError_NotSupported()
        return gpu

    # -- lifecycle and system ----------------------------------------------------------------

    def nvmlInit(self) -> None:
        self.calls["nvmlInit"] += 1
        self.nvmlInitWithFlags(0)

    def nvmlInitWithFlags(self, flags: int) -> None:
        self.calls["nvmlInitWithFlags"] += 1
        if self.init_hang is not None:
            self.init_hang.wait()
        if "nvmlInitWithFlags" in self.errors:
            _raise(self.errors["nvmlInitWithFlags"])
        self.initialized += 1

    @_api
    def nvmlShutdown(self) -> None:
        self.initialized -= 1

    @_api
    def nvmlSystemGetDriverVersion(self) -> str:
        return self.driver_version

    @_api
    def nvmlSystemGetNVMLVersion(self) -> str:
        return self.nvml_version

    @_api
    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return self.cuda_driver_version

    @_api
    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return self.cuda_driver_version

    @_api
    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    @_api
    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeHandle:
        if not 0 <= index < len(self.gpus):
            raise NVMLError_InvalidArgument()
        self.gpu_calls[(index, "nvmlDeviceGetHandleByIndex")] += 1
        if self.gpus[index].no_permission:
            raise NVMLError_NoPermission()
        self.gpus[index].check("nvmlDeviceGetHandleByIndex")
        return FakeHandle(index)

    # -- identity and static facts -----------------------------------------------------------

    @_api
    def nvmlDeviceGetName(self, handle: FakeHandle) -> str:
        gpu, mig = self._dev(handle)
        return mig.name if mig else gpu.name

    @_api
    def nvmlDeviceGetUUID(self, handle: FakeHandle) -> str:
        gpu, mig = self._dev(handle)
        return mig.uuid if mig else gpu.uuid

    @_api
    def nvmlDeviceGetIndex(self, handle: FakeHandle) -> int:
        return handle.gpu_index

    @_api
    def nvmlDeviceGetPciInfo_v3(self, handle: FakeHandle) -> Any:
        gpu, _ = self._dev(handle)
        info = _real.nvmlPciInfo_t()
        info.busId = gpu.pci_bus_id
        info.busIdLegacy = gpu.pci_bus_id[4:]
        info.bus = int(gpu.pci_bus_id.split(":")[1], 16)
        return info

    def nvmlDeviceGetPciInfo(self, handle: FakeHandle) -> Any:
        return self.nvmlDeviceGetPciInfo_v3(handle)

    @_api
    def nvmlDeviceGetArchitecture(self, device: FakeHandle) -> int:
        return self._dev(device)[0].architecture

    @_api
    def nvmlDeviceGetCudaComputeCapability(self, handle: FakeHandle) -> tuple[int, int]:
        return self._dev(handle)[0].cuda_compute_capability

    @_api
    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle: FakeHandle) -> int:
        return _value(self._dev(handle)[0].power_default_limit_mw)

    @_api
    def nvmlDeviceGetPowerManagementLimit(self, handle: FakeHandle) -> int:
        return _value(self._dev(handle)[0].power_limit_mw)

    @_api
    def nvmlDeviceGetPowerManagementLimitConstraints(self, handle: FakeHandle) -> list[int]:
        gpu = self._dev(handle)[0]
        return [gpu.power_min_limit_mw, gpu.power_max_limit_mw]

    @_api
    def nvmlDeviceGetMaxClockInfo(self, handle: FakeHandle, type: int) -> int:
        return _value(self._dev(handle)[0].max_clocks.get(type))

    @_api
    def nvmlDeviceGetGpuMaxPcieLinkGeneration(self, handle: FakeHandle) -> int:
        return _value(self._dev(handle)[0].gpu_max_pcie_gen)

    @_api
    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: FakeHandle) -> int:
        return _value(self._dev(handle)[0].pcie_max_gen)

    @_api
    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: FakeHandle) -> int:
        return self._dev(handle)[0].pcie_max_width

    @_api
    def nvmlDeviceGetTemperatureThreshold(self, handle: FakeHandle, threshold: int) -> int:
        gpu = self._dev(handle)[0]
        table = {
            _real.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: gpu.temp_slowdown,
            _real.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN: gpu.temp_shutdown,
            _real.NVML_TEMPERATURE_THRESHOLD_GPU_MAX: gpu.temp_gpu_max,
            _real.NVML_TEMPERATURE_THRESHOLD_MEM_MAX: gpu.temp_memory_max,
        }
        return _value(table.get(threshold))

    @_api
    def nvmlDeviceGetNumGpuCores(self, device: FakeHandle) -> int:
        gpu, mig = self._dev(device)
        if mig is not None:
            raise NVMLError_NotSupported()
        return _value(gpu.num_gpu_cores)

    @_api
    def nvmlDeviceGetNumFans(self, device: FakeHandle) -> int:
        return len(self._dev(device)[0].fan_speeds)

    @_api
    def nvmlDeviceGetEccMode(self, handle: FakeHandle) -> list[int]:
        mode = _value(self._dev(handle)[0].ecc_mode)
        return [mode, mode]

    @_api
    def nvmlDeviceGetPersistenceMode(self, handle: FakeHandle) -> int:
        return self._dev(handle)[0].persistence_mode

    @_api
    def nvmlDeviceGetVbiosVersion(self, handle: FakeHandle) -> str:
        return self._dev(handle)[0].vbios

    @_api
    def nvmlDeviceGetSerial(self, handle: FakeHandle) -> str:
        return self._dev(handle)[0].serial

    @_api
    def nvmlDeviceGetMinorNumber(self, handle: FakeHandle) -> int:
        return _value(self._dev(handle)[0].minor_number)

    @_api
    def nvmlDeviceGetVirtualizationMode(self, handle: FakeHandle) -> int:
        return _value(self._dev(handle)[0].virtualization_mode)

    @_api
    def nvmlDeviceGetBusType(self, device: FakeHandle) -> int:
        return _value(self._dev(device)[0].bus_type)

    @_api
    def nvmlDeviceGetC2cModeInfoV(self, handle: FakeHandle) -> Any:
        return _real.c_nvmlC2cModeInfo_v1_t(isC2cEnabled=_value(self._dev(handle)[0].c2c_enabled))

    @_api
    def nvmlDeviceGetGpuFabricInfoV(self, device: FakeHandle, gpuFabricInfo: Any) -> int:
        info = gpuFabricInfo._obj  # ctypes.byref(c_nvmlGpuFabricInfoV_t())
        if (
            info.version != _real.nvmlGpuFabricInfo_v2
            or "nvmlDeviceGetGpuFabricInfoV" in self.version_mismatch
        ):
            raise _real.NVMLError(_real.NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
        self._fill_fabric(device, info)
        return _real.NVML_SUCCESS

    @_api
    def nvmlDeviceGetGpuFabricInfo(self, device: FakeHandle, gpuFabricInfo: Any) -> int:
        self._fill_fabric(device, gpuFabricInfo._obj)
        return _real.NVML_SUCCESS

    def _fill_fabric(self, device: FakeHandle, info: Any) -> None:
        gpu = self._dev(device)[0]
        info.state = _value(gpu.fabric_state)
        info.status = gpu.fabric_status

    def nvmlErrorString(self, result: int) -> str:
        return ERROR_STRINGS.get(result, "Unknown Error")

    # -- MIG ---------------------------------------------------------------------------------

    @_api
    def nvmlDeviceGetMigMode(self, device: FakeHandle) -> list[int]:
        mode = _value(self._dev(device)[0].mig_mode)
        return [mode, mode]

    @_api
    def nvmlDeviceGetMaxMigDeviceCount(self, device: FakeHandle) -> int:
        gpu = self._dev(device)[0]
        _value(gpu.mig_mode)
        return gpu.max_mig_devices

    @_api
    def nvmlDeviceGetMigDeviceHandleByIndex(self, device: FakeHandle, index: int) -> FakeHandle:
        gpu = self._dev(device)[0]
        if not gpu.mig_mode:
            raise NVMLError_InvalidArgument()
        if not 0 <= index < gpu.max_mig_devices:
            raise NVMLError_InvalidArgument()
        if index >= len(gpu.migs) or gpu.migs[index] is None:
            raise NVMLError_NotFound()
        return FakeHandle(device.gpu_index, index)

    @_api
    def nvmlDeviceIsMigDeviceHandle(self, device: FakeHandle) -> ctypes.c_uint:
        return ctypes.c_uint(int(device.mig_slot is not None))

    @_api
    def nvmlDeviceGetDeviceHandleFromMigDeviceHandle(self, migDevice: FakeHandle) -> FakeHandle:
        if migDevice.mig_slot is None:
            raise NVMLError_InvalidArgument()
        return FakeHandle(migDevice.gpu_index)

    @_api
    def nvmlDeviceGetGpuInstanceId(self, device: FakeHandle) -> int:
        mig = self._dev(device)[1]
        if mig is None:
            raise NVMLError_InvalidArgument()
        return mig.gpu_instance_id

    @_api
    def nvmlDeviceGetComputeInstanceId(self, device: FakeHandle) -> int:
        mig = self._dev(device)[1]
        if mig is None:
            raise NVMLError_InvalidArgument()
        return mig.compute_instance_id

    @_api
    def nvmlDeviceGetAttributes_v2(self, device: FakeHandle) -> Any:
        gpu, mig = self._dev(device)
        attrs = _real.c_nvmlDeviceAttributes()
        if mig is not None:
            attrs.multiprocessorCount = mig.sm_count
            attrs.memorySizeMB = mig.memory_total // MiB
            attrs.gpuInstanceSliceCount = 1
            attrs.computeInstanceSliceCount = 1
        else:
            attrs.multiprocessorCount = _value(gpu.sm_count)
            attrs.memorySizeMB = gpu.memory_total // MiB
        return attrs

    def nvmlDeviceGetAttributes(self, device: FakeHandle) -> Any:
        return self.nvmlDeviceGetAttributes_v2(device)

    # -- per-tick readings -------------------------------------------------------------------

    @_api
    def nvmlDeviceGetMemoryInfo(self, handle: FakeHandle, version: int | None = None) -> Any:
        if version and "nvmlDeviceGetMemoryInfo_v2" in self.missing:
            raise NVMLError_FunctionNotFound()
        gpu, mig = self._dev(handle)
        total, used, reserved = (
            (mig.memory_total, mig.memory_used, mig.memory_reserved)
            if mig
            else (gpu.memory_total, gpu.memory_used, gpu.memory_reserved)
        )
        if not version:
            # v1: "used" includes what the driver reserves.
            return _real.c_nvmlMemory_t(
                total=total, free=total - used - reserved, used=used + reserved
            )
        if version != _real.nvmlMemory_v2 or "nvmlDeviceGetMemoryInfo_v2" in self.version_mismatch:
            raise _real.NVMLError(_real.NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
        return _real.c_nvmlMemory_v2_t(
            version=version, total=total, reserved=reserved, free=total - used - reserved, used=used
        )

    @_api
    def nvmlDeviceGetUtilizationRates(self, handle: FakeHandle) -> Any:
        gpu = self._parent_only(handle)
        return _real.c_nvmlUtilization_t(gpu=gpu.util_gpu, memory=gpu.util_memory)

    @_api
    def nvmlDeviceGetEncoderUtilization(self, handle: FakeHandle) -> list[int]:
        return [self._parent_only(handle).encoder, 167000]

    @_api
    def nvmlDeviceGetDecoderUtilization(self, handle: FakeHandle) -> list[int]:
        return [self._parent_only(handle).decoder, 167000]

    @_api
    def nvmlDeviceGetPowerUsage(self, handle: FakeHandle) -> int:
        return _value(self._dev(handle)[0].power_mw)

    @_api
    def nvmlDeviceGetEnforcedPowerLimit(self, handle: FakeHandle) -> int:
        return _value(self._dev(handle)[0].enforced_power_limit_mw)

    @_api
    def nvmlDeviceGetTotalEnergyConsumption(self, handle: FakeHandle) -> int:
        return _value(self._dev(handle)[0].energy_mj)

    @_api
    def nvmlDeviceGetTemperatureV(
        self, handle: FakeHandle, sensor: int, version: int = _real.nvmlTemperature_v1
    ) -> int:
        if (
            version != _real.nvmlTemperature_v1
            or "nvmlDeviceGetTemperatureV" in self.version_mismatch
        ):
            raise _real.NVMLError(_real.NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
        return self._temperature(handle, sensor)

    @_api
    def nvmlDeviceGetTemperature(self, handle: FakeHandle, sensor: int) -> int:
        return self._temperature(handle, sensor)

    def _temperature(self, handle: FakeHandle, sensor: int) -> int:
        if sensor != _real.NVML_TEMPERATURE_GPU:
            raise NVMLError_InvalidArgument()
        return _value(self._dev(handle)[0].temperature)

    @_api
    def nvmlDeviceGetFanSpeed(self, handle: FakeHandle) -> int:
        fans = self._dev(handle)[0].fan_speeds
        if not fans:
            raise NVMLError_NotSupported()
        return fans[0]

    @_api
    def nvmlDeviceGetFanSpeed_v2(self, handle: FakeHandle, fan: int) -> int:
        fans = self._dev(handle)[0].fan_speeds
        if not 0 <= fan < len(fans):
            raise NVMLError_InvalidArgument()
        return fans[fan]

    @_api
    def nvmlDeviceGetClockInfo(self, handle: FakeHandle, type: int) -> int:
        return _value(self._dev(handle)[0].clocks.get(type))

    @_api
    def nvmlDeviceGetPerformanceState(self, handle: FakeHandle) -> int:
        return self._dev(handle)[0].pstate

    @_api
    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: FakeHandle) -> int:
        return self._dev(handle)[0].pcie_gen

    @_api
    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: FakeHandle) -> int:
        return self._dev(handle)[0].pcie_width

    @_api
    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: FakeHandle) -> int:
        return self._dev(handle)[0].throttle_reasons

    @_api
    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: FakeHandle) -> int:
        return self._dev(handle)[0].throttle_reasons

    @_api
    def nvmlDeviceGetFieldValues(self, handle: FakeHandle, fieldIds: list[Any]) -> Any:
        gpu, _ = self._dev(handle)
        values = (_real.c_nvmlFieldValue_t * len(fieldIds))()
        for i, field_id in enumerate(fieldIds):
            entry = values[i]
            try:
                (entry.fieldId, entry.scopeId) = field_id
            except TypeError:
                entry.fieldId = field_id
            entry.timestamp = 1_700_000_000_000_000
            value_type, value = gpu_field(gpu, entry.fieldId, entry.scopeId)
            # A field that stands for a call follows that call's knobs (unsupported, errors).
            same_as = FIELD_CALLS.get(entry.fieldId)
            if same_as is not None and same_as in gpu.errors:
                spec = gpu.errors[same_as]
                error = spec if isinstance(spec, type) else type(spec)
                entry.nvmlReturn = getattr(error, "value", _real.NVML_ERROR_UNKNOWN)
                continue
            unsupported = gpu.all_unsupported or entry.fieldId in gpu.unsupported_fields
            if same_as is not None and same_as in gpu.unsupported:
                unsupported = True
            if unsupported or value is None:
                entry.nvmlReturn = _real.NVML_ERROR_NOT_SUPPORTED
                continue
            if entry.fieldId in gpu.field_returns:
                entry.nvmlReturn = gpu.field_returns[entry.fieldId]
                continue
            if entry.fieldId in gpu.unfilled_fields:
                continue  # nvmlReturn, valueType and value stay 0
            entry.nvmlReturn = _real.NVML_SUCCESS
            entry.valueType = value_type
            setattr(entry.value, _VALUE_MEMBER[value_type], value)
        return values

    # -- slow tier ---------------------------------------------------------------------------

    @_api
    def nvmlDeviceGetTotalEccErrors(
        self,
        handle: FakeHandle,
        errorType: int,
        counterType: int,
    ) -> int:
        gpu = self._dev(handle)[0]
        if not gpu.ecc_mode:
            raise NVMLError_NotSupported()
        return gpu.ecc_errors.get((errorType, counterType), 0)

    @_api
    def nvmlDeviceGetRetiredPagesPendingStatus(self, device: FakeHandle) -> int:
        return _value(self._dev(device)[0].retired_pages_pending)

    @_api
    def nvmlDeviceGetRemappedRows(self, device: FakeHandle) -> tuple[int, int, int, int]:
        gpu = self._parent_only(device)
        return _value(gpu.remapped_rows)

    @_api
    def nvmlDeviceGetPcieThroughput(self, device: FakeHandle, counter: int) -> int:
        tx, rx = self._dev(device)[0].pcie_throughput_kbs
        return tx if counter == _real.NVML_PCIE_UTIL_TX_BYTES else rx

    # -- NVLink and topology ------------------------------------------------------------------

    def _link(self, device: FakeHandle, link: int) -> FakeLink:
        gpu = self._dev(device)[0]
        if not gpu.nvlinks:
            raise NVMLError_NotSupported()
        if not 0 <= link < len(gpu.nvlinks):
            raise NVMLError_InvalidArgument()
        return gpu.nvlinks[link]

    @_api
    def nvmlDeviceGetNvLinkState(self, device: FakeHandle, link: int) -> int:
        return self._link(device, link).state

    @_api
    def nvmlDeviceGetNvLinkVersion(self, device: FakeHandle, link: int) -> int:
        return _value(self._link(device, link).version)

    @_api
    def nvmlDeviceGetNvLinkRemotePciInfo(self, device: FakeHandle, link: int) -> Any:
        bus_id = _value(self._link(device, link).remote_bus_id)
        info = _real.nvmlPciInfo_t()
        info.busId = bus_id
        info.busIdLegacy = bus_id[4:]
        info.bus = int(bus_id.split(":")[1], 16)
        return info

    @_api
    def nvmlDeviceGetNvLinkRemoteDeviceType(self, handle: FakeHandle, link: int) -> int:
        return _value(self._link(handle, link).remote_type)

    @_api
    def nvmlDeviceGetNvLinkErrorCounter(self, device: FakeHandle, link: int, counter: int) -> int:
        nvlink = self._link(device, link)
        names = {
            _real.NVML_NVLINK_ERROR_DL_REPLAY: "replay_errors",
            _real.NVML_NVLINK_ERROR_DL_RECOVERY: "recovery_errors",
            _real.NVML_NVLINK_ERROR_DL_CRC_FLIT: "crc_flit_errors",
            _real.NVML_NVLINK_ERROR_DL_CRC_DATA: "crc_data_errors",
        }
        if counter not in names:
            raise NVMLError_InvalidArgument()
        return _value(getattr(nvlink, names[counter]))

    @_api
    def nvmlDeviceGetTopologyCommonAncestor(self, device1: FakeHandle, device2: FakeHandle) -> int:
        self.gpus[device2.gpu_index].check("nvmlDeviceGetTopologyCommonAncestor")
        if self.topology_levels is None:
            return _real.NVML_TOPOLOGY_NODE
        return self.topology_levels[device1.gpu_index][device2.gpu_index]

    @_api
    def nvmlDeviceGetP2PStatus(
        self, device1: FakeHandle, device2: FakeHandle, p2pIndex: int
    ) -> int:
        if not isinstance(p2pIndex, int):  # ctypes cannot pass the binding's tuple READ index
            raise ctypes.ArgumentError(f"argument 3: invalid P2P index {p2pIndex!r}")
        self.gpus[device2.gpu_index].check("nvmlDeviceGetP2PStatus")
        a, b = device1.gpu_index, device2.gpu_index
        status = self.p2p_status.get((a, b, p2pIndex), self.p2p_status.get((b, a, p2pIndex)))
        return _real.NVML_P2P_STATUS_OK if status is None else status

    @_api
    def nvmlDeviceGetCpuAffinity(self, handle: FakeHandle, cpuSetSize: int) -> Any:
        cpus = _value(self._dev(handle)[0].cpu_affinity)
        words = (ctypes.c_ulonglong * cpuSetSize)()
        for cpu in cpus:
            if cpu < 64 * cpuSetSize:  # the driver fills only what fits
                words[cpu // 64] |= 1 << (cpu % 64)
        return words

    @_api
    def nvmlDeviceGetNumaNodeId(self, handle: FakeHandle) -> int:
        return _value(self._dev(handle)[0].numa_node)

    # -- events ------------------------------------------------------------------------------

    @_api
    def nvmlEventSetCreate(self) -> FakeEventSet:
        event_set = FakeEventSet()
        self.event_sets.append(event_set)
        return event_set

    @_api
    def nvmlDeviceGetSupportedEventTypes(self, handle: FakeHandle) -> int:
        gpu, mig = self._dev(handle)
        if mig is not None:
            raise NVMLError_NotSupported()  # per-instance events are not supported
        return gpu.supported_event_types

    @_api
    def nvmlDeviceRegisterEvents(
        self, handle: FakeHandle, eventTypes: int, eventSet: FakeEventSet
    ) -> None:
        gpu, mig = self._dev(handle)
        if eventSet.freed:
            raise NVMLError_InvalidArgument()
        if mig is not None or not eventTypes or eventTypes & ~gpu.supported_event_types:
            raise NVMLError_NotSupported()
        eventSet.registered[gpu.index] = eventSet.registered.get(gpu.index, 0) | eventTypes

    @_api
    def nvmlEventSetWait(self, eventSet: FakeEventSet, timeoutms: int) -> Any:
        if eventSet.freed:
            raise NVMLError_InvalidArgument()
        if self.event_wait_hang is not None and not self.event_wait_hang.is_set():
            self.event_wait_hang.wait()
        try:
            item = eventSet.pending.get(timeout=max(timeoutms, 0) / 1000)
        except queue.Empty:
            raise NVMLError_Timeout() from None
        if item[0] == "error":
            _raise(item[1])
        _, gpu_index, event_type, data = item
        # The real call returns a c_nvmlEventData_t; its ``device`` cannot hold a FakeHandle.
        return types.SimpleNamespace(
            device=FakeHandle(gpu_index),
            eventType=event_type,
            eventData=data,
            gpuInstanceId=UINT_MAX,
            computeInstanceId=UINT_MAX,
        )

    @_api
    def nvmlEventSetFree(self, eventSet: FakeEventSet) -> None:
        if eventSet.freed:
            raise NVMLError_InvalidArgument()
        eventSet.freed = True

    # -- processes ---------------------------------------------------------------------------
    #
    # The process calls are modelled at the C level, as the driver fills the caller's buffer: each
    # symbol writes records of the size in ``process_record_sizes`` (R580 on a real H100, kept in
    # tests/data/real/: ``_v3`` and ``_v2`` write 24 bytes, the unversioned symbol 16; drivers
    # 535.43-535.86 wrote 32-byte ``_v3`` records: see ``driver_535_early``). The binding-level
    # functions below then decode the buffer the way nvidia-ml-py does, at its own 24-byte
    # ``c_nvmlProcessInfo_v2_t``, garbling the list where the sizes differ, as on those drivers.

    def _nvmlGetFunctionPointer(self, name: str) -> Callable[..., int]:
        """The binding's C-symbol lookup: FunctionNotFound for a symbol the driver lacks."""
        if not self.initialized:
            raise NVMLError_Uninitialized()
        if name in self.missing or name not in PROCESS_SYMBOLS:
            raise NVMLError_FunctionNotFound()
        return functools.partial(self._c_process_list, name)

    def _c_process_list(self, symbol: str, handle: FakeHandle, count_ref: Any, buffer: Any) -> int:
        """``nvmlReturn_t nvmlDeviceGet*RunningProcesses*(device, *infoCount, *infos)``."""
        self.calls[symbol] += 1
        self.log.append((symbol, handle.gpu_index, (handle,), {}))
        self.gpu_calls[(handle.gpu_index, symbol)] += 1
        count = count_ref._obj  # ctypes.byref(c_uint)
        try:
            if symbol in self.errors:
                _raise(self.errors[symbol])
            self.gpus[handle.gpu_index].check(symbol)
        except NVMLError as exc:
            return int(exc.value)
        gpu, mig = self._dev(handle)
        owner = mig if mig is not None else gpu
        kind = "graphics" if "Graphics" in symbol else "compute"
        rows: list[FakeProcess] = getattr(owner, f"{kind}_processes")
        if buffer is None or count.value < len(rows):
            count.value = len(rows)
            return _real.NVML_ERROR_INSUFFICIENT_SIZE if rows else _real.NVML_SUCCESS
        data = b"".join(process_record(p, self.process_record_sizes.get(symbol, 24)) for p in rows)
        ctypes.memmove(ctypes.addressof(buffer), data, min(len(data), ctypes.sizeof(buffer)))
        count.value = len(rows)
        return _real.NVML_SUCCESS

    def _binding_process_list(self, symbol: str, handle: FakeHandle) -> list[Any]:
        """What nvidia-ml-py's process wrappers do: ask the size, then read the buffer as an
        array of its 24-byte ``c_nvmlProcessInfo_v2_t``."""
        fn = self._nvmlGetFunctionPointer(symbol)
        count = ctypes.c_uint(0)
        ret = fn(handle, ctypes.byref(count), None)
        if ret == _real.NVML_SUCCESS:
            return []
        if ret != _real.NVML_ERROR_INSUFFICIENT_SIZE:
            raise NVMLError(ret)
        count.value = count.value * 2 + 5
        array = (_real.c_nvmlProcessInfo_v2_t * count.value)()
        ret = fn(handle, ctypes.byref(count), array)
        if ret != _real.NVML_SUCCESS:
            raise NVMLError(ret)
        not_available = _real.NVML_VALUE_NOT_AVAILABLE_ulonglong.value
        out = []
        for i in range(count.value):
            obj = _real.nvmlStructToFriendlyObject(array[i])
            if obj.usedGpuMemory == not_available:
                obj.usedGpuMemory = None
            out.append(obj)
        return out

    def nvmlDeviceGetComputeRunningProcesses_v3(self, handle: FakeHandle) -> list[Any]:
        return self._binding_process_list("nvmlDeviceGetComputeRunningProcesses_v3", handle)

    def nvmlDeviceGetComputeRunningProcesses_v2(self, handle: FakeHandle) -> list[Any]:
        return self._binding_process_list("nvmlDeviceGetComputeRunningProcesses_v2", handle)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: FakeHandle) -> list[Any]:
        return _versioned(self.nvmlDeviceGetComputeRunningProcesses_v3, handle)

    def nvmlDeviceGetGraphicsRunningProcesses_v3(self, handle: FakeHandle) -> list[Any]:
        return self._binding_process_list("nvmlDeviceGetGraphicsRunningProcesses_v3", handle)

    def nvmlDeviceGetGraphicsRunningProcesses_v2(self, handle: FakeHandle) -> list[Any]:
        return self._binding_process_list("nvmlDeviceGetGraphicsRunningProcesses_v2", handle)

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: FakeHandle) -> list[Any]:
        return _versioned(self.nvmlDeviceGetGraphicsRunningProcesses_v3, handle)

    def _util_samples(self, handle: FakeHandle, last_seen: int) -> list[FakeProcUtil]:
        gpu = self._parent_only(handle)
        samples = [s for s in gpu.process_utilization if s.timestamp_us > last_seen]
        if not samples:
            raise NVMLError_NotFound()  # "no samples newer than lastSeenTimeStamp"
        return samples

    @_api
    def nvmlDeviceGetProcessUtilization(self, handle: FakeHandle, timeStamp: int) -> list[Any]:
        return [
            _real.c_nvmlProcessUtilizationSample_t(
                pid=s.pid,
                timeStamp=s.timestamp_us,
                smUtil=s.sm,
                memUtil=s.mem,
                encUtil=s.enc,
                decUtil=s.dec,
            )
            for s in self._util_samples(handle, timeStamp)
        ]

    @_api
    def nvmlDeviceGetProcessesUtilizationInfo(
        self, handle: FakeHandle, timeStamp: int
    ) -> list[Any]:
        return [
            _real.c_nvmlProcessUtilizationInfo_v1_t(
                timeStamp=s.timestamp_us,
                pid=s.pid,
                smUtil=s.sm,
                memUtil=s.mem,
                encUtil=s.enc,
                decUtil=s.dec,
            )
            for s in self._util_samples(handle, timeStamp)
        ]


_VALUE_MEMBER = {
    0: "dVal",
    1: "uiVal",
    2: "ulVal",
    3: "ullVal",
    4: "sllVal",
    5: "siVal",
    6: "usVal",
}


FIELD_CALLS: dict[int, str] = {
    _real.NVML_FI_DEV_POWER_AVERAGE: "nvmlDeviceGetPowerUsage",
    _real.NVML_FI_DEV_POWER_CURRENT_LIMIT: "nvmlDeviceGetEnforcedPowerLimit",
    _real.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION: "nvmlDeviceGetTotalEnergyConsumption",
    _real.NVML_FI_DEV_ECC_SBE_VOL_TOTAL: "nvmlDeviceGetTotalEccErrors",
    _real.NVML_FI_DEV_ECC_DBE_VOL_TOTAL: "nvmlDeviceGetTotalEccErrors",
    _real.NVML_FI_DEV_ECC_SBE_AGG_TOTAL: "nvmlDeviceGetTotalEccErrors",
    _real.NVML_FI_DEV_ECC_DBE_AGG_TOTAL: "nvmlDeviceGetTotalEccErrors",
    _real.NVML_FI_DEV_RETIRED_PENDING: "nvmlDeviceGetRetiredPagesPendingStatus",
    _real.NVML_FI_DEV_REMAPPED_COR: "nvmlDeviceGetRemappedRows",
    _real.NVML_FI_DEV_REMAPPED_UNC: "nvmlDeviceGetRemappedRows",
    _real.NVML_FI_DEV_REMAPPED_PENDING: "nvmlDeviceGetRemappedRows",
    _real.NVML_FI_DEV_REMAPPED_FAILURE: "nvmlDeviceGetRemappedRows",
    _real.NVML_FI_DEV_NVLINK_GET_STATE: "nvmlDeviceGetNvLinkState",
    _real.NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL: "nvmlDeviceGetNvLinkErrorCounter",
    _real.NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL: "nvmlDeviceGetNvLinkErrorCounter",
    _real.NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL: "nvmlDeviceGetNvLinkErrorCounter",
    _real.NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL: "nvmlDeviceGetNvLinkErrorCounter",
}
"""Fields that carry what a call also answers: a test's ``unsupported`` / ``errors`` knob on the
call applies to the field too, as both come from the same hardware counter."""


PROCESS_SYMBOLS = frozenset(
    f"nvmlDeviceGet{kind}RunningProcesses{suffix}"
    for kind in ("Compute", "Graphics")
    for suffix in ("", "_v2", "_v3")
)
R580_RECORD_SIZES: dict[str, int] = {
    # Measured on a real H100 with driver 580.159.04 (tests/data/real/*/nvml_raw_procs.json):
    # _v3 and _v2 write 24-byte records, the unversioned symbol the 16-byte v1 record.
    **{name: 24 for name in PROCESS_SYMBOLS if name.endswith(("_v2", "_v3"))},
    **{name: 16 for name in PROCESS_SYMBOLS if name.endswith("Processes")},
}


def driver_r470() -> dict[str, Any]:
    """Knobs for an R470 driver (still on many long-lived clusters): the entry points and field
    values NVML added after it answer FUNCTION_NOT_FOUND / NOT_SUPPORTED (NVML's change log:
    memory _v2 and the _v3 process calls came with R510, the GPU's own PCIe maximum and the core
    count with R510-R520, clock-event reasons with R535, TemperatureV with R545, fabric and C2C
    queries later; the power, PCIe-byte and slowdown-duration fields are newer still)."""
    return {
        "missing": {
            "nvmlDeviceGetMemoryInfo_v2",
            "nvmlDeviceGetTemperatureV",
            "nvmlDeviceGetCurrentClocksEventReasons",
            "nvmlDeviceGetGpuMaxPcieLinkGeneration",
            "nvmlDeviceGetNumGpuCores",
            "nvmlDeviceGetProcessesUtilizationInfo",
            "nvmlDeviceGetGpuFabricInfoV",
            "nvmlDeviceGetGpuFabricInfo",
            "nvmlDeviceGetC2cModeInfoV",
            *(name for name in PROCESS_SYMBOLS if name.endswith("_v3")),
        },
        "driver_version": "470.239.06",
        "cuda_driver_version": 11040,
        "nvml_version": "11.470.239.06",
    }


R470_MISSING_FIELDS = frozenset({185, 190, 197, 198, 269, 270, 271, 165})
"""Field values an R470 driver does not have: average / limit power, PCIe byte counters,
slowdown durations, the per-link NVLink state (put on ``FakeGpu.unsupported_fields``)."""


def driver_535_early() -> dict[str, Any]:
    """Knobs for drivers 535.43-535.86, whose ``_v3`` writes 32-byte records
    (``usedGpuCcProtectedMemory`` appended after the instance ids) while nvidia-ml-py reads 24
    (nvitop PRs #79, #89, #94; gpustat #161 "reports only the first program on driver 535")."""
    return {
        "process_record_sizes": {name: 32 for name in PROCESS_SYMBOLS if name.endswith("_v3")},
        "driver_version": "535.54.03",
    }


def driver_535_98() -> dict[str, Any]:
    """535.98 dropped the ``_v3`` symbols (535.104 re-added them at 24 bytes: nvitop PR #94)."""
    return {
        "missing": {name for name in PROCESS_SYMBOLS if name.endswith("_v3")},
        "driver_version": "535.98",
    }


def seen_from_another_pid_namespace(gpu: FakeGpu) -> FakeGpu:
    """``gpu`` as a caller in a PID namespace of its own sees it (a container, a pod): the
    driver lists none of the host's processes (not even under their host PIDs), while the
    memory they hold still counts as used. Evidence: a real H100 on R580, under
    ``unshare --pid --fork --mount-proc``, listed no process beside 4.86 GiB used
    (tests/data/real/h100-sxm5-580.159.04/run3/snap_pidns.json); nvidia-docker #179 reports the
    same for containers."""
    return dataclasses.replace(gpu, compute_processes=[], graphics_processes=[])


def process_record(process: FakeProcess, size: int) -> bytes:
    """One process row as a driver writing ``size``-byte records lays it out (nvml.h:
    nvmlProcessInfo_v1_t is 16 bytes, _v2_t 24; R535.43-86's _v3 appended a u64 to make 32)."""
    memory = (
        _real.NVML_VALUE_NOT_AVAILABLE_ulonglong.value
        if process.used_gpu_memory is None
        else process.used_gpu_memory
    )
    if size == 16:
        return struct.pack("<I4xQ", process.pid, memory)
    row = struct.pack(
        "<I4xQII", process.pid, memory, process.gpu_instance_id, process.compute_instance_id
    )
    return row + struct.pack("<Q", 0) if size == 32 else row


ERROR_STRINGS = {
    _real.NVML_SUCCESS: "Success",
    _real.NVML_ERROR_NOT_READY: "Not Ready",
    _real.NVML_ERROR_UNKNOWN: "Unknown Error",
    _real.NVML_ERROR_INSUFFICIENT_RESOURCES: "Insufficient Resources",
}
"""What nvmlErrorString answers for the codes the tests use."""


def grace_hopper(**changes: Any) -> FakeGpu:
    """A GH200's GPU: host link over NVLink-C2C (10 links of 45 GB/s: 450 GB/s each way, half
    of the 900 GB/s NVIDIA quotes for both directions), PCIe queries answering Gen1 x1."""
    values: dict[str, Any] = {
        "name": "NVIDIA GH200 480GB",
        "memory_total": 96 * GiB,
        "c2c_enabled": 1,
        "c2c_link_mbps": [45_000] * 10,
        "pcie_gen": 1,
        "pcie_width": 1,
        "pcie_max_gen": 1,
        "gpu_max_pcie_gen": 1,
        "pcie_max_width": 1,
        "power_default_limit_mw": 900_000,
        "power_limit_mw": 900_000,
        "enforced_power_limit_mw": 900_000,
        "power_max_limit_mw": 900_000,
    }
    values.update(changes)
    return FakeGpu(**values)


def _ecc_field(gpu: FakeGpu, uncorrected: bool, aggregate: bool) -> int | None:
    if not gpu.ecc_mode:
        return None
    kind = (
        _real.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
        if uncorrected
        else (_real.NVML_MEMORY_ERROR_TYPE_CORRECTED)
    )
    counter = _real.NVML_AGGREGATE_ECC if aggregate else _real.NVML_VOLATILE_ECC
    return gpu.ecc_errors.get((kind, counter), 0)


def _link_total(gpu: FakeGpu, attribute: str) -> int | None:
    if not gpu.nvlinks:
        return None
    values = [getattr(link, attribute) for link in gpu.nvlinks]
    return None if any(v is None for v in values) else sum(values)


def gpu_field(gpu: FakeGpu, field_id: int, scope: int = 0) -> tuple[int, Any]:
    """(valueType, value) of a field on ``gpu``; value None means NOT_SUPPORTED."""
    ull = _real.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
    uint = _real.NVML_VALUE_TYPE_UNSIGNED_INT
    if field_id == _real.NVML_FI_DEV_C2C_LINK_COUNT:
        return uint, len(gpu.c2c_link_mbps) if gpu.c2c_link_mbps else None
    if field_id in (_real.NVML_FI_DEV_C2C_LINK_GET_STATUS, _real.NVML_FI_DEV_C2C_LINK_GET_MAX_BW):
        if scope >= len(gpu.c2c_link_mbps):
            return uint, None
        status = field_id == _real.NVML_FI_DEV_C2C_LINK_GET_STATUS
        return uint, 1 if status else gpu.c2c_link_mbps[scope]
    if field_id == _real.NVML_FI_DEV_NVLINK_GET_STATE:
        # scopeId = link id; a link past the list (or no NVLink): not supported.
        nvlink = gpu.nvlinks[scope] if gpu.nvlinks and scope < len(gpu.nvlinks) else None
        return uint, nvlink.state if nvlink is not None else None
    remap = gpu.remapped_rows if not gpu.mig_mode else None  # NVML: not with MIG instances on
    per_link = {
        _real.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX: "tx_kib",
        _real.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX: "rx_kib",
    }
    if field_id in per_link and gpu.nvlinks and scope != UINT_MAX:
        # scopeId = link id: that link's counter (a link past the list: not supported).
        nvlink = gpu.nvlinks[scope] if scope < len(gpu.nvlinks) else None
        return ull, getattr(nvlink, per_link[field_id]) if nvlink is not None else None
    table: dict[int, tuple[int, Any]] = {
        _real.NVML_FI_DEV_MEMORY_TEMP: (_real.NVML_VALUE_TYPE_UNSIGNED_INT, gpu.memory_temperature),
        _real.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION: (ull, gpu.energy_mj),
        _real.NVML_FI_DEV_PCIE_COUNT_TX_BYTES: (ull, gpu.pcie_tx_bytes),
        _real.NVML_FI_DEV_PCIE_COUNT_RX_BYTES: (ull, gpu.pcie_rx_bytes),
        # The all-links sum (scopeId UINT_MAX; any scope on a GPU without ``nvlinks``).
        _real.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX: (ull, gpu.nvlink_tx_kib),
        _real.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX: (ull, gpu.nvlink_rx_kib),
        _real.NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON: (
            _real.NVML_VALUE_TYPE_UNSIGNED_INT,
            gpu.nvlink_speed_mbps,
        ),
        # Power in mW (scopeId 0: the GPU), as the calls answer it.
        _real.NVML_FI_DEV_POWER_AVERAGE: (uint, gpu.power_mw),
        _real.NVML_FI_DEV_POWER_CURRENT_LIMIT: (uint, gpu.enforced_power_limit_mw),
        _real.NVML_FI_DEV_ECC_SBE_VOL_TOTAL: (ull, _ecc_field(gpu, False, False)),
        _real.NVML_FI_DEV_ECC_DBE_VOL_TOTAL: (ull, _ecc_field(gpu, True, False)),
        _real.NVML_FI_DEV_ECC_SBE_AGG_TOTAL: (ull, _ecc_field(gpu, False, True)),
        _real.NVML_FI_DEV_ECC_DBE_AGG_TOTAL: (ull, _ecc_field(gpu, True, True)),
        _real.NVML_FI_DEV_RETIRED_PENDING: (uint, gpu.retired_pages_pending),
        _real.NVML_FI_DEV_REMAPPED_COR: (uint, remap[0] if remap else None),
        _real.NVML_FI_DEV_REMAPPED_UNC: (uint, remap[1] if remap else None),
        _real.NVML_FI_DEV_REMAPPED_PENDING: (uint, remap[2] if remap else None),
        _real.NVML_FI_DEV_REMAPPED_FAILURE: (uint, remap[3] if remap else None),
        _real.NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL: (
            ull,
            _link_total(gpu, "crc_flit_errors"),
        ),
        _real.NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL: (
            ull,
            _link_total(gpu, "crc_data_errors"),
        ),
        _real.NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL: (ull, _link_total(gpu, "replay_errors")),
        _real.NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL: (
            ull,
            _link_total(gpu, "recovery_errors"),
        ),
    }
    if field_id in gpu.slowdown_ns:
        return ull, gpu.slowdown_ns[field_id]
    return table.get(field_id, (ull, None))


def _value(value: Any) -> Any:
    """A None attribute on the fake means the hardware does not support the query."""
    if value is None:
        raise NVMLError_NotSupported()
    return value


def _versioned(fn: Callable[[FakeHandle], list[Any]], handle: FakeHandle) -> list[Any]:
    """What nvidia-ml-py's ``throwOnVersionMismatch`` does for the unversioned process calls."""
    try:
        return fn(handle)
    except NVMLError_FunctionNotFound:
        raise NVMLLibraryMismatchError(
            "Unversioned function called and the pyNVML version does not match the NVML lib "
            "version."
        ) from None


def _copy_real_names() -> None:
    """Give FakeNvml the real module's constants, structs and error classes (not its calls)."""
    keep_functions = {"nvmlExceptionClass", "nvmlStructToFriendlyObject"}
    for name, value in vars(_real).items():
        if name.startswith("_") or isinstance(value, types.ModuleType) or hasattr(FakeNvml, name):
            continue
        if isinstance(value, types.FunctionType) and name not in keep_functions:
            continue
        setattr(
            FakeNvml,
            name,
            staticmethod(value) if callable(value) and name in keep_functions else value,
        )


_copy_real_names()


def make_fake_nvml(gpus: Iterable[FakeGpu] | int = 1, **kwargs: Any) -> FakeNvml:
    """A fake ``pynvml``: ``gpus`` is a list of FakeGpu or a count of default H100s.

    Keyword knobs: ``init_error`` (e.g. ``NVMLError_LibraryNotFound``), ``missing`` (C symbols that
    raise FunctionNotFound, e.g. ``{"nvmlDeviceGetTemperatureV", "nvmlDeviceGetMemoryInfo_v2"}``),
    ``absent`` (names the binding does not have), ``errors`` (function -> error, any GPU),
    ``driver_version``, ``cuda_driver_version``, ``nvml_version``. Events: see the module
    docstring (``emit_event``, ``emit_wait_error``, ``FakeGpu.supported_event_types``).
    """
    if isinstance(gpus, int):
        gpus = [FakeGpu() for _ in range(gpus)]
    return FakeNvml(gpus, **kwargs)
