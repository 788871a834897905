"""Which GPUs each Slurm job holds on this node, read from ``scontrol show job -d -o``.

With ``-d`` scontrol adds, per group of a job's nodes that got the same, ``Nodes=<hostlist>
CPU_IDs=... Mem=... GRES=<gres>`` (``GRES_IDX=`` before Slurm 19.05), where each GRES carries the
indices it holds on those nodes: ``gpu:2(IDX:0-1)``, ``gpu:h100:2(IDX:0,2)``, ``gpu(IDX:0-3)``,
several types comma separated (``gpu:h100:2(IDX:0-1),gpu:a100:0(IDX:)``), other GRES beside
them (``shard``, ``mps``), and a job over several nodes has one entry per group
(``Nodes=gpu[01-03,07] ...``). This node is the one whose name :func:`node_name` gives (Slurm's
``SLURMD_NODENAME``, else the short hostname). The index is the device's position in gres.conf,
its minor number where gres.conf lists ``/dev/nvidia0`` ... in order; the engine maps it to a GPU
by minor number (:mod:`gputui.core.allocation_meter`).

Trust: scontrol prints a job's name, command, working directory and output paths as their user
wrote them, a newline included, so a user can write text that looks like GRES detail or like a
whole line of another job. A record counts only where it cannot be such text:

- a line that begins ``JobId=<digits> `` and has `` JobName=``, `` UserId=``, `` JobState=``,
  `` StartTime=``, `` NumNodes=`` and `` MinCPUsNode=`` each exactly once, in that order (a name
  holding any of them makes its own job's line ambiguous);
- its detail is read only between `` NumNodes=`` and `` MinCPUsNode=``, where scontrol prints
  nothing a user wrote (a name comes before, paths after);
- its job id is one ``squeue`` lists on this node (ids only, nothing a user wrote), and no other
  line claims it: a line made up after a newline in a name or path either names a job not here, or
  a real job's id, which then has two lines, and both are left out.

Left-out lines are counted; the status says how many.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import socket
from collections.abc import Mapping

from gputui.core.allocation import Grant
from gputui.core.frozen import frozen
from gputui.core.model import MAX_NAME_CHARS

HELD_STATES = frozenset({"RUNNING", "SUSPENDED", "COMPLETING"})
"""Job states in which a job holds its GPUs (a suspended job keeps its GRES; a completing one
until its epilog ends)."""
MAX_INDEX = 4095
"""The highest GRES index believed (a node has at most a few dozen GPUs)."""
MAX_HOSTLIST = 4096
"""Characters of a hostlist read (longer ones name no node here)."""

_KEYS = ("JobName", "UserId", "JobState", "StartTime", "NumNodes", "MinCPUsNode")
_JOB_ID = re.compile(r"JobId=(\d{1,20}) ")
_NODES = re.compile(r"(?:^|\s)Nodes=(\S+)")
_GRES = re.compile(r"(?:^|\s)(?:GRES|GRES_IDX)=(\S*)")
_USER = re.compile(r"([^\s(]+)(?:\((\d+)\))?")
_ENTRY = re.compile(r"^(?P<name>[^:(]+)(?::[^(]*)?\(IDX:(?P<idx>[^)]*)\)$")


@frozen
class SlurmJobGpus:
    """A job's GPUs on this node, as scontrol says."""

    job_id: str
    name: str | None
    user: str | None
    state: str
    started: float | None
    indices: tuple[int, ...]


@frozen
class ParsedJobs:
    jobs: tuple[SlurmJobGpus, ...]
    rejected: int = 0
    """Lines left out as ambiguous (see the module doc)."""


def node_name(environ: Mapping[str, str] | None = None) -> str:
    """The name Slurm knows this node by: ``SLURMD_NODENAME`` (set in a job's environment, or
    by hand for a node whose NodeName is not its hostname), else the short hostname."""
    env = os.environ if environ is None else environ
    named = env.get("SLURMD_NODENAME", "").strip()
    return named or socket.gethostname().split(".")[0]


# -- hostlists ------------------------------------------------------------------------------------


