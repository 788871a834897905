"""The GPU-to-GPU connection matrix, its legend, per-link rows and the text of ``gputui topo``.

Pure functions over the model (no Textual): the topology screen and the CLI share them.

Notation (what a matrix cell shows), as ``nvidia-smi topo -m`` prints it:

- ``X``: the GPU itself.
- ``NV<n>``: ``n`` bonded NVLinks. For links wired GPU to GPU, ``n`` is the number of links of
  either GPU whose remote end is the other GPU (the larger count of the two sides, in case one
  side could not read a remote end). For links that go to NVSwitches (HGX / DGX boards), every
  GPU reaches every other through the switch fabric, and ``n`` is the smaller of the two GPUs'
  switch-link counts: the bonded width the pair can use, which is what ``nvidia-smi topo -m``
  shows (``NV18`` on an 8×H100 board, ``NV12`` on 8×A100). This assumes one non-partitioned
  fabric. Both kinds add up when a GPU has both. The count is of the links discovered at
  start-up; a link that is down now still counts here (the link summary says it is down).
  NVLink takes precedence over the PCIe level of the pair (the PCIe level stays in ``detail``).
- ``PIX``, ``PXB``, ``PHB``, ``NODE``, ``SYS``: the pair's closest common PCIe ancestor.
- AMD: ``XGMI`` for a direct XGMI link (1 hop, or hops unknown), ``XGMI<n>h`` for a path of
  ``n`` XGMI hops through other GPUs (e.g. ``XGMI2h``), ``PCIE`` for a PCIe path; hops and the
  link weight are in ``detail``. (A trailing ``h`` keeps a hop count apart from a link count
  like ``NV18`` or an XGMI version.)
- ``?``: unknown (no topology discovered, or the pair was not reported).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import field

from gputui.core.format import cell_width, fmt_rate, pad, sanitize
from gputui.core.frozen import frozen
from gputui.core.model import GpuInfo, GpuPath, GpuSample, LinkInfo, LinkSample, NodeInfo, Snapshot

# -- notation ----------------------------------------------------------------------------------

NVML_LEVELS: dict[int, str] = {
    0: "PIX",  # NVML_TOPOLOGY_INTERNAL: two GPUs on one board (K80), behind the board's switch
    10: "PIX",  # NVML_TOPOLOGY_SINGLE
    20: "PXB",  # NVML_TOPOLOGY_MULTIPLE
    30: "PHB",  # NVML_TOPOLOGY_HOSTBRIDGE
    40: "NODE",  # NVML_TOPOLOGY_NODE
    50: "SYS",  # NVML_TOPOLOGY_SYSTEM
}


def level_code(level: int | None) -> str:
    """The ``nvidia-smi topo -m`` code of an NVML topology level
    (``nvmlDeviceGetTopologyCommonAncestor``): 10 ``PIX``, 20 ``PXB``, 30 ``PHB``, 40 ``NODE``,
    50 ``SYS``; 0 (INTERNAL: two GPUs on one board, e.g. a K80) ``PIX``, as nvidia-smi shows it
    (a GPU with itself is ``X`` in the matrix, whatever NVML says); anything else ``?``."""
    if level is None:
        return "?"
    return NVML_LEVELS.get(int(level), "?")


LEGEND: tuple[tuple[str, str], ...] = (
    ("X", "Self"),
    (
        "SYS",
        "Connection traversing PCIe as well as the SMP interconnect between NUMA nodes "
        "(e.g., QPI/UPI)",
    ),
    (
        "NODE",
        "Connection traversing PCIe as well as the interconnect between PCIe Host Bridges "
        "within a NUMA node",
    ),
    ("PHB", "Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)"),
    (
        "PXB",
        "Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)",
    ),
    ("PIX", "Connection traversing at most a single PCIe bridge"),
    ("NV#", "Connection traversing a bonded set of # NVLinks"),
    ("XGMI", "Connection traversing a single XGMI link (AMD Infinity Fabric, GPU to GPU)"),
    ("XGMI#h", "Connection traversing # XGMI hops (through other GPUs)"),
    ("PCIE", "Connection traversing PCIe (AMD; hops and weight in the detail)"),
    ("?", "Unknown (not reported by the driver)"),
)
"""One line per code, in ``nvidia-smi topo -m`` words and order; ``#`` stands for a number."""

