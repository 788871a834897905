"""The PromQL the fleet view sends: a fixed, small batch per refresh, whatever the fleet's size.

Every query carries the user's label selector (``--match '{job="gpu"}'``), merged into each
vector selector. One refresh is :func:`refresh_queries` (five instant queries, each answering for
every GPU of every node at once); a node's history is :func:`history_queries` (one range query per
metric for that node, every GPU in one answer). Nothing here is ever sent per GPU.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# -- metric names ----------------------------------------------------------------------------------
# Spelled out here, not imported from gputui.export.dcgm: that package needs prometheus-client,
# and the fleet view must not (tests check the names against the exporter's).

GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
MEM_COPY_UTIL = "DCGM_FI_DEV_MEM_COPY_UTIL"
FB_USED = "DCGM_FI_DEV_FB_USED"
FB_FREE = "DCGM_FI_DEV_FB_FREE"
FB_TOTAL = "DCGM_FI_DEV_FB_TOTAL"
FB_RESERVED = "DCGM_FI_DEV_FB_RESERVED"
POWER = "DCGM_FI_DEV_POWER_USAGE"
POWER_LIMIT = "DCGM_FI_DEV_POWER_MGMT_LIMIT"
GPU_TEMP = "DCGM_FI_DEV_GPU_TEMP"
MEMORY_TEMP = "DCGM_FI_DEV_MEMORY_TEMP"
SLOWDOWN_TEMP = "DCGM_FI_DEV_SLOWDOWN_TEMP"
MEM_MAX_OP_TEMP = "DCGM_FI_DEV_MEM_MAX_OP_TEMP"
SM_CLOCK = "DCGM_FI_DEV_SM_CLOCK"
MEM_CLOCK = "DCGM_FI_DEV_MEM_CLOCK"
XID = "DCGM_FI_DEV_XID_ERRORS"

GPUTUI_INFO = "gputui_info"
GPUTUI_LOST = "gputui_gpu_lost"
GPUTUI_STATUS = "gputui_health_status"
GPUTUI_NODE_STATUS = "gputui_node_health_status"
GPUTUI_FINDINGS = "gputui_health_findings"
GPUTUI_STALL = "gputui_backend_stall_seconds"
GPUTUI_HOTSPOT = "gputui_gpu_hotspot_temperature_celsius"

DCGM_NAMES: tuple[str, ...] = (
    GPU_UTIL,
    MEM_COPY_UTIL,
    FB_USED,
    FB_FREE,
    FB_TOTAL,
    FB_RESERVED,
    POWER,
    POWER_LIMIT,
    GPU_TEMP,
    MEMORY_TEMP,
    SLOWDOWN_TEMP,
    MEM_MAX_OP_TEMP,
    SM_CLOCK,
    MEM_CLOCK,
    XID,
)
"""The DCGM fields the fleet view reads (dcgm-exporter and ``gputui export`` alike)."""
GPUTUI_NAMES: tuple[str, ...] = (
    GPUTUI_INFO,
    GPUTUI_LOST,
    GPUTUI_STATUS,
    GPUTUI_NODE_STATUS,
    GPUTUI_FINDINGS,
    GPUTUI_STALL,
    GPUTUI_HOTSPOT,
)
"""gputui's own series, read where a node runs ``gputui export``."""
ANCHOR_NAMES: tuple[str, ...] = (GPUTUI_INFO, FB_USED)
"""Series every GPU target publishes while it answers (``gputui_info`` even when the driver
hangs; framebuffer use on dcgm-exporter, MIG slices included): their newest sample is when the
node was last seen."""

VALUE_LABELS = ("__name__", "instance", "gpu", "GPU_I_ID", "rule", "severity")
"""The labels the values query keeps (the largest answer of a refresh: every byte per series
counts). A GPU's identity (UUID, model, hostname, bus id, driver) comes with the ``last_seen``
answer and the node's job with ``up``, once per GPU or node instead of once per metric."""
LOOKBACK = "10m"
"""How far back a node that stopped answering is still listed (as gone silent)."""
LOOKBACK_STEP = "5s"
"""Resolution of the "last seen" subquery for a node that is no longer scraped."""
RATE_WINDOW_S = 120
"""Window over which scrapes are counted to estimate each target's scrape interval."""

HISTORY_METRICS: tuple[tuple[str, str], ...] = (
    ("util", GPU_UTIL),
    ("memory", FB_USED),
    ("power", POWER),
    ("temperature", GPU_TEMP),
)
"""``(key, metric)`` of each chart on a node's screen: one range query each."""

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


@dataclass(frozen=True, slots=True)
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
    every = names_selector(DCGM_NAMES + GPUTUI_NAMES, match)
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


def history_queries(instance: str, match: str = "") -> dict[str, str]:
    """One range query per chart for the node ``instance`` (all its GPUs in each answer)."""
    where = f"instance={quote(instance)}"
    return {key: selector(metric, match, where) for key, metric in HISTORY_METRICS}


__all__ = [
    "ANCHOR_NAMES",
    "DCGM_NAMES",
    "GPUTUI_NAMES",
    "HISTORY_METRICS",
    "LOOKBACK",
    "VALUE_LABELS",
    "RefreshQueries",
    "history_queries",
    "names_selector",
    "parse_match",
    "quote",
    "refresh_queries",
    "selector",
]
