"""The GPU process table: thousands of processes, sorted, filtered and scrolled at once.

It is a :class:`~gputui.tui.widgets.virtual_table.VirtualTable`, which draws only the rows in
view. A reading, a key or a filter re-orders the process list (a sort of a few thousand tuples)
and re-formats the rows on screen, never the others; the lines are then compared with the ones
on screen and only the cells whose text or style changed are repainted. A new reading in which
nothing visible changed repaints nothing. This module gives the columns, their layout at a width
and what the table says when it is empty.

Columns have fixed widths (so formatting a row needs no other row), except COMMAND, which takes
the rest of the line: each command line is shortened to that width keeping what tells processes
apart (:func:`gputui.core.command_text.command_text`). The cursor follows its process when rows
re-order.

A JOB / POD column (the Slurm job, Kubernetes pod or container, :mod:`gputui.host.workload`) comes
before COMMAND when some process has one, and the command then leaves its container tag out. It
takes room from TYPE, then RSS, and is left out (the tag comes back) when COMMAND would have
fewer than :data:`MIN_COMMAND_WIDTH` cells even so: below 109 cells in the full layout, below 92
in the narrow one (one more with a scroll bar; so not at 80 columns). In a wide table it widens
to show long job names whole. A process in a MIG instance shows it after its GPU's index:
``3·g7`` for GPU instance 7 of GPU 3 (:func:`gputui.core.mig.process_gpu_text`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from textual.binding import BindingType
from textual.message import Message
from textual.reactive import var

from gputui.core.command_text import command_text
from gputui.core.format import NA, clip, fmt_bytes, fmt_elapsed, fmt_pct, sanitize
from gputui.core.mig import instances_by_uuid, process_gpu_order, process_gpu_text
from gputui.core.model import MigDeviceInfo, ProcessSample, Snapshot
from gputui.core.vendor_terms import busy_title
from gputui.host.workload import COLUMN_TITLE, has_workloads, workload_label, workload_words
from gputui.tui.messages import ProcessHighlighted
from gputui.tui.widgets.line_widget import DIM, VALUE, cells
from gputui.tui.widgets.table_model import ColumnSpec, sort_items
from gputui.tui.widgets.virtual_table import TableLayout, VirtualTable, table_bindings

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


def _lower(value: str | None) -> str | None:
    return None if value is None else value.lower()


# --- columns --------------------------------------------------------------------------------------

Column = ColumnSpec[ProcessSample]
MIN_COMMAND_WIDTH = 24
"""The JOB / POD column is shown only when COMMAND keeps at least this many cells."""


def process_columns(now: Callable[[], float]) -> tuple[Column, ...]:
    """Every column but JOB / POD; ``now()``: the time process ages are measured at. Widths
    leave room for the label and two cells for the sort arrow; COMMAND (0) takes the rest."""

    def elapsed(p: ProcessSample) -> float | None:
        return p.running_for(now())

    return (
        Column("gpu", "GPU", lambda p: str(p.gpu_index), lambda p: p.gpu_index, "right", 5),
        Column("pid", "PID", lambda p: str(p.pid), lambda p: p.pid, "right", 7),
        Column("user", "USER", _user, lambda p: _lower(p.user), "left", 10),
        Column("type", "TYPE", _fmt_type, _fmt_type, "left", 6),
        Column(
            "gpu_mem", "GPU MEM", lambda p: fmt_bytes(p.gpu_memory_bytes),
            lambda p: p.gpu_memory_bytes, "right", 9, default_reverse=True,
        ),
        Column(
            "sm", "SM%", lambda p: _fmt_sm(p.sm_pct), lambda p: p.sm_pct, "right", 5,
            default_reverse=True,
        ),
        Column(
            "cpu", "CPU%", lambda p: fmt_pct(p.cpu_pct), lambda p: p.cpu_pct, "right", 6,
            default_reverse=True,
        ),
        Column(
            "rss", "RSS", lambda p: fmt_bytes(p.host_rss_bytes), lambda p: p.host_rss_bytes,
            "right", 5, default_reverse=True,
        ),
        Column(
            "time", "TIME", lambda p: fmt_elapsed(elapsed(p)), elapsed, "right", 8,
            default_reverse=True,
        ),
        Column(
            "command", "COMMAND",
            lambda p: command_text(p.command, p.name, p.container_id, short=True),
            lambda p: _lower(p.command or p.name), min_width=MIN_COMMAND_WIDTH,
        ),
    )  # fmt: skip


COLUMN_KEYS: tuple[str, ...] = tuple(c.key for c in process_columns(lambda: 0.0))
"""The columns every table has (at a width where they fit); :data:`WORKLOAD_KEY` comes and goes."""
WORKLOAD_KEY = "workload"
WORKLOAD_WIDTH = 18
"""``job 4242 train-llama`` is clipped to ``job 4242 train-ll…``; pods and containers fit."""
WIDE_WORKLOAD_WIDTH = 26
"""The JOB / POD column's width when COMMAND keeps :data:`WIDE_COMMAND_WIDTH` cells even so
(``job 12345678 train-llama`` whole)."""
WIDE_COMMAND_WIDTH = 60
WORKLOAD_COLUMN = Column(
    WORKLOAD_KEY,
    COLUMN_TITLE,
    lambda p: sanitize(workload_label(p)) or "-",
    lambda p: workload_label(p).lower() or None,
    "left",
    WORKLOAD_WIDTH,
)
MIG_GPU_WIDTH = 6
"""The GPU column's width while a process runs in a MIG instance (``15·g13`` fits)."""
NARROW_WIDTH = 100
"""Below this width the table drops TYPE, RSS and TIME (and narrows the gaps) so the command
stays in view."""
NARROW_LEFT_OUT = frozenset({"type", "rss", "time"})
DEFAULT_SORT = "gpu_mem"


