"""Energy and idle accounting per GPU over a session, and what idle GPUs cost.

The sampler feeds every reading to a :class:`UsageMeter` (on its polling thread) and puts the
result on the snapshot (:class:`gputui.core.model.Usage`). How it counts:

- **Time.** Between two readings of a GPU, the interval is counted with the state of the newer
  reading (utilization is itself an average over the last sample period). An interval longer
  than :data:`MAX_GAP_INTERVALS` polling intervals (at least :data:`MIN_GAP_S`), e.g. a
  suspended machine or a driver that did not answer, counts only up to that; the rest was not
  seen. A lost GPU's time is not counted; it starts over when it answers again.
- **Idle.** Utilization below :data:`IDLE_UTIL_PCT` (5 %). **Held idle**: idle with more than
  :data:`HELD_MEMORY_BYTES` (1 GiB, what a driver context alone stays under) of GPU memory in
  use: somebody holds the GPU without using it. A GPU that does not report utilization (a GPU
  in MIG mode, on NVML) is not counted (``observed_s`` stays 0).
- **Energy.** The sum of the energy counter's increases between readings (``GpuSample.energy_j``
  is the driver's cumulative counter). A decrease is a counter reset (driver reload, GPU reset):
  that interval adds nothing and counting goes on from the new value. So is an increase beyond
  what the GPU can draw in the interval (:func:`max_energy_increase`: its power limit, else
  :data:`DEFAULT_MAX_POWER_W`, x the time x :data:`ENERGY_MARGIN`), such as the driver's
  "no value" of 2^63 mJ: one bogus reading would otherwise add 1.8e16 J for good. None for a GPU
  without an energy counter (no estimate from power is made).
- **Cost.** With a price per GPU-hour (``--gpu-hour-price``, ``GPUTUI_GPU_HOUR_PRICE`` or the
  config file's ``gpu_hour_price``: see :mod:`gputui.settings`; the session hands it to the
  sampler's meter): the idle GPUs of this reading x price is the cost per hour of the idle
  share; idle GPU-hours over the session x price is what idling cost so far.

A replayed session carries the usage that was recorded (the sampler does not count again); a
price given now is applied to it (:meth:`UsageMeter.priced`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from gputui.core.model import GpuSample, GpuUsage, Usage

IDLE_UTIL_PCT = 5.0
HELD_MEMORY_BYTES = 1024**3
MAX_GAP_INTERVALS = 3.0
MIN_GAP_S = 10.0
DEFAULT_MAX_POWER_W = 2000.0
"""What a GPU that reports neither its power limit nor its draw is assumed to draw at most."""
ENERGY_MARGIN = 2.0
"""How far above its power limit (draw spikes, readings taken a little apart) a GPU's energy
counter may rise before the increase is taken for a bogus reading."""
MIN_ENERGY_INTERVAL_S = 1.0
"""The shortest interval an energy increase is judged over (readings close together have
proportionally more timing error)."""


def parse_price(text: str) -> float:
    """A price per GPU-hour: a finite number >= 0 (``2.5``, ``2,5`` is not one). ValueError."""
    try:
        value = float(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a price (a number, e.g. 2.50)") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{text!r} is not a price (a number of 0 or more)")
    return value


def max_energy_increase(sample: GpuSample, elapsed_s: float) -> float:
    """The most energy (J) ``sample``'s GPU can have used over ``elapsed_s`` seconds: the larger
    of its power limit and its draw (else :data:`DEFAULT_MAX_POWER_W`) x the time (at least
    :data:`MIN_ENERGY_INTERVAL_S`) x :data:`ENERGY_MARGIN`."""
    known = [
        w for w in (sample.power_limit_w, sample.power_w) if w is not None and math.isfinite(w)
    ]
    watts = max(known) if known and max(known) > 0 else DEFAULT_MAX_POWER_W
    return watts * max(elapsed_s, MIN_ENERGY_INTERVAL_S) * ENERGY_MARGIN


@dataclass(slots=True)
class _GpuState:
    last_ts: float | None = None
    last_energy: float | None = None
    last_energy_ts: float = 0.0
    observed_s: float = 0.0
    idle_s: float = 0.0
    held_idle_s: float = 0.0
    energy_j: float | None = None
    idle: bool | None = None
    held_idle: bool | None = None


def idle_state(
    sample: GpuSample,
    *,
    idle_util_pct: float = IDLE_UTIL_PCT,
    held_memory_bytes: int = HELD_MEMORY_BYTES,
) -> tuple[bool | None, bool | None]:
    """(idle, held idle) of one reading; (None, None) when it cannot be told."""
    util = sample.utilization_gpu_pct
    if sample.lost or util is None or math.isnan(util):
        return None, None
    idle = util < idle_util_pct
    used = sample.memory_used_bytes
    held = None if used is None else (idle and used > held_memory_bytes)
    return idle, held


class UsageMeter:
    """Counts energy and idle time per GPU, reading by reading. One caller (the sampler's
    thread); :attr:`gpu_hour_price` may be set from any thread (it applies from the next
    reading)."""

    def __init__(
        self,
        *,
        gpu_hour_price: float | None = None,
        idle_util_pct: float = IDLE_UTIL_PCT,
        held_memory_bytes: int = HELD_MEMORY_BYTES,
    ) -> None:
        self.gpu_hour_price = gpu_hour_price
        self.idle_util_pct = idle_util_pct
        self.held_memory_bytes = held_memory_bytes
        self._since: float | None = None
        self._gpus: dict[int, _GpuState] = {}

    def update(self, now: float, gpus: Iterable[GpuSample], *, interval: float = 1.0) -> Usage:
        """Count the readings ``gpus`` taken at ``now``; the usage so far."""
        if self._since is None:
            self._since = now
        max_gap = max(MIN_GAP_S, MAX_GAP_INTERVALS * interval)
        seen = set()
        for sample in gpus:
            seen.add(sample.index)
            state = self._gpus.setdefault(sample.index, _GpuState())
            self._count(state, sample, now, max_gap)
        for index, state in self._gpus.items():
            if index not in seen:  # no longer listed: keep its totals, count nothing now
                state.last_ts = state.last_energy = None
                state.idle = state.held_idle = None
        return self._usage()

    def _count(self, state: _GpuState, sample: GpuSample, now: float, max_gap: float) -> None:
        if sample.lost:
            state.last_ts = state.last_energy = None  # counting starts over when it is back
            state.idle = state.held_idle = None
            return
        idle, held = idle_state(
            sample, idle_util_pct=self.idle_util_pct, held_memory_bytes=self.held_memory_bytes
        )
        state.idle, state.held_idle = idle, held
        if state.last_ts is not None and now > state.last_ts and idle is not None:
            dt = min(now - state.last_ts, max_gap)
            state.observed_s += dt
            if idle:
                state.idle_s += dt
                if held:
                    state.held_idle_s += dt
        state.last_ts = now  # a clock that went back counts nothing for that interval
        energy = sample.energy_j
        if energy is not None and math.isfinite(energy):
            if state.energy_j is None:
                state.energy_j = 0.0
            last = state.last_energy
            if last is not None and energy > last:
                increase = energy - last
                if increase <= max_energy_increase(sample, now - state.last_energy_ts):
                    state.energy_j += increase
            # a decrease (reset) or an impossible jump adds nothing: count from here
            state.last_energy, state.last_energy_ts = energy, now

    def _usage(self) -> Usage:
        assert self._since is not None
        gpus = tuple(
            GpuUsage(
                index=index,
                observed_s=round(s.observed_s, 3),
                idle_s=round(s.idle_s, 3),
                held_idle_s=round(s.held_idle_s, 3),
                energy_used_j=None if s.energy_j is None else round(s.energy_j, 3),
                idle=s.idle,
                held_idle=s.held_idle,
            )
            for index, s in sorted(self._gpus.items())
        )
        return summarize(
            self._since,
            gpus,
            gpu_hour_price=self.gpu_hour_price,
            idle_util_pct=self.idle_util_pct,
            held_memory_bytes=self.held_memory_bytes,
        )

    def priced(self, usage: Usage | None) -> Usage | None:
        """A recorded ``usage`` with this meter's price applied, when one is set."""
        if usage is None or self.gpu_hour_price is None:
            return usage
        if usage.gpu_hour_price == self.gpu_hour_price:
            return usage
        return summarize(
            usage.since,
            usage.gpus,
            gpu_hour_price=self.gpu_hour_price,
            idle_util_pct=usage.idle_util_pct,
            held_memory_bytes=usage.held_memory_bytes,
        )


