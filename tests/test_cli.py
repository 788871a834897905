"""The command line: exit codes and messages a user (or a script) relies on."""

from __future__ import annotations

import argparse
import ctypes.util
import io
import json
import os
import subprocess
import sys

import pytest
from tests.factories import REASONS, run_gputui

from gputui import cli
from gputui.backends import NoBackend
from gputui.commands.common import Seams


@pytest.fixture
def no_gpu(monkeypatch):
    def refuse(spec: str = "auto", *, seed: int = 0, **_options: object):
        raise NoBackend(REASONS)

    monkeypatch.setattr("gputui.backends.open_backend", refuse)


@pytest.mark.parametrize("argv", [["snapshot"], ["snapshot", "--json"], []])
def test_no_gpu_exits_2_with_reasons_and_a_hint(no_gpu, capsys, argv) -> None:
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "NVML: libnvidia-ml.so.1 not found (no NVIDIA driver)" in err
    assert "AMD-SMI: amdsmi not installed" in err
    assert "gputui --demo" in err


@pytest.mark.skipif(
    ctypes.util.find_library("nvidia-ml") is not None, reason="this machine has an NVIDIA driver"
)
def test_real_no_gpu_machine_gets_a_message_not_a_traceback() -> None:
    result = run_gputui("snapshot")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "NVML: libnvidia-ml.so.1 not found" in result.stderr
    assert "AMD-SMI:" in result.stderr
    assert result.stdout == ""


def test_demo_snapshot_json_is_a_full_reading() -> None:
    result = run_gputui("--demo", "snapshot", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["node"]["backend"] == "sim:dgx-h100"
    assert len(data["gpus"]) == 8 == len(data["node"]["gpus"])
    assert data["processes"], "the demo node runs a training job"
    # Two readings are taken so rates are real numbers, not null.
    assert any(g["nvlink_tx_bytes_per_s"] is not None for g in data["gpus"])


def test_snapshot_text_names_every_gpu(capsys) -> None:
    assert cli.main(["snapshot", "--backend", "sim:a100-pcie"]) == 0
    out = capsys.readouterr().out
    assert out.count("A100") >= 2
    assert "PID" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--interval", "0"], "interval must be between"),
        (["--interval", "fast"], "is not a number"),
        (["--backend", "cuda"], "unknown backend 'cuda'"),
        (["--demo", "--backend", "nvml"], "--demo cannot be combined"),
    ],
)
def test_bad_arguments_exit_2_with_a_clear_message(capsys, argv, message) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_unknown_scenario_lists_the_real_ones(capsys) -> None:
    code = None
    try:
        code = cli.main(["snapshot", "--backend", "sim:nope"])
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert "nope" in err and "dgx-h100" in err


def test_dashboard_without_a_terminal_says_so_instead_of_hanging() -> None:
    result = run_gputui("--demo", timeout=20)  # stdin is /dev/null, stderr a pipe
    assert result.returncode == 2
    assert "needs a terminal" in result.stderr and "gputui snapshot" in result.stderr
    assert "Traceback" not in result.stderr


