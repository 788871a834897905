"""When an XID read from the kernel log no longer counts.

The kernel log keeps XIDs from boot to reboot, so without aging a GPU that was fixed stays failed
until the node reboots. An XID the kernel logged (source ``kernel_log``) is history when, after
it, the NVIDIA driver loaded again (every GPU initialised afresh) or its GPU was found on the PCI
bus again (removed and rescanned), or when it is older than ``HealthConfig.xid_window_hours``.
A GPU reset in place (``nvidia-smi -r``) leaves no line in the kernel log, so only the window
ages the XIDs before one. XIDs the driver delivers live (NVML events, source ``driver``) and
simulated ones are never history.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gputui.core.format import fmt_datetime
from gputui.core.model import GpuEvent
from gputui.core.xid import DRIVER_LOADED, KERNEL_LOG_MARKERS
from gputui.health.rules.context import RuleContext

HISTORY_HINT = (
    "nothing to do unless it happens again (gputui check --xid-window sets how long an XID from "
    "the kernel log counts)"
)


def markers(events: Iterable[GpuEvent]) -> list[GpuEvent]:
    """The kernel log's driver loads and GPU re-enumerations among ``events``, oldest first."""
    return sorted((e for e in events if e.kind in KERNEL_LOG_MARKERS), key=lambda e: e.timestamp)


def history_reason(event: GpuEvent, marks: Sequence[GpuEvent], ctx: RuleContext) -> str | None:
    """Why ``event`` (an XID) no longer counts, or None when it does. ``marks``: the
    :func:`markers` of the events judged."""
    if event.source != "kernel_log":
        return None
    for marker in marks:
        if marker.timestamp <= event.timestamp:
            continue
        when = fmt_datetime(marker.timestamp)
        if marker.kind == DRIVER_LOADED:
            return f"the NVIDIA driver was loaded again at {when}"
        if event.gpu_index is not None and marker.gpu_index == event.gpu_index:
            return f"the GPU was found on the PCI bus again at {when}"
    window = ctx.config.xid_window_hours
    if window is not None and ctx.now - event.timestamp > window * 3600:
        return f"older than the {window:g} h window"
    return None


__all__ = ["HISTORY_HINT", "history_reason", "markers"]
