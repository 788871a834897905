"""Text tables for the reports, fitted to a terminal's width as the dashboard fits its tables:
columns left-aligned and measured in cells, the last one free text that takes the rest of the
line. At a width, columns that matter less give way (in the order given) before the last column
gets less than a readable share, and the last column's text is fitted to what it gets (a
command by :func:`gputui.core.command_text.command_text`, anything else cut with ``…``), so no
row is wider than the terminal and none wraps. Without a width, nothing is cut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gputui.core.format import cell_width, clip, pad, sanitize

FitText = Callable[[int | None], str]
"""The last cell of a row, fitted to a number of cells (None: whole)."""
Cell = str | FitText
LAST_MIN = 24
"""Cells the last column keeps before the columns that may give way do."""
GAP = "  "


def clipped(text: str, width: int | None) -> str:
    """``text`` in at most ``width`` cells, ending in ``…`` when cut (whole when None)."""
    if width is None or cell_width(text) <= width:
        return text
    return clip(text, max(width - 1, 0)) + "…" if width > 0 else ""


def _text(cell: Cell, width: int | None) -> str:
    return sanitize(cell(width)) if callable(cell) else clipped(sanitize(cell), width)


def text_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Cell]],
    *,
    width: int | None = None,
    give_way: Sequence[int] = (),
    indent: str = "",
) -> list[str]:
    """The header line and a line per row. ``width``: the lines' width at most (``indent``
    included); ``give_way``: indexes of the columns that may be left out, first to go first,
    while the last column would get fewer than :data:`LAST_MIN` cells (or its whole text)."""
    if not headers:
        return []
    last = len(headers) - 1
    fixed = [
        [sanitize(str(row[i])) for row in rows] if i < last else [] for i in range(len(headers))
    ]
    natural = [
        max([cell_width(headers[i])] + [cell_width(c) for c in fixed[i]]) for i in range(last)
    ]
    shown = list(range(last))
    room: int | None = None
    if width is not None:
        whole_last = max(
            [cell_width(headers[last])] + [cell_width(_text(r[last], None)) for r in rows]
        )
        need_last = min(whole_last, LAST_MIN)

        def left_for_last(columns: list[int]) -> int:
            return width - cell_width(indent) - sum(natural[i] + len(GAP) for i in columns)

        for column in give_way:
            if left_for_last(shown) >= need_last:
                break
            if column in shown:
                shown.remove(column)
        room = max(left_for_last(shown), 0)
    lines = [[pad(headers[i], natural[i]) for i in shown] + [headers[last]]]
    for r, row in enumerate(rows):
        lines.append([pad(fixed[i][r], natural[i]) for i in shown] + [_text(row[last], room)])
    out = []
    for cells in lines:
        line = indent + GAP.join([*cells[:-1], clipped(cells[-1], room)])
        out.append((line if width is None else clipped(line, width)).rstrip())
    return out


__all__ = ["LAST_MIN", "Cell", "FitText", "clipped", "text_table"]
