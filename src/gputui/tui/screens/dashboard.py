"""The main screen: title bar, one panel per GPU, the host strip and the process table.

Nothing here recomposes on a tick. :meth:`DashboardScreen.apply` hands each snapshot to widgets
created once (references cached at construction), inside ``App.batch_update()``, and the panels
repaint only the cells that changed. The layout (compact rows, framed panels, panels with charts or
roomy panels, how many columns and how tall) is chosen from the terminal size and the GPU count
on resize, never per tick: in a big terminal the panels take every line the process table does
not need, with charts that grow with them. The table needs a line for each process (and its
header), up to half the terminal: the charts shrink for it, and give way to plain panels when they
cannot shrink more. When the number of processes changes, the layout is chosen again (it changes
only when that moves the line between them).

Keys for the processes: ``/`` opens the filter (a line of its own with a ``Filter:`` label, and a
footer that says what enter and esc do while typing), space tags the process under the cursor
(not in ``--readonly`` or a replay: there space pauses, or plays), ``U`` clears the tags, ``k``
signals the tagged processes (or the one under the cursor) after the confirmation dialog, ``e``
shows the selected process's environment.
"""

from __future__ import annotations

import math
import signal
from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Horizontal
from textual.screen import Screen
from textual.widgets import Input, Label, Static

from gputui.core.allocation_text import gpu_tag, idle_owners
from gputui.core.frozen import frozen
from gputui.core.history import History
from gputui.core.model import NodeInfo, ProcessSample, Snapshot
from gputui.core.usage import idle_forms
from gputui.health.rollup import gpu_status, node_summary
from gputui.host.environ import EnvironReader
from gputui.host.pidns import namespace_note
from gputui.tui.messages import ProcessHighlighted
from gputui.tui.permissions import signal_refusal
from gputui.tui.replay import ReplayStatus
from gputui.tui.screens.process_actions import ask_to_signal
from gputui.tui.widgets.findings_strip import FindingsStrip
from gputui.tui.widgets.footer import KeyFooter
from gputui.tui.widgets.gpu_panel import GpuPanel
from gputui.tui.widgets.host_strip import HostStrip
from gputui.tui.widgets.line_widget import MeterPalette
from gputui.tui.widgets.process_table import ProcessTable, launcher_note
from gputui.tui.widgets.title_bar import TitleBar
from gputui.tui.widgets.too_small import TOO_SMALL_WORDS, TooSmall

try:  # built on Textual internals (pinned exactly); without it, panels still work, less frugally
    from gputui.tui import span_compositor
except ImportError:  # pragma: no cover
    span_compositor = None  # type: ignore[assignment]


MIN_WIDTH = 60
MIN_HEIGHT = 15
TOO_SMALL_TEXT = TOO_SMALL_WORDS

PANEL_MIN_WIDTH = 56
"""Narrowest framed panel; below this, GPUs are shown as compact rows."""
CHART_PANEL_MIN_WIDTH = 80
"""Narrowest panel with charts beside each other (four in a row, or two by two)."""
COMPACT_MIN_WIDTH = 80
NORMAL_HEIGHT = 6
ROOMY_MIN_HEIGHT = 12
CHARTS_MIN_HEIGHT = 11
"""Shortest panel with charts: frame, bars in two lines, charts of three plot rows."""
FIXED_LINES = 3
"""Title bar, host strip, footer."""
NORMAL_MIN_TABLE = 6
ROOMY_MIN_TABLE = 10
FILTER_FOOTER_TEXT = (
    " typing a filter: PID, user, command, job or pod  ·  enter keep it and go back to the "
    "table  ·  esc clear it"
)


@frozen(slots=False)
class Layout:
    """How the GPU panels are laid out for one terminal size."""

    mode: str  # "compact" | "normal" | "charts" | "roomy" | "too-small"
    columns: int = 1
    panel_height: int = 1


