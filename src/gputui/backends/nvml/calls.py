"""The one place that talks to NVML for a device, and the per-GPU state the adapter keeps.

Every per-device call goes through :meth:`NvmlCalls.query`: an answer of "not supported" (or a
symbol the driver or binding lacks) becomes ``None`` and is remembered per GPU, so that call is
never made again; ``GpuIsLost`` raises :class:`GpuLost`, which marks that GPU lost while the
other GPUs carry on. An error that means the library or driver is not answering
(``DriverNotLoaded``, ``Uninitialized``, ``LibRmVersionMismatch``, ``Unknown`` ...) is ``None``
too, never remembered, and noted on the GPU (:attr:`NvmlGpu.driver_error`) so the reading can
say so (:meth:`NvmlGpu.failed_reading`); it is asked again on the next read.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gputui.backends.common import CounterRates, UnsupportedCalls
from gputui.backends.nvml.slowdown import SlowdownTracker
from gputui.core.model import GpuInfo, MigDeviceInfo

LOST_MESSAGE = "GPU is lost (fell off the bus)"
ERROR_PREFIX = "NVML: "
"""What a GPU sample's ``error`` starts with when NVML stopped answering for it."""

# Errors that mean the library or the kernel driver is not answering (rather than "this GPU
# cannot do that"), with the words a user sees. Those marked ``True`` can also come from one
# odd call on a working GPU, so they count only when no call of the reading answered.
_DRIVER_ERRORS: dict[str, tuple[str, bool]] = {
    "NVMLError_DriverNotLoaded": ("NVIDIA driver not loaded", False),
    "NVMLError_Uninitialized": ("library not initialized", False),
    "NVMLError_LibRmVersionMismatch": (
        "library and kernel driver versions differ (driver updated but not reloaded)",
        False,
    ),
    "NVMLError_LibraryNotFound": ("libnvidia-ml.so.1 not found", False),
    "NVMLError_Unknown": ("unknown error", True),
    "NVMLError_IrqIssue": ("interrupt problem talking to the GPU", True),
    "NVMLError_OperatingSystem": ("the operating system blocked the request", True),
    "NVMLError_ResetRequired": ("the GPU needs a reset", True),
}


class GpuLost(Exception):
    """Raised inside the adapter when a call says the GPU is lost."""


@dataclass
class MigSlice:
    handle: Any
    info: MigDeviceInfo
    key: str  # prefix of this slice's call keys ("mig3/")


@dataclass
class NvmlGpu:
    """Per-GPU state: the cached handle, MIG slices, counter baselines, link ids."""

    index: int
    handle: Any = None
    info: GpuInfo | None = None
    lost: bool = False
    error: str | None = None
    denied: bool = False  # the handle lookup answered NO_PERMISSION: not this user's to read
    migs: list[MigSlice] = field(default_factory=list)
    rates: CounterRates[str] = field(default_factory=CounterRates)
    util_seen_us: dict[str, int] = field(default_factory=dict)
    slowdowns: SlowdownTracker = field(default_factory=SlowdownTracker)
    nvlinks: tuple[int, ...] = ()  # link ids found at open; read again in every slow tier
    # Links with a remote end at discovery, and links seen active while gputui watched: an
    # inactive link is "down" only if it is one of these (see links.link_samples).
    links_with_remote: frozenset[int] = frozenset()
    links_seen_up: set[int] = field(default_factory=set)
    # Per-link NVLink error counters as last read, and the totals over the links they match.
    link_errors: dict[int, dict[int, int | None]] = field(default_factory=dict)
    link_error_totals: tuple[int | float | None, ...] | None = None
    # The current reading (see begin_reading): calls answered, and the last "library or driver
    # not answering" error with whether it alone is proof (False: only if nothing answered).
    answered: int = 0
    driver_error: str | None = None
    driver_error_certain: bool = False
    # Call key -> NVML's words for each call that failed with an error (not "not supported")
    # since begin_reading; and why the process list failed at its last read (None: it answered).
    failures: dict[str, str] = field(default_factory=dict)
    process_error: str | None = None

    def mark_lost(self, message: str = LOST_MESSAGE) -> None:
        self.lost = True
        self.error = message

    def begin_reading(self) -> None:
        """Start counting the answers of a new reading."""
        self.answered = 0
        self.driver_error = None
        self.driver_error_certain = False
        self.failures = {}

    def failed_reading(self) -> str | None:
        """The sample error of the reading since :meth:`begin_reading` when NVML was not
        answering for this GPU (``"NVML: NVIDIA driver not loaded"``), else None."""
        if self.driver_error is None:
            return None
        if self.driver_error_certain or self.answered == 0:
            return ERROR_PREFIX + self.driver_error
        return None


