"""Workload tracks: what a process does to its GPU over time.

A :class:`Track` holds one period (``PERIOD_S`` seconds, one row every ``DT`` seconds) of
instantaneous activity and repeats forever, so any reading is a table look-up: a window average
comes from prefix sums, and the first-order thermal lag of the activity is precomputed in its
periodic steady state (a job that has been running for hours). Generators draw from a seeded
``random.Random`` once, at construction; reads never draw.
"""

from __future__ import annotations

import itertools
import math
import random
from array import array
from collections.abc import Callable, Sequence

DT = 0.25
"""Seconds per row."""
PERIOD_S = 240.0
"""Length of one track; every track repeats with this period."""
N = int(PERIOD_S / DT)
TAU_S = 30.0
"""Thermal time constant of the board (first-order lag of power)."""

# Row layout.
UTIL, ACT, MEMU, NVL, PRX, PTX, ENC, DEC = range(8)
"""util %, power activity (0 idle .. 1 full), memory-controller %, NVLink/XGMI bytes/s per
direction, PCIe RX and TX bytes/s, encoder %, decoder %."""
NM = 8
_CAPS = (100.0, 1.08, 100.0, math.inf, math.inf, math.inf, 100.0, 100.0)

Row = tuple[float, ...]


def row(
    util: float = 0.0,
    act: float = 0.0,
    memu: float = 0.0,
    nvl: float = 0.0,
    prx: float = 0.0,
    ptx: float = 0.0,
    enc: float = 0.0,
    dec: float = 0.0,
) -> Row:
    return (util, act, memu, nvl, prx, ptx, enc, dec)


IDLE_ROW = row()


class Track:
    """One period of activity with prefix sums and the periodic thermal lag of ``ACT``.

    Rows, prefix sums and lag are stored flat in ``array('d')`` (8 bytes a value, row ``i``'s
    metric ``m`` at ``i * NM + m``): a node with hundreds of processes holds hundreds of tracks.
    """

    __slots__ = ("cum", "lag", "rows", "totals")

    def __init__(self, rows: Sequence[Row]) -> None:
        if len(rows) != N:
            raise ValueError(f"a track needs {N} rows, got {len(rows)}")
        self.rows = array("d", itertools.chain.from_iterable(rows))
        if len(self.rows) != N * NM:
            raise ValueError(f"a track's rows need {NM} metrics each")
        acc = [0.0] * NM
        cum = array("d", acc)
        for r in rows:
            for m in range(NM):
                acc[m] += r[m] * DT
            cum.extend(acc)
        self.cum = cum
        self.totals: Row = tuple(acc)
        # y' = (act - y) / tau, exact for piecewise-constant act; start from the periodic fixed
        # point y0 = b / (1 - a^N), where b is where one period ends when started from 0.
        a = math.exp(-DT / TAU_S)
        y = 0.0
        for r in rows:
            y = y * a + r[ACT] * (1.0 - a)
        y = y / (1.0 - a**N)
        lag = array("d", [y])
        for r in rows:
            y = y * a + r[ACT] * (1.0 - a)
            lag.append(y)
        self.lag = lag

    def row(self, i: int) -> Row:
        """Row ``i`` (0 <= i < N)."""
        return tuple(self.rows[i * NM : (i + 1) * NM])

    def _integral(self, t: float) -> list[float]:
        x = t / DT
        n = math.floor(x)
        q, i = divmod(n, N)
        f = (x - n) * DT
        rows, cum, tot, base = self.rows, self.cum, self.totals, i * NM
        return [q * tot[m] + cum[base + m] + f * rows[base + m] for m in range(NM)]

    def integral(self, t: float, m: int) -> float:
        """∫ metric ``m`` from 0 to ``t`` (seconds; negative ``t`` gives a negative integral)."""
        x = t / DT
        n = math.floor(x)
        q, i = divmod(n, N)
        k = i * NM + m
        return q * self.totals[m] + self.cum[k] + (x - n) * DT * self.rows[k]

    def at(self, t: float) -> Row:
        """Instantaneous row at ``t``."""
        return self.row(math.floor(t / DT) % N)

    def window(self, t0: float, t1: float) -> Row | list[float]:
        """Averages of every metric over [t0, t1]; the instantaneous row for an empty window."""
        w = t1 - t0
        if w < 1e-9:
            return self.at(t1)
        c0 = self._integral(t0)
        c1 = self._integral(t1)
        inv = 1.0 / w
        return [(b - a) * inv for a, b in zip(c0, c1, strict=True)]

    def lagged(self, t: float) -> float:
        """Activity after the thermal first-order lag, in periodic steady state."""
        x = t / DT
        n = math.floor(x)
        i = n % N
        y0 = self.lag[i]
        return y0 + (self.lag[i + 1] - y0) * (x - n)


