"""`gputui fleet` against a real Prometheus server (the `prometheus` binary) on loopback, scraping
every second: six `gputui export --backend sim:...` processes (healthy and faulty scenarios,
different seeds, each metric naming: legacy, DCGM 4.7, both; one of them stops during the test
and goes silent), a target where nothing listens, and plain HTTP servers serving exporter pages
written from their documentation (tests/data/fleet/*.prom): two dcgm-exporter pages with the
legacy names (the legacy `Hostname` and the newer `hostname` label, MIG slices, a pod's labels,
DCGM's blank value, an XID), a dcgm-exporter 4.9 page with DCGM 4.7's names and units (an XID
under its new name) and an AMD Device Metrics Exporter page.

Skipped when `prometheus` is not installed, unless GPUTUI_REQUIRE_PROMETHEUS is set (CI sets it):
then it fails. `python tests/test_fleet_prometheus.py --record` refreshes the recorded answers in
tests/data/fleet/recorded.json that the unit and snapshot tests play back.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "fleet"
REQUIRE_ENV = "GPUTUI_REQUIRE_PROMETHEUS"
PROMETHEUS = shutil.which("prometheus")

EXPORTERS: dict[str, tuple[str, int, tuple[str, ...]]] = {
    # name: (backend, seed, more arguments)
    "healthy": ("sim:dgx-h100", 1, ()),
    "faulty": ("sim:faulty", 2, ()),
    "small": ("sim:a100-pcie", 3, ()),
    "leaving": ("sim:rtx4090", 4, ()),  # stopped once Prometheus has seen it: goes silent
    "renamed": ("sim:a100-pcie", 5, ("--dcgm-names", "4.7")),
    "migrating": ("sim:rtx4090", 6, ("--dcgm-names", "both")),
}
PAGES = {
    "a100": "dcgm-a100.prom",
    "h100": "dcgm-h100-xid.prom",
    "h200": "dcgm49-h200-xid.prom",
    "mi300x": "amd-dme-mi300x.prom",
}
PAGE_JOBS = {"a100": "dcgm", "h100": "dcgm", "h200": "dcgm", "mi300x": "amd"}

# One worker starts the test bed (five processes and a Prometheus) and runs every test on it.
pytestmark = pytest.mark.xdist_group("prometheus")


def _need_prometheus() -> None:
    if PROMETHEUS is None:
        message = "the prometheus binary is not installed (apt-get install prometheus)"
        if os.environ.get(REQUIRE_ENV):
            pytest.fail(f"{message}, and {REQUIRE_ENV} is set")
        pytest.skip(message)


# -- the test bed ----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _PageHandler(BaseHTTPRequestHandler):
    page = b""

    def do_GET(self) -> None:
        if self.path.split("?")[0] != "/metrics":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(self.page)))
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, *_args: object) -> None:
        pass


def serve_page(text: str) -> ThreadingHTTPServer:
    """A plain HTTP server on loopback answering /metrics with ``text``."""
    handler = type("Page", (_PageHandler,), {"page": text.encode()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def get_json(url: str, **params: str) -> dict:
    with urllib.request.urlopen(f"{url}?{urllib.parse.urlencode(params)}", timeout=10) as r:
        return json.load(r)


def wait_for(what: str, check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


@dataclass
class Bed:
    url: str
    instances: dict[str, str]
    """Target name -> its instance label."""
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    servers: list[ThreadingHTTPServer] = field(default_factory=list)
    started: float = 0.0

    def query(self, promql: str) -> list[dict]:
        answer = get_json(f"{self.url}/api/v1/query", query=promql)
        assert answer["status"] == "success", answer
        return answer["data"]["result"]

    def up(self) -> dict[str, float]:
        return {r["metric"]["instance"]: float(r["value"][1]) for r in self.query("up")}

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        for server in self.servers:
            server.shutdown()
            server.server_close()


def start_bed(tmp: Path) -> Bed:
    assert PROMETHEUS is not None
    started = time.monotonic()
    instances: dict[str, str] = {}
    procs: dict[str, subprocess.Popen[bytes]] = {}
    bed = Bed("", instances, procs, started=started)
    try:
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        for name, (backend, seed, more) in EXPORTERS.items():
            port = free_port()
            instances[name] = f"127.0.0.1:{port}"
            procs[name] = subprocess.Popen(
                [sys.executable, "-m", "gputui", "export", "--backend", backend, "--seed",
                 str(seed), "--listen", instances[name], "--interval", "0.5", *more],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
            )  # fmt: skip
        for name, page in PAGES.items():
            server = serve_page((DATA / page).read_text())
            bed.servers.append(server)
            instances[name] = f"127.0.0.1:{server.server_address[1]}"
        instances["nowhere"] = f"127.0.0.1:{free_port()}"  # nothing ever listens here
        gputui_targets = [instances[n] for n in (*EXPORTERS, "nowhere")]
        dcgm_targets = [instances[n] for n in PAGES if PAGE_JOBS[n] == "dcgm"]
        amd_targets = [instances[n] for n in PAGES if PAGE_JOBS[n] == "amd"]
        config = tmp / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n"
            f"  - job_name: gputui\n    static_configs:\n"
            f"      - targets: {json.dumps(gputui_targets)}\n"
            f"  - job_name: dcgm\n    static_configs:\n"
            f"      - targets: {json.dumps(dcgm_targets)}\n"
            f"  - job_name: amd\n    static_configs:\n"
            f"      - targets: {json.dumps(amd_targets)}\n"
        )  # fmt: skip
        port = free_port()
        bed.url = f"http://127.0.0.1:{port}"
        procs["prometheus"] = subprocess.Popen(
            [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=(tmp / "prometheus.log").open("wb"),
        )  # fmt: skip

        def ready() -> bool:
            assert procs["prometheus"].poll() is None, (tmp / "prometheus.log").read_text()
            try:
                with urllib.request.urlopen(f"{bed.url}/-/ready", timeout=2) as r:
                    return r.status == 200
            except OSError:
                return False

        wait_for("Prometheus to start", ready)
        live = [instances[n] for n in (*EXPORTERS, *PAGES)]
        wait_for("every target scraped", lambda: all(bed.up().get(i) == 1.0 for i in live))
        leaving = instances["leaving"]
        wait_for(
            "the leaving node in the last-seen lookback",
            lambda: bool(bed.query(
                f'max_over_time(timestamp(DCGM_FI_DEV_FB_USED{{instance="{leaving}"}})[10m:5s])'
            )),
        )  # fmt: skip
        procs["leaving"].send_signal(signal.SIGTERM)
        procs["leaving"].wait(10)
        wait_for("the leaving node's scrape to fail", lambda: bed.up().get(leaving) == 0.0)
        faulty = instances["faulty"]
        wait_for(
            "the faulty node's lost GPU",
            lambda: bool(bed.query(f'gputui_gpu_lost{{instance="{faulty}"}} == 1')),
        )
    except BaseException:
        bed.stop()
        raise
    return bed


@pytest.fixture(scope="module")
def bed() -> Iterator[Bed]:
    _need_prometheus()
    with tempfile.TemporaryDirectory(prefix="gputui-fleet-") as tmp:
        bed = start_bed(Path(tmp))
        try:
            yield bed
        finally:
            bed.stop()


def fleet_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gputui", "fleet", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), **(env or {})},
    )


def fleet_until(
    bed: Bed, check: Callable[[subprocess.CompletedProcess[str]], bool], *args: str
) -> subprocess.CompletedProcess[str]:
    """`gputui fleet --json ARGS`, again (for up to 15 s) until ``check`` passes: on a loaded
    machine a 1 s scrape of a Python exporter can time out now and then, and that target reads
    as silent (up == 0) until its next scrape."""
    deadline = time.monotonic() + 15
    while True:
        result = fleet_cli("--prometheus", bed.url, "--json", *args)
        if check(result) or time.monotonic() > deadline:
            return result
        time.sleep(1)


EXPECTED_HEALTH = {
    "healthy": "ok",
    "faulty": "fail",
    "small": "ok",
    "leaving": "unknown",
    "renamed": "ok",
    "migrating": "ok",
    "nowhere": "unknown",
    "a100": "warn",
    "h100": "fail",
    "h200": "fail",
    "mi300x": "ok",
}


def _health(bed: Bed, result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    try:
        nodes = {n["instance"]: n["health"] for n in json.loads(result.stdout)["nodes"]}
    except ValueError:
        return {}
    return {name: nodes.get(inst, "missing") for name, inst in bed.instances.items()}


# -- the tests -------------------------------------------------------------------------------------


def test_json_shows_every_node_with_its_health(bed: Bed) -> None:
    result = fleet_until(bed, lambda r: _health(bed, r) == EXPECTED_HEALTH)
    assert result.returncode == 2, result.stderr  # the faulty node and the XID node fail
    answer = json.loads(result.stdout)
    nodes = {n["instance"]: n for n in answer["nodes"]}
    i = bed.instances
    assert set(nodes) == set(i.values())  # every exporter, both pages, the silent ones
    assert _health(bed, result) == EXPECTED_HEALTH, (answer, bed.up())
    healthy = nodes[i["healthy"]]
    assert healthy["source"] == "gputui" and healthy["up"] is True and healthy["gpu_count"] == 8
    assert healthy["hostname"].startswith("dgx-h100")
    gpu = healthy["gpus"][0]
    for key in ("index", "uuid", "name", "util_pct", "memory_used_bytes", "memory_total_bytes",
                "power_w", "temperature_c", "health"):  # fmt: skip
        assert gpu[key] is not None, key
    assert gpu["memory_total_bytes"] > 70 * 2**30  # MiB on the wire, bytes here
    faulty = nodes[i["faulty"]]
    lost = [g for g in faulty["gpus"] if g["lost"]]
    assert [g["index"] for g in lost] == [3] and lost[0]["health"] == "fail"
    leaving = nodes[i["leaving"]]
    assert leaving["up"] is False and leaving["silent"].startswith("scrape failing")
    assert leaving["last_seen"] is not None and leaving["gpu_count"] == 1
    assert leaving["hostname"] != leaving["instance"]  # known from before it went silent
    assert nodes[i["nowhere"]]["last_seen"] is None
    a100, h100 = nodes[i["a100"]], nodes[i["h100"]]
    assert a100["source"] == h100["source"] == "dcgm"
    assert a100["hostname"] == "a100-node-01" and h100["hostname"] == "h100-node-07"
    assert a100["driver_version"] == "535.183.06"
    assert [g["health"] for g in h100["gpus"]] == ["warn", "fail"]
    assert h100["gpus"][1]["xid"] == 79 and "XID 79" in h100["reasons"][0]
    mig = a100["gpus"][3]
    assert mig["memory_used_bytes"] == (20480 + 10240) * 2**20 and mig["util_pct"] is None
    assert a100["gpus"][2]["temperature_memory_c"] is None  # DCGM's blank value
    assert answer["summary"] == {
        "nodes": 11, "gpus": 8 + 8 + 2 + 1 + 2 + 1 + 4 + 2 + 2 + 2,
        "ok": 5, "warn": 1, "fail": 3, "unknown": 2,
    }  # fmt: skip


def page_values(page: str) -> dict[tuple[str, str], float]:
    """``(metric, gpu)`` -> value of a fixture page (``gpu`` or AMD's ``gpu_id``; AMD's clocks
    as ``gpu_clock:system``, the largest of a type)."""
    out: dict[tuple[str, str], float] = {}
    for line in (DATA / page).read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        name = series.split("{")[0]
        gpu = re.search(r'\bgpu(?:_id)?="(\d+)"', series)
        kind = re.search(r'clock_type="(\w+)"', series)
        key = (f"{name}:{kind.group(1)}" if kind else name, gpu.group(1) if gpu else "")
        out[key] = max(out.get(key, float(value)), float(value))
    return out


def test_a_mixed_fleet_lists_every_exporter_in_one_set_of_units(bed: Bed) -> None:
    """One Prometheus holding gputui nodes (each naming), a legacy dcgm-exporter node, a
    dcgm-exporter 4.9 node and an AMD DME node: each listed with its GPUs, the exporter and
    naming it speaks, utilisation in percent, memory in bytes, clocks in MHz, power in W; the 4.9
    node fails on its XID under the new name."""
    result = fleet_until(bed, lambda r: _health(bed, r) == EXPECTED_HEALTH)
    nodes = {n["instance"]: n for n in json.loads(result.stdout)["nodes"]}
    i = bed.instances
    spoken = {name: (nodes[i[name]]["source"], nodes[i[name]]["naming"]) for name in i}
    assert spoken == {
        "healthy": ("gputui", ["dcgm"]), "faulty": ("gputui", ["dcgm"]),
        "small": ("gputui", ["dcgm"]), "leaving": ("gputui", []),  # silent: no names now
        "renamed": ("gputui", ["dcgm-4.7"]), "migrating": ("gputui", ["dcgm", "dcgm-4.7"]),
        "nowhere": ("unknown", []), "a100": ("dcgm", ["dcgm"]), "h100": ("dcgm", ["dcgm"]),
        "h200": ("dcgm", ["dcgm-4.7"]), "mi300x": ("amd", ["amd-dme"]),
    }  # fmt: skip
    h200, page = nodes[i["h200"]], page_values("dcgm49-h200-xid.prom")
    assert (h200["hostname"], h200["driver_version"]) == ("h200-node-11", "580.95.05")
    for gpu in h200["gpus"]:
        n = str(gpu["index"])
        assert gpu["util_pct"] == pytest.approx(page["DCGM_FI_DEV_GPU_UTIL_RATIO", n] * 100)
        assert gpu["memory_used_bytes"] == page["DCGM_FI_DEV_FB_USED_BYTES", n]
        assert gpu["memory_total_bytes"] == page["DCGM_FI_DEV_FB_CAPACITY_BYTES", n]
        assert gpu["clock_sm_mhz"] == pytest.approx(page["DCGM_FI_DEV_SM_CLOCK_HERTZ", n] / 1e6)
        assert gpu["power_w"] == page["DCGM_FI_DEV_BOARD_POWER_WATTS", n]
        assert gpu["temperature_c"] == page["DCGM_FI_DEV_GPU_TEMP_CELSIUS", n]
    assert h200["gpus"][0]["util_pct"] == pytest.approx(73.0)  # 0.73 on the wire
    assert [g["health"] for g in h200["gpus"]] == ["ok", "fail"]
    assert h200["gpus"][1]["xid"] == 48 and h200["reasons"][0].startswith("GPU 1: XID 48")
    mi300x, page = nodes[i["mi300x"]], page_values("amd-dme-mi300x.prom")
    assert (mi300x["hostname"], mi300x["driver_version"]) == ("mi300x-node-03", "6.12.12")
    assert mi300x["models"] == "2× AMD Instinct MI300X OAM"
    for gpu in mi300x["gpus"]:
        n = str(gpu["index"])
        assert gpu["uuid"] and gpu["health"] == "ok"
        assert gpu["util_pct"] == page["gpu_gfx_activity", n]
        assert gpu["memory_used_bytes"] == page["gpu_used_vram", n] * 2**20  # MB on the wire
        assert gpu["memory_total_bytes"] == page["gpu_total_vram", n] * 2**20
        assert gpu["clock_sm_mhz"] == page["gpu_clock:system", n]
        assert gpu["clock_memory_mhz"] == page["gpu_clock:memory", n]
        assert gpu["power_w"] == page["gpu_power_usage", n]
        # MI300 has no edge sensor: the junction stands in, shown once as the hotspot too
        assert gpu["temperature_c"] == gpu["temperature_hotspot_c"]
        assert gpu["temperature_c"] == page["gpu_junction_temperature", n]
    for name, count in (("renamed", 2), ("migrating", 1)):  # both namings: each GPU once
        assert nodes[i[name]]["gpu_count"] == count and nodes[i[name]]["health"] == "ok"
        for gpu in nodes[i[name]]["gpus"]:
            assert gpu["memory_total_bytes"] > 8 * 2**30 and 0 <= gpu["util_pct"] <= 100
            assert gpu["clock_sm_mhz"] is not None and 100 <= gpu["clock_sm_mhz"] < 5000


def test_gputui_export_speaks_dcgm_47_in_its_units(bed: Bed) -> None:
    renamed, migrating = bed.instances["renamed"], bed.instances["migrating"]
    ratios = bed.query(f'DCGM_FI_DEV_GPU_UTIL_RATIO{{instance="{renamed}"}}')
    assert len(ratios) == 2 and all(0 <= float(r["value"][1]) <= 1 for r in ratios)
    labels = ratios[0]["metric"]
    assert "hostname" in labels and "Hostname" not in labels
    assert labels["DCGM_FI_SYSTEM_DRIVER_VERSION"]
    assert bed.query(f'DCGM_FI_DEV_GPU_UTIL{{instance="{renamed}"}}') == []
    for name in ("DCGM_FI_DEV_FB_USED_BYTES", "DCGM_FI_DEV_FB_CAPACITY_BYTES"):
        for r in bed.query(f'{name}{{instance="{renamed}"}}'):
            assert float(r["value"][1]) == int(float(r["value"][1]))  # whole bytes
    hertz = bed.query(f'DCGM_FI_DEV_SM_CLOCK_HERTZ{{instance="{renamed}"}}')
    assert hertz and all(float(r["value"][1]) >= 1e8 for r in hertz)
    # both namings at once: the same reading, each in its unit (one scrape, one timestamp)
    where = f'{{instance="{migrating}"}}'
    same = bed.query(
        f"abs(DCGM_FI_DEV_GPU_UTIL{where} - on(instance, gpu) DCGM_FI_DEV_GPU_UTIL_RATIO{where}"
        f" * 100) < 1e-9 and on(instance, gpu) abs(DCGM_FI_DEV_SM_CLOCK{where} * 1e6 -"
        f" on(instance, gpu) DCGM_FI_DEV_SM_CLOCK_HERTZ{where}) < 1"
    )
    assert len(same) == 1
    floor = bed.query(
        f"DCGM_FI_DEV_FB_USED_BYTES{where} - on(instance, gpu) DCGM_FI_DEV_FB_USED{where} * 1048576"
    )
    assert len(floor) == 1 and 0 <= float(floor[0]["value"][1]) < 1048576  # legacy: whole MiB


def test_match_and_node_select_nodes_and_set_the_exit_status(bed: Bed) -> None:
    dcgm = fleet_cli("--prometheus", bed.url, "--json", "--match", '{job="dcgm"}')
    assert dcgm.returncode == 2
    hosts = sorted(n["hostname"] for n in json.loads(dcgm.stdout)["nodes"])
    assert hosts == ["a100-node-01", "h100-node-07", "h200-node-11"]
    warn = fleet_cli("--prometheus", bed.url, "--json", "--node", "^a100-node")
    assert warn.returncode == 1 and len(json.loads(warn.stdout)["nodes"]) == 1
    healthy = bed.instances["healthy"]
    ok = fleet_until(bed, lambda r: r.returncode == 0, "--match", f'instance="{healthy}"')
    assert ok.returncode == 0, (ok.stdout, bed.up())
    assert [n["health"] for n in json.loads(ok.stdout)["nodes"]] == ["ok"]
    none = fleet_cli("--prometheus", bed.url, "--json", "--match", '{job="no-such-job"}')
    assert none.returncode == 2 and "no GPU node found" in none.stderr


def test_unreachable_prometheus_exits_2_naming_the_url(bed: Bed) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = fleet_cli("--prometheus", url, "--json")
    assert result.returncode == 2 and result.stdout == ""
    assert url in result.stderr and "cannot connect" in result.stderr
    wrong = fleet_cli("--prometheus", bed.instances["a100"], "--json")  # not Prometheus
    assert wrong.returncode == 2 and "404" in wrong.stderr
    bad = fleet_cli("--prometheus", bed.url, "--json", "--match", '{job=~"("}')
    assert bad.returncode == 2 and "query rejected" in bad.stderr


def test_the_range_query_gives_each_gpu_a_history(bed: Bed) -> None:
    from gputui.commands.fleet import make_source

    source = make_source(bed.url)

    def known_points() -> int:
        return sum(
            v == v for v in source.history(bed.instances["healthy"], window=60).of("util", 0)
        )

    # A few scrapes into the window (the tests before this one may have been quick).
    wait_for("three scrapes of the healthy node", lambda: known_points() >= 3)
    history = source.history(bed.instances["healthy"], window=60)
    assert sorted(history.series["util"]) == list(range(8))
    assert sum(v == v for v in history.of("util", 0)) >= 3  # a few known points (not NaN)
    assert set(history.series) == {"util", "memory", "power", "temperature"}
    for name, metric, scale in (
        ("h200", "DCGM_FI_DEV_FB_USED_BYTES", 1),
        ("mi300x", "gpu_used_vram", 2**20),
    ):  # every vocabulary charts, in bytes
        page = page_values(PAGES[name])
        other = source.history(bed.instances[name], window=60)
        assert sorted(other.series["memory"]) == [0, 1], name
        known = [v for v in other.of("memory", 0) if v == v]
        assert known and known[-1] == page[metric, "0"] * scale, name


async def test_tui_lists_the_fleet_and_opens_a_node(bed: Bed, tui_env: None) -> None:
    from gputui.commands.fleet import make_source
    from gputui.tui.fleet.app import FleetApp
    from gputui.tui.fleet.screens import NodeScreen

    app = FleetApp(make_source(bed.url), interval=1.0)
    async with app.run_test(size=(140, 40)) as pilot:
        for _ in range(100):
            await pilot.pause(0.1)
            if app.refreshes:
                break
        table = app.fleet_screen.nodes
        visible = table.visible_items
        assert len(visible) == 11
        assert [n.health for n in visible[:3]] == ["fail", "fail", "fail"]  # worst first
        await pilot.press("slash", *"a100-node", "enter")
        assert [n.hostname for n in table.visible_items] == ["a100-node-01"]
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, NodeScreen) and screen.instance == bed.instances["a100"]
        for _ in range(100):
            await pilot.pause(0.1)
            if screen.history is not None:
                break
        assert len(screen.gpus.visible_items) == 4
        lines = screen.charts.plain_lines
        assert lines[0].startswith("history last") and lines[1].startswith("GPU 0")
        assert any(ch in lines[1] for ch in "▁▂▃▄▅▆▇█")
        await pilot.press("escape")
        assert app.screen is app.fleet_screen


SECRET_HASH = "$2b$12$P9l2S0//KIGBkmq/9IqLvenVDQVjwCIp4lIPMUfpwiVRjW2gEiGVu"
"""bcrypt of the password ``s3cret``, for Prometheus's --web.config.file."""


