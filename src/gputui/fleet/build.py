"""From one refresh's answers (:class:`~gputui.fleet.promql.RefreshQueries`) to a
:class:`~gputui.fleet.model.Fleet`.

Series are grouped by ``instance`` (the node) and GPU: the ``gpu`` label of dcgm-exporter and
``gputui export``, AMD's ``gpu_id``. A GPU's identity and the node's hostname and driver come from
the ``last_seen`` answer, under whichever label the exporter uses (``hostname`` / ``Hostname``,
``UUID`` / ``gpu_uuid``, ``modelName`` / ``card_model``, ``DCGM_FI_SYSTEM_DRIVER_VERSION`` /
``DCGM_FI_DRIVER_VERSION`` / ``driver_version``). Each value is read under every name a
vocabulary gives it (:data:`~gputui.fleet.promql.SOURCES`: DCGM 4.7, legacy DCGM, AMD), the first
one published wins, and its unit is converted to the model's (bytes, percent, MHz, W): a node
publishing old and new names is read once. MIG slices of one GPU (a ``GPU_I_ID`` label) are
summed for framebuffer memory and maxed otherwise. DCGM's "blank" values (no reading: 2^47 and
above) count as unknown. Health is judged by :mod:`gputui.fleet.health`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gputui.core.metric_names import AMD_GPU_LABEL, Vocabulary, to_base
from gputui.fleet import promql as q
from gputui.fleet.client import Sample
from gputui.fleet.health import (
    MAX_COUNT,
    MAX_SECONDS,
    ExporterReadings,
    bad_value,
    exporter_gpu_health,
    finding_reason,
    fmt_age,
    is_stale,
    status_health,
)
from gputui.fleet.model import (
    HEALTH_ORDER,
    Fleet,
    FleetFinding,
    FleetGpu,
    FleetNode,
    Health,
    worst_health,
)

MIB = 1024 * 1024
DCGM_BLANK = float(1 << 47)
"""DCGM's blank values (FP64 blank 2^47, INT64 blanks near 2^63) mean "no reading"."""
_SUMMED = frozenset(
    source.series_key for key in ("fb_used", "fb_free", "fb_total", "fb_reserved")
    for source in q.SOURCES[key]
)  # fmt: skip
"""Summed over MIG slices; every other field takes the slices' maximum."""
_NODE_WIDE = frozenset(
    {q.GPUTUI_INFO, q.GPUTUI_NODE_STATUS, q.GPUTUI_STALL, q.GPUTUI_FINDINGS, q.GPUTUI_SCHEDULER_UP}
)
_VOCABULARY: dict[str, Vocabulary] = {
    **{name: "amd-dme" for name in q.AMD_FLEET_NAMES},
    **{name: "dcgm" for name in q.DCGM_NAMES},
    **{name: "dcgm-4.7" for name in q.DCGM_47_NAMES},
}
"""Which vocabulary a metric name belongs to (a node says which it speaks)."""
_AMD_JUNCTION = "gpu_junction_temperature"


@dataclass(slots=True)
class _Gpu:
    values: dict[str, float] = field(default_factory=dict)
    """By series key (:attr:`~gputui.fleet.promql.Source.series_key`), as published."""
    slices: dict[str, list[float]] = field(default_factory=dict)
    uuid: str | None = None
    name: str | None = None
    pci_bus_id: str | None = None
    current: bool = False
    last_seen: float | None = None

    def value(self, name: str) -> float | None:
        if name in self.values:
            return self.values[name]
        slices = self.slices.get(name)
        if not slices:
            return None
        return sum(slices) if name in _SUMMED else max(slices)

    def reading(self, key: str) -> tuple[float, q.Source] | None:
        """The quantity ``key`` in gputui's unit, from the first vocabulary that publishes it,
        with that source."""
        for source in q.SOURCES[key]:
            value = self.value(source.series_key)
            if value is not None:
                return to_base(source.unit, value), source
        return None

    def quantity(self, key: str) -> float | None:
        found = self.reading(key)
        return None if found is None else found[0]

    def vocabularies(self) -> set[Vocabulary]:
        out = set()
        for key in (*self.values, *self.slices):
            vocabulary = _VOCABULARY.get(key.partition(":")[0])
            if vocabulary is not None:
                out.add(vocabulary)
        return out


