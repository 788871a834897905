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
from tests.fakes.proc import OTHER_NS_INODE, fake_proc, stat_line

from gputui.backends.base import Backend
from gputui.core.model import NodeInfo
from gputui.engine.sampler import Sampler
from gputui.host import signals
from gputui.host.pidns import PROC_PID_INIT_INO
from gputui.host.procstat import PF_KTHREAD, is_kernel_thread
from gputui.host.signals import (
    IdentityUnknown,
    OtherPidNamespace,
    ProcessChanged,
    ProcessRef,
    ProtectedProcess,
    SignalRefused,
    check_target,
    send_signal,
)

HAS_PIDFD = hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")


@pytest.fixture(autouse=True)
def own_children_as_on_a_host(monkeypatch) -> None:
    """The children these tests signal are this PID namespace's own (not PIDs from a driver), so
    the real /proc counts as the host's even when the tests run in a container; the refusal
    outside the host's namespace is tested on fake /proc roots."""
    real = signals.detect_pid_namespace

    def detect(proc_root: str = "/proc") -> str:
        return "host" if proc_root == "/proc" else real(proc_root)

    monkeypatch.setattr(signals, "detect_pid_namespace", detect)


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


# -- never PID 1, PID 2 or a kernel thread; nothing outside the host's PID namespace -------------


@pytest.fixture
def sent(monkeypatch) -> list[tuple[int, int]]:
    """Signals that would have been sent (pidfd or os.kill): recorded, never delivered. Signal 0
    (a liveness probe psutil makes) still goes through."""
    out: list[tuple[int, int]] = []
    real_kill = os.kill

    def kill(pid: int, sig: int) -> None:
        if sig == 0:
            real_kill(pid, 0)
        else:
            out.append((pid, sig))

    def pidfd_send_signal(fd: int, sig: int, *args: object) -> None:
        out.append((fd, sig))

    monkeypatch.setattr(signals.os, "kill", kill)
    if HAS_PIDFD:
        monkeypatch.setattr(signals.signal, "pidfd_send_signal", pidfd_send_signal)
    return out


@pytest.mark.parametrize("pid", [1, 2])
def test_pid_1_and_pid_2_are_never_signalled(sent, pid: int) -> None:
    """The real PID 1 (and kthreadd where this namespace has one), with their real start times:
    refused by the backend, by PID or by ProcessRef, and nothing leaves."""
    if not psutil.pid_exists(pid):
        pytest.skip(f"no PID {pid} in this PID namespace")
    started = psutil.Process(pid).create_time()
    with pytest.raises(ProtectedProcess, match=f"PID {pid} is"):
        LiveBackend().signal_process(ProcessRef(pid, started), signal.SIGCONT)
    with pytest.raises(ProtectedProcess):
        LiveBackend().signal_process(pid, signal.SIGCONT)
    with pytest.raises(ProtectedProcess):
        send_signal(pid, signal.SIGCONT, start_time=started)
    assert sent == []


def _a_kernel_thread() -> int | None:
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) > 2 and is_kernel_thread(int(entry)):
            return int(entry)
    return None


def test_a_real_kernel_thread_is_never_signalled(sent) -> None:
    pid = _a_kernel_thread()
    if pid is None:
        pytest.skip("no kernel thread visible in this PID namespace")
    try:
        started = psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        pytest.skip("the kernel thread ended")
    with pytest.raises(ProtectedProcess, match="kernel thread"):
        LiveBackend().signal_process(ProcessRef(pid, started), signal.SIGCONT)
    assert sent == []


class FakeProcBackend(LiveBackend):
    def __init__(self, proc_root: str) -> None:
        self.proc_root = proc_root


def test_a_pid_that_proc_shows_as_a_kernel_thread_is_refused(tmp_path, children) -> None:
    """A live child stands in for the PID; the fake /proc says its flags carry PF_KTHREAD (as a
    garbled driver record naming a kernel thread would meet)."""
    child, started = spawn(children)
    root = fake_proc(tmp_path / "proc", ns_inode=PROC_PID_INIT_INO)
    stat = tmp_path / "proc" / str(child.pid)
    stat.mkdir()
    (stat / "stat").write_text(stat_line(child.pid, "kworker/3:0", ppid=2, flags=PF_KTHREAD))
    with pytest.raises(ProtectedProcess, match="kernel thread"):
        FakeProcBackend(root).signal_process(ProcessRef(child.pid, started), signal.SIGTERM)
    with pytest.raises(ProtectedProcess):
        FakeProcBackend(root).signal_process(child.pid, signal.SIGTERM)
    assert still_running(child)
    (stat / "stat").write_text(stat_line(child.pid, "python", ppid=os.getpid()))
    check_target(child.pid, root)  # an ordinary process: nothing in the way
    for pid in (1, 2):  # by number, whatever /proc says
        with pytest.raises(ProtectedProcess):
            check_target(pid, root)


@pytest.mark.parametrize(
    "proc",
    [{"ns_inode": OTHER_NS_INODE, "nspid": "1"}, {"nspid": "4242"}],
    ids=["container", "unknown"],
)
def test_outside_the_host_pid_namespace_nothing_is_signalled(tmp_path, children, proc) -> None:
    """In a container the driver's PIDs are host PIDs: the same number here (this live child)
    may be another process. Refused even with a matching start time, and by plain PID."""
    child, started = spawn(children)
    backend = FakeProcBackend(fake_proc(tmp_path / "proc", **proc))
    with pytest.raises(OtherPidNamespace, match="host PID"):
        Sampler(backend).signal_process(ProcessRef(child.pid, started), signal.SIGTERM)
    with pytest.raises(SignalRefused):
        backend.signal_process(child.pid, signal.SIGTERM)
    assert still_running(child)
