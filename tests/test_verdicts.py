"""Verdicts a GPU admin would sign: a busy node is healthy, each temperature is judged against its
own limit, hints name the vendor's own tools, a check never exits 1 on a crash, and a fault is
never dropped from a GPU panel for lack of room."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from typing import Any

import pytest
from tests.factories import GIB, info, proc, run, sample, snap

from gputui import cli
from gputui.core.allocation import Allocation
from gputui.core.model import Finding, GpuEvent, LinkSample, ProcessSample
from gputui.health import RULES, HealthConfig, HealthMonitor, RuleContext
from gputui.host.pidns import proc_hides_processes
from gputui.host.processes import ProcessEnricher
from gputui.tui.widgets.gpu_pieces import fit_faults, gpu_faults
from gputui.tui.widgets.line_widget import line_width

# -- a busy healthy node passes ----------------------------------------------------------------


def test_check_demo_exits_0_and_require_idle_exits_2() -> None:
    """The demo node runs a training job and has no fault."""
    env = {"PYTHONPATH": ":".join(sys.path)}
    busy = subprocess.run(
        [sys.executable, "-m", "gputui", "check", "--demo"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert busy.returncode == 0, busy.stdout + busy.stderr
    assert busy.stdout.startswith("HEALTHY")
    assert "info  GPU 0   1 process(es) of other users" in busy.stdout
    idle = subprocess.run(
        [sys.executable, "-m", "gputui", "check", "--require-idle", "--demo"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert idle.returncode == 2 and idle.stdout.startswith("FAILED")


# -- processes that vanished -------------------------------------------------------------------


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_process_gone_before_the_host_lookup_is_marked_exited() -> None:
    if proc_hides_processes() is not False:
        pytest.skip("this /proc may hide processes (hidepid): a missing PID proves nothing")
    pid = _dead_pid()
    row = ProcessSample(pid=pid, gpu_index=0, gpu_memory_bytes=GIB)
    (host_view,) = ProcessEnricher(host_pids=True).enrich([row])
    assert host_view.exited and host_view.user is None
    # In a container that cannot see the host's PIDs, a missing PID proves nothing.
    (container_view,) = ProcessEnricher(host_pids=False).enrich([row])
    assert not container_view.exited and container_view.not_visible


def test_exited_processes_are_not_other_users() -> None:
    gone = proc(4242, user=None, mem=10 * GIB, exited=True)
    s = snap((sample(memory_used_bytes=10 * GIB),), processes=(gone,))
    assert run("other_processes", s, HealthConfig(require_idle=True, current_user="me")) == []
    alive_unknown = proc(4243, user=None, mem=10 * GIB)
    s = snap((sample(memory_used_bytes=10 * GIB),), processes=(alive_unknown,))
    (f,) = run("other_processes", s, HealthConfig(require_idle=True, current_user="me"))
    assert f.severity == "fail"


# The PID namespace itself: tests/test_pidns.py.


# -- PCIe against the host-limited maximum -----------------------------------------------------


def test_gen5_gpu_in_a_gen4_host_is_not_a_downgrade() -> None:
    gen4_host = info(pcie_max_gen=4, pcie_gpu_max_gen=5)
    s = snap((sample(pcie_gen=4, utilization_gpu_pct=90.0),), (gen4_host,))
    assert run("pcie_link", s) == []
    s = snap((sample(pcie_gen=3, utilization_gpu_pct=90.0),), (gen4_host,))
    (f,) = run("pcie_link", s)
    assert "Gen3 x16" in f.message and "Gen4 x16" in f.message


# -- temperatures like with like ---------------------------------------------------------------


def _mi300x(**kw: Any):
    base: dict[str, Any] = dict(
        name="AMD Instinct MI300X",
        vendor="amd",
        temperature_slowdown_c=100.0,
        temperature_hotspot_limit_c=110.0,
        temperature_memory_limit_c=105.0,
    )
    base.update(kw)
    return info(**base)


def test_each_sensor_is_judged_against_its_own_limit() -> None:
    hot_junction = sample(temperature_gpu_c=70.0, temperature_hotspot_c=114.0)
    (f,) = run("temperature", snap((hot_junction,), (_mi300x(),)))
    assert f.severity == "fail" and "hotspot at 114°C" in f.message and "110°C" in f.message
    near = sample(temperature_gpu_c=70.0, temperature_hotspot_c=106.0)
    (f,) = run("temperature", snap((near,), (_mi300x(),)))
    assert f.severity == "warn"
    # NVIDIA memory (HBM) temperature against NVML's memory maximum.
    hbm = sample(temperature_gpu_c=70.0, temperature_memory_c=96.0)
    (f,) = run("temperature", snap((hbm,), (info(temperature_memory_limit_c=95.0),)))
    assert f.severity == "fail" and "memory at 96°C" in f.message
    cool = sample(temperature_gpu_c=70.0, temperature_hotspot_c=90.0, temperature_memory_c=80.0)
    assert run("temperature", snap((cool,), (_mi300x(),))) == []


# -- hints fit the vendor ----------------------------------------------------------------------


def test_hints_on_an_amd_node_name_amd_smi_never_nvidia_smi() -> None:
    amd = _mi300x(ecc_enabled=False, power_default_limit_w=750.0)
    faulty = (
        sample(0, lost=True, error="GPU is lost (fell off the bus)"),
        sample(1, error="AMD-SMI: driver not loaded"),
        sample(2, ecc_volatile_uncorrected=3, remapped_rows_pending=True),
        sample(3, power_limit_w=500.0, links=(LinkSample(link=0, up=False),)),
    )
    infos = tuple(
        _mi300x(index=i, ecc_enabled=False, power_default_limit_w=750.0) for i in range(4)
    )
    events = (GpuEvent(T_EVENT, "ecc_double_bit", gpu_index=2),)
    monitor = HealthMonitor(HealthConfig(current_user="me"), env={})
    findings = monitor.update(snap(faulty, infos, events=events))
    assert amd.vendor == "amd"
    rules = {f.rule for f in findings}
    assert {"gpu_lost", "not_responding", "ecc_uncorrected", "power_limit"} <= rules
    for f in findings:
        assert "nvidia" not in f.hint, (f.rule, f.hint)
    by_rule = {f.rule: f for f in findings}
    assert "amd-smi reset -G -g 0" in by_rule["gpu_lost"].hint
    assert "amd-smi set -g 3 -o 750" in by_rule["power_limit"].hint
    # a GPU whose driver stopped answering is not one that fell off the bus
    assert "fell off" not in by_rule["not_responding"].message
    assert "driver not loaded" in by_rule["not_responding"].message


def test_memory_hints_name_each_vendors_own_tool() -> None:
    """Pending retired pages and lifetime ECC errors on GPU 2: an MI300X is told amd-smi's
    commands (reset, bad pages, ECC counts), a page-retiring V100 nvidia-smi's."""
    worn = sample(
        2,
        retired_pages_pending=True,
        ecc_aggregate_uncorrected=5,
        remapped_rows_pending=None,
        remapped_rows_failure=None,
    )
    amd = snap((worn,), (_mi300x(index=2),))
    (pages,) = run("retired_pages", amd)
    (ecc,) = run("ecc_aggregate", amd)
    assert "amd-smi reset -G -g 2" in pages.hint and "amd-smi bad-pages -g 2" in pages.hint
    assert "amd-smi metric --ecc -g 2" in ecc.hint and "amd-smi bad-pages -g 2" in ecc.hint
    assert "nvidia" not in pages.hint + ecc.hint
    nvidia = snap((worn,), (info(2, name="Tesla V100-SXM2-32GB"),))
    (pages,) = run("retired_pages", nvidia)
    (ecc,) = run("ecc_aggregate", nvidia)
    assert "nvidia-smi -r -i 2" in pages.hint
    assert "nvidia-smi -q -d PAGE_RETIREMENT -i 2" in pages.hint
    assert "nvidia-smi -q -d ECC -i 2" in ecc.hint
    assert "amd-smi" not in pages.hint + ecc.hint


