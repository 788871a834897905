"""The Prometheus collector: the sampler's latest reading rendered at scrape time.

The one module that imports ``prometheus_client`` (the ``export`` extra). :class:`GpuCollector`
renders :attr:`Sampler.latest <gputui.engine.sampler.Sampler.latest>` at scrape time: a scrape never
polls the GPUs, the sampler thread does, every ``--interval``. It also listens to every reading
(``Sampler.add_listener``) to keep what a single reading does not hold: the last XID per GPU and
the count of events since the exporter started.

The DCGM series follow ``dcgm_names`` (:func:`~gputui.export.dcgm.dcgm_series`): dcgm-exporter's
legacy names and units (the default), DCGM 4.7's, or both; everything else is the same in every
mode. Like DCGM, its counters carry no ``_total`` suffix on the wire
(``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION``, ``DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL`` as it is):
:func:`render` writes their ``# TYPE`` lines DCGM's way, and the endpoint always answers in the
Prometheus text format 0.0.4 (OpenMetrics would require the suffix). Two DCGM fields that are
rates are gauges here: the NVLink throughput, TX + RX (legacy ``DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL``
in MiB/s computed as DCGM does, KiB/s / 1000, which dcgm-exporter mislabels a counter; bytes/s
under 4.7) and ``DCGM_FI_PROF_{PCIE,NVLINK}_{TX,RX}_BYTES`` (bytes/s). What DCGM lacks is under
``gputui_*`` in base units (``_bytes``, ``_celsius``, ``_ratio``), counters with ``_total``.

A value the hardware does not report (None) is not exported at all; a GPU that fell off the bus
exports only ``gputui_gpu_lost 1`` (its health findings stay listed). Per-process memory is
bounded: the top N processes by memory per GPU, the rest summed into ``pid="other"``.

MIG: each instance of a GPU in MIG mode exports ``gputui_mig_memory_used_bytes`` and
``gputui_mig_memory_total_bytes`` labelled ``gpu``, ``gi``, ``ci`` (GPU / compute instance ids)
and ``profile`` (``1g.10gb``), and ``gputui_mig_info`` (1) adding its ``uuid``. On a node with a
GPU in MIG mode the per-process series carry a ``mig`` label, the instance's UUID (empty for a
process outside MIG, and on ``pid="other"``); elsewhere they keep the labels they always had.

Who uses the GPUs: every per-process series also carries ``slurm_job``, ``pod``, ``namespace`` and
``container`` (empty when unknown, which Prometheus treats as absent), and GPU memory, SM % and
process counts are summed per Slurm job, pod and container on each GPU
(``gputui_{job,pod,container}_*``, labelled ``slurm_job``, ``pod`` and ``namespace``,
``container``; bounded like the processes). No series has a ``job`` or ``instance`` label: those
are Prometheus' own (a target's ``job`` would be renamed ``exported_job``). Usage since the
exporter started (:mod:`gputui.core.usage`): ``gputui_gpu_energy_joules_total``,
``gputui_gpu_idle_seconds_total``, ``gputui_gpu_held_idle_seconds_total``,
``gputui_gpu_observed_seconds_total`` and, with a price, ``gputui_node_idle_cost_per_hour``. Who
the scheduler allocated each GPU to, and whether it idles (``gputui_gpu_allocated``,
``gputui_gpu_allocated_idle``, ``gputui_gpu_allocated_idle_seconds_total``,
``gputui_allocation_idle_cost``, ``gputui_scheduler_up``): :mod:`gputui.export.allocation_series`.

Probe metrics (achieved bandwidth and FLOP/s) are not exported: they arrive with the performance
probe, which will add its own ``gputui_probe_*`` families here.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from gputui import __version__
from gputui.core.metric_names import DCGM_NAMES, DcgmNames, Vocabulary
from gputui.core.mig import has_mig, mig_views
from gputui.core.model import (
    SEVERITY_ORDER,
    THROTTLE_REASONS,
    Finding,
    GpuSample,
    NodeInfo,
    ProcessSample,
    Snapshot,
)
from gputui.core.performance import LIMITER_WORDS
from gputui.engine.sampler import Sampler
from gputui.export.allocation_series import allocation_series
from gputui.export.dcgm import (
    BARE_COUNTERS,
    DEFAULT_TOP_PROCESSES,
    GpuReading,
    dcgm_labels,
    dcgm_series,
    label_value,
)
from gputui.health.rollup import gpu_severity, worst
from gputui.host.workload import WorkloadUsage, short_container, usage_by, workload_of


class _Families:
    """Families by name, created on first sample, yielded in creation order (empty ones never).
    Every label value goes through :func:`~gputui.export.dcgm.label_value` on its way in."""

    def __init__(self) -> None:
        self._by_name: dict[str, Metric] = {}
        self._gauges: dict[str, GaugeMetricFamily] = {}
        self._counters: dict[str, CounterMetricFamily] = {}

    def gauge(self, name: str, doc: str, labels: dict[str, str], value: float) -> None:
        family = self._gauges.get(name)
        if family is None:
            family = self._gauges[name] = GaugeMetricFamily(name, doc, labels=list(labels))
            self._by_name[name] = family
        family.add_metric([label_value(v) for v in labels.values()], value)

    def counter(self, name: str, doc: str, labels: dict[str, str], value: float) -> None:
        family = self._counters.get(name)
        if family is None:
            family = self._counters[name] = CounterMetricFamily(name, doc, labels=list(labels))
            self._by_name[name] = family
        family.add_metric([label_value(v) for v in labels.values()], value)

    def bare_counter(self, name: str, doc: str, labels: dict[str, str], value: float) -> None:
        """A counter whose sample keeps ``name`` as is (DCGM style, no ``_total`` added)."""
        family = self._by_name.get(name)
        if family is None:
            family = self._by_name[name] = Metric(name, doc, "counter")
        family.add_sample(name, {k: label_value(v) for k, v in labels.items()}, value)

    def __iter__(self) -> Iterator[Metric]:
        return iter(self._by_name.values())


class GpuCollector(Collector):
    """Renders the sampler's latest snapshot as metric families at each scrape."""

    def __init__(
        self,
        sampler: Sampler,
        *,
        top_processes: int = DEFAULT_TOP_PROCESSES,
        dcgm_names: DcgmNames = "legacy",
    ) -> None:
        """``dcgm_names``: the DCGM names and units published (:data:`DCGM_NAMES`); ValueError
        for another."""
        if dcgm_names not in DCGM_NAMES:
            raise ValueError(f"unknown DCGM names {dcgm_names!r} (choose from {list(DCGM_NAMES)})")
        self.sampler = sampler
        self.top_processes = max(int(top_processes), 0)
        self.dcgm_names: DcgmNames = dcgm_names
        self._dcgm = dcgm_series(dcgm_names)
        self._lock = threading.Lock()
        self._last_xid: dict[int, int] = {}
        self._events: Counter[tuple[int | None, str]] = Counter()
        sampler.add_listener(self.observe)

    def observe(self, snapshot: Snapshot) -> None:
        """Keep what outlives one reading (called after every poll, on the sampler thread)."""
        with self._lock:
            for event in snapshot.events:
                self._events[(event.gpu_index, event.kind)] += 1
                if event.kind == "xid" and event.gpu_index is not None and event.code is not None:
                    self._last_xid[event.gpu_index] = event.code

    def collect(self) -> Iterable[Metric]:
        snapshot: Snapshot | None = self.sampler.latest
        node = snapshot.node if snapshot is not None else self.sampler.node
        info = GaugeMetricFamily(
            "gputui_info",
            "gputui version, backend and driver (always 1).",
            labels=["version", "backend", "driver"],
        )
        if node is not None:
            values = [__version__, node.backend, node.driver_version or ""]
            info.add_metric([label_value(v) for v in values], 1)
        yield info
        if snapshot is None:
            return
        yield from self._families(snapshot)

    def _families(self, snapshot: Snapshot) -> Iterator[Metric]:
        node = snapshot.node
        out = _Families()
        out.gauge(
            "gputui_snapshot_timestamp_seconds",
            "Unix time of the reading these metrics show.",
            {},
            snapshot.timestamp,
        )
        with self._lock:
            last_xid = dict(self._last_xid)
            events = dict(self._events)
        active = [f for f in snapshot.findings if f.active]
        stall = snapshot.stall
        out.gauge(
            "gputui_backend_stall_seconds",
            "Seconds the GPU library has not answered the current reading (0: answering). "
            "While it is not answering, no GPU values are exported (they would be stale).",
            {},
            0.0 if stall is None else max(snapshot.timestamp - stall.since, 0.0),
        )
        lost_doc = "1 when the GPU stopped answering (fell off the bus), else 0."
        # A stalled snapshot repeats old values: exporting them would record them as fresh.
        for s in () if stall is not None else snapshot.gpus:
            gpu_info = node.gpu(s.index)
            labels = dcgm_labels(gpu_info, s.index, node.hostname)
            out.gauge("gputui_gpu_lost", lost_doc, labels, 1.0 if s.lost else 0.0)
            if s.lost:
                continue
            self._dcgm_gpu(out, GpuReading(s, gpu_info, last_xid.get(s.index, 0)), node)
            self._gputui_gpu(out, s)
            self._mig(out, snapshot, s.index)
        self._health(out, snapshot, active)
        for (gpu, kind), count in sorted(events.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
            out.counter(
                "gputui_gpu_events",
                "Events (xid, ecc_double_bit, gpu_lost ...) seen since the exporter started.",
                {"gpu": "" if gpu is None else str(gpu), "kind": kind},
                float(count),
            )
        if stall is None:
            self._processes(out, snapshot)
            self._usage(out, snapshot)
            allocation_series(out, snapshot)
            self._host(out, snapshot)
        yield from out

    def _dcgm_gpu(self, out: _Families, reading: GpuReading, node: NodeInfo) -> None:
        """A GPU's DCGM series under the names, units and labels of ``dcgm_names``."""
        labels: dict[tuple[Vocabulary, ...], dict[str, str]] = {}
        index = reading.sample.index
        for series in self._dcgm:
            value = series.published(reading)
            if value is None:
                continue
            on = labels.get(series.labels)
            if on is None:
                on = labels[series.labels] = dcgm_labels(
                    reading.info, index, node.hostname, series.labels, node.driver_version
                )
            if series.value.counter:
                out.bare_counter(series.name, series.help, on, value)
            else:
                out.gauge(series.name, series.help, on, value)

    def _gputui_gpu(self, out: _Families, s: GpuSample) -> None:
        gpu = {"gpu": str(s.index)}
        self._performance(out, s, gpu)
        if s.temperature_hotspot_c is not None:
            out.gauge(
                "gputui_gpu_hotspot_temperature_celsius",
                "GPU hotspot (junction) temperature.",
                gpu,
                float(s.temperature_hotspot_c),
            )
        if s.throttle_reasons is not None:
            reasons = sorted(set(THROTTLE_REASONS) | set(s.throttle_reasons))
            for reason in reasons:
                out.gauge(
                    "gputui_throttle_reason_active",
                    "1 while a clock throttle (clock event) reason is active, else 0.",
                    {**gpu, "reason": reason},
                    1.0 if reason in s.throttle_reasons else 0.0,
                )
        for link in s.links or ():
            labels = {**gpu, "link": str(link.link)}
            if link.up is not None:
                out.gauge(
                    "gputui_nvlink_link_up",
                    "1 when the NVLink / XGMI link is up, 0 when down.",
                    labels,
                    float(link.up),
                )
            for kind in ("replay", "recovery", "crc"):
                value = getattr(link, f"{kind}_errors")
                if value is not None:
                    out.counter(
                        "gputui_nvlink_link_errors",
                        "NVLink / XGMI link error counters (replay, recovery, crc).",
                        {**labels, "kind": kind},
                        float(value),
                    )

    def _performance(self, out: _Families, s: GpuSample, gpu: dict[str, str]) -> None:
        performance = s.performance
        if performance is None:
            return
        if performance.clock_pct is not None:
            out.gauge(
                "gputui_gpu_clock_ratio",
                "SM clock as a share of its maximum (0-1), over the last readings.",
                gpu,
                performance.clock_pct / 100.0,
            )
        for limiter in LIMITER_WORDS:
            out.gauge(
                "gputui_gpu_limiter",
                "1 for what holds the SM clock down now (reason: idle, power_cap, hw_thermal, "
                "sw_thermal, hw_slowdown, hw_power_brake, sync_boost, app_clocks, display, "
                "board_limit, reliability, none, unknown), else 0.",
                {**gpu, "reason": limiter},
                1.0 if limiter == performance.limiter else 0.0,
            )

    def _mig(self, out: _Families, snapshot: Snapshot, index: int) -> None:
        for view in mig_views(snapshot, index):
            labels = {
                "gpu": str(index),
                "gi": str(view.info.gpu_instance_id),
                "ci": str(view.info.compute_instance_id),
                "profile": view.profile,
            }
            out.gauge(
                "gputui_mig_info",
                "A MIG instance of a GPU in MIG mode, with its UUID (always 1).",
                {**labels, "uuid": view.info.uuid},
                1.0,
            )
            if view.memory_used_bytes is not None:
                out.gauge(
                    "gputui_mig_memory_used_bytes",
                    "GPU memory used in a MIG instance.",
                    labels,
                    float(view.memory_used_bytes),
                )
            if view.memory_total_bytes is not None:
                out.gauge(
                    "gputui_mig_memory_total_bytes",
                    "GPU memory of a MIG instance.",
                    labels,
                    float(view.memory_total_bytes),
                )

    def _health(self, out: _Families, snapshot: Snapshot, active: list[Finding]) -> None:
        counts: Counter[tuple[str, str, str, str]] = Counter(
            (f.rule, f.severity, "" if f.gpu_index is None else str(f.gpu_index), f.action)
            for f in active
        )
        for (rule, severity, gpu, action), count in sorted(counts.items()):
            out.gauge(
                "gputui_health_findings",
                "Active health findings by rule, severity and what to do (action: none, watch, "
                "restart_job, reset_gpu, reboot, drain, replace; gpu empty: node-wide).",
                {"rule": rule, "severity": severity, "gpu": gpu, "action": action},
                float(count),
            )
        status_doc = "Worst active health finding: 0 ok, 1 info, 2 warn, 3 fail."
        for s in snapshot.gpus:
            out.gauge(
                "gputui_health_status",
                status_doc,
                {"gpu": str(s.index)},
                # a driver that does not answer fails every GPU behind it
                float(3 if snapshot.stall else SEVERITY_ORDER[gpu_severity(active, s.index)]),
            )
        out.gauge(
            "gputui_node_health_status",
            "Worst active health finding on the node: 0 ok, 1 info, 2 warn, 3 fail.",
            {},
            float(SEVERITY_ORDER[worst(active)]),
        )

    def _processes(self, out: _Families, snapshot: Snapshot) -> None:
        doc = (
            "GPU memory held by a process: the top processes by memory per GPU, "
            'the rest summed into pid="other".'
        )
        mig = has_mig(snapshot)  # then every series has a ``mig`` label (the instance's UUID)
        by_gpu: dict[int, dict[tuple[int, str], tuple[int, ProcessSample]]] = {}
        for p in snapshot.processes:
            if p.gpu_memory_bytes is None:
                continue
            on_gpu = by_gpu.setdefault(p.gpu_index, {})
            # one series per pid (and MIG instance, on a MIG node; else one pid on several
            # instances is one series)
            ident = (p.pid, (p.mig_uuid or "") if mig else "")
            held = on_gpu[ident][0] if ident in on_gpu else 0
            on_gpu[ident] = (held + p.gpu_memory_bytes, p)
        for gpu in sorted(by_gpu):
            procs = sorted(by_gpu[gpu].items(), key=lambda kv: (-kv[1][0], kv[0]))
            top, rest = procs[: self.top_processes], procs[self.top_processes :]
            for (pid, instance), (memory, p) in top:
                labels = {
                    "gpu": str(gpu),
                    "pid": str(pid),
                    "user": p.user or "",
                    "name": p.name or "",
                }
                if mig:
                    labels["mig"] = instance
                labels.update(attribution_labels(p))
                out.gauge("gputui_process_gpu_memory_bytes", doc, labels, float(memory))
            if rest:
                labels = {"gpu": str(gpu), "pid": "other", "user": "", "name": ""}
                if mig:
                    labels["mig"] = ""
                labels.update(attribution_labels(None))
                total = float(sum(memory for _ident, (memory, _p) in rest))
                out.gauge("gputui_process_gpu_memory_bytes", doc, labels, total)
        self._workloads(out, snapshot)

    def _workloads(self, out: _Families, snapshot: Snapshot) -> None:
        """GPU memory, SM % and processes summed per Slurm job, pod and container (one not in a
        pod), per GPU (``sum by (slurm_job)`` gives a job's total): the top N per GPU by memory,
        the rest summed into ``slurm_job="other"`` (``pod``, ``container``)."""
        last: dict[tuple[str, str], ProcessSample] = {}
        for p in snapshot.processes:
            w = workload_of(p)
            if w is not None:
                last[(w.kind, w.key)] = p
        groups: dict[tuple[str, int], list[WorkloadUsage]] = {}
        for row in usage_by(snapshot.processes):
            groups.setdefault((row.workload.kind, row.gpu_index), []).append(row)
        jobs_listed: set[str] = set()
        for (kind, gpu), rows in sorted(groups.items()):
            rows.sort(key=lambda r: (-(r.gpu_memory_bytes or 0), r.workload.key))
            top, rest = rows[: self.top_processes], rows[self.top_processes :]
            word, label = _KIND_WORD[kind], _KIND_LABEL[kind]
            for row in top:
                p = last[(kind, row.workload.key)]
                self._workload_series(out, word, _workload_labels(kind, row, p), row, gpu)
                if kind == "slurm" and row.workload.key not in jobs_listed:
                    jobs_listed.add(row.workload.key)
                    out.gauge(
                        "gputui_job_info",
                        "A Slurm job with GPU processes on this node, with its name and user "
                        "where scontrol told them (always 1).",
                        {
                            "slurm_job": row.workload.key,
                            "job_name": p.slurm_job_name or "",
                            "job_user": p.slurm_job_user or "",
                        },
                        1.0,
                    )
            if rest:
                labels = {"pod": "other", "namespace": ""} if kind == "pod" else {label: "other"}
                memory = [r.gpu_memory_bytes for r in rest if r.gpu_memory_bytes is not None]
                sm = [r.sm_pct for r in rest if r.sm_pct is not None]
                summed = WorkloadUsage(
                    rest[0].workload,
                    gpu,
                    sum(r.processes for r in rest),
                    sum(memory) if memory else None,
                    sum(sm) if sm else None,
                )
                self._workload_series(out, word, labels, summed, gpu)

    def _workload_series(
        self, out: _Families, word: str, labels: dict[str, str], row: WorkloadUsage, gpu: int
    ) -> None:
        labels = {**labels, "gpu": str(gpu)}
        what = _WORDS[word]
        if row.gpu_memory_bytes is not None:
            out.gauge(
                f"gputui_{word}_gpu_memory_bytes",
                f"GPU memory held by the processes of a {what} on a GPU.",
                labels,
                float(row.gpu_memory_bytes),
            )
        if row.sm_pct is not None:
            out.gauge(
                f"gputui_{word}_sm_pct",
                f"SM utilization (%) of the processes of a {what} on a GPU, summed.",
                labels,
                float(row.sm_pct),
            )
        out.gauge(
            f"gputui_{word}_processes",
            f"GPU processes of a {what} on a GPU.",
            labels,
            float(row.processes),
        )

    def _usage(self, out: _Families, snapshot: Snapshot) -> None:
        """Energy and idle time per GPU since the exporter started (:mod:`gputui.core.usage`), and
        what the idle GPUs cost per hour when a price is set."""
        usage = snapshot.usage
        if usage is None:
            return
        lost = {s.index for s in snapshot.gpus if s.lost}
        for g in usage.gpus:
            if g.index in lost:
                continue
            gpu = {"gpu": str(g.index)}
            if g.energy_used_j is not None:
                out.counter(
                    "gputui_gpu_energy_joules",
                    "Energy used by the GPU since the exporter started (from its energy counter).",
                    gpu,
                    g.energy_used_j,
                )
            for name, doc, value in (
                (
                    "gputui_gpu_observed_seconds",
                    "Seconds the GPU's utilization was read since the exporter started.",
                    g.observed_s,
                ),
                (
                    "gputui_gpu_idle_seconds",
                    f"Seconds the GPU was idle (utilization below {usage.idle_util_pct:g} %).",
                    g.idle_s,
                ),
                (
                    "gputui_gpu_held_idle_seconds",
                    "Seconds the GPU was idle with more than "
                    f"{usage.held_memory_bytes / 2**30:g} GiB of memory in use.",
                    g.held_idle_s,
                ),
            ):
                out.counter(name, doc, gpu, value)
            if g.idle is not None:
                out.gauge("gputui_gpu_idle", "1 while the GPU is idle, else 0.", gpu, float(g.idle))
            if g.held_idle is not None:
                out.gauge(
                    "gputui_gpu_held_idle",
                    "1 while the GPU is idle with memory held, else 0.",
                    gpu,
                    float(g.held_idle),
                )
        if usage.gpu_hour_price is not None and usage.idle_cost_per_hour is not None:
            out.gauge(
                "gputui_gpu_hour_price",
                "The price of one GPU-hour given with --gpu-hour-price.",
                {},
                usage.gpu_hour_price,
            )
            out.gauge(
                "gputui_node_idle_cost_per_hour",
                "What the node's idle GPUs cost per hour now (idle GPUs x the GPU-hour price).",
                {},
                usage.idle_cost_per_hour,
            )

    def _host(self, out: _Families, snapshot: Snapshot) -> None:
        host = snapshot.host
        if host is None:
            return
        if host.cpu_pct is not None:
            out.gauge(
                "gputui_host_cpu_utilization_ratio",
                "Host CPU utilization, all cores (0-1).",
                {},
                host.cpu_pct / 100.0,
            )
        for field in ("total", "used", "available"):
            value = getattr(host, f"memory_{field}_bytes")
            if value is not None:
                out.gauge(
                    f"gputui_host_memory_{field}_bytes", f"Host memory {field}.", {}, float(value)
                )
        if host.load_average is not None:
            for period, value in zip(("1m", "5m", "15m"), host.load_average, strict=False):
                out.gauge(
                    "gputui_host_load_average", "Host load average.", {"period": period}, value
                )


_WORDS = {"job": "Slurm job", "pod": "Kubernetes pod", "container": "container (not in a pod)"}
ATTRIBUTION_LABELS = ("slurm_job", "pod", "namespace", "container")
"""Labels every per-process series carries ('' when unknown, which Prometheus treats as absent)."""


def attribution_labels(p: ProcessSample | None) -> dict[str, str]:
    """The Slurm job, pod name (or UID), namespace and container name (or short id) of ``p``."""
    if p is None:
        return dict.fromkeys(ATTRIBUTION_LABELS, "")
    return {
        "slurm_job": p.slurm_job_id or "",
        "pod": pod_name(p),
        "namespace": p.k8s_namespace or "",
        "container": short_container(p) or "",
    }


def pod_name(p: ProcessSample) -> str:
    """The pod's name, else its UID ('' outside a pod)."""
    return p.k8s_pod_name or p.k8s_pod_uid or ""


_KIND_WORD = {"slurm": "job", "pod": "pod", "container": "container"}
"""The word in a workload family's name: ``gputui_job_gpu_memory_bytes``."""
_KIND_LABEL = {"slurm": "slurm_job", "pod": "pod", "container": "container"}
"""The label naming the workload. Never ``job`` (nor ``instance``): Prometheus sets those on
every scraped series, and a target's own ``job`` would arrive as ``exported_job``."""


def _workload_labels(kind: str, row: WorkloadUsage, p: ProcessSample) -> dict[str, str]:
    if kind == "slurm":
        return {"slurm_job": row.workload.key}
    if kind == "pod":
        return {"pod": pod_name(p), "namespace": p.k8s_namespace or ""}
    return {"container": short_container(p) or ""}


def render(registry: CollectorRegistry) -> bytes:
    """The Prometheus text format (0.0.4) of ``registry``, with DCGM's counters typed under their
    own names (``prometheus_client`` would announce them as ``NAME_total``)."""
    text = generate_latest(registry).decode()
    for name in BARE_COUNTERS:
        text = text.replace(f"# HELP {name}_total ", f"# HELP {name} ", 1)
        text = text.replace(f"# TYPE {name}_total counter\n", f"# TYPE {name} counter\n", 1)
    return text.encode()
