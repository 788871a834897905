"""Clock slowdowns judged by how long they lasted, not by one sample of a bit.

NVML's clock-event bits are a snapshot, and NVIDIA documents the HW-slowdown bit as one that "may
be also reported during PState or clock change": one reading of it is no fault. The driver also
keeps cumulative duration counters (field values, nanoseconds): SW thermal 269, HW thermal 270,
HW power brake 271 (nvml.h, ``NVML_FI_DEV_CLOCKS_EVENT_REASON_*``), and on older drivers the
perf-policy thermal counter 75 (``NVML_FI_DEV_PERF_POLICY_THERMAL``). So, as the AMD adapter does
with its residency counters:

- a slowdown with a counter is reported when its counter grew between the last two readings (or
  grew in the interval before and its bit is still set: counters may tick coarser than readings);
- one without any counter is reported only when its bit was set on two consecutive readings;
- the first reading of a counted slowdown reports nothing yet (nothing to compare with).

Reasons that are not trouble (idle, power cap, sync boost ...) pass through as read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gputui.core.model import THROTTLE_TROUBLE

FieldKey = tuple[int, int]  # (field id, scopeId), as in .fields (not imported: .calls uses this)

FI_PERF_POLICY_THERMAL = 75
FI_SW_THERMAL_SLOWDOWN = 269
FI_HW_THERMAL_SLOWDOWN = 270
FI_HW_POWER_BRAKE_SLOWDOWN = 271

SLOWDOWN_FIELDS: tuple[FieldKey, ...] = (
    (FI_SW_THERMAL_SLOWDOWN, 0),
    (FI_HW_THERMAL_SLOWDOWN, 0),
    (FI_HW_POWER_BRAKE_SLOWDOWN, 0),
    (FI_PERF_POLICY_THERMAL, 0),
)
"""Read with every reading (in the same batched call as power and energy)."""

COUNTERS: dict[str, tuple[int, ...]] = {
    # reason -> the counters that time it, best first (the first that answers is used)
    "sw_thermal": (FI_SW_THERMAL_SLOWDOWN, FI_PERF_POLICY_THERMAL),
    "hw_thermal": (FI_HW_THERMAL_SLOWDOWN, FI_PERF_POLICY_THERMAL),
    "hw_power_brake": (FI_HW_POWER_BRAKE_SLOWDOWN,),
}
HW_SLOWDOWN_SOURCES = ("hw_thermal", "hw_power_brake")
"""The HW-slowdown bit is confirmed by the growth of either of these counters."""


@dataclass
class SlowdownTracker:
    """One GPU's counters and bits as of its previous reading."""

    counters: dict[int, float] = field(default_factory=dict)
    grown_before: frozenset[str] = frozenset()
    bits_before: frozenset[str] = frozenset()

    def confirm(
        self, bits: frozenset[str], fields: Mapping[FieldKey, int | float]
    ) -> frozenset[str]:
        """The reasons to report for this reading, from its bits and its counters."""
        current = {fid: float(fields[(fid, 0)]) for fid, _ in SLOWDOWN_FIELDS if (fid, 0) in fields}
        grown: set[str] = set()
        counted: set[str] = set()
        for reason, sources in COUNTERS.items():
            source = next((fid for fid in sources if fid in current), None)
            if source is None:
                continue
            counted.add(reason)
            before = self.counters.get(source)
            # A counter shared by two reasons (the perf-policy thermal one) tells which only
            # together with the reason's bit.
            own = source == sources[0] or reason in bits
            if own and before is not None and current[source] > before:
                grown.add(reason)
        reasons = set(bits - THROTTLE_TROUBLE)
        for reason in THROTTLE_TROUBLE:
            timed_by = HW_SLOWDOWN_SOURCES if reason == "hw_slowdown" else (reason,)
            if any(s in counted for s in timed_by):
                if reason == "hw_slowdown":
                    still = reason in bits and any(
                        s in grown or s in self.grown_before for s in timed_by
                    )
                else:
                    still = reason in grown or (reason in self.grown_before and reason in bits)
                if still:
                    reasons.add(reason)
            elif reason in bits and reason in self.bits_before:
                reasons.add(reason)  # no counter: two readings in a row
        self.counters = current
        self.grown_before = frozenset(grown)
        self.bits_before = bits
        return frozenset(reasons)


__all__ = ["SLOWDOWN_FIELDS", "SlowdownTracker"]