def summarize(
    since: float,
    gpus: tuple[GpuUsage, ...],
    *,
    gpu_hour_price: float | None,
    idle_util_pct: float = IDLE_UTIL_PCT,
    held_memory_bytes: int = HELD_MEMORY_BYTES,
) -> Usage:
    """The node's figures from its GPUs' usage (see :class:`gputui.core.model.Usage`)."""
    counted = [g for g in gpus if g.idle is not None]
    idle = sum(1 for g in counted if g.idle)
    held = sum(1 for g in counted if g.held_idle)
    idle_hours = sum(g.idle_s for g in gpus) / 3600.0
    price = gpu_hour_price

    def cost(amount: float) -> float | None:
        return None if price is None else round(amount * price, 6)

    return Usage(
        since=since,
        idle_util_pct=idle_util_pct,
        held_memory_bytes=held_memory_bytes,
        gpu_hour_price=price,
        gpus=gpus,
        gpus_counted=len(counted),
        idle_gpus=idle,
        held_idle_gpus=held,
        idle_share=round(idle / len(counted), 6) if counted else None,
        idle_cost_per_hour=cost(idle),
        held_idle_cost_per_hour=cost(held),
        observed_gpu_hours=round(sum(g.observed_s for g in gpus) / 3600.0, 6),
        idle_gpu_hours=round(idle_hours, 6),
        held_idle_gpu_hours=round(sum(g.held_idle_s for g in gpus) / 3600.0, 6),
        idle_cost=cost(idle_hours),
    )


