"""A driver without persistence mode initialises each GPU when a program first opens it (1-3 s a
GPU): a slow but healthy open is WARNINGS (persistence off), never "not responding"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from tests.fakes.checks import check_json, findings_of
from tests.fakes.fake_pynvml import FakeGpu, make_fake_nvml

from gputui.backends.base import OpenProgress
from gputui.commands.check import COLD_OPEN_ALLOWANCE_S, Watchdog
from gputui.engine.opening import Opening, OpenTimedOut, ends_cleanly, stuck

ROOT = str(Path(__file__).resolve().parent.parent)


def test_eight_gpus_opening_3_s_each_give_warnings_not_failed() -> None:
    """The whole command, as a prolog runs it: 24 s of opening under its 20 s timeout."""
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([ROOT, *sys.path]),
        FAKE_NVML_GPUS="8",
        FAKE_NVML_COLD_OPEN="3",
    )
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "tests.fakes.run_with_fake_nvml", "check", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    took = time.monotonic() - started
    assert result.returncode == 1, result.stdout + result.stderr
    doc = json.loads(result.stdout)
    assert doc["verdict"] == "warnings"
    assert findings_of(doc, "not_responding") == []
    assert len(findings_of(doc, "persistence_mode")) == 8
    (slow,) = findings_of(doc, "slow_open")
    assert slow["severity"] == "info" and "persistence mode is off on 8 GPUs" in slow["message"]
    assert 24 <= took < 20 + 8 * COLD_OPEN_ALLOWANCE_S + 20


def test_a_quick_open_says_nothing_about_it() -> None:
    code, doc = check_json(make_fake_nvml(2))
    assert findings_of(doc, "slow_open") == [] and code == 0


def test_a_slow_open_with_persistence_on_is_still_reported() -> None:
    gpus = [FakeGpu(cold_open_s=0.0) for _ in range(2)]
    fake = make_fake_nvml(gpus)
    real_init = fake.nvmlInitWithFlags

    def slow_init(flags: int) -> None:
        time.sleep(2.1)
        real_init(flags)

    fake.nvmlInitWithFlags = slow_init  # type: ignore[method-assign]
    code, doc = check_json(fake)
    (slow,) = findings_of(doc, "slow_open")
    assert "persistence" not in slow["message"] and code == 0


def watchdog(progress: OpenProgress, timeout: float = 20.0) -> Watchdog:
    dog = Watchdog(timeout, "nvml", as_json=True, out=None, progress=progress)  # type: ignore[arg-type]
    dog.started = 1000.0
    return dog


def test_deadline_while_the_library_initialises_allows_every_gpu() -> None:
    dog = watchdog(OpenProgress(expected=8, last_step=1000.0))
    assert dog.deadline() == pytest.approx(1000 + 20 + 8 * COLD_OPEN_ALLOWANCE_S)


def test_deadline_follows_each_gpu_opened_and_is_capped() -> None:
    progress = OpenProgress(expected=8, opened=3, last_step=1030.0)
    assert watchdog(progress).deadline() == pytest.approx(1030 + COLD_OPEN_ALLOWANCE_S)
    progress.last_step = 1060.0  # past the cap of every GPU's allowance
    assert watchdog(progress).deadline() == pytest.approx(1000 + 20 + 8 * COLD_OPEN_ALLOWANCE_S)


def test_a_stalled_open_is_not_waited_for_past_the_timeout() -> None:
    progress = OpenProgress(expected=8, opened=2, last_step=1001.0)
    assert watchdog(progress).deadline() == pytest.approx(1020.0)


def test_after_the_open_the_readings_get_the_whole_timeout_again() -> None:
    progress = OpenProgress(expected=8, opened=8, last_step=1030.0, done_at=1031.0)
    assert watchdog(progress).deadline() == pytest.approx(1051.0)


def test_without_a_known_count_the_timeout_is_the_timeout() -> None:
    assert watchdog(OpenProgress()).deadline() == pytest.approx(1020.0)


# -- the bounded open every command uses ---------------------------------------------------------


def test_an_open_that_keeps_opening_gpus_is_waited_for_past_its_timeout() -> None:
    progress = OpenProgress(expected=4)

    def cold_open() -> str:
        for _ in range(4):
            time.sleep(0.4)
            progress.step()
        return "opened"

    started = time.monotonic()
    assert Opening(cold_open, timeout=0.5, progress=progress).wait() == "opened"
    assert time.monotonic() - started >= 1.6


def test_an_open_that_stops_answering_is_given_up_on_and_left_to_its_thread() -> None:
    wedged = threading.Event()
    ticks: list[float] = []
    try:
        opening = Opening(wedged.wait, timeout=0.5, progress=OpenProgress())
        started = time.monotonic()
        with pytest.raises(OpenTimedOut) as caught:
            opening.wait(ticks.append)
        assert 0.5 <= time.monotonic() - started < 10
        assert caught.value.allowed_s == pytest.approx(0.5)
        assert ticks[0] < 0.5 and ticks == sorted(ticks)  # at once, then while it waits
        assert stuck()  # cli.main then ends the process without waiting for it
    finally:
        wedged.set()
    end = time.monotonic() + 10
    while stuck() and time.monotonic() < end:  # the call returned: its thread ends
        time.sleep(0.01)
    assert not stuck()


def test_what_the_open_raises_reaches_the_caller() -> None:
    def broken() -> None:
        raise LookupError("no such library")

    with pytest.raises(LookupError, match="no such library"):
        Opening(broken, timeout=5.0).wait()
    assert not stuck()


def test_main_turns_ctrl_c_into_130_and_ends_only_for_its_own_stuck_opens() -> None:
    @ends_cleanly
    def interrupted() -> int:
        raise KeyboardInterrupt

    wedged = threading.Event()
    try:
        with pytest.raises(OpenTimedOut):
            Opening(wedged.wait, timeout=0.2).wait()  # an earlier call's, still stuck
        assert interrupted() == 130  # returned: the process was not ended for it
    finally:
        wedged.set()
