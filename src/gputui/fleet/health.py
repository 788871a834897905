"""How the fleet view judges a GPU and a node from what Prometheus holds.

Per GPU, in this order:

1. The node is silent (its last scrape failed, ``up == 0``; it is no longer scraped; or its newest
   sample is older than two scrape intervals): ``unknown``, whatever the last values said.
2. ``gputui export`` published ``gputui_health_status`` for it: that judgement (0 ok, 1 info -> ok,
   2 warn, 3 fail), with the rules named by ``gputui_health_findings`` as reasons. gputui's rules
   already saw everything below (XIDs graded by code, temperatures against each sensor's own
   limit), so nothing is added to it. ``gputui_gpu_lost 1`` fails the GPU in any case.
3. An exporter's fields only (dcgm-exporter in either naming, AMD's Device Metrics Exporter):
   fails on an XID (``DCGM_FI_DEV_XID_ERRORS``, ``DCGM_FI_DEV_XID_ERROR`` in DCGM 4.7: the exporter
   keeps the last XID, so the GPU stays failed until the exporter restarts; a fleet view cannot
   tell an acknowledged XID from a new one), on failed row remapping
   (``DCGM_FI_DEV_ROW_REMAP_FAILURE`` / ``_FAILED``), and on AMD's own verdict (``gpu_health``
   0), uncorrectable ECC errors (``gpu_ecc_uncorrect_total``) or a fatal RAS event
   (``gpu_afid_errors{severity="fatal"}``). Temperatures only ever warn, and conservatively: at
   or above the GPU's own slowdown limit minus 5 °C when the exporter publishes it
   (``DCGM_FI_DEV_SLOWDOWN_TEMP``; ``DCGM_FI_DEV_MEM_MAX_OP_TEMP`` for memory), otherwise at
   :data:`GPU_TEMP_WARN_C` (GPU, or AMD's edge sensor) / :data:`MEMORY_TEMP_WARN_C` (HBM), about
   5 °C below the slowdown limits of current data-centre GPUs (H100, A100: 87-90 °C GPU, 95 °C
   memory). AMD's thermal violation residencies warn above :data:`THERMAL_VIOLATION_WARN_PCT`.

A node is the worst of its GPUs and of gputui's node status (``gputui_node_health_status``: a
driver that stopped answering, ``gputui_backend_stall_seconds`` > 0, fails the node); a silent node
is ``unknown`` unless a failure is already known.

A value of gputui's series that no exporter publishes (NaN, ±Inf, a status outside 0-3 or not
whole, a negative or huge stall or count: :func:`bad_value`) decides nothing: that GPU or node is
``unknown``, with the value as the reason, and the rest of the fleet is judged as usual.
"""

from __future__ import annotations

import math

from gputui.core.frozen import frozen
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


@frozen
class ExporterReadings:
    """What an exporter other than gputui's says of one GPU's health, in gputui's units (None:
    not published)."""

    xid: int | None = None
    temperature_c: float | None = None
    """The GPU (edge) temperature: AMD's junction sensor runs hotter and is not judged here."""
    temperature_memory_c: float | None = None
    slowdown_c: float | None = None
    memory_limit_c: float | None = None
    row_remap_failed: float | None = None
    amd_health: float | None = None
    """AMD's ``gpu_health``: 1 healthy, 0 not."""
    ecc_uncorrected: float | None = None
    ras_fatal: float | None = None
    """AMD's ``gpu_afid_errors{severity="fatal"}``: the AFID of the last fatal RAS event."""
    thermal_violation_pct: float | None = None
    """The largest of AMD's thermal violation residencies (socket, HBM, processor hot), in %."""


THERMAL_VIOLATION_WARN_PCT = 10.0
"""AMD: a GPU held back by a thermal limit more than this share of the time warns."""


def exporter_gpu_health(r: ExporterReadings) -> tuple[Health, list[str]]:
    """Health and reasons of a GPU judged from an exporter's fields alone (rule 3 above)."""
    failures = []
    if r.xid:
        failures.append(xid_reason(r.xid))
    if r.row_remap_failed:
        failures.append("row remapping failed: the GPU needs replacing")
    if r.amd_health is not None and r.amd_health == 0:
        failures.append("the AMD exporter reports the GPU unhealthy")
    if r.ecc_uncorrected:
        failures.append(f"{r.ecc_uncorrected:.0f} uncorrectable ECC errors")
    if r.ras_fatal:
        failures.append(f"fatal RAS event (AFID {r.ras_fatal:.0f})")
    if failures:
        return "fail", failures
    reasons = []
    gpu_limit = r.slowdown_c - TEMP_MARGIN_C if r.slowdown_c else GPU_TEMP_WARN_C
    if r.temperature_c is not None and r.temperature_c >= gpu_limit:
        reasons.append(f"GPU {r.temperature_c:.0f} °C (≥ {gpu_limit:.0f} °C)")
    mem_limit = r.memory_limit_c - TEMP_MARGIN_C if r.memory_limit_c else MEMORY_TEMP_WARN_C
    if r.temperature_memory_c is not None and r.temperature_memory_c >= mem_limit:
        reasons.append(f"memory {r.temperature_memory_c:.0f} °C (≥ {mem_limit:.0f} °C)")
    violation = r.thermal_violation_pct
    if violation is not None and violation > THERMAL_VIOLATION_WARN_PCT:
        reasons.append(f"thermally limited {violation:.0f} % of the time")
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
    "THERMAL_VIOLATION_WARN_PCT",
    "ExporterReadings",
    "bad_value",
    "exporter_gpu_health",
    "finding_reason",
    "fmt_age",
    "fmt_value",
    "is_stale",
    "status_health",
    "xid_reason",
]
