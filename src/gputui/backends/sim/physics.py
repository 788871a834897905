"""Board physics: power, temperatures, clocks and throttle reasons from activity.

Power follows the (window-averaged) activity and is held at the limit with ``sw_power_cap`` when
demand exceeds it (the SM clock droops in proportion). Temperature follows the *lagged* activity
(first-order, time constant ``workloads.TAU_S``), so it trails power by tens of seconds.
"""

from __future__ import annotations

import math

from gputui.backends.sim.plan import GpuPlan

_EMPTY: frozenset[str] = frozenset()
_IDLE = frozenset({"gpu_idle"})
_CAP = frozenset({"sw_power_cap"})
_SW_THERMAL = frozenset({"sw_thermal"})
_HW_THERMAL = frozenset({"sw_thermal", "hw_thermal"})

BUSY_UTIL_PCT = 5.0


class BoardReading:
    """The fast-tier physical readings of one board at one moment."""

    __slots__ = (
        "clock_mem",
        "clock_sm",
        "fan",
        "power",
        "pstate",
        "reasons",
        "temp_gpu",
        "temp_hotspot",
        "temp_mem",
    )

    def __init__(self, g: GpuPlan, util: float, act: float, lag: float, nz: list[float]) -> None:
        """``util`` and ``act`` are window averages, ``lag`` the thermally lagged activity,
        ``nz`` noise channels in [-1, 1] (index 1: power, 2: temperature, 7: clock)."""
        m = g.model
        span = g.busy_w - g.idle_w
        limit = m.power_default_w
        busy = util >= BUSY_UTIL_PCT or act >= 0.3
        demand = g.idle_w + act * span + nz[1] * (1.5 + 7.0 * act)

        heat = min(limit, g.idle_w + lag * span)
        if g.thermal_fault:  # blocked airflow: it would run far hotter, so the driver slows it
            t_raw = g.ambient_c + 14.0 + 1.6 * g.c_per_w * heat
        else:
            t_raw = g.ambient_c + g.c_per_w * heat
        temp = t_raw
        factor = 1.0
        knee = m.slowdown_c - 4.0
        if g.thermal_fault and t_raw > knee:
            excess = t_raw - knee
            temp = knee + 5.0 * math.tanh(excess / 5.0)
            factor = 1.0 - 0.45 * min(1.0, excess / 7.0)
        temp += nz[2] * 0.4
        self.temp_gpu = float(round(temp))

        sm = float(m.sm_clock_busy_mhz)
        if m.sm_clock_busy_mhz < m.sm_clock_max_mhz:  # GeForce boost bins fall as it warms
            sm = sm - 4.0 * max(0.0, temp - 55.0) + 12.0 * nz[7]
        if factor < 1.0:
            power = demand * (0.45 + 0.55 * factor)
            sm *= factor
            reasons = _HW_THERMAL if self.temp_gpu >= m.slowdown_c else _SW_THERMAL
        elif demand > limit:
            power = limit - 0.5 - 3.0 * abs(nz[1])
            sm -= m.droop_mhz_per_w * (demand - limit) + 8.0 * (1.0 + nz[7])
            reasons = _CAP
        else:
            power = demand
            reasons = _EMPTY
        if not busy:
            sm = float(m.sm_clock_idle_mhz)
            reasons = _IDLE if m.idle_reason and not g.thermal_fault else reasons
        self.power = round(max(1.0, power), 2)
        self.clock_sm = int(min(m.sm_clock_max_mhz, sm))
        self.clock_mem = m.memory_clock_max_mhz if busy else m.memory_clock_idle_mhz
        self.reasons = reasons
        self.pstate = (m.pstate_busy if busy else m.pstate_idle) if m.pstate else None

        self.temp_mem = None
        if m.mem_temp is not None:
            self.temp_mem = float(round(temp + m.mem_temp[0] + m.mem_temp[1] * lag))
        self.temp_hotspot = None
        if m.hotspot is not None:
            self.temp_hotspot = float(round(temp + m.hotspot[0] + m.hotspot[1] * lag))
        if m.temp_is_hotspot and self.temp_hotspot is not None:
            self.temp_gpu = self.temp_hotspot
        self.fan = None
        if m.fan_count:
            self.fan = 0.0 if temp < 50.0 else float(round(min(100.0, 30.0 + (temp - 50.0) * 1.8)))
