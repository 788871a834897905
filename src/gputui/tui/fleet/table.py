"""A sortable, filterable table of keyed rows, updated by diffing (the process table's way).

Each refresh compares the formatted text and style of every cell with what is on screen and
touches the DataTable only for cells that changed, so the cursor and scroll position survive and
an unchanged fleet sends nothing. Colours are chosen by meaning (``fail``, ``warn``, ``unknown``,
``dim``) and resolved from the app's theme, so light, dark and NO_COLOR all follow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import var
from textual.widget import Widget
from textual.widgets import DataTable, Static
from textual.widgets.data_table import CellDoesNotExist, ColumnKey

T = TypeVar("T")

_ARROW_DOWN = "▼"
_ARROW_UP = "▲"


@dataclass(frozen=True)
class Column(Generic[T]):
    key: str
    label: str
    numeric: bool
    default_reverse: bool
    """Direction when first chosen: big numbers and bad health first, names A→Z."""
    sort_value: Callable[[T], Any]
    text: Callable[[T], str]
    style: Callable[[T], str] | None = None
    """A meaning (``fail``, ``warn``, ``unknown``, ``ok``, ``dim``) or ``""``."""


def theme_styles(variables: dict[str, str]) -> dict[str, Style]:
    """Meaning -> Rich style from the theme's CSS variables."""

    def color(name: str) -> str | None:
        value = variables.get(name, "")
        return value if value.startswith("#") else None

    return {
        "fail": Style(color=color("error"), bold=True, reverse=True),
        "unknown": Style(color=color("warning"), bold=True, reverse=True),
        "warn": Style(color=color("warning"), bold=True),
        "ok": Style(color=color("success")),
        "dim": Style(dim=True),
        "": Style(),
    }


