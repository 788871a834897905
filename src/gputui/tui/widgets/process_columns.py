"""The process table's columns, their sort order and their layout at a width (no Textual here).

Columns have fixed widths (so formatting a row needs no other row), except COMMAND, which takes
the rest of the line. A JOB / POD column (the Slurm job, Kubernetes pod or container,
:mod:`gputui.host.workload`) comes before COMMAND when some process has one. It takes room from
TYPE, then RSS, and is left out when COMMAND would have fewer than :data:`MIN_COMMAND_WIDTH` cells
even so: below 109 cells in the full layout, below 92 in the narrow one (one more with a scroll
bar; so not at 80 columns). In a wide table it widens to show long job names whole.

The column the rows are sorted by is always shown: a narrow table that would leave it out (TIME,
RSS, TYPE or JOB / POD) shows it anyway, in its place, and gives up JOB / POD before COMMAND gets
too narrow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from gputui.core.command_text import command_text
from gputui.core.format import NA, fmt_bytes, fmt_elapsed, fmt_pct, sanitize
from gputui.core.frozen import frozen
from gputui.core.mig import process_gpu_order
from gputui.core.model import MigDeviceInfo, ProcessSample
from gputui.host.workload import COLUMN_TITLE, workload_label
from gputui.tui.widgets.table_model import ColumnSpec, sort_items
from gputui.tui.widgets.virtual_table import TableLayout

_TYPE_CODES = {"compute": "C", "graphics": "G", "compute+graphics": "C+G"}


def _fmt_sm(value: float | None) -> str:
    return "-" if value is None else fmt_pct(value)


def _fmt_type(process: ProcessSample) -> str:
    return _TYPE_CODES.get(process.type, str(process.type))


def _user(process: ProcessSample) -> str:
    return sanitize(process.user) if process.user else NA


def row_key(process: ProcessSample) -> str:
    """A row's key: one row per process and GPU."""
    return f"{process.pid}:{process.gpu_index}"


def _lower(value: str | None) -> str | None:
    return None if value is None else value.lower()


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


def tiebreak(process: ProcessSample) -> tuple[int, int]:
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
    return sort_items(sorted(processes, key=tiebreak), value_of, reverse)


@frozen(slots=False)
class LayoutKey:
    """What the layout depends on."""

    width: int
    scrollbar: bool
    workloads: bool
    """Some process has a job, pod or container (the JOB / POD column may show)."""
    mig: bool
    """Some process runs in a MIG instance (the GPU column is wider)."""
    sort_column: str


def process_layout(all_columns: tuple[Column, ...], key: LayoutKey) -> TableLayout[ProcessSample]:
    """The columns shown at ``key.width`` and their widths (see the module's docstring)."""
    narrow = key.width < NARROW_WIDTH
    full = tuple(c for c in all_columns if c.key != WORKLOAD_KEY)
    base = full
    if narrow:
        base = tuple(c for c in full if c.key not in NARROW_LEFT_OUT or c.key == key.sort_column)
    if key.mig:
        base = tuple(replace(c, width=MIG_GPU_WIDTH) if c.key == "gpu" else c for c in base)
    gap = 1 if narrow else 2
    room = key.width - (1 if key.scrollbar else 0)

    def rest_of(columns: tuple[Column, ...]) -> int:
        fixed = sum(c.width for c in columns if c.width) + gap * (len(columns) - 1) + 1
        return room - fixed

    columns = base
    sorted_by_workload = key.sort_column == WORKLOAD_KEY
    if key.workloads:
        # The JOB / POD column before COMMAND; TYPE, then RSS, give way to it (unless sorted by).
        workload = next(c for c in all_columns if c.key == WORKLOAD_KEY)
        shown = (*base[:-1], workload, base[-1])
        steps = ((), ("type",), ("type", "rss"))[: 1 if narrow else 3]
        for leave_out in steps:
            gone = set(leave_out) - {key.sort_column}
            candidate = tuple(c for c in shown if c.key not in gone)
            if rest_of(candidate) >= candidate[-1].min_width or sorted_by_workload:  # COMMAND's
                columns = candidate
                break
        extra = WIDE_WORKLOAD_WIDTH - WORKLOAD_WIDTH
        if workload in columns and rest_of(columns) - extra >= WIDE_COMMAND_WIDTH:
            wide = replace(workload, width=WIDE_WORKLOAD_WIDTH)
            columns = tuple(wide if c is workload else c for c in columns)
    rest = max(rest_of(columns), 0)
    widths = tuple(c.width or rest for c in columns)
    return TableLayout(columns, widths, gap=gap, margin=1, scrollbar=key.scrollbar)


__all__ = [
    "COLUMN_KEYS",
    "DEFAULT_SORT",
    "MIN_COMMAND_WIDTH",
    "WORKLOAD_COLUMN",
    "WORKLOAD_KEY",
    "LayoutKey",
    "process_columns",
    "process_layout",
    "row_key",
    "sort_processes",
    "tiebreak",
]
