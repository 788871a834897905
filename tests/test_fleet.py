"""The fleet view's core: PromQL building, the Prometheus client's errors, and the mapping of
answers to the fleet model and its health, against answers recorded from a real Prometheus
(tests/data/fleet/recorded.json, made by `python tests/test_fleet_prometheus.py --record`) and
against simulated ones (100 nodes x 8 GPUs)."""

from __future__ import annotations

import dataclasses
import http.client
import io
import json
import math
import re
import urllib.error
import urllib.parse
from collections.abc import Mapping
from pathlib import Path

import pytest
from tests.fakes.prometheus_answers import (
    BASE,
    RECORDED,
    instance,
    recorded_source,
    synthetic_source,
)

from gputui import cli
from gputui.commands import fleet as fleet_command
from gputui.core.codec import encode
from gputui.core.metric_names import AMD_NAMES, DCGM_BY_NAME
from gputui.fleet import promql
from gputui.fleet.build import build_fleet
from gputui.fleet.client import (
    PASSWORD_ENV,
    TOKEN_ENV,
    USER_ENV,
    PrometheusClient,
    PrometheusError,
    Sample,
    auth_from_env,
    normalize_url,
)
from gputui.fleet.model import Fleet
from gputui.fleet.output import fleet_output
from gputui.fleet.source import HISTORY_POINTS
from gputui.fleet.transport import Budget

MIB = 2**20


@pytest.fixture(scope="module")
def recorded() -> Fleet:
    source, _ = recorded_source()
    return source.refresh()