NVIDIA_ONLY_RULES = frozenset(
    {"xid", "nvlink_fabric", "nvlink_unused", "persistence_mode", "driver_cuda"}
)
"""Rules only NVIDIA readings trigger: XIDs, the NVSwitch fabric, links NVML reports inactive,
persistence mode and the CUDA driver API."""
HISTORY_RULES = frozenset({"straggler"})
"""Rules judged over a history of readings, which one reading does not have (their hints name
no vendor tool: tests/test_diagnosis.py)."""


def test_every_rule_on_an_amd_node_names_amd_smi_never_nvidia_smi() -> None:
    """Every rule that can fire on an AMD node fires on this one (nine MI300X, each with its
    faults), and no hint names an NVIDIA tool."""
    healthy: dict[str, Any] = dict(
        power_limit_w=750.0, remapped_rows_pending=None, remapped_rows_failure=None
    )
    faults: list[dict[str, Any]] = [
        dict(lost=True, error="GPU is lost (fell off the bus)"),
        dict(error="AMD-SMI: driver not loaded"),
        dict(ecc_volatile_uncorrected=3, ecc_aggregate_uncorrected=5, retired_pages_pending=True),
        dict(power_limit_w=500.0, links=(LinkSample(link=0, up=False),)),
        dict(throttle_reasons=frozenset({"hw_slowdown"})),
        dict(temperature_hotspot_c=114.0, pcie_gen=3, utilization_gpu_pct=90.0),
        dict(process_list_incomplete=True, memory_used_bytes=10 * GIB, utilization_gpu_pct=0.0),
        dict(remapped_rows_pending=True),
        dict(
            utilization_gpu_pct=None,
            memory_used_bytes=None,
            unanswered=(("utilization", "Unknown Error"), ("memory", "Unknown Error")),
        ),
    ]
    samples = tuple(sample(i, **(healthy | fault)) for i, fault in enumerate(faults))
    infos = tuple(
        _mi300x(index=i, ecc_enabled=i != 4, persistence_mode=None, power_default_limit_w=750.0)
        for i in range(len(faults))
    )
    events = (
        GpuEvent(T_EVENT, "ecc_double_bit", gpu_index=2),
        GpuEvent(T_EVENT, "ras_poison", gpu_index=5, message="poison consumed"),
    )
    s = snap(samples, infos, processes=(proc(4242, gpu=6, user="bob"),), events=events)
    s = dataclasses.replace(
        s, node=dataclasses.replace(s.node, backend="amd", runtime_version="6.2", open_seconds=5.0)
    )
    held = Allocation(
        7, "no_process", "kubernetes", "0000:1f:00.0", pod_uid="u1", idle_since=T_EVENT
    )
    s = dataclasses.replace(s, allocations=(held,))
    ctx = RuleContext(
        snapshot=s,
        config=HealthConfig(current_user="me"),
        expected_gpus=10,
        events=events,
        idle_since={(4242, 6): T_EVENT - 3600},
        platform="linux",
    )
    findings = [f for fn, _ in RULES.values() for f in fn(ctx)]
    assert {f.rule for f in findings} == set(RULES) - NVIDIA_ONLY_RULES - HISTORY_RULES
    for f in findings:
        assert "nvidia-smi" not in f.hint, (f.rule, f.hint)
    by_key = {f.key: f for f in findings}
    assert "amd-smi bad-pages -g 2" in by_key["retired_pages:2"].hint
    assert "amd-smi metric" in by_key["gpu_event:5:ras_poison"].hint


