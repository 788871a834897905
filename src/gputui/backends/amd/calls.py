"""The one place that calls amdsmi for a GPU.

:meth:`AmdCalls.call` turns "N/A" answers and errors into ``None``: NOT_SUPPORTED (and other
errors that cannot change while we run) is remembered per (GPU, call) and never asked again;
RETRY/BUSY is ``None`` for this tick only; an error meaning the GPU is gone (NOT_FOUND, IO, ...)
is confirmed with a second call and then raises :class:`GpuGone`, which turns that GPU's sample
into ``lost=True`` while the other GPUs carry on. An error meaning the library or the amdgpu
driver is not answering (DRIVER_NOT_LOADED, NOT_INIT, UNKNOWN_ERROR ...) is ``None`` too, never
remembered, and noted for the GPU's current reading (:meth:`AmdCalls.failed_reading`), which then
carries the error instead of its values; the next reading asks everything again. Any error other
than "not supported" is kept for the call until it is asked again (:meth:`AmdCalls.failure`), so a
reading can say which of its values failed (``GpuSample.unanswered``). A secondary
compute partition is never asked a :data:`DEVICE_WIDE` reading (see :mod:`.partition`): its
answer is None.
"""

from __future__ import annotations

from typing import Any

from gputui.backends.common import UnsupportedCalls

# amdsmi_wrapper.AMDSMI_STATUS_* values (C ABI, stable); read from the module when it has them.
_STATUS_DEFAULTS: dict[str, int] = {
    "NOT_SUPPORTED": 2,
    "NOT_YET_IMPLEMENTED": 3,
    "FAIL_LOAD_MODULE": 4,
    "FAIL_LOAD_SYMBOL": 5,
    "DRM_ERROR": 6,
    "TIMEOUT": 8,
    "RETRY": 9,
    "NO_PERM": 10,
    "INTERRUPT": 11,
    "IO": 12,
    "INIT_ERROR": 18,
    "BUSY": 30,
    "NOT_FOUND": 31,
    "NOT_INIT": 32,
    "DRIVER_NOT_LOADED": 34,
    "AMDGPU_RESTART_ERR": 54,
    "UNKNOWN_ERROR": 0xFFFFFFFF,
}
# Errors that cannot go away while we run: remembered per (GPU, call), never asked again.
# NO_PERM is here too: group membership (render/video) does not change inside a running process.
_PERMANENT = ("NOT_SUPPORTED", "NOT_YET_IMPLEMENTED", "FAIL_LOAD_SYMBOL", "NO_PERM")
# Busy or interrupted: None this tick, asked again next tick.
_TRANSIENT = ("RETRY", "BUSY", "TIMEOUT", "INTERRUPT")
# The GPU has gone away (no such device any more, I/O to it fails); confirmed with a second call
# before the GPU is marked lost.
_GONE = ("NOT_FOUND", "DRM_ERROR", "IO")
# The library or the amdgpu driver is not answering: the GPU's reading says so (not "lost").
# Status -> (words, whether one such answer is proof; if not, it counts only when no call of the
# reading answered, as it can also come from one odd call).
_DRIVER = {
    "DRIVER_NOT_LOADED": ("amdgpu driver not loaded", True),
    "NOT_INIT": ("library not initialized", True),
    "FAIL_LOAD_MODULE": ("cannot load the library", True),
    "INIT_ERROR": ("initialization error", False),
    "AMDGPU_RESTART_ERR": ("amdgpu driver restart failed (see dmesg)", False),
    "UNKNOWN_ERROR": ("unknown error", False),
}
ERROR_PREFIX = "AMD-SMI: "
"""What a GPU sample's ``error`` starts with when AMD-SMI stopped answering for it."""
# Errors that are bugs in how a call was made (or in the wrapper): they repeat forever.
_PARAMETER_ERRORS = (TypeError, AttributeError, ValueError, KeyError, IndexError)

_INIT_MESSAGES = {
    "DRIVER_NOT_LOADED": "amdgpu driver not loaded",
    "NO_PERM": "no permission (add the user to the render and video groups)",
}