IDLE = Track([IDLE_ROW] * N)


def compose(tracks: Sequence[Track]) -> Track:
    """Several processes on one GPU: activities add up, percentages saturate."""
    if not tracks:
        return IDLE
    if len(tracks) == 1:
        return tracks[0]
    rows = []
    for i in range(N):
        parts = [t.row(i) for t in tracks]
        rows.append(tuple(min(_CAPS[m], sum(p[m] for p in parts)) for m in range(NM)))
    return Track(rows)


class _Builder:
    """Appends rows until a period is full, then rotates by a random phase."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.rows: list[Row] = []

    @property
    def full(self) -> bool:
        return len(self.rows) >= N

    def add(self, seconds: float, make: Callable[[int], Row]) -> None:
        for k in range(max(1, round(seconds / DT))):
            self.rows.append(make(k))

    def track(self) -> Track:
        rows = self.rows[:N]
        shift = self.rng.randrange(N)
        return Track(rows[shift:] + rows[:shift])


def training(
    rng: random.Random,
    *,
    step_s: float,
    stall_every: tuple[int, int] = (8, 13),
    stall_s: tuple[float, float] = (2.5, 4.0),
    compute_frac: float = 0.75,
    act: tuple[float, float] = (0.9, 1.0),
    nvl_peak: tuple[float, float] = (260e9, 380e9),
    nvl_base: tuple[float, float] = (6e9, 22e9),
    prx_burst: tuple[float, float] = (3e9, 7e9),
) -> Track:
    """Synchronous data-parallel training: compute, then an all-reduce burst on NVLink/XGMI at the
    end of each step; every few steps the data loader falls behind and the GPU starves for seconds.
    All ranks share one track: they are in lockstep."""
    b = _Builder(rng)
    u = rng.uniform
    until_stall = rng.randint(*stall_every)
    while not b.full:
        if until_stall == 0:
            b.add(
                u(*stall_s),
                lambda k: row(
                    util=u(3.0, 38.0),
                    act=u(0.08, 0.2),
                    memu=u(1.0, 6.0),
                    nvl=u(0.2e9, 1.5e9),
                    prx=u(0.3e9, 1.2e9),
                    ptx=u(1e7, 3e7),
                ),
            )
            until_stall = rng.randint(*stall_every)
            continue
        dur = step_s * u(0.96, 1.05)
        level = u(*act)
        burst = u(*prx_burst)

        def compute(k: int, level: float = level, burst: float = burst) -> Row:
            return row(
                util=u(97.0, 100.0),
                act=min(1.0, level + u(-0.03, 0.03)),
                memu=u(35.0, 55.0),
                nvl=u(*nvl_base),
                prx=burst if k == 0 else u(0.8e8, 2.5e8),
                ptx=u(1e7, 4e7),
            )

        b.add(dur * compute_frac, compute)
        peak = u(*nvl_peak)

        def exchange(k: int, peak: float = peak) -> Row:
            return row(
                util=u(98.0, 100.0),
                act=u(0.55, 0.68),
                memu=u(15.0, 30.0),
                nvl=peak * u(0.9, 1.0),
                prx=u(0.8e8, 2.5e8),
                ptx=u(1e7, 4e7),
            )

        b.add(dur * (1.0 - compute_frac), exchange)
        until_stall -= 1
    return b.track()


def inference(rng: random.Random, *, mean_gap_s: float = 6.0) -> Track:
    """An LLM server (vLLM): idle gaps, then bursts of decoding at varying batch sizes with
    compute-heavy prefill spikes. Decode is memory-bound: busy util, moderate power."""
    b = _Builder(rng)
    u = rng.uniform
    while not b.full:
        b.add(
            min(40.0, rng.expovariate(1.0 / mean_gap_s)),
            lambda k: row(act=0.06, ptx=u(0.0, 2e5), prx=u(0.0, 2e5)),
        )
        level = u(0.15, 1.0)

        def busy(k: int, level: float = level) -> Row:
            if rng.random() < 0.08:  # prefill of a new request
                return row(util=100.0, act=u(0.85, 1.0), memu=u(30, 45), prx=u(1e6, 8e6))
            return row(
                util=min(100.0, 62.0 + 38.0 * level + u(-6.0, 6.0)),
                act=0.3 + 0.45 * level + u(-0.04, 0.04),
                memu=min(100.0, 35.0 + 50.0 * level + u(-5.0, 5.0)),
                prx=u(2e5, 2e6),
                ptx=u(1e5, 1e6),
            )

        b.add(u(2.0, 25.0), busy)
    return b.track()


def holding(act: float = 0.05) -> Track:
    """A process with a CUDA context and memory but no kernels (an idle notebook kernel)."""
    return Track([row(act=act)] * N)


def notebook_cells(rng: random.Random) -> Track:
    """A notebook that runs a heavy cell every couple of minutes and idles in between."""
    b = _Builder(rng)
    u = rng.uniform
    while not b.full:
        b.add(u(40.0, 150.0), lambda k: row(act=0.05))
        b.add(
            u(15.0, 45.0),
            lambda k: row(
                util=u(94.0, 100.0),
                act=u(0.8, 0.92),
                memu=u(40.0, 60.0),
                prx=u(1.5e9, 3e9) if k < 4 else u(1e6, 1e7),
                ptx=u(1e6, 5e6),
            ),
        )
    return b.track()


def diffusion(rng: random.Random) -> Track:
    """Image generation (ComfyUI): text encode, sampling at full power, a VAE decode spike."""
    b = _Builder(rng)
    u = rng.uniform
    while not b.full:
        b.add(u(3.0, 25.0), lambda k: row(act=0.04))
        b.add(0.5, lambda k: row(util=u(50.0, 70.0), act=0.5, memu=20.0, prx=u(1e8, 5e8)))
        b.add(
            u(5.0, 13.0),
            lambda k: row(util=u(98.0, 100.0), act=u(0.94, 1.02), memu=u(50.0, 62.0)),
        )
        b.add(0.75, lambda k: row(util=100.0, act=1.05, memu=u(65.0, 75.0), ptx=u(5e7, 2e8)))
    return b.track()


def desktop(rng: random.Random) -> Track:
    """The X server / compositor: a few percent of graphics work."""
    u = rng.uniform
    return Track([row(util=u(0.0, 4.0), act=0.03, memu=u(0.0, 3.0)) for _ in range(N)])


def video_encode(rng: random.Random) -> Track:
    """ffmpeg with NVDEC decode and NVENC encode: busy media engines, a little SM work."""
    u = rng.uniform
    return Track(
        [
            row(
                util=u(4.0, 9.0),
                act=0.09,
                memu=u(4.0, 8.0),
                prx=u(0.8e8, 1.6e8),
                ptx=u(3e6, 9e6),
                enc=u(38.0, 52.0),
                dec=u(18.0, 28.0),
            )
            for _ in range(N)
        ]
    )


def scaled(track: Track, fraction: float) -> Track:
    """``track`` as its whole GPU sees it when it runs in ``fraction`` of it (a MIG instance):
    every metric scaled down, so instances' activities add up to the GPU's."""
    return Track([tuple(v * fraction for v in track.row(i)) for i in range(N)])


def worker_pool(rng: random.Random) -> Track:
    """Hundreds of small inference workers sharing one GPU: never idle, the load drifting between
    half and nearly full as traffic comes and goes, with short prefill spikes."""
    b = _Builder(rng)
    u = rng.uniform
    while not b.full:
        level = u(0.35, 0.95)

        def busy(k: int, level: float = level) -> Row:
            if rng.random() < 0.05:
                return row(util=100.0, act=u(0.8, 0.95), memu=u(35, 50), prx=u(2e7, 9e7))
            return row(
                util=min(100.0, 45.0 + 55.0 * level + u(-5.0, 5.0)),
                act=0.25 + 0.5 * level + u(-0.04, 0.04),
                memu=min(100.0, 25.0 + 55.0 * level + u(-5.0, 5.0)),
                prx=u(5e6, 4e7),
                ptx=u(2e6, 2e7),
            )

        b.add(u(4.0, 20.0), busy)
    return b.track()
