"""One process in detail: who and what it is, and its recent GPU memory, SM, CPU and RSS history.

Each history is a chart with a scale from 0 (so a 60.3 GB process wobbling by 0.4 GB is a flat
line at three quarters of the GPU's memory, not a plot filled from top to bottom): GPU memory up
to the GPU's memory (or a round number above the largest value when that is unknown), SM% up to
100 %, CPU% up to 100 % or a round number above the largest value (several cores), host RSS up
to a round number a tenth or more above the largest value. The scale is labelled with its unit
at the top and bottom, the time axis under the chart (one reading a column).

``k`` signals the process through the same confirmation dialog as the dashboard
(:mod:`gputui.tui.screens.process_actions`; not with ``--readonly``, in a replay, or once the
process has exited), ``e`` shows its environment.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Label, Static

from gputui.core.command_text import command_text
from gputui.core.format import NA, fmt_bytes, fmt_elapsed, fmt_pct, sanitize
from gputui.core.frozen import frozen
from gputui.core.history import History
from gputui.core.mig import instance_label, instances_by_uuid
from gputui.core.model import MigDeviceInfo, PidNamespace, ProcessSample, Snapshot
from gputui.host.environ import EnvironReader
from gputui.host.workload import attribution_rows
from gputui.tui.permissions import signal_refusal
from gputui.tui.screens.process_actions import ask_to_signal
from gputui.tui.widgets.charts import Chart, Fetch, chart_block, history_fetch, nice_ceiling
from gputui.tui.widgets.footer import KeyFooter
from gputui.tui.widgets.line_widget import (
    PLOT_CPU,
    PLOT_MEM,
    PLOT_UTIL,
    Line,
    LineWidget,
    MeterPalette,
)

_TYPE_WORDS = {
    "compute": "compute",
    "graphics": "graphics",
    "compute+graphics": "compute + graphics",
}


@frozen(slots=False)
class _Plot:
    metric: str
    title: str
    fmt: Callable[[float | None], str]
    cls: str
    least_top: float = 0.0
    """The scale's top is at least this (100 for percentages of one core or of the GPU)."""


PLOTS: tuple[_Plot, ...] = (
    _Plot("gpu_memory_bytes", "GPU memory", fmt_bytes, PLOT_MEM),
    _Plot("sm_pct", "SM", fmt_pct, PLOT_UTIL, 100.0),
    _Plot("cpu_pct", "CPU", fmt_pct, PLOT_CPU, 100.0),
    _Plot("host_rss_bytes", "Host RSS", fmt_bytes, PLOT_MEM),
)
CHART_HEIGHT = 7
"""Title, five plot rows, the time axis."""
AXIS_WIDTH = 5
"""Cells for the scale's labels (``1023M``, ``1200%``): the same in every chart, so their time
axes line up."""


def scale_top(plot: _Plot, values: list[float], gpu_memory: float | None) -> float:
    """Where a chart's scale ends (it starts at 0): the GPU's memory for GPU memory, 100 % for
    SM%, else a round number a tenth or more above the largest value (and at least
    ``least_top``)."""
    if plot.metric == "sm_pct":
        return 100.0
    if plot.metric == "gpu_memory_bytes" and gpu_memory:
        return max(float(gpu_memory), max(values, default=0.0))
    # A tenth of headroom: a steady value is a line below the top, not a filled chart.
    biggest = max(values, default=0.0) * 1.1
    if plot.fmt is fmt_bytes and biggest >= 1024:  # round in the unit shown: 40.0G, not 37.3G
        unit = 1024.0 ** math.floor(math.log(biggest, 1024))
        return nice_ceiling(biggest / unit) * unit
    return max(nice_ceiling(biggest), plot.least_top)


