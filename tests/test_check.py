"""``gputui check``: verdicts, exit codes, GPU selection, --ignore / --strict, and the JSON schema.

Most tests run the check in-process on a fake clock (instant); one runs the real command line on the
``faulty`` simulated node (about a second)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest
from tests.factories import REASONS, run_gputui
from tests.fakes import kernel_log as klog
from tests.fakes.checks import check_json, findings_of
from tests.fakes.clock import T0, FakeClock
from tests.fakes.fake_pynvml import (
    FakeGpu,
    FakeProcess,
    GiB,
    MiB,
    make_fake_nvml,
    seen_from_another_pid_namespace,
)

from gputui import cli
from gputui.backends import NoBackend
from gputui.commands import check
from gputui.commands.common import Common
from gputui.commands.settings_from_args import settings_for
from gputui.health.config import effective_user

A100_GPU0_XID63 = "[ 1234.5] NVRM: Xid (PCI:0000:17:00): 63, pid=1234, Row Remapper: New row marked"


def run(spec: str, capsys, *, environ=None, kernel_log=None, **options):
    """run_check on a fake clock; returns (exit code, stdout)."""
    clock = FakeClock()

    def sleep(seconds: float) -> None:
        clock.now += seconds

    code = check.run_check(
        spec,
        clock=clock,
        sleep=sleep,
        environ=environ or {},
        kernel_log=kernel_log,
        **options,
    )
    out, _err = capsys.readouterr()
    return code, out


def run_json(spec: str, capsys, **options) -> dict:
    code, out = run(spec, capsys, as_json=True, **options)
    data = json.loads(out)
    assert data["exit_code"] == code
    return data


def test_faulty_node_fails_naming_each_fault_end_to_end() -> None:
    result = run_gputui("check", "--backend", "sim:faulty", timeout=30)
    assert result.returncode == 2, result.stderr
    out = result.stdout
    first = out.splitlines()[0]
    assert first.startswith("FAILED (") and "dgx-h100-13" in first and "sim:faulty" in first
    assert "8 GPUs" in first
    assert "GPU 3 is lost (fell off the bus)" in first  # the drain reason names the worst fault
    assert "fail  GPU 3   is lost (fell off the bus)" in out
    assert "fail  GPU 2   1 uncorrected ECC error" in out
    assert "fail  GPU 5   clocks held down: HW thermal slowdown" in out
    assert "warn  GPU 6   PCIe link at Gen3 x8" in out
    assert "GPU 3  H100  fail" in out
    assert "Traceback" not in result.stderr


def test_busy_healthy_node_passes_and_fails_only_when_required_idle(capsys) -> None:
    # dgx-h100 runs a training job: busy is not unhealthy. The other users' processes are
    # reported as information; only --require-idle (a Slurm prolog) makes them failures.
    code, out = run("sim:dgx-h100", capsys)
    assert code == 0
    assert out.startswith("HEALTHY · dgx-h100-07 · sim:dgx-h100 · 8 GPUs\n")
    data = run_json("sim:dgx-h100", capsys)
    assert data["verdict"] == "healthy"
    assert {(f["rule"], f["severity"]) for f in data["findings"]} == {("other_processes", "info")}
    data = run_json("sim:dgx-h100", capsys, require_idle=True)
    assert data["verdict"] == "failed" and data["exit_code"] == 2
    assert {f["rule"] for f in data["findings"]} == {"other_processes"}
    # Without that rule the node itself is healthy.
    code, out = run("sim:dgx-h100", capsys, ignore={"other_processes"}, require_idle=True)
    assert code == 0
    assert "No findings." in out


def test_warning_exits_1_and_strict_makes_it_a_failure(capsys) -> None:
    def log() -> list[str]:
        return ["[    1.0] unrelated boot message", A100_GPU0_XID63]

    opts = {"ignore": {"other_processes"}, "kernel_log": log}
    code, out = run("sim:a100-pcie", capsys, **opts)
    assert code == 1
    assert out.startswith("WARNINGS (1) · gpu-a100-02")
    assert "XID 63 on GPU 0" in out
    code, out = run("sim:a100-pcie", capsys, strict=True, **opts)
    assert code == 2
    assert out.startswith("FAILED (1)")
    # Without the kernel log line the same node is healthy.
    assert run("sim:a100-pcie", capsys, ignore={"other_processes"}, kernel_log=lambda: [])[0] == 0


def test_unreadable_kernel_log_is_listed_as_not_checked(capsys) -> None:
    data = run_json("sim:a100-pcie", capsys, ignore={"other_processes"}, kernel_log=lambda: None)
    assert any("kernel log not readable" in item for item in data["not_checked"])
    assert any("dmesg_restrict" in item for item in data["not_checked"])
    readable = run_json("sim:a100-pcie", capsys, kernel_log=lambda: [])
    assert not any("kernel log" in item for item in readable["not_checked"])


def test_ignore_removes_a_rules_findings(capsys) -> None:
    data = run_json("sim:faulty", capsys, ignore={"other_processes", "pcie_link"})
    rules = {f["rule"] for f in data["findings"]}
    assert "pcie_link" not in rules and "gpu_lost" in rules
    assert {g["index"]: g["status"] for g in data["gpus"]}[6] == "ok"


@pytest.mark.parametrize("value", ["pcie_link,bogus_rule", "nope"])
def test_unknown_ignore_id_is_an_argument_error_listing_the_valid_ones(capsys, value) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["check", "--demo", "--ignore", value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unknown rule" in err and "gpu_lost" in err and "pcie_link" in err


def test_gpus_option_restricts_the_judged_gpus(capsys) -> None:
    data = run_json("sim:faulty", capsys, gpus="0,4", ignore={"other_processes"})
    assert data["checked_gpus"] == [0, 4]  # the faulty node's healthy GPUs
    assert [g["index"] for g in data["gpus"]] == [0, 4]
    assert data["verdict"] == "healthy" and data["findings"] == []
    code, out = run("sim:faulty", capsys, gpus="6", ignore={"other_processes"})
    assert code == 1 and "GPU 6   PCIe link" in out and "GPU 3" not in out
    assert "Judged: GPUs 6 (from --gpus; the node has 8)." in out


def test_gpus_option_naming_a_missing_gpu_exits_2(capsys) -> None:
    assert check.run_check("sim:faulty", gpus="9", kernel_log=None, environ={}) == 2
    assert "no such GPU 9" in capsys.readouterr().err


def test_cuda_visible_devices_by_uuid_and_index(capsys) -> None:
    from gputui.backends.sim import SimBackend

    node = SimBackend("faulty").open()
    uuid6 = node.gpu(6).uuid
    env = {"CUDA_VISIBLE_DEVICES": uuid6}
    data = run_json("sim:faulty", capsys, environ=env, ignore={"other_processes"})
    assert data["checked_gpus"] == [6]
    assert data["verdict"] == "warnings"
    assert not any("CUDA_DEVICE_ORDER" in n for n in data["notes"])  # UUIDs are exact

    env = {"CUDA_VISIBLE_DEVICES": "2,3"}
    code, out = run("sim:faulty", capsys, environ=env, ignore={"other_processes"})
    assert code == 2 and "GPU 3   is lost" in out and "GPU 6" not in out
    assert "CUDA_DEVICE_ORDER=PCI_BUS_ID" in out
    assert "from CUDA_VISIBLE_DEVICES" in out
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    assert "CUDA_DEVICE_ORDER" not in run("sim:faulty", capsys, environ=env)[1]

    # --gpus wins over the environment.
    data = run_json("sim:faulty", capsys, environ=env, gpus="0", ignore={"other_processes"})
    assert data["checked_gpus"] == [0]


def test_cuda_visible_devices_naming_an_absent_gpu_fails(capsys) -> None:
    env = {"CUDA_VISIBLE_DEVICES": "GPU-00000000-dead-beef-0000-000000000000"}
    data = run_json("sim:a100-pcie", capsys, environ=env, ignore={"other_processes"})
    assert data["verdict"] == "failed"
    assert [f["rule"] for f in data["findings"]] == ["visible_devices"]
    data = run_json(
        "sim:a100-pcie", capsys, environ=env, ignore={"other_processes", "visible_devices"}
    )
    assert data["verdict"] == "healthy"


def test_an_amd_node_is_told_amd_smi_commands(monkeypatch, capsys, tmp_path) -> None:
    """An MI300X with a bad page pending retirement and lifetime ECC errors, and a
    CUDA_VISIBLE_DEVICES entry naming no GPU: every hint names amd-smi, none nvidia-smi."""
    from tests.fakes.fake_amdsmi import mi300x_node

    fake = mi300x_node(count=3)
    fake.gpus[2] = dataclasses.replace(
        fake.gpus[2], bad_pages=[(0x2000, 4096, 1)], ecc_uncorrectable=2
    )
    monkeypatch.setitem(sys.modules, "amdsmi", fake)
    monkeypatch.setattr("gputui.core.pci.SYSFS_PCI_DEVICES", tmp_path / "no-sysfs")
    code, out = run("amd", capsys, environ={"CUDA_VISIBLE_DEVICES": "0,1,2,7"})
    assert code == 2 and "GPU 2   retired memory pages pending" in out
    assert "amd-smi reset -G -g 2" in out and "amd-smi bad-pages -g 2" in out
    assert "amd-smi metric --ecc -g 2" in out and "amd-smi list" in out
    assert "nvidia-smi" not in out


def test_an_nvidia_node_is_told_nvidia_smi_commands(monkeypatch, capsys, tmp_path) -> None:
    from tests.fakes.fake_pynvml import FakeGpu, make_fake_nvml

    from gputui.backends.nvml import NvmlBackend

    fake = make_fake_nvml([FakeGpu(), FakeGpu(retired_pages_pending=1, remapped_rows=None)])
    fake.__file__ = "pynvml.py"  # nvidia-ml-py's module, not the old package of that name
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setattr(NvmlBackend, "event_wait_ms", 20)
    monkeypatch.setattr("gputui.core.pci.SYSFS_PCI_DEVICES", tmp_path / "no-sysfs")
    code, out = run("nvml", capsys, environ={"CUDA_VISIBLE_DEVICES": "0,1,7"})
    assert code == 2 and "GPU 1   retired memory pages pending" in out
    assert "nvidia-smi -r -i 1" in out and "nvidia-smi -q -d PAGE_RETIREMENT -i 1" in out
    assert "nvidia-smi -L" in out
    assert "amd-smi" not in out


def test_json_schema(capsys) -> None:
    data = run_json("sim:faulty", capsys)
    assert set(data) == {
        "verdict",
        "exit_code",
        "strict",
        "hostname",
        "backend",
        "checked_gpus",
        "findings",
        "gpus",
        "not_checked",
        "notes",
        "duration_s",
        "schema_version",
    }
    assert data["verdict"] == "failed" and data["exit_code"] == 2
    assert data["hostname"] == "dgx-h100-13" and data["backend"] == "sim:faulty"
    assert data["checked_gpus"] == list(range(8))
    assert isinstance(data["duration_s"], float) and data["schema_version"] == 1
    assert all(isinstance(item, str) for item in data["not_checked"])
    for g in data["gpus"]:
        assert set(g) == {"index", "name", "uuid", "status"}
        assert g["status"] in ("ok", "warn", "fail") and g["uuid"].startswith("GPU-")
    for f in data["findings"]:
        assert {"rule", "severity", "message", "hint", "gpu_index", "active"} <= set(f)
        assert f["severity"] in ("ok", "info", "warn", "fail")
    lost = [f for f in data["findings"] if f["rule"] == "gpu_lost"]
    assert [f["gpu_index"] for f in lost] == [3]
    assert {g["index"]: g["status"] for g in data["gpus"]}[3] == "fail"


def test_no_gpu_exits_2_with_the_message(monkeypatch, capsys) -> None:
    def refuse(spec: str = "auto", *, seed: int = 0, **_options: object):
        raise NoBackend(REASONS)

    monkeypatch.setattr("gputui.backends.open_backend", refuse)
    for argv in (["check"], ["check", "--json"]):
        assert cli.main(argv) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert "NVML: libnvidia-ml.so.1 not found" in err and "gputui --demo" in err


def test_list_rules_names_every_rule(capsys) -> None:
    from gputui.health import RULES

    assert cli.main(["check", "--list-rules"]) == 0
    out = capsys.readouterr().out
    for rule in [*RULES, "visible_devices"]:
        assert any(line.startswith(rule + " ") for line in out.splitlines()), rule


def test_quiet_prints_the_verdict_line_alone(capsys) -> None:
    code, full = run("sim:faulty", capsys)
    assert run("sim:faulty", capsys, quiet=True) == (code, full.splitlines()[0] + "\n")
    assert code == 2 and full.startswith("FAILED (")
    args = cli.build_parser().parse_args(["check", "-q"])
    assert check.options(args, Common.from_args(args)).quiet
    with pytest.raises(SystemExit) as exc:
        cli.main(["check", "--quiet", "--json"])
    assert exc.value.code == 2 and "not with --json" in capsys.readouterr().err


def test_mig_node_is_healthy_and_names_its_instances(capsys) -> None:
    # A busy node shared through MIG: healthy; every GPU in MIG mode lists its instances, and
    # the findings about other users' processes say which instance each runs in.
    code, out = run("sim:mig", capsys)
    assert code == 0
    assert out.startswith("HEALTHY · dgx-h100-21 · sim:mig · 8 GPUs\n")
    lines = out.splitlines()
    gpu0 = lines.index(next(line for line in lines if line.startswith("  GPU 0  H100  ok")))
    assert "MIG: 7 instances" in lines[gpu0]
    assert [line.split()[1] for line in lines[gpu0 + 1 : gpu0 + 8]] == ["1g.10gb"] * 7
    assert lines[gpu0 + 1].split()[2:6] == ["GI", "7", "CI", "0"]
    assert "PID" in lines[gpu0 + 1] and lines[gpu0 + 7].lstrip().startswith("└")
    assert lines[gpu0 + 8].startswith("  GPU 1  ")
    gpu7 = next(line for line in lines if line.startswith("  GPU 7  "))
    assert "busy" in gpu7 and "MIG" not in gpu7
    assert any(line.strip().startswith("on MIG 1g.10gb GI ") and ": PID " in line for line in lines)


def test_mig_check_json_names_instances_of_gpus_and_findings(capsys) -> None:
    data = run_json("sim:mig", capsys)
    assert data["verdict"] == "healthy" and data["exit_code"] == 0
    by_index = {g["index"]: g for g in data["gpus"]}
    assert "mig_devices" not in by_index[7]
    small = by_index[0]["mig_devices"]
    assert [m["gpu_instance_id"] for m in small] == list(range(7, 14))
    for m in small:
        assert m["profile"] == "1g.10gb" and m["uuid"].startswith("MIG-")
        assert 0 <= m["memory_used_bytes"] <= m["memory_total_bytes"]
        assert isinstance(m["pids"], list)
    assert [m["profile"] for m in by_index[4]["mig_devices"]] == ["3g.40gb"] * 2
    on_mig = [f for f in data["findings"] if f.get("mig_devices")]
    assert {f["gpu_index"] for f in on_mig} == set(range(7))
    for f in on_mig:
        for m in f["mig_devices"]:
            assert m["pids"] and all(f"PID {pid}" in f["message"] for pid in m["pids"])
    assert all("mig_devices" not in f for f in data["findings"] if f["gpu_index"] == 7)


def test_crowded_node_check_is_healthy(capsys) -> None:
    code, out = run("sim:crowded", capsys)
    assert code == 0
    assert "250 processes" in out


# -- XIDs from the kernel log: MIG lines, and XIDs that no longer count --------------------------

XID79_GPU0 = "NVRM: Xid (PCI:0000:17:00): 79, pid=1234, name=python, GPU has fallen off the bus."


def booted_hours_ago(monkeypatch, hours: float) -> None:
    """The node booted this long before the check's fake clock starts (kernel-log stamps count
    from boot)."""
    monkeypatch.setattr("gputui.core.xid.boot_time", lambda: T0 - hours * 3600)


def test_mig_xid_in_the_kernel_log_names_the_instance(monkeypatch, capsys) -> None:
    booted_hours_ago(monkeypatch, 1)
    gpu0_gi7 = klog.MIG_XID_GI_CI.replace(
        "0000:17:00 GPU-I:05 GPU-CI:02", "0000:18:00 GPU-I:07 GPU-CI:00"
    )
    log = [klog.stamped(1234.5, gpu0_gi7)]
    code, out = run("sim:mig", capsys, ignore={"other_processes"}, kernel_log=lambda: log)
    assert code == 1
    assert "warn  GPU 0   XID 94 on GPU 0 (MIG 1g.10gb GI 7 CI 0): contained ECC error" in out


def test_xid_before_a_driver_reload_does_not_fail_the_check(monkeypatch, capsys) -> None:
    booted_hours_ago(monkeypatch, 2)
    log = [klog.stamped(600.0, XID79_GPU0), klog.stamped(900.0, klog.DRIVER_LOAD_OPEN)]
    data = run_json("sim:a100-pcie", capsys, ignore={"other_processes"}, kernel_log=lambda: log)
    assert data["verdict"] == "healthy"
    (f,) = data["findings"]
    assert (f["rule"], f["severity"], f["gpu_index"]) == ("xid", "info", 0)
    assert "history: the NVIDIA driver was loaded again at" in f["message"]
    # near miss: the same XID after the reload fails the check
    log.append(klog.stamped(1200.0, XID79_GPU0))
    assert run("sim:a100-pcie", capsys, ignore={"other_processes"}, kernel_log=lambda: log)[0] == 2


def test_xid_older_than_the_window_does_not_fail_the_check(monkeypatch, capsys) -> None:
    booted_hours_ago(monkeypatch, 30)
    log = [klog.stamped(600.0, XID79_GPU0)]  # 29.8 hours before the check
    opts = {"ignore": {"other_processes"}, "kernel_log": lambda: log}
    code, out = run("sim:a100-pcie", capsys, **opts)
    assert code == 0 and "older than the 24 h window" in out
    assert run("sim:a100-pcie", capsys, xid_window_hours=48, **opts)[0] == 2
    assert run("sim:a100-pcie", capsys, xid_window_hours=None, **opts)[0] == 2
    # without the boot time the log's stamps cannot be placed: the XID counts (never a false
    # "healthy")
    monkeypatch.setattr("gputui.core.xid.boot_time", lambda: None)
    assert run("sim:a100-pcie", capsys, **opts)[0] == 2


@pytest.mark.parametrize(("value", "hours"), [("24", 24.0), ("1.5", 1.5), ("0", None)])
def test_xid_window_option(value: str, hours: float | None) -> None:
    """What the check judges with: the option, else the settings (24 h by default)."""

    def window(argv: list[str]) -> float | None:
        parser = cli.build_parser()
        return settings_for(parser.parse_args(argv), parser).health.config().xid_window_hours

    assert window(["check", "--xid-window", value]) == hours
    assert window(["check"]) == 24.0


@pytest.mark.parametrize("value", ["-1", "day", "99999"])
def test_bad_xid_window_is_an_argument_error(value: str, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["check", "--demo", "--xid-window", value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --xid-window: " in err and "Traceback" not in err


# -- --require-idle: nobody's processes --------------------------------------------------------


def test_require_idle_fails_on_a_process_of_the_user_running_the_check() -> None:
    """A prolog runs as root and container workloads show as root on the host: a GPU held by a
    process of the very user running the check is not free. gputui's own process is."""
    job = subprocess.Popen(["sleep", "60"])
    try:
        mine = FakeGpu(
            util_gpu=86,
            memory_used=40 * GiB,
            compute_processes=[FakeProcess(job.pid, used_gpu_memory=40 * GiB)],
        )
        code, doc = check_json(make_fake_nvml([mine]), require_idle=True)
    finally:
        job.kill()
        job.wait()
    assert code == 2 and doc["verdict"] == "failed"
    (f,) = findings_of(doc, "other_processes")
    assert f["severity"] == "fail"
    assert f"PID {job.pid} ({effective_user()}, sleep 60) 40.0 GiB" in f["message"]
    # near miss: the only process on the GPU is gputui's own
    own = FakeGpu(
        util_gpu=0,
        memory_used=GiB,
        compute_processes=[FakeProcess(os.getpid(), used_gpu_memory=GiB)],
    )
    code, doc = check_json(make_fake_nvml([own]), require_idle=True)
    assert code == 0, doc["findings"]


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_require_idle_fails_on_memory_held_by_a_pid_hidden_by_hidepid(tmp_path, monkeypatch):
    """/proc mounted with hidepid=2: the driver lists a PID (and its memory) that /proc does not
    show. That proves nothing about the process having exited: the GPU is not free."""
    from tests.fakes.proc import fake_proc

    from gputui.backends.nvml import NvmlBackend
    from gputui.host.pidns import PROC_PID_INIT_INO

    hiding = "22 26 0:21 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw,hidepid=2\n"
    root = fake_proc(tmp_path / "proc", ns_inode=PROC_PID_INIT_INO, mountinfo=hiding)
    monkeypatch.setattr(NvmlBackend, "proc_root", root)
    pid = _dead_pid()
    held = FakeGpu(
        util_gpu=0,
        memory_used=40 * GiB,
        compute_processes=[FakeProcess(pid, used_gpu_memory=40 * GiB)],
    )
    code, doc = check_json(make_fake_nvml([held]), require_idle=True)
    assert code == 2, doc["findings"]
    (f,) = findings_of(doc, "other_processes")
    assert f["message"] == f"GPU 0: 40.0 GiB held by PID {pid}, a process not visible here"
    assert "hidepid" in f["hint"]
    # without --require-idle it is information, as other users' processes are
    code, doc = check_json(make_fake_nvml([held]))
    assert code == 0 and findings_of(doc, "other_processes")[0]["severity"] == "info"


