"""Stragglers: a GPU that keeps running slower than its siblings during a live job, found
passively (no load is added) from the readings the dashboard already takes.

Siblings are the GPUs one Slurm job or Kubernetes pod runs on, when attribution knows it; else
the node's busy GPUs of the same model. A GPU whose SM clock, power or utilisation stays more than
``straggler_pct`` (10 %) below the median of its siblings' for ``straggler_seconds`` (30 s) is a
``straggler`` (warn), with the numbers and what holds it down. Each reading compares the GPU with
its siblings at that same reading, so a job's own ups and downs (a checkpoint, an all-reduce
wait) move every sibling together and flag none. With ``straggler_seconds`` 0 (``gputui check``:
its readings are its whole window) the GPU must lag in every reading there is.

Less work is not slowness: the clock and power of a GPU count only while it is at least
:data:`BUSY_PCT` busy and about as busy as its siblings (within the same threshold of their
median utilisation), and utilisation itself is compared only within one job or pod, whose GPUs
are given the same work. Among GPUs that merely share a model (independent inference servers,
say) only the clock is compared.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable

from gputui.core.model import Finding, Snapshot
from gputui.core.performance import LIMITER_WORDS
from gputui.health.rules.context import RuleContext, finding

BUSY_PCT = 50.0
"""A GPU below this utilisation is not judged (an idle GPU's clock and power drop by design)."""
MIN_SIBLINGS = 3
"""Fewest GPUs in a group for a median that can single one out."""

METRICS: tuple[tuple[str, str, str], ...] = (
    ("clock_sm_mhz", "runs at", "MHz"),
    ("power_w", "draws", "W"),
    ("utilization_gpu_pct", "is at", "% utilisation"),
)
"""(history metric, verb, unit), in the order a straggler is described by."""


def sibling_groups(snapshot: Snapshot) -> list[tuple[str, list[int], bool]]:
    """(what ties them, GPU indices, same work): each Slurm job's and pod's GPUs (the same work),
    and the busy GPUs of each model that no job or pod names."""
    groups: dict[str, set[int]] = {}
    attributed: set[int] = set()
    for p in snapshot.processes:
        owner = None
        if p.slurm_job_id:
            owner = f"Slurm job {p.slurm_job_id}"
        elif p.k8s_pod_uid:
            owner = f"pod {p.k8s_pod_name or p.k8s_pod_uid}"
        if owner is not None:
            groups.setdefault(owner, set()).add(p.gpu_index)
            attributed.add(p.gpu_index)
    for s in snapshot.gpus:
        if s.lost or s.index in attributed:
            continue
        if (s.utilization_gpu_pct or 0.0) >= BUSY_PCT:
            info = snapshot.node.gpu(s.index)
            model = info.name if info is not None else "?"
            groups.setdefault(f"busy {model} GPUs", set()).add(s.index)
    jobs = {label for label in groups if not label.startswith("busy ")}
    return [(label, sorted(members), label in jobs) for label, members in groups.items()]


def _lagging_since(
    index: int,
    members: list[int],
    values: dict[int, list[float]],
    busy: dict[int, list[float]] | None,
    fraction: float,
) -> tuple[int, int, float, float] | None:
    """(how many readings back it started, lagging readings, its value now, siblings' median
    now) while GPU
    ``index`` has stayed below ``fraction`` of its siblings' median, counting back from the
    newest reading; None when it does not lag now. ``busy``: utilisation, when the GPU must be
    as busy as its siblings for its value to count (clock and power). A reading where the value
    does not count (the job paused, an unknown value) is skipped: it neither proves nor breaks
    the lag."""
    length = min(len(values[g]) for g in members)
    since = count = 0
    now: tuple[float, float] | None = None
    for back in range(1, length + 1):
        mine = values[index][-back]
        others = [v for g in members if g != index and not math.isnan(v := values[g][-back])]
        if math.isnan(mine) or len(others) < MIN_SIBLINGS - 1:
            continue
        if busy is not None and not _as_busy(index, members, busy, back, fraction):
            continue
        median = statistics.median(others)
        if median <= 0 or mine >= fraction * median:
            break
        if now is None:
            now = (mine, median)
        since, count = back, count + 1
    return None if now is None else (since, count, now[0], now[1])


def _as_busy(
    index: int, members: list[int], busy: dict[int, list[float]], back: int, fraction: float
) -> bool:
    """GPU ``index`` was busy, and about as busy as its siblings, ``back`` readings ago."""
    if len(busy[index]) < back:
        return False
    mine = busy[index][-back]
    others = [v for g in members if g != index and len(busy[g]) >= back for v in (busy[g][-back],)]
    others = [v for v in others if not math.isnan(v)]
    if math.isnan(mine) or mine < BUSY_PCT or not others:
        return False
    return mine >= fraction * statistics.median(others)


def rule_straggler(ctx: RuleContext) -> Iterable[Finding]:
    history = ctx.history
    if history is None or ctx.config.straggler_pct <= 0:
        return
    times = history.timestamps()
    fraction = 1.0 - ctx.config.straggler_pct / 100.0
    flagged: set[int] = set()
    for label, members, same_work in sibling_groups(ctx.snapshot):
        members = [g for g in members if ctx.judged(g)]
        if len(members) < MIN_SIBLINGS:
            continue
        busy = {g: history.gpu_series(g, "utilization_gpu_pct") for g in members}
        for metric, verb, unit in METRICS if same_work else METRICS[:1]:
            values = {g: history.gpu_series(g, metric) for g in members}
            if any(not v for v in values.values()):
                continue
            gate = None if metric == "utilization_gpu_pct" else busy
            for index in members:
                if index in flagged:
                    continue
                lag = _lagging_since(index, members, values, gate, fraction)
                if lag is None:
                    continue
                since, count, mine, median = lag
                span = times[-1] - times[-since] if since <= len(times) else 0.0
                window = ctx.config.straggler_seconds
                if count < 2 or (window > 0 and span < window):
                    continue
                flagged.add(index)
                yield _straggler(ctx, index, label, verb, unit, mine, median, span)


def _straggler(
    ctx: RuleContext,
    index: int,
    label: str,
    verb: str,
    unit: str,
    mine: float,
    median: float,
    span: float,
) -> Finding:
    sample = ctx.snapshot.sample(index)
    why = ""
    if sample is not None and sample.performance is not None:
        limiter = sample.performance.limiter
        if limiter not in ("none", "unknown"):
            why = f": {LIMITER_WORDS[limiter]}"
    space = "" if unit.startswith("%") else " "
    return finding(
        "straggler",
        "warn",
        f"GPU {index} {verb} {mine:,.0f}{space}{unit}, siblings {median:,.0f}{space}{unit}, "
        f"for {span:,.0f} s{why} ({label})",
        "the job runs at the pace of its slowest GPU: check this GPU's cooling, power and clocks "
        "(the limiter says which); drain it before the next job if it persists",
        index,
    )


__all__ = ["MIN_SIBLINGS", "rule_straggler", "sibling_groups"]
