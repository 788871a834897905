"""AMD backend: adapts ROCm's ``amdsmi`` Python package to :mod:`gputui.model`.

The package is optional and awkward to import: without ROCm's ``libamd_smi.so`` it raises
``KeyError('libamd_smi.so')`` (not ImportError) and prints two lines to stdout first. The import and
``amdsmi_init()`` therefore run with Python's stdout/stderr captured, so nothing lands on a Textual
screen. (Text the C library writes straight to file descriptor 1 is not captured: redirecting the
descriptor would also swallow a running Textual app's own output.)

Every per-GPU library call goes through :meth:`AmdSmiBackend._call`, which turns "N/A" answers and
errors into ``None``: NOT_SUPPORTED (and other errors that cannot change while we run) is remembered
per (GPU, field) and never asked again; RETRY/BUSY is ``None`` for this tick only; an error meaning
the GPU is gone (NOT_FOUND, DRIVER_NOT_LOADED, ...) is confirmed with a second call and then turns
that GPU's sample into ``lost=True`` while the other GPUs carry on.

Calls per tier (``h`` is a cached processor handle):

- static (``open``): ``amdsmi_init``, ``amdsmi_get_processor_handles``, ``amdsmi_get_lib_version``,
  ``amdsmi_get_rocm_version``; per GPU ``get_gpu_asic_info``, ``get_gpu_board_info``,
  ``get_gpu_device_uuid``, ``get_gpu_device_bdf``, ``get_gpu_memory_total(VRAM)`` (else
  ``get_gpu_vram_info``), ``get_power_cap_info``, ``get_clock_info(GFX/MEM)``, ``get_pcie_info``,
  ``get_temp_metric(HOTSPOT, CRITICAL/EMERGENCY)``, ``get_gpu_ecc_enabled``,
  ``get_gpu_vbios_info``, ``get_gpu_driver_info`` (first GPU). Topology: per GPU pair (a < b)
  ``topo_get_link_type``, ``topo_get_link_weight``, ``is_P2P_accessible``; per GPU
  ``topo_get_numa_node_number`` and ``get_link_metrics`` (the XGMI links and their peers), plus
  sysfs ``local_cpulist`` for the CPU affinity.
- fast (every ``read_gpus``): ``get_gpu_activity``, ``get_gpu_memory_usage(VRAM)`` (else
  ``get_gpu_vram_usage``), ``get_power_info``, ``get_power_cap_info``, ``get_energy_count``,
  ``get_temp_metric(EDGE/HOTSPOT/VRAM, CURRENT)``, ``get_gpu_fan_speed(0)``,
  ``get_clock_info(GFX/MEM)``, ``get_pcie_info``, ``get_gpu_metrics_info`` (throttle reasons).
- slow (``slow=True``): ``get_gpu_total_ecc_count``, ``get_gpu_bad_page_info``,
  ``get_link_metrics`` (aggregate and per-link XGMI rates), ``get_gpu_xgmi_link_status`` (link
  up/down); ``get_gpu_pci_throughput`` only when ``pcie_throughput=True``.
- processes: ``get_gpu_process_list``.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import socket
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from gputui.backends.base import Backend, BackendUnavailable
from gputui.model import (
    GpuInfo,
    GpuLocality,
    GpuPath,
    GpuSample,
    LinkInfo,
    LinkSample,
    NodeInfo,
    ProcessSample,
    Topology,
)

# amdsmi_wrapper.AMDSMI_STATUS_* values (C ABI, stable); read from the module when it has them.
_STATUS_DEFAULTS: dict[str, int] = {
    "NOT_SUPPORTED": 2,
    "NOT_YET_IMPLEMENTED": 3,
    "FAIL_LOAD_SYMBOL": 5,
    "DRM_ERROR": 6,
    "TIMEOUT": 8,
    "RETRY": 9,
    "NO_PERM": 10,
    "INTERRUPT": 11,
    "IO": 12,
    "BUSY": 30,
    "NOT_FOUND": 31,
    "NOT_INIT": 32,
    "DRIVER_NOT_LOADED": 34,
    "AMDGPU_RESTART_ERR": 54,
}
# Errors that cannot go away while we run: remembered per (GPU, field), never asked again.
# NO_PERM is here too: group membership (render/video) does not change inside a running process.
_PERMANENT = ("NOT_SUPPORTED", "NOT_YET_IMPLEMENTED", "FAIL_LOAD_SYMBOL", "NO_PERM")
# Busy or interrupted: None this tick, asked again next tick.
_TRANSIENT = ("RETRY", "BUSY", "TIMEOUT", "INTERRUPT")
# The GPU (or its driver) has gone away; confirmed with a second call before the GPU is marked lost.
_GONE = ("NOT_FOUND", "NOT_INIT", "DRIVER_NOT_LOADED", "AMDGPU_RESTART_ERR", "DRM_ERROR", "IO")

# "Not supported" sentinels: the wrapper maps only some of them to "N/A" (power_info only 0xFFFF).
_SENTINELS = frozenset({0xFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF})
_UINT64_MAX = 0xFFFFFFFFFFFFFFFF
_MIB = 1 << 20
_MAX_FAN_SPEED = 255  # amdsmi_interface.AMDSMI_MAX_FAN_SPEED: fan speed is 0..255, not %
# XGMI link counters are "KB"; amdsmi does not say 1000 or 1024. We read KiB (as amd-smi users do).
_XGMI_UNIT_BYTES = 1024
_PCIE_GEN_BY_GTS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
_PAGE_STATUS_PENDING = 1  # AMDSMI_MEM_PAGE_STATUS_PENDING
_LINK_TYPE_PCIE = 1  # AMDSMI_LINK_TYPE_PCIE (7.x); other types (XGMI = 2) count as XGMI traffic
_LINK_TYPE_XGMI = 2  # AMDSMI_LINK_TYPE_XGMI (7.x) / AMDSMI_IOLINK_TYPE_XGMI (6.x): same value
# amdsmi_topo_get_link_type's "type": 1 and 2 mean the same in 6.x and 7.x; 0 does not (INTERNAL in
# 7.x, UNDEFINED in 6.x), so it and anything else is reported as unknown (None).
_PATH_LINK_TYPES = {_LINK_TYPE_PCIE: "pcie", _LINK_TYPE_XGMI: "xgmi"}
# amdsmi_get_gpu_xgmi_link_status letters: U up, D down. X (disabled: not wired or turned off, not
# a fault) and "N/A" give None, so an unused link never reads as a failed one.
_LINK_UP = {"U": True, "D": False}
_SYSFS_PCI_DEVICES = Path("/sys/bus/pci/devices")
_UMC_BLOCK = 1  # AMDSMI_GPU_BLOCK_UMC: the memory controller, i.e. VRAM ECC

_NOT_INSTALLED = "amdsmi not installed"
_NO_LIBRARY = "libamd_smi.so not found (ROCm amd-smi-lib not installed)"
_NO_GPU = "no AMD GPU found"
_INIT_MESSAGES = {
    "DRIVER_NOT_LOADED": "amdgpu driver not loaded",
    "NO_PERM": "no permission (add the user to the render and video groups)",
}

# gfx target -> architecture. Exact names first, then prefixes (longest first).
_ARCH_EXACT = {
    "gfx906": "GCN5.1",
    "gfx908": "CDNA",
    "gfx90a": "CDNA2",
}
_ARCH_PREFIX = (
    ("gfx115", "RDNA3.5"),
    ("gfx110", "RDNA3"),
    ("gfx103", "RDNA2"),
    ("gfx101", "RDNA"),
    ("gfx12", "RDNA4"),
    ("gfx95", "CDNA4"),
    ("gfx94", "CDNA3"),
    ("gfx90", "GCN5"),
)

# Throttle mapping (canonical names from model.THROTTLE_REASONS).
#
# 1. MI300-class GPUs publish residency accumulators in gpu_metrics (the same counters
#    amdsmi_get_violation_status turns into its active_* flags; that call sleeps 100 ms per GPU,
#    too slow for the fast tier, so we take the deltas between our own ticks instead). A counter
#    that grew since the last tick means the limit was active:
#      ppt (package power tracking, "PVIOL")     -> sw_power_cap
#      socket thermal ("TVIOL"), HBM thermal     -> sw_thermal  (firmware holds a temperature limit)
#      VR thermal (voltage regulator hot)        -> hw_thermal  (a hardware VRHOT signal)
#      PROCHOT (external "processor hot" signal) -> hw_slowdown
_RESIDENCY_REASONS = (
    ("ppt_residency_acc", "sw_power_cap"),
    ("socket_thm_residency_acc", "sw_thermal"),
    ("hbm_thm_residency_acc", "sw_thermal"),
    ("vr_thm_residency_acc", "hw_thermal"),
    ("prochot_residency_acc", "hw_slowdown"),
)
# 2. Otherwise gpu_metrics' indep_throttle_status: a bitmask of the kernel's SMU_THROTTLER_* bits
#    in amdsmi 6.x, only a bool in 7.x. Bits (kgd_pp_interface.h):
#      0-23  power (PPT0-3, SPL, FPPT, SPPT) and current (TDC, EDC, APCC) limits -> sw_power_cap
#      32-43 temperature limits (GPU, core, mem, edge, hotspot, SoC, VR, liquid)  -> sw_thermal
#      44-45 VRHOT -> hw_thermal;  46-47 PROCHOT -> hw_slowdown
#      56 PPM (platform power management) -> sw_power_cap;  57 FIT (reliability) -> reliability
#    A bare bool False means "nothing"; True names no reason we could map, so it gives None.
_SMU_THROTTLER_BITS = (
    ((1 << 24) - 1, "sw_power_cap"),
    (((1 << 44) - 1) ^ ((1 << 32) - 1), "sw_thermal"),
    (0b11 << 44, "hw_thermal"),
    (0b11 << 46, "hw_slowdown"),
    (1 << 56, "sw_power_cap"),
    (1 << 57, "reliability"),
)


_MISSING = object()


class _GpuGone(Exception):
    """Internal: the GPU stopped answering in a way that means it is gone."""


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Swallow Python-level stdout/stderr (amdsmi prints its import errors)."""
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        yield