def session_idle_share(usage: Usage) -> float | None:
    """Idle GPU time over observed GPU time since the session started (0-1); None before any
    time was observed."""
    observed = sum(g.observed_s for g in usage.gpus)
    return None if observed <= 0 else sum(g.idle_s for g in usage.gpus) / observed


def fmt_energy(joules: float | None) -> str:
    """``950 J``, ``12.3 kJ``, ``1.52 MJ``, ``3.04 GJ``; ``n/a`` when unknown."""
    if joules is None or not math.isfinite(joules):
        return "n/a"
    value, unit = joules, "J"
    for bigger in ("kJ", "MJ", "GJ", "TJ"):
        if abs(value) < 1000:
            break
        value, unit = value / 1000, bigger
    if unit == "J":
        return f"{value:.0f} J"
    return f"{value:.3g} {unit}"


def fmt_money(amount: float) -> str:
    """An amount in the user's currency (no symbol is assumed): ``7.50``, ``1,234.00``."""
    return f"{amount:,.2f}"


def idle_summary(usage: Usage | None) -> str:
    """One short line for a title bar when any GPU is idle now, else '': ``3/8 GPUs idle (1
    held) · 7.50/h`` (the cost per hour of the idle GPUs when a price is set)."""
    forms = idle_forms(usage)
    return forms[0] if forms else ""


def idle_forms(usage: Usage | None) -> tuple[str, ...]:
    """:func:`idle_summary` and its shorter forms, longest first, for a bar that is short of
    room: ``3/8 GPUs idle (1 held) · 7.50/h``, ``3/8 idle · 7.50/h``, ``idle 7.50/h`` (the cost
    kept to the last); () when no GPU is idle now."""
    if usage is None or not usage.idle_gpus:
        return ()
    count = f"{usage.idle_gpus}/{usage.gpus_counted}"
    full = f"{count} GPU{'s' if usage.gpus_counted != 1 else ''} idle"
    if usage.held_idle_gpus:
        full += f" ({usage.held_idle_gpus} held)"
    if usage.idle_cost_per_hour is None:
        return tuple(dict.fromkeys((full, f"{count} idle")))
    cost = f"{fmt_money(usage.idle_cost_per_hour)}/h"
    return (f"{full} · {cost}", f"{count} idle · {cost}", f"idle {cost}")


__all__ = [
    "DEFAULT_MAX_POWER_W",
    "ENERGY_MARGIN",
    "HELD_MEMORY_BYTES",
    "IDLE_UTIL_PCT",
    "MAX_GAP_INTERVALS",
    "MIN_ENERGY_INTERVAL_S",
    "MIN_GAP_S",
    "UsageMeter",
    "fmt_energy",
    "fmt_money",
    "idle_forms",
    "idle_state",
    "idle_summary",
    "max_energy_increase",
    "parse_price",
    "session_idle_share",
    "summarize",
]
