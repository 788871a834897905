"""The fleet view's pieces: the columns of the node and GPU tables, the title lines, and the
per-GPU history charts of a node (a Line-API widget, drawn with the dashboard's sparklines)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from gputui.core.format import (
    NA,
    fmt_bytes,
    fmt_bytes_pair,
    fmt_clock,
    fmt_interval,
    fmt_mhz,
    fmt_pct,
    fmt_power_pair,
    fmt_temp,
    fmt_watts,
    sanitize,
    short_gpu_name,
)
from gputui.fleet.health import fmt_age
from gputui.fleet.model import HEALTH_ORDER, HEALTH_SYMBOLS, Fleet, FleetGpu, FleetNode, health_text
from gputui.fleet.source import NodeHistory
from gputui.tui.widgets.history_plot import sparkline
from gputui.tui.widgets.line_widget import (
    BAR_POWER,
    DIM,
    LABEL,
    PLOT_MEM,
    PLOT_UTIL,
    WARN,
    Line,
    LineBuilder,
    LineWidget,
)
from gputui.tui.widgets.table_model import ColumnSpec

# -- the node table --------------------------------------------------------------------------------


def node_gpus(node: FleetNode) -> str:
    """``8× H100``; ``4× A100, 4× H100`` on a mixed node; ``-`` when none is known."""
    counts: dict[str, int] = {}
    for gpu in node.gpus:
        name = short_gpu_name(sanitize(gpu.name)) if gpu.name else "?"
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{n}× {name}" for name, n in counts.items()) or "-"


def _util(node: FleetNode) -> str:
    mean, peak = node.util_mean_pct, node.util_max_pct
    if mean is None or peak is None:
        return NA
    return f"{mean:.0f}/{peak:.0f}%"


def _seen(node: FleetNode, now: float, stale: bool) -> str:
    """``now`` while the node answers and the data is fresh (its age would change every refresh
    and repaint the table); how long ago it was last seen once it has gone silent, or when the
    data itself is stale (no answer from Prometheus for a while)."""
    return fmt_age(node.age(now)) if node.silent or stale else "now"


def _seen_style(node: FleetNode, stale: bool) -> str:
    return "unknown" if node.silent else ("warn" if stale else "")


def _node_style(node: FleetNode) -> str:
    return "dim" if node.silent else ""


def _reason(reasons: Sequence[str]) -> str:
    if not reasons:
        return ""
    more = f" (+{len(reasons) - 1})" if len(reasons) > 1 else ""
    return sanitize(reasons[0]) + more


def node_columns(
    now: Callable[[], float], stale: Callable[[], bool]
) -> list[ColumnSpec[FleetNode]]:
    """Columns of the node table; ages are measured at ``now()`` (the fleet's query time, or the
    present while ``stale()``: the data is old)."""
    Column = ColumnSpec[FleetNode]
    return [
        Column(
            "host", "HOST", lambda n: sanitize(n.hostname), lambda n: n.hostname.lower(),
            style=_node_style,
        ),
        Column(
            "health", "HEALTH", lambda n: health_text(n.health), lambda n: HEALTH_ORDER[n.health],
            default_reverse=True, style=lambda n: n.health,
        ),
        Column(
            "instance", "INSTANCE", lambda n: sanitize(n.instance), lambda n: n.instance,
            style=lambda n: "dim",
        ),
        Column(
            "gpus", "GPUS", node_gpus, lambda n: n.gpu_count, default_reverse=True,
            style=_node_style,
        ),
        Column(
            "util", "UTIL avg/max", _util, lambda n: n.util_mean_pct, "right",
            default_reverse=True, style=_node_style,
        ),
        Column(
            "memory", "MEMORY", lambda n: fmt_bytes_pair(n.memory_used_bytes, n.memory_total_bytes),
            lambda n: n.memory_used_bytes, "right", default_reverse=True, style=_node_style,
        ),
        Column(
            "power", "POWER", lambda n: fmt_watts(n.power_w), lambda n: n.power_w, "right",
            default_reverse=True, style=_node_style,
        ),
        Column(
            "temp", "HOTTEST", lambda n: fmt_temp(n.temperature_max_c),
            lambda n: n.temperature_max_c, "right", default_reverse=True, style=_node_style,
        ),
        Column(
            "seen", "SEEN", lambda n: _seen(n, now(), stale()),
            lambda n: n.age(now()) if n.silent else 0.0, "right", default_reverse=True,
            style=lambda n: _seen_style(n, stale()),
        ),
        Column("reason", "WHY", lambda n: _reason(n.reasons), lambda n: _reason(n.reasons)),
    ]  # fmt: skip


def node_search_text(node: FleetNode) -> str:
    return " ".join(
        (node.hostname, node.instance, node.job, node.models, node.health, *node.reasons)
    )


# -- the GPU table ---------------------------------------------------------------------------------


def gpu_columns() -> list[ColumnSpec[FleetGpu]]:
    Column = ColumnSpec[FleetGpu]
    return [
        Column("gpu", "GPU", lambda g: str(g.index), lambda g: g.index, "right"),
        Column(
            "health", "HEALTH", lambda g: health_text(g.health), lambda g: HEALTH_ORDER[g.health],
            default_reverse=True, style=lambda g: g.health,
        ),
        Column(
            "name", "NAME", lambda g: short_gpu_name(sanitize(g.name)) if g.name else NA,
            lambda g: g.name or "",
        ),
        Column(
            "util", "UTIL", lambda g: fmt_pct(g.util_pct), lambda g: g.util_pct, "right",
            default_reverse=True,
        ),
        Column(
            "memory", "MEMORY", lambda g: fmt_bytes_pair(g.memory_used_bytes, g.memory_total_bytes),
            lambda g: g.memory_used_bytes, "right", default_reverse=True,
        ),
        Column(
            "mem_pct", "MEM%",
            lambda g: NA if g.memory_fraction is None else f"{g.memory_fraction * 100:.0f}%",
            lambda g: g.memory_fraction, "right", default_reverse=True,
        ),
        Column(
            "power", "POWER", lambda g: fmt_power_pair(g.power_w, g.power_limit_w),
            lambda g: g.power_w, "right", default_reverse=True,
        ),
        Column(
            "temp", "TEMP", lambda g: fmt_temp(g.temperature_c), lambda g: g.temperature_c,
            "right", default_reverse=True,
        ),
        Column(
            "mem_temp", "MEM TEMP", lambda g: fmt_temp(g.temperature_memory_c),
            lambda g: g.temperature_memory_c, "right", default_reverse=True,
        ),
        Column(
            "sm_clock", "SM CLK", lambda g: fmt_mhz(g.clock_sm_mhz), lambda g: g.clock_sm_mhz,
            "right", default_reverse=True,
        ),
        Column(
            "mem_clock", "MEM CLK", lambda g: fmt_mhz(g.clock_memory_mhz),
            lambda g: g.clock_memory_mhz, "right", default_reverse=True,
        ),
        Column(
            "xid", "XID", lambda g: NA if g.xid is None else str(g.xid), lambda g: g.xid, "right",
            default_reverse=True, style=lambda g: "fail" if g.xid else "",
        ),
        Column("reason", "WHY", lambda g: _reason(g.reasons), lambda g: _reason(g.reasons)),
    ]  # fmt: skip


def gpu_search_text(gpu: FleetGpu) -> str:
    return " ".join((str(gpu.index), gpu.name or "", gpu.uuid or "", gpu.health, *gpu.reasons))


# -- title lines -----------------------------------------------------------------------------------


def fleet_title(fleet: Fleet | None, url: str, interval: float) -> str:
    """``gputui fleet  URL · 12 nodes, 96 GPUs · ✖ 1 fail  ? 1 silent  ▲ 2 warn · 12:00:03 (every
    5s)``."""
    head = f"gputui fleet  {sanitize(url)}"
    if fleet is None:
        return f"{head} · waiting for the first answer (every {fmt_interval(interval)})"
    counts = fleet.counts()
    tally = []
    for health, word in (("fail", "fail"), ("unknown", "silent"), ("warn", "warn")):
        if counts[health]:
            tally.append(f"{HEALTH_SYMBOLS[health]} {counts[health]} {word}")
    return " · ".join(
        [
            head,
            f"{len(fleet.nodes)} nodes, {fleet.gpu_count} GPUs",
            "  ".join(tally) if tally else health_text("ok"),
            f"{fmt_clock(fleet.time)} (every {fmt_interval(interval)})",
        ]
    )


NAMING_TEXT = {"dcgm": "legacy names", "dcgm-4.7": "DCGM 4.7 names", "amd-dme": "AMD DME"}


def exporter_text(node: FleetNode) -> str:
    """``dcgm (DCGM 4.7 names)``, ``gputui (legacy names + DCGM 4.7 names)``, ``amd``."""
    named = [NAMING_TEXT.get(n, n) for n in node.naming if n != "amd-dme"]
    return f"{node.source} ({' + '.join(named)})" if named else node.source


def node_title(
    node: FleetNode | None, instance: str, now: float | None, stale: bool = False
) -> str:
    """The node screen's title; ``now``: when its age is measured (``stale``: the data is old,
    so even a node that answered is shown with its age)."""
    if node is None:
        return f"{sanitize(instance)} · not in the latest answer"
    parts = [
        f"{sanitize(node.hostname)} ({sanitize(node.instance)})",
        health_text(node.health),
        node_gpus(node),
    ]
    if node.driver_version:
        parts.append(f"driver {sanitize(node.driver_version)}")
    parts.append(f"via {exporter_text(node)}")
    if now is not None:
        answering = not (node.silent or stale)
        parts.append("answering" if answering else f"seen {fmt_age(node.age(now))} ago")
    return " · ".join(parts)


# -- a node's history ------------------------------------------------------------------------------

_CHARTS = (
    ("util", "util", PLOT_UTIL),
    ("memory", "mem", PLOT_MEM),
    ("power", "power", BAR_POWER),
    ("temperature", "temp", WARN),
)
TEMP_RANGE_C = (20.0, 100.0)
"""The temperature charts' scale."""


