"""One GPU: bars, temperatures, clocks, links, ECC, throttle reasons and a history plot.

The panel picks its form from the height the layout gives it (the dashboard's .tcss decides):

* 1–2 lines: compact, ``0 H100 ▕████▏ 97% ▕███▏ 72.1/79.6G 612/700W 67°C`` (+ trouble flags);
* 3–9 lines: framed panel, bars with one-row sparklines, temperatures, links, ECC, throttle;
* 10+ lines: roomy, every field with its label, plus charts; or, when the dashboard asks for
  it (:attr:`GpuPanel.form` ``"charts"``: many GPUs in a big terminal), the bars in two or
  three lines and charts of utilization, memory, power and temperature, each with its scale
  and a time axis (:mod:`gputui.tui.widgets.charts`), as tall and wide as the panel.

Unknown values show ``n/a`` (or are left out of the compact forms); a lost GPU shows a calm
"LOST — fell off the bus" instead of numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from textual import events
from textual.message import Message

from gputui.core.format import (
    NA,
    cell_width,
    clip,
    fmt_bytes_pair,
    fmt_clock,
    fmt_mhz,
    fmt_pcie,
    fmt_pct,
    fmt_power_pair,
    fmt_rate,
    fmt_temp,
    pad,
    sanitize,
    short_gpu_name,
)
from gputui.core.history import History
from gputui.core.mig import instance_views
from gputui.core.model import (
    THROTTLE_TROUBLE,
    GpuInfo,
    GpuSample,
    Severity,
)
from gputui.core.vendor_terms import clock_label, link_name
from gputui.tui.widgets.bars import bar, fraction
from gputui.tui.widgets.charts import MIN_PLOT_ROWS, chart_area
from gputui.tui.widgets.gpu_compact import badge_pieces, compact_lines
from gputui.tui.widgets.gpu_mig import (
    counts_fit,
    mig_lines,
    mig_mode,
    mig_rows,
    mig_strip,
    mig_summary,
)
from gputui.tui.widgets.gpu_pieces import (
    LOST_TEXT,
    NOT_ANSWERING_TEXT,
    ROOMY_MIN_HEIGHT,
    WAITING_TEXT,
    Fault,
    board_line,
    ecc_pieces,
    fit_faults,
    fit_links,
    flow,
    gpu_charts,
    gpu_faults,
    gpu_fetch,
    link_items,
    memory_class,
    pcie_pieces,
    temperature_items,
    throttle_pieces,
)
from gputui.tui.widgets.history_plot import sparkline
from gputui.tui.widgets.line_widget import (
    BAD,
    BAR_POWER,
    BAR_UTIL,
    DIM,
    FRAME,
    FRAME_SELECTED,
    LABEL,
    LOST,
    PLOT_MEM,
    PLOT_UTIL,
    SELECTED,
    TITLE,
    VALUE,
    WARN,
    Line,
    LineBuilder,
    LineWidget,
    Piece,
    fit,
    line_width,
)


class GpuPanel(LineWidget):
    """Everything about one GPU, drawn with the Line API and repainted cell span by span."""

    class Clicked(Message):
        """The user clicked this GPU's panel."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(
        self,
        info: GpuInfo,
        history: History | None = None,
        *,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.info = info
        self.history = history
        self.sample: GpuSample | None = None
        self.selected = False
        self.last_seen: float | None = None
        self.health: Severity | None = None
        """Worst severity of this GPU's active findings (``ok``/``warn``/``fail``); None when no
        health findings are evaluated (then no badge is drawn rather than a false ``ok``)."""
        self.form = "auto"
        """``"charts"``: from 10 lines, bars and charts (the dashboard's big-terminal layout);
        ``"auto"``: the form follows the height (see the module)."""
        self.allocation: tuple[str, bool] = ("", False)
        """Who the scheduler allocated the GPU to, and whether it idles
        (:func:`gputui.core.allocation_text.gpu_tag`): drawn on the bottom border."""

    # -- data in -----------------------------------------------------------------------------------

    def update_sample(self, sample: GpuSample | None) -> None:
        self.sample = sample
        if sample is not None and not sample.lost:
            self.last_seen = sample.timestamp
        elif sample is not None and self.last_seen is None:
            self.last_seen = self._last_reading_in_history()
        self.rebuild()

    def _last_reading_in_history(self) -> float | None:
        """When the GPU was last read, from history (the panel may start after it was lost)."""
        if self.history is None:
            return None
        stamps = self.history.timestamps()
        values = self.history.gpu_series(self.info.index, "utilization_gpu_pct")
        for stamp, value in zip(reversed(stamps), reversed(values), strict=False):
            if not math.isnan(value):
                return stamp
        return None

    def _badge(self) -> list[Piece]:
        return badge_pieces(self.health)

    def set_selected(self, selected: bool) -> None:
        if selected != self.selected:
            self.selected = selected
            self.rebuild()

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.post_message(self.Clicked(self.info.index))

    @property
    def _clock_label(self) -> str:
        return clock_label(self.info.vendor)

    # -- drawing -----------------------------------------------------------------------------------

    def _series(self, metric: str, width: int) -> list[float]:
        if self.history is None or width <= 0:
            return []
        return self.history.gpu_series(self.info.index, metric, last=width)

    def _series_of(self, metric: str) -> Callable[[int], list[float]]:
        return lambda width: self._series(metric, width)

    def set_form(self, form: str) -> None:
        """``"charts"`` or ``"auto"`` (see :attr:`form`); repaints when it changes."""
        if form != self.form:
            self.form = form
            self.rebuild()

    def build_lines(self, width: int, height: int) -> list[Line]:
        if height <= 2 or width < 30:
            series = self._series_of("utilization_gpu_pct") if self.history is not None else None
            return compact_lines(
                self.info,
                self.sample,
                width,
                height,
                selected=self.selected,
                health=self.health,
                series=series,
            )
        if height < ROOMY_MIN_HEIGHT:
            return self._framed(width, height, self._normal_content(width - 4, height - 2))
        if self.form == "charts":
            return self._framed(width, height, self._chart_content(width - 4, height - 2))
        return self._framed(width, height, self._roomy_content(width - 4, height - 2))

    # framed ---------------------------------------------------------------------------------------

    def _framed(self, width: int, height: int, content: list[Line]) -> list[Line]:
        frame = FRAME_SELECTED if self.selected else FRAME
        cw = width - 4
        lines = [self._top(width, frame)]
        for i in range(height - 2):
            row = content[i] if i < len(content) else []
            lines.append([("│ ", frame), *fit(row, cw), (" │", frame)])
        lines.append(self._bottom(width, frame))
        return lines

    def _top(self, width: int, frame: str) -> Line:
        info, s = self.info, self.sample
        right: list[Piece] = []
        if s is not None and s.lost:
            right = [("LOST", LOST)]
        elif s is not None and s.error is not None:
            right = [("NO ANSWER", BAD)]
        elif s is not None:
            if s.clock_sm_mhz is not None or s.clock_memory_mhz is not None:
                right = [
                    (f"{self._clock_label} ", LABEL),
                    (fmt_mhz(s.clock_sm_mhz, unit=False), VALUE),
                    (" MEM ", LABEL),
                    (fmt_mhz(s.clock_memory_mhz, unit=False), VALUE),
                    ("MHz", LABEL),
                ]
            if s.pstate is not None:
                right += [(" " if right else "", ""), (f"P{s.pstate}", VALUE)]
        right_w = line_width(right)
        name = sanitize(info.name)
        room = width - 4 - len(f" {info.index} ") - 1 - (right_w + 2 if right_w else 0)
        if cell_width(name) > room:
            name = clip(sanitize(short_gpu_name(info.name)), max(room, 0))
        b = LineBuilder().add("╭─", frame)
        b.add(f" {info.index} ", SELECTED if self.selected else TITLE)
        b.add(name, TITLE).add(" ")
        fill = width - b.width - (right_w + 2 if right_w else 0) - 2
        b.add("─" * max(fill, 0), frame)
        if right_w:
            b.add(" ").extend(right).add(" ")
        b.add("─╮", frame)
        return fit(b.pieces, width)

    def _bottom(self, width: int, frame: str) -> Line:
        """Badge, faults and (room permitting) ECC state, other clock reasons and MIG: a fault is
        shortened or counted in "+N more (h)", never dropped."""
        s = self.sample
        badge = self._badge()
        head = [badge] if badge else []
        faults: list[Fault] = []
        extras: list[list[Piece]] = []
        if s is not None and not s.lost and s.error is None:
            faults = gpu_faults(s, self.info)
            ecc = ecc_pieces(s, self.info)
            if not any(cls == BAD for _, cls in ecc):
                extras.append(ecc)
            calm = frozenset(r for r in s.throttle_reasons or () if r not in THROTTLE_TROUBLE)
            if calm:
                extras.append(throttle_pieces(calm))
        if self.info.mig_enabled and self.info.mig_devices:
            extras.append([(mig_summary(self.info.mig_devices), VALUE)])
        tag, idle = self.allocation
        if tag:  # who holds it comes before the details
            extras.insert(0, [(sanitize(tag), WARN if idle else LABEL)])
        inner = (
            fit_faults(head, faults, extras, width - 6, " · ") if head or faults or extras else []
        )
        b = LineBuilder().add("╰─", frame)
        if inner:
            b.add(" ").extend(inner).add(" ")
        b.add("─" * max(width - b.width - 1, 0), frame).add("╯", frame)
        return fit(b.pieces, width)

    def _status_content(self) -> list[Line] | None:
        """Instead of numbers: waiting, lost, or not answering (never rows of n/a)."""
        s = self.sample
        if s is None:
            return [[(WAITING_TEXT, DIM)]]
        if s.lost or s.error is not None:
            lines: list[Line] = [[(LOST_TEXT, LOST)] if s.lost else [(NOT_ANSWERING_TEXT, BAD)]]
            if s.error:
                lines.append([(sanitize(s.error), DIM)])
            if self.last_seen is not None:
                lines.append([("last reading ", LABEL), (fmt_clock(self.last_seen), VALUE)])
            return lines
        return None

    def _normal_content(self, cw: int, rows: int) -> list[Line]:
        status = self._status_content()
        if status is not None:
            return status
        s = self.sample
        assert s is not None
        vw = 11
        rest = cw - 4 - vw - 1
        right_w = max(22, rest - 30)
        bar_w = rest - right_w
        if bar_w < 8:
            bar_w, right_w = max(rest - 10, 0), min(rest, 10)
        l1, l2, l3 = (b.add(" ") for b in self._bars(s, bar_w, vw))
        if self._mig_rows(s):
            # No utilization to plot: the instances instead, across the whole line.
            l1 = LineBuilder().add("MIG".ljust(4), LABEL)
            l1.extend(mig_strip(instance_views(self.info, s), cw - 4))
        else:
            l1.add(sparkline(self._series("utilization_gpu_pct", right_w), right_w), PLOT_UTIL)
        l2.add(sparkline(self._series("memory_used_pct", right_w), right_w), PLOT_MEM)
        l3.extend(flow(temperature_items(s, self.info, short=True), right_w, " "))
        l4 = fit_links(s, self.info, cw)
        lines = [l1.pieces, l2.pieces, l3.pieces, l4]
        if rows > 4:
            lines.append(flow(self._extra_items(s), cw))
        return lines

    def _mig_rows(self, s: GpuSample) -> bool:
        """In MIG mode the GPU reports no utilization: the panel shows its instances instead."""
        return mig_mode(self.info) and s.utilization_gpu_pct is None

    def _bars(self, s: GpuSample, bar_w: int, value_w: int) -> list[LineBuilder]:
        """GPU, MEM and PWR: the label, a bar ``bar_w`` cells wide (none under 3) and the value
        in ``value_w`` cells; the layouts add what follows. In MIG mode, the instances' profiles
        instead of the GPU's utilization (which the driver does not report)."""
        info = self.info

        def metric(
            label: str, frac: float | None, cls: str, value: str, known: bool
        ) -> LineBuilder:
            b = LineBuilder().add(label.ljust(4), LABEL)
            if bar_w >= 3:
                b.extend(bar(frac, bar_w, cls))
            return b.add(f" {value}".ljust(value_w), VALUE if known else DIM)

        util = s.utilization_gpu_pct
        total = s.memory_total_bytes or info.memory_total_bytes
        mem_frac = fraction(s.memory_used_bytes, total)
        limit = s.power_limit_w or info.power_default_limit_w
        gpu = metric(
            "GPU", None if util is None else util / 100, BAR_UTIL, fmt_pct(util), util is not None
        )
        if self._mig_rows(s):
            room = max(bar_w, 0) * (bar_w >= 3) + value_w
            gpu = LineBuilder().add("MIG".ljust(4), LABEL)
            gpu.add(pad(counts_fit(info.mig_devices, room - 1), room), VALUE)
        return [
            gpu,
            metric(
                "MEM",
                mem_frac,
                memory_class(mem_frac),
                fmt_bytes_pair(s.memory_used_bytes, total),
                s.memory_used_bytes is not None,
            ),
            metric(
                "PWR",
                fraction(s.power_w, limit),
                BAR_POWER,
                fmt_power_pair(s.power_w, limit),
                s.power_w is not None,
            ),
        ]

    def _chart_content(self, cw: int, rows: int) -> list[Line]:
        """The bars in two lines (three when narrow), then the charts below them."""
        status = self._status_content()
        if status is not None:
            return status
        s = self.sample
        assert s is not None
        vw = 11
        three = cw >= 3 * (4 + 12 + 1 + vw) + 4
        per_line = 3 if three else 2
        metric_w = (cw - 2 * (per_line - 1)) // per_line
        bar_w = metric_w - 4 - 1 - vw
        metrics = [b.line(metric_w) for b in self._bars(s, bar_w, vw + 1)]
        temps = temperature_items(s, self.info, short=True)
        if temps:
            temps[0] = [("temp ", LABEL), *temps[0]]
        links = link_items(s, self.info)
        lines: list[Line] = []
        if three:
            lines.append([*metrics[0], ("  ", ""), *metrics[1], ("  ", ""), *metrics[2]])
            lines.append(flow([*temps, *links, *self._extra_items(s)], cw, "  "))
        else:
            lines.append([*metrics[0], ("  ", ""), *metrics[1]])
            lines.append([*metrics[2], ("  ", ""), *flow(temps, cw - metric_w - 2, " ")])
            lines.append(flow([*links, *self._extra_items(s)], cw))
        if self._mig_rows(s):
            # The instances where the utilization chart was; the charts get what is left (at
            # least a chart's height when the instances fit in fewer rows side by side).
            views = instance_views(self.info, s)
            budget = rows - len(lines) - (MIN_PLOT_ROWS + 2)
            lines.extend(mig_rows(views, cw, budget))
        lines.extend(
            chart_area(
                gpu_charts(s, self.info),
                cw,
                rows - len(lines),
                gpu_fetch(self.history, self.info.index),
            )
        )
        return lines

    def _extra_items(self, s: GpuSample) -> list[list[Piece]]:
        items: list[list[Piece]] = []
        if s.encoder_pct is not None or s.decoder_pct is not None:
            items.append(
                [
                    ("enc ", LABEL),
                    (fmt_pct(s.encoder_pct), VALUE),
                    (" dec ", LABEL),
                    (fmt_pct(s.decoder_pct), VALUE),
                ]
            )
        return items

    # roomy ----------------------------------------------------------------------------------------

    def _roomy_content(self, cw: int, rows: int) -> list[Line]:
        status = self._status_content()
        if status is not None:
            return status
        s, info = self.sample, self.info
        assert s is not None
        two_cols = cw >= 100
        colw = (cw - 3) // 2 if two_cols else cw
        lw = 10
        vw = 24
        bar_w = max(min(colw - lw - vw, 50), 0)

        def labelled(label: str, pieces: Sequence[Piece]) -> Line:
            return LineBuilder().add(label.ljust(lw), LABEL).extend(pieces).line(colw)

        def metric(label: str, frac: float | None, cls: str, value: str, known: bool) -> Line:
            pieces: list[Piece] = []
            if bar_w >= 5:
                pieces += bar(frac, bar_w, cls)
            pieces.append((f" {value}", VALUE if known else DIM))
            return labelled(label, pieces)

        util = s.utilization_gpu_pct
        total = s.memory_total_bytes or info.memory_total_bytes
        mem_frac = fraction(s.memory_used_bytes, total)
        mem_text = fmt_bytes_pair(s.memory_used_bytes, total)
        if mem_frac is not None:
            mem_text += f" ({mem_frac * 100:.0f}%)"
        limit = s.power_limit_w or info.power_default_limit_w
        clocks: list[Piece] = [
            (f"{self._clock_label} ", LABEL),
            (fmt_mhz(s.clock_sm_mhz, unit=False), VALUE),
            (f"/{fmt_mhz(info.sm_clock_max_mhz)}", LABEL),
            ("  mem ", LABEL),
            (fmt_mhz(s.clock_memory_mhz, unit=False), VALUE),
            (f"/{fmt_mhz(info.memory_clock_max_mhz)}", LABEL),
            ("  P", LABEL),
            (str(s.pstate) if s.pstate is not None else NA, VALUE),
        ]
        pcie: list[Piece] = [*pcie_pieces(s, self.info)]
        if info.pcie_max_gen is not None or info.pcie_max_width is not None:
            pcie.append((f" (max {fmt_pcie(info.pcie_max_gen, info.pcie_max_width)})", LABEL))
        pcie += [
            ("  ↓", LABEL),
            (fmt_rate(s.pcie_rx_bytes_per_s), VALUE),
            (" ↑", LABEL),
            (fmt_rate(s.pcie_tx_bytes_per_s), VALUE),
        ]
        nvlink: list[Piece]
        if s.nvlink_rx_bytes_per_s is None and s.nvlink_tx_bytes_per_s is None:
            nvlink = [(NA, DIM)]
        else:
            nvlink = [
                ("↓", LABEL),
                (fmt_rate(s.nvlink_rx_bytes_per_s), VALUE),
                (" ↑", LABEL),
                (fmt_rate(s.nvlink_tx_bytes_per_s), VALUE),
            ]
        temps = flow(temperature_items(s, info, short=False), colw - lw)
        if info.temperature_slowdown_c is not None:
            extra = f"  slowdown {fmt_temp(info.temperature_slowdown_c)}"
            if line_width(temps) + len(extra) <= colw - lw:
                temps = [*temps, (extra, LABEL)]
        ecc = ecc_pieces(s, info, long=True)[1:]
        gpu = metric(
            "GPU util",
            None if util is None else util / 100,
            BAR_UTIL,
            fmt_pct(util),
            util is not None,
        )
        if self._mig_rows(s):
            counts = counts_fit(info.mig_devices, colw - lw)
            note = "(no GPU utilization)"
            gpu = labelled("MIG", flow([[(counts, VALUE)], [(note, LABEL)]], colw - lw))
        metrics: list[Line] = [
            gpu,
            metric(
                "Memory",
                mem_frac,
                memory_class(mem_frac),
                mem_text,
                s.memory_used_bytes is not None,
            ),
            metric(
                "Power",
                fraction(s.power_w, limit),
                BAR_POWER,
                fmt_power_pair(s.power_w, limit),
                s.power_w is not None,
            ),
            labelled("Temp", temps),
            labelled("Clocks", clocks),
            labelled("PCIe", pcie),
            labelled(link_name(info.vendor), nvlink),
            labelled("ECC", ecc),
            labelled("Throttle", throttle_pieces(s.throttle_reasons, long=True)),
        ]
        if s.performance is not None:  # why it is as fast as it is (health/performance.py)
            metrics.append(labelled("Speed", [(sanitize(s.performance.text), VALUE)]))
        video = self._extra_items(s)
        if video:
            metrics.append(labelled("Video", video[0]))
        if two_cols:
            paired: list[Line] = []
            for i in range(0, len(metrics), 2):
                left = fit(metrics[i], colw)
                right = metrics[i + 1] if i + 1 < len(metrics) else []
                paired.append([*left, ("   ", ""), *right])
            metrics = paired
        lines: list[Line] = [board_line(self.info, cw), *metrics]
        lines.extend(mig_lines(self.info, s, cw))
        chart_rows = rows - len(lines) - 1
        if chart_rows >= 4:
            lines.append([])
            lines.extend(
                chart_area(
                    gpu_charts(s, self.info),
                    cw,
                    chart_rows,
                    gpu_fetch(self.history, self.info.index),
                )
            )
        return lines


__all__ = [
    "LOST_TEXT",
    "WAITING_TEXT",
    "GpuPanel",
]
