"""The GPU process table: thousands of processes, sorted, filtered and scrolled at once.

It is a Line-API widget (:class:`~gputui.tui.widgets.line_widget.LineWidget`) that draws only
the rows in view. A reading, a key or a filter re-orders the process list (a sort of a few
thousand tuples) and re-formats the rows on screen, never the others; the lines are then
compared with the ones on screen and only the cells whose text or style changed are repainted.
A new reading in which nothing visible changed repaints nothing.

Columns have fixed widths (so formatting a row needs no other row), except COMMAND, which takes
the rest of the line: each command line is shortened to that width keeping what tells processes
apart (:func:`gputui.format.command_text`). The cursor follows its process when rows re-order.

A JOB / POD column (the Slurm job, Kubernetes pod or container, :mod:`gputui.workload`) comes
before COMMAND when some process has one, and the command then leaves its container tag out. It
takes room from TYPE, then RSS, and is left out (the tag comes back) when COMMAND would have
fewer than :data:`MIN_COMMAND_WIDTH` cells even so: below 109 cells in the full layout, below 92
in the narrow one (one more with a scroll bar; so not at 80 columns). In a wide table it widens
to show long job names whole. A process in a MIG instance shows it after its GPU's index:
``3·g7`` for GPU instance 7 of GPU 3 (:func:`gputui.mig.process_gpu_text`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import var

from gputui.format import NA, clip, command_text, fmt_bytes, fmt_elapsed, fmt_pct, sanitize
from gputui.mig import instances_by_uuid, process_gpu_order, process_gpu_text
from gputui.model import MigDeviceInfo, ProcessSample, Snapshot
from gputui.tui.messages import ProcessHighlighted
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
)
from gputui.workload import COLUMN_TITLE, has_workloads, workload_label, workload_words

# --- formatting -----------------------------------------------------------------------------------

_TYPE_CODES = {"compute": "C", "graphics": "G", "compute+graphics": "C+G"}
COMMAND_CACHE_SIZE = 4096
"""Shortened command lines remembered (per width); the cache is emptied when it grows past this."""


def _fmt_sm(value: float | None) -> str:
    return "-" if value is None else fmt_pct(value)


def _fmt_type(process: ProcessSample) -> str:
    return _TYPE_CODES.get(process.type, str(process.type))


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
    width: int = 0
    """Cells the column takes (the label and two cells for the sort arrow fit); 0: the rest."""


def _lower(value: str | None) -> str | None:
    return None if value is None else value.lower()


COLUMNS: tuple[_Column, ...] = (
    _Column("gpu", "GPU", True, False, lambda p, _: p.gpu_index, lambda p, _: str(p.gpu_index), 5),
    _Column("pid", "PID", True, False, lambda p, _: p.pid, lambda p, _: str(p.pid), 7),
    _Column("user", "USER", False, False, lambda p, _: _lower(p.user), lambda p, _: _user(p), 10),
    _Column("type", "TYPE", False, False, lambda p, _: _fmt_type(p), lambda p, _: _fmt_type(p), 6),
    _Column(
        "gpu_mem",
        "GPU MEM",
        True,
        True,
        lambda p, _: p.gpu_memory_bytes,
        lambda p, _: fmt_bytes(p.gpu_memory_bytes),
        9,
    ),
    _Column("sm", "SM%", True, True, lambda p, _: p.sm_pct, lambda p, _: _fmt_sm(p.sm_pct), 5),
    _Column("cpu", "CPU%", True, True, lambda p, _: p.cpu_pct, lambda p, _: fmt_pct(p.cpu_pct), 6),
    _Column(
        "rss",
        "RSS",
        True,
        True,
        lambda p, _: p.host_rss_bytes,
        lambda p, _: fmt_bytes(p.host_rss_bytes),
        5,
    ),
    _Column(
        "time",
        "TIME",
        True,
        True,
        lambda p, now: p.running_for(now),
        lambda p, now: fmt_elapsed(p.running_for(now)),
        8,
    ),
    _Column(
        "command",
        "COMMAND",
        False,
        False,
        lambda p, _: _lower(p.command or p.name),
        lambda p, _: command_text(p.command, p.name, p.container_id, short=True),
    ),
)
COLUMN_KEYS: tuple[str, ...] = tuple(c.key for c in COLUMNS)
"""The columns every table has (at a width where they fit); :data:`WORKLOAD_KEY` comes and goes."""
WORKLOAD_KEY = "workload"
WORKLOAD_WIDTH = 18
"""``job 4242 train-llama`` is clipped to ``job 4242 train-ll…``; pods and containers fit."""
WIDE_WORKLOAD_WIDTH = 26
"""The JOB / POD column's width when COMMAND keeps :data:`WIDE_COMMAND_WIDTH` cells even so
(``job 12345678 train-llama`` whole)."""
WIDE_COMMAND_WIDTH = 60
WORKLOAD_COLUMN = _Column(
    WORKLOAD_KEY,
    COLUMN_TITLE,
    False,
    False,
    lambda p, _: workload_label(p).lower() or None,
    lambda p, _: sanitize(workload_label(p)) or "-",
    WORKLOAD_WIDTH,
)
MIN_COMMAND_WIDTH = 24
"""The JOB / POD column is shown only when COMMAND keeps at least this many cells."""
MIG_GPU_WIDTH = 6
"""The GPU column's width while a process runs in a MIG instance (``15·g13`` fits)."""
NARROW_WIDTH = 100
"""Below this width the table drops TYPE, RSS and TIME (and narrows the gaps) so the command
stays in view."""
NARROW_COLUMNS: tuple[_Column, ...] = tuple(
    c for c in COLUMNS if c.key not in ("type", "rss", "time")
)
_BY_KEY = {c.key: c for c in (*COLUMNS, WORKLOAD_COLUMN)}
DEFAULT_SORT = "gpu_mem"
_ARROW_DOWN = "▼"
_ARROW_UP = "▲"
SCROLL_STEP = 3
"""Rows a mouse-wheel notch scrolls."""