# -- PromQL ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, ""),
        ("{}", ""),
        ('{job="gpu"}', 'job="gpu"'),
        ('job="gpu"', 'job="gpu"'),
        (' { job = "gpu" , cluster=~"a|b", env!="dev",} ', 'job="gpu",cluster=~"a|b",env!="dev"'),
        ('{pod!~"x\\"y"}', 'pod!~"x\\"y"'),
    ],
)
def test_parse_match(text: str | None, expected: str) -> None:
    assert promql.parse_match(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('up{job="gpu"}', "without a metric name"),
        ('{job="gpu"', "must end with"),
        ("{job=gpu}", "expected label matchers"),
        ('{job="gpu" env="x"}', "expected label matchers"),
        ('{__name__="up"}', "leave out __name__"),
    ],
)
def test_parse_match_rejects(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        promql.parse_match(text)


def test_refresh_queries_are_five_and_carry_the_selector() -> None:
    queries = promql.refresh_queries('job="gpu"').all()
    assert list(queries) == ["values", "up", "scraped_at", "scrapes", "last_seen"]
    assert queries["up"] == 'up{job="gpu"}'
    assert queries["scraped_at"] == 'timestamp(up{job="gpu"})'
    assert queries["scrapes"] == 'count_over_time(up{job="gpu"}[120s])'
    anchor = (
        '{__name__=~"gputui_info|DCGM_FI_DEV_FB_USED|DCGM_FI_DEV_FB_USED_BYTES|gpu_total_vram",'
        'job="gpu"}'
    )
    assert queries["last_seen"] == (
        f"max_over_time(timestamp({anchor})[10m:5s]) or timestamp({anchor})"
    )
    values = queries["values"]
    assert values.startswith(
        "max by (__name__, instance, gpu, gpu_id, GPU_I_ID, rule, severity, clock_type) "
        '({__name__=~"DCGM_FI_DEV_GPU_UTIL|'
    )
    assert values.endswith(',job="gpu"})')
    names = values.split('__name__=~"')[1].split('"')[0].split("|")
    # every vocabulary in the one query: legacy and DCGM 4.7 names, AMD's, gputui's
    assert set(names) == {*promql.EXPORTER_NAMES, *promql.GPUTUI_NAMES}
    for name in ("DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_XID_ERROR", "gpu_gfx_activity"):
        assert name in names
    assert all('job="gpu"' in q for q in queries.values())
    assert promql.refresh_queries("").up == "up"


def test_history_is_one_range_query_per_chart_for_the_node_in_every_vocabulary() -> None:
    queries = promql.history_queries('10.0.0.1:9400"x', 'job="gpu"')
    assert list(queries) == ["util", "memory", "power", "temperature"]
    sel = '{job="gpu",instance="10.0.0.1:9400\\"x"}'
    either = " or on(instance, gpu, GPU_I_ID) "
    # DCGM 4.7 first (a ratio, in percent), then the legacy name, then AMD's (gpu_id -> gpu)
    assert queries["util"] == either.join(
        [
            f"DCGM_FI_DEV_GPU_UTIL_RATIO{sel} * 100.0",
            f"DCGM_FI_DEV_GPU_UTIL{sel}",
            f'label_replace(gpu_gfx_activity{sel}, "gpu", "$1", "gpu_id", "(.+)")',
        ]
    )
    assert queries["memory"].split(either)[:2] == [  # bytes, whatever the exporter's unit
        f"DCGM_FI_DEV_FB_USED_BYTES{sel}",
        f"DCGM_FI_DEV_FB_USED{sel} * 1048576.0",
    ]
    assert "gpu_used_vram" in queries["memory"] and "gpu_power_usage" in queries["power"]
    assert queries["temperature"].startswith(f"DCGM_FI_DEV_GPU_TEMP_CELSIUS{sel}{either}")


def test_the_fleet_reads_names_the_exporter_publishes() -> None:
    """Every gputui_* name the view reads, and every DCGM name except the three limits that only
    dcgm-exporter can carry, is one `gputui export` publishes."""
    pytest.importorskip("prometheus_client")
    from tests.factories import faulty_collector, scrape
    from tests.fakes.schedulers import FixedSchedulers, slurm_job

    sampler, collector = faulty_collector()
    sampler.allocations = FixedSchedulers(slurm_job("4242", 0, 1))  # a node with a scheduler
    sampler.poll()
    _text, families = scrape(collector)
    exported = set(families)
    dcgm_only = {promql.SLOWDOWN_TEMP, promql.MEM_MAX_OP_TEMP, "DCGM_FI_DEV_ENFORCED_POWER_LIMIT"}
    assert set(promql.DCGM_NAMES) - dcgm_only <= exported
    assert set(promql.GPUTUI_NAMES) <= exported


# -- the client ------------------------------------------------------------------------------------


def _http_error(code: int, body: bytes = b"", reason: str = "") -> urllib.error.HTTPError:
    return urllib.error.HTTPError(BASE, code, reason or "Error", {}, io.BytesIO(body))  # type: ignore[arg-type]


def _client(answer: bytes | BaseException, **kwargs: object) -> PrometheusClient:
    def transport(url: str, headers: Mapping[str, str], budget: Budget) -> bytes:
        if isinstance(answer, BaseException):
            raise answer
        return answer

    return PrometheusClient(BASE, transport=transport, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("answer", "kwargs", "reason"),
    [
        (urllib.error.URLError(ConnectionRefusedError(111, "Connection refused")), {},
         "cannot connect: Connection refused"),
        (TimeoutError("timed out"), {}, "no answer within 10 s"),
        (urllib.error.URLError(TimeoutError("timed out")), {}, "no answer within 10 s"),
        (http.client.BadStatusLine("SSH-2.0-OpenSSH_9.2"), {}, "not an HTTP answer"),
        (_http_error(401, reason="Unauthorized"), {}, f"it needs credentials; set {TOKEN_ENV}"),
        (_http_error(403, reason="Forbidden"), {"authorization": "Bearer x"},
         "HTTP 403 Forbidden: the credentials were refused"),
        (_http_error(404, b"<html>", "Not Found"), {}, "is this the URL of a Prometheus server?"),
        (_http_error(502, b"bad gateway", "Bad Gateway"), {}, "HTTP 502 Bad Gateway"),
        (_http_error(400, b'{"status":"error","errorType":"bad_data","error":"parse error"}'), {},
         "query rejected (bad_data: parse error): up"),
        (b"<html>not json</html>", {}, "the answer is not JSON"),
        (b'{"status":"error","errorType":"timeout","error":"query timed out"}', {},
         "query rejected (timeout: query timed out)"),
        (b'{"status":"success","data":{"resultType":"matrix","result":[]}}', {},
         "expected a vector"),
        (b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"x"]}]}}',
         {}, "malformed answer"),
        (b'{"status":"success","data":{"resultType":"vector","result":[{"metric":"x","value":[1,"1"]}]}}',
         {}, "malformed labels"),
    ],
)  # fmt: skip
def test_every_failure_is_one_error_naming_the_url(
    answer: bytes | BaseException, kwargs: dict, reason: str
) -> None:
    with pytest.raises(PrometheusError) as caught:
        _client(answer, **kwargs).query("up", 1.0)
    assert str(caught.value).startswith(f"Prometheus at {BASE}: ")
    assert reason in caught.value.reason


