"""One line about the host: CPU (with a tiny per-core summary when it fits), RAM, swap, load,
uptime. Items that do not fit the width are left out, least useful first."""

from __future__ import annotations

from gputui.core.format import NA, fmt_bytes_pair, fmt_duration, fmt_load, fmt_pct
from gputui.core.model import HostSample
from gputui.tui.widgets.bars import bar, fraction
from gputui.tui.widgets.history_plot import sparkline
from gputui.tui.widgets.line_widget import (
    BAR_CPU,
    BAR_MEM,
    DIM,
    LABEL,
    PLOT_CPU,
    VALUE,
    Line,
    LineBuilder,
    LineWidget,
    Piece,
)

MAX_CORE_CELLS = 32
"""At most this many cells of per-core summary (cores are averaged into groups beyond that)."""


def core_summary(per_core: tuple[float, ...], cells: int) -> str:
    """One block character per core, or per group of cores (their mean) when there are more."""
    if not per_core or cells <= 0:
        return ""
    n = len(per_core)
    if n <= cells:
        return sparkline(per_core, n)
    groups = []
    for i in range(cells):
        lo, hi = i * n // cells, (i + 1) * n // cells
        chunk = per_core[lo:hi] or per_core[lo : lo + 1]
        groups.append(sum(chunk) / len(chunk))
    return sparkline(groups, cells)


class HostStrip(LineWidget):
    """The host CPU/RAM/swap/load/uptime line."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.host: HostSample | None = None

    def update_host(self, host: HostSample | None) -> None:
        self.host = host
        self.rebuild()

    def build_lines(self, width: int, height: int) -> list[Line]:
        h = self.host
        b = LineBuilder().add("HOST ", LABEL)
        if h is None:
            return [b.add(NA, DIM).line(width)]
        # (priority, pieces): lower number = more important; shown in list order.
        cpu: list[Piece] = [("CPU ", LABEL), (fmt_pct(h.cpu_pct, width=4), VALUE)]
        cpu_bar = bar(None if h.cpu_pct is None else h.cpu_pct / 100, 12, BAR_CPU)
        mem_frac = fraction(h.memory_used_bytes, h.memory_total_bytes)
        ram: list[Piece] = [
            ("RAM ", LABEL),
            (fmt_bytes_pair(h.memory_used_bytes, h.memory_total_bytes), VALUE),
        ]
        ram_bar = bar(mem_frac, 10, BAR_MEM)
        swap: list[Piece] = [("swap ", LABEL)]
        if h.swap_total_bytes == 0:
            swap.append(("none", DIM))
        else:
            swap.append((fmt_bytes_pair(h.swap_used_bytes, h.swap_total_bytes), VALUE))
        load: list[Piece] = [("load ", LABEL), (fmt_load(h.load_average), VALUE)]
        uptime: list[Piece] = [("up ", LABEL), (fmt_duration(h.uptime_s), VALUE)]
        items: list[tuple[int, list[Piece]]] = [
            (0, cpu),
            (5, cpu_bar),
            (6, []),  # per-core summary, sized last
            (1, ram),
            (7, ram_bar),
            (3, swap),
            (2, load),
            (4, uptime),
        ]
        sep = 2
        room = width - b.width

        def cost(pieces: list[Piece]) -> int:
            return sum(len(t) for t, _ in pieces)

        chosen: set[int] = set()
        used = 0
        for idx in sorted(range(len(items)), key=lambda i: items[i][0]):
            pieces = items[idx][1]
            if not pieces:
                continue
            c = cost(pieces) + (sep if chosen else 0)
            if used + c <= room:
                chosen.add(idx)
                used += c
        core_cells = min(MAX_CORE_CELLS, len(h.per_core_pct), room - used - sep)
        if h.per_core_pct and core_cells >= 4:
            items[2] = (6, [(core_summary(h.per_core_pct, core_cells), PLOT_CPU)])
            chosen.add(2)
        first = True
        for idx, (_, pieces) in enumerate(items):
            if idx not in chosen:
                continue
            # A bar or the core summary sits right after its number, one space apart.
            if not first:
                b.add(" " if idx in (1, 2, 4) else "  ")
            b.extend(pieces)
            first = False
        return [b.line(width)]


__all__ = ["HostStrip", "core_summary"]
