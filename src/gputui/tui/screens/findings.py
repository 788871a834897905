"""Every health finding with its hint: severity, GPU, message, what to do, when it was first seen
(snapshot clock), and whether it has cleared. Cleared findings stay listed until acknowledged
(``a`` the selected one, ``A`` all cleared ones); so do events (XIDs, ECC errors), which never
"clear" by themselves. The screen posts
:class:`~gputui.tui.messages.AcknowledgeFindings` and the app asks the sampler's health monitor.

The list is rebuilt only when what it shows changes (not on every reading: ``last_seen`` of an
active finding moves each tick and is not shown), and keeps the selected finding selected.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.screen import Screen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from gputui.core.format import finding_text, fmt_clock, sanitize
from gputui.core.model import Finding, Snapshot
from gputui.core.wrap import Styled, wrap_styled
from gputui.health.rollup import (
    acknowledgeable,
    badge_text,
    finding_key,
    node_summary,
    sorted_findings,
    where,
)
from gputui.tui.messages import AcknowledgeFindings
from gputui.tui.widgets.footer import KeyFooter

SEVERITY_STYLE = {
    "fail": "$gputui-bad bold",
    "warn": "$gputui-warn bold",
    "info": "$text-accent",
    "ok": "$gputui-ok",
}
NO_FINDINGS_TEXT = "No findings: every health check passes."
NO_MONITOR_TEXT = "Health checks are not running in this session (no health monitor attached)."


def _signature(f: Finding) -> tuple[object, ...]:
    """What the list shows of a finding (last_seen only once it has cleared)."""
    return (
        finding_key(f),
        f.severity,
        f.gpu_index,
        f.message,
        f.hint,
        f.action,
        f.first_seen,
        f.active,
        None if f.active else f.last_seen,
    )


HINT_INDENT = 16
"""Where a finding's message starts, after its severity and GPU; the lines that go on from it
and its hint are indented to here."""
HINT_MIN_WIDTH = 20
"""Below this many cells for the text, nothing is wrapped (the list wraps it as it can)."""


def finding_prompt(f: Finding, width: int = 0) -> Content:
    """``✖ fail  GPU 3  message  since 22:13:20`` then the hint, wrapped to ``width`` with every
    line after the first indented under the message (no wrapping when ``width`` is 0); a number
    stays with its unit, a GPU with its index and ``since`` with its time (:mod:`gputui.core.
    wrap`)."""
    label = "ℹ info" if f.severity == "info" else badge_text(f.severity)
    head: list[tuple[str, str] | str] = [
        (f"{label:<7}", SEVERITY_STYLE.get(f.severity, "")),
        " ",
        (f"{where(f):<7}", "bold"),
        " ",
    ]
    body: list[Styled] = [(finding_text(f.message, f.gpu_index), "" if f.active else "$text-muted")]
    if f.first_seen is not None:
        body += [("   ", ""), ("since ", "$text-muted"), (fmt_clock(f.first_seen), "")]
    if not f.active:
        cleared = "cleared"
        if f.last_seen is not None:
            cleared += f" (last seen {fmt_clock(f.last_seen)})"
        body += [("  ", ""), (cleared, "$text-success italic")]
    room = width - HINT_INDENT - 1
    parts = [*head, *_indented(body, room, HINT_INDENT)]
    todo: list[Styled] = []
    if f.action != "none":  # what to do, one word from one vocabulary (health/actions.py)
        todo += [
            ("→ ", "$text-muted"),
            (f.action, "bold"),
            (" · " if f.hint else "", "$text-muted"),
        ]
    elif f.hint:
        todo.append(("→ ", "$text-muted"))
    if f.hint:
        todo.append((sanitize(f.hint), "$text-muted"))
    if todo:
        parts += ["\n", " " * HINT_INDENT, *_indented(todo, room, HINT_INDENT + 2)]
    return Content.assemble(*parts)


def _indented(pieces: list[Styled], room: int, indent: int) -> list[tuple[str, str] | str]:
    """``pieces`` wrapped so that each line fits the ``room`` cells from the message's column,
    the lines after the first indented to column ``indent``; not wrapped when ``room`` is too
    narrow."""
    if room < HINT_MIN_WIDTH:
        return list(pieces)
    out: list[tuple[str, str] | str] = []
    for i, line in enumerate(wrap_styled(pieces, room - (indent - HINT_INDENT))):
        if i:
            out += ["\n", " " * indent]
        out += line
    return out


class FindingsScreen(Screen[None]):
    """The health findings of the latest snapshot. Feed it with :meth:`update_snapshot`."""

    DEFAULT_CSS = """
    FindingsScreen {
        layout: vertical;
    }
    FindingsScreen #findings-title {
        height: 1;
        background: $panel;
        padding: 0 1;
        text-style: bold;
    }
    FindingsScreen #findings-list {
        height: 1fr;
        border: none;
    }
    FindingsScreen #findings-empty {
        padding: 1 2;
        color: $text-muted;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "acknowledge", "Acknowledge", id="health.ack"),
        Binding("A", "acknowledge_all", "Acknowledge all", id="health.ack_all"),
        Binding("escape,q,h", "close", "Close", id="health.close"),
    ]

    def __init__(self, *, judged: bool = True) -> None:
        """``judged``: whether the session has a health evaluator (else nothing can be listed
        or acknowledged, and the screen says so)."""
        super().__init__(id="findings")
        self.judged = judged
        self.findings: list[Finding] = []
        self.snapshot: Snapshot | None = None
        self._signature: tuple[object, ...] | None = None
        self._width = 0
        self._hidden: set[str] = set()
        """Keys acknowledged here, hidden until a snapshot no longer lists them as cleared."""
        self.title_line = Static("Health findings", id="findings-title", markup=False)
        self.option_list = OptionList(id="findings-list", markup=False)
        self.empty = Static("", id="findings-empty", markup=False)

    def compose(self) -> ComposeResult:
        yield self.title_line
        yield self.option_list
        yield self.empty
        yield KeyFooter()

    def on_mount(self) -> None:
        self.option_list.focus()
        self._show()

    # -- data in -----------------------------------------------------------------------------------

    def update_snapshot(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        listed = {finding_key(f): f for f in snapshot.findings}
        # Forget hidden keys once the monitor has dropped them (or they came back active).
        self._hidden = {k for k in self._hidden if k in listed and acknowledgeable(listed[k])}
        self._set_findings(snapshot.findings)

    def _set_findings(self, findings: Sequence[Finding]) -> None:
        shown = sorted_findings(f for f in findings if finding_key(f) not in self._hidden)
        signature = tuple(_signature(f) for f in shown)
        if signature == self._signature and self.is_mounted:
            return
        self.findings = shown
        self._signature = signature
        if self.is_mounted:
            self._show()

    def _show(self) -> None:
        findings = self.findings
        text, _ = node_summary(findings)
        cleared = sum(1 for f in findings if acknowledgeable(f))
        title = f"Health findings — {text}"
        if cleared:
            title += f", {cleared} to acknowledge (a: this one, A: all)"
        if self.snapshot is not None:
            title += f"   as of {fmt_clock(self.snapshot.timestamp)}"
        self.title_line.update(title)
        ol = self.option_list
        keep = self.selected_finding
        keep_key = finding_key(keep) if keep is not None else None
        old_index = ol.highlighted
        width = ol.scrollable_content_region.width or self.app.size.width - 2
        self._width = width
        with self.app.batch_update():
            ol.clear_options()
            ol.add_options(
                Option(finding_prompt(f, width), id=f"{i}:{finding_key(f)}")
                for i, f in enumerate(findings)
            )
            if findings:
                keys = [finding_key(f) for f in findings]
                if keep_key in keys:
                    ol.highlighted = keys.index(keep_key)
                else:
                    ol.highlighted = min(old_index or 0, len(findings) - 1)
            ol.display = bool(findings)
            self.empty.display = not findings
            self.empty.update(NO_FINDINGS_TEXT if self.judged else NO_MONITOR_TEXT)

    def on_resize(self) -> None:
        if self.is_mounted and self.option_list.scrollable_content_region.width != self._width:
            self._show()  # re-wrap the hints

    @property
    def selected_finding(self) -> Finding | None:
        index = self.option_list.highlighted
        if index is None or not 0 <= index < len(self.findings):
            return None
        return self.findings[index]

    # -- actions -----------------------------------------------------------------------------------

    def _acknowledge(self, findings: Sequence[Finding]) -> int:
        """Hide the findings here at once and ask the app to acknowledge them."""
        if not self.judged:
            self.app.notify("no health monitor attached", severity="warning", timeout=3)
            return 0
        keys = tuple(f.key for f in findings if f.key)
        if keys:
            self.post_message(AcknowledgeFindings(keys))
        self._hidden.update(finding_key(f) for f in findings)
        done = len(findings)
        if self.snapshot is not None:
            self._set_findings(self.snapshot.findings)
        return done

    def action_acknowledge(self) -> None:
        finding = self.selected_finding
        if finding is None:
            self.app.notify("no finding selected", timeout=2)
            return
        if not acknowledgeable(finding):
            self.app.notify(
                "still active: a condition can be acknowledged once it has cleared",
                severity="warning",
                timeout=3,
            )
            return
        if self._acknowledge([finding]):
            self.app.notify(f"acknowledged: {sanitize(finding.message)}", timeout=2)

    def action_acknowledge_all(self) -> None:
        cleared = [f for f in self.findings if acknowledgeable(f)]
        if not cleared:
            self.app.notify("no cleared findings or events to acknowledge", timeout=2)
            return
        done = self._acknowledge(cleared)
        if done:
            self.app.notify(f"acknowledged {done} finding{'s' if done != 1 else ''}")

    def action_close(self) -> None:
        self.dismiss(None)


__all__ = ["FindingsScreen", "finding_prompt"]
