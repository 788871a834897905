"""GPU processes as a tree: each under its parent when the parent uses a GPU too, and processes
that share a parent that does not (the ranks ``torchrun`` started) under a row for that parent.

The rows come in the order given (sorted by the table's column): a subtree is placed where its
first row would be, its children keep their order among themselves. Parents come from
``ProcessSample.ppid`` and ``parent_name``, read with the process (never from this machine's
``/proc`` when shown: a replay's PIDs are another machine's).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from gputui.core.frozen import frozen
from gputui.core.model import ProcessSample

LAUNCHER_GPU = -1
"""The ``gpu_index`` of a parent's row: it uses no GPU itself."""


@frozen
class TreeRow:
    """One row of the tree."""

    process: ProcessSample
    prefix: str
    """The branch drawn before the command: ``├─ ``, ``│  └─ ``; '' for a top row."""
    launcher: bool = False
    """A parent that uses no GPU (a synthesized row: PID, user and name only)."""
    children: int = 0
    """How many rows hang below this one (all levels)."""


def _launcher(pid: int, members: list[ProcessSample]) -> ProcessSample:
    users = {p.user for p in members}
    return ProcessSample(
        pid=pid,
        gpu_index=LAUNCHER_GPU,
        user=users.pop() if len(users) == 1 else None,
        name=members[0].parent_name,
        start_time=None,
    )


def process_tree(rows: Sequence[ProcessSample]) -> list[TreeRow]:
    """``rows`` arranged as a tree (see the module's docstring)."""
    first_row: dict[int, ProcessSample] = {}
    for row in rows:
        first_row.setdefault(row.pid, row)
    children: dict[int, list[ProcessSample]] = {}
    tops: list[ProcessSample] = []
    for row in rows:
        parent = first_row.get(row.ppid) if row.ppid is not None else None
        if parent is not None and parent.pid != row.pid:
            children.setdefault(id(parent), []).append(row)
        else:
            tops.append(row)
    shared = Counter(row.ppid for row in tops if row.ppid)
    out: list[TreeRow] = []
    placed: set[int] = set()

    def emit(row: ProcessSample, lead: str, branch: str) -> None:
        if id(row) in placed:  # a cycle in garbled parent ids: each row once
            return
        placed.add(id(row))
        at = len(out)
        out.append(TreeRow(row, lead + branch))
        below = lead + ("" if not branch else "   " if branch == "└─ " else "│  ")
        kids = [k for k in children.get(id(row), ()) if id(k) not in placed]
        for i, kid in enumerate(kids):
            emit(kid, below, "└─ " if i == len(kids) - 1 else "├─ ")
        out[at] = TreeRow(row, lead + branch, children=len(out) - at - 1)

    launchers: set[int] = set()
    for row in tops:
        ppid = row.ppid
        if ppid and shared[ppid] >= 2:
            if ppid in launchers:
                continue
            launchers.add(ppid)
            members = [t for t in tops if t.ppid == ppid]
            at = len(out)
            out.append(TreeRow(_launcher(ppid, members), "", launcher=True))
            for i, member in enumerate(members):
                emit(member, "", "└─ " if i == len(members) - 1 else "├─ ")
            out[at] = TreeRow(out[at].process, "", launcher=True, children=len(out) - at - 1)
        else:
            emit(row, "", "")
    for row in rows:  # parents in a cycle (garbled ids) are nobody's children: shown at the top
        if id(row) not in placed:
            emit(row, "", "")
    return out


__all__ = ["LAUNCHER_GPU", "TreeRow", "process_tree"]
