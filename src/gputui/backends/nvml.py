"""NVIDIA backend: nvidia-ml-py (``import pynvml``) turned into :mod:`gputui.model` objects.

``open`` initialises NVML, caches one handle per GPU (and per MIG slice) and reads the static facts,
the topology among them (PCIe common ancestors, P2P read/write, NVLink links and their peers, CPU
affinity and NUMA node: NVLink discovery is slow on some systems, so it is done once, here);
``read_gpus`` reads the fast tier on every call and the slow tier (ECC, remapped rows, PCIe and
NVLink rates, per-link state, traffic and error counters) when asked; ``read_processes`` lists GPU
processes with their SM %.

Every per-device call goes through :meth:`NvmlBackend._query`: an answer of "not supported" (or
a symbol the driver or binding lacks) becomes ``None`` and is remembered per GPU, so that call is
never made again; ``GpuIsLost`` marks that GPU lost and the other GPUs carry on.

Driver events (XID critical errors, double-bit ECC errors) arrive on one daemon thread that waits
on an NVML event set (:class:`_EventWatcher`) and queues :class:`~gputui.model.GpuEvent` objects;
``read_events`` drains that queue without blocking and ``close`` stops the thread before freeing
the set and shutting NVML down. A driver or binding without the event API means no thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import queue
import socket
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from gputui.backends.base import Backend, BackendUnavailable
from gputui.model import (
    GpuEvent,
    GpuInfo,
    GpuLocality,
    GpuPath,
    GpuSample,
    LinkInfo,
    LinkSample,
    MigDeviceInfo,
    MigSample,
    NodeInfo,
    ProcessSample,
    ProcessType,
    Topology,
)

log = logging.getLogger(__name__)

LOST_MESSAGE = "GPU is lost (fell off the bus)"
KIB = 1024
MIB = 1024 * 1024
MAX_PID = 4_194_304  # Linux PID_MAX_LIMIT: anything above is a garbled process row
ALL_LINKS = 0xFFFFFFFF  # field-value scopeId meaning "sum over every NVLink"

# Field ids (ABI-stable numbers from nvml.h; named here so importing this module needs no pynvml).
FI_MEMORY_TEMP = 82
FI_TOTAL_ENERGY = 83  # mJ
FI_NVLINK_SPEED_COMMON = 90  # common speed of the active links, in MB/s (26562 on H100)
FI_NVLINK_DATA_TX = 138  # cumulative KiB
FI_NVLINK_DATA_RX = 139
FI_PCIE_TX_BYTES = 197  # cumulative bytes
FI_PCIE_RX_BYTES = 198

_FAST_FIELDS = ((FI_TOTAL_ENERGY, 0), (FI_MEMORY_TEMP, 0))
_SLOW_FIELDS = (
    (FI_PCIE_TX_BYTES, 0),
    (FI_PCIE_RX_BYTES, 0),
    (FI_NVLINK_DATA_TX, ALL_LINKS),
    (FI_NVLINK_DATA_RX, ALL_LINKS),
)
_PER_LINK_FIELDS = frozenset({FI_NVLINK_DATA_TX, FI_NVLINK_DATA_RX})  # scopeId: link id or ALL
# The field call goes by (field id, scopeId); the scope of the per-link throughput is the link id.
FieldKey = tuple[int, int]
_VALUE_MEMBERS = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")
_RET_SUCCESS = 0
_RET_GPU_IS_LOST = 15
# INVALID_ARGUMENT, NOT_SUPPORTED, NO_PERMISSION, FUNCTION_NOT_FOUND: this field never answers.
_RET_UNSUPPORTED = frozenset({2, 3, 4, 13})

# NVLink and topology (ABI-stable numbers from nvml.h).
NVLINK_MAX_LINKS = 18  # used only when the binding lacks NVML_NVLINK_MAX_LINKS (36 in newer ones)
NVLINK_ERROR_DL_REPLAY = 0
NVLINK_ERROR_DL_RECOVERY = 1
NVLINK_ERROR_DL_CRC_FLIT = 2
NVLINK_ERROR_DL_CRC_DATA = 3
# nvmlNvLinkDeviceType_t: 0 GPU, 1 IBM NPU (the CPU side of a POWER9 link), 2 NVSwitch.
NVLINK_REMOTE_TYPES = {0: "gpu", 1: "cpu", 2: "switch"}
# nvmlGpuP2PCapsIndex_t. The binding's NVML_P2P_CAPS_INDEX_READ is the tuple ``(0,)`` (a trailing
# comma in nvidia-ml-py), so the plain numbers are used.
P2P_CAPS_INDEX_READ = 0
P2P_CAPS_INDEX_WRITE = 1
P2P_STATUS_OK = 0
# nvmlGpuTopologyLevel_t -> the code ``nvidia-smi topo -m`` prints. INTERNAL (two GPUs on one
# board, behind its own PCIe switch) is shown as the one-switch case.
TOPOLOGY_LEVELS = {0: "PIX", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
AFFINITY_WORD_BITS = 64  # nvmlDeviceGetCpuAffinity fills an array of unsigned long (64-bit Linux)

_ARCHITECTURES = {
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

# Clock-event (throttle) bits. 0x200 and 0x400 exist only in the deprecated "Throttle" family of
# constants, so they are decoded by value.
THROTTLE_BITS: tuple[tuple[int, str], ...] = (
    (0x001, "gpu_idle"),
    (0x002, "applications_clocks"),
    (0x004, "sw_power_cap"),
    (0x008, "hw_slowdown"),
    (0x010, "sync_boost"),
    (0x020, "sw_thermal"),
    (0x040, "hw_thermal"),
    (0x080, "hw_power_brake"),
    (0x100, "display_clocks"),
    (0x200, "board_limit"),
    (0x400, "reliability"),
)

_COMPUTE_CALLS = (
    "nvmlDeviceGetComputeRunningProcesses_v3",
    "nvmlDeviceGetComputeRunningProcesses_v2",
    "nvmlDeviceGetComputeRunningProcesses",
)
_GRAPHICS_CALLS = (
    "nvmlDeviceGetGraphicsRunningProcesses_v3",
    "nvmlDeviceGetGraphicsRunningProcesses_v2",
    "nvmlDeviceGetGraphicsRunningProcesses",
)
_PROCESS_UTIL_CALLS = ("nvmlDeviceGetProcessesUtilizationInfo", "nvmlDeviceGetProcessUtilization")

# nvmlEventType* bits (ABI-stable, from nvml.h) and the GpuEvent kind each becomes.
EVENT_SINGLE_BIT_ECC = 0x1
EVENT_DOUBLE_BIT_ECC = 0x2
EVENT_XID = 0x8
EVENT_KINDS: dict[int, str] = {
    EVENT_XID: "xid",
    EVENT_DOUBLE_BIT_ECC: "ecc_double_bit",
    EVENT_SINGLE_BIT_ECC: "ecc_single_bit",
}
WATCHED_EVENTS = EVENT_XID | EVENT_DOUBLE_BIT_ECC
"""The events registered on every GPU (masked with what each GPU supports)."""


def decode_throttle_reasons(mask: int) -> frozenset[str]:
    """NVML clock-event bitmask -> canonical names from :data:`gputui.model.THROTTLE_REASONS`."""
    return frozenset(name for bit, name in THROTTLE_BITS if mask & bit)


class _GpuLost(Exception):
    """Raised inside the backend when a call says the GPU is lost."""


@dataclass
class _Mig:
    handle: Any
    info: MigDeviceInfo
    key: str  # prefix for this slice's entries in the unsupported set


@dataclass
class _Gpu:
    """Per-GPU state: the cached handle, what it cannot answer, counter baselines."""

    index: int
    handle: Any = None
    info: GpuInfo | None = None
    lost: bool = False
    error: str | None = None
    unsupported: set[str] = field(default_factory=set)
    migs: list[_Mig] = field(default_factory=list)
    counters: dict[str, tuple[int, float]] = field(default_factory=dict)
    util_seen_us: dict[str, int] = field(default_factory=dict)
    nvlinks: tuple[int, ...] = ()  # link ids found at open; read again in every slow tier


@dataclass(frozen=True)
class _Memory:
    total: int
    used: int
    free: int
    reserved: int | None  # None with the v1 call, whose "used" includes the reserved part


class NvmlBackend(Backend):
    """The NVML adapter. ``nvml`` injects a pynvml-like module (tests); by default ``open``
    imports nvidia-ml-py lazily."""

    name = "NVML"

    #: How long (ms) the event thread blocks in one ``nvmlEventSetWait``; ``close`` waits about
    #: this long for the thread to notice its stop flag.
    event_wait_ms: int = 500

    def __init__(self, nvml: ModuleType | Any | None = None) -> None:
        self._injected = nvml
        self._nvml: Any = None
        self._initialized = False
        self._gpus: list[_Gpu] = []
        self._unsupported_errors: tuple[type[BaseException], ...] = ()
        self._lost_errors: tuple[type[BaseException], ...] = ()
        self._events: _EventWatcher | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def open(self) -> NodeInfo:
        nvml = self._nvml = self._load()
        self._unsupported_errors = (
            *_classes(
                nvml,
                "NVMLError_NotSupported",
                "NVMLError_FunctionNotFound",
                "NVMLError_NoPermission",
                "NVMLError_InvalidArgument",
                "NVMLLibraryMismatchError",
            ),
            ctypes.ArgumentError,  # argument types the driver's symbol does not take
        )
        self._lost_errors = _classes(nvml, "NVMLError_GpuIsLost")
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as exc:
            raise BackendUnavailable(_init_reason(nvml, exc)) from None
        self._initialized = True
        try:
            node = self._open_node()
        except BackendUnavailable:
            self.close()
            raise
        except nvml.NVMLError as exc:
            self.close()
            raise BackendUnavailable(_init_reason(nvml, exc)) from None
        self._events = self._start_events()
        return node

    def close(self) -> None:
        if not self._initialized:
            return
        self._initialized = False
        events, self._events = self._events, None
        if events is not None:
            events.close(timeout=self.event_wait_ms / 1000 + 0.5)
        with contextlib.suppress(Exception):
            self._nvml.nvmlShutdown()

    # -- driver events -----------------------------------------------------------------------

    def read_events(self, now: float) -> list[GpuEvent]:
        return self._events.drain() if self._events is not None else []

    def _start_events(self) -> _EventWatcher | None:
        """One event set with every usable GPU registered, watched by one thread; or None (and
        one log line) when the driver, the binding or the permissions do not allow it."""
        nvml = self._nvml
        names = (
            "nvmlEventSetCreate",
            "nvmlDeviceGetSupportedEventTypes",
            "nvmlDeviceRegisterEvents",
            "nvmlEventSetWait",
            "nvmlEventSetFree",
        )
        if any(getattr(nvml, name, None) is None for name in names):
            log.info("NVML events unavailable: the binding lacks the event API")
            return None
        try:
            event_set = nvml.nvmlEventSetCreate()
        except Exception as exc:
            log.info("NVML events unavailable: %s", exc)
            return None
        registered: list[_Gpu] = []
        reasons: list[str] = []
        for gpu in self._gpus:
            if gpu.lost or gpu.handle is None:
                continue
            try:
                mask = WATCHED_EVENTS & nvml.nvmlDeviceGetSupportedEventTypes(gpu.handle)
                if not mask:
                    reasons.append(f"GPU {gpu.index}: not supported")
                    continue
                nvml.nvmlDeviceRegisterEvents(gpu.handle, mask, event_set)
            except Exception as exc:  # NotSupported, NoPermission, FunctionNotFound, lost ...
                reasons.append(f"GPU {gpu.index}: {exc}")
                continue
            registered.append(gpu)
        if not registered:
            log.info("NVML events unavailable (%s)", "; ".join(reasons) or "no usable GPU")
            with contextlib.suppress(Exception):
                nvml.nvmlEventSetFree(event_set)
            return None
        if reasons:
            log.info("NVML events not watched on %s", "; ".join(reasons))
        watcher = _EventWatcher(nvml, event_set, registered, self.event_wait_ms)
        watcher.start()
        return watcher

    def _load(self) -> Any:
        if self._injected is not None:
            return self._injected
        try:
            with warnings.catch_warnings():
                # The deprecated PyPI "pynvml" shim warns on import; never let that hit the screen.
                warnings.simplefilter("ignore")
                import pynvml
        except ImportError:
            raise BackendUnavailable("nvidia-ml-py not installed") from None
        except Exception as exc:
            raise BackendUnavailable(f"nvidia-ml-py failed to import: {exc}") from None
        if not str(getattr(pynvml, "__file__", "") or "").endswith("pynvml.py"):
            raise BackendUnavailable(
                "an old 'pynvml' package shadows nvidia-ml-py: "
                "uninstall the deprecated 'pynvml' package (pip uninstall pynvml)"
            )
        return pynvml

    def _open_node(self) -> NodeInfo:
        nvml = self._nvml
        count = nvml.nvmlDeviceGetCount()
        if count <= 0:
            raise BackendUnavailable("no NVIDIA GPU found")
        self._gpus = [self._open_gpu(i) for i in range(count)]
        if all(gpu.lost for gpu in self._gpus):
            raise BackendUnavailable(self._gpus[0].error or "no usable NVIDIA GPU")
        cuda = self._system("nvmlSystemGetCudaDriverVersion")
        topology = self._topology()
        return NodeInfo(
            hostname=socket.gethostname(),
            backend=self.name,
            gpus=tuple(gpu.info for gpu in self._gpus if gpu.info is not None),
            driver_version=self._system("nvmlSystemGetDriverVersion"),
            runtime_version=f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else None,
            library_version=self._system("nvmlSystemGetNVMLVersion"),
            topology=topology,
        )

    def _system(self, name: str) -> Any:
        fn = getattr(self._nvml, name, None)
        if fn is None:
            return None
        try:
            return fn()
        except self._nvml.NVMLError:
            return None

    def _open_gpu(self, index: int) -> _Gpu:
        nvml = self._nvml
        gpu = _Gpu(index=index)
        try:
            gpu.handle = nvml.nvmlDeviceGetHandleByIndex(index)
            gpu.info = self._static_info(gpu)
        except (_GpuLost, *self._lost_errors):
            self._mark_lost(gpu)
        except nvml.NVMLError as exc:
            self._mark_lost(gpu, f"cannot open GPU {index}: {_init_reason(nvml, exc)}")
        if gpu.info is None:
            gpu.info = GpuInfo(index=index, name="unknown", uuid="", vendor="nvidia")
        return gpu

    # -- the one place that talks to NVML for a device ---------------------------------------

    def _query(self, gpu: _Gpu, key: str, fn: str | Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` for ``gpu`` (``fn`` a pynvml name or a callable), or None.

        "Not supported" (also a symbol missing from driver or binding, no permission, invalid
        argument) is remembered under ``key`` and never asked again; other NVML errors are taken
        as transient; a lost GPU raises :class:`_GpuLost`.
        """
        if key in gpu.unsupported:
            return None
        call = getattr(self._nvml, fn, None) if isinstance(fn, str) else fn
        if call is None:
            gpu.unsupported.add(key)
            return None
        try:
            return call(*args)
        except self._lost_errors:
            raise _GpuLost from None
        except self._unsupported_errors:
            gpu.unsupported.add(key)
            return None
        except self._nvml.NVMLError:
            return None

    def _first(self, gpu: _Gpu, key: str, calls: Sequence[str], *args: Any) -> Any:
        """The first of ``calls`` (newest first) the driver supports; the rest are fallbacks."""
        for name in calls:
            value = self._query(gpu, f"{key}:{name}", name, *args)
            if f"{key}:{name}" not in gpu.unsupported:
                return value
        return None

    def _mark_lost(self, gpu: _Gpu, message: str = LOST_MESSAGE) -> None:
        gpu.lost = True
        gpu.error = message

    # -- static tier -------------------------------------------------------------------------

    def _static_info(self, gpu: _Gpu) -> GpuInfo:
        nvml, h = self._nvml, gpu.handle

        def q(key: str, fn: str, *args: Any) -> Any:
            return self._query(gpu, key, fn, *args)

        pci = q("pci", "nvmlDeviceGetPciInfo", h)
        cc = q("cuda_cc", "nvmlDeviceGetCudaComputeCapability", h)
        attrs = q("attributes", "nvmlDeviceGetAttributes", h)
        memory = self._memory(gpu, h, "")
        constraints = q("power_constraints", "nvmlDeviceGetPowerManagementLimitConstraints", h)
        mig_mode = q("mig_mode", "nvmlDeviceGetMigMode", h)
        mig_enabled = None if mig_mode is None else mig_mode[0] == 1  # NVML_DEVICE_MIG_ENABLE
        ecc = q("ecc_mode", "nvmlDeviceGetEccMode", h)
        persistence = q("persistence", "nvmlDeviceGetPersistenceMode", h)
        clocks = {
            kind: q(f"max_clock_{kind}", "nvmlDeviceGetMaxClockInfo", h, clock)
            for kind, clock in _clock_types(nvml).items()
        }
        thresholds = {
            kind: q(f"temp_threshold_{kind}", "nvmlDeviceGetTemperatureThreshold", h, threshold)
            for kind, threshold in (
                ("slowdown", getattr(nvml, "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN", 1)),
                ("shutdown", getattr(nvml, "NVML_TEMPERATURE_THRESHOLD_SHUTDOWN", 0)),
            )
        }
        gpu.migs = self._open_migs(gpu) if mig_enabled else []
        return GpuInfo(
            index=gpu.index,
            name=q("name", "nvmlDeviceGetName", h) or "unknown",
            uuid=q("uuid", "nvmlDeviceGetUUID", h) or "",
            vendor="nvidia",
            pci_bus_id=_text(pci.busId) if pci is not None else None,
            architecture=_ARCHITECTURES.get(q("architecture", "nvmlDeviceGetArchitecture", h)),
            compute_capability=f"{cc[0]}.{cc[1]}" if cc else None,
            sm_count=(attrs.multiprocessorCount or None) if attrs is not None else None,
            memory_total_bytes=memory.total if memory else None,
            power_default_limit_w=_watts(
                q("power_default", "nvmlDeviceGetPowerManagementDefaultLimit", h)
            ),
            power_min_limit_w=_watts(constraints[0]) if constraints else None,
            power_max_limit_w=_watts(constraints[1]) if constraints else None,
            sm_clock_max_mhz=clocks["sm"],
            memory_clock_max_mhz=clocks["memory"],
            graphics_clock_max_mhz=clocks["graphics"],
            pcie_max_gen=self._first(
                gpu,
                "pcie_max_gen",
                ("nvmlDeviceGetGpuMaxPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkGeneration"),
                h,
            ),
            pcie_max_width=q("pcie_max_width", "nvmlDeviceGetMaxPcieLinkWidth", h),
            temperature_slowdown_c=_float(thresholds["slowdown"]),
            temperature_shutdown_c=_float(thresholds["shutdown"]),
            fan_count=q("fan_count", "nvmlDeviceGetNumFans", h),
            mig_enabled=mig_enabled,
            mig_devices=tuple(mig.info for mig in gpu.migs),
            ecc_enabled=bool(ecc[0]) if ecc else None,
            persistence_mode=None if persistence is None else bool(persistence),
            vbios_version=q("vbios", "nvmlDeviceGetVbiosVersion", h),
            serial=q("serial", "nvmlDeviceGetSerial", h),
        )

    def _open_migs(self, gpu: _Gpu) -> list[_Mig]:
        slots = self._query(gpu, "mig_count", "nvmlDeviceGetMaxMigDeviceCount", gpu.handle) or 0
        migs = []
        for slot in range(slots):
            # An empty slot answers NotFound: a transient-looking error, so not remembered.
            handle = self._query(
                gpu, f"mig_handle{slot}", "nvmlDeviceGetMigDeviceHandleByIndex", gpu.handle, slot
            )
            if handle is None:
                continue
            key = f"mig{slot}/"

            def q(name: str, fn: str, handle: Any = handle, key: str = key) -> Any:
                return self._query(gpu, key + name, fn, handle)

            gi = q("gi", "nvmlDeviceGetGpuInstanceId")
            ci = q("ci", "nvmlDeviceGetComputeInstanceId")
            uuid = q("uuid", "nvmlDeviceGetUUID")
            if gi is None or ci is None or not uuid:
                continue  # a slice we cannot identify is of no use
            attrs = q("attributes", "nvmlDeviceGetAttributes")
            memory_total = attrs.memorySizeMB * MIB if attrs is not None else None
            if memory_total is None and (memory := self._memory(gpu, handle, key)) is not None:
                memory_total = memory.total
            info = MigDeviceInfo(
                parent_index=gpu.index,
                gpu_instance_id=gi,
                compute_instance_id=ci,
                uuid=uuid,
                name=q("name", "nvmlDeviceGetName"),
                memory_total_bytes=memory_total,
                sm_count=attrs.multiprocessorCount if attrs is not None else None,
            )
            migs.append(_Mig(handle=handle, info=info, key=key))
        return migs

    # -- topology (static tier) --------------------------------------------------------------

    def _topology(self) -> Topology | None:
        """PCIe paths and P2P support per GPU pair, NVLink links per GPU, CPU locality per GPU.

        Whatever a GPU cannot answer is None or left out; a GPU lost on the way is marked lost
        and left out; None only if the binding misbehaves outright.
        """
        try:
            usable = [gpu for gpu in self._gpus if not gpu.lost and gpu.handle is not None]
            buses = {
                _bus_key(gpu.info.pci_bus_id): gpu.index
                for gpu in usable
                if gpu.info is not None and gpu.info.pci_bus_id
            }
            links: list[LinkInfo] = []
            locality: list[GpuLocality] = []
            for gpu in usable:
                try:
                    found = self._discover_links(gpu, buses)
                    place = self._locality(gpu)
                except _GpuLost:
                    self._mark_lost(gpu)
                    continue
                gpu.nvlinks = tuple(link.link for link in found)
                links.extend(found)
                locality.append(place)
            paths: list[GpuPath] = []
            for i, a in enumerate(usable):
                for b in usable[i + 1 :]:
                    if a.lost or b.lost:
                        continue
                    with contextlib.suppress(_GpuLost):  # either end: the next read tells which
                        paths.append(self._path(a, b))
            return Topology(paths=tuple(paths), links=tuple(links), locality=tuple(locality))
        except Exception:  # a binding bug must not stop the dashboard from opening
            log.warning("NVML topology discovery failed", exc_info=True)
            return None

    def _discover_links(self, gpu: _Gpu, buses: dict[str, int]) -> list[LinkInfo]:
        """Links 0.. until the driver says there are no more (consumer and PCIe boards: none)."""
        h = gpu.handle
        max_links = getattr(self._nvml, "NVML_NVLINK_MAX_LINKS", NVLINK_MAX_LINKS)
        found: list[LinkInfo] = []
        speed: float | None = None
        for link in range(max_links):
            key = f"nvlink{link}:"
            state = self._query(gpu, key + "state", "nvmlDeviceGetNvLinkState", h, link)
            if state is None:
                if key + "state" in gpu.unsupported:
                    break  # NotSupported / InvalidArgument: no link with this id, nor above
                continue  # a transient error: skip this link
            if not found:  # one field for every active link; asked only where links exist
                mbps = self._fields(gpu, ((FI_NVLINK_SPEED_COMMON, 0),)).get(
                    (FI_NVLINK_SPEED_COMMON, 0)
                )
                speed = mbps * 8 / 1000 if mbps else None  # MB/s -> Gb/s
            pci = self._query(gpu, key + "remote_pci", "nvmlDeviceGetNvLinkRemotePciInfo", h, link)
            remote_bus = _text(pci.busId) if pci is not None and pci.busId else None
            peer = buses.get(_bus_key(remote_bus)) if remote_bus else None
            kind = self._query(
                gpu, key + "remote_type", "nvmlDeviceGetNvLinkRemoteDeviceType", h, link
            )
            if kind is None:
                remote_type = "gpu" if peer is not None else None
            else:
                remote_type = NVLINK_REMOTE_TYPES.get(kind)
                if remote_type != "gpu":
                    peer = None
            found.append(
                LinkInfo(
                    gpu_index=gpu.index,
                    link=link,
                    kind="nvlink",
                    version=self._query(
                        gpu, key + "version", "nvmlDeviceGetNvLinkVersion", h, link
                    ),
                    speed_gbps=speed,
                    remote_type=remote_type,
                    remote_gpu_index=peer,
                    remote_pci_bus_id=remote_bus,
                )
            )
        return found

    def _locality(self, gpu: _Gpu) -> GpuLocality:
        words = max(16, -(-(os.cpu_count() or 1) // AFFINITY_WORD_BITS))  # at least 1024 CPUs
        mask = self._query(gpu, "cpu_affinity", "nvmlDeviceGetCpuAffinity", gpu.handle, words)
        numa = self._query(gpu, "numa_node", "nvmlDeviceGetNumaNodeId", gpu.handle)
        return GpuLocality(
            gpu_index=gpu.index,
            cpu_affinity=format_cpu_list(mask) if mask is not None else None,
            numa_node=numa if isinstance(numa, int) and numa >= 0 else None,
        )

    def _path(self, a: _Gpu, b: _Gpu) -> GpuPath:
        ha, hb = a.handle, b.handle
        level = self._query(a, f"topology{b.index}", "nvmlDeviceGetTopologyCommonAncestor", ha, hb)
        p2p = {
            index: self._query(a, f"p2p{index}:{b.index}", "nvmlDeviceGetP2PStatus", ha, hb, index)
            for index in (P2P_CAPS_INDEX_READ, P2P_CAPS_INDEX_WRITE)
        }
        return GpuPath(
            a=a.index,
            b=b.index,
            pcie_level=TOPOLOGY_LEVELS.get(level) if level is not None else None,
            p2p_read=_p2p(p2p[P2P_CAPS_INDEX_READ]),
            p2p_write=_p2p(p2p[P2P_CAPS_INDEX_WRITE]),
        )

    # -- fast and slow tiers -----------------------------------------------------------------

    def read_gpus(self, now: float, *, slow: bool) -> list[GpuSample]:
        samples = []
        for gpu in self._gpus:
            if not gpu.lost:
                try:
                    samples.append(self._read_gpu(gpu, now, slow))
                    continue
                except _GpuLost:
                    self._mark_lost(gpu)
                except Exception as exc:  # a binding bug must not take the other GPUs down
                    samples.append(GpuSample(index=gpu.index, timestamp=now, error=str(exc)))
                    continue
            samples.append(GpuSample(index=gpu.index, timestamp=now, lost=True, error=gpu.error))
        return samples

    def _read_gpu(self, gpu: _Gpu, now: float, slow: bool) -> GpuSample:
        nvml, h = self._nvml, gpu.handle

        def q(key: str, fn: str, *args: Any) -> Any:
            return self._query(gpu, key, fn, *args)

        link_states = self._link_states(gpu) if slow else {}
        wanted = _FAST_FIELDS
        if slow:
            wanted += _SLOW_FIELDS + tuple(
                (field_id, link)
                for link, up in link_states.items()
                if up
                for field_id in (FI_NVLINK_DATA_TX, FI_NVLINK_DATA_RX)
            )
        fields = self._fields(gpu, wanted)
        util = q("utilization", "nvmlDeviceGetUtilizationRates", h)
        memory = self._memory(gpu, h, "")
        energy_mj = fields.get((FI_TOTAL_ENERGY, 0))
        if energy_mj is None:
            energy_mj = q("energy", "nvmlDeviceGetTotalEnergyConsumption", h)
        memory_temp = fields.get((FI_MEMORY_TEMP, 0))
        temperature_sensor = getattr(nvml, "NVML_TEMPERATURE_GPU", 0)
        clocks = {
            kind: q(f"clock_{kind}", "nvmlDeviceGetClockInfo", h, clock)
            for kind, clock in _clock_types(nvml).items()
        }
        pstate = q("pstate", "nvmlDeviceGetPerformanceState", h)
        encoder = q("encoder", "nvmlDeviceGetEncoderUtilization", h)
        decoder = q("decoder", "nvmlDeviceGetDecoderUtilization", h)
        reasons = self._first(
            gpu,
            "throttle",
            ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"),
            h,
        )
        values: dict[str, Any] = {
            "utilization_gpu_pct": _float(util.gpu) if util is not None else None,
            "utilization_memory_pct": _float(util.memory) if util is not None else None,
            "memory_used_bytes": memory.used if memory else None,
            "memory_free_bytes": memory.free if memory else None,
            "memory_reserved_bytes": memory.reserved if memory else None,
            "power_w": _watts(q("power", "nvmlDeviceGetPowerUsage", h)),
            "power_limit_w": _watts(q("power_limit", "nvmlDeviceGetEnforcedPowerLimit", h)),
            "energy_j": energy_mj / 1000 if energy_mj is not None else None,
            "temperature_gpu_c": _float(
                self._first(
                    gpu,
                    "temperature",
                    ("nvmlDeviceGetTemperatureV", "nvmlDeviceGetTemperature"),
                    h,
                    temperature_sensor,
                )
            ),
            # nvidia-ml-py has no hotspot (junction) sensor or field: hotspot stays None.
            # A board without a memory sensor reads 0 rather than failing.
            "temperature_memory_c": _float(memory_temp) if memory_temp else None,
            "fan_pct": self._fan(gpu),
            "clock_sm_mhz": clocks["sm"],
            "clock_memory_mhz": clocks["memory"],
            "clock_graphics_mhz": clocks["graphics"],
            "pstate": pstate if pstate is not None and 0 <= pstate <= 15 else None,  # 32: unknown
            "pcie_gen": q("pcie_gen", "nvmlDeviceGetCurrPcieLinkGeneration", h),
            "pcie_width": q("pcie_width", "nvmlDeviceGetCurrPcieLinkWidth", h),
            "encoder_pct": _float(encoder[0]) if encoder else None,
            "decoder_pct": _float(decoder[0]) if decoder else None,
            "throttle_reasons": decode_throttle_reasons(reasons) if reasons is not None else None,
            "mig_devices": tuple(self._mig_sample(gpu, mig) for mig in gpu.migs),
        }
        if slow:
            values.update(self._read_slow(gpu, now, fields))
            values["links"] = self._link_samples(gpu, now, link_states, fields)
        return GpuSample(index=gpu.index, timestamp=now, **values)

    def _read_slow(self, gpu: _Gpu, now: float, fields: dict[FieldKey, Any]) -> dict[str, Any]:
        nvml, h = self._nvml, gpu.handle
        corrected = getattr(nvml, "NVML_MEMORY_ERROR_TYPE_CORRECTED", 0)
        uncorrected = getattr(nvml, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1)
        volatile = getattr(nvml, "NVML_VOLATILE_ECC", 0)
        aggregate = getattr(nvml, "NVML_AGGREGATE_ECC", 1)
        values: dict[str, Any] = {
            name: self._query(gpu, name, "nvmlDeviceGetTotalEccErrors", h, kind, counter)
            for name, kind, counter in (
                ("ecc_volatile_corrected", corrected, volatile),
                ("ecc_volatile_uncorrected", uncorrected, volatile),
                ("ecc_aggregate_corrected", corrected, aggregate),
                ("ecc_aggregate_uncorrected", uncorrected, aggregate),
            )
        }
        pending = self._query(gpu, "retired_pending", "nvmlDeviceGetRetiredPagesPendingStatus", h)
        values["retired_pages_pending"] = None if pending is None else bool(pending)
        rows = self._query(gpu, "remapped_rows", "nvmlDeviceGetRemappedRows", h)
        if rows is not None:
            corr, unc, rows_pending, failure = rows
            values.update(
                remapped_rows_correctable=corr,
                remapped_rows_uncorrectable=unc,
                remapped_rows_pending=bool(rows_pending),
                remapped_rows_failure=bool(failure),
            )
        values.update(self._pcie_rates(gpu, now, fields))
        for direction, field_id in (("tx", FI_NVLINK_DATA_TX), ("rx", FI_NVLINK_DATA_RX)):
            rate = self._rate(gpu, f"nvlink_{direction}", fields.get((field_id, ALL_LINKS)), now)
            values[f"nvlink_{direction}_bytes_per_s"] = rate * KIB if rate is not None else None
        return values

    def _pcie_rates(self, gpu: _Gpu, now: float, fields: dict[FieldKey, Any]) -> dict[str, Any]:
        """PCIe bytes/s from the cumulative counters; the 20 ms-blocking throughput call only
        when the driver has no counters."""
        values: dict[str, Any] = {}
        counters = {"tx": FI_PCIE_TX_BYTES, "rx": FI_PCIE_RX_BYTES}
        throughput = {
            "tx": getattr(self._nvml, "NVML_PCIE_UTIL_TX_BYTES", 0),
            "rx": getattr(self._nvml, "NVML_PCIE_UTIL_RX_BYTES", 1),
        }
        for direction, field_id in counters.items():
            if _field_key(field_id, 0) not in gpu.unsupported:
                rate = self._rate(gpu, f"pcie_{direction}", fields.get((field_id, 0)), now)
            else:
                kbs = self._query(
                    gpu,
                    f"pcie_throughput_{direction}",
                    "nvmlDeviceGetPcieThroughput",
                    gpu.handle,
                    throughput[direction],
                )
                rate = kbs * KIB if kbs is not None else None
            values[f"pcie_{direction}_bytes_per_s"] = _float(rate)
        return values

    def _link_states(self, gpu: _Gpu) -> dict[int, bool | None]:
        """Link id -> up (None when the state could not be read this time)."""
        states: dict[int, bool | None] = {}
        for link in gpu.nvlinks:
            state = self._query(
                gpu, f"nvlink{link}:state", "nvmlDeviceGetNvLinkState", gpu.handle, link
            )
            states[link] = None if state is None else bool(state)
        return states

    def _link_samples(
        self,
        gpu: _Gpu,
        now: float,
        states: dict[int, bool | None],
        fields: dict[FieldKey, Any],
    ) -> tuple[LinkSample, ...]:
        """Per-link state, TX/RX bytes/s from the cumulative per-link KiB counters and the
        error counters; () for a GPU without NVLink."""
        samples = []
        for link, up in states.items():
            rates: dict[str, float | None] = {}
            for direction, field_id in (("tx", FI_NVLINK_DATA_TX), ("rx", FI_NVLINK_DATA_RX)):
                # A link that is down is not asked: None, and the baseline waits for it.
                kib = fields.get((field_id, link)) if up else None
                rate = self._rate(gpu, f"nvlink{link}_{direction}", kib, now)
                rates[direction] = rate * KIB if rate is not None else None
            errors = {
                counter: self._query(
                    gpu,
                    f"nvlink{link}:error{counter}",
                    "nvmlDeviceGetNvLinkErrorCounter",
                    gpu.handle,
                    link,
                    counter,
                )
                for counter in (
                    NVLINK_ERROR_DL_REPLAY,
                    NVLINK_ERROR_DL_RECOVERY,
                    NVLINK_ERROR_DL_CRC_FLIT,
                    NVLINK_ERROR_DL_CRC_DATA,
                )
            }
            crc_flit, crc_data = errors[NVLINK_ERROR_DL_CRC_FLIT], errors[NVLINK_ERROR_DL_CRC_DATA]
            samples.append(
                LinkSample(
                    link=link,
                    up=up,
                    rx_bytes_per_s=rates["rx"],
                    tx_bytes_per_s=rates["tx"],
                    replay_errors=errors[NVLINK_ERROR_DL_REPLAY],
                    recovery_errors=errors[NVLINK_ERROR_DL_RECOVERY],
                    crc_errors=None if crc_flit is None else crc_flit + (crc_data or 0),
                )
            )
        return tuple(samples)

    def _rate(self, gpu: _Gpu, key: str, value: Any, now: float) -> float | None:
        """Per-second rate of a cumulative counter: None on the first reading, when time did not
        move, or when the counter went backwards (wrap or driver reload)."""
        if value is None:
            return None  # keep the old baseline: the next reading spans the gap
        previous = gpu.counters.get(key)
        gpu.counters[key] = (value, now)
        if previous is None:
            return None
        before, then = previous
        if now <= then or value < before:
            return None
        return (value - before) / (now - then)

    def _fields(self, gpu: _Gpu, wanted: Sequence[FieldKey]) -> dict[FieldKey, Any]:
        """Batch-read field values in one call, keyed by (field id, scopeId); entries that never
        answer are remembered (per field, and per link for the per-link scopes)."""
        request = [f for f in wanted if _field_key(*f) not in gpu.unsupported]
        if not request:
            return {}
        entries = self._query(gpu, "field_values", "nvmlDeviceGetFieldValues", gpu.handle, request)
        if entries is None:
            return {}
        values: dict[FieldKey, Any] = {}
        for (field_id, scope), entry in zip(request, entries, strict=False):
            ret = entry.nvmlReturn
            if ret == _RET_SUCCESS and 0 <= entry.valueType < len(_VALUE_MEMBERS):
                values[(field_id, scope)] = getattr(entry.value, _VALUE_MEMBERS[entry.valueType])
            elif ret == _RET_GPU_IS_LOST:
                raise _GpuLost
            elif ret in _RET_UNSUPPORTED:
                gpu.unsupported.add(_field_key(field_id, scope))
        return values

    def _memory(self, gpu: _Gpu, handle: Any, key: str) -> _Memory | None:
        """Memory info, v2 first (splits out reserved memory); whichever works is remembered."""
        mem = self._query(gpu, key + "memory_v2", self._memory_v2, handle)
        if mem is not None:
            return _Memory(total=mem.total, used=mem.used, free=mem.free, reserved=mem.reserved)
        if key + "memory_v2" not in gpu.unsupported:
            return None  # v2 exists but failed this time
        mem = self._query(gpu, key + "memory_v1", "nvmlDeviceGetMemoryInfo", handle)
        if mem is None:
            return None
        return _Memory(total=mem.total, used=mem.used, free=mem.free, reserved=None)

    def _memory_v2(self, handle: Any) -> Any:
        nvml = self._nvml
        version = getattr(nvml, "nvmlMemory_v2", None)
        if version is None:
            raise nvml.NVMLError_FunctionNotFound()
        try:
            return nvml.nvmlDeviceGetMemoryInfo(handle, version=version)
        except TypeError:  # a binding older than the version= keyword
            raise nvml.NVMLError_FunctionNotFound() from None

    def _fan(self, gpu: _Gpu) -> float | None:
        """Average over the fans; None on fanless boards."""
        count = gpu.info.fan_count if gpu.info else None
        if count == 0:
            return None
        speeds = [
            speed
            for fan in range(count or 0)
            if (speed := self._query(gpu, f"fan{fan}", "nvmlDeviceGetFanSpeed_v2", gpu.handle, fan))
            is not None
        ]
        if not speeds:
            speed = self._query(gpu, "fan", "nvmlDeviceGetFanSpeed", gpu.handle)
            speeds = [speed] if speed is not None else []
        return sum(speeds) / len(speeds) if speeds else None

    def _mig_sample(self, gpu: _Gpu, mig: _Mig) -> MigSample:
        memory = self._memory(gpu, mig.handle, mig.key)
        return MigSample(
            uuid=mig.info.uuid,
            memory_used_bytes=memory.used if memory else None,
            memory_total_bytes=memory.total if memory else mig.info.memory_total_bytes,
        )

    # -- processes ---------------------------------------------------------------------------

    def read_processes(self, now: float) -> list[ProcessSample]:
        processes: list[ProcessSample] = []
        for gpu in self._gpus:
            if gpu.lost:
                continue
            try:
                processes.extend(self._gpu_processes(gpu))
            except _GpuLost:
                self._mark_lost(gpu)
            except Exception:  # a binding bug on one GPU must not hide the others' processes
                continue
        return processes

    def _gpu_processes(self, gpu: _Gpu) -> list[ProcessSample]:
        info = gpu.info
        if info is not None and info.mig_enabled:
            targets = [(m.handle, m.key, m.info.uuid, m.info.memory_total_bytes) for m in gpu.migs]
        else:
            targets = [(gpu.handle, "", None, info.memory_total_bytes if info else None)]
        processes: list[ProcessSample] = []
        for handle, key, mig_uuid, memory_limit in targets:
            compute = self._first(gpu, key + "compute_procs", _COMPUTE_CALLS, handle)
            graphics = self._first(gpu, key + "graphics_procs", _GRAPHICS_CALLS, handle)
            if not compute and not graphics:
                continue
            sm = self._process_sm(gpu, handle, key)
            rows = _merge_processes(compute or [], graphics or [], memory_limit)
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

    def _process_sm(self, gpu: _Gpu, handle: Any, key: str) -> dict[int, float] | None:
        """SM % per PID from samples newer than the last one seen on this handle.

        None when the driver cannot tell; {} when it can but has no new samples (idle: 0 %).
        """
        last_seen = gpu.util_seen_us.get(key, 0)
        samples = None
        for name in _PROCESS_UTIL_CALLS:
            fn = getattr(self._nvml, name, None)
            samples = self._query(
                gpu, f"{key}process_util:{name}", _samples_since(self._nvml, fn), handle, last_seen
            )
            if f"{key}process_util:{name}" not in gpu.unsupported:
                break
        if samples is None:
            return None
        newest: dict[int, tuple[int, float]] = {}
        for sample in samples:
            stamp = sample.timeStamp
            last_seen = max(last_seen, stamp)
            if sample.pid not in newest or stamp >= newest[sample.pid][0]:
                newest[sample.pid] = (stamp, min(max(float(sample.smUtil), 0.0), 100.0))
        gpu.util_seen_us[key] = last_seen
        return {pid: sm for pid, (_, sm) in newest.items()}


class _EventWatcher:
    """One daemon thread looping on ``nvmlEventSetWait`` for one event set, turning each event
    into a :class:`GpuEvent` on a queue that :meth:`drain` empties without blocking."""

    def __init__(self, nvml: Any, event_set: Any, gpus: Sequence[_Gpu], wait_ms: int) -> None:
        self._nvml = nvml
        self.event_set = event_set
        self._wait_ms = wait_ms
        self._queue: queue.SimpleQueue[GpuEvent] = queue.SimpleQueue()
        self._stop = threading.Event()
        # Handles are new objects per lookup: match an event's device by its pointer value (real
        # binding) or, failing that, by its UUID.
        self._by_address: dict[int, int | None] = {
            address: gpu.index for gpu in gpus if (address := _address(gpu.handle)) is not None
        }
        self._by_uuid = {gpu.info.uuid: gpu.index for gpu in gpus if gpu.info and gpu.info.uuid}
        self._timeout_errors = _classes(nvml, "NVMLError_Timeout")
        # The set or the library is gone: nothing will ever arrive again.
        self._fatal_errors = _classes(nvml, "NVMLError_Uninitialized", "NVMLError_InvalidArgument")
        self._logged: set[type[BaseException]] = set()
        self.thread = threading.Thread(target=self._run, name="gputui-nvml-events", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def drain(self) -> list[GpuEvent]:
        events: list[GpuEvent] = []
        with contextlib.suppress(queue.Empty):
            while True:
                events.append(self._queue.get_nowait())
        return events

    def close(self, timeout: float) -> None:
        """Stop the thread, then free the event set (left alone if the thread is still inside
        ``nvmlEventSetWait``: freeing it under the waiter is not safe; shutdown reclaims it)."""
        self._stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout)
        if self.thread.is_alive():
            log.warning("NVML event thread did not stop; not freeing its event set")
            return
        with contextlib.suppress(Exception):
            self._nvml.nvmlEventSetFree(self.event_set)

    def _run(self) -> None:
        nvml = self._nvml
        while not self._stop.is_set():
            try:
                data = nvml.nvmlEventSetWait(self.event_set, self._wait_ms)
            except self._timeout_errors:
                continue
            except self._fatal_errors as exc:
                log.info("NVML event thread stops: %s", exc)
                return
            except nvml.NVMLError as exc:  # GpuIsLost, Unknown ...: back off, keep watching
                self._note(exc)
                self._stop.wait(self._wait_ms / 1000)
                continue
            except Exception:
                log.exception("NVML event thread failed")
                return
            try:
                event = self._event(data)
            except Exception:  # a struct we cannot read: drop that event, keep watching
                log.debug("unreadable NVML event %r", data, exc_info=True)
                continue
            self._queue.put(event)

    def _note(self, exc: BaseException) -> None:
        if type(exc) not in self._logged:
            self._logged.add(type(exc))
            log.info("NVML event wait failed: %s", exc)

    def _event(self, data: Any) -> GpuEvent:
        event_type = int(data.eventType)
        kind = EVENT_KINDS.get(event_type, f"nvml_event_{event_type:#x}")
        return GpuEvent(
            timestamp=time.time(),
            kind=kind,
            gpu_index=self._gpu_index(data.device),
            code=int(data.eventData) if event_type == EVENT_XID else None,
            message=None,
            source="driver",
        )

    def _gpu_index(self, device: Any) -> int | None:
        address = _address(device)
        if address is not None and address in self._by_address:
            return self._by_address[address]
        try:
            index = self._by_uuid.get(_text(self._nvml.nvmlDeviceGetUUID(device)))
        except Exception:
            index = None
        if address is not None:
            self._by_address[address] = index
        return index


# -- small pure helpers ---------------------------------------------------------------------------


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


def _merge_processes(
    compute: Sequence[Any], graphics: Sequence[Any], memory_limit: int | None
) -> dict[int, tuple[ProcessType, int | None]]:
    """Merge the compute and graphics lists by PID, dropping garbled rows (a driver/binding struct
    mismatch shows up as PID 0, huge PIDs or more memory than the GPU has)."""
    kinds: dict[int, set[str]] = {}
    memory: dict[int, int | None] = {}
    for kind, rows in (("compute", compute), ("graphics", graphics)):
        for row in rows:
            pid, used = getattr(row, "pid", None), getattr(row, "usedGpuMemory", None)
            if not _sane_process(pid, used, memory_limit):
                continue
            kinds.setdefault(pid, set()).add(kind)
            if used is not None:
                memory[pid] = max(memory.get(pid) or 0, used)
            else:
                memory.setdefault(pid, None)
    merged: dict[int, tuple[ProcessType, int | None]] = {}
    for pid, found in kinds.items():
        kind: ProcessType = (
            "compute+graphics"
            if len(found) == 2
            else ("compute" if "compute" in found else "graphics")
        )
        merged[pid] = (kind, memory.get(pid))
    return merged


def _sane_process(pid: Any, used: Any, memory_limit: int | None) -> bool:
    if not isinstance(pid, int) or not 0 < pid <= MAX_PID:
        return False
    if used is None:
        return True
    return isinstance(used, int) and used >= 0 and (memory_limit is None or used <= memory_limit)


def _field_key(field_id: int, scope: int) -> str:
    """The unsupported-set entry of a field: per field for the device-wide and all-links
    scopes, per link for the per-link NVLink counters (link 0 is scopeId 0 too)."""
    if field_id in _PER_LINK_FIELDS and scope != ALL_LINKS:
        return f"field{field_id}:link{scope}"
    return f"field{field_id}"


def format_cpu_list(mask: Sequence[int] | Any, bits: int = AFFINITY_WORD_BITS) -> str | None:
    """CPU bitmask words (word 0 holds CPUs 0..bits-1) -> ``taskset`` list ``0-55,112-167``;
    None for an empty mask."""
    cpus = [
        word_index * bits + bit
        for word_index, word in enumerate(mask)
        for bit in range(bits)
        if int(word) >> bit & 1
    ]
    if not cpus:
        return None
    ranges: list[str] = []
    start = prev = cpus[0]
    for cpu in [*cpus[1:], None]:
        if cpu is not None and cpu == prev + 1:
            prev = cpu
            continue
        ranges.append(str(start) if start == prev else f"{start}-{prev}")
        if cpu is not None:
            start = prev = cpu
    return ",".join(ranges)


def _bus_key(bus_id: str | None) -> str:
    """A PCI bus id in one form for matching: lower case, 4-digit domain
    (``00000000:18:00.0`` and ``0000:18:00.0`` are the same device)."""
    text = (bus_id or "").strip().lower()
    parts = text.split(":")
    if len(parts) == 2:  # no domain
        return f"0000:{text}"
    if len(parts) == 3:
        with contextlib.suppress(ValueError):
            return f"{int(parts[0], 16):04x}:{parts[1]}:{parts[2]}"
    return text


def _p2p(status: int | None) -> bool | None:
    return None if status is None else status == P2P_STATUS_OK


def _init_reason(nvml: Any, exc: BaseException) -> str:
    """One line for the user from an error raised by nvmlInit (or the first calls after it)."""
    for name, reason in (
        ("NVMLError_LibraryNotFound", "libnvidia-ml.so.1 not found (no NVIDIA driver)"),
        ("NVMLError_DriverNotLoaded", "NVIDIA driver not loaded"),
        ("NVMLError_NoPermission", "no permission to open the NVIDIA device nodes"),
    ):
        cls = getattr(nvml, name, None)
        if isinstance(cls, type) and isinstance(exc, cls):
            return reason
    return f"NVML init failed: {exc}"


def _classes(nvml: Any, *names: str) -> tuple[type[BaseException], ...]:
    return tuple(cls for name in names if isinstance(cls := getattr(nvml, name, None), type))


def _clock_types(nvml: Any) -> dict[str, int]:
    return {
        "sm": getattr(nvml, "NVML_CLOCK_SM", 1),
        "memory": getattr(nvml, "NVML_CLOCK_MEM", 2),
        "graphics": getattr(nvml, "NVML_CLOCK_GRAPHICS", 0),
    }


def _watts(milliwatts: Any) -> float | None:
    return milliwatts / 1000 if milliwatts is not None else None


def _float(value: Any) -> float | None:
    return float(value) if value is not None else None


def _address(handle: Any) -> int | None:
    """The pointer value of a ctypes device handle (None for NULL or a non-ctypes object)."""
    try:
        return ctypes.cast(handle, ctypes.c_void_p).value
    except (ctypes.ArgumentError, TypeError):
        return None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


__all__ = ["THROTTLE_BITS", "NvmlBackend", "decode_throttle_reasons", "format_cpu_list"]