class NvmlCalls:
    """Per-device calls into one initialised NVML, with the memory of unsupported calls."""

    def __init__(self, nvml: Any) -> None:
        self.nvml = nvml
        self.unsupported = UnsupportedCalls()
        self._unsupported_errors: tuple[type[BaseException], ...] = (
            *error_classes(
                nvml,
                "NVMLError_NotSupported",
                "NVMLError_FunctionNotFound",
                "NVMLError_NoPermission",
                "NVMLError_InvalidArgument",
                # A versioned struct the driver does not know (a binding newer than the driver):
                # no answer will ever come for this version, as with a missing call.
                "NVMLError_ArgumentVersionMismatch",
                # CUDA 13.1+ drivers answer DEPRECATED for removed calls (NVML's deprecation
                # notices): fall back as for a missing one.
                "NVMLError_Deprecated",
                "NVMLLibraryMismatchError",
            ),
            ctypes.ArgumentError,  # argument types the driver's symbol does not take
        )
        self.lost_errors = error_classes(nvml, "NVMLError_GpuIsLost")
        self._driver_errors: tuple[tuple[type[BaseException], str, bool], ...] = tuple(
            (cls, words, needs_silence)
            for name, (words, needs_silence) in _DRIVER_ERRORS.items()
            for cls in error_classes(nvml, name)
        )
        self._driver_error_classes = tuple(cls for cls, _, _ in self._driver_errors)

    def query(self, gpu: NvmlGpu, key: str, fn: str | Callable[..., Any] | None, *args: Any) -> Any:
        """``fn(*args)`` for ``gpu`` (``fn`` a pynvml name or a callable), or None.

        "Not supported" (also a symbol missing from driver or binding, no permission, invalid
        argument) is remembered under ``key`` and never asked again; "the library or driver is
        not answering" is noted on ``gpu`` (never remembered: asked again next time); other
        NVML errors are taken as transient; a lost GPU raises :class:`GpuLost`. Both kinds of
        error are kept in ``gpu.failures`` under ``key`` with NVML's words."""
        if self.unsupported.has(gpu.index, key):
            return None
        call = getattr(self.nvml, fn, None) if isinstance(fn, str) else fn
        if call is None:
            self.unsupported.add(gpu.index, key)
            return None
        try:
            result = call(*args)
        except self.lost_errors:
            raise GpuLost from None
        except self._unsupported_errors:
            self.unsupported.add(gpu.index, key)
            return None
        except self._driver_error_classes as exc:
            self._note_driver_error(gpu, exc)
            gpu.failures.setdefault(key, str(exc))
            return None
        except self.nvml.NVMLError as exc:
            gpu.failures.setdefault(key, str(exc))
            return None
        gpu.answered += 1
        return result

    def _note_driver_error(self, gpu: NvmlGpu, exc: BaseException) -> None:
        for cls, words, needs_silence in self._driver_errors:
            if isinstance(exc, cls):
                if not (gpu.driver_error_certain and needs_silence):  # keep the telling one
                    gpu.driver_error = words
                gpu.driver_error_certain = gpu.driver_error_certain or not needs_silence
                return

    def first(
        self,
        gpu: NvmlGpu,
        key: str,
        calls: Sequence[str | tuple[str, Callable[..., Any]]],
        *args: Any,
    ) -> Any:
        """The first of ``calls`` (newest first) the driver supports; the rest are fallbacks.
        A call is a pynvml name, or (name, callable) where the name keys it."""
        for call in calls:
            name, fn = call if isinstance(call, tuple) else (call, call)
            value = self.query(gpu, f"{key}:{name}", fn, *args)
            if not self.is_unsupported(gpu, f"{key}:{name}"):
                return value
        return None

    def is_unsupported(self, gpu: NvmlGpu, key: str) -> bool:
        return self.unsupported.has(gpu.index, key)

    def mark_unsupported(self, gpu: NvmlGpu, key: str) -> None:
        self.unsupported.add(gpu.index, key)

    def system(self, name: str) -> Any:
        """A system-wide call (driver version ...), or None when missing or failing."""
        fn = getattr(self.nvml, name, None)
        if fn is None:
            return None
        try:
            return fn()
        except self.nvml.NVMLError:
            return None


def error_classes(nvml: Any, *names: str) -> tuple[type[BaseException], ...]:
    """The binding's exception classes of these names (the ones it has)."""
    found: list[type[BaseException]] = []
    for name in names:
        cls = getattr(nvml, name, None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            found.append(cls)
    return tuple(found)


def init_reason(nvml: Any, exc: BaseException) -> str:
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