@dataclass(slots=True)
class _Node:
    instance: str
    job: str = ""
    hostname: str | None = None
    driver: str | None = None
    gputui: bool = False
    node_status: float | None = None
    stall: float | None = None
    scheduler_up: float | None = None
    """``gputui_scheduler_up``: 1 while a scheduler's allocations are read there (None: no
    scheduler, or not ``gputui export``)."""
    findings: list[FleetFinding] = field(default_factory=list)
    bad: list[str] = field(default_factory=list)
    """Values of gputui's node-wide series that are no reading (the node is unknown)."""
    gpus: dict[str, _Gpu] = field(default_factory=dict)
    """By the ``gpu`` label's text (an index)."""
    current: bool = False
    last_seen: float | None = None

    def gpu(self, text: str) -> _Gpu:
        found = self.gpus.get(text)
        if found is None:
            found = self.gpus[text] = _Gpu()
        return found


class _Nodes(dict[str, _Node]):
    def of(self, labels: Mapping[str, str]) -> _Node:
        instance = labels.get("instance", "")
        node = self.get(instance)
        if node is None:
            node = self[instance] = _Node(instance, job=labels.get("job", ""))
        return node


def build_fleet(
    answers: Mapping[str, Sequence[Sample]],
    *,
    url: str,
    time: float,
    match: str = "",
    node_filter: re.Pattern[str] | None = None,
    queries: Mapping[str, str] | None = None,
) -> Fleet:
    """The fleet at ``time`` from the answers to :func:`~gputui.fleet.promql.refresh_queries`
    (keys ``values``, ``up``, ``scraped_at``, ``scrapes``, ``last_seen``)."""
    nodes = _Nodes()
    _read_values(nodes, answers.get("values", ()))
    _read_last_seen(nodes, answers.get("last_seen", ()))
    up: dict[str, float] = {}
    for sample in answers.get("up", ()):
        instance = sample.labels.get("instance", "")
        up[instance] = sample.value
        node = nodes.get(instance)
        if node is not None and not node.job:
            node.job = sample.labels.get("job", "")
    gpu_jobs = {node.job for node in nodes.values()}
    for sample in answers.get("up", ()):
        labels = sample.labels
        if not sample.value and labels.get("job", "") in gpu_jobs:
            nodes.of(labels)  # a failing target in a job of GPU nodes: a node that is down
    scraped_at = _by_instance(answers.get("scraped_at", ()))
    scrapes = _by_instance(answers.get("scrapes", ()))
    built = []
    for node in nodes.values():
        interval = None
        count = scrapes.get(node.instance)
        if count:
            interval = q.RATE_WINDOW_S / count
        fleet_node = _node(
            node, time, up.get(node.instance), scraped_at.get(node.instance), interval
        )
        if node_filter is None or (
            node_filter.search(fleet_node.hostname) or node_filter.search(fleet_node.instance)
        ):
            built.append(fleet_node)
    built.sort(key=lambda n: (-HEALTH_ORDER[n.health], n.hostname, n.instance))
    return Fleet(
        url=url,
        time=time,
        nodes=tuple(built),
        match=match,
        node_filter=None if node_filter is None else node_filter.pattern,
        queries=dict(queries or {}),
    )


def _by_instance(samples: Sequence[Sample]) -> dict[str, float]:
    out: dict[str, float] = {}
    for sample in samples:
        if math.isfinite(sample.value):
            out[sample.labels.get("instance", "")] = sample.value
    return out