def _last(values: Sequence[float]) -> float | None:
    for value in reversed(values):
        if not math.isnan(value):
            return value
    return None


class NodeCharts(LineWidget):
    """One line per GPU: utilization, memory, power and temperature over the last minutes, from
    one range query per metric (:meth:`FleetSource.history`)."""

    DEFAULT_CSS = """
    NodeCharts {
        height: auto;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.gpus: tuple[FleetGpu, ...] = ()
        self.history: NodeHistory | None = None
        self.error: str | None = None

    def show(
        self, gpus: tuple[FleetGpu, ...], history: NodeHistory | None, error: str | None
    ) -> None:
        resize = len(gpus) != len(self.gpus)
        self.gpus, self.history, self.error = gpus, history, error
        if resize:
            self.styles.height = len(gpus) + 1
        self.rebuild()

    def build_lines(self, width: int, height: int) -> list[Line]:
        history = self.history
        head = LineBuilder().add("history ", LABEL)
        if self.error is not None:
            return [head.add(sanitize(self.error), WARN).line()]
        if history is None:
            return [head.add("loading…", DIM).line()]
        minutes = (history.times[-1] - history.times[0]) / 60 if len(history.times) > 1 else 0
        head.add(f"last {minutes:.0f} min · util 0-100% · memory of total · power to limit · "
                 f"temperature {TEMP_RANGE_C[0]:.0f}-{TEMP_RANGE_C[1]:.0f} °C", DIM)  # fmt: skip
        lines = [head.line()]
        label_w = max((len(f"GPU {g.index}") for g in self.gpus), default=5) + 1
        value_w = 6
        spark_w = max((width - label_w - len(_CHARTS) * (value_w + 8)) // len(_CHARTS), 4)
        peak_power = max(
            (v for g in self.gpus for v in history.of("power", g.index) if not math.isnan(v)),
            default=1.0,
        )
        for gpu in self.gpus:
            b = LineBuilder().add(f"GPU {gpu.index}".ljust(label_w), LABEL)
            for key, name, cls in _CHARTS:
                values = history.of(key, gpu.index)
                lo, hi = self._scale(key, gpu, values, peak_power)
                b.add(f" {name:<5}", LABEL)
                b.add(sparkline(values, spark_w, lo, hi) if values else " " * spark_w, cls)
                b.add(" " + self._value(key, _last(values)).rjust(value_w), "")
            lines.append(b.line())
        return lines

    @staticmethod
    def _scale(
        key: str, gpu: FleetGpu, values: Sequence[float], peak_power: float
    ) -> tuple[float, float]:
        """Utilization 0-100 %, memory 0-total, power 0-limit (without a published limit: the
        node's highest draw in the window), temperature :data:`TEMP_RANGE_C`."""
        if key == "util":
            return 0.0, 100.0
        if key == "memory":
            known = [v for v in values if not math.isnan(v)]
            return 0.0, float(gpu.memory_total_bytes or max(known, default=1.0) or 1.0)
        if key == "power":
            return 0.0, float(gpu.power_limit_w or peak_power or 1.0)
        return TEMP_RANGE_C

    @staticmethod
    def _value(key: str, value: float | None) -> str:
        if key == "util":
            return fmt_pct(value)
        if key == "memory":
            return fmt_bytes(value)
        if key == "power":
            return fmt_watts(value)
        return fmt_temp(value)


__all__ = [
    "NodeCharts",
    "fleet_title",
    "gpu_columns",
    "gpu_search_text",
    "node_columns",
    "node_gpus",
    "node_search_text",
    "node_title",
]