DEVICE_WIDE = frozenset(
    {
        "amdsmi_get_power_info",
        "amdsmi_get_power_cap_info",
        "amdsmi_get_energy_count",
        "amdsmi_get_temp_metric",
        "amdsmi_get_gpu_fan_speed",
        "amdsmi_get_gpu_metrics_info",
        "amdsmi_get_pcie_info",
        "amdsmi_get_gpu_pci_throughput",
        "amdsmi_get_gpu_total_ecc_count",
        "amdsmi_get_gpu_bad_page_info",
        "amdsmi_get_link_metrics",
        "amdsmi_get_gpu_xgmi_link_status",
        "amdsmi_get_xgmi_info",
        "amdsmi_get_gpu_compute_partition",
        "amdsmi_get_gpu_memory_partition",
    }
)
"""Readings of the whole physical GPU, which only the primary compute partition reports (AMD SMI's
"GPU partitioning" guide: socket power and the rest of ``gpu_metrics``, the partition modes; the
PCIe device, its RAS counters and XGMI links belong to the primary). A secondary partition answers
N/A or NOT_SUPPORTED, or (before ROCm 6.4.1) the primary's values, which would count one GPU's
power, errors and links once per partition: it is not asked."""

PARTITION_READINGS = frozenset(
    {
        "amdsmi_get_gpu_activity",
        "amdsmi_get_clock_info",
        "amdsmi_get_gpu_memory_usage",
        "amdsmi_get_gpu_memory_total",
        "amdsmi_get_gpu_vram_usage",
        "amdsmi_get_gpu_vram_info",
    }
)
"""Readings a secondary partition reports of its own since ROCm 6.4.1 (partition metrics, its
VRAM), and before that copied from the primary's DRM node like everything else."""

MISSING = object()
"""What :meth:`AmdCalls.enum` gives for an enum member this amdsmi lacks."""


class GpuGone(Exception):
    """The GPU stopped answering in a way that means it is gone."""


