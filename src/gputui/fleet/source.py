"""Where the fleet view gets its data: one :meth:`FleetSource.refresh` sends the fixed batch of
:func:`~gputui.fleet.promql.refresh_queries` (in parallel, all evaluated at the same instant) and
builds the :class:`~gputui.fleet.model.Fleet`; :meth:`FleetSource.history` sends one range query
per chart for one node. Both block (HTTP): the TUI calls them from a worker thread.
"""

from __future__ import annotations

import math
import re
import time as _time
from collections.abc import Callable

from gputui.core.frozen import frozen
from gputui.fleet import promql
from gputui.fleet.build import DCGM_BLANK, build_fleet, gpu_index
from gputui.fleet.client import PrometheusClient
from gputui.fleet.model import Fleet

HISTORY_WINDOW_S = 600.0
"""How far back a node's charts go."""
HISTORY_POINTS = 120
"""Points per chart (the step is the window divided by this)."""


@frozen
class NodeHistory:
    """A node's charts: per chart key (``util``, ``memory``, ``power``, ``temperature``), per GPU
    index, values on a regular grid of :attr:`times` (NaN where Prometheus has none). Memory is in
    bytes."""

    instance: str
    times: tuple[float, ...]
    series: dict[str, dict[int, list[float]]]

    def of(self, key: str, gpu: int) -> list[float]:
        return self.series.get(key, {}).get(gpu, [])


class FleetSource:
    """A Prometheus, a label selector (``--match``) and a node filter (``--node``)."""

    def __init__(
        self,
        client: PrometheusClient,
        *,
        match: str = "",
        node_filter: str | None = None,
        clock: Callable[[], float] = _time.time,
    ) -> None:
        """``match``: matchers as :func:`~gputui.fleet.promql.parse_match` returns them;
        ``node_filter``: a regular expression searched in each node's hostname and instance."""
        self.client = client
        self.match = match
        self.node_filter = None if node_filter is None else re.compile(node_filter)
        self.clock = clock
        self.queries = promql.refresh_queries(match)

    @property
    def url(self) -> str:
        return self.client.url

    def refresh(self) -> Fleet:
        """One batch of instant queries, one fleet. Raises PrometheusError."""
        at = self.clock()
        queries = self.queries.all()
        answers = self.client.query_many(queries, at)
        return build_fleet(
            answers,
            url=self.url,
            time=at,
            match=self.match,
            node_filter=self.node_filter,
            queries=queries,
        )

    def history(self, instance: str, *, window: float = HISTORY_WINDOW_S) -> NodeHistory:
        """The node's charts over the last ``window`` seconds. Raises PrometheusError."""
        end = self.clock()
        step = max(window / HISTORY_POINTS, 1.0)
        end = math.floor(end / step) * step  # aligned, so the grid does not shimmer
        start = end - step * (HISTORY_POINTS - 1)
        queries = promql.history_queries(instance, self.match)
        answers = self.client.query_range_many(queries, start, end, step)
        times = tuple(start + i * step for i in range(HISTORY_POINTS))
        series: dict[str, dict[int, list[float]]] = {}
        for key, found in answers.items():
            per_gpu: dict[int, list[float]] = {}
            for one in found:
                index = gpu_index(one.labels.get("gpu", ""))
                if index is None:
                    continue
                grid = per_gpu.setdefault(index, [math.nan] * HISTORY_POINTS)
                for t, value in one.points:
                    slot = round((t - start) / step)
                    if 0 <= slot < HISTORY_POINTS and not math.isnan(value) and value < DCGM_BLANK:
                        old = grid[slot]
                        # MIG slices of one GPU: memory adds up, the rest takes the maximum
                        if math.isnan(old):
                            grid[slot] = value
                        elif key == "memory":
                            grid[slot] = old + value
                        else:
                            grid[slot] = max(old, value)
            series[key] = per_gpu
        return NodeHistory(instance, times, series)


__all__ = ["HISTORY_POINTS", "HISTORY_WINDOW_S", "FleetSource", "NodeHistory"]
