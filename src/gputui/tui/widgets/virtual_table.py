"""A table of keyed rows, drawn as lines: sorted by any column, filtered by text and by a
predicate, with a cursor that stays on its row and a view that scrolls.

It is a Line-API widget (:class:`~gputui.tui.widgets.line_widget.LineWidget`): a refresh sorts and
filters the items (a sort of a few thousand tuples), formats only the rows in view, and the lines
are compared with the ones on screen so that only the cells whose text or style changed are
repainted. A refresh in which nothing visible changed repaints nothing.

Subclasses give the columns (:class:`~gputui.tui.widgets.table_model.ColumnSpec`) and, through
:meth:`VirtualTable.table_layout`, which of them show and how wide at a given width. How a table
looks is decided by a few small methods (the class of each piece, the header's text); the
defaults are the dashboard's look (meter colours from the screen's palette), and a subclass may
style its pieces itself through :meth:`LineWidget.class_style`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, Generic, TypeVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import var

from gputui.core.format import clip
from gputui.core.frozen import frozen
from gputui.tui.widgets.line_widget import (
    ACCENT,
    DIM,
    FRAME,
    LABEL,
    SELECTED,
    TITLE,
    VALUE,
    Line,
    LineWidget,
    cells,
)
from gputui.tui.widgets.table_model import ColumnSpec, TableRows, sort_items

T = TypeVar("T")

ARROW_DOWN = "▼"
ARROW_UP = "▲"


@frozen(slots=False)
class TableLayout(Generic[T]):
    """The columns shown at one width, and where."""

    columns: tuple[ColumnSpec[T], ...]
    widths: tuple[int, ...]
    """Cells of each column's text."""
    gap: int = 2
    """Blank cells between two columns."""
    margin: int = 1
    """Blank cells before the first column."""
    end: int = 0
    """Blank cells after the last column."""
    scrollbar: bool = False
    """The rightmost cell is a scroll bar (more rows than fit)."""

    @property
    def starts(self) -> tuple[int, ...]:
        """The x of each column's text."""
        starts: list[int] = []
        x = self.margin
        for width in self.widths:
            starts.append(x)
            x += width + self.gap
        return tuple(starts)

    @property
    def width(self) -> int:
        """Cells of a whole row (wider than the widget when it scrolls sideways)."""
        return self.margin + sum(self.widths) + self.gap * max(len(self.widths) - 1, 0) + self.end


def table_bindings(prefix: str) -> list[BindingType]:
    """The keys of a table: sort, move, page, first, last, select; ids ``prefix.<action>``."""
    return [
        Binding("s", "cycle_sort", "Sort", id=f"{prefix}.cycle_sort"),
        Binding("S", "reverse_sort", "Reverse sort", id=f"{prefix}.reverse_sort"),
        Binding("up", "move(-1)", "Up", show=False, id=f"{prefix}.up"),
        Binding("down", "move(1)", "Down", show=False, id=f"{prefix}.down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id=f"{prefix}.page_up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id=f"{prefix}.page_down"),
        Binding("home", "jump(0)", "First", show=False, id=f"{prefix}.first"),
        Binding("end", "jump(-1)", "Last", show=False, id=f"{prefix}.last"),
        Binding("enter", "select_cursor", "Select", show=False, id=f"{prefix}.select"),
    ]


