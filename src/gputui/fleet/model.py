"""The fleet as the view shows it: nodes, their GPUs and a health word for each, built from one
refresh's answers (:mod:`gputui.fleet.build`). Frozen, like the node dashboard's snapshots; units
in the field names, ``None`` where the metrics do not say."""

from __future__ import annotations

import math
from dataclasses import field
from typing import Literal

from gputui.core.frozen import frozen

Health = Literal["ok", "warn", "fail", "unknown"]
"""``unknown``: the node has gone silent (its scrape fails, or its series are stale or gone), so
nothing current is known about it."""
HEALTH_ORDER: dict[str, int] = {"ok": 0, "warn": 1, "unknown": 2, "fail": 3}
"""From harmless to failing; a silent node ranks above a warning, below a failure."""
HEALTH_SYMBOLS: dict[str, str] = {"ok": "✔", "warn": "▲", "unknown": "?", "fail": "✖"}


def worst_health(values: list[Health] | tuple[Health, ...]) -> Health:
    best: Health = "ok"
    for value in values:
        if HEALTH_ORDER[value] > HEALTH_ORDER[best]:
            best = value
    return best


def health_text(health: Health) -> str:
    """``✖ fail``, ``? unknown``, ...: the symbol keeps the word, readable without colour."""
    return f"{HEALTH_SYMBOLS[health]} {health}"


@frozen
class FleetFinding:
    """One of gputui's active health findings on a node (``gputui_health_findings``)."""

    rule: str
    severity: str
    gpu: int | None
    """None: node-wide."""
    count: int = 1


@frozen
class FleetGpu:
    index: int
    uuid: str | None = None
    name: str | None = None
    pci_bus_id: str | None = None
    util_pct: float | None = None
    memory_util_pct: float | None = None
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    temperature_c: float | None = None
    temperature_memory_c: float | None = None
    temperature_hotspot_c: float | None = None
    clock_sm_mhz: float | None = None
    clock_memory_mhz: float | None = None
    xid: int | None = None
    """The last XID (``DCGM_FI_DEV_XID_ERRORS``, ``DCGM_FI_DEV_XID_ERROR``; 0: none)."""
    lost: bool = False
    health: Health = "ok"
    reasons: tuple[str, ...] = ()
    """Why the health is not ok, most telling first."""

    @property
    def memory_fraction(self) -> float | None:
        if self.memory_used_bytes is None or not self.memory_total_bytes:
            return None
        return self.memory_used_bytes / self.memory_total_bytes


@frozen
class FleetNode:
    instance: str
    """The scrape target (``instance`` label): the node's identity."""
    hostname: str
    """The exporter's ``hostname`` / ``Hostname`` label, else the instance's host."""
    job: str = ""
    source: str = "dcgm"
    """``gputui`` (``gputui export``: its own health judgement), ``dcgm`` (dcgm-exporter's DCGM
    fields only), ``amd`` (AMD's Device Metrics Exporter) or ``unknown`` (a target that never
    answered with GPU metrics)."""
    naming: tuple[str, ...] = ()
    """The vocabularies its GPU metrics came in: ``dcgm`` (dcgm-exporter's legacy names),
    ``dcgm-4.7`` (DCGM 4.7 names, dcgm-exporter 4.9), both during a migration, or ``amd-dme``."""
    up: bool | None = None
    """The last scrape answered (None: the target is no longer scraped)."""
    scraped_at: float | None = None
    """Time of the last scrape (answered or not)."""
    last_seen: float | None = None
    """Time of the newest GPU data from this node."""
    scrape_interval_s: float | None = None
    """Estimated as two minutes / the scrapes Prometheus recorded in them (an overestimate while
    the target is younger than that, which only makes the staleness rule more lenient)."""
    silent: str | None = None
    """Why the node counts as gone silent (None: it answers)."""
    health: Health = "ok"
    reasons: tuple[str, ...] = ()
    driver_version: str | None = None
    stalled_s: float | None = None
    """gputui's exporter: seconds the GPU library has not answered (0 or None: answering)."""
    allocated_idle_gpus: int | None = None
    """gputui's exporter: GPUs the scheduler (Slurm, Kubernetes) allocated that do no work; None
    where no scheduler's allocations are read (dcgm-exporter, a node without one, or one whose
    scheduler stopped answering)."""
    gpus: tuple[FleetGpu, ...] = ()
    findings: tuple[FleetFinding, ...] = ()

    @property
    def gpu_count(self) -> int:
        return len(self.gpus)

    @property
    def models(self) -> str:
        """``8× NVIDIA H100 80GB HBM3``; mixed nodes list each model."""
        counts: dict[str, int] = {}
        for gpu in self.gpus:
            name = gpu.name or "?"
            counts[name] = counts.get(name, 0) + 1
        return ", ".join(f"{n}× {name}" for name, n in counts.items())

    def _values(self, attr: str) -> list[float]:
        out = []
        for gpu in self.gpus:
            value = getattr(gpu, attr)
            if value is not None and not math.isnan(value):
                out.append(float(value))
        return out

    @property
    def util_mean_pct(self) -> float | None:
        values = self._values("util_pct")
        return sum(values) / len(values) if values else None

    @property
    def util_max_pct(self) -> float | None:
        values = self._values("util_pct")
        return max(values) if values else None

    @property
    def memory_used_bytes(self) -> int | None:
        values = self._values("memory_used_bytes")
        return int(sum(values)) if values else None

    @property
    def memory_total_bytes(self) -> int | None:
        values = self._values("memory_total_bytes")
        return int(sum(values)) if values else None

    @property
    def power_w(self) -> float | None:
        values = self._values("power_w")
        return sum(values) if values else None

    @property
    def temperature_max_c(self) -> float | None:
        """The hottest sensor reading on the node (GPU or memory)."""
        values = self._values("temperature_c") + self._values("temperature_memory_c")
        return max(values) if values else None

    def age(self, now: float) -> float | None:
        """Seconds since :attr:`last_seen` (None: never seen)."""
        return None if self.last_seen is None else max(now - self.last_seen, 0.0)


@frozen
class Fleet:
    """One refresh: every node, at the time all its queries were evaluated."""

    url: str
    time: float
    nodes: tuple[FleetNode, ...] = ()
    match: str = ""
    node_filter: str | None = None
    queries: dict[str, str] = field(default_factory=dict)

    @property
    def health(self) -> Health:
        return worst_health(tuple(n.health for n in self.nodes))

    def counts(self) -> dict[str, int]:
        out = {"ok": 0, "warn": 0, "fail": 0, "unknown": 0}
        for node in self.nodes:
            out[node.health] += 1
        return out

    @property
    def gpu_count(self) -> int:
        return sum(n.gpu_count for n in self.nodes)

    def node(self, instance: str) -> FleetNode | None:
        for node in self.nodes:
            if node.instance == instance:
                return node
        return None


__all__ = [
    "HEALTH_ORDER",
    "HEALTH_SYMBOLS",
    "Fleet",
    "FleetFinding",
    "FleetGpu",
    "FleetNode",
    "Health",
    "health_text",
    "worst_health",
]
