"""``gputui pick``: which GPUs are free, as a value for ``CUDA_VISIBLE_DEVICES``.

``gputui pick -n 2 [--min-free 40G] [--max-util 10] [--idle-for 5m] [--format indices|uuids|env]``

A GPU qualifies when, over a short sampling window (``--window``, default 2 s: a reading every
0.5 s, the health rules judging each):

- it is healthy: answering, not lost, no active ``fail`` finding about it (``--strict``: no
  ``warn`` either; findings about other users' processes are about use, not health);
- it is not in MIG mode (a job must name a MIG instance's UUID there, not the GPU);
- its utilization stayed at or below ``--max-util`` (default 10 %) in every reading;
- memory: without ``--min-free`` it holds no more than 1 GiB (nobody holds it: a driver context
  alone stays under that); with ``--min-free SIZE`` at least SIZE was free in every reading
  (sharing a GPU with somebody else's idle process is then allowed);
- ``--idle-for D``: every process on it has run at least D. A one-shot command cannot see the
  past: idleness is judged over the window, and a process that started within D (it may not
  have begun its work) disqualifies the GPU; so does one whose start time cannot be read.

Among the GPUs that qualify, the ``n`` closest to each other are picked: the set whose farthest
pair is nearest (NVLink / XGMI, then one PCIe switch, several switches, the host bridge, the NUMA
node, across NUMA nodes), then the nearest in all, then the most free memory. Candidates are
``--gpus``, else ``CUDA_VISIBLE_DEVICES``, else every GPU.

Output (stdout): NVML indices in increasing order (``2,3``), UUIDs (``--format uuids``), or
``export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=2,3`` (``--format env``; on AMD
``export HIP_VISIBLE_DEVICES=2,3``). The indices are NVML's: CUDA numbers devices the same way
only with ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (otherwise fastest first), so the ``env`` form sets it,
and ``indices`` says so on stderr when the environment does not.

Exit codes: 0 found ``n``; 1 fewer qualify (stdout has the ones that do, stderr why the others
do not); 2 no GPU, a driver that does not answer, or a bad argument.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TextIO

from gputui.commands.output import emit, error
from gputui.exitcodes import EXIT_FAILED, EXIT_NO_GPU, EXIT_OK, EXIT_USAGE
from gputui.format import fmt_bytes, fmt_duration, sanitize
from gputui.model import NodeInfo, Snapshot
from gputui.sampler import Sampler
from gputui.selection import CUDA_ORDER_NOTE, select_gpus
from gputui.session import BackendSpec, SessionError, open_session
from gputui.topology import build_matrix
from gputui.usage import HELD_MEMORY_BYTES

Format = Literal["indices", "uuids", "env"]
FORMATS: tuple[Format, ...] = ("indices", "uuids", "env")
EXIT_TOO_FEW = 1
DEFAULT_MAX_UTIL_PCT = 10.0
DEFAULT_WINDOW_S = 2.0
MAX_WINDOW_S = 60.0
READING_GAP_S = 0.5
READING_WAIT_S = 5.0
"""How long one reading may take before the driver counts as not responding."""
USAGE_RULES = frozenset({"other_processes", "idle_memory"})
"""Findings about who uses a GPU, not about its health (use is judged by the criteria)."""
MAX_COMBINATIONS = 20_000
"""Beyond this many candidate sets, sets are grown greedily instead of all compared."""

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_LEVEL_RANK = {"PIX": 2, "PXB": 3, "PHB": 4, "PCIE": 4, "NODE": 5, "SYS": 6}
_PCIE_RANK = {"PIX": 0, "PXB": 1, "PHB": 2, "NODE": 3, "SYS": 4}


def parse_size(text: str) -> int:
    """Bytes in ``40G`` / ``40GiB`` (binary), ``40GB`` (decimal), ``512M``, ``1.5T``; a bare
    number is GiB. ValueError otherwise."""
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a size (e.g. 40G, 40GiB, 40GB, 512M)")
    number, prefix, suffix = float(match.group(1)), match.group(2).lower(), match.group(3).lower()
    power = "kmgt".index(prefix) + 1 if prefix else 3  # a bare number is GiB
    if suffix == "b" and prefix:  # "GB": decimal
        return int(number * 1000**power)
    if suffix and not prefix:
        raise ValueError(f"{text!r} is not a size (give a unit: 40G, 40GiB, 40GB)")
    return int(number * 1024**power)


@dataclass(frozen=True, slots=True)
class Criteria:
    """What a GPU must meet to be picked (see the module doc)."""

    count: int = 1
    min_free_bytes: int | None = None
    max_util_pct: float = DEFAULT_MAX_UTIL_PCT
    idle_for_s: float | None = None
    strict: bool = False


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
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


# -- choosing ----------------------------------------------------------------------------------


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


# -- output ------------------------------------------------------------------------------------


def render_pick(node: NodeInfo, chosen: Sequence[int], fmt: Format) -> str:
    """What goes to stdout ('' when nothing was picked)."""
    if not chosen:
        return ""
    if fmt == "uuids":
        return ",".join(info.uuid for i in chosen if (info := node.gpu(i)) is not None)
    indices = ",".join(str(i) for i in chosen)
    if fmt == "env":
        if _vendor(node) == "amd":
            return f"export HIP_VISIBLE_DEVICES={indices}"
        return f"export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES={indices}"
    return indices


def explain(result: Pick, node: NodeInfo) -> list[str]:
    """One line per judged GPU: picked, qualifies, or why not."""
    lines = []
    for j in sorted(result.judged, key=lambda j: j.index):
        if j.index in result.chosen:
            state = "picked"
        elif j.qualifies:
            state = "qualifies (not needed, or farther from the others)"
        else:
            state = "; ".join(j.reasons)
        extra = f" ({'; '.join(j.warnings)})" if j.warnings and j.qualifies else ""
        lines.append(f"  GPU {j.index}: {state}{extra}")
    return lines


def _vendor(node: NodeInfo) -> str:
    return node.gpus[0].vendor if node.gpus else "nvidia"


def take_readings(
    sampler: Sampler, *, window_s: float, sleep: Callable[[float], None]
) -> list[Snapshot]:
    """Readings every :data:`READING_GAP_S` over ``window_s`` (at least two); a reading the
    driver did not answer ends the series."""
    count = max(2, int(window_s / READING_GAP_S) + 1)
    readings = [sampler.poll(deadline=sampler.deadline)]
    for _ in range(count - 1):
        if readings[-1].stall is not None:
            break
        sleep(READING_GAP_S)
        readings.append(sampler.poll(deadline=sampler.deadline))
    return readings


def options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of :func:`run` from the command line's ``pick`` arguments."""
    return {
        "count": args.count,
        "min_free_bytes": args.min_free,
        "max_util_pct": args.max_util,
        "idle_for_s": args.idle_for,
        "fmt": args.pick_format,
        "gpus": args.gpus,
        "strict": args.strict,
        "window_s": args.pick_window,
        "verbose": args.verbose,
    }


