"""The PromQL the fleet view sends: a fixed, small batch per refresh, whatever the fleet's size.

Every query carries the user's label selector (``--match '{job="gpu"}'``), merged into each
vector selector. One refresh is :func:`refresh_queries` (five instant queries, each answering for
every GPU of every node at once); a node's history is :func:`history_queries` (one range query per
chart for that node, every GPU in one answer). Nothing here is ever sent per GPU.

Nodes speak different vocabularies (:mod:`gputui.core.metric_names`): dcgm-exporter's legacy
names, the DCGM 4.7 names of dcgm-exporter 4.9, AMD's Device Metrics Exporter, gputui's own. The
refresh asks for every name of every vocabulary in its one values query (a regular expression on
``__name__``: its size grows with the vocabularies, never with the fleet) and
:mod:`gputui.fleet.build` converts units; a chart's range query ``or``s the vocabularies
(:func:`quantity_expr`) and converts in PromQL.
"""

from __future__ import annotations

import re

from gputui.core.frozen import frozen
from gputui.core.metric_names import (
    AMD_GPU_LABEL,
    AMD_METRICS,
    AMD_NAMES,
    DCGM_BY_KEY,
    ENFORCED_POWER_LIMIT_LEGACY,
    Unit,
    to_base,
)

# -- metric names ----------------------------------------------------------------------------------
# From gputui.core.metric_names, not gputui.export.dcgm: that package needs prometheus-client, and
# the fleet view must not.

GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
FB_USED = "DCGM_FI_DEV_FB_USED"
FB_USED_BYTES = DCGM_BY_KEY["fb_used"].current
SLOWDOWN_TEMP = "DCGM_FI_DEV_SLOWDOWN_TEMP"
MEM_MAX_OP_TEMP = "DCGM_FI_DEV_MEM_MAX_OP_TEMP"
AMD_TOTAL_VRAM = "gpu_total_vram"

GPUTUI_INFO = "gputui_info"
GPUTUI_LOST = "gputui_gpu_lost"
GPUTUI_STATUS = "gputui_health_status"
GPUTUI_NODE_STATUS = "gputui_node_health_status"
GPUTUI_FINDINGS = "gputui_health_findings"
GPUTUI_STALL = "gputui_backend_stall_seconds"
GPUTUI_HOTSPOT = "gputui_gpu_hotspot_temperature_celsius"
GPUTUI_ALLOCATED_IDLE = "gputui_gpu_allocated_idle"
GPUTUI_SCHEDULER_UP = "gputui_scheduler_up"

FLEET_KEYS: tuple[str, ...] = (
    "util",
    "memory_util",
    "fb_used",
    "fb_free",
    "fb_total",
    "fb_reserved",
    "power",
    "power_limit",
    "temp_gpu",
    "temp_memory",
    "temp_slowdown",
    "temp_memory_max",
    "clock_sm",
    "clock_memory",
    "xid",
    "row_remap_failure",
)
"""What the fleet view reads of each GPU, in every vocabulary that has it."""

DCGM_NAMES: tuple[str, ...] = (
    *(DCGM_BY_KEY[key].legacy for key in FLEET_KEYS),
    ENFORCED_POWER_LIMIT_LEGACY,
)
"""dcgm-exporter's legacy names of the fields the fleet view reads (``gputui export`` by
default)."""
DCGM_47_NAMES: tuple[str, ...] = tuple(DCGM_BY_KEY[key].current for key in FLEET_KEYS)
"""The same fields under their DCGM 4.7 names (dcgm-exporter 4.9, ``--dcgm-names 4.7``)."""
AMD_FLEET_NAMES: tuple[str, ...] = AMD_NAMES
"""AMD Device Metrics Exporter metrics the fleet view reads."""
GPUTUI_NAMES: tuple[str, ...] = (
    GPUTUI_INFO,
    GPUTUI_LOST,
    GPUTUI_STATUS,
    GPUTUI_NODE_STATUS,
    GPUTUI_FINDINGS,
    GPUTUI_STALL,
    GPUTUI_HOTSPOT,
    GPUTUI_ALLOCATED_IDLE,
    GPUTUI_SCHEDULER_UP,
)
"""gputui's own series, read where a node runs ``gputui export``."""
EXPORTER_NAMES: tuple[str, ...] = DCGM_NAMES + DCGM_47_NAMES + AMD_FLEET_NAMES
"""Every exporter metric the fleet view reads, all vocabularies."""
ANCHOR_NAMES: tuple[str, ...] = (GPUTUI_INFO, FB_USED, FB_USED_BYTES, AMD_TOTAL_VRAM)
"""Series every GPU target publishes while it answers (``gputui_info`` even when the driver
hangs; framebuffer use on dcgm-exporter, MIG slices included, in either naming; total VRAM on
AMD's exporter, which leaves used VRAM out on a virtualisation host): their newest sample is when
the node was last seen."""