def test_a_malformed_range_answer() -> None:
    result = [{"metric": {}, "values": [[1, "a"]]}]
    body = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}})
    with pytest.raises(PrometheusError, match="malformed values"):
        _client(body.encode()).query_range("up", 0, 10, 5)


def test_values_and_headers() -> None:
    seen: dict[str, object] = {}

    def transport(url: str, headers: Mapping[str, str], budget: Budget) -> bytes:
        seen.update(url=url, headers=dict(headers), seconds=budget.seconds)
        result = [
            {"metric": {"__name__": "up", "instance": "a"}, "value": [1.5, "1"]},
            {"metric": {"instance": "b"}, "value": [1.5, "NaN"]},
            {"metric": {"instance": "c"}, "value": [1.5, "+Inf"]},
        ]
        return json.dumps(
            {"status": "success", "data": {"resultType": "vector", "result": result}}
        ).encode()

    client = PrometheusClient(
        BASE + "/", authorization="Bearer t0k", transport=transport, timeout=3
    )
    samples = client.query('up{job="x"}', 1234.5)
    assert samples[0] == Sample({"__name__": "up", "instance": "a"}, 1.0)
    assert samples[1].value != samples[1].value and samples[2].value == float("inf")
    url = str(seen["url"])
    assert url.startswith(f"{BASE}/api/v1/query?")
    assert urllib.parse.parse_qs(url.split("?", 1)[1]) == {
        "query": ['up{job="x"}'],
        "time": ["1234.500"],
    }
    assert seen["headers"]["Authorization"] == "Bearer t0k"  # type: ignore[index]
    assert seen["seconds"] == 3


