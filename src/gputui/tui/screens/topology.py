"""The topology screen (key ``t``): how the GPUs are wired, and whether every link is up and busy.

Top to bottom, in one vertical scroll:

* the GPU x GPU matrix in ``nvidia-smi topo -m`` notation (``X``, ``NV18``, ``PIX`` … ``SYS``;
  ``XGMI``/``PCIE`` on AMD) with CPU affinity and NUMA node columns, cells coloured by speed,
  then a legend of the codes present (one line each);
* one row per GPU: PCIe current/max (highlighted when trained below max), P2P read/write to its
  peers, links up, aggregate NVLink/XGMI TX/RX with a history plot (from the app's History),
  summed link error counters;
* with a GPU selected (``0``-``9``; ``a`` for all): its path, detail and P2P support to each peer;
* the links table: per link state, version/speed, remote end, TX/RX with a small per-link history
  (a ring buffer kept here, fed by :meth:`TopologyScreen.update_snapshot` while the screen is
  open), replay/recovery/CRC counters. All GPUs' links, or only the selected GPU's.

The matrix and legend are built once (the wiring is static); the GPU rows and the links table are
:class:`LineWidget` s rebuilt on every reading, so only the cells that changed (rates, state,
counters, PCIe generation) are sent to the terminal.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Iterable, Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.screen import Screen
from textual.widgets import Static

from gputui.core import topology as topo
from gputui.core.format import NA, fmt_c2c, fmt_pcie, fmt_rate, pad, sanitize, short_gpu_name
from gputui.core.history import History
from gputui.core.model import GpuInfo, GpuSample, NodeInfo, Snapshot, Topology
from gputui.tui.widgets.footer import KeyFooter
from gputui.tui.widgets.history_plot import sparkline
from gputui.tui.widgets.line_widget import (
    ACCENT,
    BAD,
    DIM,
    FAST,
    LABEL,
    OK,
    SELECTED,
    SLOW,
    TITLE,
    VALUE,
    WARN,
    Line,
    LineBuilder,
    LineWidget,
    MeterPalette,
    line_width,
)

try:  # as on the dashboard: partial repaints cropped on both sides
    from gputui.tui import span_compositor
except ImportError:  # pragma: no cover
    span_compositor = None  # type: ignore[assignment]

LINK_HISTORY = 12
"""Readings kept per link for its history plot (the screen's own ring buffer)."""
GPU_HISTORY = 12
"""Cells of the per-GPU aggregate traffic plot (from the app's History)."""

SINGLE_GPU_TEXT = "1 GPU: no GPU-to-GPU paths."
NO_TOPOLOGY_TEXT = "No topology: the backend did not report how the GPUs are connected."
NO_LINKS_TEXT = "No NVLink or XGMI links: the GPUs reach each other over PCIe."
LINKS_UNREAD_TEXT = "Link state not reported by the driver (unsupported on this GPU)."
WAITING_TEXT = "waiting for first reading…"

_LONG_BUS = re.compile(r"\b0000([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])")
_PCIE_CODE_CLASS = {"PIX": OK, "PXB": OK, "PHB": LABEL, "NODE": LABEL, "SYS": SLOW}


def cell_class(code: str, kind: str) -> str:
    """Colour by speed: NVLink/XGMI fast, PIX/PXB ok, PHB/NODE dim, SYS (and AMD PCIE) slow."""
    if kind == "self":
        return DIM
    if kind in ("nvlink", "xgmi"):
        return FAST
    if kind == "pcie":
        return _PCIE_CODE_CLASS.get(code.upper(), SLOW)
    return DIM


def _gpu_ids(gpus: Iterable[object]) -> list[int]:
    return [g if isinstance(g, int) else int(g.index) for g in gpus]  # type: ignore[attr-defined]


def _ranges(indices: Sequence[int]) -> str:
    """``[1, 2, 3, 5]`` -> ``1-3,5``."""
    out: list[str] = []
    run: list[int] = []
    for i in sorted(indices):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
        run = [i]
    if run:
        out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ",".join(out)


def _p2p_code(read: bool | None, write: bool | None) -> str:
    if read is None and write is None:
        return "?"
    return ("r" if read else "") + ("w" if write else "") or "none"


def p2p_pieces(topology: Topology, gpu: int, peers: Sequence[int]) -> list[tuple[str, str]]:
    """P2P support to every peer, grouped: ``rw 1-7`` or ``none 1`` or ``rw 1-3 · r 4``."""
    groups: dict[str, list[int]] = {}
    for peer in peers:
        path = topology.path(gpu, peer)
        code = "?" if path is None else _p2p_code(path.p2p_read, path.p2p_write)
        groups.setdefault(code, []).append(peer)
    pieces: list[tuple[str, str]] = []
    for code in ("rw", "r", "w", "none", "?"):
        if code not in groups:
            continue
        if pieces:
            pieces.append((" · ", DIM))
        cls = {"rw": OK, "r": WARN, "w": WARN, "none": SLOW, "?": DIM}[code]
        pieces.append((f"{code} {_ranges(groups[code])}", cls))
    return pieces or [(NA, DIM)]


def pcie_pieces(sample: GpuSample | None, info: GpuInfo | None) -> list[tuple[str, str]]:
    """``5×16 / 5×16``; a link trained below its maximum is highlighted (dim when the GPU idles:
    idle GPUs lower their generation to save power). NVLink-C2C host links show as such."""
    if info is not None and (c2c := fmt_c2c(info.host_link, info.host_link_bandwidth_gbs)):
        return [(c2c, VALUE)]
    max_gen = info.pcie_max_gen if info is not None else None
    max_width = info.pcie_max_width if info is not None else None
    max_text = fmt_pcie(max_gen, max_width)
    if sample is None or sample.lost:
        return [("?", DIM), (f" / {max_text}", LABEL)]
    current = fmt_pcie(sample.pcie_gen, sample.pcie_width)
    gen_low = max_gen is not None and sample.pcie_gen is not None and sample.pcie_gen < max_gen
    width_low = (
        max_width is not None and sample.pcie_width is not None and sample.pcie_width < max_width
    )
    if current == NA:
        return [(NA, DIM), (f" / {max_text}", LABEL)]
    if not (gen_low or width_low):
        return [(current, VALUE), (f" / {max_text}", LABEL)]
    idle = bool(sample.throttle_reasons and "gpu_idle" in sample.throttle_reasons)
    if idle and not width_low:
        return [(current, DIM), (f" / {max_text}", LABEL), (" idle", DIM)]
    return [(current, WARN), (f" / {max_text}", LABEL), (" below max!", WARN)]


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)


