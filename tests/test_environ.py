"""Reading a process's environment from /proc: the test's own child process for real, and the
answers for a process that is another user's, has exited, or has handed its PID on."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from tests.fakes.proc import OTHER_NS_INODE, fake_proc

from gputui.core.model import ProcessSample
from gputui.host import environ as environ_module
from gputui.host.environ import MAX_ENVIRON_BYTES, environ_reader, parse_environ, read_environ
from gputui.host.pidns import PROC_PID_INIT_INO

SECRET = "s3cret=value with spaces"


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    """A child process with a known environment (nothing of the test's own)."""
    env = {"GPUTUI_TEST_TOKEN": SECRET, "PATH": os.environ.get("PATH", "/usr/bin")}
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def started(pid: int) -> float:
    return psutil.Process(pid).create_time()


def test_reads_the_environment_of_its_own_child(child) -> None:
    got = read_environ(child.pid, start_time=started(child.pid))
    assert got.problem is None and not got.cut
    assert ("GPUTUI_TEST_TOKEN", SECRET) in got.variables  # split at the first "=" only
    assert "GPUTUI_TEST_TOKEN" in dict(got.variables)


def test_an_exited_process_is_said_to_have_exited(child) -> None:
    pid, start = child.pid, started(child.pid)
    child.kill()
    child.wait()
    got = read_environ(pid, start_time=start)
    assert got.variables == ()
    assert got.problem == f"PID {pid} has exited: there is no environment to read"
    assert read_environ(pid).problem == got.problem  # without the start time too


def test_a_reused_pid_is_not_read(child) -> None:
    """The PID now names a process that started at another time than the one shown."""
    got = read_environ(child.pid, start_time=started(child.pid) - 3600)
    assert got.variables == ()
    assert got.problem is not None and "now belongs to another process" in got.problem


def test_another_users_process_says_whose_and_why(tmp_path, monkeypatch) -> None:
    """The kernel refuses (EACCES): the answer names the owner, from /proc, and who you are."""
    proc = Path(fake_proc(tmp_path, ns_inode=PROC_PID_INIT_INO))  # the host's PID namespace
    (proc / "4242").mkdir()
    owner = psutil.Process().username()

    def refuse(path: str) -> bytes:
        assert path == f"{proc}/4242/environ"
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(environ_module, "_read_bytes", refuse)
    monkeypatch.setattr(environ_module.os, "geteuid", lambda: 54321)  # not the owner, not root
    got = read_environ(4242, owner="bob", proc_root=str(proc))
    assert got.variables == ()
    assert got.problem == (
        f"PID 4242 belongs to {owner}: only its owner (or root) may read a process's "
        "environment, and you are uid 54321"
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root may read other users' environments")
def test_another_users_process_for_real() -> None:
    """PID 1 is root's: an ordinary user is refused by the kernel."""
    got = read_environ(1)
    assert got.variables == ()
    assert got.problem is not None and got.problem.startswith("PID 1 belongs to root: only")


def test_nothing_is_read_outside_the_hosts_pid_namespace(tmp_path, monkeypatch) -> None:
    proc = fake_proc(tmp_path, ns_inode=OTHER_NS_INODE, nspid="1")
    monkeypatch.setattr(environ_module, "_read_bytes", lambda path: pytest.fail("read " + path))
    got = read_environ(os.getpid(), proc_root=proc)
    assert got.variables == ()
    assert got.problem is not None and "its environment is not read" in got.problem


def test_a_huge_environment_is_read_up_to_the_bound(tmp_path, monkeypatch) -> None:
    entry = b"X=" + b"y" * 1000 + b"\0"
    data = entry * (MAX_ENVIRON_BYTES // len(entry) + 5)
    monkeypatch.setattr(environ_module, "_read_bytes", lambda path: data[: MAX_ENVIRON_BYTES + 1])
    got = read_environ(os.getpid())
    assert got.cut and got.problem is None
    assert all(value == "y" * 1000 for _, value in got.variables)  # no entry cut in two


def test_entries_parse_as_name_and_value() -> None:
    data = b"A=1\0B=x=y\0FLAG\0\0C=\xff\0"
    assert parse_environ(data) == (("A", "1"), ("B", "x=y"), ("FLAG", ""), ("C", "\ufffd"))


def test_a_simulated_or_recorded_process_has_none_to_read(monkeypatch) -> None:
    monkeypatch.setattr(environ_module, "_read_bytes", lambda path: pytest.fail("read " + path))
    got = environ_reader(local=False)(ProcessSample(pid=os.getpid(), gpu_index=0))
    assert got.variables == ()
    assert got.problem is not None and "not one on this machine" in got.problem


def test_the_local_reader_reads_the_row_it_is_given(child) -> None:
    row = ProcessSample(pid=child.pid, gpu_index=0, start_time=started(child.pid), user="x")
    assert ("GPUTUI_TEST_TOKEN", SECRET) in environ_reader(local=True)(row).variables