HELD_FROM_OUTSIDE = """
import json, sys
from tests.fakes.checks import check_json, findings_of
from tests.fakes.fake_pynvml import FakeGpu, FakeProcess, GiB, MiB, make_fake_nvml

pid = int(sys.argv[1])
gpu = FakeGpu(memory_used=40 * GiB, compute_processes=[FakeProcess(pid, used_gpu_memory=40 * GiB)])
code, doc = check_json(make_fake_nvml([gpu]), require_idle=True)
print(json.dumps({"code": code, "findings": findings_of(doc, "other_processes")}))
"""


def test_in_a_pid_namespace_of_its_own_a_host_pid_holding_memory_fails_require_idle() -> None:
    """A real PID namespace with its own /proc (a container): the driver reports the host PID
    of a process outside it, which names nothing here."""
    from tests.fakes.proc import in_new_pid_namespace as _in_new_pid_namespace

    outside = subprocess.Popen(["sleep", "60"])
    try:
        done = _in_new_pid_namespace(HELD_FROM_OUTSIDE, str(outside.pid))
    finally:
        outside.kill()
        outside.wait()
    if done is None:
        pytest.skip("cannot make a PID namespace here (no unshare, or not allowed)")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["code"] == 2
    (f,) = result["findings"]
    assert f["message"] == f"GPU 0: 40.0 GiB held by PID {outside.pid}, a process not visible here"


