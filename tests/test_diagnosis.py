"""Diagnosis: why a GPU is slow (its limiter), which GPU lags its siblings (stragglers), and what
to do about each finding (its action)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from tests.factories import scrape
from tests.fakes.clock import fake_clock_sampler

from gputui import cli
from gputui.core.model import GpuInfo, GpuSample
from gputui.engine.session import default_health
from gputui.health.actions import ACTIONS, action_for, xid_action
from gputui.health.config import HealthConfig
from gputui.health.monitor import HealthMonitor
from gputui.health.performance import judge

# -- why is this GPU slow --------------------------------------------------------------------------

H100 = GpuInfo(
    index=0,
    vendor="nvidia",
    name="NVIDIA H100 80GB HBM3",
    uuid="GPU-0",
    sm_clock_max_mhz=1980,
    power_default_limit_w=700.0,
    temperature_slowdown_c=90.0,
    temperature_memory_limit_c=95.0,
    pcie_max_gen=5,
    pcie_max_width=16,
)


def sample(**values: object) -> GpuSample:
    base: dict[str, object] = {
        "index": 0,
        "timestamp": 0.0,
        "utilization_gpu_pct": 99.0,
        "clock_sm_mhz": 1980,
        "power_w": 450.0,
        "power_limit_w": 700.0,
        "temperature_gpu_c": 60.0,
        "temperature_memory_c": 60.0,
        "pcie_gen": 5,
        "pcie_width": 16,
    }
    return GpuSample(**{**base, **values})  # type: ignore[arg-type]


def judged(s: GpuSample, reasons: list[frozenset[str] | None], info: GpuInfo = H100):  # type: ignore[no-untyped-def]
    clock = None if s.clock_sm_mhz is None else float(s.clock_sm_mhz)
    return judge(info, s, reasons, [clock] * len(reasons), [s.utilization_gpu_pct] * len(reasons))


def test_a_power_cap_says_draw_limit_and_a_limit_below_default() -> None:
    s = sample(clock_sm_mhz=1406, power_w=498.0, power_limit_w=500.0)
    perf = judged(s, [frozenset({"sw_power_cap"})] * 5)
    assert perf.limiter == "power_cap" and perf.clock_pct == pytest.approx(71.0, abs=0.1)
    assert perf.text == "clock 71 % of max: power cap 498/500 W (limit below the default 700 W)"
    assert perf.power_limit_below_default is True


def test_a_thermal_slowdown_names_the_sensor_and_its_margin() -> None:
    s = sample(clock_sm_mhz=1089, temperature_gpu_c=88.0, temperature_memory_c=80.0)
    perf = judged(s, [frozenset({"hw_thermal", "sw_thermal", "sw_power_cap"})] * 3)
    assert perf.limiter == "hw_thermal"  # the HW slowdown explains more than the cap
    assert perf.text == "clock 55 % of max: HW thermal, GPU 88 °C, 2 °C below its slowdown"
    assert (perf.thermal_margin_c, perf.thermal_sensor) == (2.0, "gpu")


def test_one_reading_of_a_reason_is_not_the_limiter() -> None:
    reasons: list[frozenset[str] | None] = [frozenset()] * 4 + [frozenset({"hw_slowdown"})]
    assert judged(sample(), reasons).limiter == "none"
    half: list[frozenset[str] | None] = [frozenset()] * 2 + [frozenset({"hw_slowdown"})] * 2
    assert judged(sample(), half).limiter == "hw_slowdown"


def test_an_idle_gpu_is_idle_and_a_driver_without_reasons_is_judged_by_power() -> None:
    assert judged(sample(utilization_gpu_pct=0.0, clock_sm_mhz=345), [None] * 3).limiter == "idle"
    capped = sample(power_w=695.0, clock_sm_mhz=1700)
    assert judged(capped, [None] * 3).limiter == "power_cap"
    assert judged(sample(), [None] * 3).limiter == "none"
    unknown = judged(sample(clock_sm_mhz=None), [None] * 3, dataclasses.replace(H100))
    assert unknown.limiter == "unknown" and unknown.clock_pct is None


def test_a_busy_gpu_on_a_degraded_link_says_so() -> None:
    perf = judged(sample(pcie_gen=3, pcie_width=8), [frozenset()] * 3)
    assert perf.pcie_degraded == "Gen3 x8 of Gen5 x16" and perf.text.endswith("Gen3 x8 of Gen5 x16")
    idle = judged(sample(pcie_gen=3, pcie_width=8, utilization_gpu_pct=0.0), [frozenset()] * 3)
    assert idle.pcie_degraded is None  # a link trains down when idle: nothing to say


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = cli.main(list(argv))
    out, _err = capsys.readouterr()
    return code, json.loads(out)


def test_snapshot_json_has_each_gpus_performance(capsys: pytest.CaptureFixture[str]) -> None:
    _code, data = run_json(capsys, "snapshot", "--backend", "sim:faulty", "--json")
    by_index = {g["index"]: g["performance"] for g in data["gpus"]}
    assert by_index[5]["limiter"] == "hw_thermal" and "HW thermal" in by_index[5]["text"]
    assert by_index[5]["clock_pct"] < 70
    thermal = {i for i, p in by_index.items() if p and "thermal" in p["limiter"]}
    assert thermal == {5}
    assert "PCIe Gen3 x8 of Gen5 x16" in by_index[6]["text"]


def test_the_exporter_publishes_the_clock_ratio_and_the_limiter() -> None:
    pytest.importorskip("prometheus_client")
    from gputui import export

    sampler = fake_clock_sampler("faulty", polls=3)
    _text, families = scrape(export.GpuCollector(sampler))
    ratios = {s.labels["gpu"]: s.value for s in families["gputui_gpu_clock_ratio"].samples}
    assert ratios["5"] < 0.7 and ratios["0"] > 0.9
    limiting = {
        (s.labels["gpu"], s.labels["reason"])
        for s in families["gputui_gpu_limiter"].samples
        if s.value == 1
    }
    assert ("5", "hw_thermal") in limiting
    assert len([r for g, r in limiting if g == "5"]) == 1  # one limiter per GPU


# -- stragglers ------------------------------------------------------------------------------------


def test_check_finds_the_straggler_and_no_other_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_json(capsys, "check", "--backend", "sim:straggler", "--json")
    stragglers = [f for f in data["findings"] if f["rule"] == "straggler"]
    assert [f["gpu_index"] for f in stragglers] == [3], stragglers
    message = stragglers[0]["message"]
    assert "1,980 MHz" in message and "HW thermal" in message and "Slurm job 5151" in message
    assert code == 2  # its thermal faults fail the check


@pytest.mark.parametrize("scenario", ["dgx-h100", "crowded", "mig", "mi300x", "a100-pcie"])
def test_no_straggler_on_healthy_nodes(scenario: str, capsys: pytest.CaptureFixture[str]) -> None:
    _code, data = run_json(capsys, "check", "--backend", f"sim:{scenario}", "--json")
    assert [f for f in data["findings"] if f["rule"] == "straggler"] == []


def _stragglers_after(seconds: int, scenario: str = "straggler") -> list[int]:
    sampler = fake_clock_sampler(scenario, polls=0)
    sampler.health = HealthMonitor(HealthConfig(require_idle=False), env={})
    snapshot = None
    for _ in range(seconds + 1):
        snapshot = sampler.poll()
        sampler.clock.now += 1.0
    assert snapshot is not None
    return [f.gpu_index for f in snapshot.findings if f.rule == "straggler" and f.active]


def test_the_dashboard_waits_for_a_straggler_to_last() -> None:
    assert _stragglers_after(20) == []  # 20 s behind is not yet "a while" (30 s)
    assert _stragglers_after(31) == [3]
    assert _stragglers_after(31, "dgx-h100") == []


# -- what to do ------------------------------------------------------------------------------------


def test_every_finding_of_a_check_has_an_action(capsys: pytest.CaptureFixture[str]) -> None:
    _code, data = run_json(capsys, "check", "--backend", "sim:faulty", "--json")
    actions = {(f["rule"], f["gpu_index"]): f["action"] for f in data["findings"]}
    assert all(a in ACTIONS for a in actions.values()) and len(actions) > 5
    assert actions[("gpu_lost", 3)] == "reboot"  # fell off the bus
    assert actions[("ecc_uncorrected", 2)] == "reset_gpu"
    assert actions[("throttle", 5)] == "drain"  # cooling: take it out and look
    assert actions[("other_processes", 0)] == "none"


@pytest.mark.parametrize(
    ("code", "message", "action"),
    [
        (13, "", "restart_job"),  # an application's bug
        (94, "", "restart_job"),  # contained ECC error
        (48, "", "reset_gpu"),
        (63, "", "reset_gpu"),  # the remap applies at the next reset
        (79, "", "reboot"),
        (64, "", "replace"),  # remapping failed
        (
            154,
            "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
            "reboot",
        ),
        (
            154,
            "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
            "reset_gpu",
        ),
        (999, "", "drain"),  # unknown: look before new work lands
    ],
)
def test_xid_actions_follow_nvidias_catalogue(code: int, message: str, action: str) -> None:
    assert xid_action(code, message) == action


def test_rule_actions_grade_with_severity() -> None:
    assert action_for("row_remap", "fail") == "replace"
    assert action_for("row_remap", "warn") == "reset_gpu"
    assert action_for("temperature", "warn") == "watch"
    assert action_for("some_future_rule", "fail") == "drain"
    assert action_for("some_future_rule", "info") == "none"


def test_the_exporter_labels_findings_with_their_action() -> None:
    pytest.importorskip("prometheus_client")
    from gputui import export

    sampler = fake_clock_sampler("faulty", polls=0)
    sampler.health = default_health()
    collector = export.GpuCollector(sampler)
    for _ in range(5):
        sampler.poll()
        sampler.clock.now += 1
    _text, families = scrape(collector)
    by_rule = {
        (s.labels["rule"], s.labels["gpu"]): s.labels["action"]
        for s in families["gputui_health_findings"].samples
    }
    assert by_rule[("gpu_lost", "3")] == "reboot" and by_rule[("throttle", "5")] == "drain"


# -- on screen -------------------------------------------------------------------------------------


async def test_the_process_detail_says_why_its_gpu_is_slow() -> None:
    from textual.app import App

    from gputui.tui.screens.process_detail import ProcessDetailScreen

    sampler = fake_clock_sampler("straggler", polls=3)
    snapshot = sampler.latest
    assert snapshot is not None
    process = next(p for p in snapshot.processes if p.gpu_index == 3)
    async with App().run_test(size=(120, 40)) as pilot:
        screen = ProcessDetailScreen(process, sampler.history)
        await pilot.app.push_screen(screen)
        screen.update_snapshot(snapshot)
        await pilot.pause()
        info = str(screen.query_one("#detail-info").render())
        assert "GPU speed" in info and "HW thermal" in info and "% of max" in info


def test_the_findings_screen_says_what_to_do() -> None:
    from gputui.core.model import Finding
    from gputui.tui.screens.findings import finding_prompt

    f = Finding("xid", "fail", "XID 48 on GPU 2", "reset the GPU", gpu_index=2, action="reset_gpu")
    assert "→ reset_gpu · reset the GPU" in finding_prompt(f, 100).plain
    quiet = Finding("other_processes", "info", "GPU 0: 1 process", "", gpu_index=0)
    assert "→" not in finding_prompt(quiet, 100).plain  # nothing to do, nothing said


async def test_the_roomy_panel_has_a_speed_line(sim_sampler) -> None:  # type: ignore[no-untyped-def]
    """One GPU's node at 120x40 draws the roomy panel: its Speed line is the limiter's."""
    from gputui.tui.app import GpuTuiApp
    from gputui.tui.messages import SnapshotReady

    sampler = sim_sampler("rtx4090", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        app.post_message(SnapshotReady(sampler.latest))
        await pilot.pause()
        panel = app.dashboard.panels[0]
        text = "\n".join(panel.plain_lines)
    sample = sampler.latest.gpus[0]
    assert sample.performance is not None
    assert "Speed" in text and sample.performance.text[:20] in text
