"""Signalling the process the user chose, with real child processes: the start time shown must
still match right before sending, through a pidfd where there is one; otherwise nothing is sent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import psutil
import pytest

from gputui import signals
from gputui.backends.base import Backend
from gputui.model import NodeInfo
from gputui.sampler import Sampler
from gputui.signals import IdentityUnknown, ProcessChanged, ProcessRef, send_signal

HAS_PIDFD = hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")


class LiveBackend(Backend):
    """The base class's signal_process (what the NVML and AMD backends use), nothing else."""

    name = "live"

    def open(self) -> NodeInfo:  # pragma: no cover - not read in these tests
        raise NotImplementedError

    def read_gpus(self, now, *, slow):  # pragma: no cover
        return []

    def read_processes(self, now):  # pragma: no cover
        return []


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for child in started:
        if child.poll() is None:
            child.kill()
            child.wait(5)


def spawn(children: list[subprocess.Popen[bytes]]) -> tuple[subprocess.Popen[bytes], float]:
    """A child that sleeps until signalled, and its start time as the dashboard records it."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    children.append(child)
    return child, psutil.Process(child.pid).create_time()


def still_running(child: subprocess.Popen[bytes]) -> bool:
    time.sleep(0.2)  # time for a signal, had one been sent, to land
    return child.poll() is None


def test_matching_start_time_delivers_the_signal(children) -> None:
    child, started = spawn(children)
    sampler = Sampler(LiveBackend())
    sampler.signal_process(ProcessRef(child.pid, started), signal.SIGTERM)
    assert child.wait(5) == -signal.SIGTERM


def test_a_reused_pid_is_not_signalled(children) -> None:
    """The dialog captured process A; A exits and (as the kernel may do) its PID goes to B. PID
    reuse cannot be forced, so B's PID stands in for A's: the identity (A's start time) is A's."""
    a, a_started = spawn(children)
    time.sleep(1.2)  # the dialog is open; A's start time is now distinct from anything newer
    a.kill()
    a.wait(5)
    b, _b_started = spawn(children)
    sampler = Sampler(LiveBackend())
    with pytest.raises(ProcessChanged, match=f"PID {b.pid} now belongs to another process"):
        sampler.signal_process(ProcessRef(b.pid, a_started), signal.SIGTERM)
    assert still_running(b)


def test_an_exited_process_is_reported_gone(children) -> None:
    a, a_started = spawn(children)
    a.kill()
    a.wait(5)
    # ProcessChanged only if the PID was reused in these microseconds
    with pytest.raises((ProcessLookupError, ProcessChanged)):
        send_signal(a.pid, signal.SIGTERM, start_time=a_started)


def test_unknown_start_time_is_refused(children) -> None:
    child, _started = spawn(children)
    with pytest.raises(IdentityUnknown, match="start time is unknown"):
        Sampler(LiveBackend()).signal_process(ProcessRef(child.pid, None), signal.SIGTERM)
    assert still_running(child)


def test_a_plain_pid_is_signalled_as_before(children) -> None:
    child, _started = spawn(children)
    LiveBackend().signal_process(child.pid, signal.SIGTERM)
    assert child.wait(5) == -signal.SIGTERM


@pytest.mark.parametrize("pid", [0, -1])
def test_no_process_group_or_broadcast(pid: int) -> None:
    # os.kill(0 or -1) would signal a process group or every process; SIGCONT is harmless anyway
    with pytest.raises(ProcessLookupError):
        send_signal(pid, signal.SIGCONT, start_time=0.0)


@pytest.mark.skipif(not HAS_PIDFD, reason="no pidfd_open / pidfd_send_signal here")
def test_pidfd_is_opened_before_the_check_and_used_to_send(children, monkeypatch) -> None:
    """Open the pidfd, then check the start time, then send through the pidfd: the process the
    pidfd pins is the one checked, whatever happens to the PID in between."""
    child, started = spawn(children)
    calls: list[str] = []
    real_open, real_check = os.pidfd_open, signals.check_identity
    real_send = signal.pidfd_send_signal

    def pidfd_open(pid: int, flags: int = 0) -> int:
        calls.append("open")
        return real_open(pid, flags)

    def check_identity(pid: int, start_time: float | None) -> None:
        calls.append("check")
        real_check(pid, start_time)

    def pidfd_send_signal(fd: int, sig: int, *args: object) -> None:
        calls.append("send")
        real_send(fd, sig)

    def kill(pid: int, sig: int) -> None:
        raise AssertionError("sent by PID, not through the pidfd")

    monkeypatch.setattr(signals.os, "pidfd_open", pidfd_open)
    monkeypatch.setattr(signals, "check_identity", check_identity)
    monkeypatch.setattr(signals.signal, "pidfd_send_signal", pidfd_send_signal)
    monkeypatch.setattr(signals.os, "kill", kill)
    send_signal(child.pid, signal.SIGTERM, start_time=started)
    assert calls == ["open", "check", "send"]
    assert child.wait(5) == -signal.SIGTERM


def test_without_pidfds_the_check_still_comes_first(children, monkeypatch) -> None:
    monkeypatch.setattr(signals, "_open_pidfd", lambda pid: None)  # an older kernel
    a, a_started = spawn(children)
    time.sleep(1.2)
    b, b_started = spawn(children)
    with pytest.raises(ProcessChanged):
        send_signal(b.pid, signal.SIGTERM, start_time=a_started)
    assert still_running(b)
    send_signal(b.pid, signal.SIGTERM, start_time=b_started)
    assert b.wait(5) == -signal.SIGTERM
    assert a.poll() is None


def test_process_ref_is_the_pid() -> None:
    ref = ProcessRef(1234, 5.0)
    assert ref == 1234 and hash(ref) == hash(1234) and {1234: "x"}[ref] == "x"
    assert f"{ref}" == str(ref) == "1234" and ref.start_time == 5.0
