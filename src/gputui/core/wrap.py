"""Wrapping prose to a width without splitting what belongs together: a number from its unit
(``91 °C``, ``71.4 GiB``, ``10 s``), a name from its number (``GPU 3``, ``PID 4242``, ``XID 79``,
``since 22:13:20``), and with continuation lines indented under their first line.

The joins are non-breaking spaces while wrapping (``textwrap`` breaks only at ASCII blanks) and
plain spaces again in the lines returned, so a copied line reads as written.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

from gputui.core.format import cell_width

NBSP = "\u00a0"

_UNIT = (
    r"(?:°C|°F|%|[KMGTP]iB|[KMGTP]B(?:/s)?|B/s|bytes?|MHz|GHz|kHz|W|kW|V|A|J|kJ|MJ|s|ms|µs|ns"
    r"|min|h|d|TFLOPS|TOPS|GT/s|Gb/s|lanes?|x\d+|×\d+)"
)
_NUMBER_UNIT = re.compile(rf"(?<=\d) (?={_UNIT}(?![\w/]))")
"""The space between a number and its unit (``91 °C``, ``Gen3 x8``)."""
_NAME_NUMBER = re.compile(
    r"(?<![\w-])(GPU|GPUs|PID|PIDs|XID|NVLink|link|links|since|at|of|CPU|NUMA|node|rank|port)"
    r" (?=[\d#])"
)
"""The space between a name and the number it names (``GPU 3``, ``since 22:13:20``)."""


def keep_together(text: str) -> str:
    """``text`` with the spaces that must not become line breaks made non-breaking."""
    return _NAME_NUMBER.sub(rf"\1{NBSP}", _NUMBER_UNIT.sub(NBSP, text))


def wrap_text(text: str, width: int, *, indent: str = "", first: str = "") -> list[str]:
    """``text`` in lines of at most ``width`` cells (``first`` before the first line, ``indent``
    before the others, both counted), never splitting a number from its unit nor a name from
    its number (:func:`keep_together`); a word longer than a line is cut. ``width`` under 10:
    one line, not wrapped."""
    if width < 10 or cell_width(first) + cell_width(text) <= width:
        return [first + text]
    wrapper = textwrap.TextWrapper(
        width=width,
        initial_indent=first,
        subsequent_indent=indent,
        break_on_hyphens=False,
        break_long_words=True,
    )
    return [line.replace(NBSP, " ") for line in wrapper.wrap(keep_together(text))]


Styled = tuple[str, str]
"""``(text, style)``: a piece of a line, its style any string the caller uses."""


def wrap_styled(pieces: Sequence[Styled], width: int) -> list[list[Styled]]:
    """Styled pieces in lines of at most ``width`` cells, broken at blanks only (not inside a
    word, even one of several pieces, nor between a number and its unit or a name and its
    number: :func:`keep_together`), the blank at a break dropped; a word longer than a line is
    cut. The caller indents the lines after the first."""
    kept = keep_together("".join(text for text, _ in pieces))
    words: list[list[Styled]] = []  # words and blanks, in order; a blank is one piece of " "s
    at = 0
    for text, style in pieces:
        for part in re.split(r"( +)", kept[at : at + len(text)]):
            if not part:
                continue
            piece = (part.replace(NBSP, " "), style)
            if part.startswith(" ") or not words or words[-1][0][0].startswith(" "):
                words.append([piece])
            else:
                words[-1].append(piece)  # a word that goes on in the next piece
        at += len(text)
    lines: list[list[Styled]] = [[]]
    used = 0
    blank: Styled | None = None
    for word in words:
        if word[0][0].startswith(" "):
            blank = word[0] if used else None
            continue
        size = sum(cell_width(t) for t, _ in word)
        if used and used + size + (cell_width(blank[0]) if blank else 0) > width:
            lines.append([])
            used, blank = 0, None
        if blank is not None:
            lines[-1].append(blank)
            used += cell_width(blank[0])
            blank = None
        for text, style in word:
            while width > 0 and used + cell_width(text) > width:  # longer than a line: cut
                room = max(width - used, 1)
                lines[-1].append((text[:room], style))
                text = text[room:]
                lines.append([])
                used = 0
            if text:
                lines[-1].append((text, style))
                used += cell_width(text)
    return [_merged(line) for line in lines if line] or [[]]


def _merged(line: list[Styled]) -> list[Styled]:
    """Neighbouring pieces of one style as one."""
    out: list[Styled] = []
    for text, style in line:
        if out and out[-1][1] == style:
            out[-1] = (out[-1][0] + text, style)
        else:
            out.append((text, style))
    return out


__all__ = ["NBSP", "Styled", "keep_together", "wrap_styled", "wrap_text"]
