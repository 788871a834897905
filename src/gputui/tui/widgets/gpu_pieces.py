"""The pieces a GPU panel is drawn from: values coloured by meaning (temperatures, memory, PCIe
link, ECC, throttle reasons), the faults, the board line, the charts and the constants of its
layouts (MIG instances: :mod:`gputui.tui.widgets.gpu_mig`).

Colours that judge (warn / bad) use the thresholds of the health rules
(:mod:`gputui.health.levels`), so the panel and the findings agree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from gputui.core.format import (
    NA,
    fmt_c2c,
    fmt_pcie,
    fmt_pct,
    fmt_rate,
    fmt_temp,
    fmt_watts,
    sanitize,
)
from gputui.core.frozen import frozen
from gputui.core.history import History
from gputui.core.model import THROTTLE_REASONS, THROTTLE_TROUBLE, GpuInfo, GpuSample
from gputui.core.vendor_terms import link_name
from gputui.health.levels import pcie_level, temperature_level
from gputui.tui.widgets.bars import fraction
from gputui.tui.widgets.charts import Chart, Fetch, history_fetch, nice_ceiling
from gputui.tui.widgets.line_widget import (
    BAD,
    BAR_MEM,
    DIM,
    LABEL,
    OK,
    PLOT_MEM,
    PLOT_POWER,
    PLOT_TEMP,
    PLOT_UTIL,
    VALUE,
    WARN,
    Line,
    LineBuilder,
    Piece,
    fit,
    line_width,
)

ROOMY_MIN_HEIGHT = 10
COMPACT_FIXED = 5 + 1 + 12 + 10 + 6
"""Compact row cells besides name and bars: utilization, memory, power, temperature."""
COMPACT_TAIL = 14
"""Compact row cells kept for trouble flags or the sparkline."""
COMPACT_THROTTLE = {
    "hw_slowdown": "HW slowdown",
    "hw_thermal": "HW thermal",
    "hw_power_brake": "power brake",
    "sw_thermal": "SW thermal",
}
BADGE_CLASS = {"ok": OK, "info": OK, "warn": WARN, "fail": BAD}
_LEVEL_CLASS = {"ok": VALUE, "info": VALUE, "warn": WARN, "fail": BAD}
LOST_TEXT = "LOST — fell off the bus"
NOT_ANSWERING_TEXT = "NOT ANSWERING"
WAITING_TEXT = "waiting for first reading…"


# -- levels: colour by meaning --------------------------------------------------------------------


def temperature_class(value: float | None, limit: float | None) -> str:
    """``bad`` at or above ``limit``, ``warn`` close to it (as the temperature rule judges)."""
    if value is None or math.isnan(value):
        return DIM
    return _LEVEL_CLASS[temperature_level(value, limit)]


def memory_class(frac: float | None) -> str:
    if frac is None:
        return BAR_MEM
    if frac >= 0.98:
        return BAD
    if frac >= 0.90:
        return WARN
    return BAR_MEM


def pcie_pieces(sample: GpuSample, info: GpuInfo, *, with_max: bool = True) -> list[Piece]:
    """Current link, and the maximum when trained below it (highlighted only under load: idle
    GPUs lower their link generation to save power, which is normal; ``with_max`` False leaves the
    maximum out where the fault list already says it). A GPU whose host link is NVLink-C2C shows
    that instead (its PCIe figures are placeholders)."""
    c2c = fmt_c2c(info.host_link, info.host_link_bandwidth_gbs)
    if c2c is not None:
        return [(c2c, VALUE)]
    current = fmt_pcie(sample.pcie_gen, sample.pcie_width)
    if current == NA:
        return [(NA, DIM)]
    level = pcie_level(sample, info)
    if level == "ok":
        return [(current, VALUE)]
    cls = WARN if level == "warn" else DIM
    if not with_max:
        return [(current, cls)]
    max_pcie = fmt_pcie(info.pcie_max_gen, info.pcie_max_width)
    return [(current, cls), (f"/{max_pcie}", LABEL if cls == DIM else cls)]


def ecc_pieces(sample: GpuSample, info: GpuInfo, *, long: bool = False) -> list[Piece]:
    """ECC state: ``ECC ok``, ``ECC off``, ``ECC n/a`` or the uncorrected counts, highlighted."""
    vol, agg = sample.ecc_volatile_uncorrected, sample.ecc_aggregate_uncorrected
    pieces: list[Piece] = [("ECC ", LABEL)]
    if info.ecc_enabled is False:
        return [*pieces, ("off", DIM)]
    if vol is None and agg is None:
        return [*pieces, (NA, DIM)]
    bad = (vol or 0) > 0 or (agg or 0) > 0
    if long:
        text = f"uncorrected {_count(vol)}/{_count(agg)}"
        pieces.append((text + ("!" if bad else ""), BAD if bad else OK))
        cv, ca = sample.ecc_volatile_corrected, sample.ecc_aggregate_corrected
        if cv is not None or ca is not None:
            pieces.append((f"  corrected {_count(cv)}/{_count(ca)}", LABEL))
        pieces.append(("  (volatile/aggregate)", DIM))
    elif bad:
        pieces.append((uncorrected_text(vol, agg), BAD))
    else:
        pieces.append(("ok", OK))
    if sample.remapped_rows_failure:
        pieces.append((" row remap failed!", BAD))
    elif sample.remapped_rows_pending or sample.retired_pages_pending:
        pieces.append((" reset pending!", BAD))
    return pieces


def _count(value: int | None) -> str:
    return NA if value is None else str(value)


def uncorrected_text(volatile: int | None, aggregate: int | None) -> str:
    """``3 uncorr.``: the uncorrected ECC errors since the driver loaded, or over the GPU's
    life when none since (the roomy form and the findings give both counts)."""
    return f"{volatile if volatile else aggregate or 0} uncorr."


def throttle_pieces(reasons: frozenset[str] | None, *, long: bool = False) -> list[Piece]:
    """Active throttle reasons in words, trouble first and highlighted (with a ``!`` so the
    highlight survives NO_COLOR)."""
    if reasons is None:
        return [(NA, DIM)] if long else []
    if not reasons:
        return [("none", DIM)] if long else []
    ordered = sorted(reasons, key=lambda r: (r not in THROTTLE_TROUBLE, r))
    pieces: list[Piece] = []
    for i, reason in enumerate(ordered):
        if i:
            pieces.append((", ", LABEL))
        words = THROTTLE_REASONS.get(reason, reason.replace("_", " "))
        if reason in THROTTLE_TROUBLE:
            pieces.append((words + "!", BAD))
        else:
            pieces.append((words, DIM if reason == "gpu_idle" else VALUE))
    return pieces


def flow(items: Sequence[Sequence[Piece]], width: int, sep: str = "  ") -> Line:
    """As many whole items as fit in ``width``, separated by ``sep``."""
    b = LineBuilder()
    for item in items:
        w = sum(len(t) for t, _ in item)
        if not w:
            continue
        extra = len(sep) if b.width else 0
        if b.width + extra + w > width:
            continue
        if extra:
            b.add(sep)
        b.extend(item)
    return b.pieces


def temperature_items(s: GpuSample, info: GpuInfo, *, short: bool) -> list[list[Piece]]:
    """Each sensor coloured against its own limit (as the temperature rule judges it): the main
    one, hotspot, memory, then the fan. Where the main reading is the hotspot's
    (:func:`main_is_hotspot`), it is shown once, as the hotspot."""
    main_cls = temperature_class(s.temperature_gpu_c, info.temperature_slowdown_c)
    items: list[list[Piece]] = []
    if not main_is_hotspot(s, info):
        items.append([(fmt_temp(s.temperature_gpu_c), main_cls)])
    if s.temperature_hotspot_c is not None:
        cls = temperature_class(s.temperature_hotspot_c, info.temperature_hotspot_limit_c)
        text = fmt_temp(s.temperature_hotspot_c)
        items.append([("hot " if short else "hotspot ", LABEL), (text, cls)])
    if s.temperature_memory_c is not None:
        cls = temperature_class(s.temperature_memory_c, info.temperature_memory_limit_c)
        text = fmt_temp(s.temperature_memory_c)
        items.append([("mem " if short else "memory ", LABEL), (text, cls)])
    if s.fan_pct is not None:
        items.append([("fan ", LABEL), (fmt_pct(s.fan_pct), VALUE)])
    return items


def link_items(
    s: GpuSample, info: GpuInfo, *, pcie_max: bool = True, pcie_rates: bool = True
) -> list[list[Piece]]:
    """The host link (``PCIe 5×16 ↓776MB/s ↑17.2MB/s``) and, when read, the GPU-to-GPU link's
    rates (``NVL ↓582MB/s ↑584MB/s``, ``XGMI`` on AMD)."""
    pcie: list[Piece] = [("PCIe ", LABEL), *pcie_pieces(s, info, with_max=pcie_max)]
    if pcie_rates and (s.pcie_rx_bytes_per_s is not None or s.pcie_tx_bytes_per_s is not None):
        pcie += [
            (" ↓", LABEL),
            (fmt_rate(s.pcie_rx_bytes_per_s), VALUE),
            (" ↑", LABEL),
            (fmt_rate(s.pcie_tx_bytes_per_s), VALUE),
        ]
    items = [pcie]
    if s.nvlink_rx_bytes_per_s is not None or s.nvlink_tx_bytes_per_s is not None:
        items.append(
            [
                (f"{link_name(info.vendor, short=True)} ↓", LABEL),
                (fmt_rate(s.nvlink_rx_bytes_per_s), VALUE),
                (" ↑", LABEL),
                (fmt_rate(s.nvlink_tx_bytes_per_s), VALUE),
            ]
        )
    return items


def fit_links(s: GpuSample, info: GpuInfo, width: int) -> Line:
    """:func:`link_items` in ``width`` cells. A PCIe link trained below its maximum is longer
    (``3×8/5×16``): the maximum gives way first (the panel's fault list names it), then the PCIe
    rates, so the NVLink / XGMI rates stay in view."""
    for pcie_max, pcie_rates in ((True, True), (False, True), (False, False)):
        items = link_items(s, info, pcie_max=pcie_max, pcie_rates=pcie_rates)
        line = flow(items, width)
        if line_width(line) >= sum(line_width(i) for i in items) + 2 * (len(items) - 1):
            return line
    return flow(link_items(s, info), width)


@frozen
class Fault:
    """Something wrong on a GPU, in a full and a short form: a panel may shorten a fault, or
    count it in "+N more", but never leaves it out."""

    full: tuple[Piece, ...]
    short: tuple[Piece, ...]


TEMPERATURE_SENSORS: tuple[tuple[str, str, str], ...] = (
    ("", "temperature_gpu_c", "temperature_slowdown_c"),
    ("hot ", "temperature_hotspot_c", "temperature_hotspot_limit_c"),
    ("mem ", "temperature_memory_c", "temperature_memory_limit_c"),
)
"""(label, reading field, limit field): the sensors a panel shows, each with its own limit."""


def sensor_limit(info: GpuInfo, limit_field: str) -> float | None:
    limit: float | None = getattr(info, limit_field)
    return limit


def main_is_hotspot(sample: GpuSample, info: GpuInfo) -> bool:
    """The GPU's main temperature is its hotspot (junction) sensor's: an AMD MI300-class GPU has
    no edge sensor, and the adapter reads the junction as its GPU temperature (with the
    junction's limit). A panel then shows that temperature once, as the hotspot."""
    return (
        info.vendor == "amd"
        and sample.temperature_hotspot_c is not None
        and sample.temperature_gpu_c == sample.temperature_hotspot_c
        and info.temperature_slowdown_c == info.temperature_hotspot_limit_c
    )


def gpu_faults(sample: GpuSample, info: GpuInfo) -> list[Fault]:
    """The faults a GPU panel must show (the same conditions the health rules judge): ECC and
    row remapping, trouble throttle reasons, links down, a temperature at or near its limit, a
    PCIe link below its maximum under load."""
    faults: list[Fault] = []
    vol, agg = sample.ecc_volatile_uncorrected, sample.ecc_aggregate_uncorrected
    if (vol or 0) > 0 or (agg or 0) > 0:
        text = f"ECC {uncorrected_text(vol, agg)}"
        faults.append(Fault(((text, BAD),), (("ECC!", BAD),)))
    if sample.remapped_rows_failure:
        faults.append(Fault((("row remap failed!", BAD),), (("remap!", BAD),)))
    elif sample.remapped_rows_pending or sample.retired_pages_pending:
        faults.append(Fault((("reset pending!", BAD),), (("reset!", BAD),)))
    for reason in sorted(r for r in (sample.throttle_reasons or ()) if r in THROTTLE_TROUBLE):
        words = THROTTLE_REASONS.get(reason, reason.replace("_", " "))
        short = COMPACT_THROTTLE.get(reason, words)
        faults.append(Fault(((words + "!", BAD),), ((short + "!", BAD),)))
    down = sum(1 for link in sample.links or () if link.up is False)
    if down:
        faults.append(
            Fault(
                ((f"{down} link{'s' if down != 1 else ''} down!", BAD),), ((f"{down}↓link!", BAD),)
            )
        )
    for label, reading, limit_field in TEMPERATURE_SENSORS:
        if reading == "temperature_hotspot_c" and main_is_hotspot(sample, info):
            continue  # the main reading is this sensor's: one fault, not two
        value: float | None = getattr(sample, reading)
        level = temperature_level(value, sensor_limit(info, limit_field))
        if level in ("warn", "fail") and value is not None:
            cls = BAD if level == "fail" else WARN
            text = f"{label}{fmt_temp(value)}!"
            faults.append(Fault(((text, cls),), ((text, cls),)))
    if pcie_level(sample, info) == "warn":
        full = (("PCIe ", LABEL), *pcie_pieces(sample, info))
        faults.append(Fault(full, (("PCIe!", WARN),)))
    return faults


def fit_faults(
    head: Sequence[Sequence[Piece]],
    faults: Sequence[Fault],
    extras: Sequence[Sequence[Piece]],
    width: int,
    sep: str,
) -> Line:
    """``head`` (a badge), every fault and as many ``extras`` as fit in ``width``: extras go
    first, then faults take their short form, then the ones that still do not fit are counted in
    ``+N more (h)`` (or ``+N (h)``, where that keeps one more fault in view). The head and the
    count are never cut."""

    def joined(items: Sequence[Sequence[Piece]]) -> Line:
        out: list[Piece] = []
        for i, item in enumerate(items):
            if i:
                out.append((sep, LABEL))
            out.extend(item)
        return out

    def width_of(items: Sequence[Sequence[Piece]]) -> int:
        return line_width(joined(items))

    full = [list(f.full) for f in faults]
    short = [list(f.short) for f in faults]
    for fault_items in (full, short):
        for keep in range(len(extras), -1, -1):
            items = [*head, *fault_items, *extras[:keep]]
            if width_of(items) <= width:
                return joined(items)
    for shown in range(len(short) - 1, -1, -1):
        for count in (f"+{len(short) - shown} more (h)", f"+{len(short) - shown} (h)"):
            items = [*head, *short[:shown], [(count, WARN)]]
            if width_of(items) <= width:
                return joined(items)
    return fit(joined([*head, [(f"+{len(short)} (h)", WARN)]]), width)


# -- roomy and chart forms ----------------------------------------------------------------------


def board_line(info: GpuInfo, cw: int) -> Line:
    """Static facts: PCI bus, architecture, compute capability, SMs, VBIOS, persistence."""
    items: list[list[Piece]] = []
    if info.pci_bus_id:
        items.append([("PCI ", LABEL), (sanitize(info.pci_bus_id), VALUE)])
    if info.architecture:
        items.append([(sanitize(info.architecture), VALUE)])
    if info.compute_capability:
        label = "gfx " if info.vendor == "amd" else "CC "
        items.append([(label, LABEL), (sanitize(info.compute_capability), VALUE)])
    if info.sm_count:
        unit = " CUs" if info.vendor == "amd" else " SMs"
        items.append([(str(info.sm_count), VALUE), (unit, LABEL)])
    if info.vbios_version:
        items.append([("VBIOS ", LABEL), (sanitize(info.vbios_version), VALUE)])
    if info.persistence_mode is not None:
        items.append([("persistence ", LABEL), ("on" if info.persistence_mode else "off", VALUE)])
    return LineBuilder().add("Board".ljust(10), LABEL).extend(flow(items, cw - 10, " · ")).line(cw)


def gpu_charts(s: GpuSample, info: GpuInfo) -> list[Chart]:
    """Utilization and memory (0–100 %), power (0 to the limit), temperature (0 to the
    slowdown temperature): the top of a chart is the GPU's own ceiling. A GPU that reports no
    utilization (one in MIG mode above all) gets no utilization chart, rather than an empty one."""
    total = s.memory_total_bytes or info.memory_total_bytes
    mem = fraction(s.memory_used_bytes, total)
    limit = s.power_limit_w or info.power_default_limit_w
    power_top = limit or nice_ceiling(max(s.power_w or 0.0, 1.0) * 1.5)
    temp_top = info.temperature_slowdown_c or 100.0
    charts = [
        Chart(
            "utilization_gpu_pct",
            "GPU utilization %",
            "GPU %",
            fmt_pct(s.utilization_gpu_pct),
            PLOT_UTIL,
            0.0,
            100.0,
            "100",
        ),
        Chart(
            "memory_used_pct",
            "Memory used %",
            "MEM %",
            fmt_pct(None if mem is None else mem * 100),
            PLOT_MEM,
            0.0,
            100.0,
            "100",
        ),
        Chart(
            "power_w",
            "Power W",
            "PWR W",
            fmt_watts(s.power_w),
            PLOT_POWER,
            0.0,
            float(power_top),
            f"{power_top:.0f}",
        ),
        Chart(
            "temperature_gpu_c",
            "Temperature °C",
            "TEMP °C",
            fmt_temp(s.temperature_gpu_c),
            PLOT_TEMP,
            0.0,
            float(temp_top),
            f"{temp_top:.0f}",
        ),
    ]
    return charts if s.utilization_gpu_pct is not None else charts[1:]


def gpu_fetch(history: History | None, index: int) -> Fetch:
    """What a GPU's charts plot: its history, in time buckets (NaN without a history)."""
    if history is None:
        return lambda metrics, columns: ([[math.nan] * columns for _ in metrics], 1.0)
    return history_fetch(
        lambda last: history.timestamps(last=last),
        lambda metric, last: history.gpu_series(index, metric, last=last),
        history.capacity,
    )
