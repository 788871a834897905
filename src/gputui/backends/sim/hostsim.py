"""The invented host around the simulated GPUs: per-CPU load, RAM, swap, load average, uptime."""

from __future__ import annotations

import math
import random

from gputui.backends.sim.noise import key, smooth8
from gputui.backends.sim.plan import HostPlan
from gputui.core.model import HostSample


class HostSim:
    """Readings are a pure function of elapsed time: per-CPU jitter comes from a generator seeded
    with (seed, whole second), so every reading within one second agrees."""

    def __init__(self, plan: HostPlan, seed: int) -> None:
        self.plan = plan
        self.seed = seed
        self._key = key(seed, 0x4057)
        self._cores = plan.core_base_pct
        self._spread = [(c, 4.0 + 0.25 * c) for c in plan.core_base_pct]
        self._busy = sum(self._cores) / 100.0

    def read(self, now: float, elapsed: float, gpu_rss_bytes: int) -> HostSample:
        p = self.plan
        tick = math.floor(elapsed)
        r = random.Random((self.seed << 32) ^ (tick & 0xFFFFFFFF) ^ 0x6057)
        rnd = r.random
        raw = [c + (rnd() - 0.5) * s for c, s in self._spread]
        # clamp and round to 0.1 like psutil, without per-value builtin calls (this is the hot loop)
        per_core = tuple(
            [0.0 if v <= 0.0 else 100.0 if v >= 100.0 else int(v * 10.0 + 0.5) / 10.0 for v in raw]
        )
        nz = smooth8(self._key, elapsed / 20.0)
        used = p.memory_base_used_bytes + gpu_rss_bytes + int(nz[0] * 0.004 * p.memory_total_bytes)
        used = max(0, min(used, p.memory_total_bytes))
        busy = self._busy
        load = (
            round(max(0.0, busy * (1.0 + 0.08 * nz[1]) + 0.4), 2),
            round(max(0.0, busy * (1.0 + 0.03 * nz[2]) + 0.3), 2),
            round(max(0.0, busy * (1.0 + 0.01 * nz[3]) + 0.2), 2),
        )
        return HostSample(
            timestamp=now,
            cpu_pct=round(sum(per_core) / len(per_core), 1),
            per_core_pct=per_core,
            memory_total_bytes=p.memory_total_bytes,
            memory_used_bytes=used,
            memory_available_bytes=p.memory_total_bytes - used,
            swap_total_bytes=p.swap_total_bytes,
            swap_used_bytes=p.swap_used_bytes,
            load_average=load,
            uptime_s=round(p.boot_age_s + elapsed, 2),
        )