@pytest.fixture(scope="module")
def secured() -> Iterator[str]:
    """A Prometheus with basic authentication (user ``fleet``, password ``s3cret``) and no
    targets: what it answers depends only on the credentials."""
    _need_prometheus()
    assert PROMETHEUS is not None
    with tempfile.TemporaryDirectory(prefix="gputui-fleet-auth-") as tmp:
        web = Path(tmp) / "web.yml"
        web.write_text(f"basic_auth_users:\n  fleet: {SECRET_HASH}\n")
        config = Path(tmp) / "prometheus.yml"
        config.write_text("global:\n  scrape_interval: 1s\n")
        port = free_port()
        proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={config}", f"--web.config.file={web}",
             f"--storage.tsdb.path={Path(tmp) / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
             "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"

        def answers() -> bool:
            try:
                urllib.request.urlopen(f"{url}/-/ready", timeout=2).close()
            except urllib.error.HTTPError:
                return True  # 401: it is up
            except OSError:
                return False
            return True

        try:
            wait_for("the secured Prometheus", answers)
            yield url
        finally:
            proc.terminate()
            proc.wait(10)


def test_basic_auth_from_the_environment(secured: str) -> None:
    anonymous = fleet_cli("--prometheus", secured, "--json")
    assert anonymous.returncode == 2 and "HTTP 401" in anonymous.stderr
    assert "GPUTUI_PROMETHEUS_USER" in anonymous.stderr
    wrong = {"GPUTUI_PROMETHEUS_USER": "fleet", "GPUTUI_PROMETHEUS_PASSWORD": "nope"}
    refused = fleet_cli("--prometheus", secured, "--json", env=wrong)
    assert refused.returncode == 2 and "the credentials were refused" in refused.stderr
    right = {"GPUTUI_PROMETHEUS_USER": "fleet", "GPUTUI_PROMETHEUS_PASSWORD": "s3cret"}
    answered = fleet_cli("--prometheus", secured, "--json", env=right)
    assert json.loads(answered.stdout)["nodes"] == []  # authenticated, and nothing scraped
    assert answered.returncode == 2 and "no GPU node found" in answered.stderr