_LEGEND_RANK = {code: rank for rank, (code, _words) in enumerate(LEGEND)}
_PCIE_LEVELS = ("PIX", "PXB", "PHB", "NODE", "SYS")
_PCIE_DETAIL = {
    "PIX": "PCIe through at most one PCIe bridge (switch)",
    "PXB": "PCIe through multiple PCIe bridges, not the host bridge",
    "PHB": "PCIe through a PCIe host bridge (the CPU)",
    "NODE": "PCIe across host bridges within a NUMA node",
    "SYS": "PCIe across NUMA nodes (SMP interconnect)",
}
_NV = re.compile(r"^NV(\d+)$")
_XGMI_HOPS = re.compile(r"^XGMI(\d+)h$")


def legend_key(code: str) -> str:
    """The legend entry a code belongs to: ``NV18`` -> ``NV#``, ``XGMI2h`` -> ``XGMI#h``."""
    if _NV.match(code):
        return "NV#"
    if _XGMI_HOPS.match(code):
        return "XGMI#h"
    return code if code in _LEGEND_RANK else "?"


def _code_order(code: str) -> tuple[int, int]:
    nv = _NV.match(code)
    if nv:
        return (_LEGEND_RANK["NV#"], -int(nv.group(1)))
    hops = _XGMI_HOPS.match(code)
    if hops:
        return (_LEGEND_RANK["XGMI#h"], int(hops.group(1)))
    return (_LEGEND_RANK.get(code, len(_LEGEND_RANK)), 0)


# -- the matrix --------------------------------------------------------------------------------


@frozen(slots=False)
class Cell:
    """One matrix cell: the code shown, its kind (for colour) and one line of explanation."""

    code: str
    kind: str
    """``self``, ``nvlink``, ``xgmi``, ``pcie`` or ``unknown``."""
    detail: str


SELF = Cell("X", "self", "the GPU itself")
UNKNOWN = Cell("?", "unknown", "connection not reported")


@frozen(slots=False)
class Matrix:
    """GPU x GPU connections; ``cells`` holds both orders of every pair and the diagonal."""

    gpus: tuple[int, ...]
    cells: Mapping[tuple[int, int], Cell] = field(default_factory=dict, hash=False)

    def cell(self, a: int, b: int) -> Cell:
        if a == b:
            return self.cells.get((a, b), SELF)
        return self.cells.get((a, b)) or self.cells.get((b, a)) or UNKNOWN

    def codes(self) -> list[str]:
        """The codes present, in legend order (``NV`` by link count, most first)."""
        present = {self.cell(a, b).code for a in self.gpus for b in self.gpus}
        return sorted(present, key=_code_order)


def _nvlink_count(
    links_a: tuple[LinkInfo, ...], links_b: tuple[LinkInfo, ...], a: int, b: int
) -> tuple[int, str]:
    """(bonded NVLinks between a and b, how: ``direct`` / ``via NVSwitch`` / both)."""
    direct = max(
        sum(1 for x in links_a if x.remote_type == "gpu" and x.remote_gpu_index == b),
        sum(1 for x in links_b if x.remote_type == "gpu" and x.remote_gpu_index == a),
    )
    via_switch = min(
        sum(1 for x in links_a if x.remote_type == "switch"),
        sum(1 for x in links_b if x.remote_type == "switch"),
    )
    how = " + ".join(
        word for word, n in (("direct", direct), ("via NVSwitch", via_switch)) if n > 0
    )
    return direct + via_switch, how


