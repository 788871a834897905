"""Asking to signal processes, the same way from every screen that shows them (the dashboard with
its tagged processes, one process's detail): what gputui never signals and what the user may
not are said and left out, the rest is listed in the confirmation dialog, and only the signal
chosen there is requested from the app (:class:`~gputui.tui.messages.SignalRequested`, one per
process)."""

from __future__ import annotations

import signal
from collections.abc import Sequence
from typing import Any

from textual.screen import Screen

from gputui.core.model import PidNamespace, ProcessSample
from gputui.tui import permissions
from gputui.tui.messages import SignalRequested


def signalable(
    processes: Sequence[ProcessSample], pid_namespace: PidNamespace | None
) -> tuple[list[ProcessSample], list[str]]:
    """The processes the user may signal (one per PID: a process on two GPUs is one process),
    and why each other one is left out."""
    chosen: list[ProcessSample] = []
    reasons: list[str] = []
    pids: set[int] = set()
    for process in processes:
        if process.pid in pids:
            continue
        pids.add(process.pid)
        refusal = permissions.signal_refusal(process, pid_namespace)
        if refusal is None and process.exited:
            refusal = f"PID {process.pid} has already exited"
        if refusal is None:
            allowed, reason = permissions.can_signal(process)
            refusal = None if allowed else reason or f"PID {process.pid}: not allowed"
        if refusal is None:
            chosen.append(process)
        else:
            reasons.append(refusal)
    return chosen, reasons


def ask_to_signal(
    screen: Screen[Any],
    processes: Sequence[ProcessSample],
    *,
    readonly: bool,
    pid_namespace: PidNamespace | None,
) -> None:
    """Open the confirmation dialog for ``processes`` on top of ``screen``; on a signal chosen
    there, ask the app to send it to each. Nothing with ``readonly`` (a replay is read-only)."""
    if readonly or not processes:
        return
    chosen, reasons = signalable(processes, pid_namespace)
    app = screen.app
    if reasons:
        shown = reasons if len(reasons) <= 3 else [*reasons[:2], f"and {len(reasons) - 2} more"]
        title = "left out" if chosen else "no signal"
        app.notify("\n".join(shown), title=title, severity="warning")
    if not chosen:
        return
    from gputui.tui.screens.confirm_signal import ConfirmSignalScreen

    def sent(sig: signal.Signals | None) -> None:
        if sig is not None:
            for process in chosen:
                screen.post_message(SignalRequested(process, sig))

    app.push_screen(ConfirmSignalScreen(chosen), sent)


__all__ = ["ask_to_signal", "signalable"]
