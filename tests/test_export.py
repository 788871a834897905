"""`gputui export`: metric names, types, labels and values against the simulated faulty node, the
endpoint over loopback, and the --listen checks."""

from __future__ import annotations

import dataclasses
import gzip
import http.client
import socket
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("prometheus_client")

from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from tests.factories import faulty_collector, scrape
from tests.fakes.clock import fake_clock_sampler

import gputui
from gputui import cli, export
from gputui.commands import export as export_command
from gputui.commands.common import Seams
from gputui.commands.export import ExportOptions
from gputui.core.model import SEVERITY_ORDER, ProcessSample
from gputui.engine.session import BackendSpec, default_health
from gputui.export import server as export_server
from gputui.export.collector import ATTRIBUTION_LABELS
from gputui.health import gpu_severity

MIB = 1024 * 1024
LOST = 3  # the faulty scenario's GPU that falls off the bus


@pytest.fixture(scope="module")
def faulty():
    sampler, collector = faulty_collector()
    text, families = scrape(collector)
    return sampler.latest, text, families


def samples(families, name, **labels):
    return [
        s for s in families[name].samples if all(s.labels.get(k) == v for k, v in labels.items())
    ]


def value(families, name, **labels) -> float:
    found = samples(families, name, **labels)
    assert len(found) == 1, (name, labels, found)
    return found[0].value


def test_dcgm_names_and_types(faulty) -> None:
    _snap, text, families = faulty
    gauges = [v.field.legacy for v in export.DCGM_VALUES if not v.counter]
    present = [name for name in gauges if name in families]
    assert len(present) >= 20
    assert all(families[name].type == "gauge" for name in present)
    for name in ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_XID_ERRORS"):
        assert families[name].type == "gauge"
    for name in (
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    ):
        assert families[name].type == "counter"
        # on the wire exactly as DCGM writes it: no `_total` appended
        assert f"# TYPE {name} counter\n" in text
        assert f"\n{name}{{" in text and f"\n{name}_total{{" not in text
    assert families["gputui_nvlink_link_errors"].type == "counter"
    assert "\ngputui_nvlink_link_errors_total{" in text
    assert families["gputui_gpu_events"].type == "counter"
    for name in (
        "gputui_health_findings",
        "gputui_health_status",
        "gputui_throttle_reason_active",
        "gputui_gpu_lost",
        "gputui_process_gpu_memory_bytes",
        "gputui_nvlink_link_up",
        "gputui_info",
    ):
        assert families[name].type == "gauge", name


def test_dcgm_label_set(faulty) -> None:
    snap, _text, families = faulty
    for name in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "gputui_gpu_lost"):
        for s in families[name].samples:
            assert set(s.labels) == set(export.DCGM_LABELS)
            info = snap.node.gpu(int(s.labels["gpu"]))
            assert s.labels["UUID"] == info.uuid
            assert s.labels["device"] == f"nvidia{info.index}"
            assert s.labels["modelName"] == info.name
            assert s.labels["pci_bus_id"] == info.pci_bus_id
            assert s.labels["Hostname"] == snap.node.hostname == "dgx-h100-13"


