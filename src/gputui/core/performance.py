"""Why a GPU runs slower than it can, as one word and one line: the values the model carries.

The judgement itself (from the clock-event reasons over the last readings, the clocks against
their maximum, power against its limit, temperatures against their limits) is
:mod:`gputui.health.performance`; this module only holds what it decides, so every layer can
read it.
"""

from __future__ import annotations

from typing import Literal

from gputui.core.frozen import frozen

Limiter = Literal[
    "idle",
    "power_cap",
    "hw_power_brake",
    "hw_thermal",
    "sw_thermal",
    "hw_slowdown",
    "sync_boost",
    "app_clocks",
    "display",
    "board_limit",
    "reliability",
    "none",
    "unknown",
]
"""What holds the SM clock down, one word (``none``: nothing; ``unknown``: not enough readings or
no clock-event reasons from this GPU)."""

LIMITER_WORDS: dict[str, str] = {
    "idle": "idle",
    "power_cap": "power cap",
    "hw_power_brake": "HW power brake",
    "hw_thermal": "HW thermal",
    "sw_thermal": "thermal",
    "hw_slowdown": "HW slowdown",
    "sync_boost": "sync boost",
    "app_clocks": "application clocks",
    "display": "display clocks",
    "board_limit": "board limit",
    "reliability": "reliability limit",
    "none": "no limiter",
    "unknown": "limiter unknown",
}
"""Each limiter in words, as the dashboard and ``snapshot`` write it."""


@frozen
class Performance:
    """Why a GPU is as fast as it is right now (``gpus[i].performance`` in ``snapshot --json``)."""

    clock_pct: float | None
    """The SM clock as a share of its maximum, in % (mean over the readings judged)."""
    limiter: Limiter
    text: str
    """``clock 71 % of max: power cap 498/500 W``."""
    power_limit_below_default: bool | None = None
    """The enforced power limit is below the board's default (None: not known)."""
    thermal_margin_c: float | None = None
    """Degrees to the slowdown limit of the sensor closest to its own (None: no limit known)."""
    thermal_sensor: str | None = None
    """That sensor: ``gpu``, ``hotspot`` or ``memory``."""
    pcie_degraded: str | None = None
    """``Gen4 x8 of Gen5 x16`` when the link runs below its maximum under load, else None."""


__all__ = ["LIMITER_WORDS", "Limiter", "Performance"]
