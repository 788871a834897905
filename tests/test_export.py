"""`gputui export`: metric names, types, labels and values against the simulated faulty node, the
endpoint over loopback, and the --listen checks."""

from __future__ import annotations

import dataclasses
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

import gputui
from gputui import cli, export
from gputui.commands import export as export_command
from gputui.fakeclock import fake_clock_sampler
from gputui.health import gpu_severity
from gputui.model import SEVERITY_ORDER, ProcessSample
from gputui.session import default_health

MIB = 1024 * 1024
LOST = 3  # the faulty scenario's GPU that falls off the bus


def faulty_collector(polls: int = 6):
    """The faulty node after ``polls`` readings, with the dashboard's health monitor attached."""
    sampler = fake_clock_sampler("faulty", polls=0)
    sampler.health = default_health()
    collector = export.GpuCollector(sampler)
    for _ in range(polls):
        sampler.poll()
        sampler.clock.now += sampler.interval
    return sampler, collector


def scrape(collector) -> tuple[str, dict]:
    registry = CollectorRegistry()
    registry.register(collector)
    text = export.render(registry).decode()
    return text, {f.name: f for f in text_string_to_metric_families(text)}


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
    present = [name for name, _doc, _fn in export.DCGM_GAUGES if name in families]
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
    for name, _doc, fn in export.DCGM_GAUGES:
        for s in snap.gpus:
            expected = 0 if s.lost or fn(s) is None else 1
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


def test_run_export_serves_until_stopped(capsys) -> None:
    stop = threading.Event()
    listen = export.Listen("127.0.0.1", _free_port())
    result: list[int] = []
    thread = threading.Thread(
        target=lambda: result.append(
            export_command.run("sim", seed=0, listen=listen, interval=0.2, stop=stop)
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
    assert export_command.run("sim", seed=0, listen=listen, interval=1, stop=stop) == 0
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