def run(
    spec: BackendSpec,
    *,
    seed: int = 0,
    count: int = 1,
    min_free_bytes: int | None = None,
    max_util_pct: float = DEFAULT_MAX_UTIL_PCT,
    idle_for_s: float | None = None,
    fmt: Format = "indices",
    gpus: str | None = None,
    strict: bool = False,
    window_s: float = DEFAULT_WINDOW_S,
    verbose: bool = False,
    sleep: Callable[[float], None] = time.sleep,
    environ: Mapping[str, str] | None = None,
    out: TextIO | None = None,
) -> int:
    """Read the GPUs over the window, pick, print; the exit code (see the module doc)."""
    env = os.environ if environ is None else environ
    if count < 1:
        error("gputui pick: -n: pick at least 1 GPU")
        return EXIT_USAGE
    if spec.replayed:
        error("gputui pick: pick reads the GPUs as they are now; it cannot pick from a recording")
        return EXIT_USAGE
    criteria = Criteria(count, min_free_bytes, max_util_pct, idle_for_s, strict)
    window_s = min(max(window_s, 0.0), MAX_WINDOW_S)
    try:
        session = open_session(
            spec,
            seed=seed,
            interval=READING_GAP_S,
            slow_interval=READING_GAP_S,
            deadline=READING_WAIT_S,
        )
    except SessionError as exc:
        error(str(exc))
        return EXIT_NO_GPU
    with session:
        node = session.node
        try:
            selection = select_gpus(node, gpus, env)
        except ValueError as exc:
            error(f"gputui pick: {exc}")
            return EXIT_USAGE
        if not node.gpus or selection.none_visible:
            why = selection.none_visible or "the node lists no GPU"
            error(f"gputui pick: no GPU to pick from: {why}")
            return EXIT_NO_GPU
        readings = take_readings(session.sampler, window_s=window_s, sleep=sleep)
    if readings[-1].stall is not None:
        error(f"gputui pick: {session.backend.name} is not answering (a driver call hangs)")
        return EXIT_FAILED
    window = (len(readings) - 1) * READING_GAP_S
    result = pick(readings, criteria, selection.indices, window_s=window)
    text = render_pick(node, result.chosen, fmt)
    if text:
        emit(text, out)
    notes = [f"gputui pick: note: {n}" for n in selection.notes]
    if selection.source != "all":
        notes.append(f"gputui pick: candidates from {selection.source}")
    for token in selection.unknown:
        notes.append(f"gputui pick: {selection.source} names no GPU of this node: {token}")
    if (
        fmt == "indices"
        and result.chosen
        and _vendor(node) == "nvidia"
        and env.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID"
        and CUDA_ORDER_NOTE not in selection.notes
    ):
        notes.append(
            f"gputui pick: note: {CUDA_ORDER_NOTE}; --format env sets CUDA_DEVICE_ORDER too"
        )
    if not result.complete:
        got, asked = len(result.chosen), criteria.count
        head = (
            f"gputui pick: {got} GPU{'s' if got != 1 else ''} qualif{'y' if got != 1 else 'ies'}"
            f", {asked} asked for"
        )
        error("\n".join([head + ":", *explain(result, node), *notes]))
        return EXIT_TOO_FEW
    if verbose:
        notes = [*explain(result, node), *notes]
    if notes:
        error("\n".join(notes))
    return EXIT_OK


__all__ = [
    "DEFAULT_MAX_UTIL_PCT",
    "DEFAULT_WINDOW_S",
    "EXIT_TOO_FEW",
    "FORMATS",
    "MAX_WINDOW_S",
    "Criteria",
    "Judged",
    "Pick",
    "choose",
    "distance",
    "explain",
    "judge",
    "options",
    "parse_size",
    "pick",
    "render_pick",
    "run",
]
