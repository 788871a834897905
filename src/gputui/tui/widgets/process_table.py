"""The GPU process table: a DataTable updated by diffing, so refreshes are cheap and cursors stay.

Every DataTable change (``update_cell``, ``add_row``, ``remove_row``, ``sort``) invalidates the
table's render caches and re-sends its whole region to the terminal, so :meth:`update_processes`
compares the formatted text of every cell with what is on screen and touches the table only for
cells whose text changed. A snapshot that changes nothing visible does not touch the table at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import var
from textual.widget import Widget
from textual.widgets import DataTable, Static
from textual.widgets.data_table import CellDoesNotExist, ColumnKey

from gputui.format import NA, command_text, fmt_bytes, fmt_elapsed, fmt_pct, sanitize
from gputui.model import ProcessSample, Snapshot

# --- formatting -----------------------------------------------------------------------------------

_TYPE_CODES = {"compute": "C", "graphics": "G", "compute+graphics": "C+G"}
COMMAND_MAX_CHARS = 160
"""The table shows at most this much of a command line; the detail screen shows all of it."""


def _fmt_sm(value: float | None) -> str:
    return "-" if value is None else fmt_pct(value)


def _fmt_type(process: ProcessSample) -> str:
    return _TYPE_CODES.get(process.type, str(process.type))


def _table_command(process: ProcessSample) -> str:
    text = command_text(process.command, process.name, process.container_id, short=True)
    return text if len(text) <= COMMAND_MAX_CHARS else text[: COMMAND_MAX_CHARS - 1] + "…"


def _user(process: ProcessSample) -> str:
    return sanitize(process.user) if process.user else NA


def _row_key(process: ProcessSample) -> str:
    return f"{process.pid}:{process.gpu_index}"


# --- columns --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Column:
    key: str
    label: str
    numeric: bool
    # Direction a column sorts in when first chosen: big numbers first, names A→Z.
    default_reverse: bool
    sort_value: Callable[[ProcessSample, float], Any]
    text: Callable[[ProcessSample, float], str]


def _lower(value: str | None) -> str | None:
    return None if value is None else value.lower()


COLUMNS: tuple[_Column, ...] = (
    _Column("gpu", "GPU", True, False, lambda p, _: p.gpu_index, lambda p, _: str(p.gpu_index)),
    _Column("pid", "PID", True, False, lambda p, _: p.pid, lambda p, _: str(p.pid)),
    _Column("user", "USER", False, False, lambda p, _: _lower(p.user), lambda p, _: _user(p)),
    _Column("type", "TYPE", False, False, lambda p, _: _fmt_type(p), lambda p, _: _fmt_type(p)),
    _Column(
        "gpu_mem",
        "GPU MEM",
        True,
        True,
        lambda p, _: p.gpu_memory_bytes,
        lambda p, _: fmt_bytes(p.gpu_memory_bytes),
    ),
    _Column("sm", "SM%", True, True, lambda p, _: p.sm_pct, lambda p, _: _fmt_sm(p.sm_pct)),
    _Column("cpu", "CPU%", True, True, lambda p, _: p.cpu_pct, lambda p, _: fmt_pct(p.cpu_pct)),
    _Column(
        "rss",
        "RSS",
        True,
        True,
        lambda p, _: p.host_rss_bytes,
        lambda p, _: fmt_bytes(p.host_rss_bytes),
    ),
    _Column(
        "time",
        "TIME",
        True,
        True,
        lambda p, now: p.running_for(now),
        lambda p, now: fmt_elapsed(p.running_for(now)),
    ),
    _Column(
        "command",
        "COMMAND",
        False,
        False,
        lambda p, _: _lower(p.command or p.name),
        lambda p, _: _table_command(p),
    ),
)
COLUMN_KEYS: tuple[str, ...] = tuple(c.key for c in COLUMNS)
NARROW_WIDTH = 100
"""Below this width the table drops TYPE, RSS and TIME so the command stays in view."""
NARROW_COLUMNS: tuple[_Column, ...] = tuple(
    c for c in COLUMNS if c.key not in ("type", "rss", "time")
)
_BY_KEY = {c.key: c for c in COLUMNS}
DEFAULT_SORT = "gpu_mem"
_ARROW_DOWN = "▼"
_ARROW_UP = "▲"


def _header(column: _Column, arrow: str) -> Text:
    # Two cells are always reserved for the arrow so switching the sort never changes widths.
    label = f"{column.label} {arrow or ' '}"
    return Text(label, justify="right" if column.numeric else "left")


def _cell(column: _Column, text: str) -> Text:
    # Text, never str: a str cell is parsed as markup and "[container …]" would vanish.
    return Text(text, justify="right" if column.numeric else "left", no_wrap=True)


def _tiebreak(process: ProcessSample) -> tuple[int, int]:
    return (process.gpu_index, process.pid)


def sort_processes(
    processes: Iterable[ProcessSample], column: str, reverse: bool, now: float
) -> list[ProcessSample]:
    """Processes ordered by one column's value; unknown values always last, ties by (GPU, PID)."""
    spec = _BY_KEY[column]
    known: list[tuple[Any, ProcessSample]] = []
    unknown: list[ProcessSample] = []
    for proc in sorted(processes, key=_tiebreak):
        value = spec.sort_value(proc, now)
        if value is None:
            unknown.append(proc)
        else:
            known.append((value, proc))
    # sorted() is stable with reverse=True too, so ties keep the (GPU, PID) order.
    known.sort(key=lambda item: item[0], reverse=reverse)
    return [proc for _, proc in known] + unknown


