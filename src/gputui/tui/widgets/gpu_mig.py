"""A GPU in MIG mode as its panel shows it: the instances, one cell or row each, as nvitop lists
MIG devices (instance, profile, memory used/total), instead of the GPU's utilization.

NVML reports no utilization for a GPU in MIG mode, nor for its instances (the adapter reads their
memory only), so a MIG panel shows no utilization bar or chart: where those were, it lists its
instances. Data comes from :func:`gputui.core.mig.instance_views`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from gputui.core.format import fmt_bytes, fmt_bytes_pair, pad, sanitize
from gputui.core.mig import MigView, instance_tag, instance_views, mig_profile
from gputui.core.model import GpuInfo, GpuSample, MigDeviceInfo
from gputui.tui.widgets.bars import bar, fraction
from gputui.tui.widgets.gpu_pieces import memory_class
from gputui.tui.widgets.line_widget import (
    DIM,
    LABEL,
    VALUE,
    Line,
    LineBuilder,
    Piece,
    line_width,
)

CELL_GAP = 3
"""Cells between two instances side by side."""
BAR_MIN = 5
BAR_MAX = 20
TAG_WIDTH = 4
"""``g7``, ``g14``, ``g2c1``: the instance as the process table names it after its GPU."""


def profile_name(dev: MigDeviceInfo) -> str:
    """``1g.10gb`` from NVML's ``NVIDIA H100 80GB HBM3 MIG 1g.10gb``; ``slice`` without a name."""
    return sanitize(mig_profile(dev.name)) if dev.name else "slice"


def mig_mode(info: GpuInfo) -> bool:
    """The GPU is split into MIG instances (and lists them)."""
    return bool(info.mig_enabled and info.mig_devices)


def mig_counts(devices: Sequence[MigDeviceInfo]) -> list[str]:
    """``["2×3g.40gb", "1×1g.10gb"]``: instances by profile, in the node's order."""
    counts: dict[str, int] = {}
    for dev in devices:
        name = profile_name(dev)
        counts[name] = counts.get(name, 0) + 1
    return [f"{n}×{name}" for name, n in counts.items()]


def mig_summary(devices: Sequence[MigDeviceInfo]) -> str:
    """``MIG 2×3g.40gb 1×1g.10gb``."""
    return " ".join(["MIG", *mig_counts(devices)])


def mig_summary_fit(devices: Sequence[MigDeviceInfo], width: int) -> str:
    """:func:`mig_summary` in ``width`` cells: whole profiles only, ``…`` for the ones left
    out; at least ``MIG``."""
    counts = counts_fit(devices, width - 4)
    return f"MIG {counts}" if counts else "MIG"


def counts_fit(devices: Sequence[MigDeviceInfo], width: int) -> str:
    """:func:`mig_counts` joined in ``width`` cells, whole ones only and ``…`` for the ones left
    out ('' when not even one fits)."""
    text = ""
    counts = mig_counts(devices)
    for i, item in enumerate(counts):
        more = " …" if i + 1 < len(counts) else ""
        candidate = f"{text} {item}" if text else item
        if len(candidate) + len(more) > width:
            return f"{text} …" if text and len(text) + 2 <= width else text
        text = candidate
    return text


# -- one instance ---------------------------------------------------------------------------------


def _memory(view: MigView) -> tuple[str, str, float | None]:
    """(used/total, used, fraction) of an instance's memory."""
    used, total = view.memory_used_bytes, view.memory_total_bytes
    return fmt_bytes_pair(used, total), fmt_bytes(used), fraction(used, total)


def _cell(view: MigView, form: str, width: int, profile_w: int, pair_w: int) -> Line:
    """One instance in ``width`` cells: ``full`` (tag, profile, memory bar, used/total), ``bar``
    (the same without the profile), ``pair`` (tag, used/total) or ``used`` (tag, used)."""
    pair, used, frac = _memory(view)
    known = view.memory_used_bytes is not None
    value_cls = DIM if not known else VALUE if frac is None or frac < 0.9 else memory_class(frac)
    tag = instance_tag(view.info)
    b = LineBuilder().add(pad(tag, TAG_WIDTH) if form in ("full", "bar") else f"{tag} ", LABEL)
    if form in ("full", "bar"):
        if form == "full":
            b.add(pad(profile_name(view.info), profile_w + 1), VALUE)
        bar_w = min(width - b.width - 1 - pair_w, BAR_MAX)
        b.extend(bar(frac, bar_w, memory_class(frac))).add(" ")
        b.add(pair, value_cls)
    else:
        b.add(pair if form == "pair" else used, value_cls)
    return b.pieces


