"""Prometheus answers played back to the fleet view: the answers recorded from a real server
(tests/data/fleet/recorded.json, made by `python tests/test_fleet_prometheus.py --record`) and
simulated ones for any number of nodes."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from pathlib import Path

from gputui.fleet import promql
from gputui.fleet.client import PrometheusClient
from gputui.fleet.source import FleetSource
from gputui.fleet.transport import Budget

DATA = Path(__file__).resolve().parent.parent / "data" / "fleet"
RECORDED = json.loads((DATA / "recorded.json").read_text())
BASE = "http://prometheus.example:9090"


# -- playing answers back --------------------------------------------------------------------------


class Recorded:
    """A transport that answers from recorded answers, keyed by path and query; counts calls."""

    def __init__(self, answers: Mapping[str, object], base: str = BASE) -> None:
        self.answers = answers
        self.base = base
        self.calls: list[str] = []
        self.fail: BaseException | None = None

    def __call__(self, url: str, headers: Mapping[str, str], budget: Budget) -> bytes:
        self.calls.append(url)
        if self.fail is not None:
            raise self.fail
        key = url[len(self.base) :]
        if key not in self.answers:
            raise AssertionError(f"no recorded answer for {urllib.parse.unquote(key)}")
        answer = self.answers[key]
        return answer if isinstance(answer, bytes) else json.dumps(answer).encode()


def recorded_source(**kwargs: object) -> tuple[FleetSource, Recorded]:
    transport = Recorded(RECORDED["answers"])
    client = PrometheusClient(BASE, transport=transport)
    return FleetSource(client, clock=lambda: RECORDED["time"], **kwargs), transport  # type: ignore[arg-type]


def instance(name: str) -> str:
    return RECORDED["instances"][name]


# -- simulated answers: any number of nodes --------------------------------------------------------


def _vector(result: list[dict], at: float) -> dict:
    return {"status": "success", "data": {"resultType": "vector", "result": result}}


def synthetic_answers(nodes: int = 100, gpus: int = 8, at: float = 1_800_000_000.0) -> dict:
    """The five answers of one refresh for ``nodes`` nodes of ``gpus`` GPUs each: even nodes run
    `gputui export`, odd ones dcgm-exporter (lowercase hostname); node 7 has an XID on GPU 2."""
    values, up, scraped, scrapes, seen = [], [], [], [], []
    for n in range(nodes):
        inst = f"gpu-{n:03d}:9400"
        job = {"instance": inst, "job": "gpu"}
        host_label = "Hostname" if n % 2 == 0 else "hostname"
        for g in range(gpus):
            labels = {
                **job, "gpu": str(g), "UUID": f"GPU-{n:04d}-{g}",
                "pci_bus_id": f"0000:{g:02X}:00.0",
                "device": f"nvidia{g}", "modelName": "NVIDIA H100 80GB HBM3",
                host_label: f"node-{n:03d}", "DCGM_FI_DRIVER_VERSION": "550.54.15",
            }  # fmt: skip
            fields = {
                "DCGM_FI_DEV_GPU_UTIL": 50 + g, "DCGM_FI_DEV_MEM_COPY_UTIL": 20,
                "DCGM_FI_DEV_FB_USED": 40000, "DCGM_FI_DEV_FB_FREE": 41000,
                "DCGM_FI_DEV_POWER_USAGE": 500.5, "DCGM_FI_DEV_GPU_TEMP": 60,
                "DCGM_FI_DEV_MEMORY_TEMP": 70, "DCGM_FI_DEV_SM_CLOCK": 1980,
                "DCGM_FI_DEV_MEM_CLOCK": 2619,
                "DCGM_FI_DEV_XID_ERRORS": 79 if (n, g) == (7, 2) else 0,
            }  # fmt: skip
            if n % 2 == 0:
                fields["DCGM_FI_DEV_FB_TOTAL"] = 81559
                fields["DCGM_FI_DEV_POWER_MGMT_LIMIT"] = 700
                fields["gputui_gpu_lost"] = 0
            for name, value in fields.items():
                key = {"__name__": name, "instance": inst, "gpu": str(g)}  # what `max by` keeps
                values.append({"metric": key, "value": [at, str(value)]})
            if n % 2 == 0:
                values.append({"metric": {"__name__": "gputui_health_status", "instance": inst,
                                          "gpu": str(g)}, "value": [at, "0"]})  # fmt: skip
            seen.append({"metric": labels, "value": [at, str(at - 1)]})
        if n % 2 == 0:
            info = {**job, "version": "0.1.0", "backend": "nvml", "driver": "550.54.15"}
            values.append({"metric": {"__name__": "gputui_info", "instance": inst},
                           "value": [at, "1"]})  # fmt: skip
            values.append({"metric": {"__name__": "gputui_node_health_status", "instance": inst},
                           "value": [at, "0"]})  # fmt: skip
            seen.append({"metric": info, "value": [at, str(at - 1)]})
        up.append({"metric": {"__name__": "up", **job}, "value": [at, "1"]})
        scraped.append({"metric": job, "value": [at, str(at - 1)]})
        scrapes.append({"metric": job, "value": [at, "8"]})
    answers = {
        "values": values,
        "up": up,
        "scraped_at": scraped,
        "scrapes": scrapes,
        "last_seen": seen,
    }
    return {key: _vector(result, at) for key, result in answers.items()}


def synthetic_source(nodes: int = 100, gpus: int = 8) -> tuple[FleetSource, Recorded]:
    """A source whose transport answers the refresh queries with :func:`synthetic_answers`."""
    at = 1_800_000_000.0
    queries = promql.refresh_queries("")
    bodies = {key: json.dumps(a).encode() for key, a in synthetic_answers(nodes, gpus, at).items()}
    answers = {}
    for key, q in queries.all().items():
        path = "/api/v1/query?" + urllib.parse.urlencode({"query": q, "time": f"{at:.3f}"})
        answers[path] = bodies[key]
    transport = Recorded(answers)
    return FleetSource(PrometheusClient(BASE, transport=transport), clock=lambda: at), transport