class VirtualTable(LineWidget, Generic[T], can_focus=True):
    """Rows of items of one kind, keyed (``key(item)``), sorted by one column.

    Give it items with :meth:`set_items` (each refresh), a filter with :meth:`set_filter` and
    :attr:`text_filter`. Enter, or a click on the highlighted row, posts
    :meth:`selected_message`; a click on a header sorts by that column (again: reversed).
    """

    SCROLL_STEP: ClassVar[int] = 3
    """Rows a mouse-wheel notch scrolls."""

    text_filter: var[str] = var("")
    """Case-insensitive substring a row must contain (:meth:`matches`; '' = all)."""

    def __init__(
        self,
        columns: Sequence[ColumnSpec[T]],
        *,
        key: Callable[[T], str],
        default_sort: str,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """``columns``: every column the table may show (:meth:`table_layout` picks)."""
        super().__init__(name=name, id=id, classes=classes)
        self.all_columns = tuple(columns)
        self._by_key = {c.key: c for c in self.all_columns}
        self._key = key
        self._items: Sequence[T] = ()
        self._keep: Callable[[T], bool] | None = None
        self._rows: TableRows[T] = TableRows(key)
        self._sort_column = default_sort
        self._sort_reverse = self._by_key[default_sort].default_reverse
        self._told_key: str | None = None
        """The cursor's key last told to :meth:`cursor_moved`."""
        self._left = 0
        """Cells scrolled sideways."""

    # --- for subclasses ---------------------------------------------------------------------------

    def table_layout(self, width: int, scrollbar: bool) -> TableLayout[T]:
        """The columns shown at ``width`` and their widths (``scrollbar``: the last cell is the
        scroll bar's)."""
        raise NotImplementedError

    def selected_message(self, item: T) -> Message:
        """What Enter on a row posts."""
        raise NotImplementedError

    def cursor_moved(self, item: T | None) -> None:
        """The cursor is on another row (or none)."""

    def matches(self, item: T, needle: str) -> bool:
        """Whether ``item`` is shown for the lower-case ``needle``: it is in a cell's text."""
        return any(needle in spec.render(item).lower() for spec in self.all_columns)

    def sort_value(self, spec: ColumnSpec[T], item: T) -> Any:
        return spec.sort_key(item)

    def in_tiebreak_order(self, items: Sequence[T]) -> Iterable[T]:
        """``items`` in the order rows with equal sort values keep."""
        return items

    def arrange_rows(self, rows: list[T]) -> list[T]:
        """The sorted rows in the order shown (grouped, or as a tree); by default as sorted."""
        return rows

    def cell(self, spec: ColumnSpec[T], item: T, width: int) -> str:
        """A cell's text, at most ``width`` cells (clipped with an ellipsis)."""
        text = spec.render(item)
        if cells(text) > width:
            text = clip(text, width - 1) + "…"
        return text

    @property
    def empty_text(self) -> str:
        """What the table says when no row is shown ('' for nothing)."""
        return ""

    # The look: classes of the pieces (the screen's meter palette colours them by default).

    def header_text(self, spec: ColumnSpec[T], arrow: str) -> str:
        """A column's header; ``arrow``: the sort arrow, or " " when not sorted by it."""
        return f"{spec.title} {arrow}"

    def header_class(self, spec: ColumnSpec[T], sorted_by: bool) -> str:
        return ACCENT if sorted_by else TITLE

    def header_gap_class(self) -> str:
        return ""

    def header_status(self, room: int) -> str:
        """Text at the right end of the header line, at most ``room`` cells ('' for none)."""
        return ""

    def header_status_class(self) -> str:
        return LABEL

    def row_mark(self, item: T) -> tuple[str, str] | None:
        """A one-cell mark in a row's margin (a tag), and its class; None for a blank."""
        return None

    def cell_pieces(self, spec: ColumnSpec[T], item: T, text: str, on_cursor: bool) -> Line:
        """A cell's aligned ``text`` as pieces (a subclass may highlight part of it)."""
        return [(text, self.cell_class(spec, item, on_cursor))]

    def cell_class(self, spec: ColumnSpec[T], item: T, on_cursor: bool) -> str:
        if on_cursor:
            return self.gap_class(True)
        return VALUE

    def gap_class(self, on_cursor: bool) -> str:
        """The blanks of a row (between cells, and to the right edge)."""
        if on_cursor:
            return SELECTED if self.has_focus else ACCENT
        return ""

    def empty_line(self, text: str) -> Line:
        return [(" " + text, DIM)]

    scrollbar_classes: ClassVar[tuple[str, str]] = (LABEL, FRAME)
    """The scroll bar's thumb and track."""

    # --- public API -------------------------------------------------------------------------------

    def set_items(self, items: Sequence[T]) -> None:
        """Show these items (sorted and filtered); only the cells that change are repainted."""
        self._items = items
        self.refilter()

    def set_filter(self, keep: Callable[[T], bool] | None) -> None:
        """Show only the items ``keep`` keeps (None: all)."""
        self._keep = keep
        self.refilter()

    @property
    def sort_column(self) -> str:
        return self._sort_column

    @property
    def sort_reverse(self) -> bool:
        """True when sorted descending."""
        return self._sort_reverse

    def sort_by(self, column: str, reverse: bool | None = None) -> None:
        """Sort by a column key; ``reverse=None`` uses the column's natural direction."""
        if column not in self._by_key:
            raise ValueError(f"unknown column {column!r}; expected one of {tuple(self._by_key)}")
        if reverse is None:
            reverse = self._by_key[column].default_reverse
        if (column, reverse) == (self._sort_column, self._sort_reverse):
            return
        self._sort_column, self._sort_reverse = column, reverse
        self.refilter()

    @property
    def selected(self) -> T | None:
        """The item under the cursor, or None when the table is empty."""
        return self._rows.selected

    @property
    def visible_items(self) -> list[T]:
        """The items shown (after the filters), in display order."""
        return list(self._rows.rows)

    @property
    def row_count(self) -> int:
        return len(self._rows)

    @property
    def cursor_row(self) -> int:
        """Index of the highlighted row in :attr:`visible_items`."""
        return self._rows.cursor

    @property
    def top_row(self) -> int:
        """Index of the first row in view."""
        return self._rows.top

    @property
    def row_keys(self) -> list[str]:
        """The key of each row, in display order."""
        return [self._key(item) for item in self._rows.rows]

    @property
    def column_keys(self) -> list[str]:
        """The columns shown at the current width."""
        return [c.key for c in self._layout_now().columns]

    def cell_text(self, key: str, column: str) -> str:
        """The text a row shows in a column (at the current width); KeyError when the row or
        the column is not shown."""
        index = self._rows.index_of(key)
        if index is None:
            raise KeyError(key)
        layout = self._layout_now()
        for spec, width in zip(layout.columns, layout.widths, strict=True):
            if spec.key == column:
                return self.cell(spec, self._rows.rows[index], width)
        raise KeyError(column)

    def header_x(self, column: str) -> int:
        """The x offset of a column's header (for clicks)."""
        layout = self._layout_now()
        for spec, start in zip(layout.columns, layout.starts, strict=True):
            if spec.key == column:
                return start - self._left
        raise KeyError(column)

    def refilter(self) -> None:
        """Filter and sort the items again, the cursor staying on its row."""
        items: Sequence[T] = self._items
        keep = self._keep
        needle = self.text_filter.strip().lower()
        if keep is not None or needle:
            matches = self.matches
            items = [
                item
                for item in items
                if (keep is None or keep(item)) and (not needle or matches(item, needle))
            ]
        spec = self._by_key[self._sort_column]
        value_of = self.sort_value
        rows = sort_items(
            self.in_tiebreak_order(items), lambda item: value_of(spec, item), self._sort_reverse
        )
        self._rows.replace(self.arrange_rows(rows), self._page_rows())
        self.rebuild()
        self._tell_cursor()

    # --- actions and events -----------------------------------------------------------------------

    def action_cycle_sort(self) -> None:
        keys = self.column_keys  # the columns on screen
        index = keys.index(self._sort_column) if self._sort_column in keys else -1
        self.sort_by(keys[(index + 1) % len(keys)])

    def action_reverse_sort(self) -> None:
        self.sort_by(self._sort_column, not self._sort_reverse)

    def action_move(self, rows: int) -> None:
        self._move_to(self._rows.cursor + rows)

    def action_page(self, pages: int) -> None:
        self._rows.page_by(pages, self._page_rows())
        self.rebuild()
        self._tell_cursor()

    def action_jump(self, row: int) -> None:
        self._move_to(row if row >= 0 else len(self._rows) + row)

    def action_select_cursor(self) -> None:
        item = self.selected
        if item is not None:
            self.post_message(self.selected_message(item))

    def action_scroll_columns(self, cells: int) -> None:
        """Scroll sideways, when the columns are wider than the table."""
        layout = self._layout_now()
        hidden = layout.width - self._room(layout, self.size.width)
        left = max(0, min(self._left + cells, hidden))
        if left != self._left:
            self._left = left
            self.rebuild()

    def on_click(self, event: events.Click) -> None:
        event.stop()
        if event.y == 0:
            column = self._column_at(event.x + self._left)
            if column is None:
                return
            if column == self._sort_column:
                self.sort_by(column, not self._sort_reverse)
            else:
                self.sort_by(column)
            return
        row = self._rows.top + event.y - 1
        if row >= len(self._rows):
            return
        if row == self._rows.cursor:
            self.action_select_cursor()
        else:
            self._move_to(row)

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        event.stop()
        self._scroll_rows(self._rows.top + self.SCROLL_STEP)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        event.stop()
        self._scroll_rows(self._rows.top - self.SCROLL_STEP)

    def on_resize(self) -> None:
        # Taller: rows above may now fit in view; shorter: the cursor must stay in it.
        self._rows.keep_cursor_in_view(self._page_rows())
        self.rebuild()

    def on_focus(self) -> None:
        self.rebuild()

    def on_blur(self) -> None:
        self.rebuild()

    def watch_text_filter(self) -> None:
        self.refilter()

    # --- internals --------------------------------------------------------------------------------

    @staticmethod
    def _room(layout: TableLayout[T], width: int) -> int:
        return width - (1 if layout.scrollbar else 0)

    def _page_rows(self) -> int:
        return max(self.size.height - 1, 1)

    def _layout_now(self) -> TableLayout[T]:
        return self._layout_at(self.size.width)

    def _layout_at(self, width: int) -> TableLayout[T]:
        return self.table_layout(width, len(self._rows) > self._page_rows())

    def _move_to(self, row: int) -> None:
        if self._rows.rows:
            self._rows.move_to(row, self._page_rows())
            self.rebuild()
            self._tell_cursor()

    def _tell_cursor(self) -> None:
        if self._rows.cursor_key != self._told_key:
            self._told_key = self._rows.cursor_key
            self.cursor_moved(self.selected)

    def _scroll_rows(self, top: int) -> None:
        if self._rows.scroll_to(top, self._page_rows()):
            self.rebuild()

    def _column_at(self, x: int) -> str | None:
        layout = self._layout_now()
        for spec, start, width in zip(layout.columns, layout.starts, layout.widths, strict=True):
            if start <= x < start + width + layout.gap:
                return spec.key
        return None

    def _arrow(self, column: str) -> str:
        if column != self._sort_column:
            return " "
        return ARROW_DOWN if self._sort_reverse else ARROW_UP

    def build_lines(self, width: int, height: int) -> list[Line]:
        layout = self._layout_at(width)
        room = self._room(layout, width)  # the rows' cells, left of the scroll bar
        lines: list[Line] = [self._header_line(layout, max(layout.width, width), room)]
        rows = self._rows
        page = height - 1
        if not rows.rows:
            text = self.empty_text
            if text:
                lines.append(self.empty_line(text))
        full = max(layout.width, room)
        for row in range(rows.top, min(rows.top + page, len(rows))):
            lines.append(self._row_line(rows.rows[row], layout, row == rows.cursor, full))
        if self._left:
            lines = [_crop_left(line, self._left) for line in lines]
        if layout.scrollbar:
            self._draw_scrollbar(lines, width, page)
        return lines

    def _header_line(self, layout: TableLayout[T], room: int, visible: int) -> Line:
        """The column titles; :meth:`header_status` at the right end of the ``visible`` cells."""
        gap_cls = self.header_gap_class()
        line: Line = [(" " * layout.margin, gap_cls)]
        label = ""
        for i, (spec, width) in enumerate(zip(layout.columns, layout.widths, strict=True)):
            if i:
                line.append((" " * layout.gap, gap_cls))
            sorted_by = spec.key == self._sort_column
            label = _aligned(self.header_text(spec, self._arrow(spec.key)), width, spec.numeric)
            line.append((label, self.header_class(spec, sorted_by)))
        # The status goes after the last title's text, two blanks from it and one from the edge.
        used = sum(cells(text) for text, _ in line) - (len(label) - len(label.rstrip()))
        right = visible + self._left
        status = self.header_status(right - used - 3)
        if status and label:
            line[-1] = (label.rstrip(), line[-1][1])
            line.append((" " * (right - used - cells(status) - 1), gap_cls))
            line.append((status, self.header_status_class()))
        return _filled(line, room, gap_cls)

    def _row_line(self, item: T, layout: TableLayout[T], on_cursor: bool, room: int) -> Line:
        gap_cls = self.gap_class(on_cursor)
        mark = self.row_mark(item) if layout.margin else None
        if mark is None:
            line: Line = [(" " * layout.margin, gap_cls)]
        else:
            line = [(mark[0], gap_cls if on_cursor else mark[1])]
            if layout.margin > 1:
                line.append((" " * (layout.margin - 1), gap_cls))
        for i, (spec, width) in enumerate(zip(layout.columns, layout.widths, strict=True)):
            if i:
                line.append((" " * layout.gap, gap_cls))
            text = _aligned(self.cell(spec, item, width), width, spec.numeric)
            line.extend(self.cell_pieces(spec, item, text, on_cursor))
        return _filled(line, room, gap_cls)

    def _draw_scrollbar(self, lines: list[Line], width: int, page: int) -> None:
        """A one-cell bar at the right edge: where the rows in view are among all of them."""
        total = len(self._rows)
        thumb = max(1, round(page * page / total))
        start = round((page - thumb) * self._rows.top / max(total - page, 1))
        thumb_cls, track_cls = self.scrollbar_classes
        for y in range(page):
            row = y + 1
            while len(lines) <= row:
                lines.append([])
            line = lines[row]
            used = sum(cells(text) for text, _ in line)
            if used > width - 1:
                line[:] = _crop_right(line, width - 1)
            elif used < width - 1:
                line.append((" " * (width - 1 - used), ""))
            inside = start <= y < start + thumb
            line.append(("┃" if inside else "│", thumb_cls if inside else track_cls))


def _aligned(text: str, width: int, right: bool) -> str:
    """``text`` padded to ``width`` cells, on the left when ``right`` (trailing blanks dropped
    first, as Rich's right justification does); cut when longer."""
    if right:
        text = text.rstrip()
    pad = width - cells(text)
    if pad < 0:
        text = clip(text, width)
        pad = width - cells(text)  # a wide character that did not fit leaves a cell
    return " " * pad + text if right else text + " " * pad


def _filled(line: Line, width: int, cls: str) -> Line:
    """``line`` padded with ``cls`` blanks to ``width`` cells."""
    used = sum(cells(text) for text, _ in line)
    if used < width:
        line.append((" " * (width - used), cls))
    return line


def _crop_left(line: Line, skip: int) -> Line:
    """``line`` without its first ``skip`` cells."""
    out: Line = []
    for text, cls in line:
        width = cells(text)
        if skip >= width:
            skip -= width
            continue
        if skip:
            text = text[skip:] if width == len(text) else _drop_cells(text, skip)
            skip = 0
        out.append((text, cls))
    return out


def _drop_cells(text: str, skip: int) -> str:
    """``text`` without its first ``skip`` cells (a wide character cut in two becomes a space)."""
    for i in range(len(text) + 1):
        dropped = cells(text[:i])
        if dropped >= skip:
            return " " * (dropped - skip) + text[i:]
    return ""


def _crop_right(line: Line, width: int) -> Line:
    out: Line = []
    used = 0
    for text, cls in line:
        if used >= width:
            break
        if used + cells(text) > width:
            text = clip(text, width - used)
        out.append((text, cls))
        used += cells(text)
    return out


__all__ = ["ARROW_DOWN", "ARROW_UP", "TableLayout", "VirtualTable", "table_bindings"]