def test_auth_from_the_environment() -> None:
    assert auth_from_env({}) is None
    assert auth_from_env({TOKEN_ENV: " abc "}) == "Bearer abc"
    assert auth_from_env({USER_ENV: "u", PASSWORD_ENV: "p"}) == "Basic dTpw"
    with pytest.raises(ValueError, match="not both"):
        auth_from_env({TOKEN_ENV: "a", USER_ENV: "u", PASSWORD_ENV: "p"})
    with pytest.raises(ValueError, match="set both"):
        auth_from_env({USER_ENV: "u"})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("prom:9090", "http://prom:9090"),
        ("https://example.com/prometheus/", "https://example.com/prometheus"),
        ("http://[::1]:9090", "http://[::1]:9090"),
    ],
)
def test_normalize_url(text: str, expected: str) -> None:
    assert normalize_url(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ftp://prom", "http:// or https://"),
        ("http://user:secret@prom:9090", "no credentials in the URL"),
        ("http://prom:9090/?x=1", "without ?query"),
        ("http://prom:port", "bad port"),
        ("http://", "no host"),
    ],
)
def test_normalize_url_rejects(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        normalize_url(text)


# -- the model from recorded answers ---------------------------------------------------------------


def test_recorded_fleet_health_per_node(recorded: Fleet) -> None:
    health = {name: recorded.node(inst).health for name, inst in RECORDED["instances"].items()}  # type: ignore[union-attr]
    assert health == {
        "healthy": "ok",
        "small": "ok",
        "faulty": "fail",
        "h100": "fail",
        "a100": "warn",
        "leaving": "unknown",
        "renamed": "ok",
        "migrating": "ok",
        "h200": "fail",
        "mi300x": "ok",
        "nowhere": "unknown",
    }
    order = [n.health for n in recorded.nodes]
    assert order == sorted(order, key=lambda h: {"fail": 0, "unknown": 1, "warn": 2, "ok": 3}[h])


def test_recorded_gputui_node(recorded: Fleet) -> None:
    node = recorded.node(instance("faulty"))
    assert node is not None and node.source == "gputui" and node.up and node.silent is None
    assert node.hostname.startswith("dgx-h100") and node.gpu_count == 8
    assert node.driver_version
    lost = [g for g in node.gpus if g.lost]
    assert [g.index for g in lost] == [3] and lost[0].health == "fail"
    assert lost[0].util_pct is None  # a lost GPU exports nothing but gputui_gpu_lost
    assert any(r.startswith("GPU 3: gpu_lost") for r in node.reasons)
    gpu0 = node.gpus[0]
    assert gpu0.memory_total_bytes is not None and gpu0.memory_total_bytes % MIB == 0
    assert gpu0.name == "NVIDIA H100 80GB HBM3" and gpu0.uuid and gpu0.uuid.startswith("GPU-")


def test_recorded_dcgm_nodes(recorded: Fleet) -> None:
    a100 = recorded.node(instance("a100"))
    h100 = recorded.node(instance("h100"))
    assert a100 is not None and h100 is not None
    assert (a100.source, h100.source) == ("dcgm", "dcgm")
    assert a100.hostname == "a100-node-01"  # the legacy Hostname label
    assert h100.hostname == "h100-node-07"  # the newer hostname label
    assert a100.driver_version == "535.183.06"
    g0, g1, g2, g3 = a100.gpus
    assert g0.memory_used_bytes == 61440 * MIB
    assert g0.memory_total_bytes == 81920 * MIB  # used + free + reserved
    assert g1.health == "warn" and g1.reasons == ("memory 91 °C (≥ 90 °C)",)
    assert g2.temperature_memory_c is None  # DCGM's blank value is no reading
    assert g3.memory_used_bytes == (20480 + 10240) * MIB  # MIG slices add up
    assert g3.temperature_c == 52 and g3.util_pct is None
    x0, x1 = h100.gpus
    assert (x0.health, x1.health) == ("warn", "fail")
    assert x1.xid == 79 and x1.reasons == ("XID 79: GPU has fallen off the bus",)
    assert h100.reasons[0] == "GPU 1: XID 79: GPU has fallen off the bus"


def test_recorded_silent_nodes(recorded: Fleet) -> None:
    leaving = recorded.node(instance("leaving"))
    assert leaving is not None and leaving.health == "unknown" and leaving.up is False
    assert leaving.silent is not None and leaving.silent.startswith("scrape failing (up == 0)")
    assert leaving.last_seen is not None and leaving.age(recorded.time) > 5  # type: ignore[operator]
    assert leaving.hostname == "sam-workstation" and leaving.gpu_count == 1  # from the lookback
    assert leaving.gpus[0].health == "unknown" and leaving.gpus[0].util_pct is None
    nowhere = recorded.node(instance("nowhere"))
    assert nowhere is not None and nowhere.source == "unknown" and nowhere.last_seen is None
    assert nowhere.hostname == "127.0.0.1" and nowhere.gpus == ()


def test_json_has_the_fields_the_issue_names(recorded: Fleet) -> None:
    answer = encode(fleet_output(recorded), nan_as_null=True)
    json.dumps(answer, allow_nan=False)  # numbers are numbers, unknowns are null
    node = next(n for n in answer["nodes"] if n["instance"] == instance("healthy"))
    assert {"instance", "hostname", "health", "gpus"} <= set(node)
    gpu = node["gpus"][0]
    assert {"index", "uuid", "name", "util_pct", "memory_used_bytes", "memory_total_bytes",
            "power_w", "temperature_c", "health"} <= set(gpu)  # fmt: skip
    assert {n["health"] for n in answer["nodes"]} <= {"ok", "warn", "fail", "unknown"}
    assert answer["summary"]["nodes"] == 11 and answer["prometheus"] == BASE
    assert {n["naming"] == ["amd-dme"] for n in answer["nodes"] if n["source"] == "amd"} == {True}


def test_exit_codes(recorded: Fleet) -> None:
    def only(*names: str) -> Fleet:
        keep = {instance(n) for n in names}
        return Fleet(BASE, recorded.time, tuple(n for n in recorded.nodes if n.instance in keep))

    assert fleet_command.exit_code(only("healthy", "small")) == 0
    assert fleet_command.exit_code(only("healthy", "a100")) == 1
    assert fleet_command.exit_code(only("healthy", "leaving")) == 1  # silent: look at it
    assert fleet_command.exit_code(only("a100", "h100")) == 2
    assert fleet_command.exit_code(only()) == 2  # nothing found


def test_node_filter(recorded: Fleet) -> None:
    source, _ = recorded_source(node_filter="^a100-|h100-node")
    assert sorted(n.hostname for n in source.refresh().nodes) == ["a100-node-01", "h100-node-07"]
    by_instance, _ = recorded_source(node_filter=re.escape(instance("small")))
    assert [n.hostname for n in by_instance.refresh().nodes] == ["gpu-a100-02"]


def test_recorded_history(recorded: Fleet) -> None:
    source, transport = recorded_source()
    history = source.history(instance("a100"))
    assert len(transport.calls) == 4  # one range query per chart, not per GPU
    assert len(history.times) == HISTORY_POINTS
    assert sorted(history.series["util"]) == [0, 1, 2]  # GPU 3 is in MIG mode: no utilization
    memory = [v for v in history.of("memory", 3) if v == v]
    assert memory and memory[-1] == (20480 + 10240) * MIB


# -- hand-made answers: the rules one at a time ----------------------------------------------------

AT = 1_000_000.0


def s(value: float, **labels: str) -> Sample:
    return Sample(dict(labels), value)


def gpu_series(
    name: str, value: float, inst: str = "n1:9400", gpu: str = "0", **extra: str
) -> Sample:
    return s(
        value, __name__=name, instance=inst, job="gpu", gpu=gpu, modelName="NVIDIA A100", **extra
    )


def build(**answers: list[Sample]) -> Fleet:
    return build_fleet(answers, url=BASE, time=AT)


def test_stale_series_make_a_node_silent() -> None:
    values = [gpu_series("DCGM_FI_DEV_GPU_UTIL", 50)]
    up = [s(1, instance="n1:9400", job="gpu")]
    scrapes = [s(8, instance="n1:9400")]  # every 15 s
    fresh = build(
        values=values, up=up, scrapes=scrapes, scraped_at=[s(AT - 20, instance="n1:9400")]
    )
    assert fresh.nodes[0].health == "ok"
    stale = build(
        values=values, up=up, scrapes=scrapes, scraped_at=[s(AT - 31, instance="n1:9400")]
    )
    node = stale.nodes[0]
    assert (
        node.health == "unknown"
        and node.silent == "stale: newest sample 31s old (scraped every ~15s)"
    )


def test_a_target_no_longer_scraped_is_listed_from_the_lookback() -> None:
    seen = [s(AT - 200, instance="n1:9400", job="gpu", gpu="0", Hostname="n1", modelName="A100")]
    fleet = build(last_seen=seen)
    node = fleet.nodes[0]
    assert (node.hostname, node.up, node.health) == ("n1", None, "unknown")
    assert node.silent == "no longer scraped, last seen 3m ago"


def test_a_gpu_that_vanished_from_a_live_node_is_unknown() -> None:
    values = [gpu_series("DCGM_FI_DEV_GPU_UTIL", 50, gpu="0")]
    seen = [
        s(AT - 1, instance="n1:9400", job="gpu", gpu="0"),
        s(AT - 120, instance="n1:9400", job="gpu", gpu="1"),
    ]
    fleet = build(values=values, up=[s(1, instance="n1:9400", job="gpu")], last_seen=seen)
    node = fleet.nodes[0]
    assert [g.health for g in node.gpus] == ["ok", "unknown"]
    assert node.health == "unknown" and node.reasons == (
        "GPU 1: no longer reported, last seen 2m ago",
    )


def test_a_node_without_gpu_series_is_silent() -> None:
    values = [
        s(1, __name__="gputui_info", instance="n1:9400")
    ]  # an exporter before its first reading
    node = build(values=values, up=[s(1, instance="n1:9400", job="gpu")]).nodes[0]
    assert node.health == "unknown" and node.silent == "no GPU metrics in its scrapes"


def test_down_targets_count_only_in_jobs_of_gpu_nodes() -> None:
    values = [gpu_series("DCGM_FI_DEV_GPU_UTIL", 50)]
    up = [
        s(1, instance="n1:9400", job="gpu"),
        s(0, instance="n2:9400", job="gpu"),
        s(0, instance="db:9100", job="node"),  # a down node-exporter: not a GPU node
        s(1, instance="prom:9090", job="prometheus"),
    ]
    assert sorted(n.instance for n in build(values=values, up=up).nodes) == ["n1:9400", "n2:9400"]


def test_gputui_status_decides_and_a_stall_fails_the_node() -> None:
    values = [
        gpu_series("DCGM_FI_DEV_XID_ERRORS", 13),  # gputui graded this XID itself: info
        s(1, __name__="gputui_health_status", instance="n1:9400", job="gpu", gpu="0"),
        s(1, __name__="gputui_info", instance="n1:9400", job="gpu"),
    ]
    up = [s(1, instance="n1:9400", job="gpu")]
    seen = [s(AT - 1, instance="n1:9400", job="gpu", driver="550", version="0.1.0")]
    node = build(values=values, up=up, last_seen=seen).nodes[0]
    assert node.source == "gputui" and node.health == "ok" and node.driver_version == "550"
    stalled = build(values=[*values, s(12, __name__="gputui_backend_stall_seconds",
                                       instance="n1:9400", job="gpu")], up=up).nodes[0]  # fmt: skip
    assert stalled.health == "fail" and stalled.reasons == ("GPU library not answering for 12s",)
    findings = [
        *values[1:],
        s(3, __name__="gputui_health_status", instance="n1:9400", job="gpu", gpu="0"),
        s(2, __name__="gputui_health_findings", instance="n1:9400", job="gpu", gpu="0",
          rule="temperature", severity="fail"),
        s(1, __name__="gputui_health_findings", instance="n1:9400", job="gpu", gpu="",
          rule="driver", severity="warn"),
    ]  # fmt: skip
    failing = build(values=findings, up=up).nodes[0]
    assert failing.health == "fail"
    assert failing.reasons == ("GPU 0: temperature ×2 (fail)", "node: driver (warn)")


def test_allocated_idle_gpus_per_node_where_a_scheduler_is_read() -> None:
    """From the one values query: GPUs with ``gputui_gpu_allocated_idle`` 1 (several owners of
    one GPU are one series there), counted where ``gputui_scheduler_up`` says a scheduler is
    read; nothing known without one, or once it stopped answering."""
    up = [s(1, instance="n1:9400", job="gpu")]
    base = [gpu_series("DCGM_FI_DEV_GPU_UTIL", 0, gpu=str(i)) for i in range(4)] + [
        s(1, __name__="gputui_info", instance="n1:9400", job="gpu")
    ]
    idle = [gpu_series("gputui_gpu_allocated_idle", v, gpu=str(i)) for i, v in enumerate((1, 0, 1))]
    scheduler = s(1, __name__="gputui_scheduler_up", instance="n1:9400", job="gpu")
    node = build(values=[*base, *idle, scheduler], up=up).nodes[0]
    assert node.allocated_idle_gpus == 2 and node.health == "ok"
    free = build(values=[*base, scheduler], up=up).nodes[0]
    assert free.allocated_idle_gpus == 0  # a scheduler answers: nothing allocated sits idle
    assert build(values=base, up=up).nodes[0].allocated_idle_gpus is None
    silent = scheduler._replace(value=0.0)
    assert build(values=[*base, *idle, silent], up=up).nodes[0].allocated_idle_gpus is None
    odd = scheduler._replace(value=7.0)
    node = build(values=[*base, *idle, odd], up=up).nodes[0]
    assert node.allocated_idle_gpus is None and node.health == "ok"  # says nothing, harms nothing
    dcgm = build(values=[gpu_series("DCGM_FI_DEV_GPU_UTIL", 0)], up=up).nodes[0]
    assert dcgm.allocated_idle_gpus is None
    output = json.loads(
        json.dumps(encode(fleet_output(build(values=[*base, *idle, scheduler], up=up))))
    )
    assert output["nodes"][0]["allocated_idle_gpus"] == 2


def test_dcgm_temperature_limits() -> None:
    up = [s(1, instance="n1:9400", job="gpu")]
    hot = build(values=[gpu_series("DCGM_FI_DEV_GPU_TEMP", 84)], up=up).nodes[0]
    assert hot.health == "ok"
    hotter = build(values=[gpu_series("DCGM_FI_DEV_GPU_TEMP", 85)], up=up).nodes[0]
    assert hotter.health == "warn"
    limited = build(
        values=[
            gpu_series("DCGM_FI_DEV_GPU_TEMP", 85),
            gpu_series("DCGM_FI_DEV_SLOWDOWN_TEMP", 95),
        ],
        up=up,
    ).nodes[0]
    assert limited.health == "ok"  # this GPU says it slows down at 95 °C: warn from 90 °C


def test_a_simulated_fleet_of_100_nodes_in_one_batch() -> None:
    source, transport = synthetic_source(100, 8)
    fleet = source.refresh()
    assert len(transport.calls) == 5  # one batch, whatever the fleet's size
    assert len(fleet.nodes) == 100 and fleet.gpu_count == 800
    assert fleet.nodes[0].hostname == "node-007" and fleet.nodes[0].health == "fail"
    assert fleet.counts() == {"ok": 99, "warn": 0, "fail": 1, "unknown": 0}
    assert {n.source for n in fleet.nodes} == {"gputui", "dcgm"}
    assert all(n.memory_total_bytes for n in fleet.nodes)


# -- the command line ------------------------------------------------------------------------------


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main(["fleet", *argv])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "--prometheus"),
        (["--prometheus", "ftp://x"], "http:// or https://"),
        (["--prometheus", "http://x", "--match", "up"], "expected label matchers"),
        (["--prometheus", "http://x", "--node", "("], "not a regular expression"),
        (["--prometheus", "http://x", "--interval", "0"], "interval must be"),
    ],
)
def test_bad_arguments_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == "" and message in err