def _amd_cell(path: GpuPath, links_a: tuple[LinkInfo, ...], b: int) -> Cell | None:
    link_type = (path.link_type or "").lower()
    if not link_type:
        if any(x.kind == "xgmi" and x.remote_gpu_index == b for x in links_a):
            link_type = "xgmi"
        else:
            return None
    extras = []
    if path.hops is not None:
        extras.append(f"{path.hops} hop" + ("" if path.hops == 1 else "s"))
    if path.weight is not None:
        extras.append(f"weight {path.weight}")
    tail = (", " + ", ".join(extras)) if extras else ""
    if link_type == "xgmi":
        code = "XGMI" if path.hops is None or path.hops <= 1 else f"XGMI{path.hops}h"
        return Cell(code, "xgmi", "XGMI" + tail)
    if link_type == "pcie":
        return Cell("PCIE", "pcie", "PCIe" + tail)
    return Cell("?", "unknown", f"link type {path.link_type}" + tail)


def _pair_cell(node: NodeInfo, a: int, b: int) -> Cell:
    topo = node.topology
    if topo is None:
        return UNKNOWN
    links_a = tuple(x for x in topo.links_of(a) if x.kind == "nvlink")
    links_b = tuple(x for x in topo.links_of(b) if x.kind == "nvlink")
    path = topo.path(a, b)
    count, how = _nvlink_count(links_a, links_b, a, b)
    if count:
        detail = f"{count} bonded NVLink{'s' if count != 1 else ''} ({how})"
        if path is not None and path.pcie_level:
            detail += f"; PCIe {path.pcie_level}"
        return Cell(f"NV{count}", "nvlink", detail)
    if path is None:
        return UNKNOWN
    if path.link_type is not None or any(x.kind == "xgmi" for x in topo.links_of(a)):
        amd = _amd_cell(path, topo.links_of(a), b)
        if amd is not None:
            return amd
    level = (path.pcie_level or "").upper()
    if level in _PCIE_DETAIL:
        return Cell(level, "pcie", _PCIE_DETAIL[level])
    return UNKNOWN


def build_matrix(node: NodeInfo) -> Matrix:
    """The connection matrix of ``node`` (see the module doc for the notation). Without a
    discovered topology every pair is ``?``; the diagonal is always ``X``."""
    gpus = tuple(sorted(g.index for g in node.gpus))
    cells: dict[tuple[int, int], Cell] = {}
    for i, a in enumerate(gpus):
        cells[(a, a)] = SELF
        for b in gpus[i + 1 :]:
            cell = _pair_cell(node, a, b)
            cells[(a, b)] = cells[(b, a)] = cell
    return Matrix(gpus=gpus, cells=cells)


def legend_for(matrix: Matrix) -> list[tuple[str, str]]:
    """The legend lines of the codes present in ``matrix``, in legend order."""
    keys = {legend_key(code) for code in matrix.codes()}
    return [(code, words) for code, words in LEGEND if code in keys]


# -- links -------------------------------------------------------------------------------------


@frozen(slots=False)
class LinkRow:
    """One NVLink / XGMI link with its latest reading (None: not read / not supported)."""

    gpu_index: int
    link: int
    kind: str
    up: bool | None = None
    version: int | None = None
    speed_gbps: float | None = None
    remote: str = "?"
    """``GPU 3``, ``NVSwitch 0000:05:00.0``, ``CPU`` or ``?``."""
    rx_bytes_per_s: float | None = None
    tx_bytes_per_s: float | None = None
    replay_errors: int | None = None
    recovery_errors: int | None = None
    crc_errors: int | None = None
    unused: bool = False
    """Inactive since start with no remote end: not in use, not down."""


def _remote_text(info: LinkInfo) -> str:
    bus = info.remote_pci_bus_id
    if info.remote_type == "gpu":
        if info.remote_gpu_index is not None:
            return f"GPU {info.remote_gpu_index}"
        return f"GPU {bus}" if bus else "GPU"
    if info.remote_type == "switch":
        return f"NVSwitch {bus}" if bus else "NVSwitch"
    if info.remote_type == "cpu":
        return "CPU"
    return bus or "?"


