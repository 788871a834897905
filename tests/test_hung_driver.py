"""A driver call that never returns (a sick GPU, a wedged driver): every mode says so within its
deadline and stays in control — the sampler, ``check``, the exporter, ``record`` and the
dashboard. The fake pynvml blocks a GPU's calls on an event the test holds."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest
from tests.fakes.hung import hung_sampler
from tests.fakes.terminal import Terminal

from gputui.engine.sampler import BackendBusy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def wedged() -> Iterator[threading.Event]:
    """The event hung calls wait on; set at the end so no thread is left blocked."""
    event = threading.Event()
    yield event
    event.set()


def test_a_reading_that_does_not_return_is_reported_not_waited_for(wedged) -> None:
    sampler, gpu = hung_sampler(wedged, after=10_000)
    first = sampler.poll(deadline=0.5)
    assert first.stall is None and len(first.gpus) == 2
    gpu.hang_after = gpu.call_count  # from now on every call on GPU 1 blocks
    started = time.monotonic()
    stalled = sampler.poll(deadline=0.5)
    assert 0.4 <= time.monotonic() - started < 2.0
    assert stalled.stall is not None and stalled.stall.gpu_index == 1
    assert stalled.stall.last_reading == first.timestamp
    assert stalled.gpus == first.gpus  # the last values, marked stale
    (finding,) = [f for f in stalled.findings if f.rule == "not_responding"]
    assert finding.severity == "fail"
    assert "NVML not responding for" in finding.message and "GPU 1" in finding.message
    # Overdue already: the next poll does not wait again, and starts no second reading (a
    # second one would stall since its own start, half a second later).
    started = time.monotonic()
    again = sampler.poll(deadline=0.5)
    assert time.monotonic() - started < 0.3
    assert again.stall is not None and again.stall.since == stalled.stall.since
    # Nothing waits on the backend without a limit.
    with pytest.raises(BackendBusy):
        sampler.signal_process(os.getpid(), signal.SIGCONT)
    started = time.monotonic()
    sampler.close()
    assert time.monotonic() - started < 3.0


def test_the_driver_answering_again_ends_the_stall(wedged) -> None:
    sampler, gpu = hung_sampler(wedged, after=0)
    assert sampler.poll(deadline=0.3).stall is not None
    wedged.set()  # the call returns
    gpu.hang = None
    deadline = time.monotonic() + 5
    snapshot = sampler.poll(deadline=0.3)
    while snapshot.stall is not None and time.monotonic() < deadline:
        snapshot = sampler.poll(deadline=0.3)
    assert snapshot.stall is None and len(snapshot.gpus) == 2
    assert not any(f.rule == "not_responding" and f.active for f in snapshot.findings)
    sampler.close()


def test_the_polling_thread_keeps_publishing_while_a_call_hangs(wedged) -> None:
    sampler, _gpu = hung_sampler(wedged, after=0)
    got: list = []
    sampler.start(got.append)
    end = time.monotonic() + 5
    while sum(1 for s in got if s.stall is not None) < 3 and time.monotonic() < end:
        time.sleep(0.05)
    stalls = [s for s in got if s.stall is not None]
    assert len(stalls) >= 3  # one per tick once overdue, not one per deadline
    ages = [s.timestamp - s.stall.since for s in stalls]
    assert ages == sorted(ages)
    started = time.monotonic()
    sampler.close()
    assert time.monotonic() - started < 4.0


# -- whole commands, in a subprocess with the fake driver ---------------------------------------


def run_fake(
    *args: str, hang: str, timeout: float = 40, **kwargs
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, *sys.path]), FAKE_NVML_HANG=hang)
    return subprocess.run(
        [sys.executable, "-m", "tests.fakes.run_with_fake_nvml", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        **kwargs,
    )


def test_check_gives_the_not_responding_verdict_when_a_reading_hangs() -> None:
    started = time.monotonic()
    result = run_fake("check", "--backend", "nvml", "--json", hang="1:40")
    took = time.monotonic() - started
    assert result.returncode == 2, result.stderr
    data = json.loads(result.stdout)
    assert data["verdict"] == "failed"
    (finding,) = [f for f in data["findings"] if f["rule"] == "not_responding"]
    assert "NVML not responding" in finding["message"] and "GPU 1" in finding["message"]
    assert {g["status"] for g in data["gpus"]} == {"fail"}
    assert took < 20  # the default --timeout is 20 s; a reading gets 5 s


def test_check_ends_within_its_timeout_when_the_library_hangs_while_opening() -> None:
    started = time.monotonic()
    result = run_fake("check", "--backend", "nvml", "--timeout", "2", hang="init")
    took = time.monotonic() - started
    assert result.returncode == 2
    assert result.stdout.startswith("FAILED (1)")
    assert "did not answer within 2 s" in result.stdout
    assert took < 10


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_exporter_reports_the_stall_and_stops_on_sigterm() -> None:
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, *sys.path]), FAKE_NVML_HANG="1:60")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.fakes.run_with_fake_nvml",
            "export",
            "--backend",
            "nvml",
            "--listen",
            f"127.0.0.1:{port}",
            "--interval",
            "0.2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        text = ""
        end = time.monotonic() + 30
        while time.monotonic() < end:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                    text = r.read().decode()
            except OSError:
                text = ""
            if "gputui_node_health_status 3.0" in text:
                break
            time.sleep(0.3)
        assert "gputui_node_health_status 3.0" in text
        assert (
            'gputui_health_findings{action="reboot",gpu="",rule="not_responding",severity="fail"}'
            in text
        )
        assert "DCGM_FI_DEV_GPU_UTIL{" not in text  # stale values are not exported as fresh
        proc.send_signal(signal.SIGTERM)
        started = time.monotonic()
        assert proc.wait(timeout=10) == 0
        assert time.monotonic() - started < 6
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()


async def test_the_dashboard_marks_stale_values_and_quits_promptly(wedged) -> None:
    from gputui.tui.app import GpuTuiApp

    sampler, gpu = hung_sampler(wedged, after=10_000)
    sampler.poll()
    gpu.hang_after = gpu.call_count
    app = GpuTuiApp(sampler)
    async with app.run_test(size=(120, 40)) as pilot:
        end = time.monotonic() + 5
        while not app.dashboard.has_class("-stale") and time.monotonic() < end:
            await pilot.pause(0.1)
        assert app.dashboard.has_class("-stale")
        assert "NO ANSWER" in app.dashboard.title_bar.plain_lines[0]
        started = time.monotonic()
        await pilot.press("q")
    assert time.monotonic() - started < 3.0
    started = time.monotonic()
    sampler.close()
    assert time.monotonic() - started < 3.0


def test_record_ends_on_time_and_says_readings_were_missing(tmp_path) -> None:
    path = tmp_path / "hung.jsonl"
    started = time.monotonic()
    result = run_fake(
        "record",
        str(path),
        "--backend",
        "nvml",
        "--interval",
        "0.2",
        "--duration",
        "3",
        hang="1:60",
    )
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 15
    assert "readings are missing: NVML did not answer" in result.stderr
    from gputui.core.record import read_recording

    recording = read_recording(path)
    assert any(s.stall is not None for s in recording.snapshots)  # the gap, as it was


def test_check_replay_of_a_recording_that_ends_with_the_driver_hung_fails(
    wedged, tmp_path, capsys
) -> None:
    """The recording's last readings repeat the values from before the hang, marked as not
    answered: a replay is judged by that too, not by the stale values alone."""
    from gputui import cli
    from gputui.core.record import Recorder, read_recording

    sampler, gpu = hung_sampler(wedged, after=10_000)
    path = tmp_path / "hung.jsonl"
    with Recorder(path, node=sampler.node) as recorder:
        sampler.add_listener(recorder)
        for _ in range(2):
            assert sampler.poll(deadline=0.5).stall is None
            time.sleep(0.01)
        gpu.hang_after = gpu.call_count  # from now on every call on GPU 1 blocks
        for _ in range(2):
            assert sampler.poll(deadline=0.5).stall is not None
            time.sleep(0.01)
    sampler.close()
    assert read_recording(path).snapshots[-1].stall is not None
    code = cli.main(["check", "--replay", str(path), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 2 and doc["verdict"] == "failed"
    (finding,) = [f for f in doc["findings"] if f["rule"] == "not_responding"]
    assert finding["severity"] == "fail" and finding["active"]
    assert "NVML not responding for" in finding["message"] and "GPU 1" in finding["message"]


def test_snapshot_and_topo_say_the_driver_is_not_answering() -> None:
    for command in ("snapshot", "topo"):
        result = run_fake(command, "--backend", "nvml", hang="1:40")
        assert result.returncode == 2, (command, result.stderr)
        assert "is not answering (a driver call hangs)" in result.stderr


# -- a driver that hangs while the GPUs are opened: every command ends, Ctrl-C works ----------

OPEN_HUNG = (
    "the GPU library did not answer within 20 s while opening the GPUs (a driver call hangs)"
)


def fake_env(**extra: str) -> dict[str, str]:
    """What a command against the fake driver needs on top of this environment."""
    return {"PYTHONPATH": os.pathsep.join([ROOT, *sys.path]), **extra}


FAKE_GPUTUI = ["-m", "tests.fakes.run_with_fake_nvml"]


class Started:
    """``gputui ARGS`` against the fake driver, started now; :meth:`finish` waits for it."""

    def __init__(self, *args: str, env: dict[str, str]) -> None:
        self.began = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, *FAKE_GPUTUI, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ, **env),
            cwd=ROOT,
        )

    def finish(self, timeout: float) -> tuple[int | None, str, str, float]:
        """(exit status, or None when still running ``timeout`` s after :attr:`began`: then it
        is killed; stdout; stderr; seconds it ran)."""
        try:
            out, err = self.proc.communicate(timeout=self.began + timeout - time.monotonic())
            code: int | None = self.proc.returncode
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            code = None
        return code, out, err, time.monotonic() - self.began


def on_terminal(term: Terminal, began: float, timeout: float) -> tuple[int | None, str, float]:
    """(exit status or None, all it wrote, seconds it ran) of a command on a terminal."""
    term.read(lambda out: False, began + timeout - time.monotonic())  # until it closes the pty
    term.close()  # kills it if still running
    code = term.process.returncode
    text = term.output.decode(errors="replace")
    return (None if code == -signal.SIGKILL else code), text, time.monotonic() - began


@pytest.fixture
def cleanup() -> Iterator[list[Started | Terminal]]:
    """What a test started; whatever still runs at its end (a failed test) is killed."""
    started: list[Started | Terminal] = []
    yield started
    for item in started:
        if isinstance(item, Terminal):
            item.close()
        elif item.proc.poll() is None:
            item.proc.kill()
            item.proc.communicate()


def test_every_command_ends_with_exit_2_when_the_library_hangs_while_opening(
    tmp_path, cleanup
) -> None:
    """The default limit is 20 s (no GPU count is known before nvmlInit here, so no cold-open
    allowance); each command is given far longer to end. The dashboard says how long it has
    been opening, then why it ends, without starting the app."""
    env = fake_env(FAKE_NVML_HANG="init")
    recording = tmp_path / "rec.jsonl"
    listen = f"127.0.0.1:{_free_port()}"
    began = time.monotonic()
    dashboard = Terminal([*FAKE_GPUTUI, "--backend", "nvml"], env)
    commands = {
        "snapshot": Started("snapshot", "--backend", "nvml", env=env),
        "pick": Started("pick", "--backend", "nvml", env=env),
        "topo": Started("topo", "--backend", "nvml", env=env),
        "record": Started("record", str(recording), "--backend", "nvml", env=env),
        "export": Started("export", "--backend", "nvml", "--listen", listen, env=env),
    }
    cleanup.extend([dashboard, *commands.values()])
    results = {name: command.finish(timeout=120) for name, command in commands.items()}
    code, text, took = on_terminal(dashboard, began, 120)
    results["dashboard"] = (code, "", text, took)
    for name, (code, out, err, took) in results.items():
        assert code == 2, (name, code, out, err)
        assert OPEN_HUNG in err and "check nvidia-smi" in err, (name, err)
        assert "Traceback" not in err, (name, err)
        assert 19 < took < 120, (name, took)
    assert not recording.exists()  # nothing half-made
    assert "gputui: opening the GPUs… (3 s)" in results["dashboard"][2]
    assert "\x1b[?1049h" not in results["dashboard"][2]  # the app did not start


def test_ctrl_c_ends_every_command_while_the_library_hangs_opening(tmp_path, cleanup) -> None:
    """SIGINT once the driver call hangs: exit 130 at once, no traceback (the call itself never
    returns, and no signal reaches into it)."""
    marks = {name: tmp_path / f"{name}.hangs" for name in ("snapshot", "check", "dashboard")}

    def env(name: str) -> dict[str, str]:
        return fake_env(FAKE_NVML_HANG="init", FAKE_NVML_HANG_MARK=str(marks[name]))

    runs: dict[str, Started | Terminal] = {
        "snapshot": Started("snapshot", "--backend", "nvml", env=env("snapshot")),
        "check": Started("check", "--backend", "nvml", env=env("check")),
        "dashboard": Terminal([*FAKE_GPUTUI, "--backend", "nvml"], env("dashboard")),
    }
    cleanup.extend(runs.values())
    results = {}
    for name, run in runs.items():
        proc = run.process if isinstance(run, Terminal) else run.proc
        end = time.monotonic() + 60
        while not marks[name].exists() and proc.poll() is None and time.monotonic() < end:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        if isinstance(run, Terminal):
            code, text, _ = on_terminal(run, sent, 15)
            results[name] = (marks[name].exists(), code, text)
        else:
            run.began = sent
            code, out, err, _ = run.finish(timeout=15)
            results[name] = (marks[name].exists(), code, out + err)
    for name, (hung, code, text) in results.items():
        assert hung, (name, text)
        assert code == 130, (name, code, text)
        assert "Traceback" not in text, (name, text)


def test_a_cold_open_that_makes_progress_is_not_cut_short(cleanup) -> None:
    """8 GPUs at 3 s each: 24 s of opening under the 20 s limit, each GPU well within its
    allowance."""
    snapshot = Started(
        "snapshot", "--backend", "nvml", env=fake_env(FAKE_NVML_GPUS="8", FAKE_NVML_COLD_OPEN="3")
    )
    cleanup.append(snapshot)
    code, out, err, took = snapshot.finish(timeout=120)
    assert code == 0, (out, err)
    assert took >= 24 and "8 GPUs" in out