class KeyedTable(Widget, Generic[T]):
    """Rows of items of one kind. Call :meth:`update_items` with each refresh; Enter posts
    :class:`KeyedTable.Selected`."""

    DEFAULT_CSS = """
    KeyedTable {
        height: 1fr;
    }
    KeyedTable > DataTable {
        height: auto;
        max-height: 100%;
        scrollbar-size-horizontal: 0;
    }
    KeyedTable > .keyed-table--empty {
        height: 1;
        padding: 0 1;
        color: $text-muted;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "cycle_sort", "Sort", id="fleet_table.cycle_sort"),
        Binding("S", "reverse_sort", "Reverse sort", id="fleet_table.reverse_sort"),
    ]

    text_filter: var[str] = var("")
    """Case-insensitive substring over the row's searchable text ('' = all)."""

    class Selected(Message):
        """Enter on a row."""

        def __init__(self, table: KeyedTable[Any], item: Any) -> None:
            super().__init__()
            self.table = table
            self.item = item

        @property
        def control(self) -> KeyedTable[Any]:
            return self.table

    def __init__(
        self,
        columns: Sequence[Column[T]],
        *,
        key: Callable[[T], str],
        search: Callable[[T], str],
        default_sort: str,
        empty: str = "nothing to show",
        narrow: tuple[int, frozenset[str]] | None = None,
        id: str | None = None,
    ) -> None:
        """``narrow``: ``(width, keys)``: below ``width`` cells the columns ``keys`` are left out,
        so the last column (why a row is not healthy) stays in view."""
        super().__init__(id=id)
        self.all_columns = tuple(columns)
        self.columns = self.all_columns
        self._narrow = narrow
        self._by_key = {c.key: c for c in self.all_columns}
        self._key = key
        self._search = search
        self._empty_default = empty
        self._sort_column = default_sort
        self._sort_reverse = self._by_key[default_sort].default_reverse
        self._sort_dirty = False
        self._items: list[T] = []
        self._extra_filter: Callable[[T], bool] | None = None
        self._extra_empty = ""
        self._cells: dict[str, tuple[tuple[str, str], ...]] = {}
        self._order: list[str] = []
        self._visible: dict[str, T] = {}
        self._styles: dict[str, Style] = {}
        self._theme = ""
        self._empty_text = ""
        self._table: DataTable[Text] = DataTable(cursor_type="row", zebra_stripes=False)
        self._empty = Static("", classes="keyed-table--empty")
        self._empty.display = False

    def compose(self) -> ComposeResult:
        yield self._table
        yield self._empty

    def on_mount(self) -> None:
        self._add_columns()
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)
        self.call_after_refresh(self._apply)

    def _add_columns(self) -> None:
        for column in self.columns:
            self._table.add_column(self._header(column), key=column.key)

    def on_resize(self) -> None:
        if self._narrow is None:
            return
        width, hidden = self._narrow
        columns = self.all_columns
        if self.size.width < width:
            columns = tuple(c for c in self.all_columns if c.key not in hidden)
        if columns == self.columns:
            return
        cursor_key = self._cursor_key()
        self.columns = columns
        self._table.clear(columns=True)
        self._cells = {}
        self._order = []
        self._add_columns()
        self._apply()
        if cursor_key is not None and cursor_key in self._cells:
            self._table.move_cursor(row=self._table.get_row_index(cursor_key))

    # -- public ------------------------------------------------------------------------------------

    @property
    def data_table(self) -> DataTable[Text]:
        return self._table

    @property
    def sort_column(self) -> str:
        return self._sort_column

    @property
    def sort_reverse(self) -> bool:
        return self._sort_reverse

    @property
    def selected(self) -> T | None:
        key = self._cursor_key()
        return None if key is None else self._visible.get(key)

    @property
    def visible_items(self) -> list[T]:
        return [self._visible[key] for key in self._order]

    def update_items(self, items: Iterable[T]) -> None:
        self._items = list(items)
        self._apply()

    def set_extra_filter(self, keep: Callable[[T], bool] | None, empty: str = "") -> None:
        """A second filter (e.g. "problems only"), with the message to show when nothing is left."""
        self._extra_filter = keep
        self._extra_empty = empty
        self._apply()

    def sort_by(self, column: str, reverse: bool | None = None) -> None:
        if column not in self._by_key:
            raise ValueError(f"unknown column {column!r}")
        if reverse is None:
            reverse = self._by_key[column].default_reverse
        if (column, reverse) == (self._sort_column, self._sort_reverse):
            return
        self._sort_column, self._sort_reverse = column, reverse
        self._sort_dirty = True
        self._apply()

    def focus(self, scroll_visible: bool = True) -> KeyedTable[T]:
        self._table.focus(scroll_visible)
        return self

    # -- events ------------------------------------------------------------------------------------

    def action_cycle_sort(self) -> None:
        keys = [c.key for c in self.columns]
        index = keys.index(self._sort_column) if self._sort_column in keys else -1
        self.sort_by(keys[(index + 1) % len(keys)])

    def action_reverse_sort(self) -> None:
        self.sort_by(self._sort_column, not self._sort_reverse)

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        column = event.column_key.value
        if column is None:
            return
        if column == self._sort_column:
            self.sort_by(column, not self._sort_reverse)
        else:
            self.sort_by(column)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = event.row_key.value
        item = self._visible.get(key) if key is not None else None
        if item is not None:
            self.post_message(self.Selected(self, item))

    def watch_text_filter(self) -> None:
        self._apply()

    def _theme_changed(self, _theme: object) -> None:
        self._theme = ""
        self._cells = {}
        self._order = []
        self._table.clear()
        self._apply()

    # -- internals ---------------------------------------------------------------------------------

    def _header(self, column: Column[T]) -> Text:
        arrow = ""
        if column.key == self._sort_column:
            arrow = _ARROW_DOWN if self._sort_reverse else _ARROW_UP
        # two cells are always kept for the arrow, so the widths do not jump
        return Text(f"{column.label} {arrow or ' '}", justify="right" if column.numeric else "left")

    def _cell(self, column: Column[T], text: str, style: str) -> Text:
        return Text(
            text,
            style=self._styles.get(style, Style()),
            justify="right" if column.numeric else "left",
            no_wrap=True,
        )

    def _matches(self, item: T) -> bool:
        if self._extra_filter is not None and not self._extra_filter(item):
            return False
        needle = self.text_filter.strip().lower()
        return not needle or needle in self._search(item).lower()

    def _sorted(self, items: list[T]) -> list[T]:
        column = self._by_key[self._sort_column]
        known: list[tuple[Any, T]] = []
        unknown: list[T] = []
        for item in items:
            value = column.sort_value(item)
            (unknown.append(item) if value is None else known.append((value, item)))
        known.sort(key=lambda pair: pair[0], reverse=self._sort_reverse)
        return [item for _, item in known] + unknown

    def _cursor_key(self) -> str | None:
        table = self._table
        if table.row_count == 0:
            return None
        try:
            row_key, _ = table.coordinate_to_cell_key(table.cursor_coordinate)
        except CellDoesNotExist:
            return None
        return row_key.value

    def _apply(self) -> None:
        if not self.is_mounted:
            return
        if self._theme != self.app.theme:
            self._theme = self.app.theme
            self._styles = theme_styles(self.app.get_css_variables())
        visible = {self._key(item): item for item in self._items if self._matches(item)}
        cells = {
            key: tuple(
                (c.text(item), c.style(item) if c.style is not None else "") for c in self.columns
            )
            for key, item in visible.items()
        }
        desired = [self._key(item) for item in self._sorted(list(visible.values()))]
        self._visible = visible
        gone = [key for key in self._order if key not in cells]
        added = [key for key in desired if key not in self._cells]
        changed = [k for k, v in cells.items() if k in self._cells and self._cells[k] != v]
        resort = self._sort_dirty or [k for k in self._order if k in cells] + added != desired
        if gone or added or changed or resort:
            with self.app.batch_update():
                self._change(cells, gone, added, changed, desired, resort)
        self._show_empty(not cells)

    def _change(
        self,
        cells: dict[str, tuple[tuple[str, str], ...]],
        gone: list[str],
        added: list[str],
        changed: list[str],
        desired: list[str],
        resort: bool,
    ) -> None:
        table = self._table
        cursor_key = self._cursor_key()
        for key in gone:
            table.remove_row(key)
            del self._cells[key]
        for key in changed:
            for column, before, after in zip(
                self.columns, self._cells[key], cells[key], strict=True
            ):
                if before != after:
                    table.update_cell(
                        key, column.key, self._cell(column, *after), update_width=True
                    )
            self._cells[key] = cells[key]
        for key in added:
            row = cells[key]
            table.add_row(
                *(self._cell(c, *v) for c, v in zip(self.columns, row, strict=True)), key=key
            )
            self._cells[key] = row
        if resort:
            if self._sort_dirty:
                for column in self.columns:
                    table.columns[ColumnKey(column.key)].label = self._header(column)
            # DataTable sorts by cell values: rank each row through its texts (rows that show
            # the same texts everywhere are interchangeable)
            rank = {tuple(t for t, _ in cells[key]): i for i, key in enumerate(desired)}
            table.sort(key=lambda row: rank[tuple(text.plain for text in row)])
            self._sort_dirty = False
        self._order = list(desired)
        if cursor_key is not None and cursor_key in cells:
            index = table.get_row_index(cursor_key)
            if index != table.cursor_row:
                table.move_cursor(row=index)

    def _show_empty(self, empty: bool) -> None:
        text = ""
        if empty:
            needle = self.text_filter.strip()
            if needle:
                text = f"nothing matches {needle!r}"
            elif self._extra_filter is not None and self._items:
                text = self._extra_empty or self._empty_default
            else:
                text = self._empty_default
        if text != self._empty_text:
            self._empty_text = text
            self._empty.update(Text(text))
        if self._empty.display != bool(text):
            self._empty.display = bool(text)


__all__ = ["Column", "KeyedTable", "theme_styles"]