def test_the_slurm_job_label_survives_a_scrape(bed: Bed) -> None:
    """Scraped without honor_labels, the healthy node's Slurm job keeps its own label (a target's
    ``job`` would have become ``exported_job``, and ``job`` would be the scrape job)."""
    healthy = bed.instances["healthy"]
    found = bed.query(f'gputui_job_gpu_memory_bytes{{instance="{healthy}"}}')
    assert found
    for series in found:
        labels = series["metric"]
        assert labels["slurm_job"] == "4242" and labels["job"] == "gputui", labels
        assert not [name for name in labels if name.startswith("exported_")], labels
    total = bed.query(f'sum by (slurm_job) (gputui_job_gpu_memory_bytes{{instance="{healthy}"}})')
    assert [r["metric"] for r in total] == [{"slurm_job": "4242"}]


def test_the_grafana_dashboard_queries_run(bed: Bed) -> None:
    dashboard = json.loads((ROOT / "dashboards" / "gputui.json").read_text())
    empty = []
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            expr = target["expr"].replace("$job", ".*").replace("$instance", ".*")
            if not bed.query(expr):
                empty.append(panel["title"])
    assert empty == []


# -- recording the answers the offline tests play back ---------------------------------------------


def record(path: Path, settle: float = 45.0) -> None:
    """Run the bed for ``settle`` seconds (so the charts have some history), then save the
    answers to one refresh and to two nodes' history (keyed by the request's path and query,
    which a source on the same fixed clock asks again)."""
    from gputui.fleet.client import PrometheusClient
    from gputui.fleet.source import FleetSource
    from gputui.fleet.transport import Budget, urllib_transport

    with tempfile.TemporaryDirectory(prefix="gputui-fleet-") as tmp:
        bed = start_bed(Path(tmp))
        try:
            time.sleep(settle)
            answers: dict[str, object] = {}

            def recording(url: str, headers: dict[str, str], budget: Budget) -> bytes:
                body = urllib_transport(url, headers, budget)
                answers[url[len(bed.url) :]] = json.loads(body)
                return body

            at = round(time.time(), 3)
            client = PrometheusClient(bed.url, transport=recording)
            source = FleetSource(client, clock=lambda: at)
            source.refresh()
            for name in ("a100", "healthy", "h200", "mi300x"):
                source.history(bed.instances[name])
            recorded = {"time": at, "instances": bed.instances, "answers": answers}
            path.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
        finally:
            bed.stop()


if __name__ == "__main__":
    if sys.argv[1:] == ["--record"]:
        record(DATA / "recorded.json")
    else:
        sys.exit("usage: python tests/test_fleet_prometheus.py --record")