def _tiebreak(process: ProcessSample) -> tuple[int, int]:
    return (process.gpu_index, process.pid)


def _gpu_order(instances: Mapping[str, MigDeviceInfo]) -> Callable[[ProcessSample], Any]:
    return lambda p: process_gpu_order(p, instances)


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
    by_key = {c.key: c for c in (*process_columns(lambda: now), WORKLOAD_COLUMN)}
    value_of = by_key[column].sort_key  # KeyError: no such column
    if column == "gpu" and instances:
        value_of = _gpu_order(instances)
    return sort_items(sorted(processes, key=_tiebreak), value_of, reverse)


@dataclass(frozen=True)
class _LayoutKey:
    width: int
    scrollbar: bool
    workloads: bool
    mig: bool


# --- widget ---------------------------------------------------------------------------------------


class ProcessTable(VirtualTable[ProcessSample]):
    """GPU processes, sortable by any column and filterable by GPU and text.

    Call :meth:`update_processes` with each new snapshot. Enter (or a click on the highlighted row)
    posts :class:`ProcessTable.Selected`.
    """

    DEFAULT_CSS = """
    ProcessTable {
        height: 1fr;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = table_bindings("process_table")

    gpu_filter: var[int | None] = var(None)
    """Show only this GPU's processes (None: all GPUs)."""

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
        columns = (*process_columns(self._now), WORKLOAD_COLUMN)
        super().__init__(
            columns, key=_row_key, default_sort=DEFAULT_SORT, name=name, id=id, classes=classes
        )
        self._snapshot: Snapshot | None = None
        self._geometry: tuple[_LayoutKey, TableLayout[ProcessSample]] | None = None
        self._commands: dict[tuple[str | None, str | None, str | None, int], str] = {}
        self._workloads = False
        """Some process has a job, pod or container (the JOB / POD column may show)."""
        self._mig = False
        """Some process runs in a MIG instance (the GPU column is wider)."""
        self._instances: dict[str, MigDeviceInfo] = {}
        self._shown: tuple[ProcessSample, ...] | None = None

    # --- public API -------------------------------------------------------------------------------

    @property
    def selected_process(self) -> ProcessSample | None:
        """The process under the cursor, or None when the table is empty."""
        return self.selected

    @property
    def visible_processes(self) -> list[ProcessSample]:
        """The processes shown (after the filters), in display order."""
        return self.visible_items

    @property
    def empty_text(self) -> str:
        """What the table says when no row is shown ('' while rows are shown)."""
        if self.row_count or self._snapshot is None:
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
        self.set_items(snapshot.processes)

    def watch_gpu_filter(self, gpu: int | None) -> None:
        self.set_filter(None if gpu is None else lambda p: p.gpu_index == gpu)

    # --- the table's hooks ------------------------------------------------------------------------

    def selected_message(self, item: ProcessSample) -> Message:
        return self.Selected(self, item)

    def cursor_moved(self, item: ProcessSample | None) -> None:
        self.post_message(ProcessHighlighted(item))

    def matches(self, item: ProcessSample, needle: str) -> bool:
        """PID, user, command, name, and the job, pod and container
        (:func:`gputui.host.workload.workload_words`)."""
        return (
            needle in str(item.pid)
            or needle in (item.user or "").lower()
            or needle in (item.command or "").lower()
            or needle in (item.name or "").lower()
            or needle in workload_words(item)
        )

    def in_tiebreak_order(self, items: Sequence[ProcessSample]) -> Iterable[ProcessSample]:
        return sorted(items, key=_tiebreak)

    def sort_value(self, spec: Column, item: ProcessSample) -> Any:
        if spec.key == "gpu" and self._instances:
            return process_gpu_order(item, self._instances)
        return spec.sort_key(item)

    def header_text(self, spec: Column, arrow: str) -> str:
        title = spec.title
        if spec.key == "sm" and self._snapshot is not None:
            # What the vendor measures per process: SM% (NVIDIA), GFX% (AMD), GPU% on a mix.
            title = busy_title(g.vendor for g in self._snapshot.node.gpus)
        if arrow == " " and spec.numeric:
            return title
        text = f"{title} {arrow}"
        return text if not spec.width or len(text) <= spec.width else f"{title}{arrow}"

    def cell_class(self, spec: Column, item: ProcessSample, on_cursor: bool) -> str:
        if on_cursor:
            return self.gap_class(True)
        return DIM if item.exited else VALUE

    def cell(self, spec: Column, item: ProcessSample, width: int) -> str:
        if spec.key == "command":
            # The JOB / POD column names the container: the command need not say it again.
            layout = self._geometry[1] if self._geometry is not None else None
            workload = layout is not None and WORKLOAD_COLUMN.key in (c.key for c in layout.columns)
            container = None if workload else item.container_id
            cache_key = (item.command, item.name, container, width)
            text = self._commands.get(cache_key)
            if text is None:
                if len(self._commands) > COMMAND_CACHE_SIZE:
                    self._commands.clear()
                text = command_text(item.command, item.name, container, width=width)
                self._commands[cache_key] = text
            return text
        if spec.key == "gpu" and item.mig_uuid is not None:
            text = process_gpu_text(item, self._instances)
            return text if cells(text) <= width else clip(text, width - 1) + "…"
        return super().cell(spec, item, width)

    def table_layout(self, width: int, scrollbar: bool) -> TableLayout[ProcessSample]:
        key = _LayoutKey(width, scrollbar, self._workloads, self._mig)
        if self._geometry is not None and self._geometry[0] == key:
            return self._geometry[1]
        narrow = width < NARROW_WIDTH
        base = tuple(c for c in self.all_columns if c is not WORKLOAD_COLUMN)
        if narrow:
            base = tuple(c for c in base if c.key not in NARROW_LEFT_OUT)
        if self._mig:
            base = tuple(replace(c, width=MIG_GPU_WIDTH) if c.key == "gpu" else c for c in base)
        gap = 1 if narrow else 2
        room = width - (1 if scrollbar else 0)

        def rest_of(columns: tuple[Column, ...]) -> int:
            fixed = sum(c.width for c in columns if c.width) + gap * (len(columns) - 1) + 1
            return room - fixed

        columns = base
        if self._workloads:
            # The JOB / POD column before COMMAND; TYPE, then RSS, give way to it.
            shown = (*base[:-1], WORKLOAD_COLUMN, base[-1])
            for leave_out in ((), ("type",), ("type", "rss"))[: 1 if narrow else 3]:
                candidate = tuple(c for c in shown if c.key not in leave_out)
                if rest_of(candidate) >= candidate[-1].min_width:  # COMMAND's
                    columns = candidate
                    break
            extra = WIDE_WORKLOAD_WIDTH - WORKLOAD_WIDTH
            if WORKLOAD_COLUMN in columns and rest_of(columns) - extra >= WIDE_COMMAND_WIDTH:
                wide = replace(WORKLOAD_COLUMN, width=WIDE_WORKLOAD_WIDTH)
                columns = tuple(wide if c is WORKLOAD_COLUMN else c for c in columns)
        rest = max(rest_of(columns), 0)
        widths = tuple(c.width or rest for c in columns)
        layout = TableLayout(columns, widths, gap=gap, margin=1, scrollbar=scrollbar)
        self._geometry = (key, layout)
        self._commands.clear()  # shortened for another width
        return layout

    def _now(self) -> float:
        return self._snapshot.timestamp if self._snapshot is not None else 0.0


__all__ = [
    "COLUMN_KEYS",
    "DEFAULT_SORT",
    "MIN_COMMAND_WIDTH",
    "WORKLOAD_KEY",
    "ProcessTable",
    "process_columns",
    "sort_processes",
]