def test_values_equal_the_snapshot(faulty) -> None:
    snap, _text, families = faulty
    for s in snap.gpus:
        if s.lost:
            continue
        gpu = str(s.index)
        assert value(families, "DCGM_FI_DEV_GPU_UTIL", gpu=gpu) == s.utilization_gpu_pct
        assert value(families, "DCGM_FI_DEV_MEM_COPY_UTIL", gpu=gpu) == s.utilization_memory_pct
        assert value(families, "DCGM_FI_DEV_FB_USED", gpu=gpu) == s.memory_used_bytes // MIB
        assert value(families, "DCGM_FI_DEV_FB_FREE", gpu=gpu) == s.memory_free_bytes // MIB
        assert value(families, "DCGM_FI_DEV_POWER_USAGE", gpu=gpu) == pytest.approx(s.power_w)
        assert value(families, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", gpu=gpu) == pytest.approx(
            s.energy_j * 1000
        )
        assert value(families, "DCGM_FI_DEV_GPU_TEMP", gpu=gpu) == s.temperature_gpu_c
        assert value(families, "DCGM_FI_DEV_MEMORY_TEMP", gpu=gpu) == s.temperature_memory_c
        assert value(families, "DCGM_FI_DEV_SM_CLOCK", gpu=gpu) == s.clock_sm_mhz
        assert value(families, "DCGM_FI_DEV_MEM_CLOCK", gpu=gpu) == s.clock_memory_mhz
        assert value(families, "DCGM_FI_DEV_PCIE_LINK_GEN", gpu=gpu) == s.pcie_gen
        assert value(families, "DCGM_FI_DEV_PCIE_LINK_WIDTH", gpu=gpu) == s.pcie_width
        assert value(families, "DCGM_FI_PROF_PCIE_TX_BYTES", gpu=gpu) == pytest.approx(
            s.pcie_tx_bytes_per_s
        )
        assert value(families, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", gpu=gpu) == pytest.approx(
            (s.nvlink_rx_bytes_per_s + s.nvlink_tx_bytes_per_s) / 1024 / 1000
        )
        for name, field in (
            ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "ecc_volatile_corrected"),
            ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "ecc_volatile_uncorrected"),
            ("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "ecc_aggregate_corrected"),
            ("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "ecc_aggregate_uncorrected"),
        ):
            assert value(families, name, gpu=gpu) == getattr(s, field)
        assert value(families, "gputui_gpu_lost", gpu=gpu) == 0
    assert value(families, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", gpu="2") > 0
    assert value(families, "DCGM_FI_DEV_PCIE_LINK_GEN", gpu="6") == 3
    # last XID per GPU, as DCGM reports it (GPU 2 had 48 then 63); 0 where none
    assert value(families, "DCGM_FI_DEV_XID_ERRORS", gpu="2") == 63
    assert value(families, "DCGM_FI_DEV_XID_ERRORS", gpu="0") == 0
    assert value(families, "gputui_gpu_events", gpu="2", kind="xid") == 2
    assert value(families, "gputui_info", backend="sim:faulty") == 1


def test_unsupported_values_are_absent(faulty) -> None:
    snap, _text, families = faulty
    for v in export.DCGM_VALUES:
        name = v.field.legacy
        for s in snap.gpus:
            reading = export.GpuReading(s, snap.node.gpu(s.index))
            expected = 0 if s.lost or v.read(reading) is None else 1
            present = samples(families, name, gpu=str(s.index)) if name in families else []
            assert len(present) == expected, (name, s.index)
    assert all(s.fan_pct is None for s in snap.gpus)  # H100 SXM: no fans
    assert "DCGM_FI_DEV_FAN_SPEED" not in families


def test_lost_gpu_exports_only_gputui_gpu_lost(faulty) -> None:
    snap, _text, families = faulty
    assert snap.sample(LOST).lost
    assert value(families, "gputui_gpu_lost", gpu=str(LOST)) == 1
    health = {"gputui_health_findings", "gputui_health_status", "gputui_gpu_events"}
    for family in families.values():
        if family.name in health or family.name == "gputui_gpu_lost":
            continue
        assert not [s for s in family.samples if s.labels.get("gpu") == str(LOST)], family.name
    assert value(families, "gputui_health_status", gpu=str(LOST)) == 3
    assert value(families, "gputui_health_findings", rule="gpu_lost", gpu=str(LOST)) == 1


def test_health_throttle_and_links(faulty) -> None:
    snap, _text, families = faulty
    active = [f for f in snap.findings if f.active]
    for s in snap.gpus:
        expected = SEVERITY_ORDER[gpu_severity(active, s.index)]
        assert value(families, "gputui_health_status", gpu=str(s.index)) == expected
    total = sum(s.value for s in families["gputui_health_findings"].samples)
    assert total == len(active)
    assert value(families, "gputui_health_findings", rule="nvlink_down", gpu="1") == 1
    assert value(families, "gputui_throttle_reason_active", gpu="5", reason="hw_thermal") == 1
    assert value(families, "gputui_throttle_reason_active", gpu="5", reason="gpu_idle") == 0
    assert value(families, "gputui_nvlink_link_up", gpu="1", link="7") == 0
    assert value(families, "gputui_nvlink_link_up", gpu="0", link="7") == 1


class _StubSampler:
    def __init__(self, latest) -> None:
        self.latest = latest
        self.node = latest.node

    def add_listener(self, listener) -> None:
        pass


def test_process_cardinality_is_bounded(faulty) -> None:
    snap, _text, _families = faulty
    procs = tuple(
        ProcessSample(pid=1000 + i, gpu_index=0, gpu_memory_bytes=(i + 1) * MIB, user="u", name="p")
        for i in range(15)
    )
    collector = export.GpuCollector(
        _StubSampler(dataclasses.replace(snap, processes=procs)), top_processes=10
    )
    _text, families = scrape(collector)
    got = {s.labels["pid"]: s.value for s in families["gputui_process_gpu_memory_bytes"].samples}
    assert len(got) == 11
    assert got["other"] == sum(range(1, 6)) * MIB  # the 5 smallest, summed
    assert got["1014"] == 15 * MIB and "1004" not in got
    assert sum(got.values()) == sum(p.gpu_memory_bytes for p in procs)


def test_scrape_over_loopback() -> None:
    _sampler, collector = faulty_collector(polls=2)
    registry = CollectorRegistry()
    registry.register(collector)
    server = export.MetricsServer(registry, "127.0.0.1", 0)
    server.start()
    try:
        url = f"http://127.0.0.1:{server.port}"
        with urllib.request.urlopen(url + "/metrics", timeout=10) as response:
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            text = response.read().decode()
        families = {f.name: f for f in text_string_to_metric_families(text)}
        assert len(families["DCGM_FI_DEV_GPU_UTIL"].samples) == 8
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(url + "/nope", timeout=10)
        assert missing.value.code == 404
    finally:
        server.stop()


@pytest.fixture
def metrics_server():
    """A running exporter on 127.0.0.1 (any port) serving the faulty node."""
    _sampler, collector = faulty_collector(polls=2)
    registry = CollectorRegistry()
    registry.register(collector)
    server = export.MetricsServer(registry, "127.0.0.1", 0)
    server.start()
    yield server
    server.stop()


def request(port: int, method: str, path: str, headers=None, host: str = "127.0.0.1"):
    conn = http.client.HTTPConnection(host, port, timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def test_http_answers(metrics_server) -> None:
    port = metrics_server.port
    status, headers, body = request(port, "GET", "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    assert int(headers["Content-Length"]) == len(body) and b"DCGM_FI_DEV_GPU_UTIL{" in body
    # HEAD: the same headers (the length GET would send), no body
    status, head_headers, head_body = request(port, "HEAD", "/metrics")
    assert status == 200 and head_body == b""
    assert int(head_headers["Content-Length"]) == len(body)
    # gzip when asked for
    status, headers, zipped = request(port, "GET", "/metrics", {"Accept-Encoding": "gzip"})
    assert status == 200 and headers["Content-Encoding"] == "gzip"
    assert b"DCGM_FI_DEV_GPU_UTIL{" in gzip.decompress(zipped)
    # a query string does not change the path
    assert request(port, "GET", "/metrics?name[]=x")[0] == 200
    status, _headers, body = request(port, "GET", "/")
    assert status == 200 and b"/metrics" in body
    assert request(port, "GET", "/nope")[0] == 404
    status, headers, _body = request(port, "POST", "/metrics")
    assert status == 405 and headers["Allow"] == "GET, HEAD"


def raw_exchange(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def test_malformed_requests_are_answered_and_closed(metrics_server) -> None:
    port = metrics_server.port
    assert raw_exchange(port, b"NONSENSE\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    assert raw_exchange(port, b"GET /metrics HTTP/9.9\r\n\r\n").startswith(b"HTTP/1.1 505 ")
    assert raw_exchange(port, b"GET /metrics HTTP/1.1\r\nno colon\r\n\r\n").startswith(
        b"HTTP/1.1 400 "
    )
    huge = b"GET /metrics HTTP/1.1\r\nX-Filler: " + b"x" * (64 * 1024)
    assert raw_exchange(port, huge).startswith(b"HTTP/1.1 431 ")
    # blank lines before the request line are tolerated; bare LF line ends too
    answer = raw_exchange(port, b"\r\nGET /metrics HTTP/1.0\nHost: x\n\n")
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and b"Connection: close" in answer


def test_ipv6_listen() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    _sampler, collector = faulty_collector(polls=1)
    registry = CollectorRegistry()
    registry.register(collector)
    try:
        server = export.MetricsServer(registry, "::1", 0)
    except OSError as exc:
        pytest.skip(f"cannot bind ::1: {exc}")
    server.start()
    try:
        status, _headers, body = request(server.port, "GET", "/metrics", host="::1")
        assert status == 200 and b"DCGM_FI_DEV_GPU_UTIL{" in body
    finally:
        server.stop()


def closed_by_server(sock: socket.socket) -> bool:
    """True once the server has closed its end (whatever it sent before is read and dropped)."""
    try:
        while sock.recv(65536, socket.MSG_DONTWAIT):
            pass
        return True
    except BlockingIOError:
        return False
    except OSError:  # reset
        return True


def test_silent_and_slow_clients_cost_no_thread_and_are_cut_off(monkeypatch) -> None:
    """200 clients that connect and send nothing, and one that trickles its request a byte at a
    time: no thread each, scrapes still answered at once, and every one of them closed by the
    server within the request deadline (a total, however slowly the bytes come)."""
    timeout = 1.5
    monkeypatch.setattr(export_server, "REQUEST_TIMEOUT_S", timeout, raising=False)
    _sampler, collector = faulty_collector(polls=2)
    registry = CollectorRegistry()
    registry.register(collector)
    server = export.MetricsServer(registry, "127.0.0.1", 0)
    server.start()
    baseline = threading.active_count()
    silent: list[socket.socket] = []
    try:
        for _ in range(200):
            silent.append(socket.create_connection(("127.0.0.1", server.port), timeout=5))
        loris = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        loris_opened = time.monotonic()
        loris.sendall(b"GET /metrics HTTP/1.1\r\n")
        threads = threading.active_count()
        started = time.monotonic()
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5) as r:
            text = r.read().decode()
        scrape_s = time.monotonic() - started
        assert len(text_string_to_metric_families_by_name(text)["DCGM_FI_DEV_GPU_UTIL"]) == 8
        assert scrape_s < 2.0
        assert threads <= baseline, (baseline, threads)  # no thread per connection
        # The slow client keeps sending a header byte every 0.1 s: cut at the deadline anyway.
        cut = None
        while time.monotonic() < loris_opened + timeout + 3:
            if closed_by_server(loris):
                cut = time.monotonic() - loris_opened
                break
            try:
                loris.send(b"X")
            except OSError:
                cut = time.monotonic() - loris_opened
                break
            time.sleep(0.1)
        assert cut is not None and cut <= timeout + 1.0, cut
        deadline = time.monotonic() + timeout + 2
        while not all(closed_by_server(s) for s in silent) and time.monotonic() < deadline:
            time.sleep(0.1)
        open_ = sum(not closed_by_server(s) for s in silent)
        assert open_ == 0, f"{open_} silent sockets still open"
        assert threading.active_count() <= baseline
        # and it still serves afterwards
        assert request(server.port, "GET", "/metrics")[0] == 200
        print(
            f"\nthreads: {baseline} before, {threads} with 201 idle sockets; "
            f"scrape {scrape_s:.3f}s; slow client cut after {cut:.2f}s (deadline {timeout}s)"
        )
    finally:
        for sock in silent:
            sock.close()
        server.stop()


def text_string_to_metric_families_by_name(text: str) -> dict[str, list]:
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def test_stop_closes_open_connections_at_once() -> None:
    _sampler, collector = faulty_collector(polls=1)
    registry = CollectorRegistry()
    registry.register(collector)
    server = export.MetricsServer(registry, "127.0.0.1", 0)
    server.start()
    idle = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(5)]
    try:
        time.sleep(0.2)  # accepted
        started = time.monotonic()
        server.stop()
        assert time.monotonic() - started < 1.0
        assert all(closed_by_server(s) for s in idle)
        server.stop()  # twice is fine
    finally:
        for sock in idle:
            sock.close()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:9400", ("127.0.0.1", 9400)),
        (":9401", ("127.0.0.1", 9401)),
        ("9402", ("127.0.0.1", 9402)),
        ("[::1]:9403", ("::1", 9403)),
        ("localhost:9404", ("localhost", 9404)),
        ("0.0.0.0:9405", ("0.0.0.0", 9405)),
    ],
)
def test_parse_listen(text, expected) -> None:
    assert export.parse_listen(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("127.0.0.1:70000", "port 70000 is out of range (1-65535)"),
        ("127.0.0.1:0", "port 0 is out of range"),
        ("127.0.0.1:http", "port 'http' is not a number"),
        ("127.0.0.1", "no port"),
        ("::1:9400", "put an IPv6 address in brackets"),
        ("[::1]", "expected [IPv6]:PORT"),
        ("no-such-host.invalid:9400", "cannot resolve host 'no-such-host.invalid'"),
    ],
)
def test_bad_listen_is_an_argument_error(capsys, text, message) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["export", "--demo", "--listen", text])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "usage:" in err and "Traceback" not in err


def test_port_in_use_exits_2(capsys) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert cli.main(["export", "--demo", "--listen", f"127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err
    assert f"cannot listen on http://127.0.0.1:{port}" in err
    assert "in use" in err and "Traceback" not in err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serving(listen: export.Listen, *, interval: float) -> ExportOptions:
    """``gputui export --demo --listen HOST:PORT --interval S``."""
    spec = BackendSpec.parse("sim")
    return ExportOptions(spec, listen=f"{listen.host}:{listen.port}", interval=interval)


def test_run_export_serves_until_stopped(capsys) -> None:
    stop = threading.Event()
    listen = export.Listen("127.0.0.1", _free_port())
    result: list[int] = []
    thread = threading.Thread(
        target=lambda: result.append(
            export_command.run(serving(listen, interval=0.2), Seams(stop=stop))
        )
    )
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(listen.url, timeout=5) as response:
                    text = response.read().decode()
                break
            except OSError:
                assert time.monotonic() < deadline, "the exporter never answered"
                time.sleep(0.05)
        assert "DCGM_FI_DEV_GPU_UTIL{" in text
    finally:
        stop.set()
        thread.join(10)
    assert result == [0]
    out, err = capsys.readouterr()
    assert out == f"serving http://127.0.0.1:{listen.port}/metrics (Ctrl-C to stop)\n"
    assert "warning" not in err


def test_beyond_loopback_warns(capsys) -> None:
    assert export.is_loopback("127.0.0.1") and export.is_loopback("::1")
    assert not export.is_loopback("0.0.0.0")
    stop = threading.Event()
    stop.set()  # bind, warn, serve, and leave at once
    listen = export.Listen("0.0.0.0", _free_port())
    assert export_command.run(serving(listen, interval=1), Seams(stop=stop)) == 0
    err = capsys.readouterr().err
    assert "warning: listening on http://0.0.0.0:" in err
    assert "visible to the network" in err and len(err.strip().splitlines()) == 1


def test_missing_prometheus_client_exits_2(monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    for name in [
        m for m in sys.modules if m.startswith(("gputui.export", "gputui.commands.export"))
    ]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delattr(gputui, "export")
    assert cli.main(["export", "--demo"]) == 2
    assert "pip install 'gputui[export]'" in capsys.readouterr().err


def test_export_is_a_sub_command() -> None:
    args = cli.build_parser().parse_args(["--interval", "2", "export", "--listen", ":9500"])
    assert (args.command, args.interval, args.listen) == ("export", 2.0, ":9500")
    args = cli.build_parser().parse_args(["export", "--interval", "5", "--seed", "3"])
    assert (args.interval, args.seed, args.listen) == (5.0, 3, "127.0.0.1:9400")


def mig_scrape():
    sampler = fake_clock_sampler("mig", polls=0)
    sampler.health = default_health()
    collector = export.GpuCollector(sampler)
    for _ in range(3):
        sampler.poll()
        sampler.clock.now += sampler.interval
    _text, families = scrape(collector)
    return sampler.latest, families


def test_mig_instances_are_exported_under_their_gpu() -> None:
    snap, families = mig_scrape()
    for s in snap.gpus:
        info = snap.node.gpu(s.index)
        gpu = str(s.index)
        used = samples(families, "gputui_mig_memory_used_bytes", gpu=gpu)
        assert len(used) == len(info.mig_devices)
        readings = {m.uuid: m for m in s.mig_devices}
        for m in info.mig_devices:
            labels = {
                "gpu": gpu,
                "gi": str(m.gpu_instance_id),
                "ci": str(m.compute_instance_id),
                "profile": m.name.rsplit(" ", 1)[-1],
            }
            assert value(families, "gputui_mig_memory_used_bytes", **labels) == (
                readings[m.uuid].memory_used_bytes
            )
            assert value(families, "gputui_mig_memory_total_bytes", **labels) == (
                m.memory_total_bytes
            )
            assert value(families, "gputui_mig_info", uuid=m.uuid, **labels) == 1
    for name in ("gputui_mig_memory_used_bytes", "gputui_mig_memory_total_bytes"):
        assert families[name].type == "gauge"
        assert {frozenset(s.labels) for s in families[name].samples} == {
            frozenset({"gpu", "gi", "ci", "profile"})
        }
    # NVML reports no utilization for a GPU in MIG mode: not exported, not zero
    assert {s.labels["gpu"] for s in families["DCGM_FI_DEV_GPU_UTIL"].samples} == {"7"}


def test_mig_process_series_carry_their_instance() -> None:
    snap, families = mig_scrape()
    series = families["gputui_process_gpu_memory_bytes"].samples
    attribution = set(ATTRIBUTION_LABELS)
    assert all(set(s.labels) == {"gpu", "pid", "user", "name", "mig", *attribution} for s in series)
    for p in snap.processes:
        (s,) = [s for s in series if s.labels["pid"] == str(p.pid)]
        assert s.labels["mig"] == (p.mig_uuid or "")
        assert s.value == p.gpu_memory_bytes
    assert any(s.labels["mig"].startswith("MIG-") for s in series)
    assert [s.labels["mig"] for s in series if s.labels["gpu"] == "7"] == [""]


def test_nodes_without_mig_keep_their_labels(faulty) -> None:
    _snap, _text, families = faulty
    assert not any(name.startswith("gputui_mig_") for name in families)
    for s in families["gputui_process_gpu_memory_bytes"].samples:
        # the attribution labels are always there (empty when unknown); no ``mig`` label
        assert set(s.labels) == {"gpu", "pid", "user", "name", *ATTRIBUTION_LABELS}


# -- who uses the GPUs, and idle GPUs -------------------------------------------------------------

CID = "5e277ec3818f2aa40af6b887e5098fb0052d5c0e364326dd100038455d7fc3fb"
POD_UID = "1f2e3d4c-5b6a-4789-9abc-def012345678"


def attributed_scrape(top_processes: int = 10):
    """The faulty node with its processes given a Slurm job (GPUs 0-1), a pod (GPU 2), a named
    container (GPU 4) and none (the rest)."""
    sampler, collector = faulty_collector()
    collector.top_processes = top_processes
    snap = sampler.latest
    procs = []
    for p in snap.processes:
        if p.gpu_index in (0, 1):
            p = dataclasses.replace(
                p, slurm_job_id="4242", slurm_step="0", slurm_job_name="sft", slurm_job_user="al"
            )
        elif p.gpu_index == 2:
            p = dataclasses.replace(
                p, k8s_pod_uid=POD_UID, k8s_pod_name="trainer-0", k8s_namespace="ml"
            )
        elif p.gpu_index == 4:
            p = dataclasses.replace(p, container_id=CID, container_name="vllm")
        else:
            p = dataclasses.replace(p, container_id=None)
        procs.append(p)
    sampler.latest = dataclasses.replace(snap, processes=tuple(procs))
    _text, families = scrape(collector)
    return sampler.latest, families


def test_process_series_carry_job_pod_namespace_and_container() -> None:
    snap, families = attributed_scrape()
    by_gpu = {
        s.labels["gpu"]: s.labels for s in families["gputui_process_gpu_memory_bytes"].samples
    }
    job = next(p for p in snap.processes if p.gpu_index == 0)
    assert job.container_id is not None  # the job's ranks run in a container
    assert {k: by_gpu["0"][k] for k in ATTRIBUTION_LABELS} == {
        "slurm_job": "4242",
        "pod": "",
        "namespace": "",
        "container": job.container_id[:12],
    }
    assert (by_gpu["2"]["pod"], by_gpu["2"]["namespace"]) == ("trainer-0", "ml")
    assert by_gpu["4"]["container"] == "vllm"
    assert {by_gpu["6"][k] for k in ATTRIBUTION_LABELS} == {""}


def test_usage_by_job_pod_and_container() -> None:
    snap, families = attributed_scrape()
    on = {p.gpu_index: p for p in snap.processes}
    for gpu in ("0", "1"):
        p = on[int(gpu)]
        assert value(families, "gputui_job_gpu_memory_bytes", slurm_job="4242", gpu=gpu) == (
            p.gpu_memory_bytes
        )
        assert value(families, "gputui_job_sm_pct", slurm_job="4242", gpu=gpu) == p.sm_pct
        assert value(families, "gputui_job_processes", slurm_job="4242", gpu=gpu) == 1
    info = value(families, "gputui_job_info", slurm_job="4242", job_name="sft", job_user="al")
    assert info == 1
    assert value(families, "gputui_pod_gpu_memory_bytes", pod="trainer-0", namespace="ml") == (
        on[2].gpu_memory_bytes
    )
    assert value(families, "gputui_container_gpu_memory_bytes", container="vllm", gpu="4") == (
        on[4].gpu_memory_bytes
    )
    # the job's total across GPUs is sum by (slurm_job)
    total = sum(s.value for s in samples(families, "gputui_job_gpu_memory_bytes", slurm_job="4242"))
    assert total == on[0].gpu_memory_bytes + on[1].gpu_memory_bytes


def test_workload_series_are_bounded_per_gpu() -> None:
    sampler, collector = faulty_collector()
    snap = sampler.latest
    extra = [
        ProcessSample(pid=50_000 + k, gpu_index=0, gpu_memory_bytes=(k + 1) * MIB, sm_pct=1.0,
                      container_id=f"{k:064x}")
        for k in range(5)
    ]  # fmt: skip
    sampler.latest = dataclasses.replace(snap, processes=tuple(extra))
    collector.top_processes = 2
    _text, families = scrape(collector)
    got = {
        s.labels["container"]: s.value
        for s in families["gputui_container_gpu_memory_bytes"].samples
    }
    assert got == {f"{4:064x}"[:12]: 5 * MIB, f"{3:064x}"[:12]: 4 * MIB, "other": 6 * MIB}


def test_energy_and_idle_seconds_per_gpu(faulty) -> None:
    snap, text, families = faulty
    usage = snap.usage
    assert usage is not None
    assert "# TYPE gputui_gpu_energy_joules_total counter" in text
    for g in usage.gpus:
        if g.index == LOST:
            assert not samples(families, "gputui_gpu_energy_joules", gpu=str(LOST))
            continue
        gpu = str(g.index)
        assert value(families, "gputui_gpu_energy_joules", gpu=gpu) == g.energy_used_j
        assert value(families, "gputui_gpu_idle_seconds", gpu=gpu) == g.idle_s
        assert value(families, "gputui_gpu_held_idle_seconds", gpu=gpu) == g.held_idle_s
        assert value(families, "gputui_gpu_observed_seconds", gpu=gpu) == g.observed_s
        assert value(families, "gputui_gpu_idle", gpu=gpu) == float(bool(g.idle))
    assert "gputui_node_idle_cost_per_hour" not in families  # no price given


def test_idle_cost_per_hour_is_exported_with_a_price() -> None:
    sampler = fake_clock_sampler("dgx-h100", polls=0)
    sampler.usage.gpu_hour_price = 3.0
    collector = export.GpuCollector(sampler)
    for _ in range(3):
        sampler.poll()
        sampler.clock.now += 1
    _text, families = scrape(collector)
    idle = sampler.latest.usage.idle_gpus
    assert idle >= 1  # GPU 7: an idle notebook
    assert value(families, "gputui_node_idle_cost_per_hour") == 3.0 * idle
    assert value(families, "gputui_gpu_hour_price") == 3.0
    assert value(families, "gputui_gpu_held_idle", gpu="7") == 1


def test_no_series_carries_a_job_or_instance_label() -> None:
    """Prometheus sets ``job`` and ``instance`` on every scraped series: a target's own label of
    that name is renamed ``exported_job`` (without honor_labels), and ``sum by (job)`` sums by
    scrape job. The busy node (a Slurm job, a pod, containers) has neither anywhere."""
    sampler = fake_clock_sampler("dgx-h100", polls=0)
    collector = export.GpuCollector(sampler)
    for _ in range(3):
        sampler.poll()
        sampler.clock.now += 1
    snap = sampler.latest
    assert any(p.slurm_job_id for p in snap.processes)
    assert any(p.k8s_pod_uid for p in snap.processes)
    _text, families = scrape(collector)
    every = [s for family in families.values() for s in family.samples]
    assert every and not [s for s in every if {"job", "instance"} & set(s.labels)]
    jobs = {s.labels["slurm_job"] for s in families["gputui_job_gpu_memory_bytes"].samples}
    assert jobs == {"4242"}
    assert value(families, "gputui_job_info", slurm_job="4242", job_name="train-llama") == 1


# -- label values are text from outside ------------------------------------------------------------

HOSTILE = "evil\x1b]0;pwned\x07\x1b[2J\u202eabc\x9b31m\nnext"


def test_hostile_names_reach_the_page_sanitised_and_bounded() -> None:
    """Process, container and pod names, namespaces, users and Slurm job names can hold anything
    (escape sequences, newlines, bidi controls, megabytes): on the page each label value is one
    line of printable text of at most MAX_LABEL_CHARS characters."""
    sampler, collector = faulty_collector()
    snap = sampler.latest
    long = "x" * 100_000
    procs = []
    for p in snap.processes:
        if p.gpu_index == 0:
            p = dataclasses.replace(
                p, user=HOSTILE, name=HOSTILE, slurm_job_id="4242", slurm_job_name=HOSTILE,
                slurm_job_user=long,
            )  # fmt: skip
        elif p.gpu_index == 1:
            p = dataclasses.replace(
                p, k8s_pod_uid=POD_UID, k8s_pod_name=HOSTILE, k8s_namespace=long, name=long
            )
        else:
            p = dataclasses.replace(p, container_id=CID, container_name=HOSTILE + long)
        procs.append(p)
    sampler.latest = dataclasses.replace(snap, processes=tuple(procs))
    registry = CollectorRegistry()
    registry.register(collector)
    server = export.MetricsServer(registry, "127.0.0.1", 0)
    server.start()
    try:
        _status, _headers, body = request(server.port, "GET", "/metrics")
    finally:
        server.stop()
    page = body.decode()
    for bad in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert bad not in page
    assert "\\n" not in page  # a newline, even escaped, is no part of a name
    families = {f.name: f for f in text_string_to_metric_families(page)}
    every = [s for family in families.values() for s in family.samples]
    longest = max(len(v) for s in every for v in s.labels.values())
    assert longest == export.MAX_LABEL_CHARS
    shown = "evil?]0;pwned??[2J?abc?31m?next"
    assert value(families, "gputui_job_info", slurm_job="4242", job_name=shown) == 1
    (on_0,) = samples(families, "gputui_process_gpu_memory_bytes", gpu="0")
    assert (on_0.labels["user"], on_0.labels["name"]) == (shown, shown)
    assert samples(families, "gputui_pod_processes", pod=shown, namespace="x" * 128)
    assert samples(families, "gputui_container_processes", container=(shown + "x" * 128)[:128])
