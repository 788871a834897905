"""Readings both tiers take: clock domains (maxima at open, current values every tick) and
temperature sensors (thresholds at open, current values every tick)."""

from __future__ import annotations

from typing import Any

from gputui.backends.amd.calls import AmdCalls
from gputui.backends.amd.values import num


def clock_info(calls: AmdCalls, i: int, clock: str) -> Any:
    """The ``amdsmi_get_clock_info`` answer for one clock domain ("GFX", "MEM")."""
    return calls.call(
        i, f"clock:{clock}", "amdsmi_get_clock_info", calls.enum("AmdSmiClkType", clock)
    )


def temperature(
    calls: AmdCalls, i: int, sensor: str, metric: str, *, threshold: bool = False
) -> float | None:
    """One temperature metric of one sensor in °C; a threshold of 0 or less means unset."""
    value = num(
        calls.call(
            i,
            f"temp:{sensor}:{metric}",
            "amdsmi_get_temp_metric",
            calls.enum("AmdSmiTemperatureType", sensor),
            calls.enum("AmdSmiTemperatureMetric", metric),
        )
    )
    if value is None or (threshold and value <= 0):
        return None
    return float(value)
