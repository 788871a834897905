"""How the fleet view judges a GPU and a node from what Prometheus holds.

Per GPU, in this order:

1. The node is silent (its last scrape failed, ``up == 0``; it is no longer scraped; or its newest
   sample is older than two scrape intervals): ``unknown``, whatever the last values said.
2. ``gputui export`` published ``gputui_health_status`` for it: that judgement (0 ok, 1 info -> ok,
   2 warn, 3 fail), with the rules named by ``gputui_health_findings`` as reasons. gputui's rules
   already saw everything below (XIDs graded by code, temperatures against each sensor's own
   limit), so nothing is added to it. ``gputui_gpu_lost 1`` fails the GPU in any case.
3. DCGM fields only (dcgm-exporter): ``DCGM_FI_DEV_XID_ERRORS`` non-zero fails the GPU (the
   exporter keeps the last XID, so it stays failed until the exporter restarts: a fleet view
   cannot tell an acknowledged XID from a new one). Temperatures only ever warn, and
   conservatively: at or above the GPU's own slowdown limit minus 5 °C when the exporter publishes
   ``DCGM_FI_DEV_SLOWDOWN_TEMP`` (``DCGM_FI_DEV_MEM_MAX_OP_TEMP`` for memory), otherwise at
   :data:`GPU_TEMP_WARN_C` (GPU) / :data:`MEMORY_TEMP_WARN_C` (HBM), about 5 °C below the
   slowdown limits of current data-centre GPUs (H100, A100: 87-90 °C GPU, 95 °C memory).

A node is the worst of its GPUs and of gputui's node status (``gputui_node_health_status``: a
driver that stopped answering, ``gputui_backend_stall_seconds`` > 0, fails the node); a silent node
is ``unknown`` unless a failure is already known.

A value of gputui's series that no exporter publishes (NaN, ±Inf, a status outside 0-3 or not
whole, a negative or huge stall or count: :func:`bad_value`) decides nothing: that GPU or node is
``unknown``, with the value as the reason, and the rest of the fleet is judged as usual.
"""

from __future__ import annotations

import math

from gputui.core.xid import describe_xid
from gputui.fleet.model import FleetFinding, Health
from gputui.health.levels import TEMP_MARGIN_C

GPU_TEMP_WARN_C = 85.0
"""GPU temperature that warns when the exporter publishes no limit."""
MEMORY_TEMP_WARN_C = 90.0
"""Memory (HBM) temperature that warns when the exporter publishes no limit."""
STATUS_HEALTH: dict[int, Health] = {0: "ok", 1: "ok", 2: "warn", 3: "fail"}
"""``gputui_health_status`` -> health (info is ok, as in every gputui view)."""
STALE_INTERVALS = 2.0
"""A node whose newest sample is older than this many scrape intervals has gone silent."""
MIN_STALE_S = 2.0
"""Never call a node stale sooner than this (a scrape can take a moment)."""


MAX_SECONDS = float(2**31)
"""A longer stall (68 years) is no reading."""
MAX_COUNT = float(2**31)
"""A larger count of findings is no reading."""


def status_health(status: float | None) -> Health | None:
    """The health of a gputui status (0 ok, 1 info, 2 warn, 3 fail); None for no status, or a
    value that is none (see :func:`bad_value`)."""
    if status is None or status not in STATUS_HEALTH:
        return None
    return STATUS_HEALTH[int(status)]


def bad_value(
    name: str, value: float, low: float, high: float, what: str, *, whole: bool = True
) -> str | None:
    """Why ``value`` of the series ``name`` is not ``what`` (a number from ``low`` to ``high``,
    whole when ``whole``: NaN and ±Inf never are), or None when it is."""
    if low <= value <= high and not (whole and value != int(value)):
        return None
    return f"{name} is {fmt_value(value)}: not {what}"


def fmt_value(value: float) -> str:
    """A sample's value as Prometheus writes it: ``NaN``, ``+Inf``, ``-Inf``, ``2.5``."""
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "+Inf" if value > 0 else "-Inf"
    return f"{value:g}"


def xid_reason(code: int) -> str:
    _severity, meaning = describe_xid(code)
    return f"XID {code}: {meaning}"


def dcgm_gpu_health(
    *,
    xid: int | None,
    temperature_c: float | None,
    temperature_memory_c: float | None,
    slowdown_c: float | None = None,
    memory_limit_c: float | None = None,
) -> tuple[Health, list[str]]:
    """Health and reasons of a GPU judged from DCGM fields alone (rule 3 above)."""
    if xid:
        return "fail", [xid_reason(xid)]
    reasons = []
    gpu_limit = slowdown_c - TEMP_MARGIN_C if slowdown_c else GPU_TEMP_WARN_C
    if temperature_c is not None and temperature_c >= gpu_limit:
        reasons.append(f"GPU {temperature_c:.0f} °C (≥ {gpu_limit:.0f} °C)")
    mem_limit = memory_limit_c - TEMP_MARGIN_C if memory_limit_c else MEMORY_TEMP_WARN_C
    if temperature_memory_c is not None and temperature_memory_c >= mem_limit:
        reasons.append(f"memory {temperature_memory_c:.0f} °C (≥ {mem_limit:.0f} °C)")
    return ("warn" if reasons else "ok"), reasons


def finding_reason(finding: FleetFinding) -> str:
    """``temperature (fail)``, ``xid ×2 (warn)``, ``node: nvlink_down (fail)``."""
    times = f" ×{finding.count}" if finding.count > 1 else ""
    where = "node: " if finding.gpu is None else ""
    return f"{where}{finding.rule}{times} ({finding.severity})"


def is_stale(
    now: float, newest: float | None, interval_s: float | None, *, floor_s: float = MIN_STALE_S
) -> bool:
    """Whether a sample taken at ``newest`` is older than two scrape intervals at ``now``."""
    if newest is None or interval_s is None:
        return False
    return now - newest > max(STALE_INTERVALS * interval_s, floor_s)


def fmt_age(seconds: float | None) -> str:
    """``now``, ``12s``, ``3m``, ``2h``, ``-`` (unknown)."""
    if seconds is None or seconds != seconds:
        return "-"
    if seconds < 1.5:
        return "now"
    if seconds < 90:
        return f"{seconds:.0f}s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f}m"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.0f}h"
    return f"{seconds / 86400:.0f}d"


__all__ = [
    "GPU_TEMP_WARN_C",
    "MAX_COUNT",
    "MAX_SECONDS",
    "MEMORY_TEMP_WARN_C",
    "STALE_INTERVALS",
    "bad_value",
    "dcgm_gpu_health",
    "finding_reason",
    "fmt_age",
    "fmt_value",
    "is_stale",
    "status_health",
    "xid_reason",
]
