"""A GPU in one row (a small terminal): ``0 H100 ▕████▏ 97% ▕███▏ 72.1/79.6G 612/700W 67°C``,
then trouble flags or a sparkline, and the health badge.

What gives way when a row is short, first to last: the sparkline, the badge's word (``✖ fail``
becomes ``✖``), the power, the faults' long forms (``1 link down!`` becomes ``1↓link!``), then
faults (counted in ``+N more (h)``). The temperature never does: on a failing GPU, above all a
hot one, it is the number to watch. A GPU in MIG mode reports no utilization: its row says
``MIG`` and its instances' profiles where the utilization bar was.
"""

from __future__ import annotations

from collections.abc import Callable

from gputui.core.format import (
    clip,
    fmt_bytes_pair,
    fmt_mhz,
    fmt_pct,
    fmt_power_pair,
    fmt_temp,
    pad,
    sanitize,
    short_gpu_name,
)
from gputui.core.model import GpuInfo, GpuSample, Severity
from gputui.core.vendor_terms import clock_label
from gputui.health.rollup import BADGE_SYMBOLS, badge_text
from gputui.tui.widgets.bars import bar, fraction
from gputui.tui.widgets.gpu_mig import mig_mode, mig_summary_fit
from gputui.tui.widgets.gpu_pieces import (
    BADGE_CLASS,
    COMPACT_FIXED,
    COMPACT_TAIL,
    LOST_TEXT,
    NOT_ANSWERING_TEXT,
    WAITING_TEXT,
    Fault,
    ecc_pieces,
    fit_faults,
    flow,
    gpu_faults,
    memory_class,
    pcie_pieces,
    temperature_class,
    throttle_pieces,
)
from gputui.tui.widgets.history_plot import sparkline
from gputui.tui.widgets.line_widget import (
    BAR_UTIL,
    DIM,
    LABEL,
    LOST,
    OK,
    PLOT_UTIL,
    SELECTED,
    TITLE,
    VALUE,
    Line,
    LineBuilder,
    Piece,
    line_width,
)

Series = Callable[[int], list[float]]
"""``series(width)``: the last ``width`` utilization readings (for the sparkline)."""


def badge_pieces(health: Severity | None, *, short: bool = False) -> list[Piece]:
    """``✖ fail`` (or ``✖`` when ``short``) in the severity's class; nothing when health is not
    judged."""
    if health is None:
        return []
    text = BADGE_SYMBOLS.get(health, "?") if short else badge_text(health)
    return [(text, BADGE_CLASS.get(health, OK))]


def compact_lines(
    info: GpuInfo,
    s: GpuSample | None,
    width: int,
    height: int,
    *,
    selected: bool = False,
    health: Severity | None = None,
    series: Series | None = None,
) -> list[Line]:
    """The row (and with ``height`` 2 a line of details under it)."""
    b = LineBuilder()
    b.add(f"{info.index}", SELECTED if selected else TITLE)
    b.add(" ")
    b.add(pad(clip(sanitize(short_gpu_name(info.name)), 8), 8), VALUE)
    if s is None:
        return [b.add(WAITING_TEXT, DIM).line(width)]
    if s.lost or s.error is not None:
        b.add(LOST_TEXT if s.lost else f"{NOT_ANSWERING_TEXT}: {sanitize(s.error or '')}", LOST)
        badge = badge_pieces(health)
        if badge:
            b.pad(width - line_width(badge) - 1).extend(badge)
        return [b.line(width)]
    _meters(b, info, s, width)
    power: list[Piece] = (
        [(fmt_power_pair(s.power_w, s.power_limit_w).rjust(9), VALUE)]
        if s.power_w is not None
        else [(" " * 9, "")]
    )
    faults = gpu_faults(s, info)
    temp: list[Piece] = []
    if s.temperature_gpu_c is not None:
        # The temperature column shows the main sensor's trouble itself (marked ! for NO_COLOR).
        main = f"{fmt_temp(s.temperature_gpu_c)}!"
        hot = any(f.full[0][0] == main for f in faults)
        faults = [f for f in faults if f.full[0][0] != main]
        cls = temperature_class(s.temperature_gpu_c, info.temperature_slowdown_c)
        temp = [(fmt_temp(s.temperature_gpu_c).rjust(5) + ("!" if hot else ""), cls)]
    trouble = health is not None and health != "ok"
    _tail(b, width, power, temp, faults, health if trouble else None)
    if not (trouble or faults):
        ok_badge = badge_pieces(health)
        spark_w = width - b.width - 2 - (line_width(ok_badge) + 1 if ok_badge else 0)
        if spark_w >= 6 and series is not None:
            b.add("  ").add(sparkline(series(spark_w), spark_w), PLOT_UTIL)
        if ok_badge and b.width + line_width(ok_badge) + 1 <= width:
            b.pad(width - line_width(ok_badge)).extend(ok_badge)
    lines = [b.line(width)]
    if height >= 2:
        lines.append(_detail(info, s, width))
    return lines


