"""The GPU process table: thousands of processes, grouped by GPU, sorted, filtered and scrolled at
once.

It is a :class:`~gputui.tui.widgets.virtual_table.VirtualTable`, which draws only the rows in
view. A reading, a key or a filter re-orders the process list (a sort of a few thousand tuples)
and re-formats the rows on screen, never the others; the lines are then compared with the ones
on screen and only the cells whose text or style changed are repainted. A new reading in which
nothing visible changed repaints nothing. The columns and their layout are in
:mod:`gputui.tui.widgets.process_columns`.

Rows are grouped by GPU (``g`` turns that off): sorted by the chosen column within each GPU,
the GPU's index bright on its first row. ``f`` shows them as a tree instead
(:mod:`gputui.core.process_tree`). The header's right end says how they are arranged, how many
are tagged and where the cursor is (``12 of 2,000``).

COMMAND takes the rest of the line: each command line is shortened to that width keeping what
tells processes apart (:func:`gputui.core.command_text.command_text`); ← → scroll the commands
sideways (then shown whole, from that cell on), ``^`` and ``$`` go to the start and to the end
of the selected one. While a filter is set, what it matched is highlighted, and a match the
shortened command or the columns would not show is brought into view. The cursor follows its
process when rows re-order.

Space tags a process (a mark in the margin), for a signal to every tagged process at once; a row
whose process was just signalled says so until the process is gone, and one that has exited
says ``exited`` with what was last known of it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import var

from gputui.core.command_text import command_text, window
from gputui.core.format import clip
from gputui.core.mig import instances_by_uuid, process_gpu_order, process_gpu_text
from gputui.core.model import MigDeviceInfo, ProcessSample, Snapshot
from gputui.core.process_tree import TreeRow, process_tree
from gputui.core.vendor_terms import busy_title
from gputui.host.workload import has_workloads, workload_words
from gputui.tui.messages import ProcessHighlighted
from gputui.tui.widgets.line_widget import (
    DIM,
    MATCH,
    MATCH_SELECTED,
    TAGGED,
    VALUE,
    Line,
    cells,
)
from gputui.tui.widgets.process_cells import (
    EXITED,
    HIGHLIGHTED,
    command_prefix,
    fits,
    hidden_match,
    split_match,
)
from gputui.tui.widgets.process_columns import (
    COLUMN_KEYS,
    DEFAULT_SORT,
    MIN_COMMAND_WIDTH,
    WORKLOAD_COLUMN,
    WORKLOAD_KEY,
    Column,
    LayoutKey,
    process_columns,
    process_layout,
    row_key,
    sort_processes,
    tiebreak,
)
from gputui.tui.widgets.virtual_table import TableLayout, VirtualTable, table_bindings

COMMAND_CACHE_SIZE = 4096
"""Shortened command lines remembered (per width); the cache is emptied when it grows past this."""
COMMAND_STEP = 8
"""Cells ← and → scroll the commands by."""
TAG_MARK = "●"
HOST_COLUMNS = frozenset({"cpu", "rss", "time"})
"""Facts read from the host: an exited process has none."""


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

    BINDINGS: ClassVar[list[BindingType]] = [
        *table_bindings("process_table"),
        Binding("g", "toggle_grouped", "Group", id="process_table.group"),
        Binding("f,f5", "toggle_tree", "Tree", id="process_table.tree"),
        Binding(
            "left", f"scroll_command(-{COMMAND_STEP})", "Command ←", show=False,
            id="process_table.command_left",
        ),
        Binding(
            "right", f"scroll_command({COMMAND_STEP})", "Command →", show=False,
            id="process_table.command_right",
        ),
        Binding(
            "circumflex_accent", "command_start", "Command start", show=False,
            id="process_table.command_start",
        ),
        Binding(
            "dollar_sign", "command_end", "Command end", show=False,
            id="process_table.command_end",
        ),
    ]  # fmt: skip

    gpu_filter: var[int | None] = var(None)
    """Show only this GPU's processes (None: all GPUs)."""
    grouped: var[bool] = var(True)
    """Rows grouped by GPU (sorted by the chosen column within each)."""
    tree_view: var[bool] = var(False)
    """Rows as a tree of parents and children (instead of grouped)."""

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
            columns, key=row_key, default_sort=DEFAULT_SORT, name=name, id=id, classes=classes
        )
        self._snapshot: Snapshot | None = None
        self._geometry: tuple[LayoutKey, TableLayout[ProcessSample]] | None = None
        self._commands: dict[tuple[Any, ...], str] = {}
        self._workloads = False
        self._mig = False
        self._instances: dict[str, MigDeviceInfo] = {}
        self._shown: tuple[ProcessSample, ...] | None = None
        self._tree_rows: dict[str, TreeRow] = {}
        self._group_starts: set[str] = set()
        self._launchers = 0
        self._last_known: dict[str, ProcessSample] = {}
        """Each row's last reading with host facts (what an exited row still shows)."""
        self.tags: set[str] = set()
        """Row keys tagged for a signal to several processes."""
        self._signalled: dict[str, tuple[str, float | None]] = {}
        """Row key -> (signal name, start time) of processes signalled and still listed."""
        self.command_left = 0
        """Cells the commands are scrolled sideways (0: shortened to fit)."""

    # --- public API -------------------------------------------------------------------------------

    @property
    def selected_process(self) -> ProcessSample | None:
        """The process under the cursor; None when the table is empty or the cursor is on a
        tree's parent row that uses no GPU."""
        item = self.selected
        return None if item is None or self.is_launcher(item) else item

    @property
    def selected_launcher(self) -> TreeRow | None:
        """The tree's parent row under the cursor (a process that uses no GPU), if it is one."""
        item = self.selected
        row = None if item is None else self._tree_rows.get(row_key(item))
        return row if row is not None and row.launcher else None

    def is_launcher(self, item: ProcessSample) -> bool:
        row = self._tree_rows.get(row_key(item)) if self.tree_view else None
        return row is not None and row.launcher

    @property
    def visible_processes(self) -> list[ProcessSample]:
        """The processes shown (after the filters), in display order."""
        return [p for p in self.visible_items if not self.is_launcher(p)]

    @property
    def tagged_processes(self) -> list[ProcessSample]:
        """The tagged processes, in display order (those hidden by a filter too)."""
        shown = [p for p in self.visible_processes if row_key(p) in self.tags]
        seen = {row_key(p) for p in shown}
        hidden = [p for p in self._items if row_key(p) in self.tags and row_key(p) not in seen]
        return shown + hidden

    @property
    def empty_text(self) -> str:
        """What the table says when no row is shown ('' while rows are shown)."""
        if self.row_count or self._snapshot is None:
            return ""
        needle = self.text_filter.strip()
        if self.gpu_filter is not None and needle:
            return f"no processes on GPU {self.gpu_filter} match “{needle}”"
        if needle:
            return f"no processes match “{needle}”"
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
        self.set_items(self._with_last_known(snapshot.processes))

    def _with_last_known(self, processes: Sequence[ProcessSample]) -> Sequence[ProcessSample]:
        """Exited rows keep who and what they were (the host could no longer say); tags and
        signal marks of processes no longer listed are dropped."""
        last = self._last_known
        known: dict[str, ProcessSample] = {}
        rows: list[ProcessSample] = []
        changed = False
        for process in processes:
            key = row_key(process)
            before = last.get(key)
            if process.exited and process.command is None and before is not None:
                process = dataclasses.replace(
                    process,
                    user=process.user or before.user,
                    name=process.name or before.name,
                    command=before.command,
                    start_time=process.start_time or before.start_time,
                )
                changed = True
                known[key] = before
            elif process.command is not None or process.name is not None:
                known[key] = process
            rows.append(process)
        self._last_known = known
        listed = {row_key(p): p.start_time for p in rows}
        self.tags &= listed.keys()
        self._signalled = {
            k: v for k, v in self._signalled.items() if k in listed and _same_start(listed[k], v[1])
        }
        return rows if changed else processes

    def toggle_tag(self) -> None:
        """Tag the process under the cursor, or untag it (on a tree's parent row: every process
        under it); the cursor moves on to the next row, as in htop."""
        item = self.selected
        if item is None:
            return
        launcher = self.selected_launcher
        if launcher is not None:
            at = self.cursor_row
            keys = {row_key(p) for p in self.visible_items[at + 1 : at + 1 + launcher.children]}
            self.tags = self.tags - keys if keys <= self.tags else self.tags | keys
        else:
            self.tags ^= {row_key(item)}
        self.action_move(1)
        self.rebuild()

    def clear_tags(self) -> None:
        if self.tags:
            self.tags = set()
            self.rebuild()

    def mark_signalled(self, process: ProcessSample, signal_name: str) -> None:
        """Say at once that ``process`` was sent a signal (until it is gone from the list)."""
        key = row_key(process)
        for item in self._items:
            if item.pid == process.pid and _same_start(item.start_time, process.start_time):
                self._signalled[row_key(item)] = (signal_name, process.start_time)
        self._signalled.setdefault(key, (signal_name, process.start_time))
        self.tags.discard(key)
        self.rebuild()

    def watch_gpu_filter(self, gpu: int | None) -> None:
        self.set_filter(None if gpu is None else lambda p: p.gpu_index == gpu)

    def watch_grouped(self) -> None:
        self.refilter()

    def watch_tree_view(self) -> None:
        self._geometry = None
        self.refilter()

    # --- actions ----------------------------------------------------------------------------------

    def action_toggle_grouped(self) -> None:
        """Group by GPU, or not (from the tree: grouped)."""
        if self.tree_view:
            self.tree_view = False
            self.grouped = True
        else:
            self.grouped = not self.grouped

    def action_toggle_tree(self) -> None:
        self.tree_view = not self.tree_view

    def action_scroll_command(self, step: int) -> None:
        """Scroll the commands sideways (→: on into longer ones; ←: back to the start)."""
        width = self._command_width()
        longest = max((cells(self._full_command(p)) for p in self._rows_in_view()), default=0)
        left = max(0, min(self.command_left + step, max(longest - width, 0)))
        self._scroll_command_to(left)

    def action_command_start(self) -> None:
        self._scroll_command_to(0)

    def action_command_end(self) -> None:
        """Scroll so that the end of the selected process's command is in view."""
        item = self.selected
        if item is not None:
            self._scroll_command_to(max(cells(self._full_command(item)) - self._command_width(), 0))

    def action_select_cursor(self) -> None:
        launcher = self.selected_launcher
        if launcher is not None:
            self.app.notify(launcher_note(launcher), timeout=4)
            return
        super().action_select_cursor()

    # --- the table's hooks ------------------------------------------------------------------------

    def selected_message(self, item: ProcessSample) -> Message:
        return self.Selected(self, item)

    def cursor_moved(self, item: ProcessSample | None) -> None:
        self.post_message(ProcessHighlighted(self.selected_process))

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
        return sorted(items, key=tiebreak)

    def arrange_rows(self, rows: list[ProcessSample]) -> list[ProcessSample]:
        self._tree_rows = {}
        self._group_starts = set()
        self._launchers = 0
        if self.tree_view:
            tree = process_tree(rows)
            self._tree_rows = {row_key(r.process): r for r in tree}
            self._launchers = sum(r.launcher for r in tree)
            return [r.process for r in tree]
        if not self.grouped:
            return rows
        grouped = rows  # sorted by GPU: grouped already, in the direction chosen
        if self.sort_column != "gpu":
            grouped = sorted(rows, key=lambda p: p.gpu_index)  # stable: sorted within each GPU
        last = None
        for process in grouped:
            if process.gpu_index != last:
                self._group_starts.add(row_key(process))
                last = process.gpu_index
        return grouped

    def sort_value(self, spec: Column, item: ProcessSample) -> Any:
        if spec.key == "gpu" and self._instances:
            return process_gpu_order(item, self._instances)
        return spec.sort_key(item)

    def header_text(self, spec: Column, arrow: str) -> str:
        title = spec.title
        if spec.key == "sm" and self._snapshot is not None:
            # What the vendor measures per process: SM% (NVIDIA), GFX% (AMD), GPU% on a mix.
            title = busy_title(g.vendor for g in self._snapshot.node.gpus)
        if spec.key == "command" and self.command_left:
            title += f" +{self.command_left}"
        if arrow == " " and spec.numeric:
            return title
        text = f"{title} {arrow}"
        return text if not spec.width or len(text) <= spec.width else f"{title}{arrow}"

    def header_status(self, room: int) -> str:
        """``by GPU · 2 tagged · 12 of 2,000 · 2,200 in all``, or as much of it as fits (the
        cursor's place first, in a short form when the long one does not fit)."""
        shown = self.row_count - self._launchers
        total = len(self._items)
        position = self._position()
        tags = len(self.tags)
        forms = {
            "at": [f"{position:,} of {shown:,}", f"{position}/{shown}"],
            "all": [f"{total:,} in all"] if total != shown else [],
            "tags": [f"{tags:,} tagged", f"{tags}{TAG_MARK}"] if tags else [],
            "mode": ["tree"] if self.tree_view else ["by GPU"] if self.grouped else [],
        }
        chosen: dict[str, str] = {}
        for name in ("at", "all", "tags", "mode"):  # what is given up last first
            for form in forms[name]:
                if cells(_status({**chosen, name: form})) <= room:
                    chosen[name] = form
                    break
        return _status(chosen)

    def row_mark(self, item: ProcessSample) -> tuple[str, str] | None:
        return (TAG_MARK, TAGGED) if row_key(item) in self.tags else None

    def cell_class(self, spec: Column, item: ProcessSample, on_cursor: bool) -> str:
        if on_cursor:
            return self.gap_class(True)
        key = row_key(item)
        if item.exited or key in self._signalled or self.is_launcher(item):
            return DIM
        if key in self.tags:
            return TAGGED
        if (
            spec.key == "gpu"
            and self.grouped
            and not self.tree_view
            and key not in self._group_starts
        ):
            return DIM  # the GPU's index is bright on its group's first row
        return VALUE

    def cell_pieces(self, spec: Column, item: ProcessSample, text: str, on_cursor: bool) -> Line:
        cls = self.cell_class(spec, item, on_cursor)
        needle = self.text_filter.strip().lower()
        if not needle or spec.key not in HIGHLIGHTED or self.is_launcher(item):
            return [(text, cls)]
        match_cls = MATCH_SELECTED if on_cursor and self.has_focus else MATCH
        return split_match(text, needle, cls, match_cls)

    def cell(self, spec: Column, item: ProcessSample, width: int) -> str:
        if self.is_launcher(item):
            if spec.key in ("pid", "user"):
                return super().cell(spec, item, width)
            if spec.key == "command":
                return _cut(launcher_text(self._tree_rows[row_key(item)]), width)
            return ""
        if spec.key == "command":
            return self._command_cell(item, width)
        if spec.key == "gpu" and item.mig_uuid is not None:
            text = process_gpu_text(item, self._instances)
            return text if cells(text) <= width else clip(text, width - 1) + "…"
        if item.exited and spec.key in HOST_COLUMNS:
            return "-"
        if item.exited and spec.key == "user" and not item.user:
            return "-"
        return super().cell(spec, item, width)

    def table_layout(self, width: int, scrollbar: bool) -> TableLayout[ProcessSample]:
        key = LayoutKey(width, scrollbar, self._workloads, self._mig, self.sort_column)
        if self._geometry is not None and self._geometry[0] == key:
            return self._geometry[1]
        layout = process_layout(self.all_columns, key)
        self._geometry = (key, layout)
        self._commands.clear()  # shortened for another width
        return layout

    # --- internals --------------------------------------------------------------------------------

    def _workload_shown(self) -> bool:
        layout = self._geometry[1] if self._geometry is not None else None
        return layout is not None and WORKLOAD_KEY in (c.key for c in layout.columns)

    def _container(self, item: ProcessSample) -> str | None:
        """The command's container tag: none while the JOB / POD column names the container."""
        return None if self._workload_shown() else item.container_id

    def _full_command(self, item: ProcessSample) -> str:
        return command_text(item.command, item.name, self._container(item))

    def _command_cell(self, item: ProcessSample, width: int) -> str:
        key = row_key(item)
        branch = self._tree_rows[key].prefix if key in self._tree_rows else ""
        signalled = self._signalled.get(key)
        needle = self.text_filter.strip().lower()
        hidden = hidden_match(item, needle, self._workload_shown())
        prefix = command_prefix(branch, signalled[0] if signalled else None, item.exited, hidden)
        if item.exited and not (item.command or item.name):
            return clip(prefix.rstrip(" ·") or EXITED, width)
        if not fits(prefix, width):
            prefix = branch if fits(branch, width) else ""
        room = width - cells(prefix)
        if self.command_left:
            return prefix + window(self._full_command(item), self.command_left, room)
        container = self._container(item)
        cache_key = (item.command, item.name, container, room, needle)
        text = self._commands.get(cache_key)
        if text is None:
            if len(self._commands) > COMMAND_CACHE_SIZE:
                self._commands.clear()
            text = command_text(item.command, item.name, container, width=room, around=needle)
            self._commands[cache_key] = text
        return prefix + text

    def _command_width(self) -> int:
        layout = self._layout_now()
        for spec, width in zip(layout.columns, layout.widths, strict=True):
            if spec.key == "command":
                return width
        return 0

    def _rows_in_view(self) -> list[ProcessSample]:
        top = self.top_row
        return self.visible_items[top : top + max(self.size.height - 1, 1)]

    def _scroll_command_to(self, left: int) -> None:
        if left != self.command_left:
            self.command_left = left
            self.rebuild()

    def _position(self) -> int:
        """The cursor's place among the process rows (a tree's parent rows not counted)."""
        if not self.row_count:
            return 0
        if not self._launchers:
            return self.cursor_row + 1
        before = self.visible_items[: self.cursor_row]
        return sum(not self.is_launcher(p) for p in before) + 1

    def _now(self) -> float:
        return self._snapshot.timestamp if self._snapshot is not None else 0.0


def _cut(text: str, width: int) -> str:
    return text if cells(text) <= width else clip(text, width - 1) + "…"


def _same_start(a: float | None, b: float | None) -> bool:
    return a is None or b is None or abs(a - b) < 1.0


def _status(parts: dict[str, str]) -> str:
    return " · ".join(parts[n] for n in ("mode", "tags", "at", "all") if n in parts)


def launcher_text(row: TreeRow) -> str:
    """A tree's parent row: its name and how many GPU processes hang below it."""
    name = row.process.name or "parent"
    return f"{name} · {row.children} GPU processes"


def launcher_note(row: TreeRow) -> str:
    """Why Enter, k or e do nothing on a tree's parent row."""
    name = row.process.name or "the parent process"
    return (
        f"PID {row.process.pid} ({name}) uses no GPU: select one of the {row.children} "
        "processes under it (space on this row tags them all)"
    )


__all__ = [
    "COLUMN_KEYS",
    "DEFAULT_SORT",
    "MIN_COMMAND_WIDTH",
    "WORKLOAD_KEY",
    "ProcessTable",
    "launcher_note",
    "process_columns",
    "sort_processes",
]
