"""What a table shows, apart from how it draws it: column specs, the sort order (unknown values
last), and the rows in order with a cursor that stays on its row, found by key, when the rows
are sorted, filtered or replaced. No Textual here: :mod:`gputui.tui.widgets.virtual_table` draws
it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Generic, Literal, TypeVar

from gputui.core.frozen import frozen

T = TypeVar("T")
Align = Literal["left", "right"]


@frozen(slots=False)
class ColumnSpec(Generic[T]):
    """One column of a table of items of type ``T``."""

    key: str
    """Names the column in :meth:`VirtualTable.sort_by`, clicks and tests."""
    title: str
    render: Callable[[T], str]
    """The cell's text."""
    sort_key: Callable[[T], Any]
    """The value rows are sorted by; None (unknown) sorts last in either direction."""
    align: Align = "left"
    width: int = 0
    """Cells the column takes; 0: as wide as its widest text, or the rest of the line (the
    table's layout decides)."""
    min_width: int = 0
    """Cells the column keeps at least (a column that takes the rest of the line, or one as
    wide as its texts)."""
    default_reverse: bool = False
    """Direction when first chosen: big numbers and bad health first, names A→Z."""
    style: Callable[[T], str] | None = None
    """What the cell means (``fail``, ``warn``, ``dim``, ...), for tables that colour cells."""

    @property
    def numeric(self) -> bool:
        """Right-aligned: a number, read by its last digits."""
        return self.align == "right"


def sort_items(items: Iterable[T], value_of: Callable[[T], Any], reverse: bool) -> list[T]:
    """``items`` ordered by ``value_of``; None values last in either direction, ties in the
    order given (so callers pass items in their tie-break order)."""
    known: list[tuple[Any, T]] = []
    unknown: list[T] = []
    for item in items:
        value = value_of(item)
        if value is None:
            unknown.append(item)
        else:
            known.append((value, item))
    # sorted() is stable with reverse=True too, so ties keep the order given.
    known.sort(key=lambda pair: pair[0], reverse=reverse)
    return [item for _, item in known] + unknown


class TableRows(Generic[T]):
    """The rows shown, in order; the cursor, kept on its row's key; the first row in view."""

    def __init__(self, key: Callable[[T], str]) -> None:
        self.key = key
        self.rows: list[T] = []
        self.cursor = 0
        self.cursor_key: str | None = None
        self.top = 0

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def selected(self) -> T | None:
        """The row under the cursor (None: no rows)."""
        return self.rows[self.cursor] if self.rows else None

    def index_of(self, key: str) -> int | None:
        return next((i for i, item in enumerate(self.rows) if self.key(item) == key), None)

    def replace(self, rows: list[T], page: int) -> None:
        """New rows (sorted, filtered, or a new reading): the cursor stays on its row while the
        row is shown, else at the same place."""
        self.rows = rows
        if self.cursor_key is not None:
            found = self.index_of(self.cursor_key)
            if found is not None:
                self.cursor = found
        self._settle(page)

    def move_to(self, row: int, page: int) -> None:
        if self.rows:
            self.cursor = row
            self._settle(page)

    def page_by(self, pages: int, page: int) -> None:
        """Page up or down: the view and the cursor move a page (less one row, for context)."""
        step = max(page - 1, 1)
        self.top = max(self.top + pages * step, 0)
        self.move_to(self.cursor + pages * step, page)

    def scroll_to(self, top: int, page: int) -> bool:
        """Scroll the view without moving the cursor; True if it moved."""
        top = max(0, min(top, len(self.rows) - page))
        if top == self.top:
            return False
        self.top = top
        return True

    def keep_cursor_in_view(self, page: int) -> None:
        if self.cursor < self.top:
            self.top = self.cursor
        elif self.cursor >= self.top + page:
            self.top = self.cursor - page + 1
        self.top = max(0, min(self.top, len(self.rows) - page))

    def _settle(self, page: int) -> None:
        self.cursor = max(0, min(self.cursor, len(self.rows) - 1))
        self.cursor_key = self.key(self.rows[self.cursor]) if self.rows else None
        self.keep_cursor_in_view(page)


__all__ = ["Align", "ColumnSpec", "TableRows", "sort_items"]