def import_amdsmi() -> ModuleType:
    """Import ``amdsmi`` silently, or raise :class:`BackendUnavailable` with a one-line reason."""
    try:
        with _quiet():
            return importlib.import_module("amdsmi")
    except ModuleNotFoundError as exc:
        if (exc.name or "amdsmi").split(".")[0] == "amdsmi":
            raise BackendUnavailable(_NOT_INSTALLED) from None
        raise BackendUnavailable(f"amdsmi import failed: {exc}") from None
    except (KeyError, OSError):
        # amdsmi_wrapper: _libraries['libamd_smi.so'] after the CDLL load failed.
        raise BackendUnavailable(_NO_LIBRARY) from None
    except AttributeError as exc:
        # A libamd_smi.so older than the Python package lacks symbols the wrapper binds.
        raise BackendUnavailable(
            f"amdsmi does not match libamd_smi.so (pin amdsmi to your ROCm version): {exc}"
        ) from None
    except Exception as exc:
        raise BackendUnavailable(f"amdsmi import failed: {type(exc).__name__}: {exc}") from None


# ---------------------------------------------------------------------------------- value helpers


def _num(value: Any) -> int | float | None:
    """A number, or None for "N/A", strings, bools and the all-ones "unsupported" sentinels."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int) and value in _SENTINELS:
        return None
    return value


def _counter(value: Any) -> int | None:
    """A cumulative counter: only "N/A" and UINT64_MAX mean missing (0xFFFF is a valid count)."""
    if isinstance(value, bool) or not isinstance(value, int) or value == _UINT64_MAX:
        return None
    return value if value >= 0 else None


def _int(value: Any) -> int | None:
    number = _num(value)
    return None if number is None else int(number)


def _text(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    value = value.strip()
    return None if not value or value.upper() == "N/A" else value


def _get(mapping: Any, key: str) -> Any:
    return mapping.get(key) if isinstance(mapping, Mapping) else None


def _pct(value: Any) -> float | None:
    number = _num(value)
    return float(number) if number is not None and 0 <= number <= 100 else None


def _pcie_gen(speed: Any) -> int | None:
    """PCIe generation from a transfer rate: MT/s (16000) or, below 100, GT/s (16)."""
    number = _num(speed)
    if number is None or number <= 0:
        return None
    if number >= 1000:
        gts = number / 1000
    elif number < 100:
        gts = float(number)
    else:
        return None
    for rate, gen in _PCIE_GEN_BY_GTS.items():
        if abs(gts - rate) <= rate * 0.05:
            return gen
    return None


def _gfx_target(value: Any) -> str | None:
    """``target_graphics_version`` ("gfx942"), None when unsupported ("gfxffffffffffffffff")."""
    text = _text(value)
    if text is None or not text.lower().startswith("gfx"):
        return None
    digits = text[3:].lower()
    if not digits or set(digits) == {"f"} or set(digits) == {"0"}:
        return None
    return text.lower()


def architecture_from_gfx(gfx: str | None) -> str | None:
    """Architecture family from a gfx target ("gfx942" -> "CDNA3"); None when unknown."""
    if not gfx:
        return None
    if gfx in _ARCH_EXACT:
        return _ARCH_EXACT[gfx]
    for prefix, arch in _ARCH_PREFIX:
        if gfx.startswith(prefix):
            return arch
    return None


def _watts_from_uw(value: Any) -> float | None:
    number = _num(value)
    return None if number is None or number <= 0 else number / 1e6


def _positive(value: Any) -> int | None:
    number = _int(value)
    return number if number is not None and number > 0 else None


def _nonnegative(value: Any) -> int | None:
    number = _int(value)
    return number if number is not None and number >= 0 else None


def _is_hex_id(name: str) -> bool:
    return name.lower().startswith("0x")


def _grown(before: Mapping[str, int | None], after: Mapping[str, int | None]) -> frozenset[str]:
    """Reasons whose residency counter grew between two gpu_metrics reads."""
    reasons = set()
    for key, reason in _RESIDENCY_REASONS:
        old, new = before.get(key), after.get(key)
        if old is not None and new is not None and new > old:
            reasons.add(reason)
    return frozenset(reasons)


def _xgmi_entries(metrics: Any) -> list[tuple[int, Mapping[str, Any]]] | None:
    """(link index, entry) for the XGMI links of an ``amdsmi_get_link_metrics`` answer; None when
    it has no link list. The wrapper always returns 8 entries (unused ones hold stale data), so the
    list is cut to ``num_links``; entries typed PCIe are left out."""
    links = _get(metrics, "links")
    if not isinstance(links, Sequence) or isinstance(links, str):
        return None
    count = _int(_get(metrics, "num_links"))
    if count is not None:
        links = links[: max(count, 0)]
    return [
        (n, link)
        for n, link in enumerate(links)
        if isinstance(link, Mapping) and link.get("link_type") != _LINK_TYPE_PCIE
    ]


def _remote_bdf(value: Any) -> str | None:
    """A link's peer address; the all-zero BDF is what an unset entry holds, so it is None."""
    name = pci_sysfs_name(value)
    if name is None or name == "0000:00:00.0":
        return None
    return _text(value)


