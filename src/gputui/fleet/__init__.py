"""The fleet view's core: every GPU node as Prometheus holds it (``gputui fleet``).

- :mod:`~gputui.fleet.client`: the Prometheus HTTP API on ``urllib`` (auth from the environment,
  one clear :class:`PrometheusError` for whatever goes wrong);
- :mod:`~gputui.fleet.transport`: the HTTP GET under it (redirects only within the server);
- :mod:`~gputui.fleet.promql`: the queries: a fixed batch per refresh, whatever the fleet's size;
- :mod:`~gputui.fleet.build`: answers -> :class:`Fleet` (nodes, GPUs, DCGM units to bytes);
- :mod:`~gputui.fleet.health`: how a GPU and a node are judged (ok / warn / fail / unknown);
- :mod:`~gputui.fleet.source`: a refresh and a node's history, for the command and the TUI;
- :mod:`~gputui.fleet.output`: a refresh as ``gputui fleet --json`` writes it.

Reads dcgm-exporter's metrics and ``gputui export``'s alike (the same DCGM names). No Textual here
(the TUI is :mod:`gputui.tui.fleet`) and no Prometheus library.
"""

from __future__ import annotations

from gputui.fleet.client import PrometheusClient, PrometheusError, auth_from_env, normalize_url
from gputui.fleet.model import Fleet, FleetGpu, FleetNode, Health
from gputui.fleet.output import fleet_output
from gputui.fleet.promql import parse_match, refresh_queries
from gputui.fleet.source import FleetSource, NodeHistory

__all__ = [
    "Fleet",
    "FleetGpu",
    "FleetNode",
    "FleetSource",
    "Health",
    "NodeHistory",
    "PrometheusClient",
    "PrometheusError",
    "auth_from_env",
    "fleet_output",
    "normalize_url",
    "parse_match",
    "refresh_queries",
]
