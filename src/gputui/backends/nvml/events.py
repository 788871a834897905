"""Driver events: XID critical errors and double-bit ECC errors.

They arrive on one daemon thread that waits on an NVML event set (:class:`EventWatcher`) and
queues :class:`~gputui.core.model.GpuEvent` objects; the backend's ``read_events`` drains that queue
without blocking, and ``close`` stops the thread before freeing the set. A driver or binding
without the event API means no thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import queue
import threading
import time
from collections.abc import Sequence
from typing import Any

from gputui.backends.nvml.calls import NvmlGpu, error_classes
from gputui.backends.nvml.values import text
from gputui.core.model import GpuEvent

log = logging.getLogger(__name__)

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

_EVENT_API = (
    "nvmlEventSetCreate",
    "nvmlDeviceGetSupportedEventTypes",
    "nvmlDeviceRegisterEvents",
    "nvmlEventSetWait",
    "nvmlEventSetFree",
)


def start_event_watcher(nvml: Any, gpus: Sequence[NvmlGpu], wait_ms: int) -> EventWatcher | None:
    """One event set with every usable GPU registered, watched by one thread; or None (and
    one log line) when the driver, the binding or the permissions do not allow it."""
    if any(getattr(nvml, name, None) is None for name in _EVENT_API):
        log.info("NVML events unavailable: the binding lacks the event API")
        return None
    try:
        event_set = nvml.nvmlEventSetCreate()
    except Exception as exc:
        log.info("NVML events unavailable: %s", exc)
        return None
    registered: list[NvmlGpu] = []
    reasons: list[str] = []
    for gpu in gpus:
        if gpu.lost or gpu.handle is None:
            continue
        try:
            mask = WATCHED_EVENTS & int(nvml.nvmlDeviceGetSupportedEventTypes(gpu.handle))
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
    watcher = EventWatcher(nvml, event_set, registered, wait_ms)
    watcher.start()
    return watcher


class EventWatcher:
    """One daemon thread looping on ``nvmlEventSetWait`` for one event set, turning each event
    into a :class:`GpuEvent` on a queue that :meth:`drain` empties without blocking."""

    def __init__(self, nvml: Any, event_set: Any, gpus: Sequence[NvmlGpu], wait_ms: int) -> None:
        self._nvml = nvml
        self.event_set = event_set
        self._wait_ms = wait_ms
        self._queue: queue.SimpleQueue[GpuEvent] = queue.SimpleQueue()
        self._stop = threading.Event()
        # Handles are new objects per lookup: match an event's device by its pointer value (real
        # binding) or, failing that, by its UUID.
        self._by_address: dict[int, int | None] = {
            address: gpu.index
            for gpu in gpus
            if (address := handle_address(gpu.handle)) is not None
        }
        self._by_uuid = {gpu.info.uuid: gpu.index for gpu in gpus if gpu.info and gpu.info.uuid}
        self._timeout_errors = error_classes(nvml, "NVMLError_Timeout")
        # The set or the library is gone: nothing will ever arrive again.
        self._fatal_errors = error_classes(
            nvml, "NVMLError_Uninitialized", "NVMLError_InvalidArgument"
        )
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

    def close(self, timeout: float) -> bool:
        """Stop the thread, then free the event set; True when it stopped. A thread still inside
        ``nvmlEventSetWait`` (a driver that does not honour the wait's timeout) keeps its set:
        freeing it, or shutting NVML down, under the waiter is a use-after-free (nvitop guards
        the same), so the caller must then leave the library initialised."""
        self._stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout)
        if self.thread.is_alive():
            log.warning("NVML event thread did not stop; not freeing its event set")
            return False
        with contextlib.suppress(Exception):
            self._nvml.nvmlEventSetFree(self.event_set)
        return True

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
        address = handle_address(device)
        if address is not None and address in self._by_address:
            return self._by_address[address]
        try:
            index = self._by_uuid.get(text(self._nvml.nvmlDeviceGetUUID(device)))
        except Exception:
            index = None
        if address is not None:
            self._by_address[address] = index
        return index


def handle_address(handle: Any) -> int | None:
    """The pointer value of a ctypes device handle (None for NULL or a non-ctypes object)."""
    try:
        return ctypes.cast(handle, ctypes.c_void_p).value
    except (ctypes.ArgumentError, TypeError):
        return None
