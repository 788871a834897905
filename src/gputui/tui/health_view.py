"""How health findings look in the TUI: badges, counts and the words for them.

Pure functions over ``Snapshot.findings`` (no Textual imports, no dependency on the health rules),
so the dashboard renders whatever findings a snapshot carries. Badges and counts consider ACTIVE
findings only; cleared ones stay listed on the findings screen until acknowledged.
"""

from __future__ import annotations

from collections.abc import Iterable

from gputui.model import SEVERITY_ORDER, Finding

BADGE_SYMBOLS: dict[str, str] = {"ok": "✔", "info": "✔", "warn": "▲", "fail": "✖"}
"""Symbol before the word; the word itself (ok / warn / fail) keeps the badge readable under
NO_COLOR. Info findings do not change a badge (it stays ``ok``)."""

NOTIFY_SEVERITY: dict[str, str] = {"warn": "warning", "fail": "error"}
"""Finding severity -> ``App.notify`` severity; info and ok findings do not notify."""


def finding_key(finding: Finding) -> str:
    """The finding's identity across readings (its ``key``, or rule and GPU when it has none)."""
    if finding.key:
        return finding.key
    return f"{finding.rule}:{'node' if finding.gpu_index is None else finding.gpu_index}"


def worst_severity(findings: Iterable[Finding]) -> str:
    """Worst severity among ACTIVE findings, ``ok`` when none (info counts as ok for badges)."""
    worst = "ok"
    for f in findings:
        if f.active and SEVERITY_ORDER.get(f.severity, 0) > SEVERITY_ORDER[worst]:
            worst = f.severity
    return "ok" if worst == "info" else worst


def gpu_badge_severity(findings: Iterable[Finding], index: int) -> str:
    """Worst severity of the active findings about GPU ``index``."""
    return worst_severity(f for f in findings if f.gpu_index == index)


def badge_text(severity: str) -> str:
    """``✔ ok``, ``▲ warn``, ``✖ fail``."""
    word = "ok" if severity == "info" else severity
    return f"{BADGE_SYMBOLS.get(severity, '?')} {word}"


def node_counts(findings: Iterable[Finding]) -> tuple[int, int]:
    """``(failures, warnings)`` among active findings, node-wide ones included."""
    fails = warns = 0
    for f in findings:
        if not f.active:
            continue
        if f.severity == "fail":
            fails += 1
        elif f.severity == "warn":
            warns += 1
    return fails, warns


def node_summary(findings: Iterable[Finding]) -> tuple[str, str]:
    """``(text, severity)`` for the title bar: ``healthy`` / ``2 warnings`` /
    ``1 failure, 2 warnings``."""
    fails, warns = node_counts(findings)
    parts = []
    if fails:
        parts.append(f"{fails} failure{'s' if fails != 1 else ''}")
    if warns:
        parts.append(f"{warns} warning{'s' if warns != 1 else ''}")
    if not parts:
        return f"{BADGE_SYMBOLS['ok']} healthy", "ok"
    severity = "fail" if fails else "warn"
    return f"{BADGE_SYMBOLS[severity]} {', '.join(parts)}", severity


def where(finding: Finding) -> str:
    """``GPU 3`` or ``node``."""
    return "node" if finding.gpu_index is None else f"GPU {finding.gpu_index}"


def sorted_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Active before cleared, worst first, then GPU order (node-wide first), then first seen."""
    return sorted(
        findings,
        key=lambda f: (
            not f.active,
            -SEVERITY_ORDER.get(f.severity, 0),
            -1 if f.gpu_index is None else f.gpu_index,
            f.first_seen or 0.0,
        ),
    )


__all__ = [
    "BADGE_SYMBOLS",
    "NOTIFY_SEVERITY",
    "badge_text",
    "finding_key",
    "gpu_badge_severity",
    "node_counts",
    "node_summary",
    "sorted_findings",
    "where",
    "worst_severity",
]