def _split_top(text: str) -> list[str]:
    """``a[1-2],b`` -> ``["a[1-2]", "b"]``: commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _number(text: str) -> int | None:
    """ASCII digits as a number (at most 18 of them); None otherwise."""
    if 0 < len(text) <= 18 and text.isascii() and text.isdigit():
        return int(text)
    return None


def _in_range(digits: str, ranges: str) -> bool:
    """Whether ``digits`` is one of ``01-04,7`` (zero padding as Slurm writes it: ``01-04``
    names ``01`` ... ``04``, not ``1``)."""
    value = _number(digits)
    if value is None:
        return False
    for part in ranges.split(","):
        lo, dash, hi = part.partition("-")
        low, high = _number(lo), _number(hi if dash else lo)
        if low is None or high is None:
            return False
        width = len(lo) if lo.startswith("0") and len(lo) > 1 else 0
        if width and len(digits) != width:
            continue
        if not width and digits.startswith("0") and digits != "0":
            continue
        if low <= value <= high:
            return True
    return False


def _tokens(pattern: str) -> list[tuple[bool, str]] | None:
    """``gpu[01-04]-ib`` -> literal ``gpu``, range ``01-04``, literal ``-ib``; None if malformed."""
    out: list[tuple[bool, str]] = []
    at = 0
    while at < len(pattern):
        open_at = pattern.find("[", at)
        if open_at < 0:
            out.append((False, pattern[at:]))
            break
        close_at = pattern.find("]", open_at)
        if close_at < 0:
            return None
        if open_at > at:
            out.append((False, pattern[at:open_at]))
        out.append((True, pattern[open_at + 1 : close_at]))
        at = close_at + 1
    return out


def _matches(pattern: str, name: str) -> bool:
    """Whether the host ``pattern`` (``gpu[01-04]-ib``, ``rack[1-2]n[1-8]``) names ``name``.
    Digits may run into what follows (``n[1-2]0`` names ``n10``): each split is tried, each
    (token, position) once."""
    tokens = _tokens(pattern)
    if tokens is None:
        return False
    seen: set[tuple[int, int]] = set()

    def match(t: int, at: int) -> bool:
        if t == len(tokens):
            return at == len(name)
        if (t, at) in seen:
            return False
        seen.add((t, at))
        is_range, text = tokens[t]
        if not is_range:
            return name.startswith(text, at) and match(t + 1, at + len(text))
        end = at
        while end < len(name) and name[end].isascii() and name[end].isdigit():
            end += 1
        return any(
            _in_range(name[at:cut], text) and match(t + 1, cut) for cut in range(end, at, -1)
        )

    return match(0, 0)


def hostlist_has(expression: str, name: str) -> bool:
    """Whether a Slurm hostlist (``gpu[01-04,07],login1``) names ``name``, without expanding
    it."""
    if len(expression) > MAX_HOSTLIST:
        return False
    return any(_matches(part, name) for part in _split_top(expression) if part)


# -- GRES -----------------------------------------------------------------------------------------


def gpu_indices(gres: str) -> tuple[int, ...]:
    """The GPU indices in one ``GRES=`` value: ``gpu:h100:2(IDX:0,2),gpu:a100:0(IDX:)`` ->
    ``(0, 2)``; other GRES and entries without indices (``IDX:N/A``, empty) add none."""
    found: set[int] = set()
    for entry in _split_parens(gres):
        match = _ENTRY.match(entry)
        if match is None or match.group("name") != "gpu":
            continue
        for part in match.group("idx").split(","):
            lo, dash, hi = part.strip().partition("-")
            low, high = _number(lo), _number(hi if dash else lo)
            if low is not None and high is not None and low <= high <= MAX_INDEX:
                found.update(range(low, high + 1))
    return tuple(sorted(found))


def _split_parens(text: str) -> list[str]:
    """``a(1,2),b(3)`` -> ``["a(1,2)", "b(3)"]``: commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p]


# -- records --------------------------------------------------------------------------------------