def link_rows(
    node: NodeInfo, sample: GpuSample | None, *, gpu_index: int | None = None
) -> list[LinkRow]:
    """The links of ``sample``'s GPU (discovered at start-up), each joined by link number with
    the reading in ``sample.links``. With ``sample=None``: the links of ``gpu_index`` (every GPU
    when that is None too), state unknown. A link read but not discovered is listed as well."""
    index = sample.index if sample is not None else gpu_index
    infos = [] if node.topology is None else list(node.topology.links)
    if index is not None:
        infos = [x for x in infos if x.gpu_index == index]
    readings: dict[int, LinkSample] = {}
    if sample is not None and sample.links:
        readings = {r.link: r for r in sample.links}
    rows = []
    for info in sorted(infos, key=lambda x: (x.gpu_index, x.link)):
        r = readings.get(info.link)
        rows.append(
            LinkRow(
                gpu_index=info.gpu_index,
                link=info.link,
                kind=info.kind,
                up=r.up if r else None,
                version=info.version,
                speed_gbps=info.speed_gbps,
                remote=_remote_text(info),
                rx_bytes_per_s=r.rx_bytes_per_s if r else None,
                tx_bytes_per_s=r.tx_bytes_per_s if r else None,
                replay_errors=r.replay_errors if r else None,
                recovery_errors=r.recovery_errors if r else None,
                crc_errors=r.crc_errors if r else None,
                unused=r.unused if r else False,
            )
        )
    if sample is not None:
        known = {x.link for x in infos}
        gpu = node.gpu(sample.index)
        kind = infos[0].kind if infos else ("xgmi" if gpu and gpu.vendor == "amd" else "nvlink")
        for r in sorted(readings.values(), key=lambda r: r.link):
            if r.link not in known:
                rows.append(
                    LinkRow(
                        gpu_index=sample.index,
                        link=r.link,
                        kind=kind,
                        up=r.up,
                        rx_bytes_per_s=r.rx_bytes_per_s,
                        tx_bytes_per_s=r.tx_bytes_per_s,
                        replay_errors=r.replay_errors,
                        recovery_errors=r.recovery_errors,
                        crc_errors=r.crc_errors,
                        unused=r.unused,
                    )
                )
    return rows


def all_link_rows(node: NodeInfo, snapshot: Snapshot | None) -> list[LinkRow]:
    """The links of every GPU (:func:`link_rows`), by GPU index, with their readings in
    ``snapshot`` (None: state unknown)."""
    rows: list[LinkRow] = []
    for gpu in sorted(node.gpus, key=lambda g: g.index):
        sample = snapshot.sample(gpu.index) if snapshot is not None else None
        rows += link_rows(node, sample, gpu_index=gpu.index)
    return rows


def _link_word(kind: str) -> str:
    return "XGMI" if kind == "xgmi" else "NVLink"


def link_bytes_per_s(speed_gbps: float | None) -> float | None:
    """A link's speed (Gb/s per direction) in bytes/s per direction."""
    return None if speed_gbps is None else speed_gbps * 1e9 / 8


def _gb_per_s(speed_gbps: float) -> str:
    text = f"{speed_gbps / 8:.1f}".removesuffix(".0")
    return f"{text} GB/s"


def link_kind_text(kind: str, version: int | None, speed_gbps: float | None) -> str:
    """``NVLink 4, 26.6 GB/s per link each way``; ``XGMI, 64 GB/s per link each way``: the
    generation as users name it and the speed of one whole link in one direction, the same
    way for both vendors."""
    text = _link_word(kind) + (f" {version}" if version is not None else "")
    if speed_gbps is not None:
        text += f", {_gb_per_s(speed_gbps)} per link each way"
    return text


def _links_kind_text(rows: list[LinkRow]) -> str:
    """What the links of one GPU are (one entry per distinct kind, version and speed)."""
    kinds = sorted(
        {(r.kind, r.version, r.speed_gbps) for r in rows},
        key=lambda k: (k[0], k[1] or 0, k[2] or 0.0),
    )
    return "; ".join(
        link_kind_text(kind, version, speed)
        for kind, version, speed in kinds
        if version is not None or speed is not None
    )


