"""The probe runner (parent side), its verdicts and ``gputui probe``, with a fake worker."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from tests.fakes.fake_probe_worker import FAKE

from gputui import cli
from gputui.core.codec import encode
from gputui.core.model import GpuInfo, GpuSample, NodeInfo, ProcessSample, Snapshot
from gputui.probe import runner as R
from gputui.probe import verdict as V
from gputui.probe.output import probe_output


@pytest.fixture
def fake(tmp_path: Path) -> list[str]:
    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE)
    return [sys.executable, str(script)]


def _targets(n: int) -> list[R.Target]:
    return [R.Target(i, f"cuda:{i}", f"GPU {i}") for i in range(n)]


def test_events_stream_and_results_are_gathered(fake) -> None:
    events: list[tuple[int | None, str]] = []
    r = R.ProbeRunner(
        _targets(1),
        tests=["memory_copy", "matmul_bf16"],
        command=fake,
        on_event=lambda g, m: events.append((g, m.type)),
    )
    runs = r.run()
    assert [e[1] for e in events] == [
        "hello", "progress", "result", "progress", "result", "done"
    ]  # fmt: skip
    assert [x.test for x in runs[0].results] == ["memory_copy", "matmul_bf16"]
    assert runs[0].ok and runs[0].returncodes == [0]


def test_gpus_run_in_parallel_then_pcie_one_at_a_time(fake, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_SLEEP", "0.5")
    r = R.ProbeRunner(_targets(4), tests=["memory_copy", "h2d"], command=fake)
    phases = r.phases()
    assert len(phases[0]) == 4 and [len(p) for p in phases[1:]] == [1, 1, 1, 1]
    r2 = R.ProbeRunner(_targets(4), tests=["memory_copy"], command=fake)
    start = time.monotonic()
    runs = r2.run()
    assert time.monotonic() - start < 1.8  # 4 x 0.5 s would be 2 s serially (plus startup)
    assert all(len(run.results) == 1 for run in runs.values())


def test_cancel_kills_children_even_when_they_ignore_sigterm(fake, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("FAKE_MODE", "hang")
    monkeypatch.setenv("FAKE_PIDFILE", str(tmp_path / "pid"))
    monkeypatch.setattr(R, "TERM_GRACE_S", 0.5)
    r = R.ProbeRunner(_targets(2), tests=["memory_copy"], command=fake)
    seen: list[str] = []

    def on_event(gpu, msg) -> None:
        seen.append(msg.type)
        if seen.count("hello") == 2:
            time.sleep(0.3)  # let both write their pid files
            r.cancel()

    r.on_event = on_event
    runs = r.run()
    assert all(run.cancelled for run in runs.values())
    for i in range(2):
        pid = int((tmp_path / f"pidcuda{i}").read_text())
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_crash_becomes_an_error_naming_the_gpu_with_stderr(fake, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_MODE", "crash")
    runs = R.ProbeRunner(_targets(1), tests=["memory_copy"], command=fake).run()
    (err,) = runs[0].errors
    assert "GPU 0" in err and "status 3" in err and "boom on cuda:0" in err
    assert runs[0].error_kind == "crash"


def test_non_json_line_is_an_error(fake, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_MODE", "garbage")
    runs = R.ProbeRunner(_targets(1), tests=["memory_copy"], command=fake).run()
    assert any("not a probe message" in e for e in runs[0].errors)
    assert len(runs[0].results) == 1  # the rest of the stream is still read


def test_missing_torch_is_named(fake, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_MODE", "notorch")
    report = R.probe_node(node=None, command=fake, tests=["memory_copy"])
    assert report.no_torch and report.exit_code == 2
    assert "torch is not installed" in report.errors[0] and "--python" in report.errors[0]


def test_child_env_puts_gputui_on_the_path_and_pci_order() -> None:
    env = R.child_env({"CUDA_VISIBLE_DEVICES": "1", "PYTHONPATH": "/x"})
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID" and "CUDA_VISIBLE_DEVICES" not in env
    assert env["PYTHONPATH"].split(os.pathsep) == [R.gputui_pythonpath(), "/x"]
    assert (Path(R.gputui_pythonpath()) / "gputui" / "probe" / "worker.py").exists()


# -- a hand-built node -----------------------------------------------------------------------


def _info(i: int, bus: str) -> GpuInfo:
    return GpuInfo(
        index=i,
        name="NVIDIA H100 80GB HBM3",
        uuid=f"GPU-{i}",
        vendor="nvidia",
        pci_bus_id=bus,
        sm_count=132,
        memory_total_bytes=80 << 30,
        sm_clock_max_mhz=1980,
        power_default_limit_w=700,
        pcie_max_gen=5,
        pcie_max_width=16,
    )


NODE = NodeInfo("n", "nvml", (_info(0, "0000:1B:00.0"), _info(1, "0000:0A:00.0")))


def _snapshot(processes=(), used=0) -> Snapshot:
    gpus = tuple(GpuSample(i, 0.0, memory_used_bytes=used) for i in (0, 1))
    return Snapshot(0.0, NODE, gpus, tuple(processes))


def test_cuda_index_follows_pci_bus_order() -> None:
    assert R.cuda_index_map(NODE) == {0: 1, 1: 0}


def test_busy_gpu_is_refused_without_force(fake) -> None:
    proc = ProcessSample(pid=4242, gpu_index=1, user="alice", name="python", gpu_memory_bytes=1)
    report = R.probe_node(node=NODE, snapshot=_snapshot([proc]), gpus=[1], command=fake)
    assert report.exit_code == 2 and not report.runs
    assert "GPU 1" in report.refused[0] and "4242" in report.refused[0]
    assert "alice" in report.refused[0] and "--force" in report.refused[0]
    used = R.probe_node(node=NODE, snapshot=_snapshot(used=2 << 30), gpus=[0], command=fake)
    assert "GiB memory in use" in used.refused[0]
    forced = R.probe_node(
        node=NODE, snapshot=_snapshot([proc]), gpus=[1], command=fake, force=True,
        tests=["matmul_bf16"],
    )  # fmt: skip
    assert forced.exit_code == 1 and forced.judged[0].verdict == V.LOW  # 100 of 989 TFLOPS


def test_lost_and_unanswering_gpus_are_refused_even_with_force(fake) -> None:
    lost = GpuSample(1, 0.0, lost=True, error="GPU has fallen off the bus")
    gpus = (GpuSample(0, 0.0, memory_used_bytes=0), lost)
    snapshot = Snapshot(0.0, NODE, gpus, ())
    report = R.probe_node(
        node=NODE, snapshot=snapshot, command=fake, force=True, tests=["matmul_bf16"]
    )
    (refused,) = report.refused
    assert "GPU 1" in refused and "lost" in refused and "fallen off the bus" in refused
    assert "--force" in refused
    assert list(report.runs) == [0] and [j.gpu for j in report.judged] == [0]  # GPU 0 still runs
    assert report.exit_code == 2  # the probe could not run on GPU 1
    assert encode(probe_output(report))["refused"] == [refused] and set(report.specs) == {0}
    # Every selected GPU unusable: nothing is probed at all, busy or forced.
    silent = GpuSample(0, 0.0, error="NVML: Unknown Error")
    nothing = Snapshot(0.0, NODE, (silent, lost), ())
    for force in (False, True):
        report = R.probe_node(node=NODE, snapshot=nothing, command=fake, force=force)
        assert report.exit_code == 2 and not report.runs and not report.judged
        assert len(report.refused) == 2
        silent_why = report.refused[0]
        assert "GPU 0 is not answering" in silent_why and "Unknown Error" in silent_why
    assert R.unusable_reason(_snapshot(), 0) is None


def test_node_relative_low_and_json_shape(fake, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_VALUE_cuda_1", "800")  # GPU 1 (the 2nd UUID the children see)
    monkeypatch.setenv("FAKE_VALUE_cuda_0", "650")  # GPU 0: 19% below, 66% of spec
    report = R.probe_node(node=NODE, snapshot=_snapshot(), tests=["matmul_bf16"], command=fake)
    by_gpu = {j.gpu: j for j in report.judged}
    assert by_gpu[1].verdict == V.OK and by_gpu[0].verdict == V.LOW
    assert round(100 * by_gpu[0].sibling_gap) == 19
    assert report.exit_code == 1
    assert report.summary() == ["GPU 0: BF16 matmul 19% below its siblings"]
    data = json.loads(json.dumps(encode(probe_output(report))))
    assert data["verdict"] == "LOW" and data["exit_code"] == 1
    row = data["results"][0]
    assert set(row) >= {"gpu", "test", "value", "unit", "spec", "pct_of_spec", "expected_pct"}
    assert set(row) >= {"verdict", "reasons", "telemetry", "method", "spec_source"}
    assert data["gpus"]["0"]["spec"]["model"].startswith("H100")


def test_telemetry_is_attached_per_test_window(fake) -> None:
    r = R.ProbeRunner(_targets(1), tests=["memory_copy"], command=fake)
    now = time.time()
    r.add_sample(now - 100, GpuSample(0, 0, clock_sm_mhz=500))  # long before: ignored
    runs = r.run()
    measured = runs[0].measurements[0]
    end = measured.received
    r.add_sample(end - 0.005, GpuSample(0, 0, clock_sm_mhz=1410, power_w=690, power_limit_w=700,
                                       throttle_reasons=frozenset({"sw_power_cap"})))  # fmt: skip
    tel = r._telemetry_for(runs[0].target, measured)
    assert (
        tel.samples == 1 and tel.sm_clock_mhz == 1410 and tel.throttle_reasons == ("sw_power_cap",)
    )


# -- verdict math ----------------------------------------------------------------------------


def test_pcie_spec_from_gen_and_width() -> None:
    assert V.pcie_spec_gbs(5, 16) == pytest.approx(63.0, rel=1e-3)
    assert V.pcie_spec_gbs(4, 16) == pytest.approx(31.5, rel=1e-3)
    assert V.pcie_spec_gbs(4, 8) == pytest.approx(15.75, rel=1e-3)
    assert V.pcie_spec_gbs(None, 16) is None
    value, src = V.spec_value("h2d", None, pcie_gen=5, pcie_width=16)
    assert value == pytest.approx(63.0, rel=1e-3) and "gen5 x16" in src
    assert V.spec_value("p2p", None, link_gbs=900)[0] == 450


def test_spec_values_from_peaks_and_expected_table() -> None:
    peaks = {"bf16_tflops": 989.0, "memory_bw_gbs": 3350.0}
    assert V.spec_value("matmul_bf16", peaks)[0] == 989.0
    assert V.spec_value("memory_triad", peaks)[0] == 3350.0
    assert V.spec_value("matmul_fp8", peaks)[0] is None
    assert V.family("Hopper (GH100)") == "hopper" and V.family("CDNA3") == "cdna3"
    assert V.expected_fraction("hopper", "matmul_bf16") == 0.75
    assert V.expected_fraction("cdna3", "matmul_bf16") == 0.45  # no TunableOp: below MAMF 51%
    assert V.expected_fraction("ampere", "memory_copy") == 0.85
    assert V.expected_fraction("default", "matmul_bf16") == 0.75


@pytest.mark.parametrize(
    ("value", "verdict"),
    [(700.0, V.OK), (667.6, V.OK), (600.0, V.WARN), (593.5, V.WARN), (593.0, V.LOW), (0.0, V.LOW)],
)
def test_verdict_thresholds(value, verdict) -> None:
    # expected 0.75 x 989 = 741.75; OK >= 667.6, WARN >= 593.4
    assert V.verdict_for(value, 989.0, 0.75) == verdict


def test_no_spec_is_not_judged() -> None:
    assert V.verdict_for(10.0, None, 0.75) == V.NA


def test_telemetry_reasons_in_words() -> None:
    tel = V.Telemetry(
        samples=4,
        sm_clock_mhz=1410,
        temperature_c=88,
        power_limit_w=500,
        throttle_reasons=("hw_thermal", "sw_power_cap"),
    )
    reasons = V.telemetry_reasons(tel, sm_clock_max_mhz=1980, power_default_limit_w=700)
    assert reasons[0] == "SM clock held at 1410 MHz (71% of max) by thermal slowdown"
    assert "HW thermal slowdown during the test at 88 C" in reasons
    assert "power limit 500 W below default 700 W" in reasons
    cap = V.Telemetry(sm_clock_mhz=1410, throttle_reasons=("sw_power_cap",))
    assert V.telemetry_reasons(cap, sm_clock_max_mhz=1980) == [
        "SM clock held at 1410 MHz (71% of max) by power cap"
    ]
    assert V.telemetry_reasons(V.Telemetry(sm_clock_mhz=1900), sm_clock_max_mhz=1980) == []


def test_summary_line_with_telemetry() -> None:
    tel = V.Telemetry(sm_clock_mhz=1410, throttle_reasons=("sw_power_cap",))
    js = [
        V.Judged(0, "GPU 0", "matmul_bf16", 800, "TFLOPS", spec=989, expected=0.75),
        V.Judged(3, "GPU 3", "matmul_bf16", 656, "TFLOPS", spec=989, expected=0.75, telemetry=tel),
    ]
    for j in js:
        V.judge(j, sm_clock_max_mhz=1980)
    assert [j.verdict for j in js] == [V.OK, V.WARN]
    V.apply_node_relative(js, {3: (1980, 700)})
    assert js[1].verdict == V.LOW
    assert V.summary_lines(js) == [
        "GPU 3: BF16 matmul 18% below its siblings; SM clock held at 1410 MHz (71% of max) "
        "by power cap"
    ]


# -- the command line ------------------------------------------------------------------------


def _no_runner(monkeypatch) -> None:
    def refuse(self, *args, **kw) -> None:
        raise AssertionError("no probe worker may start")

    monkeypatch.setattr(R.ProbeRunner, "__init__", refuse)


def test_demo_is_refused_and_points_to_cpu(monkeypatch, capsys) -> None:
    _no_runner(monkeypatch)
    code = cli.main(["probe", "--demo", "--tests", "memory_copy,matmul_fp32"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert "simulated node" in err and "cannot be probed" in err and "--cpu" in err
    assert cli.main(["probe", "--backend", "replay:/no/such/file.gputui"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "recording" in err and "--cpu" in err


def test_demo_with_cpu_probes_the_cpu_and_says_so(fake, monkeypatch, capsys) -> None:
    monkeypatch.setattr(R.ProbeRunner, "__init__", _with_command(fake))
    code = cli.main(["probe", "--demo", "--cpu", "--tests", "memory_copy,matmul_fp32"])
    out, err = capsys.readouterr()
    assert code == 0
    assert "CPU" in out and "memory_copy" in out
    assert "[CPU] memory_copy: 100 GB/s" in err
    lines = out.splitlines()
    assert lines[0].startswith("CPU run (--cpu)")  # the table's title
    assert lines[-1].startswith("CPU run (--cpu)") and "2 results" in lines[-1]  # the summary


def test_no_usable_gpu_is_a_failure_that_says_why(monkeypatch, capsys) -> None:
    from gputui.backends import NoBackend
    from gputui.commands import probe as probe_command
    from gputui.engine.session import BackendSpec

    reasons = [("NVML", "libnvidia-ml.so.1 not found"), ("AMD-SMI", "amdsmi not installed")]

    def no_gpu(spec, **kw):
        raise NoBackend(reasons)

    monkeypatch.setattr("gputui.backends.open_backend", no_gpu)
    _no_runner(monkeypatch)
    assert cli.main(["probe", "--tests", "memory_copy"]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # no CPU run in its place
    assert "no usable GPU" in err and "--cpu" in err
    assert "NVML: libnvidia-ml.so.1 not found" in err and "AMD-SMI: amdsmi not installed" in err
    assert probe_command.run(probe_command.ProbeOptions(BackendSpec("nvml"), as_json=True)) == 2
    assert "cannot use nvml" in capsys.readouterr().err


def test_probe_json_and_exit_codes(fake, monkeypatch, capsys) -> None:
    monkeypatch.setattr(R.ProbeRunner, "__init__", _with_command(fake))
    assert cli.main(["probe", "--cpu", "--json", "--tests", "memory_copy"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["mode"] == "cpu" and data["results"][0]["verdict"] == "n/a"
    assert data["cpu_run"] is True and data["summary"][0].startswith("CPU run (--cpu)")
    monkeypatch.setenv("FAKE_MODE", "crash")
    assert cli.main(["probe", "--cpu", "--json", "--tests", "memory_copy"]) == 2
    assert "status 3" in json.loads(capsys.readouterr().out)["errors"][0]


def test_probe_bad_arguments(capsys) -> None:
    with pytest.raises(SystemExit):
        cli.main(["probe", "--cpu", "--tests", "nope"])
    assert cli.main(["probe", "--cpu", "--python", "/no/such/python"]) == 2


def test_check_probe_on_a_simulated_node_is_listed_as_not_checked(capsys) -> None:
    from gputui.commands import check

    check.run_check("sim:faulty", kernel_log=None, environ={}, probe=True, as_json=True,
                    sleep=lambda s: None)  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    assert any("probe" in item for item in data["not_checked"])


def _with_command(command):
    original = R.ProbeRunner.__init__

    def init(self, targets, **kw):
        kw["command"] = command
        original(self, targets, **kw)

    return init


def test_real_cpu_worker_end_to_end() -> None:
    pytest.importorskip("torch")
    start = time.monotonic()
    report = R.probe_node(
        node=None, tests=["memory_copy", "matmul_fp32"], size_scale=0.01, seconds_per_test=0.1
    )
    assert time.monotonic() - start < 20
    assert report.exit_code == 0, report.errors
    assert [j.test for j in report.judged] == ["memory_copy", "matmul_fp32"]
    assert all(j.value > 0 and j.verdict == V.NA for j in report.judged)
    assert report.runs[None].hello.device_kind == "cpu"


def test_telemetry_is_sampled_often_enough_to_see_a_test() -> None:
    """Every 0.5 s gave a 1 s test about two readings; every 0.1 s gives about ten."""
    r = R.ProbeRunner(_targets(1), tests=["memory_copy"], command=["x"])
    assert r.telemetry.interval <= 0.1


def test_tf32_override_variables_never_reach_the_workers(fake, monkeypatch, tmp_path) -> None:
    """NVIDIA's containers and serving stacks set TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 or
    NVIDIA_TF32_OVERRIDE; a torch that honours the first times the FP32 test as TF32 (the fake
    worker does, as such builds do). The workers run without both."""
    log = tmp_path / "argv.jsonl"
    monkeypatch.setenv("FAKE_ARGV", str(log))
    monkeypatch.setenv("FAKE_VALUE_cuda_0", "50")
    monkeypatch.setenv("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "1")
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "0")
    node = NodeInfo("n", "nvml", (_info(0, "0000:1B:00.0"),))
    report = R.probe_node(node=node, snapshot=None, command=fake, tests=["matmul_fp32"])
    (judged,) = report.judged
    assert judged.value == 50 and judged.verdict == V.OK
    assert [json.loads(line)["tf32_overrides"] for line in log.read_text().splitlines()] == [
        [None, None]
    ]
    env = R.child_env({"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1", "NVIDIA_TF32_OVERRIDE": "1"})
    assert "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE" not in env and "NVIDIA_TF32_OVERRIDE" not in env