def _positions(line: str) -> dict[str, int] | None:
    """Where each of :data:`_KEYS` starts, when each is there once and in order; else None."""
    at: dict[str, int] = {}
    for key in _KEYS:
        hits = [m.start() for m in re.finditer(rf" {key}=", line)]
        if len(hits) != 1:
            return None
        at[key] = hits[0]
    order = [at[key] for key in _KEYS]
    return at if order == sorted(order) else None


def _value(line: str, key: str, at: Mapping[str, int]) -> str:
    start = at[key] + len(key) + 2
    end = line.find(" ", start)
    return line[start : end if end >= 0 else len(line)]


def _start_time(text: str) -> float | None:
    """Slurm's local ``2026-11-27T05:11:25``; None for ``Unknown``, ``None`` and the like."""
    try:
        return dt.datetime.fromisoformat(text).timestamp()
    except (ValueError, OverflowError, OSError):
        return None


def _record(line: str, node: str) -> SlurmJobGpus | None:
    """The job of one unambiguous line, with its GPUs on ``node``; None when ambiguous."""
    job = _JOB_ID.match(line)
    at = _positions(line)
    if job is None or at is None:
        return None
    name = line[at["JobName"] + len(" JobName=") : at["UserId"]].strip()
    user = _USER.match(_value(line, "UserId", at))
    detail = line[at["NumNodes"] : at["MinCPUsNode"]]
    indices: set[int] = set()
    groups = list(_NODES.finditer(detail))
    for i, group in enumerate(groups):
        end = groups[i + 1].start() if i + 1 < len(groups) else len(detail)
        if not hostlist_has(group.group(1), node):
            continue
        gres = _GRES.search(detail, group.end(), end)
        if gres is not None:
            indices.update(gpu_indices(gres.group(1)))
    return SlurmJobGpus(
        job_id=job.group(1),
        name=name[:MAX_NAME_CHARS] or None,
        user=user.group(1)[:MAX_NAME_CHARS] if user else None,
        state=_value(line, "JobState", at),
        started=_start_time(_value(line, "StartTime", at)),
        indices=tuple(sorted(indices)),
    )


def parse_jobs(text: str, node: str, listed: set[str] | None = None) -> ParsedJobs:
    """The jobs holding GPUs on ``node`` in ``scontrol show job -d -o`` output. ``listed``: the
    job ids ``squeue`` lists on the node (None: not checked; see the module doc)."""
    records: dict[str, list[SlurmJobGpus]] = {}
    rejected = 0
    for line in text.splitlines():
        if not line.startswith("JobId="):
            continue
        record = _record(line, node)
        if record is None:
            claimed = _JOB_ID.match(line)
            if claimed is None or listed is None or claimed.group(1) in listed:
                rejected += 1
            continue
        records.setdefault(record.job_id, []).append(record)
    jobs = []
    for job_id, found in records.items():
        here = listed is None or job_id in listed
        claims = any(r.indices for r in found)  # GPUs on this node
        if len(found) > 1 or not here:  # two lines for one job, or a job squeue does not list
            rejected += len(found) if (here or claims) else 0
            continue
        job = found[0]
        if claims and job.state in HELD_STATES:
            jobs.append(job)
    jobs.sort(key=lambda j: int(j.job_id))
    return ParsedJobs(tuple(jobs), rejected)


def listed_jobs(text: str) -> set[str]:
    """The job ids of ``squeue --noheader --format=%A`` output (one per line)."""
    return {line.strip() for line in text.splitlines() if line.strip().isdigit()}


def grants_of(jobs: tuple[SlurmJobGpus, ...]) -> tuple[Grant, ...]:
    return tuple(
        Grant(
            scheduler="slurm",
            device=f"IDX {index}",
            minor=index,
            job_id=job.job_id,
            job_name=job.name,
            user=job.user,
            started=job.started,
        )
        for job in jobs
        for index in job.indices
    )


__all__ = [
    "HELD_STATES",
    "ParsedJobs",
    "SlurmJobGpus",
    "gpu_indices",
    "grants_of",
    "hostlist_has",
    "listed_jobs",
    "node_name",
    "parse_jobs",
]
