"""Horizontal meter bars as line pieces: ``▕██████▍   ▏`` with eighth-cell resolution.

The bar is drawn with block characters, so it stays readable without colour (NO_COLOR); its
colour comes from a component class chosen by the caller (by meaning: ok / warn / bad).
"""

from __future__ import annotations

import math

from gputui.tui.widgets.line_widget import DIM, FRAME, Line

_EIGHTHS = " ▏▎▍▌▋▊▉"
FULL = "█"
LEFT_CAP = "▕"
RIGHT_CAP = "▏"


def bar_text(fraction: float | None, width: int) -> str:
    """The fill of a bar ``width`` cells wide; blanks when ``fraction`` is unknown."""
    if width <= 0:
        return ""
    if fraction is None or math.isnan(fraction):
        return " " * width
    eighths = round(max(0.0, min(1.0, fraction)) * width * 8)
    full, part = divmod(eighths, 8)
    text = FULL * full
    if part and full < width:
        text += _EIGHTHS[part]
    return text.ljust(width)


def bar(
    fraction: float | None, width: int, fill_cls: str, *, caps: bool = True, cap_cls: str = FRAME
) -> Line:
    """A bar as pieces, ``width`` cells wide including the two caps. Unknown values show ``n/a``
    centred in the bar."""
    inner = max(width - 2, 0) if caps else max(width, 0)
    pieces: Line = []
    if caps and width >= 2:
        pieces.append((LEFT_CAP, cap_cls))
    if fraction is None or math.isnan(fraction):
        pieces.append(("n/a".center(inner)[:inner], DIM))
    else:
        text = bar_text(fraction, inner)
        filled = text.rstrip(" ")
        if filled:
            pieces.append((filled, fill_cls))
        if len(text) > len(filled):
            pieces.append((" " * (len(text) - len(filled)), ""))
    if caps and width >= 2:
        pieces.append((RIGHT_CAP, cap_cls))
    return pieces


def fraction(value: float | None, total: float | None) -> float | None:
    """``value / total`` or None when either is unknown (or the total is 0)."""
    if value is None or total is None or not total:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value / total


__all__ = ["bar", "bar_text", "fraction"]