def link_summary(rows: list[LinkRow]) -> str:
    """``18/18 up``, ``17/18 up — link 7 DOWN``, ``18 links (state not read)``."""
    if not rows:
        return "no links"
    total = len(rows)
    if all(r.unused for r in rows):
        return f"{total} link{'s' if total != 1 else ''} not in use"
    if all(r.up is None for r in rows):
        return f"{total} link{'s' if total != 1 else ''} (state not read)"
    up = sum(1 for r in rows if r.up)
    text = f"{up}/{total} up"
    down = [r.link for r in rows if r.up is False]
    if down:
        text += f" — link{'s' if len(down) > 1 else ''} {', '.join(map(str, down))} DOWN"
    return text


# -- text and JSON -----------------------------------------------------------------------------

DOWNTRAIN_UTIL_PCT = 30.0
"""Below this GPU utilization a PCIe link below its maximum is likely power saving."""


def locality_text(node: NodeInfo, index: int) -> tuple[str, str]:
    """(CPU affinity, NUMA node) of GPU ``index`` as the matrix shows them (``N/A``: unknown)."""
    if node.topology is not None:
        for loc in node.topology.locality:
            if loc.gpu_index == index:
                cpus = sanitize(loc.cpu_affinity or "N/A")
                numa = "N/A" if loc.numa_node is None else str(loc.numa_node)
                return cpus, numa
    return "N/A", "N/A"


def pcie_text(info: GpuInfo, sample: GpuSample | None) -> tuple[str, bool]:
    """("Gen5 x16 / max Gen5 x16", trained below max)."""

    def link(gen: int | None, width: int | None) -> str:
        if gen is None and width is None:
            return "n/a"
        return f"Gen{gen if gen is not None else '?'} x{width if width is not None else '?'}"

    gen = sample.pcie_gen if sample is not None else None
    width = sample.pcie_width if sample is not None else None
    below = (gen is not None and info.pcie_max_gen is not None and gen < info.pcie_max_gen) or (
        width is not None and info.pcie_max_width is not None and width < info.pcie_max_width
    )
    text = f"{link(gen, width)} / max {link(info.pcie_max_gen, info.pcie_max_width)}"
    gpu_max = info.pcie_gpu_max_gen
    if gpu_max is not None and info.pcie_max_gen is not None and gpu_max > info.pcie_max_gen:
        text += f" (the GPU supports Gen{gpu_max})"
    return text, below


def _p2p_code(path: GpuPath | None) -> str:
    if path is None or (path.p2p_read is None and path.p2p_write is None):
        return "?"
    if path.p2p_read and path.p2p_write:
        return "OK"
    if path.p2p_read:
        return "RO"
    if path.p2p_write:
        return "WO"
    return "NS"


def _grid(header: list[str], rows: list[list[str]]) -> list[str]:
    """Left-aligned columns, measured in terminal cells."""
    widths = [max(cell_width(r[i]) for r in [header, *rows]) for i in range(len(header))]
    out = []
    for r in [header, *rows]:
        out.append("  ".join(pad(cell, w) for cell, w in zip(r, widths, strict=True)).rstrip())
    return out