def test_ambiguous_credentials_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "t")
    monkeypatch.setenv(USER_ENV, "u")
    code, _out, err = run_cli(capsys, "--prometheus", "http://x", "--json")
    assert code == 2 and "not both" in err


def test_json_from_recorded_answers(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fleet_command, "make_source", lambda *a, **k: recorded_source()[0])
    code, out, _err = run_cli(capsys, "--prometheus", BASE, "--json")
    assert code == 2
    assert json.loads(out)["summary"]["fail"] == 3


def test_json_writes_a_nan_as_null(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, recorded: Fleet
) -> None:
    node = next(n for n in recorded.nodes if n.gpus)
    gpu = dataclasses.replace(node.gpus[0], util_pct=math.nan, power_w=math.nan)
    fleet = dataclasses.replace(recorded, nodes=(dataclasses.replace(node, gpus=(gpu,)),))
    source = recorded_source()[0]
    monkeypatch.setattr(source, "refresh", lambda: fleet)
    monkeypatch.setattr(fleet_command, "make_source", lambda *a, **k: source)
    _code, out, _err = run_cli(capsys, "--prometheus", BASE, "--json")
    data = json.loads(out, parse_constant=lambda word: pytest.fail(f"{word} in the JSON"))
    (written,) = data["nodes"][0]["gpus"]
    assert written["util_pct"] is None and written["power_w"] is None
    assert written["index"] == gpu.index and data["nodes"][0]["util_mean_pct"] is None


