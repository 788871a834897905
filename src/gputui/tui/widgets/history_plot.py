"""History plots drawn with block characters: one-row sparklines and multi-row column plots.

Values come from :meth:`gputui.core.history.History.gpu_series` (oldest first, NaN where unknown);
the newest value is drawn in the rightmost column. A gap (NaN) is drawn as a blank column, so a lost
reading is never shown as 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from gputui.tui.widgets.line_widget import LABEL, Line, LineBuilder

_LEVELS = " ▁▂▃▄▅▆▇█"


def _scale(value: float, lo: float, hi: float) -> float:
    if hi <= lo:
        return 0.0
    return max(0.0, min(1.0, (value - lo) / (hi - lo)))


def sparkline(values: Sequence[float], width: int, lo: float = 0.0, hi: float = 100.0) -> str:
    """One row, ``width`` cells, newest on the right, left-padded with blanks when short."""
    if width <= 0:
        return ""
    span = hi - lo
    levels = _LEVELS
    cells = []
    for value in values[-width:]:
        if value is None or value != value:  # a gap (None or NaN) is blank
            cells.append(" ")
            continue
        # A known value shows at least the lowest bar; only a gap (unknown) is blank.
        level = round((value - lo) / span * 8) if span > 0 else 0
        cells.append(levels[1 if level < 1 else 8 if level > 8 else level])
    return "".join(cells).rjust(width)


_STACKS: dict[tuple[int, int], tuple[str, ...]] = {}


def _stack(eighths: int, height: int) -> tuple[str, ...]:
    """The cells of one column ``eighths`` eighths tall, top row first."""
    key = (eighths, height)
    stack = _STACKS.get(key)
    if stack is None:
        stack = tuple(
            _LEVELS[min(8, max(0, eighths - 8 * (height - 1 - r)))] for r in range(height)
        )
        _STACKS[key] = stack
    return stack


def column_plot(
    values: Sequence[float], width: int, height: int, lo: float = 0.0, hi: float = 100.0
) -> list[str]:
    """``height`` rows (top first) of a column plot ``width`` cells wide, in eighth-cell steps."""
    if width <= 0 or height <= 0:
        return []
    tail = list(values[-width:])
    total = height * 8
    blank = _stack(0, height)
    columns = [blank] * (width - len(tail))
    for value in tail:
        if value is None or math.isnan(value):
            columns.append(blank)
            continue
        eighths = round(_scale(value, lo, hi) * total)
        if eighths == 0 and value > lo:
            eighths = 1
        columns.append(_stack(eighths, height))
    return ["".join(row) for row in zip(*columns, strict=True)]


def plot_block(
    title: str,
    values: Sequence[float],
    width: int,
    height: int,
    plot_cls: str,
    *,
    lo: float = 0.0,
    hi: float = 100.0,
    axis: tuple[str, str] = ("100", "0"),
) -> list[Line]:
    """A titled column plot: a title row then ``height - 1`` plot rows with a small y axis."""
    if height <= 0 or width <= 0:
        return []
    lines: list[Line] = [LineBuilder().add(title[:width], LABEL).line(width)]
    rows = height - 1
    if rows <= 0:
        return lines
    axis_w = max(len(axis[0]), len(axis[1])) + 1
    plot_w = width - axis_w
    if plot_w < 4:
        axis_w, plot_w = 0, width
    for r, row in enumerate(column_plot(values, plot_w, rows, lo, hi)):
        b = LineBuilder()
        if axis_w:
            label = axis[0] if r == 0 else axis[1] if r == rows - 1 else ""
            b.add(label.rjust(axis_w - 1) + "▕", LABEL)
        b.add(row, plot_cls)
        lines.append(b.line(width))
    return lines


__all__ = ["column_plot", "plot_block", "sparkline"]
