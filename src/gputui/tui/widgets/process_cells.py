"""What the process table writes in a cell beyond a column's own text (no Textual here): why a row
matched the filter, the match split out to be highlighted, and what a row that exited, was
signalled or hangs in the tree shows before its command."""

from __future__ import annotations

from gputui.core.format import cell_width, sanitize
from gputui.core.model import ProcessSample
from gputui.host.workload import workload_label
from gputui.tui.widgets.line_widget import Line

HIGHLIGHTED = frozenset({"pid", "user", "workload", "command"})
"""Columns whose text the filter matches (:meth:`ProcessTable.matches`), so a match is
highlighted there."""
EXITED = "exited"
"""What an exited process's host columns and command say, instead of ``n/a``."""


def split_match(text: str, needle: str, cls: str, match_cls: str) -> Line:
    """``text`` as pieces, every (case-insensitive) occurrence of ``needle`` in ``match_cls``."""
    lower = text.lower()
    if not needle or len(lower) != len(text):  # a character whose lower case is longer
        return [(text, cls)]
    pieces: Line = []
    start = 0
    at = lower.find(needle)
    while at >= 0:
        if at > start:
            pieces.append((text[start:at], cls))
        pieces.append((text[at : at + len(needle)], match_cls))
        start = at + len(needle)
        at = lower.find(needle, start)
    if start < len(text):
        pieces.append((text[start:], cls))
    return pieces or [(text, cls)]


def hidden_match(process: ProcessSample, needle: str, workload_shown: bool) -> str | None:
    """The text that made ``process`` match ``needle`` when no column shows it (its name, or
    its job, pod or container while JOB / POD is not shown): put before the command."""
    if not needle:
        return None
    shown = [str(process.pid), process.user or "", process.command or ""]
    if any(needle in text.lower() for text in shown):
        return None
    if not process.command and needle in (process.name or "").lower():
        return None  # the command column shows the name
    words = [
        process.slurm_job_id and f"job {process.slurm_job_id}",
        process.slurm_step and f"step {process.slurm_step}",
        process.slurm_job_name,
        process.slurm_job_user,
        process.k8s_pod_name and f"pod {process.k8s_pod_name}",
        process.k8s_namespace,
        process.k8s_pod_uid,
        process.container_name,
        process.container_id,
        process.container_runtime,
    ]
    if workload_shown and needle in workload_label(process).lower():
        return None
    for word in (process.name, *words):
        if word and needle in word.lower():
            return sanitize(word)
    return None


def command_prefix(
    tree_branch: str, signalled: str | None, exited: bool, hidden: str | None
) -> str:
    """What comes before the command: the tree's branch, ``SIGTERM sent``, ``exited``, and the
    hidden text the filter matched in brackets."""
    parts = []
    if signalled:
        parts.append(f"{signalled} sent ·")
    if exited:
        parts.append(f"{EXITED} ·")
    if hidden:
        parts.append(f"[{hidden}]")
    return tree_branch + "".join(f"{part} " for part in parts)


def fits(prefix: str, width: int) -> bool:
    """Whether ``prefix`` leaves a command at least a few cells."""
    return cell_width(prefix) + 4 <= width


__all__ = ["EXITED", "HIGHLIGHTED", "command_prefix", "fits", "hidden_match", "split_match"]