def test_unreachable_prometheus_exits_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    source, transport = recorded_source()
    transport.fail = urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))
    monkeypatch.setattr(fleet_command, "make_source", lambda *a, **k: source)
    code, out, err = run_cli(capsys, "--prometheus", BASE, "--json")
    assert (code, out) == (2, "")
    assert err.strip() == f"gputui fleet: Prometheus at {BASE}: cannot connect: Connection refused"


def test_the_view_needs_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run_cli(capsys, "--prometheus", BASE)
    assert code == 2 and "needs a terminal" in err and "--json" in err


# -- the Grafana dashboard -------------------------------------------------------------------------


def _exprs(dashboard: dict) -> list[str]:
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", ())]


def test_the_grafana_dashboard_uses_the_exported_names() -> None:
    dashboard = json.loads(
        (Path(__file__).resolve().parent.parent / "dashboards" / "gputui.json").read_text()
    )
    titles = " ".join(p["title"].lower() for p in dashboard["panels"])
    for word in ("utilization", "memory", "power", "health findings", "xid", "amd"):
        assert word in titles, word
    names = set()
    for expr in _exprs(dashboard):
        unquoted = re.sub(r'"[^"]*"', '""', expr)  # label names and values are not metrics
        names |= set(re.findall(r"\b(DCGM_FI_[A-Z_]+|gputui_[a-z_]+|gpu_[a-z_]+|up)\b", unquoted))
    known = {
        *promql.EXPORTER_NAMES,
        *promql.GPUTUI_NAMES,
        "up",
        "gputui_job_gpu_memory_bytes",  # by Slurm job: the exporter's, not the fleet view's
    }
    assert names and names <= known, names - known
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert {"datasource", "job", "instance"} <= variables