def _needs(views: Sequence[MigView]) -> dict[str, int]:
    """The cells each form of a cell needs, for the widest instance."""
    profile_w = max(len(profile_name(v.info)) for v in views)
    pair_w = max(len(_memory(v)[0]) for v in views)
    used_w = max(len(_memory(v)[1]) for v in views)
    tag_w = max(len(instance_tag(v.info)) for v in views) + 1
    return {
        "full": TAG_WIDTH + profile_w + 1 + BAR_MIN + 1 + pair_w,
        "bar": TAG_WIDTH + BAR_MIN + 1 + pair_w,
        "pair": tag_w + pair_w,
        "used": tag_w + used_w,
        "profile_w": profile_w,
        "pair_w": pair_w,
    }


# -- the forms of a panel -------------------------------------------------------------------------


def mig_strip(views: Sequence[MigView], width: int) -> Line:
    """Every instance in one line (a framed panel's first row): ``g7 5.12/9.75G  g8 …``, or the
    used memory alone when the totals do not fit, the last ones counted in ``+N`` when even
    those do not."""
    if not views:
        return []
    need = _needs(views)
    for form in ("pair", "used"):
        cells = [_cell(v, form, need[form], need["profile_w"], need["pair_w"]) for v in views]
        if sum(line_width(c) for c in cells) + 2 * (len(cells) - 1) <= width:
            return _joined(cells, "  ")
    cells = [_cell(v, "used", need["used"], 0, 0) for v in views]
    for shown in range(len(cells) - 1, -1, -1):
        more: Line = [(f"+{len(cells) - shown}", LABEL)]
        line = _joined([*cells[:shown], more], " ")
        if line_width(line) <= width:
            return line
    return []


def mig_rows(views: Sequence[MigView], width: int, max_rows: int) -> list[Line]:
    """The instances in rows of ``width`` cells, side by side in as few columns as keep them
    within ``max_rows`` lines (fewer columns, more detail: profile and a memory bar when there is
    room); in ``max_rows`` lines with ``+N more`` when nothing fits."""
    n = len(views)
    if not n or width <= 0:
        return []
    need = _needs(views)
    max_rows = max(max_rows, 1)
    for cols in range(1, n + 1):
        rows = math.ceil(n / cols)
        if rows > max_rows:
            continue
        cell_w = (width - CELL_GAP * (cols - 1)) // cols
        form = next((f for f in ("full", "bar", "pair", "used") if need[f] <= cell_w), None)
        if form is None:
            break
        cells = [_cell(v, form, cell_w, need["profile_w"], need["pair_w"]) for v in views]
        return [_row(cells[r * cols : (r + 1) * cols], cell_w, width) for r in range(rows)]
    return [mig_strip(views, width)]


def _row(cells: Sequence[Line], cell_w: int, width: int) -> Line:
    b = LineBuilder()
    for i, cell in enumerate(cells):
        if i:
            b.pad(i * (cell_w + CELL_GAP))
        b.extend(cell)
    return b.line(width)


def _joined(items: Sequence[Line], sep: str) -> Line:
    out: list[Piece] = []
    for i, item in enumerate(items):
        if i:
            out.append((sep, ""))
        out.extend(item)
    return out


def mig_lines(info: GpuInfo, s: GpuSample, cw: int) -> list[Line]:
    """The roomy form: one labelled line per instance (profile, instance ids, a memory bar and
    used/total, SMs)."""
    if not mig_mode(info):
        return []
    lines: list[Line] = []
    for view in instance_views(info, s):
        dev = view.info
        pair, _, frac = _memory(view)
        b = LineBuilder().add("MIG".ljust(10), LABEL)
        b.add(pad(profile_name(dev), 12), VALUE)
        b.add(f" GI {dev.gpu_instance_id} CI {dev.compute_instance_id}".ljust(13), LABEL)
        b.add(" ")
        room = cw - b.width - len(pair) - 1 - (len(f"  {dev.sm_count} SMs") if dev.sm_count else 0)
        if room >= BAR_MIN:
            b.extend(bar(frac, min(room, BAR_MAX), memory_class(frac))).add(" ")
        b.add(pair, VALUE if view.memory_used_bytes is not None else DIM)
        if dev.sm_count is not None:
            b.add(f"  {dev.sm_count} SMs", LABEL)
        lines.append(b.line(cw))
    return lines


__all__ = [
    "counts_fit",
    "mig_counts",
    "mig_lines",
    "mig_mode",
    "mig_rows",
    "mig_strip",
    "mig_summary",
    "mig_summary_fit",
    "profile_name",
]
