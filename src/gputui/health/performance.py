"""Why a GPU is slow right now: the SM clock against its maximum and the one thing that holds it
down, judged over the last few readings, never from one sample.

The clock-event (throttle) reasons a backend reports are already confirmed by the driver's
duration counters where it keeps them (``backends/nvml/slowdown.py``; AMD's residency counters),
so a reason in the model is a slowdown that lasted. This module adds the time dimension the
dashboard needs: the limiter is the reason set in at least half of the last :data:`WINDOW`
readings, the most telling one first (:data:`PRIORITY`: a HW power brake or thermal slowdown
explains more than a power cap); an idle GPU is ``idle`` whatever its clocks; a GPU whose driver
reports no reasons is judged from power against its limit. The line says the numbers behind the
word: draw and enforced limit (and whether the limit is below the board's default) for a power
cap, the temperature and the margin to the limit of the sensor closest to its own for a thermal
one, and the PCIe link against its maximum while the GPU is busy.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from collections.abc import Sequence

from gputui.core.model import GpuInfo, GpuSample, Snapshot
from gputui.core.performance import LIMITER_WORDS, Limiter, Performance

WINDOW = 5
"""Readings the limiter is judged over (5 s at the default interval)."""
IDLE_PCT = 5.0
"""Utilisation under which a GPU counts as idle."""
BUSY_PCT = 50.0
"""Utilisation from which a PCIe link below its maximum is worth saying."""
POWER_CAP_FRACTION = 0.97
"""Draw at or above this share of the enforced limit counts as capped (driver reports no
reasons)."""

PRIORITY: tuple[tuple[str, Limiter], ...] = (
    ("hw_power_brake", "hw_power_brake"),
    ("hw_thermal", "hw_thermal"),
    ("hw_slowdown", "hw_slowdown"),
    ("sw_thermal", "sw_thermal"),
    ("sw_power_cap", "power_cap"),
    ("board_limit", "board_limit"),
    ("reliability", "reliability"),
    ("sync_boost", "sync_boost"),
    ("applications_clocks", "app_clocks"),
    ("display_clocks", "display"),
)
"""Model throttle reason -> limiter, most telling first."""
_TROUBLE = frozenset({"hw_power_brake", "hw_thermal", "hw_slowdown", "sw_thermal"})
_THERMAL = frozenset({"hw_thermal", "sw_thermal"})
_SENSORS: tuple[tuple[str, str, str], ...] = (
    ("gpu", "temperature_gpu_c", "temperature_slowdown_c"),
    ("hotspot", "temperature_hotspot_c", "temperature_hotspot_limit_c"),
    ("memory", "temperature_memory_c", "temperature_memory_limit_c"),
)


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None and not math.isnan(v)]
    return sum(known) / len(known) if known else None


def _dominant(reasons: Sequence[frozenset[str] | None]) -> list[Limiter]:
    """Limiters set in at least half of the readings that reported reasons, most telling first."""
    known = [r for r in reasons if r is not None]
    if not known:
        return []
    need = math.ceil(len(known) / 2)
    return [limiter for reason, limiter in PRIORITY if sum(1 for r in known if reason in r) >= need]


def thermal_margin(info: GpuInfo | None, s: GpuSample) -> tuple[float, str] | None:
    """(degrees to its limit, sensor) of the sensor closest to its own limit."""
    if info is None:
        return None
    margins = []
    for sensor, reading, limit in _SENSORS:
        temp, cap = getattr(s, reading), getattr(info, limit)
        if temp is not None and cap is not None:
            margins.append((float(cap) - float(temp), sensor, float(temp), float(cap)))
    if not margins:
        return None
    margin, sensor, _temp, _cap = min(margins)
    return margin, sensor


def _thermal_words(info: GpuInfo | None, s: GpuSample) -> str:
    found = thermal_margin(info, s)
    if found is None or info is None:
        return ""
    margin, sensor = found
    reading = next(r for name, r, _ in _SENSORS if name == sensor)
    temp = getattr(s, reading)
    where = "GPU" if sensor == "gpu" else sensor
    if margin <= 0:
        return f", {where} {temp:.0f} °C at its slowdown limit"
    return f", {where} {temp:.0f} °C, {margin:.0f} °C below its slowdown"


def _power_words(info: GpuInfo | None, s: GpuSample) -> tuple[str, bool | None]:
    if s.power_w is None or s.power_limit_w is None:
        return "", None
    default = info.power_default_limit_w if info is not None else None
    below = None if default is None else s.power_limit_w < default - 1.0
    text = f" {s.power_w:.0f}/{s.power_limit_w:.0f} W"
    if below:
        assert default is not None
        text += f" (limit below the default {default:.0f} W)"
    return text, below


def _pcie_words(info: GpuInfo | None, s: GpuSample) -> str | None:
    if info is None or s.pcie_gen is None or s.pcie_width is None:
        return None
    busy = (s.utilization_gpu_pct or 0.0) >= BUSY_PCT
    if not busy or info.pcie_max_gen is None or info.pcie_max_width is None:
        return None
    if s.pcie_gen >= info.pcie_max_gen and s.pcie_width >= info.pcie_max_width:
        return None
    return f"Gen{s.pcie_gen} x{s.pcie_width} of Gen{info.pcie_max_gen} x{info.pcie_max_width}"


def judge(
    info: GpuInfo | None,
    s: GpuSample,
    reasons: Sequence[frozenset[str] | None],
    clocks: Sequence[float | None],
    utilization: Sequence[float | None],
) -> Performance:
    """The performance of GPU ``s`` from its last readings (oldest first, ``s`` the newest)."""
    clock = _mean(clocks)
    top = info.sm_clock_max_mhz if info is not None else None
    clock_pct = None if clock is None or not top else round(100.0 * clock / top, 1)
    dominant = _dominant(reasons)
    util = _mean(utilization)
    limiter: Limiter
    trouble = [lim for lim in dominant if lim in _TROUBLE]
    if trouble:
        limiter = trouble[0]
    elif util is not None and util < IDLE_PCT:
        limiter = "idle"
    elif dominant:
        limiter = dominant[0]
    elif all(r is None for r in reasons):  # no reasons from this driver: judge by power
        capped = (
            s.power_w is not None
            and s.power_limit_w is not None
            and s.power_w >= POWER_CAP_FRACTION * s.power_limit_w
        )
        limiter = "power_cap" if capped else ("unknown" if clock_pct is None else "none")
    else:
        limiter = "none"
    words = LIMITER_WORDS[limiter]
    power, below = _power_words(info, s)
    if limiter == "power_cap":
        words += power
    elif limiter in _THERMAL or limiter == "hw_slowdown":
        words += _thermal_words(info, s)
    pcie = _pcie_words(info, s)
    if pcie is not None:
        words += f"; PCIe {pcie}"
    prefix = "" if clock_pct is None else f"clock {clock_pct:.0f} % of max: "
    margin = thermal_margin(info, s)
    return Performance(
        clock_pct=clock_pct,
        limiter=limiter,
        text=prefix + words,
        power_limit_below_default=below,
        thermal_margin_c=None if margin is None else round(margin[0], 1),
        thermal_sensor=None if margin is None else margin[1],
        pcie_degraded=pcie,
    )


class PerformanceJudge:
    """Keeps each GPU's last :data:`WINDOW` reasons, clocks and utilisation, and sets
    ``GpuSample.performance`` on every reading. Called on the sampling thread only."""

    def __init__(self, window: int = WINDOW) -> None:
        self.window = window
        self._recent: dict[int, deque[GpuSample]] = {}

    def judge(self, snapshot: Snapshot, *, replayed: bool = False) -> Snapshot:
        """``snapshot`` with each answering GPU's performance judged (a stalled reading, whose
        values are old, is left as it is; so is a replayed reading's recorded judgement: after
        a seek the last readings here are not the recording's)."""
        if snapshot.stall is not None:
            return snapshot
        gpus = []
        for s in snapshot.gpus:
            if replayed and s.performance is not None:
                gpus.append(s)
                continue
            if s.lost or s.error is not None:
                self._recent.pop(s.index, None)
                gpus.append(s)
                continue
            recent = self._recent.setdefault(s.index, deque(maxlen=self.window))
            recent.append(s)
            performance = judge(
                snapshot.node.gpu(s.index),
                s,
                [r.throttle_reasons for r in recent],
                [None if r.clock_sm_mhz is None else float(r.clock_sm_mhz) for r in recent],
                [r.utilization_gpu_pct for r in recent],
            )
            gpus.append(dataclasses.replace(s, performance=performance))
        return dataclasses.replace(snapshot, gpus=tuple(gpus))


__all__ = ["WINDOW", "PerformanceJudge", "judge", "thermal_margin"]
