"""Messages between the sampler thread, the app and its screens.

The sampler thread only ever calls ``App.post_message`` (thread-safe, never blocks); handlers on the
event loop own every change to widgets.
"""

from __future__ import annotations

import signal

from textual.message import Message

from gputui.core.model import ProcessSample, Snapshot


class SnapshotReady(Message):
    """A new reading. Replaceable: if several queue up while the UI is busy, only the newest is
    handled (the older ones are already in the sampler's history)."""

    def __init__(self, snapshot: Snapshot) -> None:
        super().__init__()
        self.snapshot = snapshot

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SnapshotReady)


class SamplerFailed(Message):
    """A poll raised; the sampler keeps going and will try again next tick."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SamplerFailed)


class SignalSent(Message):
    """The result of sending a signal to a process (from a worker thread)."""

    def __init__(
        self, process: ProcessSample, sig: signal.Signals, error: BaseException | None = None
    ) -> None:
        super().__init__()
        self.process = process
        self.sig = sig
        self.error = error


class RecordingFailed(Message):
    """Writing the recording failed (from the polling thread); the app stops the recording."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error


class AlertProblem(Message):
    """An alert could not be sent (from an alert worker thread): shown as a notification."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class SignalRequested(Message):
    """A screen asks the app to send ``sig`` to ``process`` (the user confirmed it)."""

    def __init__(self, process: ProcessSample, sig: signal.Signals) -> None:
        super().__init__()
        self.process = process
        self.sig = sig


class ProcessHighlighted(Message):
    """The process table's cursor moved to another process (None: the table is empty); the
    screen offers the keys that fit it (no Signal for PID 1, PID 2 or a kernel thread)."""

    def __init__(self, process: ProcessSample | None) -> None:
        super().__init__()
        self.process = process


class AcknowledgeFindings(Message):
    """A screen asks the app to acknowledge these findings (by key) in the health monitor."""

    def __init__(self, keys: tuple[str, ...]) -> None:
        super().__init__()
        self.keys = keys


__all__ = [
    "AcknowledgeFindings",
    "AlertProblem",
    "ProcessHighlighted",
    "RecordingFailed",
    "SamplerFailed",
    "SignalRequested",
    "SignalSent",
    "SnapshotReady",
]
