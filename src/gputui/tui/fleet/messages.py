"""Messages of the fleet view: results up from the polling thread, requests up from screens."""

from __future__ import annotations

from textual.message import Message

from gputui.fleet.poller import PollResult


class RefreshDone(Message):
    """A refresh finished (from the polling thread). Replaceable: a backlog collapses to the
    newest."""

    def __init__(self, result: PollResult) -> None:
        super().__init__()
        self.result = result

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, RefreshDone)


class OpenNode(Message):
    """A screen asks the app to show one node (by its instance)."""

    def __init__(self, instance: str) -> None:
        super().__init__()
        self.instance = instance


__all__ = ["OpenNode", "RefreshDone"]
