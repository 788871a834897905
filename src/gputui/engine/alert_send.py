"""What the alert senders (``--notify``, ``--webhook``) share: the one call the dispatcher makes,
and how a send that did not reach its receiver is said."""

from __future__ import annotations

from typing import Protocol

from gputui.core.format import sanitize

MAX_DETAIL = 200
"""Characters of a receiver's own words (an error line, a reason phrase) kept in a message."""


class SendFailed(Exception):
    """An alert did not reach its receiver. ``kind`` groups failures that are reported once
    (``timeout``, ``exit``, ``HTTP 404`` ...); ``detail`` says what happened, with no secret."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


class Sender(Protocol):
    """Delivers one alert; called on its own worker thread, one alert at a time."""

    name: str
    """What messages call it: ``--webhook https://hooks.slack.com/…``, ``--notify mail``."""

    def send(self, body: bytes) -> None:
        """Deliver ``body`` (the alert's JSON); :class:`SendFailed` when it did not arrive."""


def clipped(text: str) -> str:
    """``text`` from a receiver as one short, safe line."""
    line = sanitize(" ".join(text.split()))
    return line if len(line) <= MAX_DETAIL else line[: MAX_DETAIL - 1] + "…"


__all__ = ["MAX_DETAIL", "SendFailed", "Sender", "clipped"]