def test_every_grafana_panel_reads_both_dcgm_namings_and_amd() -> None:
    """A panel that reads a DCGM field under its legacy name reads it under its DCGM 4.7 name
    too, and under AMD's where AMD's exporter has it: the dashboard works on a fleet of either
    dcgm-exporter or of AMD nodes. (Only the legacy fallback for total memory, used + free +
    reserved, is legacy alone: dcgm-exporter 4.9 publishes the capacity.)"""
    dashboard = json.loads(
        (Path(__file__).resolve().parent.parent / "dashboards" / "gputui.json").read_text()
    )
    legacy_total = re.compile(
        r"\(DCGM_FI_DEV_FB_USED\{[^}]*\} \+ DCGM_FI_DEV_FB_FREE\{[^}]*\} "
        r"\+ DCGM_FI_DEV_FB_RESERVED\{[^}]*\}\) \* 1048576"
    )
    checked = 0
    for expr in _exprs(dashboard):
        expr = legacy_total.sub("", expr)
        for name in set(re.findall(r"\bDCGM_FI_[A-Z_]+\b", expr)):
            field = DCGM_BY_NAME[name]
            assert field.legacy in expr and field.current in expr, (name, expr)
            amd = [s.metric for s in promql.SOURCES[field.key] if s.metric in AMD_NAMES]
            assert all(metric in expr for metric in amd), (name, amd, expr)
            checked += 1
    assert checked >= 10
    for var in dashboard["templating"]["list"][1:]:
        for name in ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_USED_BYTES", "gpu_total_vram"):
            assert name in var["query"]["query"], var["name"]