def _count_class(value: int | None) -> str:
    if value is None:
        return DIM
    return WARN if value > 0 else LABEL


def _peak(series: Iterable[Iterable[float]]) -> float:
    """The largest known value of several series (at least 1, so a flat zero stays low)."""
    return max((v for values in series for v in values if not math.isnan(v)), default=1.0) or 1.0


def _speed_text(version: int | None, speed_gbps: float | None, kind: str) -> str:
    name = "NVLink" if kind == "nvlink" else "XGMI" if kind == "xgmi" else kind
    ver = f"{name}{version}" if version is not None else name
    speed = "" if speed_gbps is None else " " + fmt_rate(speed_gbps * 1e9 / 8)
    return ver + speed


class LinesView(LineWidget):
    """Shows the lines it is given, sized to them; only changed cells repaint."""

    DEFAULT_CSS = """
    LinesView {
        width: auto;
        height: auto;
        min-width: 100%;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: list[Line] = []
        self._dims = (0, 0)

    def set_lines(self, lines: list[Line]) -> None:
        self.lines = lines
        dims = (max((line_width(line) for line in lines), default=0), len(lines))
        if self.display != bool(lines):
            self.display = bool(lines)  # an empty section takes no room (nor its margin)
        if dims != self._dims:
            self._dims = dims
            self.refresh(layout=True)  # the new size rebuilds the content
            return
        self.rebuild()

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return self._dims[0]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return self._dims[1]

    def build_lines(self, width: int, height: int) -> Sequence[Line]:
        return self.lines


class TopologyScreen(Screen[None]):
    """The node's wiring and its links, live. Feed it with :meth:`update_snapshot`."""

    DEFAULT_CSS = """
    TopologyScreen {
        layout: vertical;
    }
    TopologyScreen #topo-title {
        height: 1;
        background: $panel;
        padding: 0 1;
        text-style: bold;
    }
    TopologyScreen #topo-body {
        height: 1fr;
        overflow-x: auto;
        padding: 0 1;
    }
    TopologyScreen #topo-body > LinesView {
        margin-bottom: 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        *(
            Binding(str(i), f"select_gpu({i})", f"GPU {i}", show=False, id=f"topology.gpu.{i}")
            for i in range(10)
        ),
        Binding("a", "select_gpu(None)", "All GPUs", id="topology.gpu.all"),
        Binding("escape,q,t", "close", "Close", id="topology.close"),
    ]

    def __init__(self, node: NodeInfo, history: History | None = None) -> None:
        super().__init__(id="topology")
        if span_compositor is not None:
            span_compositor.install(self)
        self.node = node
        self.history = history
        self.topology = node.topology
        self.gpu_ids = [info.index for info in node.gpus]
        self.matrix = (
            topo.build_matrix(node) if self.topology is not None and len(self.gpu_ids) > 1 else None
        )
        self.selected: int | None = None
        self._composed = False
        self.snapshot: Snapshot | None = None
        self._last_recorded: float | None = None
        self.link_history: dict[tuple[int, int], deque[float]] = {}
        """(GPU, link) -> recent TX+RX bytes/s, oldest first (NaN when unknown)."""
        self.title_line = Static(self._title(), id="topo-title", markup=False)
        self.matrix_view = LinesView(id="topo-matrix")
        self.gpu_view = LinesView(id="topo-gpus")
        self.peer_view = LinesView(id="topo-peers")
        self.links_view = LinesView(id="topo-links")
        self.body = VerticalScroll(
            self.matrix_view, self.gpu_view, self.peer_view, self.links_view, id="topo-body"
        )

    def _title(self) -> str:
        n = len(self.gpu_ids)
        kinds = sorted({link.kind for link in self.topology.links}) if self.topology else []
        via = " · ".join("NVLink" if k == "nvlink" else k.upper() for k in kinds) or "PCIe"
        return f"Topology — {sanitize(self.node.hostname)} · {n} GPU{'s' if n != 1 else ''} · {via}"

    def compose(self) -> ComposeResult:
        yield MeterPalette()
        yield self.title_line
        yield self.body
        yield KeyFooter()

    def on_mount(self) -> None:
        self._composed = True
        self.matrix_view.set_lines(self.matrix_lines())
        self.body.focus()
        self._refresh_live(self.snapshot)

    # -- data in -----------------------------------------------------------------------------------

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """A new reading: record link traffic, repaint the live cells (rates, state, counters)."""
        self._refresh_live(snapshot)

    def _refresh_live(self, snapshot: Snapshot | None) -> None:
        if snapshot is not None:
            self.snapshot = snapshot
            self._record(snapshot)
        if not self._composed:
            return
        with self.app.batch_update():
            self.gpu_view.set_lines(self.gpu_lines())
            self.peer_view.set_lines(self.peer_lines())
            self.links_view.set_lines(self.link_lines())

    def _record(self, snapshot: Snapshot) -> None:
        if self._last_recorded is not None and snapshot.timestamp <= self._last_recorded:
            return
        self._last_recorded = snapshot.timestamp
        for sample in snapshot.gpus:
            for row in self._rows(sample):
                rx, tx = row.rx_bytes_per_s, row.tx_bytes_per_s
                value = math.nan if rx is None and tx is None else (rx or 0.0) + (tx or 0.0)
                key = (row.gpu_index, row.link)
                series = self.link_history.get(key)
                if series is None:
                    series = self.link_history[key] = deque(maxlen=LINK_HISTORY)
                series.append(value)

    def _rows(self, sample: GpuSample | None) -> list[topo.LinkRow]:
        if sample is None or self.topology is None:
            return []
        return list(topo.link_rows(self.node, sample))

    def _sample(self, index: int) -> GpuSample | None:
        return self.snapshot.sample(index) if self.snapshot is not None else None

    # -- content -----------------------------------------------------------------------------------

    def matrix_lines(self) -> list[Line]:
        """The matrix, CPU affinity and NUMA columns, and the legend (static)."""
        topology = self.topology
        if topology is None:
            return [[(NO_TOPOLOGY_TEXT, VALUE)]]
        locality = {loc.gpu_index: loc for loc in topology.locality}
        matrix = self.matrix
        if matrix is None:  # one GPU
            lines: list[Line] = [[(SINGLE_GPU_TEXT, VALUE)]]
            for index in self.gpu_ids:
                loc = locality.get(index)
                single = LineBuilder().add(f"GPU{index}  ", TITLE).add("CPU affinity ", LABEL)
                single.add(sanitize(loc.cpu_affinity or NA) if loc else NA, VALUE)
                single.add("   NUMA node ", LABEL)
                numa = loc.numa_node if loc is not None else None
                single.add(NA if numa is None else str(numa), VALUE)
                lines.append(single.line())
            return lines
        gpus = _gpu_ids(matrix.gpus)
        codes = {(a, b): matrix.cell(a, b) for a in gpus for b in gpus}
        col = max([len(f"GPU{i}") for i in gpus] + [len(c.code) for c in codes.values()]) + 2
        aff_width = max(
            [len("CPU Affinity")] + [len(loc.cpu_affinity or NA) for loc in locality.values()]
        )
        head = LineBuilder().add(" " * 6)
        for b in gpus:
            head.add(f"GPU{b}".center(col), TITLE)
        head.add("  ").add(f"{'CPU Affinity':<{aff_width}}", TITLE).add("  NUMA", TITLE)
        lines = [head.line()]
        for a in gpus:
            row = LineBuilder().add(f"{f'GPU{a}':<6}", TITLE)
            for b in gpus:
                cell = codes[(a, b)]
                left = (col - len(cell.code)) // 2  # centred, as the GPU headers are
                row.add(" " * left).add(cell.code, cell_class(cell.code, cell.kind))
                row.add(" " * (col - left - len(cell.code)))
            loc = locality.get(a)
            row.add("  ").add(pad(sanitize((loc.cpu_affinity if loc else None) or NA), aff_width))
            numa = loc.numa_node if loc is not None else None
            row.add(f"  {NA if numa is None else numa:>4}")
            lines.append(row.line())
        lines.append([])
        legend = list(topo.legend_for(matrix))
        code_width = max((len(code) for code, _ in legend), default=0)
        kind_of = {topo.legend_key(c.code): c for c in codes.values()}
        for code, meaning in legend:
            legend_cell = kind_of.get(code)
            cls = (
                cell_class(legend_cell.code, legend_cell.kind) if legend_cell is not None else LABEL
            )
            lines.append(
                LineBuilder()
                .add(f"{code:>{code_width}}", cls)
                .add(" = ", LABEL)
                .add(meaning, LABEL)
                .line()
            )
        return lines

    def gpu_lines(self) -> list[Line]:
        """Per GPU: PCIe, P2P, links up, aggregate traffic and its history, link errors."""
        topology = self.topology
        many = len(self.gpu_ids) > 1
        has_links = bool(topology and topology.links)
        head = LineBuilder().add(f"{'GPU':<4}{'Name':<10}{'PCIe now / max':<23}", TITLE)
        if many:
            head.add(f"{'P2P read/write':<16}", TITLE)
        if has_links:
            name = self._link_name()
            head.add(f"{'Links':<13}{name + ' TX':>9}{'RX':>9}  {'history':<{GPU_HISTORY}}", TITLE)
            head.add("  replay/recov/CRC", TITLE)
        lines = [head.line()]
        # Every GPU's plot on one scale (the busiest reading shown), so they compare.
        peak = _peak(self._gpu_traffic(i) for i in self.gpu_ids) if has_links else 1.0
        for info in self.node.gpus:
            index = info.index
            sample = self._sample(index)
            b = LineBuilder().add(f"{index:<4}", SELECTED if index == self.selected else TITLE)
            b.add(f"{short_gpu_name(info.name)[:9]:<10}", VALUE)
            b.extend(pcie_pieces(sample, info)).pad(37)
            if many and topology is not None:
                peers = [p for p in self.gpu_ids if p != index]
                b.extend(p2p_pieces(topology, index, peers)).pad(53)
            if has_links:
                b.extend(self._gpu_link_pieces(index, sample, peak))
            lines.append(b.line())
        if self.snapshot is None:
            lines.append([(WAITING_TEXT, DIM)])
        return lines

    def _link_name(self) -> str:
        kinds = {link.kind for link in self.topology.links} if self.topology else set()
        return "XGMI" if kinds == {"xgmi"} else "NVL"

    def _gpu_traffic(self, index: int) -> list[float]:
        """TX+RX of one GPU's NVLink/XGMI over the last readings (the app's History)."""
        if self.history is None:
            return []
        txs = self.history.gpu_series(index, "nvlink_tx_bytes_per_s", last=GPU_HISTORY)
        rxs = self.history.gpu_series(index, "nvlink_rx_bytes_per_s", last=GPU_HISTORY)
        return [
            math.nan if math.isnan(t) and math.isnan(r) else _nz(t) + _nz(r)
            for t, r in zip(txs, rxs, strict=False)
        ]

    def _gpu_link_pieces(
        self, index: int, sample: GpuSample | None, peak: float
    ) -> list[tuple[str, str]]:
        assert self.topology is not None
        total = len(self.topology.links_of(index))
        if sample is None or sample.lost:
            return [(f"{'lost' if sample is not None else '-':<13}", DIM)]
        rows = self._rows(sample)
        out: list[tuple[str, str]] = []
        up = sum(1 for r in rows if r.up)
        down = sum(1 for r in rows if r.up is False)
        if rows and all(r.unused for r in rows):
            out.append((f"{f'{total} unused':<13}", DIM))
        elif not any(r.up is not None for r in rows):
            out.append((f"{f'{total} links':<13}", LABEL))
        elif down:
            first = f"{up}/{total} "
            out += [(first, WARN), (f"{down} DOWN".ljust(13 - len(first)), BAD)]
        else:
            out.append((f"{f'{up}/{total} up':<13}", OK))
        tx, rx = sample.nvlink_tx_bytes_per_s, sample.nvlink_rx_bytes_per_s
        out.append((f"{fmt_rate(tx):>9}", VALUE if tx is not None else DIM))
        out.append((f"{fmt_rate(rx):>9}", VALUE if rx is not None else DIM))
        plot = sparkline(self._gpu_traffic(index), GPU_HISTORY, 0.0, peak)
        out += [("  ", ""), (f"{plot:<{GPU_HISTORY}}", ACCENT), ("  ", "")]
        counts = [
            sum(getattr(r, field) or 0 for r in rows)
            for field in ("replay_errors", "recovery_errors", "crc_errors")
        ]
        if all(getattr(r, "replay_errors", None) is None for r in rows):
            out.append((NA, DIM))
        elif any(counts):
            out.append(("/".join(str(n) for n in counts), WARN))
        else:
            out.append(("none", LABEL))
        return out

    def peer_lines(self) -> list[Line]:
        """The selected GPU's path, detail and P2P support to each peer."""
        index = self.selected
        matrix, topology = self.matrix, self.topology
        if index is None or matrix is None or topology is None:
            return []
        lines: list[Line] = [[(f"GPU {index} to its peers", TITLE)]]
        for peer in self.gpu_ids:
            if peer == index:
                continue
            cell = matrix.cell(index, peer)
            path = topology.path(index, peer)
            b = LineBuilder().add(f"  → GPU{peer:<3}", TITLE)
            b.add(f"{cell.code:<6}", cell_class(cell.code, cell.kind))
            b.add(pad(sanitize(cell.detail or ""), 40), LABEL)
            b.add("P2P read ", LABEL).add(*_yes_no(path.p2p_read if path else None))
            b.add("  write ", LABEL).add(*_yes_no(path.p2p_write if path else None))
            lines.append(b.line())
        return lines

    def link_lines(self) -> list[Line]:
        """The links table (all GPUs, or the selected one), or a sentence when there is none."""
        topology = self.topology
        if topology is None:
            return []
        if not topology.links:
            if len(self.gpu_ids) > 1:
                return [[(NO_LINKS_TEXT, LABEL)]]
            return []
        if self.snapshot is None:
            return [[(WAITING_TEXT, DIM)]]
        gpus = self.gpu_ids if self.selected is None else [self.selected]
        which = "all GPUs (0–9: one GPU)" if self.selected is None else f"GPU {self.selected}"
        lines: list[Line] = [
            LineBuilder()
            .add(f"{self._link_name()} links — {which}", TITLE)
            .add("   history: TX+RX since this screen opened, one scale for all links", DIM)
            .line(),
            LineBuilder()
            .add(
                f"{'GPU':<4}{'Link':>4}  {'State':<6}{'Version/speed':<17}{'Remote':<22}"
                f"{'TX':>10}{'RX':>10}  {'history':<{LINK_HISTORY}}"
                f"{'replay':>8}{'recovery':>10}{'CRC':>6}",
                TITLE,
            )
            .line(),
        ]
        unread = True
        # Every link's plot on one scale (the busiest link reading kept), so they compare.
        peak = _peak(self.link_history.values())
        for index in gpus:
            sample = self._sample(index)
            if sample is None:
                continue
            if sample.lost:
                lines.append([(f"{index:<4}", TITLE), ("GPU lost: no link readings", DIM)])
                continue
            rows = self._rows(sample)
            if rows:
                unread = False
            for row in rows:
                lines.append(self._link_line(row, peak))
        if unread:
            lines.append([(LINKS_UNREAD_TEXT, DIM)])
        return lines

    def _link_line(self, row: topo.LinkRow, peak: float) -> Line:
        b = LineBuilder().add(f"{row.gpu_index:<4}", TITLE).add(f"{row.link:>4}  ", LABEL)
        if row.unused:
            b.add(f"{'unused':<6}", DIM)
        elif row.up is None:
            b.add(f"{NA:<6}", DIM)
        elif row.up:
            b.add(f"{'up':<6}", OK)
        else:
            b.add("DOWN", BAD).add("  ")
        speed = _speed_text(row.version, row.speed_gbps, row.kind)
        b.add(f"{speed[:16]:<17}", LABEL)
        remote = _short_bus(sanitize(row.remote or "?"))
        b.add(f"{remote[:21]:<22}", DIM if remote == "?" else VALUE)
        for value in (row.tx_bytes_per_s, row.rx_bytes_per_s):
            b.add(f"{fmt_rate(value):>10}", VALUE if value is not None else DIM)
        series = list(self.link_history.get((row.gpu_index, row.link), ()))
        b.add("  ").add(f"{sparkline(series, LINK_HISTORY, 0.0, peak):<{LINK_HISTORY}}", ACCENT)
        for width, value in (
            (8, row.replay_errors),
            (10, row.recovery_errors),
            (6, row.crc_errors),
        ):
            b.add(f"{_count(value):>{width}}", _count_class(value))
        return b.line()

    # -- actions -----------------------------------------------------------------------------------

    def select_gpu(self, index: int | None) -> None:
        if index is not None and index not in self.gpu_ids:
            self.app.notify(f"there is no GPU {index}", severity="warning", timeout=3)
            return
        if index == self.selected:
            return
        self.selected = index
        self._refresh_live(None)
        self.body.scroll_to(y=0, animate=False)

    def action_select_gpu(self, index: int | None) -> None:
        self.select_gpu(index)

    def action_close(self) -> None:
        self.dismiss(None)


def _short_bus(text: str) -> str:
    """``00000000:05:00.0`` -> ``0000:05:00.0`` (the form lspci prints)."""
    return _LONG_BUS.sub(r"\1", text)


def _nz(value: float) -> float:
    return 0.0 if math.isnan(value) else value


def _yes_no(value: bool | None) -> tuple[str, str]:
    if value is None:
        return (NA, DIM)
    return ("yes", OK) if value else ("no", SLOW)


__all__ = [
    "NO_LINKS_TEXT",
    "NO_TOPOLOGY_TEXT",
    "SINGLE_GPU_TEXT",
    "LinesView",
    "TopologyScreen",
    "cell_class",
    "p2p_pieces",
    "pcie_pieces",
]
