"""One process in detail: who and what it is, and its recent GPU memory, SM, CPU and RSS history."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Label, Sparkline, Static

from gputui.format import NA, fmt_bytes, fmt_elapsed, fmt_pct, sanitize
from gputui.history import History
from gputui.model import ProcessSample, Snapshot

_TYPE_WORDS = {
    "compute": "compute",
    "graphics": "graphics",
    "compute+graphics": "compute + graphics",
}


@dataclass(frozen=True)
class _Plot:
    metric: str
    title: str
    fmt: Callable[[float | None], str]


PLOTS: tuple[_Plot, ...] = (
    _Plot("gpu_memory_bytes", "GPU memory", fmt_bytes),
    _Plot("sm_pct", "SM", fmt_pct),
    _Plot("cpu_pct", "CPU", fmt_pct),
    _Plot("host_rss_bytes", "Host RSS", fmt_bytes),
)


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
    ProcessDetailScreen .detail-plot {
        height: auto;
        margin-bottom: 1;
    }
    ProcessDetailScreen .detail-plot Sparkline {
        height: 3;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="process_detail.close"),
        Binding("q", "close", "Close", show=False, id="process_detail.close_q"),
    ]

    def __init__(
        self,
        process: ProcessSample,
        history: History,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.process = process
        self.history = history
        self.exited = False
        # When the process was last seen (snapshot time); elapsed freezes here once it exits.
        # Until the first update, assume the process was read in the newest recorded snapshot.
        latest = history.timestamps(last=1)
        self._seen_at: float | None = latest[-1] if latest else None
        self._texts: dict[str, str | Text] = {}
        self._title = Label("", id="detail-title")
        self._status = Label("", id="detail-status")
        self._info = Static("", id="detail-info")
        self._plot_labels = {p.metric: Label("", classes="detail-plot-label") for p in PLOTS}
        self._sparklines = {p.metric: Sparkline([], id=f"plot-{p.metric}") for p in PLOTS}

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="detail-body"):
            yield self._title
            yield self._status
            yield self._info
            for plot in PLOTS:
                with Vertical(classes="detail-plot"):
                    yield self._plot_labels[plot.metric]
                    yield self._sparklines[plot.metric]
        yield Footer()

    def on_mount(self) -> None:
        self._render_all()

    def on_resize(self) -> None:
        # The plots show one sample per cell, so a new width needs a new slice of history.
        for plot in PLOTS:
            self._render_plot(plot)

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
        if self.is_mounted:
            self._render_all()

    def action_close(self) -> None:
        self.dismiss(None)

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
        self._status.set_class(self.exited, "-exited")
        self._set(self._info, "info", self._info_text())
        for plot in PLOTS:
            self._render_plot(plot)

    def _info_text(self) -> Text:
        proc = self.process
        elapsed = None if self._seen_at is None else proc.running_for(self._seen_at)
        rows = (
            ("PID", str(proc.pid)),
            ("User", sanitize(proc.user or NA)),
            ("GPU", str(proc.gpu_index) + (f"  (MIG {proc.mig_uuid})" if proc.mig_uuid else "")),
            ("Type", _TYPE_WORDS.get(proc.type, str(proc.type))),
            ("Container", proc.container_id or "none"),
            ("Started", _fmt_start(proc.start_time)),
            ("Elapsed", fmt_elapsed(elapsed)),
            ("Name", sanitize(proc.name or NA)),
            ("Command", sanitize(proc.command or proc.name or NA)),
        )
        text = Text()
        for label, value in rows:
            text.append(f"{label:<11}", style="bold")
            text.append(f"{value}\n")
        text.rstrip()
        return text

    def _render_plot(self, plot: _Plot) -> None:
        sparkline = self._sparklines[plot.metric]
        width = sparkline.size.width
        series = self.history.process_series(
            self.process.pid, self.process.gpu_index, plot.metric, last=width or None
        )
        values = [v for v in series if not math.isnan(v)]
        raw = getattr(self.process, plot.metric)
        current = None if raw is None else float(raw)
        now_word = "last" if self.exited else "now"
        parts = [f"{plot.title:<11}", f"{now_word} {plot.fmt(current)}"]
        if values:
            parts.append(f"min {plot.fmt(min(values))}")
            parts.append(f"max {plot.fmt(max(values))}")
        else:
            parts.append("no history yet")
        label = Text("   ".join(parts))
        self._set(self._plot_labels[plot.metric], f"label:{plot.metric}", label)
        # A reactive: assigning an equal list does not repaint.
        sparkline.data = values


__all__ = ["PLOTS", "ProcessDetailScreen"]