T_EVENT = 1_700_000_000.0


# -- a crash in check is a failure, not a warning ----------------------------------------------


def test_a_crash_in_check_exits_2_with_one_paragraph(monkeypatch, capsys) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("gputui.commands.check.evaluate", broken)
    monkeypatch.setattr("time.sleep", lambda s: None)
    assert cli.main(["check", "--demo"]) == 2
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: boom" in err and "Traceback" not in err


# -- CUDA_VISIBLE_DEVICES that names nothing ---------------------------------------------------


@pytest.mark.parametrize("value", ["", "-1", "NoDevFiles", "garbage"])
def test_cuda_visible_devices_showing_no_gpu_fails_the_check(value: str, capsys) -> None:
    from tests.fakes.clock import FakeClock

    from gputui.commands.check import run_check

    clock = FakeClock()
    code = run_check(
        "sim:a100-pcie",
        environ={"CUDA_VISIBLE_DEVICES": value},
        kernel_log=None,
        clock=clock,
        sleep=lambda s: None,
    )
    out = capsys.readouterr().out
    assert code == 2
    assert out.startswith("FAILED (1)") and "no visible GPU" in out
    assert "HEALTHY" not in out and "0 GPUs" in out


# -- every fault stays on the panel ------------------------------------------------------------


def test_faults_are_shortened_then_counted_never_dropped() -> None:
    gpu = info(temperature_slowdown_c=87.0)
    s = sample(
        temperature_gpu_c=92.0,
        throttle_reasons=frozenset({"hw_thermal", "sw_thermal", "hw_slowdown"}),
        ecc_volatile_uncorrected=2,
        links=(LinkSample(link=3, up=False),),
    )
    faults = gpu_faults(s, gpu)
    assert len(faults) == 6  # ECC, three clock reasons, a link down, the temperature
    badge = [("✖ fail", "bad")]
    wide = fit_faults([badge], faults, [[("ECC ok", "ok")]], 200, " · ")
    text = "".join(t for t, _ in wide)
    assert "HW thermal slowdown!" in text and "1 link down!" in text and "92°C!" in text
    for width in (70, 50, 30, 18):
        line = fit_faults([badge], faults, [], width, " · ")
        text = "".join(t for t, _ in line)
        assert line_width(line) <= width and text.startswith("✖ fail")
        shown = sum(text.count(word) for word in ("ECC", "HW", "SW", "link", "°C"))
        hidden = 6 - shown
        assert shown == 6 or f"+{hidden} more (h)" in text or f"+{hidden} (h)" in text, text


