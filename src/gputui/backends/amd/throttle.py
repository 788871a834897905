"""Throttle reasons from ``amdsmi_get_gpu_metrics_info``, as canonical names from
:data:`gputui.core.model.THROTTLE_REASONS`.

1. MI300-class GPUs publish residency accumulators in gpu_metrics (the same counters
   amdsmi_get_violation_status turns into its active_* flags; that call sleeps 100 ms per GPU,
   too slow for the fast tier, so we take the deltas between our own ticks instead). A counter
   that grew since the last tick means the limit was active:
     ppt (package power tracking, "PVIOL")     -> sw_power_cap
     socket thermal ("TVIOL"), HBM thermal     -> sw_thermal  (firmware holds a temperature limit)
     VR thermal (voltage regulator hot)        -> hw_thermal  (a hardware VRHOT signal)
     PROCHOT (external "processor hot" signal) -> hw_slowdown
2. Otherwise gpu_metrics' indep_throttle_status: a bitmask of the kernel's SMU_THROTTLER_* bits
   in amdsmi 6.x, only a bool in 7.x. Bits (kgd_pp_interface.h):
     0-23  power (PPT0-3, SPL, FPPT, SPPT) and current (TDC, EDC, APCC) limits -> sw_power_cap
     32-43 temperature limits (GPU, core, mem, edge, hotspot, SoC, VR, liquid)  -> sw_thermal
     44-45 VRHOT -> hw_thermal;  46-47 PROCHOT -> hw_slowdown
     56 PPM (platform power management) -> sw_power_cap;  57 FIT (reliability) -> reliability
   A bare bool False means "nothing"; True names no reason we could map, so it gives None.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gputui.backends.amd.values import UINT64_MAX, counter
from gputui.core.frozen import frozen

_RESIDENCY_REASONS = (
    ("ppt_residency_acc", "sw_power_cap"),
    ("socket_thm_residency_acc", "sw_thermal"),
    ("hbm_thm_residency_acc", "sw_thermal"),
    ("vr_thm_residency_acc", "hw_thermal"),
    ("prochot_residency_acc", "hw_slowdown"),
)
_SMU_THROTTLER_BITS = (
    ((1 << 24) - 1, "sw_power_cap"),
    (((1 << 44) - 1) ^ ((1 << 32) - 1), "sw_thermal"),
    (0b11 << 44, "hw_thermal"),
    (0b11 << 46, "hw_slowdown"),
    (1 << 56, "sw_power_cap"),
    (1 << 57, "reliability"),
)


@frozen(slots=False)
class _Residency:
    """One gpu_metrics read: the firmware's sample counter, the residency counters, and the
    reasons derived at that read (None when there was nothing to compare with)."""

    accumulation: int
    counters: dict[str, int | None]
    reasons: frozenset[str] | None


class ThrottleTracker:
    """Throttle reasons per GPU; remembers each GPU's last residency counters."""

    def __init__(self) -> None:
        self._last: dict[int, _Residency] = {}

    def reasons(self, index: int, metrics: Any) -> frozenset[str] | None:
        """The reasons GPU ``index`` was throttled since the last call; None when unknown."""
        if not isinstance(metrics, Mapping):
            return None
        acc = counter(metrics.get("accumulation_counter"))
        current = {key: counter(metrics.get(key)) for key, _ in _RESIDENCY_REASONS}
        if acc is not None and any(value is not None for value in current.values()):
            previous = self._last.get(index)
            if previous is not None and acc == previous.accumulation:
                return previous.reasons  # firmware has not sampled since our last tick
            reasons = None
            if previous is not None and acc > previous.accumulation:
                reasons = _grown(previous.counters, current)
            self._last[index] = _Residency(acc, current, reasons)
            if reasons is not None:
                return reasons
        return _from_status(metrics)

    def forget(self, index: int) -> None:
        self._last.pop(index, None)


def _grown(before: Mapping[str, int | None], after: Mapping[str, int | None]) -> frozenset[str]:
    """Reasons whose residency counter grew between two gpu_metrics reads."""
    reasons = set()
    for key, reason in _RESIDENCY_REASONS:
        old, new = before.get(key), after.get(key)
        if old is not None and new is not None and new > old:
            reasons.add(reason)
    return frozenset(reasons)


def _from_status(metrics: Mapping[str, Any]) -> frozenset[str] | None:
    status = metrics.get("indep_throttle_status")
    if isinstance(status, int) and not isinstance(status, bool) and status != UINT64_MAX:
        return frozenset(reason for bits, reason in _SMU_THROTTLER_BITS if status & bits)
    flags = [metrics.get(key) for key in ("indep_throttle_status", "throttle_status")]
    flags = [flag for flag in flags if isinstance(flag, bool)]
    if flags and not any(flags):
        return frozenset()
    return None