def _read_values(nodes: _Nodes, samples: Sequence[Sample]) -> None:
    """The values answer: a few labels per series (:data:`~gputui.fleet.promql.VALUE_LABELS`).
    The hot loop of a refresh (800 GPUs x 16 fields), kept lean."""
    node_wide = _NODE_WIDE
    blank = DCGM_BLANK
    labelled = q.AMD_LABELLED
    for sample in samples:
        labels = sample.labels
        instance = labels.get("instance", "")
        node = nodes.get(instance)
        if node is None:
            node = nodes[instance] = _Node(instance, current=True)
        elif not node.current:
            node.current = True
        name = labels.get("__name__", "")
        value = sample.value
        if name in node_wide:
            _node_wide(node, name, labels, value)
            continue
        gpu_text = labels.get("gpu") or labels.get(AMD_GPU_LABEL)
        if gpu_text is None:
            continue
        picked_by = labelled.get(name)
        if picked_by is not None:  # AMD's gpu_clock{clock_type="system"}: one key per type
            name = f"{name}:{labels.get(picked_by, '')}"
        gpu = node.gpus.get(gpu_text)
        if gpu is None:
            gpu = node.gpus[gpu_text] = _Gpu(current=True)
        elif not gpu.current:
            gpu.current = True
        if value != value or value >= blank or value <= -blank:  # NaN, or DCGM's "no reading"
            if name == q.GPUTUI_STATUS:  # gputui's status has no blank: _gpu says what is wrong
                gpu.values[name] = value
            continue
        if "GPU_I_ID" in labels:
            gpu.slices.setdefault(name, []).append(value)
        else:
            gpu.values[name] = value


def _node_wide(node: _Node, name: str, labels: Mapping[str, str], value: float) -> None:
    if name == q.GPUTUI_INFO:
        node.gputui = True
    elif name == q.GPUTUI_NODE_STATUS:
        node.gputui = True
        bad = bad_value(name, value, 0, 3, "a health status (0-3)")
        if bad is None:
            node.node_status = value
        else:
            node.bad.append(bad)
    elif name == q.GPUTUI_STALL:
        bad = bad_value(name, value, 0, MAX_SECONDS, "a number of seconds", whole=False)
        if bad is None:
            node.stall = value
        else:
            node.bad.append(bad)
    elif name == q.GPUTUI_SCHEDULER_UP:
        if value in (0.0, 1.0):  # anything else says nothing (and is no health fault)
            node.scheduler_up = max(node.scheduler_up or 0.0, value)
    elif name == q.GPUTUI_FINDINGS:
        bad = bad_value(name, value, 0, MAX_COUNT, "a count")
        if bad is not None:
            node.bad.append(bad)
        elif value > 0:
            node.findings.append(
                FleetFinding(
                    labels.get("rule", "?"),
                    labels.get("severity", "?"),
                    gpu_index(labels.get("gpu", "")),
                    int(value),
                )
            )


def _read_last_seen(nodes: _Nodes, samples: Sequence[Sample]) -> None:
    """Per-GPU timestamps of the newest sample over the lookback, with every label of the GPU
    (its identity: UUID, model, bus id, hostname, driver) or of ``gputui_info``."""
    for sample in samples:
        if not math.isfinite(sample.value):
            continue
        labels = sample.labels
        node = nodes.of(labels)
        node.job = node.job or labels.get("job", "")
        seen = sample.value
        if node.last_seen is None or seen > node.last_seen:
            node.last_seen = seen
        if node.hostname is None:
            node.hostname = labels.get("hostname") or labels.get("Hostname") or None
        gpu_text = labels.get("gpu") or labels.get(AMD_GPU_LABEL)
        if gpu_text is None:  # gputui_info
            node.gputui = True
            node.driver = labels.get("driver") or node.driver
            continue
        if node.driver is None:
            node.driver = (
                labels.get("DCGM_FI_SYSTEM_DRIVER_VERSION")
                or labels.get("DCGM_FI_DRIVER_VERSION")
                or labels.get("driver_version")
                or None
            )
        gpu = node.gpu(gpu_text)
        if gpu.last_seen is None or seen > gpu.last_seen:
            gpu.last_seen = seen
        gpu.uuid = gpu.uuid or labels.get("UUID") or labels.get("gpu_uuid") or None
        gpu.name = gpu.name or labels.get("modelName") or labels.get("card_model") or None
        gpu.pci_bus_id = gpu.pci_bus_id or labels.get("pci_bus_id") or None