class ProcessChart(LineWidget):
    """One history chart of a process: title with now/min/max, the scale, the time axis."""

    DEFAULT_CSS = f"""
    ProcessChart {{
        height: {CHART_HEIGHT};
        margin-bottom: 1;
    }}
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.chart: Chart | None = None
        self.fetch: Fetch | None = None
        self.values: list[float] = []
        """The values drawn, one a column, oldest first (NaN: no reading)."""

    def show(self, chart: Chart, fetch: Fetch) -> None:
        self.chart, self.fetch = chart, fetch
        self.rebuild()

    def build_lines(self, width: int, height: int) -> list[Line]:
        chart, fetch = self.chart, self.fetch
        if chart is None or fetch is None:
            return []
        axis_w = max(AXIS_WIDTH, len(chart.top), len(chart.bottom))
        series, bucket_s = fetch([chart.metric], max(width - axis_w - 1, 1))
        self.values = series[0]
        return chart_block(chart, self.values, width, height, bucket_s, axis_w)


def _same_process(candidate: ProcessSample, process: ProcessSample) -> bool:
    """Same PID on the same GPU, and not a new process that reused the PID."""
    if candidate.pid != process.pid or candidate.gpu_index != process.gpu_index:
        return False
    if candidate.start_time is None or process.start_time is None:
        return True
    return abs(candidate.start_time - process.start_time) < 1.0


def _fmt_start(start_time: float | None) -> str:
    if start_time is None:
        return NA
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(start_time))


class ProcessDetailScreen(Screen[None]):
    """Details and history of one process. Feed it snapshots with :meth:`update_snapshot`."""

    DEFAULT_CSS = """
    ProcessDetailScreen {
        layout: vertical;
    }
    ProcessDetailScreen #detail-body {
        padding: 1 2;
    }
    ProcessDetailScreen #detail-title {
        text-style: bold;
    }
    ProcessDetailScreen #detail-status {
        color: $text-muted;
        margin-bottom: 1;
    }
    ProcessDetailScreen #detail-status.-exited {
        color: $warning;
    }
    ProcessDetailScreen #detail-info {
        margin-bottom: 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="process_detail.close"),
        Binding("q", "close", "Close", show=False, id="process_detail.close_q"),
        Binding("k", "signal", "Signal", id="process_detail.signal"),
        Binding("e", "environ", "Env", id="process_detail.environ"),
    ]

    def __init__(
        self,
        process: ProcessSample,
        history: History,
        *,
        gpu_memory: float | None = None,
        readonly: bool = True,
        pid_namespace: PidNamespace | None = None,
        environ_reader: EnvironReader | None = None,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """``readonly``: no signal (k); ``pid_namespace``: the node's (no signal to host PIDs
        from a container); ``environ_reader``: reads the environment (e; None: not offered)."""
        super().__init__(name=name, id=id, classes=classes)
        self.process = process
        self.history = history
        self.readonly = readonly
        self.pid_namespace = pid_namespace
        self.environ_reader = environ_reader
        self.gpu_memory = gpu_memory
        self.gpu_performance: str | None = None
        """The line saying why its GPU is as fast as it is (``GpuSample.performance``)."""
        """The memory of the process's GPU (the top of its GPU memory chart), when known."""
        self.exited = False
        self.instance: MigDeviceInfo | None = None
        """The MIG instance the process runs in, from the node's list (None: not in one, or not
        listed)."""
        # When the process was last seen (snapshot time); elapsed freezes here once it exits.
        # Until the first update, assume the process was read in the newest recorded snapshot.
        latest = history.timestamps(last=1)
        self._seen_at: float | None = latest[-1] if latest else None
        self._texts: dict[str, str | Text] = {}
        self._title = Label("", id="detail-title")
        self._status = Label("", id="detail-status")
        self._info = Static("", id="detail-info")
        self.charts = {p.metric: ProcessChart(id=f"plot-{p.metric}") for p in PLOTS}

    def compose(self) -> ComposeResult:
        yield MeterPalette()
        with VerticalScroll(id="detail-body"):
            yield self._title
            yield self._status
            yield self._info
            yield from self.charts.values()
        yield KeyFooter()

    def on_mount(self) -> None:
        self._render_all()

    # --- public API -------------------------------------------------------------------------------

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Take the process's newest reading from a snapshot (or notice that it has exited)."""
        current = next((p for p in snapshot.processes if _same_process(p, self.process)), None)
        if current is None:
            self.exited = True
        else:
            self.process = current
            self.exited = False
            self._seen_at = snapshot.timestamp
        uuid = self.process.mig_uuid
        self.instance = None if uuid is None else instances_by_uuid(snapshot).get(uuid)
        gpu = snapshot.sample(self.process.gpu_index)
        if gpu is not None and gpu.memory_total_bytes:
            self.gpu_memory = gpu.memory_total_bytes
        # why its GPU is as fast as it is (the process may be what is slow)
        self.gpu_performance = (
            None if gpu is None or gpu.performance is None else gpu.performance.text
        )
        if self.is_mounted:
            self._render_all()

    def action_close(self) -> None:
        self.dismiss(None)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "signal":
            return not self.readonly and not self.exited and self.why_no_signal() is None
        if action == "environ":
            return self.environ_reader is not None
        return True

    def why_no_signal(self) -> str | None:
        """Why gputui never signals this process (see :func:`signal_refusal`)."""
        return signal_refusal(self.process, self.pid_namespace)

    def action_signal(self) -> None:
        if self.readonly:
            return
        reason = self.why_no_signal()
        if self.exited:
            reason = f"PID {self.process.pid} has exited: nothing to signal"
        if reason is not None:
            self.app.notify(reason, title="no signal", severity="warning")
            return
        ask_to_signal(self, [self.process], readonly=False, pid_namespace=self.pid_namespace)

    def action_environ(self) -> None:
        if self.environ_reader is None:
            return
        from gputui.tui.screens.environ import EnvironScreen

        self.app.push_screen(EnvironScreen(self.process, self.environ_reader))

    # --- rendering --------------------------------------------------------------------------------

    def _set(self, widget: Label | Static, key: str, content: str | Text) -> None:
        # Static.update re-sends the widget even for identical text, so compare first.
        if self._texts.get(key) != content:
            self._texts[key] = content
            widget.update(content)

    def _render_all(self) -> None:
        proc = self.process
        type_word = _TYPE_WORDS.get(proc.type, str(proc.type))
        self._set(
            self._title,
            "title",
            # Text, not str: a str would be parsed as markup.
            Text(
                f"PID {proc.pid} · {sanitize(proc.user or 'unknown user')} · "
                f"GPU {proc.gpu_index} · {type_word}"
            ),
        )
        status = "process exited" if self.exited else "running"
        self._set(self._status, "status", Text(status))
        if self._status.has_class("-exited") != self.exited:
            self._status.set_class(self.exited, "-exited")
            self.refresh_bindings()  # no k once it has exited
        self._set(self._info, "info", self._info_text())
        for plot in PLOTS:
            self._render_plot(plot)

    def _info_text(self) -> Text:
        proc = self.process
        elapsed = None if self._seen_at is None else proc.running_for(self._seen_at)
        gpu = str(proc.gpu_index)
        if proc.mig_uuid:
            instance = self.instance
            gpu += f"  (MIG {instance_label(instance) if instance is not None else 'instance'})"
        rows: list[tuple[str, str]] = [
            ("PID", str(proc.pid)),
            ("User", sanitize(proc.user or NA)),
            ("GPU", gpu),
        ]
        if self.gpu_performance:
            rows.append(("GPU speed", sanitize(self.gpu_performance)))
        if proc.mig_uuid:
            rows.append(("MIG device", sanitize(proc.mig_uuid)))
        rows.append(("Type", _TYPE_WORDS.get(proc.type, str(proc.type))))
        # The Slurm job, pod and container it works for; "Container: none" when none of them.
        owners = [(label, sanitize(value)) for label, value in attribution_rows(proc)]
        rows += owners or [("Container", "none")]
        rows += [
            ("Started", _fmt_start(proc.start_time)),
            ("Elapsed", fmt_elapsed(elapsed)),
            ("Name", sanitize(proc.name or NA)),
            ("Command", command_text(proc.command, proc.name, None)),
        ]
        text = Text()
        for label, value in rows:
            text.append(f"{label:<14}", style="bold")
            text.append(f"{value}\n")
        text.rstrip()
        return text

    def _render_plot(self, plot: _Plot) -> None:
        proc, seen = self.process, self._seen_at
        values = [
            v
            for v in self.history.process_series(proc.pid, proc.gpu_index, plot.metric)
            if not math.isnan(v)
        ]
        raw = getattr(proc, plot.metric)
        current = None if raw is None else float(raw)
        now_word = "last" if self.exited else "now"
        parts = [f"{now_word} {plot.fmt(current)}"]
        if values:
            parts.append(f"min {plot.fmt(min(values))}")
            parts.append(f"max {plot.fmt(max(values))}")
        else:
            parts.append("no history yet")
        top = scale_top(plot, values, self.gpu_memory)
        chart = Chart(
            plot.metric,
            plot.title,
            plot.title,
            "   ".join(parts),
            plot.cls,
            0.0,
            top,
            plot.fmt(top),
            plot.fmt(0.0),
        )
        history = self.history

        def stamps(last: int) -> list[float]:
            # An exited process's readings end when it was last seen.
            found = history.timestamps(last=last)
            return [t for t in found if seen is None or t <= seen]

        fetch = history_fetch(
            stamps,
            lambda metric, last: history.process_series(proc.pid, proc.gpu_index, metric, last),
            history.capacity,
            window_s=0.0,
        )
        self.charts[plot.metric].show(chart, fetch)


__all__ = ["PLOTS", "ProcessDetailScreen"]