def _tiebreak(process: ProcessSample) -> tuple[int, int]:
    return (process.gpu_index, process.pid)


def sort_processes(
    processes: Iterable[ProcessSample],
    column: str,
    reverse: bool,
    now: float,
    instances: Mapping[str, MigDeviceInfo] | None = None,
) -> list[ProcessSample]:
    """Processes ordered by one column's value; unknown values always last, ties by (GPU, PID).
    By GPU, processes in MIG instances (``instances``: the node's, by UUID) follow their GPU in
    the order of their instance ids."""
    spec = _BY_KEY[column]
    value_of = spec.sort_value
    if column == "gpu" and instances:
        value_of = lambda p, _: process_gpu_order(p, instances)  # noqa: E731
    known: list[tuple[Any, ProcessSample]] = []
    unknown: list[ProcessSample] = []
    for proc in sorted(processes, key=_tiebreak):
        value = value_of(proc, now)
        if value is None:
            unknown.append(proc)
        else:
            known.append((value, proc))
    # sorted() is stable with reverse=True too, so ties keep the (GPU, PID) order.
    known.sort(key=lambda item: item[0], reverse=reverse)
    return [proc for _, proc in known] + unknown


@dataclass(frozen=True)
class _Geometry:
    """Where each column sits at one width."""

    columns: tuple[_Column, ...]
    starts: tuple[int, ...]
    widths: tuple[int, ...]
    gap: int
    scrollbar: bool
    workload: bool
    """The JOB / POD column is shown."""


# --- widget ---------------------------------------------------------------------------------------