VALUE_LABELS = (
    "__name__",
    "instance",
    "gpu",
    AMD_GPU_LABEL,
    "GPU_I_ID",
    "rule",
    "severity",
    "clock_type",
)
"""The labels the values query keeps (the largest answer of a refresh: every byte per series
counts): the GPU (``gpu``, AMD's ``gpu_id``), a MIG slice, what tells one gputui finding or one
AMD clock or RAS severity from another. A GPU's identity (UUID, model, hostname, bus id, driver)
comes with the ``last_seen`` answer and the node's job with ``up``, once per GPU or node instead
of once per metric."""
LOOKBACK = "10m"
"""How far back a node that stopped answering is still listed (as gone silent)."""
LOOKBACK_STEP = "5s"
"""Resolution of the "last seen" subquery for a node that is no longer scraped."""
RATE_WINDOW_S = 120
"""Window over which scrapes are counted to estimate each target's scrape interval."""


@frozen
class Source:
    """One way a vocabulary publishes a quantity: a metric, its unit, and the label value that
    picks its series (AMD's ``gpu_clock{clock_type="system"}``)."""

    metric: str
    unit: Unit
    label: tuple[str, str] | None = None

    @property
    def series_key(self) -> str:
        """How the fleet view files a value: the metric, with the picking label's value."""
        return self.metric if self.label is None else f"{self.metric}:{self.label[1]}"


def _sources(key: str) -> tuple[Source, ...]:
    out = []
    if key in DCGM_BY_KEY:
        field = DCGM_BY_KEY[key]
        out.append(Source(field.current, field.current_unit))  # the precise one first
        out.append(Source(field.legacy, field.legacy_unit))
    if key == "power_limit":
        out.append(Source(ENFORCED_POWER_LIMIT_LEGACY, "watts"))
    amd_keys = {"temp_gpu": ("temp_edge", "temp_hotspot"), "power": AMD_POWER_KEYS}
    for amd_key in amd_keys.get(key, (key,)):
        out.extend(Source(m.name, m.unit, m.label) for m in AMD_METRICS if m.key == amd_key)
    return tuple(out)


AMD_POWER_KEYS = ("power", "power_socket", "power_average")
SOURCES: dict[str, tuple[Source, ...]] = {
    key: _sources(key)
    for key in (*FLEET_KEYS, *(m.key for m in AMD_METRICS if m.key not in FLEET_KEYS))
}
"""Per quantity, where each vocabulary publishes it, in order of preference: DCGM 4.7 (bytes and
Hz are exact), legacy DCGM, AMD. A node that publishes two of them is read once."""
AMD_LABELLED: dict[str, str] = {m.name: m.label[0] for m in AMD_METRICS if m.label is not None}
"""AMD metrics whose series a label tells apart (``gpu_clock`` by ``clock_type``)."""

HISTORY_KEYS: tuple[tuple[str, str], ...] = (
    ("util", "util"),
    ("memory", "fb_used"),
    ("power", "power"),
    ("temperature", "temp_gpu"),
)
"""``(chart, quantity)`` of each chart on a node's screen: one range query each."""

# -- label selectors -------------------------------------------------------------------------------

_MATCHER = re.compile(
    r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*(,|$)', re.DOTALL
)


def parse_match(text: str | None) -> str:
    """The matchers of a label selector, without braces: ``'{job="gpu"}'`` and ``'job="gpu"'``
    both give ``'job="gpu"'``; ``None`` or ``'{}'`` give ``''``. ValueError saying what is wrong
    otherwise (a metric name, a missing quote, ...)."""
    if text is None:
        return ""
    body = text.strip()
    if body.startswith("{"):
        if not body.endswith("}"):
            raise ValueError(f"--match {text!r}: the selector must end with '}}'")
        body = body[1:-1].strip()
    elif body.endswith("}"):
        raise ValueError(
            f"--match {text!r}: a label selector only, without a metric name, "
            "e.g. '{job=\"gpu\"}'"
        )
    if not body:
        return ""
    matchers: list[str] = []
    pos = 0
    while pos < len(body):
        found = _MATCHER.match(body, pos)
        if found is None:
            raise ValueError(
                f"--match {text!r}: expected label matchers such as "
                f'\'{{job="gpu", instance=~"node-.*"}}\' (at {body[pos:]!r})'
            )
        name, op, value, _sep = found.groups()
        if name == "__name__":
            raise ValueError(f"--match {text!r}: it applies to every metric; leave out __name__")
        matchers.append(f'{name}{op}"{value}"')
        pos = found.end()
    return ",".join(matchers)


