"""Each ``--json`` output's schema page in docs/ documents exactly the fields the command writes:
the field paths of representative runs (simulated nodes, a faked worker, recorded Prometheus
answers) and those the output's dataclasses declare are both compared with the page's tables, so
a field added to an output but not to its page, or documented but never written, fails here."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from tests.factories import kubelet_checkpoint
from tests.fakes.clock import fake_clock_sampler
from tests.fakes.fake_probe_worker import FAKE
from tests.fakes.hung import hung_sampler
from tests.fakes.prometheus_answers import BASE, recorded_source, synthetic_source
from tests.schema_pages import DOCS, declared, differences, documented, emitted

from gputui import cli
from gputui.backends.sim import SimBackend
from gputui.commands import fleet as fleet_command
from gputui.core.codec import encode, snapshot_to_json
from gputui.core.model import Snapshot
from gputui.core.topology_output import TopologyOutput
from gputui.fleet.output import FleetOutput
from gputui.health.check_output import CheckOutput
from gputui.probe import runner
from gputui.probe.output import ProbeOutput, probe_output


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    cli.main(list(argv))
    out = capsys.readouterr().out
    return json.loads(out)


def assert_page_matches(page: str, runs: list[Any], output: type) -> None:
    paths, maps = documented(page)
    written: set[str] = set()
    for data in runs:
        written |= emitted(data, maps)
    assert differences(paths, written) == {}, f"{page} and what the runs wrote"
    assert differences(paths, declared(output)) == {}, f"{page} and {output.__name__}"


def test_the_topo_page(capsys: pytest.CaptureFixture[str]) -> None:
    runs = [
        run_cli(capsys, "topo", "--json", "--backend", f"sim:{scenario}")
        for scenario in ("dgx-h100", "mi300x", "a100-pcie")
    ]
    assert_page_matches("topo-schema.md", runs, TopologyOutput)


def test_the_fleet_page(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = []
    for source in (recorded_source, synthetic_source):
        monkeypatch.setattr(fleet_command, "make_source", lambda *a, s=source, **k: s()[0])
        runs.append(run_cli(capsys, "fleet", "--prometheus", BASE, "--json"))
    assert {n["source"] for data in runs for n in data["nodes"]} == {
        "gputui",
        "dcgm",
        "amd",
        "unknown",
    }
    namings = {tuple(n["naming"]) for data in runs for n in data["nodes"]}
    assert {("dcgm",), ("dcgm-4.7",), ("dcgm", "dcgm-4.7"), ("amd-dme",), ()} <= namings
    assert_page_matches("fleet-schema.md", runs, FleetOutput)


def test_the_probe_page(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """GPU runs on simulated nodes (the command refuses those, so they are run as it runs them),
    with a worker that skips and retries a test, and a CPU run through the command."""
    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE)
    command = [sys.executable, str(script)]
    monkeypatch.setenv("FAKE_SKIP", "matmul_fp8")
    monkeypatch.setenv("FAKE_RETRY", "memory_copy")
    runs = []
    for scenario, tests in (("dgx-h100", ["memory_copy", "matmul_fp8", "p2p"]), ("mig", ["h2d"])):
        sampler = fake_clock_sampler(scenario, polls=1)
        snapshot = sampler.latest
        assert snapshot is not None
        report = runner.probe_node(
            node=snapshot.node,
            snapshot=snapshot,
            gpus=[0, 1],
            tests=tests,
            command=command,
            sampler=sampler,
            force=True,
        )
        runs.append(encode(probe_output(report)))
    original = runner.ProbeRunner.__init__

    def with_fake(self: runner.ProbeRunner, targets: Any, **kw: Any) -> None:
        original(self, targets, **{**kw, "command": command})

    monkeypatch.setattr(runner.ProbeRunner, "__init__", with_fake)
    runs.append(run_cli(capsys, "probe", "--cpu", "--json", "--tests", "memory_copy"))
    assert [data["mode"] for data in runs] == ["gpu", "gpu", "cpu"]
    assert_page_matches("probe-schema.md", runs, ProbeOutput)


def test_the_check_page(capsys: pytest.CaptureFixture[str]) -> None:
    runs = [
        run_cli(capsys, "check", "--json", "--backend", f"sim:{scenario}")
        for scenario in ("faulty", "mig")
    ]
    assert_page_matches("check-json.md", runs, CheckOutput)


def test_the_snapshot_page(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Simulated nodes of every kind; a reading the driver did not answer (it carries ``stall``)
    and one with events, written as the command writes them; a MIG node whose GPUs a kubelet
    checkpoint allocates (a GPU, a MIG instance, a device not on the node)."""
    runs = [
        run_cli(capsys, "snapshot", "--json", "--backend", f"sim:{scenario}")
        for scenario in ("dgx-h100", "faulty", "mig", "crowded", "mi300x")
    ]
    node = SimBackend("mig").open()
    mig = next(m.uuid for g in node.gpus for m in g.mig_devices)
    pods = {"pod-a": [node.gpus[-1].uuid, mig], "pod-b": ["GPU-not-here"]}
    checkpoint = kubelet_checkpoint(tmp_path / "device-plugins" / "checkpoint", pods)
    monkeypatch.setenv("GPUTUI_KUBELET_CHECKPOINT", str(checkpoint))
    allocated = run_cli(capsys, "snapshot", "--json", "--backend", "sim:mig")
    assert {a["state"] for a in allocated["allocations"]} >= {"free", "in_use", "unknown"}
    runs.append(allocated)
    wedged = threading.Event()
    try:
        sampler, gpu = hung_sampler(wedged, after=10_000)
        sampler.poll(deadline=0.5)
        gpu.hang_after = gpu.call_count  # every call on GPU 1 blocks from now on
        stalled = sampler.poll(deadline=0.5)
    finally:
        wedged.set()
    assert stalled.stall is not None
    faulty = fake_clock_sampler("faulty", polls=1)  # the second reading brings its events
    with_events = faulty.poll()
    assert with_events.events
    runs += [json.loads(snapshot_to_json(s, indent=2)) for s in (stalled, with_events)]
    assert_page_matches("snapshot-schema.md", runs, Snapshot)


def test_the_config_page(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The defaults, then a config file, an environment variable and an option together."""
    config = tmp_path / "config.toml"
    config.write_text('interval = 2.0\n[keymap]\nhealth = "f2"\n', encoding="utf-8")
    monkeypatch.setenv("GPUTUI_GPU_HOUR_PRICE", "2.5")
    runs = [
        run_cli(capsys, "config", "--json", "--config", str(tmp_path / "none.toml")),
        run_cli(capsys, "--theme", "textual-light", "config", "--json", "--config", str(config)),
    ]
    paths, maps = documented("config-schema.md")
    written: set[str] = set()
    for data in runs:  # keymap's value: binding id -> keys, keyed by data
        written |= emitted(data, {*maps, "settings.*.value"})
    assert differences(paths, written) == {}
    sources = {name: s["source"] for name, s in runs[1]["settings"].items()}
    assert sources["interval"] == str(config) and sources["theme"] == "command line"
    assert sources["gpu_hour_price"] == "env GPUTUI_GPU_HOUR_PRICE"
    # the page names every setting the command writes
    page = (DOCS / "config-schema.md").read_text(encoding="utf-8")
    assert [name for name in runs[0]["settings"] if f"`{name}`" not in page] == []
