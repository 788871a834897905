"""The worker pool of a simulated node (``crowded``): who runs in each place, and its samples.

A place holds one worker at a time. Its supervisor restarts it every ``lifetime_s`` (or at once
when it is killed), each time under a new PID from the place's band, its memory growing back
over ``MEM_RAMP_S``. Everything read is a pure function of elapsed time and the kills so far.

Reading is cheap enough for thousands of workers per tick, because little changes from one
reading to the next and only what changed is recomputed:

- a worker's generation (PID, start) changes when it restarts: a heap of restart times says
  which, a few a minute;
- its SM % is its ``sm_weight`` share of its GPU's integer utilization, so it can only move
  when that utilization does, and never for a worker whose share rounds to 0 even at 100 %;
- its CPU % jitter moves in steps every ``CPU_STEP_S``; the workers are in ``CPU_GROUPS``
  groups that step at different moments, so one group's workers are recomputed at a time;
- its memory moves while it ramps up after a restart.

A recomputed worker whose values came out the same keeps its :class:`ProcessSample` object.
Reading at an earlier time than the last one recomputes everything (the simulation is still a
pure function of time, only slower to read backwards).
"""

from __future__ import annotations

import heapq
import math

from gputui.backends.sim.noise import key, mix
from gputui.backends.sim.plan import PID_BAND, Plan
from gputui.core.model import ProcessSample

MEM_RAMP_S = 12.0
"""A restarted worker grows to its full GPU memory over this long (as the backend's processes)."""
CPU_STEP_S = 60.0
"""A worker's CPU % jitter changes this often."""
CPU_GROUPS = 60
"""Workers whose jitter steps together (group g at times ``g * CPU_STEP_S / CPU_GROUPS`` + k *
CPU_STEP_S), so a reading every second recomputes one group's."""
_INV64 = 1.0 / (1 << 64)
_MIB = 1 << 20


