"""A Slurm controller that does not answer: the ``scontrol`` gputui starts to name a job must
not outlive gputui (a prolog runs ``check`` / ``snapshot`` once a job: one orphan each)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gputui.host.slurmjobs import SlurmJobs

ROOT = str(Path(__file__).resolve().parent.parent)


def hanging_scontrol(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A fake ``scontrol`` that never answers; it writes its PID, starts a ``sleep`` of its own
    (which only a kill of its process group reaches) and writes that one's PID."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    leader, helper = tmp_path / "scontrol.pid", tmp_path / "sleep.pid"
    script = bin_dir / "scontrol"
    script.write_text(
        f"#!/bin/sh\necho $$ > {leader}.tmp && mv {leader}.tmp {leader}\n"
        f"sleep 613 &\necho $! > {helper}.tmp && mv {helper}.tmp {helper}\nwait\n"
    )
    script.chmod(0o755)
    return bin_dir, leader, helper


def running(pid_file: Path) -> bool:
    """Whether the process whose PID the file holds still runs (a zombie has ended; a PID taken
    over by another program is not it)."""
    pid = int(pid_file.read_text())
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state != "Z" and (b"scontrol" in cmdline or b"613" in cmdline)


def ends(pid_file: Path, seconds: float = 5.0) -> bool:
    """Whether that process ends within ``seconds``: one killed with its process group ends
    when it is next scheduled, which on a loaded machine is not at once."""
    end = time.monotonic() + seconds
    while running(pid_file):
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def wait_for(path: Path, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < end:
        time.sleep(0.05)
    return path.exists()


def kill_left(*pid_files: Path) -> None:
    """Clean up after a failure: the processes the fake started, by their PIDs."""
    for pid_file in pid_files:
        if pid_file.exists() and running(pid_file):
            os.kill(int(pid_file.read_text()), 9)


def test_closing_the_jobs_kills_a_hanging_scontrol_and_what_it_started(tmp_path) -> None:
    bin_dir, leader, helper = hanging_scontrol(tmp_path)
    jobs = SlurmJobs(str(bin_dir / "scontrol"), timeout_s=600)
    try:
        assert jobs.lookup("4242") is None
        assert wait_for(helper, 30)
        started = time.monotonic()
        jobs.close()
        assert time.monotonic() - started < 10
        assert not running(leader)  # waited for
        assert ends(helper)  # killed with it
        assert jobs.wait_idle(10)
        assert jobs.lookup("4243") is None and jobs.lookups == 1  # closed: nothing more asked
    finally:
        kill_left(leader, helper)


@pytest.mark.parametrize("command", ["snapshot", "check"])
def test_no_scontrol_is_left_running_after_the_command_exits(tmp_path, command) -> None:
    bin_dir, leader, helper = hanging_scontrol(tmp_path)
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([ROOT, *sys.path]),
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        FAKE_NVML_SLURM_JOB="4242",
    )
    try:
        result = subprocess.run(
            [sys.executable, "-m", "tests.fakes.run_with_fake_nvml", command, "--backend", "nvml"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
        )
        assert result.returncode in (0, 1), result.stdout + result.stderr
        assert leader.exists(), "job 4242's name was not asked for before gputui ended"
        wait_for(helper, 2)
        assert ends(leader)
        assert not helper.exists() or ends(helper)
    finally:
        kill_left(leader, helper)
