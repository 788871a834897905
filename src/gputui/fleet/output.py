"""``gputui fleet --json``: one refresh as dataclasses the codec writes (``docs/fleet-schema.md``).

A GPU and a finding are written as the model holds them (:class:`~gputui.fleet.model.FleetGpu`,
:class:`~gputui.fleet.model.FleetFinding`); a node adds what the view derives from its GPUs. The
field order of each class is the order of the keys in the output. Written with ``nan_as_null``:
a value Prometheus held as NaN is ``null``.
"""

from __future__ import annotations

from gputui.core.frozen import frozen
from gputui.fleet.model import Fleet, FleetFinding, FleetGpu, FleetNode, Health


@frozen
class FleetSummary:
    nodes: int
    gpus: int
    ok: int
    warn: int
    fail: int
    unknown: int


@frozen
class FleetNodeOutput:
    instance: str
    hostname: str
    job: str
    source: str
    naming: tuple[str, ...]
    health: Health
    reasons: tuple[str, ...]
    up: bool | None
    silent: str | None
    last_seen: float | None
    last_seen_age_s: float | None
    driver_version: str | None
    gpu_count: int
    models: str
    util_mean_pct: float | None
    util_max_pct: float | None
    memory_used_bytes: int | None
    memory_total_bytes: int | None
    power_w: float | None
    temperature_max_c: float | None
    allocated_idle_gpus: int | None
    findings: tuple[FleetFinding, ...]
    gpus: tuple[FleetGpu, ...]


@frozen
class FleetOutput:
    """The ``gputui fleet --json`` object."""

    prometheus: str
    time: float
    match: str | None
    node_filter: str | None
    health: Health
    summary: FleetSummary
    nodes: tuple[FleetNodeOutput, ...]


def node_output(node: FleetNode, now: float) -> FleetNodeOutput:
    age = node.age(now)
    return FleetNodeOutput(
        instance=node.instance,
        hostname=node.hostname,
        job=node.job,
        source=node.source,
        naming=node.naming,
        health=node.health,
        reasons=node.reasons,
        up=node.up,
        silent=node.silent,
        last_seen=node.last_seen,
        last_seen_age_s=None if age is None else round(age, 3),
        driver_version=node.driver_version,
        gpu_count=node.gpu_count,
        models=node.models,
        util_mean_pct=node.util_mean_pct,
        util_max_pct=node.util_max_pct,
        memory_used_bytes=node.memory_used_bytes,
        memory_total_bytes=node.memory_total_bytes,
        power_w=node.power_w,
        temperature_max_c=node.temperature_max_c,
        allocated_idle_gpus=node.allocated_idle_gpus,
        findings=node.findings,
        gpus=node.gpus,
    )


def fleet_output(fleet: Fleet) -> FleetOutput:
    counts = fleet.counts()
    return FleetOutput(
        prometheus=fleet.url,
        time=fleet.time,
        match=fleet.match or None,
        node_filter=fleet.node_filter,
        health=fleet.health if fleet.nodes else "unknown",
        summary=FleetSummary(len(fleet.nodes), fleet.gpu_count, **counts),
        nodes=tuple(node_output(n, fleet.time) for n in fleet.nodes),
    )


__all__ = ["FleetNodeOutput", "FleetOutput", "FleetSummary", "fleet_output", "node_output"]