class WorkerPool:
    """The workers of ``plan`` (``plan.workers``), read at elapsed times."""

    def __init__(self, plan: Plan, seed: int) -> None:
        self.workers = plan.workers
        n = len(self.workers)
        self._keys = [key(seed, i, 0x9001) for i in range(n)]
        self._kills: dict[int, list[float]] = {}  # place -> kill times (elapsed), ascending
        self.rss_bytes = sum(w.rss_bytes for w in self.workers)
        """Host memory of all the workers (constant: a restarted worker is the same program)."""
        by_gpu: dict[int, list[int]] = {}
        for i, w in enumerate(self.workers):
            by_gpu.setdefault(w.gpu, []).append(i)
        self._full = {
            g: sum(self.workers[i].gpu_memory_bytes for i in ix) for g, ix in by_gpu.items()
        }
        # workers whose SM % can be above 0 (their share of 100 % rounds to 1 or more)
        self._active = {
            g: [i for i in ix if self.workers[i].sm_weight * 100.0 > 0.5]
            for g, ix in by_gpu.items()
        }
        self._groups = [list(range(g, n, CPU_GROUPS)) for g in range(CPU_GROUPS)]
        # generations: PID and start (elapsed) of each place's current worker, valid in [lo, hi)
        self._t = -math.inf  # the elapsed time they are for
        self._pid = [0] * n
        self._start = [0.0] * n
        self._hi = [0.0] * n
        self._heap: list[tuple[float, int]] = []  # (hi, place)
        self._recent: set[int] = set()  # places started less than MEM_RAMP_S before self._t
        self._changed: set[int] = set()  # places whose worker changed since the last samples()
        self._order: list[int] = []
        # samples, and what they were computed from
        self._samples: list[ProcessSample | None] = [None] * n
        self._state: list[tuple[int, float, int, float, float] | None] = [None] * n
        self._origin: float | None = None
        self._util: dict[int, float] = {}
        self._epochs = [-1] * CPU_GROUPS
        self._sampled_at = -math.inf
        self._ramped: set[int] = set()  # places whose sample shows less than the full memory
        self._weights = [w.sm_weight for w in self.workers]
        self._sm = [-1.0] * n  # the SM % each sample shows
        self._jitter = [0.0] * n
        self._jitter_epoch = [-1] * n
        self._listed: list[ProcessSample] | None = None  # the samples in order, as last read
        self._position: dict[int, int] = {}  # place -> its index in _listed

    # -- generations ------------------------------------------------------------------------------

    def _generation(self, i: int, t: float) -> None:
        """Set place ``i``'s PID, start and end for elapsed time ``t``."""
        w = self.workers[i]
        lifetime = w.lifetime_s
        k = math.floor((t + w.phase_s) / lifetime)
        lo = k * lifetime - w.phase_s
        hi = lo + lifetime
        restarts = 0
        for kill in self._kills.get(i, ()):
            if lo < kill <= t:
                restarts += 1
                lo = kill
            elif t < kill < hi:
                hi = kill
        self._pid[i] = w.pid_base + mix(self._keys[i] ^ (k << 8) ^ restarts) % PID_BAND
        self._start[i] = lo
        self._hi[i] = hi

    def _advance(self, t: float) -> None:
        """Bring the generations to elapsed time ``t``, adding the places whose worker changed
        to ``_changed`` (every place when ``t`` is earlier than the last time)."""
        if t == self._t:
            return
        changed: set[int]
        if t < self._t or not self._heap:
            changed = set(range(len(self.workers)))
            for i in changed:
                self._generation(i, t)
            self._heap = [(hi, i) for i, hi in enumerate(self._hi)]
            heapq.heapify(self._heap)
            self._recent = {i for i in changed if self._start[i] + MEM_RAMP_S > t}
        else:
            changed = set()
            heap = self._heap
            while heap and heap[0][0] <= t:
                hi, i = heapq.heappop(heap)
                if hi != self._hi[i]:
                    continue  # superseded by a kill
                self._generation(i, t)
                heapq.heappush(heap, (self._hi[i], i))
                changed.add(i)
            self._recent = {i for i in self._recent | changed if self._start[i] + MEM_RAMP_S > t}
        self._t = t
        if changed:
            workers, pids = self.workers, self._pid
            self._order = sorted(range(len(workers)), key=lambda i: (workers[i].gpu, pids[i]))
            self._listed = None
            self._changed |= changed

    def _memory(self, i: int, t: float) -> int:
        full = self.workers[i].gpu_memory_bytes
        age = t - self._start[i]
        if age >= MEM_RAMP_S:
            return full
        return int(full * (0.05 + 0.95 * age / MEM_RAMP_S)) // _MIB * _MIB

    # -- readings ---------------------------------------------------------------------------------

    def gpu_memory(self, gpu: int, t: float) -> int:
        """GPU memory the workers on ``gpu`` hold at elapsed time ``t`` (0 without workers)."""
        full = self._full.get(gpu)
        if full is None:
            return 0
        self._advance(t)
        for i in self._recent:
            if self.workers[i].gpu == gpu:
                full -= self.workers[i].gpu_memory_bytes - self._memory(i, t)
        return full

    def samples(self, t: float, origin: float, util: dict[int, float]) -> list[ProcessSample]:
        """Every worker at elapsed time ``t`` (``origin``: the wall time of t = 0), ordered by
        (GPU, PID); ``util`` is each GPU's utilization, which its workers share."""
        backwards = t < self._sampled_at
        self._advance(t)
        dirty, self._changed = self._changed, set()
        if backwards or origin != self._origin:
            dirty = set(range(len(self.workers)))
            self._origin = origin
        dirty |= self._recent
        dirty |= self._ramped
        weights, shown = self._weights, self._sm
        for g, u in util.items():
            if self._util.get(g) == u:
                continue
            self._util[g] = u
            # only the workers whose rounded share moves need a new sample
            dirty.update(i for i in self._active.get(g, ()) if round(u * weights[i]) != shown[i])
        for g, members in enumerate(self._groups):
            epoch = math.floor((t + g * CPU_STEP_S / CPU_GROUPS) / CPU_STEP_S)
            if epoch != self._epochs[g]:
                self._epochs[g] = epoch
                dirty.update(members)
        if self._listed is None:  # the order changed (or the first reading)
            for i in dirty:
                self._resample(i, t, origin)
            self._listed = [s for i in self._order if (s := self._samples[i]) is not None]
            self._position = {i: k for k, i in enumerate(self._order)}
        else:
            listed, position = self._listed, self._position
            for i in dirty:
                if (sample := self._resample(i, t, origin)) is not None:
                    listed[position[i]] = sample
        self._sampled_at = t
        return list(self._listed)

    def _resample(self, i: int, t: float, origin: float) -> ProcessSample | None:
        """Recompute worker ``i``'s sample; the new one, or None when it did not change."""
        w = self.workers[i]
        sm = float(round(self._util.get(w.gpu, 0.0) * w.sm_weight))
        self._sm[i] = sm
        epoch = self._epochs[i % CPU_GROUPS]
        if epoch != self._jitter_epoch[i]:
            self._jitter_epoch[i] = epoch
            self._jitter[i] = (mix(self._keys[i] ^ (epoch & 0xFFFFFFFF)) * _INV64 - 0.5) * 0.3
        idle, busy = w.cpu_pct
        cpu = round((idle + (busy - idle) * min(1.0, sm * 0.1)) * (1.0 + self._jitter[i]), 1)
        memory = self._memory(i, t)
        if memory < w.gpu_memory_bytes:
            self._ramped.add(i)
        else:
            self._ramped.discard(i)
        state = (self._pid[i], origin + self._start[i], memory, sm, cpu)
        if state == self._state[i]:
            return None
        self._state[i] = state
        sample = self._samples[i] = ProcessSample(
            pid=state[0],
            gpu_index=w.gpu,
            gpu_memory_bytes=memory,
            sm_pct=sm,
            user=w.user,
            name=w.name,
            command=w.command,
            cpu_pct=cpu,
            host_rss_bytes=w.rss_bytes,
            start_time=state[1],
            container_id=w.container_id,
        )
        return sample

    # -- signals ----------------------------------------------------------------------------------

    def _place(self, pid: int, t: float) -> int | None:
        self._advance(t)
        try:
            return self._pid.index(pid)
        except ValueError:
            return None

    def has(self, pid: int, t: float) -> bool:
        """Whether a worker runs under ``pid`` at elapsed time ``t``."""
        return self._place(pid, t) is not None

    def kill(self, pid: int, t: float) -> bool:
        """End the worker ``pid`` at elapsed time ``t`` (its supervisor starts another in its
        place at once); False when no worker has that PID then."""
        i = self._place(pid, t)
        if i is None:
            return False
        kills = self._kills.setdefault(i, [])
        kills.append(t)
        kills.sort()
        self._t = math.inf  # the next reading recomputes every generation
        self._sampled_at = math.inf
        return True
