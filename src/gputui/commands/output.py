"""Writing a command's result and messages.

- A reader that leaves (``gputui check | head -1``) is not an error, and the command's exit
  status still says what it found.
- Every text goes through :func:`gputui.core.format.sanitize_lines`, so no control sequence from a
  reading or a recording reaches the terminal (JSON is already escaped by ``json.dumps``).
- A stream whose encoding cannot carry a character (``PYTHONIOENCODING=ascii``, a latin-1
  locale) gets a readable ASCII stand-in (``·`` as ``-``, ``≥`` as ``>=``, ``…`` as ``...``) and
  ``?`` for anything else, instead of a UnicodeEncodeError.
- A result that cannot be written (``> /dev/full``, an I/O error) ends the command with one line
  on stderr and exit 2 (:class:`OutputError`), not a traceback.
"""

from __future__ import annotations

import codecs
import os
import sys
from typing import TextIO

from gputui.core.exitcodes import EXIT_FAILED
from gputui.core.format import cell_width, sanitize_lines

ASCII_FALLBACK: dict[str, str] = {
    "·": "-",
    "•": "*",
    "●": "*",
    "✖": "x",
    "✗": "x",
    "✔": "+",
    "✓": "+",
    "▲": "^",
    "▼": "v",
    "▶": ">",
    "↑": "^",
    "↓": "v",
    "→": "->",
    "←": "<-",
    "↔": "<->",
    "…": "...",
    "≥": ">=",
    "≤": "<=",
    "≈": "~",
    "±": "+/-",
    "×": "x",
    "−": "-",
    "–": "-",
    "—": "-",
    "─": "-",
    "│": "|",
    "°": "",  # 67°C -> 67C
    "µ": "u",
    "ℹ": "i",
    "‘": "'",
    "’": "'",
    "“": '"',
    "”": '"',
    "\u00a0": " ",
}
"""Readable ASCII for the characters gputui itself prints, where the output cannot carry them."""

_ERROR_HANDLER = "gputui-ascii-fallback"


def _fallback(exc: UnicodeError) -> tuple[str, int]:
    """Codec error handler: the ASCII stand-in of each character the codec cannot encode, or one
    ``?`` per terminal cell it would have taken (so columns stay aligned)."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    text = exc.object[exc.start : exc.end]
    out = []
    for ch in text:
        stand_in = ASCII_FALLBACK.get(ch)
        out.append(stand_in if stand_in is not None else "?" * max(cell_width(ch), 1))
    return "".join(out), exc.end


codecs.register_error(_ERROR_HANDLER, _fallback)


class OutputError(SystemExit):
    """The result could not be written (a full disk behind stdout, an I/O error). The message
    is already on stderr; the process ends with exit 2 (a ``SystemExit``, so it passes through
    ``cli.main``'s handler of internal errors)."""

    def __init__(self, message: str) -> None:
        super().__init__(EXIT_FAILED)
        self.message = message

    def __str__(self) -> str:
        return self.message


def encodable(text: str, stream: TextIO) -> str:
    """``text`` with every character the stream's encoding cannot carry replaced (see
    :data:`ASCII_FALLBACK`); unchanged for a UTF-8 stream or one without an encoding."""
    encoding = getattr(stream, "encoding", None)
    if not encoding or text.isascii():
        return text
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return text.encode(encoding, _ERROR_HANDLER).decode(encoding)
    except LookupError:  # an encoding Python does not know: keep ASCII
        return text.encode("ascii", _ERROR_HANDLER).decode("ascii")
    return text


def emit(text: str, out: TextIO | None = None) -> None:
    """Print ``text`` and flush. When the reader has gone, point stdout at /dev/null so the
    interpreter's final flush does not fail again; when writing fails otherwise (ENOSPC, EIO),
    say so on stderr and raise :class:`OutputError` (exit 2)."""
    stream = out if out is not None else sys.stdout
    try:
        print(encodable(sanitize_lines(text), stream), file=stream)
        stream.flush()
    except BrokenPipeError:
        silence_stdout()
    except OSError as exc:
        if stream is sys.stdout:
            silence_stdout()  # the unwritten rest must not fail again at exit
        reason = exc.strerror or str(exc)
        message = f"gputui: writing the output failed: {reason}"
        error(message)
        raise OutputError(message) from None


def silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def error(message: str) -> None:
    """A message for the user on stderr (sanitised; nothing to do when stderr itself fails)."""
    stream = sys.stderr
    try:
        print(encodable(sanitize_lines(message), stream), file=stream)
        stream.flush()
    except (OSError, ValueError):
        pass


__all__ = ["ASCII_FALLBACK", "OutputError", "emit", "encodable", "error", "silence_stdout"]
