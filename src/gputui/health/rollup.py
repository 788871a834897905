"""The one roll-up of findings: worst severity, counts, order and the words for them.

Used alike by the dashboard (badges, title bar, findings screen, notifications), ``check``,
``snapshot`` and the exporter. Two views of the same list, chosen explicitly:

- ``active_only=True``: what is wrong *now* (the dashboard's badges, the exporter's status);
- ``active_only=False``: everything still listed, cleared findings included (a verdict over a
  period: ``check`` and ``check --replay``, where something that failed and recovered still
  counts until acknowledged).

``info`` findings never make a status worse than ``ok``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from gputui.core.frozen import frozen
from gputui.core.model import SEVERITY_ORDER, Finding, Severity
from gputui.health.rules import EVENT_RULES, RULES

Status = Literal["ok", "warn", "fail"]

BADGE_SYMBOLS: dict[str, str] = {"ok": "✔", "info": "✔", "warn": "▲", "fail": "✖"}
"""Symbol before the word; the word itself (ok / warn / fail) keeps a badge readable under
NO_COLOR."""

_RULE_RANK = {rule: rank for rank, rule in enumerate(RULES)}


def _counted(findings: Iterable[Finding], active_only: bool) -> Iterable[Finding]:
    return (f for f in findings if f.active) if active_only else findings


def worst(findings: Iterable[Finding], *, active_only: bool = False) -> Severity:
    """The highest severity among ``findings``; ``ok`` if none."""
    best: Severity = "ok"
    for finding in _counted(findings, active_only):
        if SEVERITY_ORDER[finding.severity] > SEVERITY_ORDER[best]:
            best = finding.severity
    return best


def gpu_severity(findings: Iterable[Finding], index: int, *, active_only: bool = False) -> Severity:
    """The worst of the findings about GPU ``index``."""
    return worst((f for f in findings if f.gpu_index == index), active_only=active_only)


def status_of(severity: Severity) -> Status:
    """``ok`` / ``warn`` / ``fail`` (info is ok)."""
    if severity == "fail":
        return "fail"
    return "warn" if severity == "warn" else "ok"


def gpu_status(findings: Iterable[Finding], index: int, *, active_only: bool = False) -> Status:
    return status_of(gpu_severity(findings, index, active_only=active_only))


@frozen
class Counts:
    fail: int = 0
    warn: int = 0
    info: int = 0


def counts(findings: Iterable[Finding], *, active_only: bool = False) -> Counts:
    n = {"fail": 0, "warn": 0, "info": 0, "ok": 0}
    for f in _counted(findings, active_only):
        n[f.severity] += 1
    return Counts(n["fail"], n["warn"], n["info"])


def finding_sort_key(f: Finding) -> tuple[bool, int, int, int, str]:
    """Active before cleared; worst first; within a severity, in rule order (hardware faults
    before busy GPUs), so the first finding (the drain reason in a prolog) names the most telling
    problem; then GPU order (node-wide first)."""
    return (
        not f.active,
        -SEVERITY_ORDER[f.severity],
        _RULE_RANK.get(f.rule, len(_RULE_RANK)),
        -1 if f.gpu_index is None else f.gpu_index,
        f.key,
    )


def sorted_findings(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=finding_sort_key)


def headline_finding(findings: Iterable[Finding]) -> Finding | None:
    """The most telling warn/fail finding (the worst, active ones first), or None."""
    candidates = [f for f in findings if SEVERITY_ORDER[f.severity] >= SEVERITY_ORDER["warn"]]
    if not candidates:
        return None
    return min(candidates, key=lambda f: (-SEVERITY_ORDER[f.severity], finding_sort_key(f)))


class NewFindings:
    """Tells which findings of each reading are new, to notify once per finding.

    A key is new when it first shows up active with a notifying severity, or when it gets worse
    (warn -> fail). It stays known while it is listed (active, or cleared and not yet
    acknowledged), so a finding that clears and comes back is not new again; once no longer
    listed (acknowledged, or dropped) it is forgotten, so a later recurrence is new."""

    def __init__(self, severities: Iterable[Severity] = ("warn", "fail")) -> None:
        self.severities = frozenset(severities)
        self._known: dict[str, int] = {}

    def take(self, listed: Iterable[Finding]) -> list[Finding]:
        """The new findings among ``listed`` (every finding of one reading), worst first."""
        seen: set[str] = set()
        new = []
        for finding in listed:
            key = finding_key(finding)
            seen.add(key)
            if not finding.active or finding.severity not in self.severities:
                continue
            rank = SEVERITY_ORDER[finding.severity]
            if self._known.get(key, -1) < rank:
                self._known[key] = rank
                new.append(finding)
        for key in [k for k in self._known if k not in seen]:
            del self._known[key]
        return sorted_findings(new)

    def known(self) -> dict[str, int]:
        """Key -> severity rank already reported."""
        return dict(self._known)


def acknowledgeable(finding: Finding) -> bool:
    """A cleared condition, or an event (XID, ECC, GPU lost: it happened, it does not clear by
    itself): acknowledging it takes it off the list. A live condition stays until it clears."""
    return not finding.active or finding.rule in EVENT_RULES


def finding_key(finding: Finding) -> str:
    """The finding's identity across readings (its ``key``, or rule and GPU when it has none)."""
    if finding.key:
        return finding.key
    return f"{finding.rule}:{'node' if finding.gpu_index is None else finding.gpu_index}"


def where(finding: Finding) -> str:
    """``GPU 3`` or ``node``."""
    return "node" if finding.gpu_index is None else f"GPU {finding.gpu_index}"


def badge_text(severity: Severity) -> str:
    """``✔ ok``, ``▲ warn``, ``✖ fail``."""
    return f"{BADGE_SYMBOLS.get(severity, '?')} {status_of(severity)}"


def node_summary(findings: Iterable[Finding]) -> tuple[str, Status]:
    """``(text, status)`` of the active findings for a title bar: ``✔ healthy`` /
    ``▲ 2 warnings`` / ``✖ 1 failure, 2 warnings``."""
    n = counts(findings, active_only=True)
    parts = []
    if n.fail:
        parts.append(f"{n.fail} failure{'s' if n.fail != 1 else ''}")
    if n.warn:
        parts.append(f"{n.warn} warning{'s' if n.warn != 1 else ''}")
    if not parts:
        return f"{BADGE_SYMBOLS['ok']} healthy", "ok"
    status: Status = "fail" if n.fail else "warn"
    return f"{BADGE_SYMBOLS[status]} {', '.join(parts)}", status


__all__ = [
    "BADGE_SYMBOLS",
    "Counts",
    "NewFindings",
    "Status",
    "acknowledgeable",
    "badge_text",
    "counts",
    "finding_key",
    "finding_sort_key",
    "gpu_severity",
    "gpu_status",
    "headline_finding",
    "node_summary",
    "sorted_findings",
    "status_of",
    "where",
    "worst",
]