@pytest.mark.parametrize(
    ("used_mib", "reserved_apart", "fails"),
    [
        (500, True, True),  # a CUDA context alone, beside the reserved part
        (0, True, False),  # idle: the real H100 reads 0 B used beside its reserved 480 MiB
        (500, False, False),  # no v2 memory info: "used" includes the reserved part
    ],
    ids=["context", "idle", "v1-memory-info"],
)
def test_from_another_pid_namespace_a_context_the_driver_does_not_list_fails_require_idle(
    used_mib: int, reserved_apart: bool, fails: bool
) -> None:
    """In another PID namespace the driver lists none of the host's processes: on a real H100
    (R580) ``unshare --pid --mount-proc`` saw an empty process list beside 4.86 GiB in use
    (tests/data/real/h100-sxm5-580.159.04/run3/snap_pidns.json). A context of 500 MiB held
    out of sight is not an idle GPU; a driver without v2 memory info counts its reserved memory
    as used, so the old 1 GiB floor stays there."""
    holder = FakeProcess(pid=4242, used_gpu_memory=used_mib * MiB)
    gpu = seen_from_another_pid_namespace(
        FakeGpu(memory_used=used_mib * MiB, compute_processes=[holder] if used_mib else [])
    )
    fake = make_fake_nvml([gpu])
    if not reserved_apart:
        fake.missing.add("nvmlDeviceGetMemoryInfo_v2")
    code, doc = check_json(fake, require_idle=True)
    held = findings_of(doc, "other_processes")
    assert (code, bool(held)) == ((2, True) if fails else (0, False)), doc["findings"]
    if fails:
        assert held[0]["message"] == "GPU 0: 500 MiB in use by processes not visible here"