def _meters(b: LineBuilder, info: GpuInfo, s: GpuSample, width: int) -> None:
    """Utilization (or, in MIG mode, the instances' profiles) and memory, each with a bar whose
    width depends on the row's width only, so every GPU's row lines up."""
    util = s.utilization_gpu_pct
    total = s.memory_total_bytes or info.memory_total_bytes
    mem_frac = fraction(s.memory_used_bytes, total)
    room = width - b.width - COMPACT_FIXED - COMPACT_TAIL
    util_bar_w = min(20, room // 2 + 1) if room >= 16 else 0
    mem_bar_w = min(18, room - util_bar_w) if util_bar_w else 0
    if mig_mode(info):
        slot = util_bar_w + 5
        pct = f" {fmt_pct(util)}" if util is not None else ""
        text = mig_summary_fit(info.mig_devices, slot - len(pct))
        b.add(pad(text + pct, slot), VALUE)
    else:
        if util_bar_w:
            b.extend(bar(None if util is None else util / 100, util_bar_w, BAR_UTIL))
        b.add(fmt_pct(util, width=5), VALUE if util is not None else DIM)
    b.add(" ")
    if mem_bar_w:
        b.extend(bar(mem_frac, mem_bar_w, memory_class(mem_frac)))
    b.add(
        f" {fmt_bytes_pair(s.memory_used_bytes, total)}".ljust(12),
        VALUE if s.memory_used_bytes is not None else DIM,
    )


def _tail(
    b: LineBuilder,
    width: int,
    power: list[Piece],
    temp: list[Piece],
    faults: list[Fault],
    trouble: Severity | None,
) -> None:
    """Power, temperature, then the badge and the faults: the first arrangement in which every
    fault fits, in its full form and then its short one, wins (the badge's word goes before the
    power); else, without power and with the badge's symbol alone, the faults that do not fit
    are counted."""
    badges = (False, True) if trouble else (False,)
    arrangements = [(keep_power, short) for keep_power in (True, False) for short in badges]
    chosen = arrangements[-1]
    for form in ("full", "short"):
        flags = [list(f.full if form == "full" else f.short) for f in faults]
        fitting = [
            (keep_power, short)
            for keep_power, short in arrangements
            if b.width
            + sum(line_width(item) + 1 for item in ([power, temp] if keep_power else [temp]))
            + sum(line_width(f) + 1 for f in [badge_pieces(trouble, short=short), *flags] if f)
            <= width
        ]
        if fitting:
            chosen = fitting[0]
            break
    keep_power, short = chosen
    for item in [power, temp] if keep_power else [temp]:
        if item:
            b.add(" ").extend(item)
    head = badge_pieces(trouble, short=short)
    if head or faults:
        b.add(" ")
        b.extend(fit_faults([head] if head else [], faults, [], width - b.width, " "))


def _detail(info: GpuInfo, s: GpuSample, width: int) -> Line:
    items: list[list[Piece]] = [
        [(f"{clock_label(info.vendor)} ", LABEL), (fmt_mhz(s.clock_sm_mhz), VALUE)],
        [("P", LABEL), (str(s.pstate) if s.pstate is not None else "n/a", VALUE)],
        [("PCIe ", LABEL), *pcie_pieces(s, info)],
        ecc_pieces(s, info),
        throttle_pieces(s.throttle_reasons),
    ]
    return LineBuilder().add("  ").extend(flow(items, width - 2)).line(width)


__all__ = ["Series", "badge_pieces", "compact_lines"]