class AmdCalls:
    """Per-GPU calls into one amdsmi module, with the memory of unsupported calls.

    ``handles`` holds the processor handles once the library lists them; GPU ``i`` is
    ``handles[i]``.
    """

    def __init__(self, lib: Any) -> None:
        self.lib = lib
        self.handles: list[Any] = []
        self.refused: dict[int, frozenset[str]] = {}
        """Per GPU, functions it is not asked because their answers are not its own (a secondary
        compute partition's :data:`DEVICE_WIDE` readings); None is its answer."""
        self.unsupported = UnsupportedCalls()
        wrapper = getattr(lib, "amdsmi_wrapper", None)
        self._status: dict[str, int] = {}
        for name, default in _STATUS_DEFAULTS.items():
            value = getattr(wrapper, f"AMDSMI_STATUS_{name}", default)
            self._status[name] = value if isinstance(value, int) else default
        self._permanent = frozenset(self._status[n] for n in _PERMANENT)
        self._transient = frozenset(self._status[n] for n in _TRANSIENT)
        self._gone = frozenset(self._status[n] for n in _GONE)
        self._driver = {self._status[n]: words for n, words in _DRIVER.items()}
        # Per GPU, the current reading: calls answered, and the "not answering" error noted.
        self._answered: dict[int, int] = {}
        self._driver_error: dict[int, tuple[str, bool]] = {}
        # Per GPU, the calls whose last answer was an error (not "not supported"): key -> words.
        self._failures: dict[int, dict[str, str]] = {}

    def call(self, index: int, key: str, fn_name: str, *args: Any) -> Any:
        """Call ``fn_name(handle, *args)`` for GPU ``index``; None when the answer is not usable.

        ``key`` names the reading for the memory of unsupported calls (it includes the
        arguments when one function serves several readings).
        """
        if self.unsupported.has(index, key):
            return None
        fn = getattr(self.lib, fn_name, None)
        if fn is None or any(arg is MISSING for arg in args) or self._not_its_own(index, fn_name):
            # An amdsmi without this call or enum, or a reading that belongs to the primary.
            self.unsupported.add(index, key)
            return None
        failures = self._failures.setdefault(index, {})
        failures.pop(key, None)
        try:
            result = fn(self.handles[index], *args)
        except Exception as exc:
            if not self._failed(index, key, fn_name, exc):
                failures[key] = self.describe(exc)
            return None
        self._answered[index] = self._answered.get(index, 0) + 1
        return result

    def failure(self, index: int, key: str) -> str | None:
        """Why the last call under ``key`` failed with an error (not "not supported"), or None
        when it answered (or was not asked)."""
        return self._failures.get(index, {}).get(key)

    def _not_its_own(self, index: int, fn_name: str) -> bool:
        refused = self.refused.get(index)
        return refused is not None and fn_name in refused

    def begin_reading(self, index: int) -> None:
        """Start counting the answers of a new reading of GPU ``index``."""
        self._answered[index] = 0
        self._driver_error.pop(index, None)
        self._failures.pop(index, None)

    def failed_reading(self, index: int) -> str | None:
        """The sample error of GPU ``index``'s reading since :meth:`begin_reading` when AMD-SMI
        was not answering for it (``"AMD-SMI: amdgpu driver not loaded"``), else None."""
        noted = self._driver_error.get(index)
        if noted is None:
            return None
        words, certain = noted
        if certain or self._answered.get(index, 0) == 0:
            return ERROR_PREFIX + words
        return None

    def is_unsupported(self, index: int, key: str) -> bool:
        return self.unsupported.has(index, key)

    def enum(self, enum_name: str, member: str) -> Any:
        """``amdsmi.<enum_name>.<member>``, or :data:`MISSING` when this amdsmi lacks it."""
        return getattr(getattr(self.lib, enum_name, None), member, MISSING)

    def describe(self, exc: BaseException) -> str:
        """One line for an amdsmi error ("AMDSMI_STATUS_NOT_FOUND - Device Not found (31)")."""
        info = getattr(exc, "err_info", None)
        code = getattr(exc, "err_code", None)
        if isinstance(info, str) and info:
            return f"{info} ({code})" if isinstance(code, int) else info
        return " ".join(str(exc).split()) or type(exc).__name__

    def init_error(self, exc: Exception) -> str:
        """One line for the user from an error raised by ``amdsmi_init``."""
        code = self._error_code(exc)
        for status, message in _INIT_MESSAGES.items():
            if code is not None and code == self._status[status]:
                return message
        return f"AMD-SMI init failed: {self.describe(exc)}"

    def _failed(self, index: int, key: str, fn_name: str, exc: Exception) -> bool:
        """Sort out a call's error; True when it means "not supported" (remembered)."""
        code = self._error_code(exc)
        if code is None:
            parameter_exc = getattr(self.lib, "AmdSmiParameterException", ())
            # Parameter errors and wrapper bugs (TypeError in some 7.0.2 functions) repeat forever.
            if isinstance(exc, _PARAMETER_ERRORS) or (
                parameter_exc and isinstance(exc, parameter_exc)
            ):
                self.unsupported.add(index, key)
                return True
            return False
        if code in self._transient:
            return False
        if code in self._permanent:
            self.unsupported.add(index, key)
            return True
        if code in self._driver:
            words, certain = self._driver[code]
            noted = self._driver_error.get(index)
            if noted is None or not noted[1]:  # a telling error is kept over a vague one
                self._driver_error[index] = (words, certain)
            return False
        if code in self._gone and self._confirm_gone(index, fn_name):
            raise GpuGone(f"GPU lost: {self.describe(exc)}")
        return False

    def _confirm_gone(self, index: int, failed_fn: str) -> bool:
        """Ask the GPU something simple; a "gone" answer again means it really is gone."""
        lib = self.lib
        handle = self.handles[index]
        try:
            if failed_fn != "amdsmi_get_gpu_activity":
                lib.amdsmi_get_gpu_activity(handle)
            else:
                lib.amdsmi_get_gpu_memory_usage(handle, lib.AmdSmiMemoryType.VRAM)
        except Exception as exc:
            return self._error_code(exc) in self._gone
        return False

    def _error_code(self, exc: BaseException) -> int | None:
        library_exc = getattr(self.lib, "AmdSmiLibraryException", None)
        if library_exc is None or not isinstance(exc, library_exc):
            return None
        retry_exc = getattr(self.lib, "AmdSmiRetryException", None)
        if retry_exc is not None and isinstance(exc, retry_exc):
            return self._status["RETRY"]
        code = getattr(exc, "err_code", None)
        return code if isinstance(code, int) else None
