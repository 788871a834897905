"""The fleet's tables (nodes, and one node's GPUs): a :class:`VirtualTable` that looks like
Textual's DataTable with a row cursor, which it replaced.

Cells are drawn DataTable's way: a cell of padding on each side of each cell, columns as wide as
their widest text, a header row in the theme's panel colour, a block cursor across the whole row.
Colours are chosen by meaning (``fail``, ``warn``, ``unknown``, ``ok``, ``dim``) and resolved
from the app's theme, so light, dark and NO_COLOR all follow. Sorting, filtering, the cursor and
scrolling are the table's (shared with the process table); a refresh repaints only the cells
that changed, and an unchanged fleet repaints nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar

from rich.style import Style
from textual.binding import Binding, BindingType
from textual.message import Message

from gputui.tui.widgets.line_widget import Line, cells, component_style
from gputui.tui.widgets.table_model import ColumnSpec
from gputui.tui.widgets.virtual_table import TableLayout, VirtualTable, table_bindings

T = TypeVar("T")

HEADER = "keyed-table--header"
CURSOR = "keyed-table--cursor"
EMPTY = "keyed-table--empty"
SCROLLBAR = "keyed-table--scrollbar"
SCROLLBAR_THUMB = "keyed-table--scrollbar-thumb"


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


class KeyedTable(VirtualTable[T]):
    """Rows of items of one kind. Call :meth:`set_items` with each refresh; Enter posts
    :class:`KeyedTable.Selected`."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {HEADER, CURSOR, EMPTY, SCROLLBAR, SCROLLBAR_THUMB}

    # DataTable's look (Textual 8.2's DataTable DEFAULT_CSS, for the parts a row cursor uses).
    DEFAULT_CSS = """
    KeyedTable {
        height: 1fr;
        background: $surface;
        color: $foreground;
        &:focus {
            background-tint: $foreground 5%;
            & > .keyed-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .keyed-table--header {
                background-tint: $foreground 5%;
            }
        }
        & > .keyed-table--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .keyed-table--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .keyed-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .keyed-table--empty {
            color: $text-muted;
        }
        & > .keyed-table--scrollbar {
            color: $scrollbar-background;
        }
        & > .keyed-table--scrollbar-thumb {
            color: $scrollbar;
        }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        *table_bindings("fleet_table"),
        Binding("ctrl+home", "jump(0)", "First", show=False, id="fleet_table.top"),
        Binding("ctrl+end", "jump(-1)", "Last", show=False, id="fleet_table.bottom"),
        Binding("left", "scroll_columns(-1)", "Left", show=False, id="fleet_table.left"),
        Binding("right", "scroll_columns(1)", "Right", show=False, id="fleet_table.right"),
    ]

    scrollbar_classes: ClassVar[tuple[str, str]] = ("scrollbar-thumb", "scrollbar")

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
        columns: Sequence[ColumnSpec[T]],
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
        super().__init__(columns, key=key, default_sort=default_sort, id=id)
        self._narrow = narrow
        self._search = search
        self._empty_default = empty
        self._extra_empty = ""
        self._meanings: dict[str, Style] = {}
        self._theme = ""
        self._widths: dict[tuple[str, ...], tuple[int, ...]] = {}
        """Column widths by the keys of the columns shown, for the items last set."""

    # -- public ------------------------------------------------------------------------------------

    def set_items(self, items: Sequence[T]) -> None:
        self._widths.clear()  # new items, new texts (and ages move on)
        super().set_items(items)

    def set_extra_filter(self, keep: Callable[[T], bool] | None, empty: str = "") -> None:
        """A second filter (e.g. "problems only"), with the message to show when nothing is left."""
        self._extra_empty = empty
        self.set_filter(keep)

    @property
    def empty_text(self) -> str:
        if self.row_count:
            return ""
        needle = self.text_filter.strip()
        if needle:
            return f"nothing matches {needle!r}"
        if self._keep is not None and self._items:
            return self._extra_empty or self._empty_default
        return self._empty_default

    # -- the table's hooks -------------------------------------------------------------------------

    def selected_message(self, item: T) -> Message:
        return self.Selected(self, item)

    def matches(self, item: T, needle: str) -> bool:
        return needle in self._search(item).lower()

    def table_layout(self, width: int, scrollbar: bool) -> TableLayout[T]:
        """Every column (less the narrow ones below the narrow width), each as wide as its
        widest text among all the items (so filtering does not move the columns), its header
        with two cells for the sort arrow, and its ``min_width``."""
        columns = self.all_columns
        if self._narrow is not None and width < self._narrow[0]:
            columns = tuple(c for c in columns if c.key not in self._narrow[1])
        keys = tuple(c.key for c in columns)
        widths = self._widths.get(keys)
        if widths is None:
            widths = self._widths[keys] = tuple(
                max(
                    c.min_width,
                    cells(self.header_text(c, " ")),
                    max((cells(c.render(item)) for item in self._items), default=0),
                )
                for c in columns
            )
        return TableLayout(columns, widths, margin=1, gap=2, end=1, scrollbar=scrollbar)

    # The look: every piece's class says which row it is on and what it means.

    def header_class(self, spec: ColumnSpec[T], sorted_by: bool) -> str:
        return "header"

    def header_gap_class(self) -> str:
        return "header"

    def gap_class(self, on_cursor: bool) -> str:
        return "cursor" if on_cursor else "row"

    def cell_class(self, spec: ColumnSpec[T], item: T, on_cursor: bool) -> str:
        meaning = spec.style(item) if spec.style is not None else ""
        return f"{self.gap_class(on_cursor)}:{meaning}"

    def empty_line(self, text: str) -> Line:
        return [(" ", ""), (text, "empty")]

    def class_style(self, cls: str) -> Style:
        """DataTable's styles: a cell is the table's style, the cursor's over it on the
        cursor row, the meaning's over that, the cursor's colour over all; the lines below the
        rows show what is under the table."""
        if cls in ("", "empty"):
            under, _ = self.background_colors
            style = Style(bgcolor=under.rich_color)
            if cls == "empty":
                style += component_style(self.get_component_styles(EMPTY), under)
            return style
        if cls == "header":
            return self.get_component_styles(HEADER).rich_style
        if cls.startswith("scrollbar"):
            name = SCROLLBAR_THUMB if cls == "scrollbar-thumb" else SCROLLBAR
            background = self.background_colors[1]
            return self.rich_style + component_style(self.get_component_styles(name), background)
        row, _, meaning = cls.partition(":")
        style = self.rich_style
        post = Style()
        if row == "cursor":
            cursor = self.get_component_rich_style(CURSOR)
            style += cursor
            post = Style.from_color(color=cursor.color)
        return style + self._meaning(meaning) + post

    def _meaning(self, meaning: str) -> Style:
        if self._theme != self.app.theme:
            self._theme = self.app.theme
            self._meanings = theme_styles(self.app.get_css_variables())
        return self._meanings.get(meaning, Style())


__all__ = ["KeyedTable", "theme_styles"]
