"""Choosing GPUs for a job: which are free and healthy, and which of those lie closest together.

A GPU qualifies when, over a series of readings (the health rules judging each):

- it is healthy: answering, not lost, no active ``fail`` finding about it (``strict``: no
  ``warn`` either; findings about other users' processes are about use, not health);
- it is not in MIG mode (a job must name a MIG instance's UUID there, not the GPU);
- its utilization stayed at or below ``max_util_pct`` (default 10 %) in every reading;
- memory: without ``min_free_bytes`` it holds no more than 1 GiB (nobody holds it: a driver
  context alone stays under that); with ``min_free_bytes`` at least that much was free in every
  reading (sharing a GPU with somebody else's idle process is then allowed);
- ``idle_for_s``: every process on it has run at least that long. The readings cannot see the
  past: idleness is judged over them, and a process that started within ``idle_for_s`` (it may
  not have begun its work) disqualifies the GPU; so does one whose start time cannot be read.

Among the GPUs that qualify, the ``count`` closest to each other are chosen: the set whose
farthest pair is nearest (NVLink / XGMI, then one PCIe switch, several switches, the host bridge,
the NUMA node, across NUMA nodes), then the nearest in all, then the most free memory.

Pure functions over snapshots: ``gputui pick`` (:mod:`gputui.commands.pick`) reads the GPUs and
prints; any view can judge and choose the same way.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from gputui.core.format import fmt_bytes, fmt_duration, sanitize
from gputui.core.frozen import frozen
from gputui.core.model import NodeInfo, Snapshot
from gputui.core.topology import build_matrix
from gputui.core.usage import HELD_MEMORY_BYTES

DEFAULT_MAX_UTIL_PCT = 10.0
USAGE_RULES = frozenset({"other_processes", "idle_memory"})
"""Findings about who uses a GPU, not about its health (use is judged by the criteria)."""
MAX_COMBINATIONS = 20_000
"""Beyond this many candidate sets, sets are grown greedily instead of all compared."""

_LEVEL_RANK = {"PIX": 2, "PXB": 3, "PHB": 4, "PCIE": 4, "NODE": 5, "SYS": 6}
_PCIE_RANK = {"PIX": 0, "PXB": 1, "PHB": 2, "NODE": 3, "SYS": 4}


@frozen
class Criteria:
    """What a GPU must meet to be chosen (see the module doc)."""

    count: int = 1
    min_free_bytes: int | None = None
    max_util_pct: float = DEFAULT_MAX_UTIL_PCT
    idle_for_s: float | None = None
    strict: bool = False


@frozen
class Judged:
    """One GPU judged against the criteria."""

    index: int
    reasons: tuple[str, ...] = ()
    """Why it does not qualify; empty when it does."""
    warnings: tuple[str, ...] = ()
    """Warnings about its health (it qualifies, after the GPUs without any)."""
    free_bytes: int | None = None
    peak_util_pct: float | None = None

    @property
    def qualifies(self) -> bool:
        return not self.reasons


@frozen
class Pick:
    """The GPUs picked (increasing index) and how every GPU was judged."""

    chosen: tuple[int, ...]
    judged: tuple[Judged, ...]
    wanted: int

    @property
    def complete(self) -> bool:
        return len(self.chosen) >= self.wanted


def judge(
    readings: Sequence[Snapshot],
    criteria: Criteria,
    candidates: frozenset[int] | None = None,
    *,
    window_s: float | None = None,
) -> list[Judged]:
    """Every GPU of the node in the last reading, judged over ``readings``; GPUs outside
    ``candidates`` are not judged (None: all)."""
    last = readings[-1]
    window = window_s if window_s is not None else max(last.timestamp - readings[0].timestamp, 0)
    out = []
    for info in last.node.gpus:
        if candidates is not None and info.index not in candidates:
            continue
        out.append(_judge_one(readings, info.index, criteria, window))
    return out


def _judge_one(
    readings: Sequence[Snapshot], index: int, criteria: Criteria, window: float
) -> Judged:
    last = readings[-1]
    info = last.node.gpu(index)
    samples = [s for r in readings if (s := r.sample(index)) is not None]
    if not samples or samples[-1].lost or any(s.lost for s in samples):
        error_text = samples[-1].error if samples and samples[-1].error else None
        return Judged(index, (f"lost: {error_text or 'fell off the bus'}",))
    reasons: list[str] = []
    warnings: list[str] = []
    for f in last.findings:
        if f.gpu_index != index or not f.active or f.rule in USAGE_RULES:
            continue
        if f.severity == "fail":
            reasons.append(f"unhealthy: {f.message} [{f.rule}]")
        elif f.severity == "warn":
            (reasons if criteria.strict else warnings).append(f"warning: {f.message} [{f.rule}]")
    if info is not None and info.mig_enabled:
        reasons.append("in MIG mode: a job names a MIG instance's UUID there, not the GPU")
    utils = [s.utilization_gpu_pct for s in samples]
    peak = None if any(u is None for u in utils) else max(u for u in utils if u is not None)
    if criteria.max_util_pct < 100:
        if peak is None:
            reasons.append("utilization not reported: cannot tell it is idle (--max-util 100)")
        elif peak > criteria.max_util_pct:
            reasons.append(
                f"busy: utilization up to {peak:.0f} % over {window:.1f} s "
                f"(--max-util {criteria.max_util_pct:g})"
            )
    frees = [_free(s.memory_free_bytes, s.memory_used_bytes, s.memory_total_bytes) for s in samples]
    free = None if any(f is None for f in frees) else min(f for f in frees if f is not None)
    procs = [p for p in last.processes_on(index) if not p.exited]
    if criteria.min_free_bytes is not None:
        if free is None:
            reasons.append("free memory not reported")
        elif free < criteria.min_free_bytes:
            reasons.append(
                f"{fmt_bytes(free)} free, needs {fmt_bytes(criteria.min_free_bytes)} (--min-free)"
            )
    else:
        used = [s.memory_used_bytes for s in samples]
        held = None if any(u is None for u in used) else max(u for u in used if u is not None)
        if held is None:
            reasons.append("memory use not reported")
        elif held > HELD_MEMORY_BYTES:
            whose = f" by {_processes_text(procs)}" if procs else ""
            reasons.append(
                f"held: {fmt_bytes(held)} in use{whose} (a free GPU holds at most "
                f"{HELD_MEMORY_BYTES / 2**30:g} GiB; --min-free SIZE allows sharing)"
            )
    if criteria.idle_for_s is not None:
        for p in procs:
            running = p.running_for(last.timestamp)
            if running is None:
                reasons.append(f"PID {p.pid}: start time unknown (--idle-for)")
            elif running < criteria.idle_for_s:
                reasons.append(
                    f"PID {p.pid} ({sanitize(p.user or '?')}) started {fmt_duration(running)} "
                    f"ago (--idle-for {fmt_duration(criteria.idle_for_s)})"
                )
    return Judged(index, tuple(reasons), tuple(warnings), free, peak)


def _free(free: int | None, used: int | None, total: int | None) -> int | None:
    if free is not None:
        return free
    return None if used is None or total is None else max(total - used, 0)


def _processes_text(procs: Sequence[object]) -> str:
    n = len(procs)
    return f"{n} process{'es' if n != 1 else ''}"


def distance(node: NodeInfo, a: int, b: int) -> int:
    """How far apart two GPUs are (smaller is closer): NVLink first (NVLink pairs then by their
    PCIe level: behind one switch is closer), XGMI by hops, then the PCIe level, unknown last."""
    return _distances(node, [a, b])[a, b]


def choose(node: NodeInfo, judged: Sequence[Judged], count: int) -> tuple[int, ...]:
    """The ``count`` qualifying GPUs closest to each other (all of them when fewer qualify)."""
    ok = sorted(
        (j for j in judged if j.qualifies),
        key=lambda j: (bool(j.warnings), -(j.free_bytes or 0), j.peak_util_pct or 0.0, j.index),
    )
    if len(ok) <= count:
        return tuple(sorted(j.index for j in ok))
    if count == 1:
        return (ok[0].index,)
    rank = {j.index: r for r, j in enumerate(ok)}
    matrix = _distances(node, [j.index for j in ok])

    def score(group: Sequence[int]) -> tuple[int, int, int, tuple[int, ...]]:
        pairs = [matrix[a, b] for a, b in itertools.combinations(group, 2)]
        return (max(pairs), sum(pairs), sum(rank[i] for i in group), tuple(sorted(group)))

    indices = [j.index for j in ok]
    if math.comb(len(indices), count) <= MAX_COMBINATIONS:
        groups: Sequence[Sequence[int]] = list(itertools.combinations(indices, count))
    else:  # grow a set from each GPU, adding the nearest (then the preferred) each time
        groups = []
        for start in indices:
            group = [start]
            while len(group) < count:
                rest = [i for i in indices if i not in group]
                group.append(min(rest, key=lambda i: (max(matrix[i, g] for g in group), rank[i])))
            groups.append(group)
    best = min(groups, key=score)
    return tuple(sorted(best))


def _distances(node: NodeInfo, indices: Sequence[int]) -> dict[tuple[int, int], int]:
    matrix = build_matrix(node) if node.topology is not None else None
    out: dict[tuple[int, int], int] = {}
    for a, b in itertools.combinations(indices, 2):
        if matrix is None:
            value = 70
        else:
            value = _cell_distance(node, matrix.cell(a, b).kind, matrix.cell(a, b).code, a, b)
        out[a, b] = out[b, a] = value
    return out


def _cell_distance(node: NodeInfo, kind: str, code: str, a: int, b: int) -> int:
    assert node.topology is not None
    path = node.topology.path(a, b)
    if kind == "nvlink":
        return _PCIE_RANK.get((path.pcie_level or "").upper(), 5) if path is not None else 5
    if kind == "xgmi":
        return 10 * (path.hops if path is not None and path.hops else 1)
    return 10 * _LEVEL_RANK.get(code, 7)


def pick(
    readings: Sequence[Snapshot],
    criteria: Criteria,
    candidates: frozenset[int] | None = None,
    *,
    window_s: float | None = None,
) -> Pick:
    """Judge every candidate over ``readings`` (taken over ``window_s``; default: their time
    span) and choose (see the module doc)."""
    judged = judge(readings, criteria, candidates, window_s=window_s)
    chosen = choose(readings[-1].node, judged, criteria.count)
    return Pick(chosen, tuple(judged), criteria.count)


__all__ = [
    "DEFAULT_MAX_UTIL_PCT",
    "MAX_COMBINATIONS",
    "USAGE_RULES",
    "Criteria",
    "Judged",
    "Pick",
    "choose",
    "distance",
    "judge",
    "pick",
]