def _silent(
    node: _Node, now: float, up: float | None, scraped_at: float | None, interval: float | None
) -> str | None:
    since = ""
    if node.last_seen is not None:
        age = fmt_age(now - node.last_seen)
        since = ", last seen just now" if age == "now" else f", last seen {age} ago"
    if up is None:
        return f"no longer scraped{since}"
    if not up:
        return f"scrape failing (up == 0){since}"
    if not any(gpu.current for gpu in node.gpus.values()):
        return f"no GPU metrics in its scrapes{since}"
    if is_stale(now, scraped_at, interval):
        assert scraped_at is not None and interval is not None
        age = fmt_age(now - scraped_at)
        return f"stale: newest sample {age} old (scraped every ~{interval:.0f}s)"
    return None


def _node(
    node: _Node, now: float, up: float | None, scraped_at: float | None, interval: float | None
) -> FleetNode:
    silent = _silent(node, now, up, scraped_at, interval)
    last_seen = scraped_at if (silent is None and scraped_at is not None) else node.last_seen
    indexed: dict[int, _Gpu] = {}
    for text, one in node.gpus.items():
        index = gpu_index(text)
        if index is not None:
            indexed[index] = one
    gpus = [_gpu(i, indexed[i], node, now, silent is not None) for i in sorted(indexed)]
    healths: list[Health] = [g.health for g in gpus]
    reasons: list[str] = []
    if silent is not None:
        health: Health = "unknown"
        reasons.append(silent)
    else:
        node_health = status_health(node.node_status)
        if node.stall:
            healths.append("fail")
            reasons.append(f"GPU library not answering for {node.stall:.0f}s")
        elif node_health is not None:
            healths.append(node_health)
        if node.bad:
            healths.append("unknown")
            reasons.extend(node.bad)
        health = worst_health(healths)
        for gpu in sorted(gpus, key=lambda g: (-HEALTH_ORDER[g.health], g.index)):
            reasons.extend(f"GPU {gpu.index}: {reason}" for reason in gpu.reasons)
        reasons.extend(
            finding_reason(f)
            for f in node.findings
            if f.gpu is None and f.severity in ("warn", "fail")
        )
    hostname = node.hostname or _host_of(node.instance)
    naming: set[Vocabulary] = set()
    for one in node.gpus.values():
        naming |= one.vocabularies()
    return FleetNode(
        instance=node.instance,
        hostname=hostname,
        job=node.job,
        source=_source(node, naming),
        naming=tuple(sorted(naming)),
        up=None if up is None else bool(up),
        scraped_at=scraped_at,
        last_seen=last_seen,
        scrape_interval_s=None if interval is None else round(interval, 3),
        silent=silent,
        health=health,
        reasons=tuple(reasons),
        driver_version=node.driver,
        stalled_s=node.stall,
        allocated_idle_gpus=_allocated_idle(node, silent is not None),
        gpus=tuple(gpus),
        findings=tuple(sorted(node.findings, key=_finding_order)),
    )


def _allocated_idle(node: _Node, silent: bool) -> int | None:
    """GPUs a scheduler allocated that do no work (``gputui_gpu_allocated_idle``), where the
    node's exporter reads a scheduler that answers; None where nothing is known."""
    if silent or not node.scheduler_up:
        return None
    return sum(
        1
        for gpu in node.gpus.values()
        if gpu.current and (gpu.value(q.GPUTUI_ALLOCATED_IDLE) or 0.0) >= 1.0
    )


def _finding_order(f: FleetFinding) -> tuple[int, int, str]:
    severity = {"fail": 0, "warn": 1, "info": 2}.get(f.severity, 3)
    return (severity, -1 if f.gpu is None else f.gpu, f.rule)


def _source(node: _Node, naming: set[Vocabulary]) -> str:
    if node.gputui:
        return "gputui"
    if "amd-dme" in naming:
        return "amd"
    return "dcgm" if node.gpus else "unknown"


