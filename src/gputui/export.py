"""``gputui export``: the sampler's latest reading as Prometheus metrics on ``/metrics``.

The one module that imports ``prometheus_client`` (the ``export`` extra). :class:`GpuCollector`
renders :attr:`Sampler.latest <gputui.sampler.Sampler.latest>` at scrape time: a scrape never
polls the GPUs, the sampler thread does, every ``--interval``. It also listens to every reading
(``Sampler.add_listener``) to keep what a single reading does not hold: the last XID per GPU and
the count of events since the exporter started.

Names, units, types and labels (``gpu``, ``UUID``, ``pci_bus_id``, ``device``, ``modelName``,
``Hostname``) follow NVIDIA's DCGM exporter for what DCGM has, so DCGM Grafana dashboards and
alerts work unchanged: memory in MiB, power in W, energy in mJ, clocks in MHz, utilization in %.
Like DCGM, its counters carry no ``_total`` suffix on the wire
(``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION``): :func:`render` writes their ``# TYPE`` lines DCGM's
way, and the endpoint always answers in the Prometheus text format 0.0.4 (OpenMetrics would
require the suffix). Two DCGM fields that are rates
are gauges here: ``DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL`` (MiB/s, TX + RX, computed as DCGM does:
KiB/s / 1000; dcgm-exporter mislabels it a counter) and ``DCGM_FI_PROF_{PCIE,NVLINK}_{TX,RX}_BYTES``
(bytes/s). What DCGM lacks is under ``gputui_*`` in base units (``_bytes``, ``_celsius``,
``_ratio``), counters with ``_total``.

A value the hardware does not report (None) is not exported at all; a GPU that fell off the bus
exports only ``gputui_gpu_lost 1`` (its health findings stay listed). Per-process memory is
bounded: the top N processes by memory per GPU, the rest summed into ``pid="other"``.

Probe metrics (achieved bandwidth and FLOP/s) are not exported: they arrive with the performance
probe, which will add its own ``gputui_probe_*`` families here.
"""

from __future__ import annotations

import errno
import gzip
import ipaddress
import signal
import socket
import sys
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from socketserver import ThreadingMixIn
from typing import NamedTuple
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from gputui import __version__
from gputui.health import gpu_severity, worst
from gputui.model import SEVERITY_ORDER, THROTTLE_REASONS, GpuInfo, GpuSample, Snapshot

MIB = 1024 * 1024
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9400
DEFAULT_TOP_PROCESSES = 10
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

DCGM_LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname")