async def test_a_gpu_not_answering_shows_the_error_not_numbers(sim_sampler) -> None:
    import dataclasses

    from gputui.tui.app import GpuTuiApp
    from gputui.tui.messages import SnapshotReady

    sampler = sim_sampler("dgx-h100", polls=2)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        snapshot = sampler.poll()
        broken = dataclasses.replace(
            snapshot.gpus[2],
            error="NVML: driver not loaded",
            utilization_gpu_pct=None,
            memory_used_bytes=None,
        )
        gpus = tuple(broken if g.index == 2 else g for g in snapshot.gpus)
        finding = Finding(
            rule="not_responding",
            severity="fail",
            message="GPU 2 not responding: NVML: driver not loaded",
            gpu_index=2,
            key="not_responding:2",
        )
        shown = dataclasses.replace(snapshot, gpus=gpus, findings=(finding,))
        app.post_message(SnapshotReady(shown))
        await pilot.pause()
        panel = app.dashboard.panels[2]
        text = "\n".join(panel.plain_lines)
        assert "NOT ANSWERING" in text and "NVML: driver not loaded" in text
        assert "✖ fail" in text and "n/a" not in text


async def test_an_xid_finding_can_be_acknowledged(sim_sampler) -> None:
    from gputui.tui.app import GpuTuiApp
    from gputui.tui.messages import SnapshotReady
    from gputui.tui.screens.findings import FindingsScreen

    sampler = sim_sampler("dgx-h100", polls=1)
    monitor = HealthMonitor(HealthConfig(current_user="svc-train"), env={})
    sampler.health = monitor
    monitor.add_events([GpuEvent(sampler.clock.now, "xid", gpu_index=4, code=79)])
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        snapshot = sampler.poll()
        assert any(f.rule == "xid" and f.active for f in snapshot.findings)
        app.post_message(SnapshotReady(snapshot))
        await pilot.pause()
        await pilot.press("h")
        assert isinstance(app.screen, FindingsScreen)
        screen = app.screen
        index = next(i for i, f in enumerate(screen.findings) if f.rule == "xid")
        screen.option_list.highlighted = index
        await pilot.press("a")
        await pilot.pause()
        assert not any(f.rule == "xid" for f in screen.findings)
        sampler.clock.now += 1
        assert not any(f.rule == "xid" for f in sampler.poll().findings)  # gone for good