def _smu_throttle_reasons(mask: int) -> frozenset[str]:
    return frozenset(reason for bits, reason in _SMU_THROTTLER_BITS if mask & bits)


def _throttle_from_status(metrics: Mapping[str, Any]) -> frozenset[str] | None:
    status = metrics.get("indep_throttle_status")
    if isinstance(status, int) and not isinstance(status, bool) and status != _UINT64_MAX:
        return _smu_throttle_reasons(status)
    flags = [metrics.get(key) for key in ("indep_throttle_status", "throttle_status")]
    flags = [flag for flag in flags if isinstance(flag, bool)]
    if flags and not any(flags):
        return frozenset()
    return None


def pci_sysfs_name(pci_bus_id: str | None) -> str | None:
    """The sysfs name of a PCI device ("0000:03:00.0") from a bus id in any usual spelling:
    NVML's 8-digit domain ("00000000:03:00.0"), upper case, a missing domain, an unpadded function
    ("0000:c1:00.0" from amdsmi). None when it does not parse."""
    text = _text(pci_bus_id)
    if text is None:
        return None
    parts = text.split(":")
    if len(parts) == 2:
        parts.insert(0, "0")
    if len(parts) != 3 or "." not in parts[2]:
        return None
    device, _, function = parts[2].partition(".")
    try:
        domain, bus, dev, fn = (int(v, 16) for v in (parts[0], parts[1], device, function))
    except ValueError:
        return None
    return f"{domain:04x}:{bus:02x}:{dev:02x}.{fn:x}"


def local_cpulist(pci_bus_id: str | None, root: Path | None = None) -> str | None:
    """The CPUs close to a PCI device, in ``taskset`` list form ("0-55,112-167"), read from
    ``/sys/bus/pci/devices/<bdf>/local_cpulist``; None when the file is absent or unreadable (not
    Linux, a container without /sys, an odd bus id). Vendor-neutral: any backend may use it."""
    name = pci_sysfs_name(pci_bus_id)
    if name is None:
        return None
    path = (_SYSFS_PCI_DEVICES if root is None else root) / name / "local_cpulist"
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text or None


# --------------------------------------------------------------------------------------- backend


