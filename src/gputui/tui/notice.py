"""The app's one notice: what a key did, or why it did nothing (:func:`unavailable_notice`), in
a single toast that the next notice replaces.

Textual stacks a toast per notification, each for five seconds or more; ten presses of a key made
ten toasts over half the screen. The app shows one at a time instead (:func:`keep_only`, called
as each notice arrives), small (one line, or two with a title; see ``gputui.tcss``) and for a
short time (:data:`NOTICE_TIMEOUT_S`), at the bottom right above the footer, never up to the
title bar. Values the title bar already shows (the interval, pause, the replay's position and
speed) get no notice at all, and neither do the findings of the first reading: the title bar and
the findings strip show them.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping, Sequence
from typing import Any

from textual.actions import ActionError, ActionParseResult
from textual.app import App
from textual.dom import DOMNode
from textual.notifications import SeverityLevel

from gputui.core.format import finding_text
from gputui.core.frozen import frozen
from gputui.core.model import Finding
from gputui.health.rollup import where
from gputui.host.signals import SignalRefused
from gputui.tui.widgets.footer import why_disabled

try:  # Textual's toast container (private); without it, replaced toasts leave empty holders
    from textual.widgets._toast import ToastHolder
except ImportError:  # pragma: no cover
    ToastHolder = None  # type: ignore[assignment,misc]

NOTICE_TIMEOUT_S: dict[SeverityLevel, float] = {"information": 3.0, "warning": 6.0, "error": 8.0}
"""The longest a notice stays, by severity (a shorter timeout asked for is kept)."""
FINDING_SEVERITY: dict[str, SeverityLevel] = {"warn": "warning", "fail": "error"}
"""Finding severity -> notice severity; info and ok findings give no notice."""
REPLAY = "replay"
READ_ONLY = "read-only"
"""Why signals, the probe and recording are off (``why_disabled``; the footer: ``k p R off:
replay``)."""
EXPLAINED = {
    REPLAY: "a replay only shows a recording: no signals, no probe, no recording",
    READ_ONLY: "gputui runs read-only (--readonly): no signals, no probe, no recording",
}
"""What the notice of a key that is off says about its reason."""


@frozen(slots=False)
class Notice:
    """What one notice says."""

    message: str
    title: str = ""
    severity: SeverityLevel = "information"


def notice_timeout(severity: SeverityLevel, requested: float | None) -> float:
    """How long a notice stays: what was asked for, at most :data:`NOTICE_TIMEOUT_S`."""
    longest = NOTICE_TIMEOUT_S[severity]
    return longest if requested is None else min(requested, longest)


def findings_notice(new: Sequence[Finding]) -> Notice | None:
    """One notice for the new findings of a reading (worst first): the finding itself when it
    is one, else how many and the worst of them."""
    if not new:
        return None
    worst = new[0]
    severity = FINDING_SEVERITY.get(worst.severity, "warning")
    text = finding_text(worst.message, worst.gpu_index)
    if len(new) == 1:
        return Notice(text, where(worst), severity)
    return Notice(
        f"{where(worst)}: {text} (and {len(new) - 1} more: h shows them all)",
        f"{len(new)} new health findings",
        severity,
    )


def signal_notice(pid: int, sig: signal.Signals, error: BaseException | None) -> Notice:
    """What became of a signal: sent, or why not."""
    name, who = sig.name, f"PID {pid}"
    if error is None:
        return Notice(f"sent {name} to {who}")
    if isinstance(error, SignalRefused):
        return Notice(str(error), f"{name} not sent", "warning")
    if isinstance(error, ProcessLookupError):
        return Notice(f"{who} has already exited", severity="warning")
    if isinstance(error, PermissionError):
        return Notice(f"not allowed to signal {who}", severity="error")
    return Notice(f"could not send {name} to {who}: {error}", severity="error")


def unavailable_notice(
    app: App[Any],
    action: str | ActionParseResult,
    namespace: DOMNode,
    namespaces: Mapping[str, DOMNode] | None = None,
) -> Notice | None:
    """Why ``action`` did nothing, when its namespace turned it off and says why (its
    ``why_disabled``: a replay, ``--readonly``); None when it is not off that way."""
    try:
        target, name, parameters = app._parse_action(action, namespace, namespaces)
    except ActionError:
        return None
    if target.check_action(name, parameters) is not None:
        return None  # on, or hidden: not a key that is merely off here
    reason = why_disabled(target, name)
    if reason is None:
        return None
    return Notice(EXPLAINED.get(reason, reason), f"{_description(app, name)} is off", "warning")


def _description(app: App[Any], action: str) -> str:
    """What the footer calls ``action`` ("Signal", "Probe")."""
    for active in app.screen.active_bindings.values():
        if active.binding.action == action and active.binding.description:
            return active.binding.description
    return action.replace("_", " ").capitalize()


def keep_only(app: App[Any]) -> None:
    """Forget the notice shown and take its toast off every screen (the next one replaces it).
    Textual's ToastRack would remove the toast and keep its holder, one per notice."""
    app._notifications.clear()
    if ToastHolder is None:  # pragma: no cover
        return
    for screen in app.screen_stack:
        for holder in screen.query(ToastHolder):
            holder.remove()


__all__ = [
    "EXPLAINED",
    "FINDING_SEVERITY",
    "NOTICE_TIMEOUT_S",
    "READ_ONLY",
    "REPLAY",
    "Notice",
    "findings_notice",
    "keep_only",
    "notice_timeout",
    "signal_notice",
    "unavailable_notice",
]