def quote(value: str) -> str:
    """A PromQL string literal."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def selector(metric: str | None, match: str, *extra: str) -> str:
    """``metric{match,extra...}`` (``{...}`` alone when ``metric`` is None)."""
    parts = [p for p in (match, *extra) if p]
    inner = ",".join(parts)
    if metric is None:
        return "{" + inner + "}"
    return f"{metric}{{{inner}}}" if inner else metric


def names_selector(names: tuple[str, ...], match: str) -> str:
    """One selector for several metrics: ``{__name__=~"A|B|C",match}``."""
    return selector(None, f'__name__=~"{"|".join(names)}"', match)


# -- the batch -------------------------------------------------------------------------------------


@frozen
class RefreshQueries:
    """The instant queries of one refresh, all evaluated at the same time."""

    values: str
    """Every GPU series the view reads (DCGM fields and gputui's health), in one answer, with only
    the labels that tell them apart (:data:`VALUE_LABELS`; series that differ in a pod's labels
    collapse into one)."""
    up: str
    """Each target's last scrape: 1 answered, 0 failed."""
    scraped_at: str
    """When each target was last scraped (the timestamp of its ``up`` sample)."""
    scrapes: str
    """Scrapes of each target in the last :data:`RATE_WINDOW_S` (its scrape interval)."""
    last_seen: str
    """When each GPU of each target was last published, over :data:`LOOKBACK`, with the GPU's
    labels: lists the GPUs and nodes that stopped answering or are no longer scraped."""

    def all(self) -> dict[str, str]:
        return {
            "values": self.values,
            "up": self.up,
            "scraped_at": self.scraped_at,
            "scrapes": self.scrapes,
            "last_seen": self.last_seen,
        }


def refresh_queries(match: str = "") -> RefreshQueries:
    """The batch of one refresh for a selector from :func:`parse_match`."""
    up = selector("up", match)
    anchor = names_selector(ANCHOR_NAMES, match)
    every = names_selector(EXPORTER_NAMES + GPUTUI_NAMES, match)
    return RefreshQueries(
        values=f"max by ({', '.join(VALUE_LABELS)}) ({every})",
        up=up,
        scraped_at=f"timestamp({up})",
        scrapes=f"count_over_time({up}[{RATE_WINDOW_S}s])",
        # The subquery's newest step can be up to LOOKBACK_STEP old, so a node scraped for the
        # first time moments ago has no point in it yet: ``or`` the newest sample itself, or such
        # a node shows without its identity (hostname, model, UUID) until the next step.
        last_seen=(
            f"max_over_time(timestamp({anchor})[{LOOKBACK}:{LOOKBACK_STEP}]) or timestamp({anchor})"
        ),
    )


def quantity_expr(key: str, match: str = "", *extra: str) -> str:
    """One vector of the quantity ``key`` (see :data:`SOURCES`) in gputui's unit, labelled
    ``gpu``, from whichever vocabulary each node speaks: ``A or on(instance, gpu, GPU_I_ID) B``,
    so a node that publishes two names for it is counted once (the first wins). Its size is that
    of the vocabularies, whatever the number of GPUs."""
    parts = []
    for source in SOURCES[key]:
        picks = () if source.label is None else (f"{source.label[0]}={quote(source.label[1])}",)
        expr = selector(source.metric, match, *extra, *picks)
        factor = to_base(source.unit, 1.0)
        if factor != 1.0:
            expr = f"{expr} * {factor!r}"
        if source.metric in AMD_NAMES:  # AMD names the GPU gpu_id
            expr = f'label_replace({expr}, "gpu", "$1", "{AMD_GPU_LABEL}", "(.+)")'
        parts.append(expr)
    return " or on(instance, gpu, GPU_I_ID) ".join(parts)


def history_queries(instance: str, match: str = "") -> dict[str, str]:
    """One range query per chart for the node ``instance`` (all its GPUs in each answer), in
    gputui's units (percent, bytes, W, °C) whatever the node's exporter."""
    where = f"instance={quote(instance)}"
    return {chart: quantity_expr(key, match, where) for chart, key in HISTORY_KEYS}


__all__ = [
    "AMD_FLEET_NAMES",
    "AMD_LABELLED",
    "ANCHOR_NAMES",
    "DCGM_47_NAMES",
    "DCGM_NAMES",
    "EXPORTER_NAMES",
    "FLEET_KEYS",
    "GPUTUI_NAMES",
    "HISTORY_KEYS",
    "LOOKBACK",
    "SOURCES",
    "VALUE_LABELS",
    "RefreshQueries",
    "Source",
    "history_queries",
    "names_selector",
    "parse_match",
    "quantity_expr",
    "quote",
    "refresh_queries",
    "selector",
]
