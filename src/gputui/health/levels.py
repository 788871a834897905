"""Thresholds shared by the health rules and the dashboard's colours, so a value the panel shows
in the warning colour is one the rules warn about, and the other way round."""

from __future__ import annotations

import math

from gputui.core.model import GpuInfo, GpuSample, Severity

TEMP_MARGIN_C = 5.0
"""Warn this close to a temperature limit; fail at or above it."""
LOAD_UTIL_PCT = 30.0
"""GPU utilization from which a GPU counts as under load (its PCIe link is judged only then:
idle links train down to save power)."""


def temperature_level(value: float | None, limit: float | None) -> Severity:
    """``fail`` at or above ``limit``, ``warn`` within :data:`TEMP_MARGIN_C` of it, else ``ok``
    (also when either is unknown: nothing to judge)."""
    if value is None or limit is None or math.isnan(value):
        return "ok"
    if value >= limit:
        return "fail"
    if value >= limit - TEMP_MARGIN_C:
        return "warn"
    return "ok"


def under_load(sample: GpuSample) -> bool:
    util = sample.utilization_gpu_pct
    return util is not None and util >= LOAD_UTIL_PCT


def pcie_below_max(sample: GpuSample, info: GpuInfo) -> bool:
    """Whether the link trained below the maximum generation or width."""
    gen_low = (
        sample.pcie_gen is not None
        and info.pcie_max_gen is not None
        and sample.pcie_gen < info.pcie_max_gen
    )
    width_low = (
        sample.pcie_width is not None
        and info.pcie_max_width is not None
        and sample.pcie_width < info.pcie_max_width
    )
    return gen_low or width_low


def pcie_level(sample: GpuSample, info: GpuInfo) -> Severity:
    """``warn`` for a link below its maximum under load; ``info`` below it while idle (normal
    power saving); ``ok`` at its maximum."""
    if not pcie_below_max(sample, info):
        return "ok"
    return "warn" if under_load(sample) else "info"


__all__ = [
    "LOAD_UTIL_PCT",
    "TEMP_MARGIN_C",
    "pcie_below_max",
    "pcie_level",
    "temperature_level",
    "under_load",
]