class ProcessTable(LineWidget, can_focus=True):
    """GPU processes, sortable by any column and filterable by GPU and text.

    Call :meth:`update_processes` with each new snapshot. Enter (or a click on the highlighted row)
    posts :class:`ProcessTable.Selected`.
    """

    DEFAULT_CSS = """
    ProcessTable {
        height: 1fr;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "cycle_sort", "Sort", id="process_table.cycle_sort"),
        Binding("S", "reverse_sort", "Reverse sort", id="process_table.reverse_sort"),
        Binding("up", "move(-1)", "Up", show=False, id="process_table.up"),
        Binding("down", "move(1)", "Down", show=False, id="process_table.down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="process_table.page_up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="process_table.page_down"),
        Binding("home", "jump(0)", "First", show=False, id="process_table.first"),
        Binding("end", "jump(-1)", "Last", show=False, id="process_table.last"),
        Binding("enter", "select_cursor", "Select", show=False, id="process_table.select"),
    ]

    gpu_filter: var[int | None] = var(None)
    """Show only this GPU's processes (None: all GPUs)."""
    text_filter: var[str] = var("")
    """Case-insensitive substring over PID, user, command, name, and the job, pod and container
    (:func:`gputui.workload.workload_words`) ('' = all)."""

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
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._snapshot: Snapshot | None = None
        self._sort_column = DEFAULT_SORT
        self._sort_reverse = _BY_KEY[DEFAULT_SORT].default_reverse
        self._rows: list[ProcessSample] = []
        """The processes shown (filtered), in display order."""
        self._cursor = 0
        self._cursor_key: str | None = None
        self._highlighted_key: str | None = None
        """The cursor's key last told to the screen (:class:`ProcessHighlighted`)."""
        self._top = 0
        self._geometry: _Geometry | None = None
        self._geometry_key: tuple[int, bool, bool, bool] = (0, False, False, False)
        self._commands: dict[tuple[str | None, str | None, str | None, int], str] = {}
        self._workloads = False
        """Some process has a job, pod or container (the JOB / POD column may show)."""
        self._mig = False
        """Some process runs in a MIG instance (the GPU column is wider)."""
        self._instances: dict[str, MigDeviceInfo] = {}
        self._shown: tuple[ProcessSample, ...] | None = None

    # --- public API -------------------------------------------------------------------------------

    @property
    def sort_column(self) -> str:
        """Key of the sort column: one of :data:`COLUMN_KEYS` or :data:`WORKLOAD_KEY`."""
        return self._sort_column

    @property
    def sort_reverse(self) -> bool:
        """True when sorted descending."""
        return self._sort_reverse

    @property
    def selected_process(self) -> ProcessSample | None:
        """The process under the cursor, or None when the table is empty."""
        return self._rows[self._cursor] if self._rows else None

    @property
    def visible_processes(self) -> list[ProcessSample]:
        """The processes shown (after the filters), in display order."""
        return list(self._rows)

    @property
    def row_count(self) -> int:
        return len(self._rows)

    @property
    def cursor_row(self) -> int:
        """Index of the highlighted row in :attr:`visible_processes`."""
        return self._cursor

    @property
    def top_row(self) -> int:
        """Index of the first row in view."""
        return self._top

    @property
    def row_keys(self) -> list[str]:
        """``"PID:GPU"`` of each row, in display order."""
        return [_row_key(p) for p in self._rows]

    @property
    def column_keys(self) -> list[str]:
        """The columns shown at the current width (``workload`` while the JOB / POD column
        shows)."""
        return [c.key for c in self._layout(self.size.width).columns]

    def cell_text(self, key: str, column: str) -> str:
        """The text a row shows in a column (at the current width), e.g. ``cell_text("10:0",
        "gpu_mem")``; KeyError when the row or the column is not shown."""
        geometry = self._layout(self.size.width)
        process = next((p for p in self._rows if _row_key(p) == key), None)
        if process is None:
            raise KeyError(key)
        for spec, width in zip(geometry.columns, geometry.widths, strict=True):
            if spec.key == column:
                return self._cell(spec, process, width)
        raise KeyError(column)

    def header_x(self, column: str) -> int:
        """The x offset of a column's header (for clicks)."""
        geometry = self._layout(self.size.width)
        for spec, start in zip(geometry.columns, geometry.starts, strict=True):
            if spec.key == column:
                return start
        raise KeyError(column)

    @property
    def empty_text(self) -> str:
        """What the table says when no row is shown ('' while rows are shown)."""
        if self._rows or self._snapshot is None:
            return ""
        needle = self.text_filter.strip()
        if self.gpu_filter is not None and needle:
            return f"no processes on GPU {self.gpu_filter} match {needle!r}"
        if needle:
            return f"no processes match {needle!r}"
        text = f"no processes on GPU {self.gpu_filter}" if self.gpu_filter is not None else ""
        gpus = [s for s in self._snapshot.gpus if self.gpu_filter in (None, s.index)]
        if any(s.process_list_incomplete for s in gpus):  # the driver may hide some from us
            return (text or "no processes listed") + " (the list may be incomplete: run as root)"
        return text or "no GPU processes"

    def update_processes(self, snapshot: Snapshot) -> None:
        """Show the processes of a new snapshot; only the cells that change are repainted."""
        previous = self._snapshot
        self._snapshot = snapshot
        if previous is None or previous.node is not snapshot.node:
            self._instances = instances_by_uuid(snapshot)
        if snapshot.processes is not self._shown:  # carried between slow reads: same tuple
            self._shown = snapshot.processes
            self._workloads = has_workloads(snapshot.processes)
            self._mig = any(p.mig_uuid is not None for p in snapshot.processes)
        self._reorder()

    def sort_by(self, column: str, reverse: bool | None = None) -> None:
        """Sort by a column key; ``reverse=None`` uses the column's natural direction."""
        if column not in _BY_KEY:
            raise ValueError(f"unknown column {column!r}; expected one of {tuple(_BY_KEY)}")
        if reverse is None:
            reverse = _BY_KEY[column].default_reverse
        if (column, reverse) == (self._sort_column, self._sort_reverse):
            return
        self._sort_column, self._sort_reverse = column, reverse
        self._reorder()

    # --- actions and events -----------------------------------------------------------------------

    def action_cycle_sort(self) -> None:
        keys = self.column_keys  # the columns on screen
        index = keys.index(self._sort_column) if self._sort_column in keys else -1
        self.sort_by(keys[(index + 1) % len(keys)])

    def action_reverse_sort(self) -> None:
        self.sort_by(self._sort_column, not self._sort_reverse)

    def action_move(self, rows: int) -> None:
        self._move_to(self._cursor + rows)

    def action_page(self, pages: int) -> None:
        step = max(self._page_rows() - 1, 1)
        self._top = max(self._top + pages * step, 0)
        self._move_to(self._cursor + pages * step)

    def action_jump(self, row: int) -> None:
        self._move_to(row if row >= 0 else len(self._rows) + row)

    def action_select_cursor(self) -> None:
        process = self.selected_process
        if process is not None:
            self.post_message(self.Selected(self, process))

    def on_click(self, event: events.Click) -> None:
        event.stop()
        if event.y == 0:
            column = self._column_at(event.x)
            if column is None:
                return
            if column == self._sort_column:
                self.sort_by(column, not self._sort_reverse)
            else:
                self.sort_by(column)
            return
        row = self._top + event.y - 1
        if row >= len(self._rows):
            return
        if row == self._cursor:
            self.action_select_cursor()
        else:
            self._move_to(row)

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        event.stop()
        self._scroll_rows(self._top + SCROLL_STEP)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        event.stop()
        self._scroll_rows(self._top - SCROLL_STEP)

    def on_resize(self) -> None:
        # Taller: rows above may now fit in view; shorter: the cursor must stay in it.
        self._keep_cursor_in_view()
        self.rebuild()

    def on_focus(self) -> None:
        self.rebuild()

    def on_blur(self) -> None:
        self.rebuild()

    def watch_gpu_filter(self) -> None:
        self._reorder()

    def watch_text_filter(self) -> None:
        self._reorder()

    # --- internals --------------------------------------------------------------------------------

    def _page_rows(self) -> int:
        return max(self.size.height - 1, 1)

    def _move_to(self, row: int) -> None:
        if not self._rows:
            return
        self._cursor = max(0, min(row, len(self._rows) - 1))
        self._cursor_key = _row_key(self._rows[self._cursor])
        self._keep_cursor_in_view()
        self.rebuild()
        self._tell_highlighted()

    def _tell_highlighted(self) -> None:
        if self._cursor_key != self._highlighted_key:
            self._highlighted_key = self._cursor_key
            self.post_message(ProcessHighlighted(self.selected_process))

    def _scroll_rows(self, top: int) -> None:
        top = max(0, min(top, len(self._rows) - self._page_rows()))
        if top != self._top:
            self._top = top
            self.rebuild()

    def _keep_cursor_in_view(self) -> None:
        page = self._page_rows()
        if self._cursor < self._top:
            self._top = self._cursor
        elif self._cursor >= self._top + page:
            self._top = self._cursor - page + 1
        self._top = max(0, min(self._top, len(self._rows) - page))

    def _matcher(self) -> Callable[[ProcessSample], bool] | None:
        gpu = self.gpu_filter
        needle = self.text_filter.strip().lower()
        if gpu is None and not needle:
            return None

        def matches(process: ProcessSample) -> bool:
            if gpu is not None and process.gpu_index != gpu:
                return False
            if not needle:
                return True
            return (
                needle in str(process.pid)
                or needle in (process.user or "").lower()
                or needle in (process.command or "").lower()
                or needle in (process.name or "").lower()
                or needle in workload_words(process)
            )

        return matches

    def _reorder(self) -> None:
        """Filter and sort the processes again, the cursor staying on its process."""
        snapshot = self._snapshot
        processes: Iterable[ProcessSample] = snapshot.processes if snapshot is not None else ()
        matches = self._matcher()
        if matches is not None:
            processes = [p for p in processes if matches(p)]
        now = snapshot.timestamp if snapshot is not None else 0.0
        self._rows = sort_processes(
            processes, self._sort_column, self._sort_reverse, now, self._instances
        )
        key = self._cursor_key
        if key is not None:
            found = next((i for i, p in enumerate(self._rows) if _row_key(p) == key), None)
            if found is not None:
                self._cursor = found
        self._cursor = max(0, min(self._cursor, len(self._rows) - 1))
        self._cursor_key = _row_key(self._rows[self._cursor]) if self._rows else None
        self._keep_cursor_in_view()
        self.rebuild()
        self._tell_highlighted()

    def _arrow(self, column: str) -> str:
        if column != self._sort_column:
            return " "
        return _ARROW_DOWN if self._sort_reverse else _ARROW_UP

    def _layout(self, width: int) -> _Geometry:
        scrollbar = len(self._rows) > self._page_rows()
        key = (width, scrollbar, self._workloads, self._mig)
        if self._geometry is not None and self._geometry_key == key:
            return self._geometry
        narrow = width < NARROW_WIDTH
        base = NARROW_COLUMNS if narrow else COLUMNS
        if self._mig:
            base = tuple(replace(c, width=MIG_GPU_WIDTH) if c.key == "gpu" else c for c in base)
        gap = 1 if narrow else 2
        room = width - (1 if scrollbar else 0)

        def rest_of(columns: tuple[_Column, ...]) -> int:
            fixed = sum(c.width for c in columns if c.width) + gap * (len(columns) - 1) + 1
            return room - fixed

        columns = base
        if self._workloads:
            # The JOB / POD column before COMMAND; TYPE, then RSS, give way to it.
            shown = (*base[:-1], WORKLOAD_COLUMN, base[-1])
            for leave_out in ((), ("type",), ("type", "rss"))[: 1 if narrow else 3]:
                candidate = tuple(c for c in shown if c.key not in leave_out)
                if rest_of(candidate) >= MIN_COMMAND_WIDTH:
                    columns = candidate
                    break
            extra = WIDE_WORKLOAD_WIDTH - WORKLOAD_WIDTH
            if WORKLOAD_COLUMN in columns and rest_of(columns) - extra >= WIDE_COMMAND_WIDTH:
                wide = replace(WORKLOAD_COLUMN, width=WIDE_WORKLOAD_WIDTH)
                columns = tuple(wide if c is WORKLOAD_COLUMN else c for c in columns)
        rest = max(rest_of(columns), 0)
        widths = tuple(c.width or rest for c in columns)
        starts: list[int] = []
        x = 1
        for w in widths:
            starts.append(x)
            x += w + gap
        workload = any(c.key == WORKLOAD_KEY for c in columns)
        self._geometry = _Geometry(columns, tuple(starts), widths, gap, scrollbar, workload)
        self._geometry_key = key
        self._commands.clear()  # shortened for another width
        return self._geometry

    def _column_at(self, x: int) -> str | None:
        geometry = self._layout(self.size.width)
        for spec, start, width in zip(
            geometry.columns, geometry.starts, geometry.widths, strict=True
        ):
            if start <= x < start + width + geometry.gap:
                return spec.key
        return None

    def _cell(self, spec: _Column, process: ProcessSample, width: int) -> str:
        if spec.key == "command":
            # The JOB / POD column names the container: the command need not say it again.
            geometry = self._geometry
            container = None if geometry is not None and geometry.workload else process.container_id
            cache_key = (process.command, process.name, container, width)
            text = self._commands.get(cache_key)
            if text is None:
                if len(self._commands) > COMMAND_CACHE_SIZE:
                    self._commands.clear()
                text = command_text(process.command, process.name, container, width=width)
                self._commands[cache_key] = text
            return text
        if spec.key == "gpu" and process.mig_uuid is not None:
            text = process_gpu_text(process, self._instances)
        else:
            now = self._snapshot.timestamp if self._snapshot is not None else 0.0
            text = spec.text(process, now)
        if len(text) > width:
            text = clip(text, width - 1) + "…"
        return text

    def build_lines(self, width: int, height: int) -> list[Line]:
        geometry = self._layout(width)
        gap = " " * geometry.gap
        header: Line = [(" ", "")]
        for i, (spec, w) in enumerate(zip(geometry.columns, geometry.widths, strict=True)):
            if i:
                header.append((gap, ""))
            arrow = self._arrow(spec.key)
            label = spec.label if arrow == " " and spec.numeric else f"{spec.label} {arrow}"
            text = label.rjust(w) if spec.numeric else label.ljust(w)
            header.append((text[:w], ACCENT if spec.key == self._sort_column else TITLE))
        lines: list[Line] = [header]
        if not self._rows:
            if self._snapshot is not None:
                lines.append([(" " + self.empty_text, DIM)])
            return lines
        page = height - 1
        top = self._top
        cursor_cls = SELECTED if self.has_focus else ACCENT
        for row in range(top, min(top + page, len(self._rows))):
            process = self._rows[row]
            on_cursor = row == self._cursor
            cls = cursor_cls if on_cursor else DIM if process.exited else VALUE
            line: Line = [(" ", cls if on_cursor else "")]
            for i, (spec, w) in enumerate(zip(geometry.columns, geometry.widths, strict=True)):
                if i:
                    line.append((gap, cls if on_cursor else ""))
                text = self._cell(spec, process, w)
                line.append((text.rjust(w) if spec.numeric else text.ljust(w), cls))
            lines.append(line)
        if geometry.scrollbar:
            self._draw_scrollbar(lines, width, page)
        return lines

    def _draw_scrollbar(self, lines: list[Line], width: int, page: int) -> None:
        """A one-cell bar at the right edge: where the rows in view are among all of them."""
        total = len(self._rows)
        thumb = max(1, round(page * page / total))
        start = round((page - thumb) * self._top / max(total - page, 1))
        for y in range(page):
            row = y + 1
            while len(lines) <= row:
                lines.append([])
            line = lines[row]
            used = sum(len(text) for text, _ in line)
            if used < width - 1:
                line.append((" " * (width - 1 - used), ""))
            inside = start <= y < start + thumb
            line.append(("┃" if inside else "│", LABEL if inside else FRAME))


__all__ = [
    "COLUMN_KEYS",
    "DEFAULT_SORT",
    "MIN_COMMAND_WIDTH",
    "WORKLOAD_KEY",
    "ProcessTable",
    "sort_processes",
]
