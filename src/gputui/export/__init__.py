"""``gputui export``: Prometheus metrics with DCGM-compatible names (see
:mod:`~gputui.export.dcgm` for names and labels, :mod:`~gputui.export.collector` for the metrics,
:mod:`~gputui.export.server` for HTTP). Needs the ``export`` extra (``prometheus-client``)."""

from __future__ import annotations

from gputui.export.collector import GpuCollector, render
from gputui.export.dcgm import (
    DCGM_LABELS,
    DCGM_VALUES,
    MAX_LABEL_CHARS,
    DcgmSeries,
    DcgmValue,
    GpuReading,
    dcgm_labels,
    dcgm_series,
    label_value,
)
from gputui.export.server import Listen, MetricsServer, is_loopback, metrics_app, parse_listen

__all__ = [
    "DCGM_LABELS",
    "DCGM_VALUES",
    "MAX_LABEL_CHARS",
    "DcgmSeries",
    "DcgmValue",
    "GpuCollector",
    "GpuReading",
    "Listen",
    "MetricsServer",
    "dcgm_labels",
    "dcgm_series",
    "is_loopback",
    "label_value",
    "metrics_app",
    "parse_listen",
    "render",
]