def render_text(node: NodeInfo, snapshot: Snapshot | None = None) -> str:
    """What ``gputui topo`` prints: the matrix in ``nvidia-smi topo -m`` layout with CPU / NUMA
    affinity, the legend of the codes present, PCIe current / max per GPU, P2P support and the
    NVLink / XGMI link summary of the latest reading. Names from the node (a recording's, too)
    are sanitised: no control sequence reaches the terminal."""
    gpus = sorted(node.gpus, key=lambda g: g.index)
    lines = [f"{node.hostname} · {node.backend} · {len(gpus)} GPU{'s' if len(gpus) != 1 else ''}"]
    lines.append("")
    if not gpus:
        lines.append("No GPUs: nothing to show.")
        return "\n".join(sanitize(line) for line in lines)
    matrix = build_matrix(node)
    names = [f"GPU{g.index}" for g in gpus]
    if node.topology is None:
        lines.append(
            f"Topology not discovered by the {node.backend} backend: no GPU-to-GPU paths, "
            "links or CPU affinity to show."
        )
    elif len(gpus) == 1:
        cpus, numa = locality_text(node, gpus[0].index)
        lines.append("1 GPU: no GPU-to-GPU paths to show.")
        lines += _grid(["", "CPU Affinity", "NUMA Affinity"], [[names[0], cpus, numa]])
    else:
        rows = []
        for g, name in zip(gpus, names, strict=True):
            codes = [matrix.cell(g.index, o.index).code for o in gpus]
            rows.append([name, *codes, *locality_text(node, g.index)])
        lines += _grid(["", *names, "CPU Affinity", "NUMA Affinity"], rows)
        lines += ["", "Legend:", ""]
        legend = legend_for(matrix)
        width = max(len(code) for code, _ in legend)
        lines += [f"  {code.ljust(width)} = {words}" for code, words in legend]
    # PCIe
    lines += ["", "PCIe link (current / max):"]
    for g in gpus:
        sample = snapshot.sample(g.index) if snapshot is not None else None
        text, below = pcie_text(g, sample)
        if below:
            util = sample.utilization_gpu_pct if sample is not None else None
            idle = util is not None and util < DOWNTRAIN_UTIL_PCT
            text += "  (below max" + (
                "; GPU idle: links down-train to save power)" if idle else ")"
            )
        lines.append(f"  GPU{g.index}  {text}")
    # P2P
    topo = node.topology
    if topo is not None and len(gpus) > 1:
        pairs = [(a.index, b.index) for i, a in enumerate(gpus) for b in gpus[i + 1 :]]
        p2p = {pair: _p2p_code(topo.path(*pair)) for pair in pairs}
        values = set(p2p.values())
        lines.append("")
        uniform = {
            "OK": "OK between all pairs",
            "NS": "not supported between any pair",
            "?": "not reported",
        }
        if len(values) == 1 and next(iter(values)) in uniform:
            lines.append(f"P2P read/write: {uniform[next(iter(values))]}")
        else:
            lines.append("P2P read/write (OK both, RO read only, WO write only, NS not supported):")
            rows = []
            for g, name in zip(gpus, names, strict=True):
                row = [name]
                for o in gpus:
                    pair = (min(g.index, o.index), max(g.index, o.index))
                    row.append("X" if g.index == o.index else p2p[pair])
                rows.append(row)
            lines += ["  " + line for line in _grid(["", *names], rows)]
    # NVLink / XGMI
    all_rows = all_link_rows(node, snapshot)
    if all_rows:
        word = " / ".join(sorted({_link_word(r.kind) for r in all_rows}))
        lines += ["", f"{word} links:"]
        for g in gpus:
            rows_g = [r for r in all_rows if r.gpu_index == g.index]
            if not rows_g:
                lines.append(f"  GPU{g.index}  no links")
                continue
            text = f"  GPU{g.index}  {link_summary(rows_g)}"
            kinds = _links_kind_text(rows_g)
            if kinds:
                text += f"  ({kinds})"
            rx = [r.rx_bytes_per_s for r in rows_g if r.rx_bytes_per_s is not None]
            tx = [r.tx_bytes_per_s for r in rows_g if r.tx_bytes_per_s is not None]
            if rx or tx:
                text += f"  rx {fmt_rate(sum(rx) if rx else None)}"
                text += f" tx {fmt_rate(sum(tx) if tx else None)}"
            errors = []
            for label, attr in (
                ("replay", "replay_errors"),
                ("recovery", "recovery_errors"),
                ("CRC", "crc_errors"),
            ):
                n = sum(getattr(r, attr) or 0 for r in rows_g)
                if n:
                    errors.append(f"{n} {label}")
            if errors:
                text += "  errors: " + ", ".join(errors)
            lines.append(text)
    return "\n".join(sanitize(line) for line in lines)


__all__ = [
    "LEGEND",
    "Cell",
    "LinkRow",
    "Matrix",
    "all_link_rows",
    "build_matrix",
    "legend_for",
    "legend_key",
    "level_code",
    "link_bytes_per_s",
    "link_kind_text",
    "link_rows",
    "link_summary",
    "locality_text",
    "pcie_text",
    "render_text",
]