class AmdSmiBackend(Backend):
    """AMD GPUs through ``amdsmi`` (ROCm's AMD SMI library).

    ``amdsmi`` is the module to use (tests pass a fake); by default ``open()`` imports the real one.
    ``pcie_throughput=True`` adds ``amdsmi_get_gpu_pci_throughput`` to the slow tier; it blocks
    about one second per GPU and is supported only on some GPUs, so it is off by default.
    """

    name = "AMD-SMI"

    def __init__(self, amdsmi: ModuleType | None = None, *, pcie_throughput: bool = False) -> None:
        self._lib: Any = amdsmi
        self._pcie_throughput = pcie_throughput
        self._open = False
        self._node: NodeInfo | None = None
        self._handles: list[Any] = []
        self._status: dict[str, int] = dict(_STATUS_DEFAULTS)
        self._permanent: frozenset[int] = frozenset()
        self._transient: frozenset[int] = frozenset()
        self._gone: frozenset[int] = frozenset()
        self._unsupported: set[tuple[int, str]] = set()
        self._memory_total: dict[int, int | None] = {}
        # per GPU: (accumulation_counter, residency counters, reasons derived at that read)
        self._residency: dict[int, tuple[int, dict[str, int | None], frozenset[str] | None]] = {}
        self._xgmi_prev: dict[int, tuple[float, int, int]] = {}
        # per GPU, per link index: (time, read KB, write KB) of the previous slow read
        self._link_prev: dict[int, dict[int, tuple[float, int, int]]] = {}
        self._proc_prev: dict[tuple[int, int], tuple[float, int]] = {}

    # ------------------------------------------------------------------------------- lifecycle

    def open(self) -> NodeInfo:
        if self._open and self._node is not None:
            return self._node
        if self._lib is None:
            self._lib = import_amdsmi()
        lib = self._lib
        self._load_status_codes()
        try:
            with _quiet():
                flags = getattr(lib, "AmdSmiInitFlags", None)
                if flags is not None and hasattr(flags, "INIT_AMD_GPUS"):
                    lib.amdsmi_init(flags.INIT_AMD_GPUS)
                else:
                    lib.amdsmi_init()
        except Exception as exc:
            raise BackendUnavailable(self._init_error(exc)) from None
        self._open = True
        self._reset_state()
        try:
            with _quiet():
                handles = list(lib.amdsmi_get_processor_handles())
        except Exception as exc:
            self.close()
            raise BackendUnavailable(f"AMD-SMI cannot list GPUs: {self._describe(exc)}") from None
        if not handles:
            self.close()
            raise BackendUnavailable(_NO_GPU)
        self._handles = handles
        gpus = tuple(self._static_info(i) for i in range(len(handles)))
        try:
            topology: Topology | None = self._topology(gpus)
        except Exception:  # a bug here must not stop the dashboard: no topology screen data
            topology = None
        self._node = NodeInfo(
            hostname=socket.gethostname(),
            backend=self.name,
            gpus=gpus,
            driver_version=self._driver_version(),
            runtime_version=self._rocm_version(),
            library_version=self._library_version(),
            topology=topology,
        )
        return self._node

    def close(self) -> None:
        if not self._open:
            return
        self._open = False
        self._handles = []
        with contextlib.suppress(Exception), _quiet():
            self._lib.amdsmi_shut_down()

    # --------------------------------------------------------------------------------- reading

    def read_gpus(self, now: float, *, slow: bool) -> list[GpuSample]:
        samples = []
        for index in range(len(self._handles)):
            try:
                samples.append(self._read_gpu(index, now, slow))
            except _GpuGone as gone:
                self._forget_gpu(index)
                samples.append(GpuSample(index=index, timestamp=now, lost=True, error=str(gone)))
            except Exception as exc:  # a bug here must not take the other GPUs down
                samples.append(GpuSample(index=index, timestamp=now, error=f"AMD-SMI: {exc!r}"))
        return samples

    def read_processes(self, now: float) -> list[ProcessSample]:
        processes: list[ProcessSample] = []
        seen: set[tuple[int, int]] = set()
        listed: set[int] = set()  # GPUs whose list we read: their vanished PIDs are forgotten
        for index in range(len(self._handles)):
            try:
                entries = self._call(index, "process_list", "amdsmi_get_gpu_process_list")
            except _GpuGone:
                listed.add(index)  # a lost GPU has no processes to show
                continue
            except Exception:
                continue
            if isinstance(entries, Sequence) and not isinstance(entries, str):
                listed.add(index)
                with contextlib.suppress(Exception):
                    processes.extend(self._processes_on(index, entries, now, seen))
        for key in [k for k in self._proc_prev if k[0] in listed and k not in seen]:
            del self._proc_prev[key]
        return processes

    # ------------------------------------------------------------------------ the one call path

    def _call(self, index: int, key: str, fn_name: str, *args: Any) -> Any:
        """Call ``fn_name(handle, *args)`` for GPU ``index``; None when the answer is not usable.

        ``key`` names the field for the per-device "unsupported" memory (it includes the
        arguments when one function serves several fields).
        """
        if (index, key) in self._unsupported:
            return None
        fn = getattr(self._lib, fn_name, None)
        if fn is None or any(arg is _MISSING for arg in args):  # an amdsmi without this call/enum
            self._unsupported.add((index, key))
            return None
        try:
            return fn(self._handles[index], *args)
        except Exception as exc:
            return self._failed(index, key, fn_name, exc)

    def _failed(self, index: int, key: str, fn_name: str, exc: Exception) -> None:
        code = self._error_code(exc)
        if code is None:
            # Parameter errors and wrapper bugs (TypeError in some 7.0.2 functions) repeat forever.
            parameter_exc = getattr(self._lib, "AmdSmiParameterException", ())
            if isinstance(exc, (TypeError, AttributeError, ValueError, KeyError, IndexError)) or (
                parameter_exc and isinstance(exc, parameter_exc)
            ):
                self._unsupported.add((index, key))
            return None
        if code in self._transient:
            return None
        if code in self._permanent:
            self._unsupported.add((index, key))
            return None
        if code in self._gone and self._confirm_gone(index, fn_name):
            raise _GpuGone(f"GPU lost: {self._describe(exc)}")
        return None

    def _confirm_gone(self, index: int, failed_fn: str) -> bool:
        """Ask the GPU something simple; a "gone" answer again means it really is gone."""
        lib = self._lib
        handle = self._handles[index]
        try:
            if failed_fn != "amdsmi_get_gpu_activity":
                lib.amdsmi_get_gpu_activity(handle)
            else:
                lib.amdsmi_get_gpu_memory_usage(handle, lib.AmdSmiMemoryType.VRAM)
        except Exception as exc:
            return self._error_code(exc) in self._gone
        return False

    def _error_code(self, exc: BaseException) -> int | None:
        library_exc = getattr(self._lib, "AmdSmiLibraryException", None)
        if library_exc is None or not isinstance(exc, library_exc):
            return None
        retry_exc = getattr(self._lib, "AmdSmiRetryException", None)
        if retry_exc is not None and isinstance(exc, retry_exc):
            return self._status["RETRY"]
        code = getattr(exc, "err_code", None)
        return code if isinstance(code, int) else None

    def _describe(self, exc: BaseException) -> str:
        """One line for an amdsmi error ("AMDSMI_STATUS_NOT_FOUND - Device Not found (31)")."""
        info = getattr(exc, "err_info", None)
        code = getattr(exc, "err_code", None)
        if isinstance(info, str) and info:
            return f"{info} ({code})" if isinstance(code, int) else info
        return " ".join(str(exc).split()) or type(exc).__name__

    def _load_status_codes(self) -> None:
        wrapper = getattr(self._lib, "amdsmi_wrapper", None)
        for name, default in _STATUS_DEFAULTS.items():
            value = getattr(wrapper, f"AMDSMI_STATUS_{name}", default)
            self._status[name] = value if isinstance(value, int) else default
        self._permanent = frozenset(self._status[n] for n in _PERMANENT)
        self._transient = frozenset(self._status[n] for n in _TRANSIENT)
        self._gone = frozenset(self._status[n] for n in _GONE)

    def _init_error(self, exc: Exception) -> str:
        code = self._error_code(exc)
        for status, message in _INIT_MESSAGES.items():
            if code is not None and code == self._status[status]:
                return message
        return f"AMD-SMI init failed: {self._describe(exc)}"

    def _reset_state(self) -> None:
        """Forget everything learnt about the previous session's GPUs (indexes may differ now)."""
        self._unsupported.clear()
        self._memory_total.clear()
        self._residency.clear()
        self._xgmi_prev.clear()
        self._link_prev.clear()
        self._proc_prev.clear()

    def _forget_gpu(self, index: int) -> None:
        """Drop the deltas of a lost GPU so a returning GPU does not report a bogus rate."""
        self._residency.pop(index, None)
        self._xgmi_prev.pop(index, None)
        self._link_prev.pop(index, None)

    def _enum(self, enum_name: str, member: str) -> Any:
        """``amdsmi.<enum_name>.<member>``, or _MISSING when this amdsmi lacks it."""
        return getattr(getattr(self._lib, enum_name, None), member, _MISSING)

    # ----------------------------------------------------------------------------- static tier

    def _static_info(self, index: int) -> GpuInfo:
        try:
            return self._read_static(index)
        except Exception:  # lost during start-up (or a bug): its samples will say what is wrong
            self._memory_total.setdefault(index, None)
            return GpuInfo(index=index, name="AMD GPU", uuid="", vendor="amd")

    def _read_static(self, i: int) -> GpuInfo:
        asic = self._call(i, "asic_info", "amdsmi_get_gpu_asic_info")
        board = self._call(i, "board_info", "amdsmi_get_gpu_board_info")
        market = _text(_get(asic, "market_name"))
        product = _text(_get(board, "product_name"))
        name = market if market and not _is_hex_id(market) else (product or market or "AMD GPU")
        gfx = _gfx_target(_get(asic, "target_graphics_version"))

        memory_total = _positive(
            self._call(
                i,
                "memory_total_vram",
                "amdsmi_get_gpu_memory_total",
                self._enum("AmdSmiMemoryType", "VRAM"),
            )
        )
        if memory_total is None:
            vram_mb = _positive(
                _get(self._call(i, "vram_info", "amdsmi_get_gpu_vram_info"), "vram_size")
            )
            memory_total = vram_mb * _MIB if vram_mb is not None else None
        self._memory_total[i] = memory_total

        cap = self._call(i, "power_cap_info", "amdsmi_get_power_cap_info")
        gfx_clock = self._clock(i, "GFX")
        mem_clock = self._clock(i, "MEM")
        pcie_static = _get(self._call(i, "pcie_info", "amdsmi_get_pcie_info"), "pcie_static")
        pcie_gen = _pcie_gen(_get(pcie_static, "max_pcie_speed"))
        if pcie_gen is None:
            pcie_gen = _positive(_get(pcie_static, "pcie_interface_version"))
        ecc_mask = _int(self._call(i, "ecc_enabled", "amdsmi_get_gpu_ecc_enabled"))
        vbios = self._call(i, "vbios_info", "amdsmi_get_gpu_vbios_info")

        return GpuInfo(
            index=i,
            name=name,
            uuid=_text(self._call(i, "uuid", "amdsmi_get_gpu_device_uuid")) or "",
            vendor="amd",
            pci_bus_id=_text(self._call(i, "bdf", "amdsmi_get_gpu_device_bdf")),
            architecture=architecture_from_gfx(gfx),
            compute_capability=gfx,
            sm_count=_positive(_get(asic, "num_compute_units")),
            memory_total_bytes=memory_total,
            power_default_limit_w=_watts_from_uw(_get(cap, "default_power_cap")),
            power_min_limit_w=_watts_from_uw(_get(cap, "min_power_cap")),
            power_max_limit_w=_watts_from_uw(_get(cap, "max_power_cap")),
            sm_clock_max_mhz=_positive(_get(gfx_clock, "max_clk")),
            memory_clock_max_mhz=_positive(_get(mem_clock, "max_clk")),
            graphics_clock_max_mhz=_positive(_get(gfx_clock, "max_clk")),
            pcie_max_gen=pcie_gen,
            pcie_max_width=_positive(_get(pcie_static, "max_pcie_width")),
            temperature_slowdown_c=self._temperature(i, "HOTSPOT", "CRITICAL", threshold=True),
            temperature_shutdown_c=self._temperature(i, "HOTSPOT", "EMERGENCY", threshold=True),
            mig_enabled=None,
            ecc_enabled=None if ecc_mask is None else bool(ecc_mask & _UMC_BLOCK),
            vbios_version=_text(_get(vbios, "version")) or _text(_get(vbios, "part_number")),
            serial=_text(_get(board, "product_serial")) or _text(_get(asic, "asic_serial")),
        )

    def _driver_version(self) -> str | None:
        for index in range(len(self._handles)):
            with contextlib.suppress(_GpuGone):
                info = self._call(index, "driver_info", "amdsmi_get_gpu_driver_info")
                version = _text(_get(info, "driver_version"))
                if version:
                    return version
        return None

    def _rocm_version(self) -> str | None:
        fn = getattr(self._lib, "amdsmi_get_rocm_version", None)
        try:
            with _quiet():
                result = fn() if fn is not None else None
        except Exception:
            return None
        if isinstance(result, (tuple, list)) and len(result) == 2 and result[0] is True:
            return _text(result[1])
        return None

    def _library_version(self) -> str | None:
        fn = getattr(self._lib, "amdsmi_get_lib_version", None)
        try:
            with _quiet():
                version = fn() if fn is not None else None
        except Exception:
            return None
        # "build" is skipped: the 7.0.2 wrapper returns only its first character.
        parts = [_int(_get(version, key)) for key in ("major", "minor", "release")]
        if any(part is None for part in parts):
            return None
        return ".".join(str(part) for part in parts)

    # ------------------------------------------------------------------------------- topology

    def _topology(self, gpus: Sequence[GpuInfo]) -> Topology:
        """GPU pairs, XGMI links and CPU locality. Whatever the library (or sysfs) cannot say is
        None or left out; nothing here raises."""
        count = len(self._handles)
        numa = [self._numa_node(i) for i in range(count)]
        locality = tuple(
            GpuLocality(
                gpu_index=i,
                cpu_affinity=local_cpulist(gpus[i].pci_bus_id if i < len(gpus) else None),
                numa_node=numa[i],
            )
            for i in range(count)
        )
        paths = tuple(self._path(a, b, numa) for a in range(count) for b in range(a + 1, count))
        local: dict[str, int] = {}
        for info in gpus:
            name = pci_sysfs_name(info.pci_bus_id)
            if name is not None:
                local.setdefault(name, info.index)
        links = tuple(link for i in range(count) for link in self._static_links(i, local))
        return Topology(paths=paths, links=links, locality=locality)

    def _numa_node(self, i: int) -> int | None:
        try:
            node = _int(self._call(i, "numa_node", "amdsmi_topo_get_numa_node_number"))
        except Exception:
            return None
        return node if node is not None and node >= 0 else None

    def _path(self, a: int, b: int, numa: Sequence[int | None]) -> GpuPath:
        # PCIe level: amdsmi names no common PCIe ancestor, so PIX/PXB/PHB/NODE cannot be told
        # apart. Only GPUs on different NUMA nodes are known to cross the inter-node fabric: SYS.
        level = "SYS" if None not in (numa[a], numa[b]) and numa[a] != numa[b] else None
        try:
            peer = self._handles[b]
            kind = self._call(a, f"link_type:{b}", "amdsmi_topo_get_link_type", peer)
            weight = self._call(a, f"link_weight:{b}", "amdsmi_topo_get_link_weight", peer)
            p2p = self._call(a, f"p2p:{b}", "amdsmi_is_P2P_accessible", peer)
        except Exception:  # a GPU lost during start-up: its samples say so
            return GpuPath(a=a, b=b, pcie_level=level)
        link_type = _int(_get(kind, "type"))
        accessible = p2p if isinstance(p2p, bool) else None
        return GpuPath(
            a=a,
            b=b,
            pcie_level=level,
            link_type=_PATH_LINK_TYPES.get(link_type) if link_type is not None else None,
            hops=_nonnegative(_get(kind, "hops")),
            weight=_nonnegative(weight),
            p2p_read=accessible,
            p2p_write=accessible,
        )

    def _static_links(self, i: int, local: Mapping[str, int]) -> list[LinkInfo]:
        """XGMI links of GPU ``i`` from link metrics; the peer is matched to a local GPU by BDF."""
        try:
            entries = _xgmi_entries(self._call(i, "link_metrics", "amdsmi_get_link_metrics"))
        except Exception:
            return []
        result = []
        for n, entry in entries or ():
            remote_bdf = _remote_bdf(entry.get("bdf"))
            remote = local.get(pci_sysfs_name(remote_bdf) or "")
            if remote == i:
                remote = None
            speed = _positive(entry.get("bit_rate"))  # "current link speed in Gb/s" (amdsmi.h)
            result.append(
                LinkInfo(
                    gpu_index=i,
                    link=n,
                    kind="xgmi",
                    version=None,  # amdsmi reports no XGMI version
                    speed_gbps=float(speed) if speed is not None else None,
                    remote_type="gpu" if remote is not None else None,
                    remote_gpu_index=remote,
                    remote_pci_bus_id=remote_bdf,
                )
            )
        return result

    # ------------------------------------------------------------------------------- fast tier

    def _clock(self, i: int, clock: str) -> Any:
        return self._call(
            i, f"clock:{clock}", "amdsmi_get_clock_info", self._enum("AmdSmiClkType", clock)
        )

    def _temperature(
        self, i: int, sensor: str, metric: str, *, threshold: bool = False
    ) -> float | None:
        value = _num(
            self._call(
                i,
                f"temp:{sensor}:{metric}",
                "amdsmi_get_temp_metric",
                self._enum("AmdSmiTemperatureType", sensor),
                self._enum("AmdSmiTemperatureMetric", metric),
            )
        )
        if value is None or (threshold and value <= 0):
            return None
        return float(value)

    def _read_gpu(self, i: int, now: float, slow: bool) -> GpuSample:
        fields: dict[str, Any] = {}

        activity = self._call(i, "activity", "amdsmi_get_gpu_activity")
        fields["utilization_gpu_pct"] = _pct(_get(activity, "gfx_activity"))
        fields["utilization_memory_pct"] = _pct(_get(activity, "umc_activity"))

        fields.update(self._memory(i))

        power = self._call(i, "power_info", "amdsmi_get_power_info")
        # current_socket_power on MI300+, average_socket_power on older GPUs: take the first
        # answered value, preferring a non-zero one (a board may answer 0 for the field it lacks).
        candidates = [
            _num(_get(power, key))
            for key in ("current_socket_power", "average_socket_power", "socket_power")
        ]
        answered = [float(c) for c in candidates if c is not None and c >= 0]
        fields["power_w"] = next((c for c in answered if c > 0), answered[0] if answered else None)
        cap = self._call(i, "power_cap_info", "amdsmi_get_power_cap_info")
        fields["power_limit_w"] = _watts_from_uw(_get(cap, "power_cap"))

        energy = self._call(i, "energy_count", "amdsmi_get_energy_count")
        accumulator = _counter(_get(energy, "energy_accumulator"))
        resolution = _num(_get(energy, "counter_resolution"))
        if accumulator is not None and resolution is not None and resolution > 0:
            fields["energy_j"] = accumulator * resolution / 1e6  # µJ -> J

        edge = self._temperature(i, "EDGE", "CURRENT")
        hotspot = self._temperature(i, "HOTSPOT", "CURRENT")
        # MI300-class GPUs have no EDGE sensor: the junction (hotspot) is their GPU temperature.
        fields["temperature_gpu_c"] = edge if edge is not None else hotspot
        fields["temperature_hotspot_c"] = hotspot
        fields["temperature_memory_c"] = self._temperature(i, "VRAM", "CURRENT")

        fan = _num(self._call(i, "fan_speed:0", "amdsmi_get_gpu_fan_speed", 0))
        if fan is not None and 0 <= fan <= _MAX_FAN_SPEED:
            fields["fan_pct"] = fan * 100.0 / _MAX_FAN_SPEED

        gfx_clock = _nonnegative(_get(self._clock(i, "GFX"), "clk"))
        fields["clock_sm_mhz"] = gfx_clock
        fields["clock_graphics_mhz"] = gfx_clock
        fields["clock_memory_mhz"] = _nonnegative(_get(self._clock(i, "MEM"), "clk"))

        pcie_metric = _get(self._call(i, "pcie_info", "amdsmi_get_pcie_info"), "pcie_metric")
        fields["pcie_gen"] = _pcie_gen(_get(pcie_metric, "pcie_speed"))
        fields["pcie_width"] = _positive(_get(pcie_metric, "pcie_width"))

        metrics = self._call(i, "gpu_metrics", "amdsmi_get_gpu_metrics_info")
        fields["throttle_reasons"] = self._throttle(i, metrics)

        if slow:
            fields.update(self._slow_fields(i, now))
        return GpuSample(index=i, timestamp=now, **fields)

    def _memory(self, i: int) -> dict[str, int | None]:
        total = self._memory_total.get(i)
        used = _counter(
            self._call(
                i,
                "memory_usage_vram",
                "amdsmi_get_gpu_memory_usage",
                self._enum("AmdSmiMemoryType", "VRAM"),
            )
        )
        if used is None:  # MB-granular fallback
            usage = self._call(i, "vram_usage", "amdsmi_get_gpu_vram_usage")
            used_mb = _int(_get(usage, "vram_used"))
            total_mb = _positive(_get(usage, "vram_total"))
            used = used_mb * _MIB if used_mb is not None and used_mb >= 0 else None
            total = total if total is not None else (total_mb * _MIB if total_mb else None)
        if used is None:
            return {"memory_used_bytes": None, "memory_free_bytes": None}
        free = max(total - used, 0) if total is not None else None
        return {"memory_used_bytes": used, "memory_free_bytes": free}

    def _throttle(self, i: int, metrics: Any) -> frozenset[str] | None:
        if not isinstance(metrics, Mapping):
            return None
        acc = _counter(metrics.get("accumulation_counter"))
        current = {key: _counter(metrics.get(key)) for key, _ in _RESIDENCY_REASONS}
        if acc is not None and any(value is not None for value in current.values()):
            previous = self._residency.get(i)
            if previous is not None and acc == previous[0]:
                return previous[2]  # firmware has not sampled since our last tick
            reasons = None
            if previous is not None and acc > previous[0]:
                reasons = _grown(previous[1], current)
            self._residency[i] = (acc, current, reasons)
            if reasons is not None:
                return reasons
        return _throttle_from_status(metrics)

    # ------------------------------------------------------------------------------- slow tier

    def _slow_fields(self, i: int, now: float) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        # AMD keeps one set of RAS counters. The kernel counts them since the driver loaded, but on
        # some ASICs (persistent EDC harvesting) they survive a warm reset, so they are neither
        # NVML's "volatile" nor its lifetime "aggregate" exactly. We report them as aggregate only
        # and leave volatile None rather than claim a reset-on-reload meaning we cannot promise.
        # Deferred errors (poisoned data, handled later) are not added to either count.
        ecc = self._call(i, "ecc_total", "amdsmi_get_gpu_total_ecc_count")
        fields["ecc_aggregate_corrected"] = _counter(_get(ecc, "correctable_count"))
        fields["ecc_aggregate_uncorrected"] = _counter(_get(ecc, "uncorrectable_count"))

        pages = self._call(i, "bad_pages", "amdsmi_get_gpu_bad_page_info")
        if isinstance(pages, Sequence) and not isinstance(pages, str):
            fields["retired_pages_pending"] = any(
                _get(page, "status") == _PAGE_STATUS_PENDING for page in pages
            )

        fields.update(self._xgmi(i, now))

        if self._pcie_throughput:
            # Blocks ~1 s. 'sent'/'received' are packet counts over that second; amd-smi itself
            # multiplies them by max_pkt_sz to get bytes.
            pci = self._call(i, "pci_throughput", "amdsmi_get_gpu_pci_throughput")
            size = _positive(_get(pci, "max_pkt_sz"))
            sent = _counter(_get(pci, "sent"))
            received = _counter(_get(pci, "received"))
            if size is not None and sent is not None and received is not None:
                fields["pcie_tx_bytes_per_s"] = float(sent * size)
                fields["pcie_rx_bytes_per_s"] = float(received * size)
        return fields

    def _xgmi(self, i: int, now: float) -> dict[str, Any]:
        """Aggregate XGMI rates and per-link readings from one link-metrics read (slow tier)."""
        metrics = self._call(i, "link_metrics", "amdsmi_get_link_metrics")
        entries = _xgmi_entries(metrics)
        rx, tx = self._xgmi_rates(i, now, entries)
        status = self._call(i, "xgmi_link_status", "amdsmi_get_gpu_xgmi_link_status")
        pending = any(
            answer is None and (i, key) not in self._unsupported
            for answer, key in ((metrics, "link_metrics"), (status, "xgmi_link_status"))
        )
        return {
            "nvlink_rx_bytes_per_s": rx,
            "nvlink_tx_bytes_per_s": tx,
            "links": self._link_samples(i, now, entries, status, pending),
        }

    def _xgmi_rates(
        self, i: int, now: float, entries: list[tuple[int, Mapping[str, Any]]] | None
    ) -> tuple[float | None, float | None]:
        """XGMI rx/tx bytes/s from the cumulative per-link read/write counters (KB)."""
        read = write = 0
        seen = False
        for _n, link in entries or ():
            r, w = _counter(link.get("read")), _counter(link.get("write"))
            if r is None or w is None:
                continue
            read, write, seen = read + r, write + w, True
        if not seen:
            self._xgmi_prev.pop(i, None)
            return None, None
        previous = self._xgmi_prev.get(i)
        self._xgmi_prev[i] = (now, read, write)
        if previous is None:
            return None, None
        elapsed = now - previous[0]
        if elapsed <= 0 or read < previous[1] or write < previous[2]:
            return None, None  # clock went backwards or a counter reset: wait for the next pair
        return (
            (read - previous[1]) * _XGMI_UNIT_BYTES / elapsed,
            (write - previous[2]) * _XGMI_UNIT_BYTES / elapsed,
        )

    def _link_samples(
        self,
        i: int,
        now: float,
        entries: list[tuple[int, Mapping[str, Any]]] | None,
        status: Any,
        pending: bool,
    ) -> tuple[LinkSample, ...] | None:
        """Per-link state and rates. ``()`` when the GPU has no XGMI links (or amdsmi cannot say,
        for good); None when a call failed only for now (the sampler keeps the last reading)."""
        letters = _get(status, "status")
        if not isinstance(letters, Sequence) or isinstance(letters, str):
            letters = None
        else:
            total = _int(_get(status, "total_links"))
            letters = list(letters[: max(total, 0)] if total is not None else letters)
        if entries is None:
            self._link_prev.pop(i, None)
        if not entries and not letters:
            return None if pending else ()
        by_index = dict(entries or ())
        indexes = sorted(by_index) if by_index else range(len(letters or ()))
        previous = self._link_prev.get(i, {})
        current: dict[int, tuple[float, int, int]] = {}
        samples = []
        for n in indexes:
            entry = by_index.get(n)
            read, write = _counter(_get(entry, "read")), _counter(_get(entry, "write"))
            rx = tx = None
            if read is not None and write is not None:
                current[n] = (now, read, write)
                before = previous.get(n)
                elapsed = now - before[0] if before is not None else 0.0
                if before is not None and elapsed > 0 and read >= before[1] and write >= before[2]:
                    # read = data received by this GPU over the link, write = data sent (amdsmi.h)
                    rx = (read - before[1]) * _XGMI_UNIT_BYTES / elapsed
                    tx = (write - before[2]) * _XGMI_UNIT_BYTES / elapsed
            letter = letters[n] if letters is not None and n < len(letters) else None
            samples.append(
                # amdsmi has no per-link error counters (replay / recovery / CRC): they stay None.
                LinkSample(
                    link=n,
                    up=_LINK_UP.get(letter) if isinstance(letter, str) else None,
                    rx_bytes_per_s=rx,
                    tx_bytes_per_s=tx,
                )
            )
        if entries is not None:
            self._link_prev[i] = current
        return tuple(samples)

    # ------------------------------------------------------------------------------- processes

    def _processes_on(
        self, index: int, entries: Sequence[Any], now: float, seen: set[tuple[int, int]]
    ) -> list[ProcessSample]:
        result = []
        for entry in entries:
            if not isinstance(entry, Mapping):
                continue  # ROCm < 6.1.2 returned handles instead of dicts: not supported
            pid = _int(entry.get("pid"))
            if pid is None or pid <= 0 or (index, pid) in seen:
                continue
            seen.add((index, pid))
            memory = _counter(_get(entry.get("memory_usage"), "vram_mem"))
            if memory is None:
                memory = _counter(entry.get("mem"))
            result.append(
                ProcessSample(
                    pid=pid,
                    gpu_index=index,
                    type="compute",
                    gpu_memory_bytes=memory,
                    sm_pct=self._gfx_pct(index, pid, _get(entry.get("engine_usage"), "gfx"), now),
                    name=_text(entry.get("name")),
                )
            )
        return result

    def _gfx_pct(self, index: int, pid: int, gfx_ns: Any, now: float) -> float | None:
        """GFX busy % from the cumulative engine time (ns) between two reads of one process."""
        busy = _counter(gfx_ns)
        key = (index, pid)
        if busy is None:
            self._proc_prev.pop(key, None)
            return None
        previous = self._proc_prev.get(key)
        self._proc_prev[key] = (now, busy)
        if previous is None:
            return None
        elapsed_ns = (now - previous[0]) * 1e9
        if elapsed_ns <= 0 or busy < previous[1]:
            return None
        return min(max((busy - previous[1]) / elapsed_ns * 100.0, 0.0), 100.0)


__all__ = [
    "AmdSmiBackend",
    "architecture_from_gfx",
    "import_amdsmi",
    "local_cpulist",
    "pci_sysfs_name",
]