# --- widget ---------------------------------------------------------------------------------------


class ProcessTable(Widget):
    """GPU processes, sortable by any column and filterable by GPU and text.

    Call :meth:`update_processes` with each new snapshot. Enter (or a click on the highlighted row)
    posts :class:`ProcessTable.Selected`.
    """

    DEFAULT_CSS = """
    ProcessTable {
        height: 1fr;
    }
    ProcessTable > DataTable {
        height: auto;
        max-height: 100%;
    }
    ProcessTable > .process-table--empty {
        height: 1;
        padding: 0 1;
        color: $text-muted;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "cycle_sort", "Sort", id="process_table.cycle_sort"),
        Binding("S", "reverse_sort", "Reverse sort", id="process_table.reverse_sort"),
    ]

    gpu_filter: var[int | None] = var(None)
    """Show only this GPU's processes (None: all GPUs)."""
    text_filter: var[str] = var("")
    """Case-insensitive substring over PID, user, command, name and container id ('' = all)."""

    class Selected(Message):
        """Enter was pressed on a process row."""

        def __init__(self, process_table: ProcessTable, process: ProcessSample) -> None:
            self.process_table = process_table
            self.process = process
            super().__init__()

        @property
        def control(self) -> ProcessTable:
            return self.process_table

    def __init__(
        self,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
        disabled: bool = False,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes, disabled=disabled)
        self._snapshot: Snapshot | None = None
        self._sort_column = DEFAULT_SORT
        self._sort_reverse = _BY_KEY[DEFAULT_SORT].default_reverse
        self._sort_dirty = False
        # What is on screen: formatted cells per row key, and row keys in display order.
        self._cells: dict[str, tuple[str, ...]] = {}
        self._order: list[str] = []
        self._visible: dict[str, ProcessSample] = {}
        self._empty_text = ""
        self._columns = COLUMNS
        self._table: DataTable[Text] = DataTable(cursor_type="row", id="process-data")
        self._empty = Static("", classes="process-table--empty")
        self._empty.display = False

    def compose(self) -> ComposeResult:
        yield self._table
        yield self._empty

    def on_mount(self) -> None:
        self._add_columns()
        # is_mounted becomes True only after on_mount returns: show a snapshot given before then.
        self.call_after_refresh(self._apply)

    def _add_columns(self) -> None:
        for column in self._columns:
            self._table.add_column(_header(column, self._arrow(column.key)), key=column.key)

    def on_resize(self) -> None:
        columns = NARROW_COLUMNS if self.size.width < NARROW_WIDTH else COLUMNS
        if columns is self._columns:
            return
        cursor_key = self._cursor_key()
        self._columns = columns
        self._table.clear(columns=True)
        self._cells = {}
        self._order = []
        self._add_columns()
        self._apply()
        if cursor_key is not None and cursor_key in self._cells:
            self._table.move_cursor(row=self._table.get_row_index(cursor_key))

    # --- public API -------------------------------------------------------------------------------

    @property
    def data_table(self) -> DataTable[Text]:
        """The inner DataTable (for focus and styling; let this widget change its rows)."""
        return self._table

    @property
    def sort_column(self) -> str:
        """Key of the sort column: one of :data:`COLUMN_KEYS`."""
        return self._sort_column

    @property
    def sort_reverse(self) -> bool:
        """True when sorted descending."""
        return self._sort_reverse

    @property
    def selected_process(self) -> ProcessSample | None:
        """The process under the cursor, or None when the table is empty."""
        key = self._cursor_key()
        return None if key is None else self._visible.get(key)

    @property
    def visible_processes(self) -> list[ProcessSample]:
        """The processes shown, in display order."""
        return [self._visible[key] for key in self._order]

    def update_processes(self, snapshot: Snapshot) -> None:
        """Show the processes of a new snapshot, changing only what changed on screen."""
        self._snapshot = snapshot
        self._apply()

    def sort_by(self, column: str, reverse: bool | None = None) -> None:
        """Sort by a column key; ``reverse=None`` uses the column's natural direction."""
        if column not in _BY_KEY:
            raise ValueError(f"unknown column {column!r}; expected one of {COLUMN_KEYS}")
        if reverse is None:
            reverse = _BY_KEY[column].default_reverse
        if (column, reverse) == (self._sort_column, self._sort_reverse):
            return
        self._sort_column, self._sort_reverse = column, reverse
        self._sort_dirty = True
        self._apply()

    def focus(self, scroll_visible: bool = True) -> ProcessTable:
        """Focus the table (this container itself cannot take focus)."""
        self._table.focus(scroll_visible)
        return self

    # --- actions and events -----------------------------------------------------------------------

    def action_cycle_sort(self) -> None:
        keys = [c.key for c in self._columns]  # the columns on screen
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
        process = self._visible.get(key) if key is not None else None
        if process is not None:
            self.post_message(self.Selected(self, process))

    def watch_gpu_filter(self) -> None:
        self._apply()

    def watch_text_filter(self) -> None:
        self._apply()

    # --- internals --------------------------------------------------------------------------------

    def _arrow(self, column: str) -> str:
        if column != self._sort_column:
            return ""
        return _ARROW_DOWN if self._sort_reverse else _ARROW_UP

    def _matches(self, process: ProcessSample) -> bool:
        if self.gpu_filter is not None and process.gpu_index != self.gpu_filter:
            return False
        needle = self.text_filter.strip().lower()
        if not needle:
            return True
        haystack = (
            str(process.pid),
            process.user or "",
            process.command or "",
            process.name or "",
            process.container_id or "",
        )
        return any(needle in field.lower() for field in haystack)

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
        snapshot = self._snapshot
        now = snapshot.timestamp if snapshot is not None else 0.0
        processes = snapshot.processes if snapshot is not None else ()
        visible = {_row_key(p): p for p in processes if self._matches(p)}
        columns = self._columns
        cells = {key: tuple(c.text(p, now) for c in columns) for key, p in visible.items()}
        ordered = sort_processes(visible.values(), self._sort_column, self._sort_reverse, now)
        desired = [_row_key(p) for p in ordered]
        self._visible = visible

        gone = [key for key in self._order if key not in cells]
        added = [key for key in desired if key not in self._cells]
        changed = [
            key for key, texts in cells.items() if key in self._cells and self._cells[key] != texts
        ]
        order_after_diff = [key for key in self._order if key in cells] + added
        resort = self._sort_dirty or order_after_diff != desired
        if gone or added or changed or resort:
            with self.app.batch_update():
                self._change_table(cells, gone, added, changed, desired, resort)
        self._show_empty_state(snapshot is not None and not cells)

    def _change_table(
        self,
        cells: dict[str, tuple[str, ...]],
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
            old = self._cells[key]
            new = cells[key]
            for column, before, after in zip(self._columns, old, new, strict=True):
                if before != after:
                    table.update_cell(key, column.key, _cell(column, after), update_width=True)
            self._cells[key] = new
        for key in added:
            texts = cells[key]
            table.add_row(
                *(_cell(c, t) for c, t in zip(self._columns, texts, strict=True)), key=key
            )
            self._cells[key] = texts
        if resort:
            if self._sort_dirty:
                # Headers are cached per table update; the sort() below invalidates them.
                for column in self._columns:
                    table.columns[ColumnKey(column.key)].label = _header(
                        column, self._arrow(column.key)
                    )
            rank = {key: index for index, key in enumerate(desired)}
            # The GPU and PID cells identify a row, so rank rows through them.
            table.sort(
                "gpu",
                "pid",
                key=lambda gpu_pid: rank[f"{gpu_pid[1].plain}:{gpu_pid[0].plain}"],
            )
            self._sort_dirty = False
        self._order = list(desired)
        if cursor_key is not None and cursor_key in cells:
            index = table.get_row_index(cursor_key)
            if index != table.cursor_row:
                table.move_cursor(row=index)

    def _show_empty_state(self, empty: bool) -> None:
        text = self._empty_message() if empty else ""
        if text != self._empty_text:
            self._empty_text = text
            self._empty.update(Text(text))  # the filter text is the user's, not markup
        if self._empty.display != bool(text):
            self._empty.display = bool(text)

    def _empty_message(self) -> str:
        needle = self.text_filter.strip()
        if self.gpu_filter is not None and needle:
            return f"no processes on GPU {self.gpu_filter} match {needle!r}"
        if self.gpu_filter is not None:
            return f"no processes on GPU {self.gpu_filter}"
        if needle:
            return f"no processes match {needle!r}"
        return "no GPU processes"


__all__ = ["COLUMN_KEYS", "DEFAULT_SORT", "ProcessTable", "sort_processes"]