def table_lines(height: int, processes: int) -> int:
    """Lines the process table asks for beside roomy panels or charts: its header and a line
    for each process, up to half the terminal, and at least :data:`ROOMY_MIN_TABLE`."""
    return max(ROOMY_MIN_TABLE, min(processes + 1, height // 2))


def choose_layout(width: int, height: int, gpus: int, processes: int = 0) -> Layout:
    """Roomy panels (one or two GPUs) or panels with charts (more GPUs) when they fit with a
    process table of :func:`table_lines`, as tall as the terminal allows; framed panels when
    those fit; compact rows otherwise; a message when the terminal is too small for anything."""
    if width < MIN_WIDTH or height < MIN_HEIGHT:
        return Layout("too-small")
    n = max(gpus, 1)
    cols = max(1, min(n, width // PANEL_MIN_WIDTH))
    rows = math.ceil(n / cols)
    if width >= PANEL_MIN_WIDTH:
        room = height - FIXED_LINES - table_lines(height, processes)
        if n <= 2 and room // rows >= ROOMY_MIN_HEIGHT:
            return Layout("roomy", cols, room // rows)
        chart_cols = max(1, min(n, (width + 1) // (CHART_PANEL_MIN_WIDTH + 1)))
        chart_rows = math.ceil(n / chart_cols)
        if n > 2 and room // chart_rows >= CHARTS_MIN_HEIGHT:
            return Layout("charts", chart_cols, room // chart_rows)
        if rows * NORMAL_HEIGHT + FIXED_LINES + NORMAL_MIN_TABLE <= height:
            return Layout("normal", cols, NORMAL_HEIGHT)
    compact_cols = max(1, min(n, width // COMPACT_MIN_WIDTH))
    return Layout("compact", compact_cols, 1)


class DashboardScreen(Screen[None]):
    """Every GPU at a glance, the host, and the processes using the GPUs."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *(
            Binding(str(i), f"select_gpu({i})", f"GPU {i}", show=False, id=f"gpu.{i}")
            for i in range(10)
        ),
        Binding("a", "select_gpu(None)", "All GPUs", id="gpu.all"),
        Binding("slash", "filter", "Filter", id="filter"),
        Binding("enter", "details", "Details", id="details"),
        Binding("space", "tag", "Tag", id="tag"),
        Binding("U", "untag_all", "Untag all", show=False, id="untag"),
        Binding("e", "environ", "Env", id="environ"),
        Binding("k", "signal", "Signal", id="signal"),
        # k where no signal is offered (host PIDs in a container, PID 1, PID 2, a kernel thread):
        # says why, out of the footer and the help.
        Binding("k", "signal_refused", "Signal", show=False, id="signal.refused"),
        Binding("escape", "clear_filters", "Clear filters", show=False, id="clear"),
    ]

    def __init__(
        self,
        node: NodeInfo,
        history: History,
        *,
        readonly: bool = False,
        readonly_reason: str = "read-only",
        health_enabled: bool = False,
        environ_reader: EnvironReader | None = None,
    ) -> None:
        """``environ_reader``: reads a process's environment (key e); None: not offered."""
        super().__init__(id="dashboard")
        if span_compositor is not None:
            span_compositor.install(self)
        self.node = node
        self.history = history
        self.readonly = readonly
        self.readonly_reason = readonly_reason
        """Why k is off with ``readonly`` (the footer and the key say it)."""
        self.health_enabled = health_enabled
        self.environ_reader = environ_reader
        """Show health badges: a monitor is attached, or a snapshot has carried findings. Without
        either, no badge is drawn (an ``ok`` badge would claim checks that never ran)."""
        self.gpu_filter: int | None = None
        self.layout_choice: Layout | None = None
        self.shown: Snapshot | None = None
        self._pending: Snapshot | None = None
        self.latest: Snapshot | None = None
        """The newest reading given to :meth:`apply`, drawn or not."""
        self.paused = False
        self._shown_processes: tuple[ProcessSample, ...] | None = None
        # Widgets are created once; references are kept so a tick never queries the DOM.
        self.title_bar = TitleBar(node, id="title")
        self.panels: dict[int, GpuPanel] = {
            info.index: GpuPanel(info, history, id=f"gpu-{info.index}") for info in node.gpus
        }
        self.host_strip = HostStrip(id="host")
        self.findings_strip = FindingsStrip(id="findings-strip")
        self.process_table = ProcessTable(id="processes")
        self.filter_input = Input(
            placeholder="PID, user, command, job or pod", id="filter", compact=True
        )
        self.filter_bar = Horizontal(
            Label("Filter:", id="filter-label"), self.filter_input, id="filter-bar"
        )
        self.filter_footer = Static(FILTER_FOOTER_TEXT, id="filter-footer", markup=False)
        """The footer while the filter is typed in (the keys' footer is hidden then)."""
        self.key_footer = KeyFooter()
        self._process_count = 0
        self.pid_note = Static("", id="pid-note", markup=False)
        """Why the processes show host PIDs only (gputui in a container); hidden otherwise."""
        self._pid_note_for: NodeInfo | None = None
        self._pid_note: str | None = None
        self._signal_offered = True
        self.too_small = TooSmall(MIN_WIDTH, MIN_HEIGHT, id="too-small")
        self._grid = Container(*self.panels.values(), id="gpus")

    def compose(self) -> ComposeResult:
        # Set up before the widgets are mounted: their styles are then worked out once, with
        # the layout's class on the screen, not again for every widget when it changes.
        self.filter_bar.display = False
        self.filter_footer.display = False
        self.findings_strip.display = False
        self._relayout(self.app.size.width, self.app.size.height)
        yield MeterPalette()
        yield self.title_bar
        with Container(id="main"):
            yield self._grid
            yield self.host_strip
            yield self.findings_strip
            yield self.pid_note
            yield self.process_table
            yield self.filter_bar
        yield self.too_small
        yield self.filter_footer
        yield self.key_footer

    def on_mount(self) -> None:
        self._show_pid_note()
        self._relayout(self.app.size.width, self.app.size.height)
        self.process_table.focus()

    def on_resize(self, event: events.Resize) -> None:
        self._relayout(event.size.width, event.size.height)

    def _relayout(self, width: int, height: int) -> None:
        choice = choose_layout(width, height, len(self.panels), self._process_count)
        if choice.mode == "too-small":
            self.too_small.show(width, height)
        if choice == self.layout_choice:
            return
        if self.layout_choice is not None and self.layout_choice.mode == "too-small":
            # Hidden, the table lost the focus: its keys (s, S, arrows) work again at once.
            self.call_after_refresh(self.process_table.focus)
        self.layout_choice = choice
        # One class change (one restyle of the DOM), not one per mode.
        classes = {c for c in self.classes if not c.startswith("-mode-")}
        classes.add(f"-mode-{choice.mode}")
        self.set_classes(classes)
        if choice.mode != "too-small":
            rows = math.ceil(max(len(self.panels), 1) / choice.columns)
            form = "charts" if choice.mode == "charts" else "auto"
            for panel in self.panels.values():
                panel.set_form(form)
            self._grid.styles.grid_size_columns = choice.columns
            self._grid.styles.grid_rows = str(choice.panel_height)
            self._grid.styles.height = rows * choice.panel_height

    # -- snapshots ---------------------------------------------------------------------------------

    def apply(self, snapshot: Snapshot) -> None:
        """Show a snapshot: widgets change in place, only what changed is repainted."""
        self.latest = snapshot
        if self.app.screen is not self:
            # Covered (help, confirm dialog, process detail): no drawing, catch up on resume.
            self._pending = snapshot
            return
        self._pending = None
        self.shown = snapshot
        findings = snapshot.findings
        if findings:
            self.health_enabled = True
        health = self.health_enabled
        stall = snapshot.stall
        with self.app.batch_update():
            # While the driver does not answer, the values are those of the last reading: the
            # clock shows when they were read, the bar for how long there has been no answer,
            # and the panels and table are dimmed.
            shown_at = stall.last_reading if stall and stall.last_reading else snapshot.timestamp
            self.title_bar.set_state(
                timestamp=shown_at,
                health=node_summary(findings) if health else None,
                stale_s=None if stall is None else max(snapshot.timestamp - stall.since, 0.0),
                idle=_idle_with_owners(snapshot),
            )
            self.set_class(stall is not None, "-stale")
            panels = self.panels
            for sample in snapshot.gpus:
                panel = panels.get(sample.index)
                if panel is not None:
                    if health:  # drawn by update_sample's rebuild, with the new reading
                        panel.health = gpu_status(findings, sample.index, active_only=True)
                    panel.allocation = gpu_tag(
                        snapshot.allocations, sample.index, snapshot.timestamp
                    )
                    panel.update_sample(sample)
            self.host_strip.update_host(snapshot.host)
            # The strip takes a line from the process table only while something is wrong;
            # its display flips (a relayout) only when that changes, never per tick.
            trouble = self.findings_strip.update_findings(findings)
            if trouble != self.findings_strip.display:
                self.findings_strip.display = trouble
            # Processes are slow-tier readings, carried (same tuple) between slow reads: the
            # table is only asked to diff when they were read again.
            table = self.process_table
            if snapshot.processes is not self._shown_processes or not table.is_mounted:
                table.update_processes(snapshot)
                self._shown_processes = snapshot.processes if table.is_mounted else None
                if len(snapshot.processes) != self._process_count:
                    self._process_count = len(snapshot.processes)
                    self._relayout(self.app.size.width, self.app.size.height)
            self._show_pid_note()
            self._offer_signal()

    def _show_pid_note(self) -> None:
        """The note above the process table while the PIDs are host PIDs gputui cannot look up;
        it changes only with the node."""
        if self.node is self._pid_note_for:
            return
        self._pid_note_for = self.node
        note = namespace_note(self.node.pid_namespace)
        self.pid_note.display = note is not None
        if note != self._pid_note:  # Static.update relayouts the screen, even with the same text
            self._pid_note = note
            self.pid_note.update(note or "")

    def on_screen_resume(self) -> None:
        pending = self._pending
        if pending is not None and not self.paused:
            self.apply(pending)

    def show_paused(self, paused: bool) -> None:
        self.paused = paused
        self.title_bar.set_state(paused=paused)

    def show_interval(self, interval: float) -> None:
        self.title_bar.set_state(interval=interval)

    def show_recording(self, recording: bool) -> None:
        self.title_bar.set_state(recording=recording)

    def show_replay(self, status: ReplayStatus) -> None:
        self.title_bar.set_state(replay=status)

    # -- GPU selection and filters -----------------------------------------------------------------

    def select_gpu(self, index: int | None) -> None:
        if index is not None and index not in self.panels:
            self.app.notify(f"there is no GPU {index}", severity="warning", timeout=3)
            return
        self.gpu_filter = index
        with self.app.batch_update():
            for i, panel in self.panels.items():
                panel.set_selected(i == index)
            self.process_table.gpu_filter = index
            self.title_bar.set_state(gpu_filter=index)

    def action_select_gpu(self, index: int | None) -> None:
        self.select_gpu(index)

    @on(GpuPanel.Clicked)
    def _panel_clicked(self, event: GpuPanel.Clicked) -> None:
        # Clicking the selected GPU again shows all GPUs.
        self.select_gpu(None if event.index == self.gpu_filter else event.index)

    def action_filter(self) -> None:
        self.filter_bar.display = True
        self.filter_input.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.process_table.text_filter = event.value

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        if not event.value.strip():
            self.filter_bar.display = False
        self.process_table.focus()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self._typing(event.widget is self.filter_input)

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        if event.widget is self.filter_input:
            self._typing(False)

    def _typing(self, typing: bool) -> None:
        """While the filter is typed in, its own footer (enter, esc) instead of the keys'."""
        if self.filter_footer.display != typing:
            self.filter_footer.display = typing
            self.key_footer.display = not typing

    def action_clear_filters(self) -> None:
        if self.filter_input.value or self.filter_bar.display:
            self.filter_input.value = ""
            self.process_table.text_filter = ""
            self.filter_bar.display = False
            self.process_table.focus()
        elif self.gpu_filter is not None:
            self.select_gpu(None)

    # -- processes ---------------------------------------------------------------------------------

    def action_details(self) -> None:
        process = self._selected_or_say()
        if process is not None:
            self.open_details(process)

    def _selected_or_say(self) -> ProcessSample | None:
        """The process under the cursor; else None, said (no rows, or a tree's parent row)."""
        table = self.process_table
        process = table.selected_process
        if process is None:
            launcher = table.selected_launcher
            note = launcher_note(launcher) if launcher is not None else "no process selected"
            self.app.notify(note, timeout=3)
        return process

    @on(ProcessTable.Selected)
    def _process_selected(self, event: ProcessTable.Selected) -> None:
        event.stop()
        self.open_details(event.process)

    def open_details(self, process: ProcessSample) -> None:
        from gputui.tui.screens.process_detail import ProcessDetailScreen

        screen = ProcessDetailScreen(
            process,
            self.history,
            readonly=self.readonly,
            pid_namespace=self.node.pid_namespace,
            environ_reader=self.environ_reader,
        )
        self.app.push_screen(screen)
        latest = self.latest
        if latest is not None:
            screen.update_snapshot(latest)

    def action_environ(self) -> None:
        """The selected process's environment (e, as in nvitop)."""
        process = self._selected_or_say()
        if process is None:
            return
        from gputui.tui.screens.environ import EnvironScreen, no_reader

        self.app.push_screen(EnvironScreen(process, self.environ_reader or no_reader))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # In --readonly (and a replay) the signal action is off, and says why (why_disabled);
        # where gputui never signals the process under the cursor, k only says why. Tags are for
        # signals: without them space goes on to pause the display (or play the replay).
        if action == "signal":
            return None if self.readonly else self.why_no_signal() is None
        if action == "signal_refused":
            return not self.readonly and self.why_no_signal() is not None
        if action == "tag":
            return not self.readonly
        if action == "untag_all":  # in the help even with no tag yet (None: shown, disabled)
            return False if self.readonly else True if self.process_table.tags else None
        if action == "environ":
            return self.environ_reader is not None
        return True

    def why_disabled(self, action: str) -> str | None:
        """Why ``check_action`` turns ``action`` off (the footer and the key's notice say it)."""
        return self.readonly_reason if self.readonly and action == "signal" else None

    def why_no_signal(self) -> str | None:
        """Why the process under the cursor is never signalled (None: it may be, the user's
        rights aside). With tagged processes, k signals those: only the PID namespace counts."""
        table = self.process_table
        if table.tags:
            return signal_refusal(None, self.node.pid_namespace)
        return signal_refusal(table.selected_process, self.node.pid_namespace)

    def _offer_signal(self) -> None:
        """Show or hide k in the footer when what the cursor is on changes that."""
        offered = self.why_no_signal() is None
        if offered != self._signal_offered:
            self._signal_offered = offered
            self.refresh_bindings()

    def on_process_highlighted(self, message: ProcessHighlighted) -> None:
        message.stop()
        self._offer_signal()

    def action_signal_refused(self) -> None:
        reason = self.why_no_signal()
        if reason is not None:
            self.app.notify(reason, title="no signal", severity="warning")

    def action_tag(self) -> None:
        """Tag (or untag) the process under the cursor, for one signal to every tagged one."""
        table = self.process_table
        if table.selected is None:
            self.app.notify("no process selected", timeout=2)
            return
        table.toggle_tag()
        self.refresh_bindings()
        self._offer_signal()

    def action_untag_all(self) -> None:
        self.process_table.clear_tags()
        self.refresh_bindings()
        self._offer_signal()

    def action_signal(self) -> None:
        if self.readonly:
            return
        if self.why_no_signal() is not None:  # k is not offered then; any other way here
            self.action_signal_refused()
            return
        table = self.process_table
        processes = table.tagged_processes
        if not processes:
            process = self._selected_or_say()
            if process is None:
                return
            processes = [process]
        ask_to_signal(
            self, processes, readonly=self.readonly, pid_namespace=self.node.pid_namespace
        )

    def signal_sent(self, process: ProcessSample, sig: signal.Signals) -> None:
        """The app sent ``sig`` to ``process``: the row says so at once (until the next reading
        of the processes shows what became of it)."""
        self.process_table.mark_signalled(process, sig.name)
        self.refresh_bindings()


__all__ = ["TOO_SMALL_TEXT", "DashboardScreen", "Layout", "choose_layout", "table_lines"]


def _idle_with_owners(snapshot: Snapshot) -> tuple[str, ...]:
    """The title bar's idle text, longest first (it takes the longest that fits): the idle
    GPUs, with the jobs and pods that hold idle GPUs in the longest form."""
    forms = idle_forms(snapshot.usage)
    owners = idle_owners(snapshot.allocations, snapshot.timestamp)
    if not owners:
        return forms
    return (f"{forms[0]} · {owners}", *forms) if forms else (owners,)