def test_snapshot_json_includes_the_health_findings(capsys) -> None:
    assert cli.main(["snapshot", "--backend", "sim:faulty", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    by_rule = {(f["rule"], f["gpu_index"]) for f in data["findings"]}
    assert ("ecc_uncorrected", 2) in by_rule
    assert ("pcie_link", 6) in by_rule
    assert ("throttle", 5) in by_rule
    for f in data["findings"]:
        assert f["severity"] in ("ok", "info", "warn", "fail") and f["message"]
    assert "events" in data


def test_snapshot_text_lists_findings_after_the_gpu_table(capsys) -> None:
    assert cli.main(["snapshot", "--backend", "sim:faulty"]) == 0
    out = capsys.readouterr().out
    assert "Findings (" in out
    assert out.index("Findings (") > out.index("SM CLOCK") and out.index("Findings (") < out.index(
        "PID"
    )
    assert "fail  GPU 2" in out and "uncorrected ECC" in out
    assert "warn  GPU 6   PCIe link at Gen3 x8" in out


def test_snapshot_text_says_no_findings_on_a_healthy_node(sim_sampler) -> None:
    from gputui.views.report import render_snapshot

    snapshot = sim_sampler("rtx4090", polls=1).latest
    assert snapshot.findings == ()  # no health monitor on this sampler
    text = render_snapshot(snapshot)
    assert "No findings." in text and "Findings (" not in text


def test_a_reader_that_leaves_early_is_not_an_error() -> None:
    """`gputui specs | head -1`: a closed pipe ends the command quietly with exit 0."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before gputui writes a byte
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run(
        [sys.executable, "-m", "gputui", "specs"],
        stdout=write_end,
        stderr=subprocess.PIPE,
        env=env,
        timeout=30,
    )
    os.close(write_end)
    assert result.returncode == 0
    assert b"Traceback" not in result.stderr and b"BrokenPipe" not in result.stderr


def test_snapshot_text_columns_line_up_with_wide_user_names(sim_sampler) -> None:
    """Columns are measured in terminal cells: a CJK user name is two cells a character."""
    import dataclasses

    from gputui.core.format import cell_width, fmt_size
    from gputui.views.report import render_snapshot

    snapshot = sim_sampler("dgx-h100", polls=1).latest
    users = ["田中太郎", "bob", "\x1b[31mmallory"]
    processes = tuple(
        dataclasses.replace(p, user=users[i % len(users)]) for i, p in enumerate(snapshot.processes)
    )
    text = render_snapshot(dataclasses.replace(snapshot, processes=processes))
    assert "\x1b" not in text and "田中太郎" in text and "?[31mmallory" in text
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("GPU  PID"))
    column = lines[header].index("GPU MEM")
    for line, proc in zip(lines[header + 1 :], processes, strict=False):
        memory = fmt_size(proc.gpu_memory_bytes)
        assert cell_width(line[: line.index("  " + memory) + 2]) == column, line


def test_help_lists_pick_and_the_gpu_hour_price(capsys) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert "pick" in out and "--gpu-hour-price" in out
    with pytest.raises(SystemExit):
        cli.main(["pick", "--help"])
    out = capsys.readouterr().out
    for option in ("--min-free", "--max-util", "--idle-for", "--format", "CUDA_DEVICE_ORDER"):
        assert option in out


def test_each_command_in_the_table_adds_its_own_parser() -> None:
    parser = cli.build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert list(commands.choices) == list(cli.COMMANDS)  # the order `gputui --help` lists


def test_snapshot_text_has_a_job_pod_column_and_the_gpus_idle_now(capsys) -> None:
    assert cli.main(["--demo", "snapshot", "--gpu-hour-price", "2.5"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("GPU  PID"))
    assert header.index("JOB / POD") < header.index("COMMAND")
    rank0 = next(line for line in out.splitlines() if "--local-rank=0" in line)
    assert "job 4242 train-llama" in rank0 and "[ctr" not in rank0  # the demo's Slurm job
    vllm = next(line for line in out.splitlines() if "vllm serve" in line)
    assert "pod ml/vllm-0" in vllm and "[ctr" not in vllm  # its container said once, as a pod
    idle = next(line for line in out.splitlines() if line.startswith("Idle now: "))
    assert "7 (held)" in idle and "they cost 2.50 per hour" in idle  # the idle notebook
    # One reading is a glance: no usage table (energy and idle time over half a second), and
    # no "idle so far"; --json keeps the usage.
    assert "Usage over" not in out and "ENERGY" not in out and "so far" not in idle


def test_snapshot_json_has_typed_attribution_fields(capsys) -> None:
    assert cli.main(["--demo", "snapshot", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    proc = data["processes"][0]
    for field in ("slurm_job_id", "k8s_pod_uid", "k8s_pod_name", "container_id", "container_name"):
        assert field in proc
    assert {"energy_used_j", "idle_s", "held_idle_s"} <= set(data["usage"]["gpus"][0])


class Terminal(io.StringIO):
    """Output that says it is a terminal (the width comes from COLUMNS)."""

    def isatty(self) -> bool:
        return True


def snapshot_text(*argv: str, out: io.StringIO, columns: str = "80") -> str:
    """``gputui [argv] snapshot`` written to ``out`` with ``COLUMNS`` set."""
    from gputui.commands import snapshot as snapshot_command
    from gputui.commands.common import Common
    from gputui.commands.settings_from_args import settings_for

    parser = cli.build_parser()
    args = parser.parse_args([*argv, "snapshot"])
    options = snapshot_command.options(args, Common.from_args(args, settings_for(args, parser)))
    seams = Seams(environ={"COLUMNS": columns}, out=out)
    assert snapshot_command.run(options, seams) == 0
    return out.getvalue()


@pytest.mark.parametrize("scenario", ["dgx-h100", "faulty", "mig", "mi300x"])
def test_snapshot_fits_an_80_column_terminal(scenario: str) -> None:
    from gputui.core.format import cell_width

    text = snapshot_text("--backend", f"sim:{scenario}", out=Terminal())
    lines = text.splitlines()
    assert max(cell_width(line) for line in lines) <= 80
    table = lines[next(i for i, line in enumerate(lines) if line.startswith("GPU  ")) :]
    assert table[0].split()[:3] == ["GPU", "NAME", "UTIL"]
    if scenario == "dgx-h100":
        header = next(line for line in lines if line.startswith("GPU  PID"))
        assert "RSS" not in header and "TIME" not in header and "JOB / POD" not in header
        rank3 = next(line for line in lines if "--local-rank=3" in line)
        assert "train.py … --local-rank=3" in rank3  # fitted as the dashboard fits it
        # Into a pipe (not a terminal), whole lines whatever COLUMNS says: a script reads all.
        piped = snapshot_text("--backend", f"sim:{scenario}", out=io.StringIO())
        assert "python -u train.py --config llama-8b.yaml --local-rank=3" in piped
    if scenario == "faulty":
        findings = lines[lines.index(next(x for x in lines if x.startswith("Findings ("))) :]
        goes_on = [x for x in findings[1:] if x and not x.startswith("  ") and x.strip()]
        assert goes_on == [] or goes_on[0].startswith("host")  # every continuation indented


def test_snapshot_names_what_amd_measures_per_process(sim_sampler) -> None:
    from gputui.views.report import render_snapshot

    text = render_snapshot(sim_sampler("mi300x", polls=20).latest, width=80)
    header = next(line for line in text.splitlines() if line.startswith("GPU  PID"))
    assert "GFX%" in header.split() and "SM%" not in header
