"""A process's environment, from ``/proc/PID/environ``, for the dashboard's environment view.

The kernel lets a process's owner read it (and root, where no ptrace restriction says otherwise):
anything else is an answer that says whose process it is and why it cannot be read, never an
error. The values may hold secrets (tokens, passwords): they are returned to be shown, and
nothing here logs or keeps them.

As for signals (:mod:`gputui.host.signals`), the PID must still name the process shown: its
start time is checked before and after the read, so a PID reused since is not read as if it
were the process the user chose. Nothing is read where gputui does not run in the host's PID
namespace (the driver's PIDs are host PIDs: here the number may name another process), nor for
a simulated or recorded process (its PID names nothing on this machine).
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable

from gputui.core.frozen import frozen
from gputui.core.model import ProcessSample
from gputui.host.signals import (
    IdentityUnknown,
    ProcessChanged,
    check_identity,
    namespace_reason,
)

MAX_ENVIRON_BYTES = 1024 * 1024
"""Read at most this much (an environment is at most a few hundred KiB; any user can make
one bigger)."""


@frozen
class Environ:
    """What was read: the variables in their order, or why nothing was."""

    pid: int
    variables: tuple[tuple[str, str], ...] = ()
    problem: str | None = None
    """Why the environment could not be read (then ``variables`` is empty)."""
    cut: bool = False
    """More than :data:`MAX_ENVIRON_BYTES`: the rest was not read."""


def parse_environ(data: bytes) -> tuple[tuple[str, str], ...]:
    """``NAME=value`` entries separated by NUL bytes, as ``(name, value)``; an entry without
    ``=`` is a name with an empty value."""
    out = []
    for entry in data.split(b"\0"):
        if not entry:
            continue
        name, _, value = entry.decode("utf-8", errors="replace").partition("=")
        out.append((name, value))
    return tuple(out)


def _user_name(uid: int) -> str:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return f"uid {uid}"


def _owner(pid: int, proc_root: str, owner: str | None) -> tuple[str, int | None]:
    """Who owns ``pid`` (name, uid): from ``/proc``, else the name shown in the table."""
    try:
        uid = os.stat(f"{proc_root}/{pid}").st_uid
    except OSError:
        return owner or "another user", None
    return _user_name(uid), uid


def _denied(pid: int, proc_root: str, owner: str | None) -> str:
    whose, uid = _owner(pid, proc_root, owner)
    me = os.geteuid()
    if (uid is not None and uid == me) or me == 0:
        return (
            f"PID {pid} belongs to {whose}, and the kernel does not let gputui read its "
            "environment even so (a ptrace restriction, such as Yama's ptrace_scope, or a "
            "sandbox)"
        )
    return (
        f"PID {pid} belongs to {whose}: only its owner (or root) may read a process's "
        f"environment, and you are {_user_name(me)}"
    )


def _read_bytes(path: str) -> bytes:
    """At most :data:`MAX_ENVIRON_BYTES` and one byte of ``path`` (a seam for tests)."""
    with open(path, "rb") as handle:
        return handle.read(MAX_ENVIRON_BYTES + 1)


def _exited(pid: int) -> Environ:
    return Environ(pid, problem=f"PID {pid} has exited: there is no environment to read")


def read_environ(
    pid: int,
    *,
    start_time: float | None = None,
    owner: str | None = None,
    proc_root: str = "/proc",
) -> Environ:
    """The environment of ``pid`` if it still names the process that started at ``start_time``
    (None: not checked). ``owner``: the user the table shows, for the message when ``/proc``
    no longer says."""
    if pid <= 0:
        return _exited(pid)
    reason = namespace_reason(pid, proc_root)
    if reason is not None:
        return Environ(pid, problem=reason.replace("nothing sent", "its environment is not read"))
    try:
        if start_time is not None:
            _check(pid, start_time)
        data = _read_bytes(f"{proc_root}/{pid}/environ")
        if start_time is not None:
            _check(pid, start_time)  # the PID may have been taken since the first check
    except (FileNotFoundError, ProcessLookupError):
        return _exited(pid)
    except ProcessChanged:
        return Environ(
            pid,
            problem=f"PID {pid} now belongs to another process (the one shown has exited); "
            "its environment is not read",
        )
    except PermissionError:
        return Environ(pid, problem=_denied(pid, proc_root, owner))
    except OSError as exc:
        if exc.errno == errno.ESRCH:
            return _exited(pid)
        return Environ(pid, problem=f"PID {pid}: cannot read its environment ({exc.strerror})")
    cut = len(data) > MAX_ENVIRON_BYTES
    if cut:  # the last entry is incomplete: left out
        data = data[:MAX_ENVIRON_BYTES].rpartition(b"\0")[0]
    return Environ(pid, parse_environ(data), cut=cut)


def _check(pid: int, start_time: float) -> None:
    """Raise ProcessChanged or ProcessLookupError unless ``pid`` started at ``start_time``; a
    start time that cannot be read (``hidepid``) is left to the read's own permission check."""
    with contextlib.suppress(IdentityUnknown):
        check_identity(pid, start_time)


EnvironReader = Callable[[ProcessSample], Environ]


def environ_reader(local: bool, proc_root: str = "/proc") -> EnvironReader:
    """How the dashboard reads a process's environment: from ``/proc`` when the processes are
    this machine's (``local``), else an answer that says there is none to read."""
    if local:
        return lambda p: read_environ(
            p.pid, start_time=p.start_time, owner=p.user, proc_root=proc_root
        )
    return lambda p: Environ(
        p.pid,
        problem=f"PID {p.pid} is a simulated or recorded process, not one on this machine: "
        "it has no environment to read",
    )


__all__ = [
    "MAX_ENVIRON_BYTES",
    "Environ",
    "EnvironReader",
    "environ_reader",
    "parse_environ",
    "read_environ",
]
