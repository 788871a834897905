"""One line under the host strip while something is wrong:
``▲ GPU 5: HW thermal slowdown · ✖ GPU 3: fell off the bus · +2 more   h: health``.

Shown only while warn/fail findings are active (the dashboard toggles its display, which happens
only when that changes), and repainted span by span like every LineWidget.
"""

from __future__ import annotations

from collections.abc import Sequence

from gputui.core.format import finding_text
from gputui.core.model import Finding
from gputui.health.rollup import BADGE_SYMBOLS, sorted_findings, where
from gputui.tui.widgets.line_widget import (
    BAD,
    DIM,
    LABEL,
    TITLE,
    VALUE,
    WARN,
    Line,
    LineBuilder,
    LineWidget,
)

MESSAGE_MAX = 34
"""Longest message shown in the strip (the findings screen shows it whole)."""
TAIL_WIDTH = len("h: health ")


def trouble(findings: Sequence[Finding]) -> list[Finding]:
    """Active warn/fail findings, worst first."""
    return sorted_findings(f for f in findings if f.active and f.severity in ("warn", "fail"))


class FindingsStrip(LineWidget):
    """The active warn/fail findings in one line, worst first."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.findings: list[Finding] = []

    def update_findings(self, findings: Sequence[Finding]) -> bool:
        """Show these findings' trouble; returns whether there is any (to show the strip)."""
        shown = trouble(findings)
        if shown != self.findings:
            self.findings = shown
            self.rebuild()
        return bool(shown)

    def build_lines(self, width: int, height: int) -> list[Line]:
        b = LineBuilder().add(" ")
        room = width - TAIL_WIDTH - 2
        items = self.findings
        for i, f in enumerate(items):
            cls = BAD if f.severity == "fail" else WARN
            message = finding_text(f.message, f.gpu_index)
            if len(message) > MESSAGE_MAX:
                message = message[: MESSAGE_MAX - 1] + "…"
            if not i:  # the worst one is always shown, its message cut to fit
                cut = max(room - b.width - 4 - len(where(f)) - 10, 8)
                if len(message) > cut:
                    message = message[: cut - 1] + "…"
            piece_w = 2 + len(where(f)) + 2 + len(message) + (3 if i else 0)
            more = f" · +{len(items) - i - 1} more" if i + 1 < len(items) else ""
            if b.width + piece_w + len(more) > room and i:
                b.add(f" · +{len(items) - i} more", LABEL)
                break
            if i:
                b.add(" · ", DIM)
            b.add(f"{BADGE_SYMBOLS[f.severity]} ", cls).add(where(f), cls)
            b.add(": ", LABEL).add(message, VALUE)
        b.pad(width - TAIL_WIDTH)
        b.add("h", TITLE).add(": health ", LABEL)
        return [b.line(width)]


__all__ = ["FindingsStrip", "trouble"]
