"""Writing a command's result: a reader that leaves (``gputui check | head -1``) is not an error,
and the command's exit status still says what it found."""

from __future__ import annotations

import os
import sys
from typing import TextIO


def emit(text: str, out: TextIO | None = None) -> None:
    """Print ``text`` and flush; when the reader has gone, point stdout at /dev/null so the
    interpreter's final flush does not fail again."""
    stream = out if out is not None else sys.stdout
    try:
        print(text, file=stream)
        stream.flush()
    except BrokenPipeError:
        silence_stdout()


def silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def error(message: str) -> None:
    """A message for the user on stderr."""
    print(message, file=sys.stderr)


__all__ = ["emit", "error", "silence_stdout"]