def _mib(value: float | None) -> float | None:
    return None if value is None else float(int(value) // MIB)


def _flag(value: bool | None) -> float | None:
    return None if value is None else float(bool(value))


def _nvlink_total(s: GpuSample) -> float | None:
    if s.nvlink_rx_bytes_per_s is None or s.nvlink_tx_bytes_per_s is None:
        return None
    return (s.nvlink_rx_bytes_per_s + s.nvlink_tx_bytes_per_s) / 1024 / 1000


def _link_sum(s: GpuSample, attr: str) -> float | None:
    values = [getattr(link, attr) for link in s.links or ()]
    known = [v for v in values if v is not None]
    return float(sum(known)) if known else None


def _num(value: float | None) -> float | None:
    return None if value is None else float(value)


DCGM_GAUGES: tuple[tuple[str, str, object], ...] = (
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", lambda s: _num(s.utilization_gpu_pct)),
    (
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        "Memory utilization (in %).",
        lambda s: _num(s.utilization_memory_pct),
    ),
    ("DCGM_FI_DEV_ENC_UTIL", "Encoder utilization (in %).", lambda s: _num(s.encoder_pct)),
    ("DCGM_FI_DEV_DEC_UTIL", "Decoder utilization (in %).", lambda s: _num(s.decoder_pct)),
    (
        "DCGM_FI_DEV_FB_FREE",
        "Framebuffer memory free (in MiB).",
        lambda s: _mib(s.memory_free_bytes),
    ),
    (
        "DCGM_FI_DEV_FB_USED",
        "Framebuffer memory used (in MiB).",
        lambda s: _mib(s.memory_used_bytes),
    ),
    (
        "DCGM_FI_DEV_FB_RESERVED",
        "Framebuffer memory reserved (in MiB).",
        lambda s: _mib(s.memory_reserved_bytes),
    ),
    (
        "DCGM_FI_DEV_FB_TOTAL",
        "Framebuffer memory total (in MiB).",
        lambda s: _mib(s.memory_total_bytes),
    ),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", lambda s: _num(s.power_w)),
    (
        "DCGM_FI_DEV_POWER_MGMT_LIMIT",
        "Current power limit (in W).",
        lambda s: _num(s.power_limit_w),
    ),
    ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", lambda s: _num(s.temperature_gpu_c)),
    (
        "DCGM_FI_DEV_MEMORY_TEMP",
        "Memory temperature (in C).",
        lambda s: _num(s.temperature_memory_c),
    ),
    ("DCGM_FI_DEV_FAN_SPEED", "Fan speed (in %).", lambda s: _num(s.fan_pct)),
    ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", lambda s: _num(s.clock_sm_mhz)),
    (
        "DCGM_FI_DEV_MEM_CLOCK",
        "Memory clock frequency (in MHz).",
        lambda s: _num(s.clock_memory_mhz),
    ),
    (
        "DCGM_FI_DEV_PSTATE",
        "Performance state (P-State) 0-15, 0 = highest.",
        lambda s: _num(s.pstate),
    ),
    ("DCGM_FI_DEV_PCIE_LINK_GEN", "PCIe current link generation.", lambda s: _num(s.pcie_gen)),
    ("DCGM_FI_DEV_PCIE_LINK_WIDTH", "PCIe current link width.", lambda s: _num(s.pcie_width)),
    (
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "The rate of data transmitted over PCIe (in B/s).",
        lambda s: _num(s.pcie_tx_bytes_per_s),
    ),
    (
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        "The rate of data received over PCIe (in B/s).",
        lambda s: _num(s.pcie_rx_bytes_per_s),
    ),
    (
        "DCGM_FI_PROF_NVLINK_TX_BYTES",
        "The rate of data transmitted over NVLink (in B/s).",
        lambda s: _num(s.nvlink_tx_bytes_per_s),
    ),
    (
        "DCGM_FI_PROF_NVLINK_RX_BYTES",
        "The rate of data received over NVLink (in B/s).",
        lambda s: _num(s.nvlink_rx_bytes_per_s),
    ),
    (
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "NVLink throughput, TX + RX, all links (in MiB/s as DCGM computes it: KiB/s / 1000).",
        _nvlink_total,
    ),
    (
        "DCGM_FI_DEV_RETIRED_PENDING",
        "Pages pending retirement (1 = yes; reset needed).",
        lambda s: _flag(s.retired_pages_pending),
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "Whether remapping of rows has failed.",
        lambda s: _flag(s.remapped_rows_failure),
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_PENDING",
        "Whether remapping of rows is pending (reset needed).",
        lambda s: _flag(s.remapped_rows_pending),
    ),
)
"""DCGM gauges read from a GpuSample: (name, help, sample -> value or None)."""

DCGM_COUNTERS: tuple[tuple[str, str, object], ...] = (
    (
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "Total energy consumption since the driver was loaded (in mJ).",
        lambda s: None if s.energy_j is None else s.energy_j * 1000.0,
    ),
    (
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "Total number of single-bit volatile ECC errors.",
        lambda s: _num(s.ecc_volatile_corrected),
    ),
    (
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "Total number of double-bit volatile ECC errors.",
        lambda s: _num(s.ecc_volatile_uncorrected),
    ),
    (
        "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
        "Total number of single-bit persistent ECC errors.",
        lambda s: _num(s.ecc_aggregate_corrected),
    ),
    (
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
        "Total number of double-bit persistent ECC errors.",
        lambda s: _num(s.ecc_aggregate_uncorrected),
    ),
    (
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "Number of remapped rows for correctable errors.",
        lambda s: _num(s.remapped_rows_correctable),
    ),
    (
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "Number of remapped rows for uncorrectable errors.",
        lambda s: _num(s.remapped_rows_uncorrectable),
    ),
    (
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
        "NVLink replay errors, all links.",
        lambda s: _link_sum(s, "replay_errors"),
    ),
    (
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
        "NVLink recovery errors, all links.",
        lambda s: _link_sum(s, "recovery_errors"),
    ),
)
"""DCGM counters: exported under DCGM's exact name, without a ``_total`` suffix."""

DCGM_XID = "DCGM_FI_DEV_XID_ERRORS"
BARE_COUNTERS = frozenset(name for name, _h, _f in DCGM_COUNTERS)


def dcgm_labels(info: GpuInfo | None, index: int, hostname: str) -> dict[str, str]:
    vendor = info.vendor if info is not None else "nvidia"
    return {
        "gpu": str(index),
        "UUID": info.uuid if info is not None else "",
        "pci_bus_id": (info.pci_bus_id or "") if info is not None else "",
        "device": f"{'nvidia' if vendor == 'nvidia' else 'card'}{index}",
        "modelName": info.name if info is not None else "",
        "Hostname": hostname,
    }


class _Families:
    """Families by name, created on first sample, yielded in creation order (empty ones never)."""

    def __init__(self) -> None:
        self._by_name: dict[str, Metric] = {}

    def gauge(self, name: str, doc: str, labels: dict[str, str], value: float) -> None:
        family = self._by_name.get(name)
        if family is None:
            family = self._by_name[name] = GaugeMetricFamily(name, doc, labels=list(labels))
        family.add_metric(list(labels.values()), value)

    def counter(self, name: str, doc: str, labels: dict[str, str], value: float) -> None:
        family = self._by_name.get(name)
        if family is None:
            family = self._by_name[name] = CounterMetricFamily(name, doc, labels=list(labels))
        family.add_metric(list(labels.values()), value)

    def bare_counter(self, name: str, doc: str, labels: dict[str, str], value: float) -> None:
        """A counter whose sample keeps ``name`` as is (DCGM style, no ``_total`` added)."""
        family = self._by_name.get(name)
        if family is None:
            family = self._by_name[name] = Metric(name, doc, "counter")
        family.add_sample(name, labels, value)

    def __iter__(self) -> Iterator[Metric]:
        return iter(self._by_name.values())


class GpuCollector(Collector):
    """Renders the sampler's latest snapshot as metric families at each scrape."""

    def __init__(self, sampler, *, top_processes: int = DEFAULT_TOP_PROCESSES) -> None:
        self.sampler = sampler
        self.top_processes = max(int(top_processes), 0)
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
            info.add_metric([__version__, node.backend, node.driver_version or ""], 1)
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
        lost_doc = "1 when the GPU stopped answering (fell off the bus), else 0."
        for s in snapshot.gpus:
            gpu_info = node.gpu(s.index)
            labels = dcgm_labels(gpu_info, s.index, node.hostname)
            out.gauge("gputui_gpu_lost", lost_doc, labels, 1.0 if s.lost else 0.0)
            if s.lost:
                continue
            for name, doc, fn in DCGM_GAUGES:
                value = fn(s)  # type: ignore[operator]
                if value is not None:
                    out.gauge(name, doc, labels, value)
            if gpu_info is not None:
                for name, doc, value in (
                    (
                        "DCGM_FI_DEV_PCIE_MAX_LINK_GEN",
                        "PCIe max link generation.",
                        gpu_info.pcie_max_gen,
                    ),
                    (
                        "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH",
                        "PCIe max link width.",
                        gpu_info.pcie_max_width,
                    ),
                ):
                    if value is not None:
                        out.gauge(name, doc, labels, float(value))
            if gpu_info is None or gpu_info.vendor == "nvidia":
                out.gauge(
                    DCGM_XID,
                    "Value of the last XID error encountered (0: none since the exporter started).",
                    labels,
                    float(last_xid.get(s.index, 0)),
                )
            for name, doc, fn in DCGM_COUNTERS:
                value = fn(s)  # type: ignore[operator]
                if value is not None:
                    out.bare_counter(name, doc, labels, value)
            self._gputui_gpu(out, s)
        self._health(out, snapshot, active)
        for (gpu, kind), count in sorted(events.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
            out.counter(
                "gputui_gpu_events",
                "Events (xid, ecc_double_bit, gpu_lost ...) seen since the exporter started.",
                {"gpu": "" if gpu is None else str(gpu), "kind": kind},
                float(count),
            )
        self._processes(out, snapshot)
        self._host(out, snapshot)
        yield from out

    def _gputui_gpu(self, out: _Families, s: GpuSample) -> None:
        gpu = {"gpu": str(s.index)}
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

    def _health(self, out: _Families, snapshot: Snapshot, active: list) -> None:
        counts: Counter[tuple[str, str, str]] = Counter(
            (f.rule, f.severity, "" if f.gpu_index is None else str(f.gpu_index)) for f in active
        )
        for (rule, severity, gpu), count in sorted(counts.items()):
            out.gauge(
                "gputui_health_findings",
                "Active health findings by rule and severity (gpu empty: node-wide).",
                {"rule": rule, "severity": severity, "gpu": gpu},
                float(count),
            )
        status_doc = "Worst active health finding: 0 ok, 1 info, 2 warn, 3 fail."
        for s in snapshot.gpus:
            out.gauge(
                "gputui_health_status",
                status_doc,
                {"gpu": str(s.index)},
                float(SEVERITY_ORDER[gpu_severity(active, s.index)]),
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
        by_gpu: dict[int, dict[int, list]] = {}
        for p in snapshot.processes:
            if p.gpu_memory_bytes is None:
                continue
            entry = by_gpu.setdefault(p.gpu_index, {}).setdefault(p.pid, [0, p.user, p.name])
            entry[0] += p.gpu_memory_bytes  # one pid on several MIG slices: one series
        for gpu in sorted(by_gpu):
            procs = sorted(by_gpu[gpu].items(), key=lambda kv: (-kv[1][0], kv[0]))
            top, rest = procs[: self.top_processes], procs[self.top_processes :]
            for pid, (memory, user, name) in top:
                labels = {"gpu": str(gpu), "pid": str(pid), "user": user or "", "name": name or ""}
                out.gauge("gputui_process_gpu_memory_bytes", doc, labels, float(memory))
            if rest:
                labels = {"gpu": str(gpu), "pid": "other", "user": "", "name": ""}
                total = float(sum(memory for _pid, (memory, _u, _n) in rest))
                out.gauge("gputui_process_gpu_memory_bytes", doc, labels, total)

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


def render(registry: CollectorRegistry) -> bytes:
    """The Prometheus text format (0.0.4) of ``registry``, with DCGM's counters typed under their
    own names (``prometheus_client`` would announce them as ``NAME_total``)."""
    text = generate_latest(registry).decode()
    for name in BARE_COUNTERS:
        text = text.replace(f"# HELP {name}_total ", f"# HELP {name} ", 1)
        text = text.replace(f"# TYPE {name}_total counter\n", f"# TYPE {name} counter\n", 1)
    return text.encode()


# -- --listen -------------------------------------------------------------------------------------


class Listen(NamedTuple):
    host: str
    port: int

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"


def parse_listen(text: str) -> Listen:
    """``HOST:PORT``, ``[IPv6]:PORT``, ``:PORT`` or ``PORT`` (host: 127.0.0.1). ValueError with a
    message naming the problem; the host must resolve."""
    text = text.strip()
    if not text:
        raise ValueError("--listen: empty address (expected HOST:PORT, e.g. 127.0.0.1:9400)")
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket or not rest.startswith(":"):
            raise ValueError(f"--listen {text!r}: expected [IPv6]:PORT, e.g. [::1]:9400")
        port_text = rest[1:]
        if not host:
            raise ValueError(f"--listen {text!r}: empty host between the brackets")
    elif text.isdigit():
        host, port_text = DEFAULT_HOST, text
    else:
        if text.count(":") > 1:
            raise ValueError(f"--listen {text!r}: put an IPv6 address in brackets, e.g. [::1]:9400")
        host, colon, port_text = text.rpartition(":")
        if not colon:
            raise ValueError(f"--listen {text!r}: no port (expected HOST:PORT, e.g. {text}:9400)")
        host = host or DEFAULT_HOST
    if not port_text.isdigit():
        raise ValueError(f"--listen {text!r}: port {port_text!r} is not a number")
    port = int(port_text)
    if not 1 <= port <= 65535:
        raise ValueError(f"--listen {text!r}: port {port} is out of range (1-65535)")
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ValueError(f"--listen {text!r}: cannot resolve host {host!r} ({reason})") from None
    return Listen(host, port)


def is_loopback(host: str) -> bool:
    """True when every address ``host`` resolves to is a loopback address."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return False
    addresses = {info[4][0] for info in infos}
    return bool(addresses) and all(
        ipaddress.ip_address(a.split("%", 1)[0]).is_loopback for a in addresses
    )


# -- the server ------------------------------------------------------------------------------------


class _Handler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # no access log on stderr
        pass


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Server6(_Server):
    address_family = socket.AF_INET6


def metrics_app(registry: CollectorRegistry):
    """A WSGI app: ``/metrics`` (gzip when asked for), ``/`` a pointer to it, else 404."""

    def app(environ, start_response):
        path = environ.get("PATH_INFO", "/")
        method = environ.get("REQUEST_METHOD", "GET")
        if method not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed", [("Allow", "GET, HEAD")])
            return [b""]
        if path == "/metrics":
            body = render(registry)
            headers = [("Content-Type", CONTENT_TYPE)]
            if "gzip" in environ.get("HTTP_ACCEPT_ENCODING", ""):
                body = gzip.compress(body, compresslevel=1)
                headers.append(("Content-Encoding", "gzip"))
        elif path == "/":
            body = b"gputui exporter: metrics at /metrics\n"
            headers = [("Content-Type", "text/plain; charset=utf-8")]
        else:
            start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"not found: try /metrics\n"]
        headers.append(("Content-Length", str(len(body))))
        start_response("200 OK", headers)
        return [b"" if method == "HEAD" else body]

    return app


class MetricsServer:
    """``/metrics`` over HTTP on its own thread. Binds in the constructor (raises OSError)."""

    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        server_class = _Server6 if family == socket.AF_INET6 else _Server
        self._server = make_server(
            host, port, metrics_app(registry), server_class=server_class, handler_class=_Handler
        )
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="gputui-export", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(2.0)
            self._thread = None
        self._server.server_close()


def run_export(
    spec: str,
    *,
    seed: int,
    listen: Listen,
    interval: float,
    top_processes: int = DEFAULT_TOP_PROCESSES,
    stop: threading.Event | None = None,
) -> int:
    """Serve ``/metrics`` until Ctrl-C / SIGTERM (exit 0) or ``stop`` is set. 2: the address is
    unusable (in use, not permitted) or no usable GPU."""
    from gputui.cli import EXIT_NO_GPU, EXIT_OK, EXIT_USAGE, _open_sampler

    where = listen.url.removesuffix("/metrics")
    registry = CollectorRegistry(auto_describe=False)
    try:
        server = MetricsServer(registry, listen.host, listen.port)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        hint = (
            " (another exporter running? pick a port with --listen)"
            if exc.errno == errno.EADDRINUSE
            else ""
        )
        print(f"gputui: cannot listen on {where}: {reason}{hint}", file=sys.stderr)
        return EXIT_USAGE
    if not is_loopback(listen.host):
        print(
            f"gputui: warning: listening on {where} makes the metrics (process names, users, "
            "PIDs) visible to the network; firewall it or bind 127.0.0.1",
            file=sys.stderr,
        )
    sampler = _open_sampler(spec, seed=seed, interval=interval, pre_job=False)
    if sampler is None:
        server.stop()
        return EXIT_NO_GPU
    stop = stop if stop is not None else threading.Event()
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        registry.register(GpuCollector(sampler, top_processes=top_processes))
        sampler.poll()  # the first scrape shows a reading
        sampler.start(lambda _snapshot: None)
        server.start()
        actual = listen._replace(port=server.port)
        print(f"serving {actual.url} (Ctrl-C to stop)", flush=True)
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        server.stop()
        sampler.close()
    return EXIT_OK


__all__ = [
    "DCGM_COUNTERS",
    "DCGM_GAUGES",
    "DCGM_LABELS",
    "GpuCollector",
    "Listen",
    "MetricsServer",
    "is_loopback",
    "metrics_app",
    "parse_listen",
    "render",
    "run_export",
]
