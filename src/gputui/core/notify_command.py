"""The ``--notify`` command: split once as a POSIX shell splits words (quotes, backslashes), and
run without a shell, so nothing in an alert is ever interpreted. Messages name only its program
(``notify-send``), since its arguments may hold a token or an address."""

from __future__ import annotations

import os
import shlex

from gputui.core.format import sanitize


def split_command(text: str) -> list[str]:
    """The words of ``text``; ValueError (unbalanced quotes, nothing to run)."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"cannot split the command into words ({exc})") from None
    if not words:
        raise ValueError("the command is empty")
    return words


def check_command(value: object) -> str:
    """A setting's value as a command (the text, stripped); ValueError."""
    if not isinstance(value, str):
        raise ValueError("expected a command as a string")
    split_command(value)
    return value.strip()


def program_name(words: list[str]) -> str:
    """What messages call the command: its program's file name (``notify-send``)."""
    return sanitize(os.path.basename(words[0]) or words[0])


__all__ = ["check_command", "program_name", "split_command"]