def _gpu(index: int, gpu: _Gpu, node: _Node, now: float, silent: bool) -> FleetGpu:
    qty = gpu.quantity
    used = qty("fb_used")
    free = qty("fb_free")
    total = qty("fb_total")
    if total is None and used is not None and free is not None:
        total = used + free + (qty("fb_reserved") or 0.0)
    xid_value = qty("xid")
    xid = None if xid_value is None else int(xid_value)
    lost = bool(gpu.value(q.GPUTUI_LOST))
    temperature = gpu.reading("temp_gpu")
    temperature_memory = qty("temp_memory")
    hotspot = gpu.value(q.GPUTUI_HOTSPOT)
    if hotspot is None:
        hotspot = qty("temp_hotspot")
    health: Health
    reasons: list[str]
    status_value = gpu.value(q.GPUTUI_STATUS)
    status = status_health(status_value)
    bad = None
    if status_value is not None:
        bad = bad_value(q.GPUTUI_STATUS, status_value, 0, 3, "a health status (0-3)")
    if silent:
        health, reasons = "unknown", []
    elif bad is not None:
        health, reasons = "unknown", [bad]
    elif not gpu.current:
        seen = "" if gpu.last_seen is None else f", last seen {fmt_age(now - gpu.last_seen)} ago"
        health, reasons = "unknown", [f"no longer reported{seen}"]
    elif status is not None or lost:
        health = worst_health(["fail" if lost else "ok", status or "ok"])
        reasons = [
            finding_reason(f)
            for f in sorted(node.findings, key=_finding_order)
            if f.gpu == index and f.severity in ("warn", "fail")
        ]
        if lost and not any(r.startswith("gpu_lost") for r in reasons):
            reasons.insert(0, "lost: fell off the bus")
    else:
        violations = [qty(k) for k in ("thermal_violation", "hbm_violation", "hot_violation")]
        known = [v for v in violations if v is not None]
        judged_temperature = None
        if temperature is not None and temperature[1].metric != _AMD_JUNCTION:
            judged_temperature = temperature[0]
        health, reasons = exporter_gpu_health(
            ExporterReadings(
                xid=xid,
                temperature_c=judged_temperature,
                temperature_memory_c=temperature_memory,
                slowdown_c=qty("temp_slowdown"),
                memory_limit_c=qty("temp_memory_max"),
                row_remap_failed=qty("row_remap_failure"),
                amd_health=qty("health"),
                ecc_uncorrected=qty("ecc_uncorrected"),
                ras_fatal=qty("ras_fatal"),
                thermal_violation_pct=max(known) if known else None,
            )
        )
    return FleetGpu(
        index=index,
        uuid=gpu.uuid,
        name=gpu.name,
        pci_bus_id=gpu.pci_bus_id,
        util_pct=qty("util"),
        memory_util_pct=qty("memory_util"),
        memory_used_bytes=None if used is None else int(used),
        memory_total_bytes=None if total is None else int(total),
        power_w=qty("power"),
        power_limit_w=qty("power_limit"),
        temperature_c=None if temperature is None else temperature[0],
        temperature_memory_c=temperature_memory,
        temperature_hotspot_c=hotspot,
        clock_sm_mhz=qty("clock_sm"),
        clock_memory_mhz=qty("clock_memory"),
        xid=xid,
        lost=lost,
        health=health,
        reasons=tuple(reasons),
    )


def gpu_index(text: str) -> int | None:
    """The GPU index a ``gpu`` label holds (``0``, ``7``, ``12``), or None when it holds none: only
    ASCII digits, written without leading zeros, at most 5 of them (``²``, ``01`` or 5,000
    digits name no GPU)."""
    if 0 < len(text) <= 5 and text.isascii() and text.isdigit() and (text[0] != "0" or text == "0"):
        return int(text)
    return None


def _host_of(instance: str) -> str:
    """``node-01`` of ``node-01:9400`` (``[::1]:9400`` -> ``::1``)."""
    if instance.startswith("["):
        return instance[1:].partition("]")[0] or instance
    host, colon, port = instance.rpartition(":")
    return host if colon and port.isdigit() and host else instance


__all__ = ["DCGM_BLANK", "build_fleet", "gpu_index"]
