"""Signal the process the user chose, never one that took its PID since.

The dashboard shows a process (PID and start time); the user confirms a signal in a dialog that
may stay open for minutes. By then the process may have exited and its PID been given to another
one (as root: any process on the node). So the PID is checked again right before sending: the
process holding it must have the start time that was shown.

Where Python and the kernel offer pidfds (Linux 5.3+), a pidfd is opened *first*, the start time
checked next, and the signal sent through the pidfd: the pidfd pins the process it was opened
for, so the check and the send are about the same process, with no window for a reuse between
them. Elsewhere the check is followed by ``os.kill`` (a window of microseconds instead of one as
long as the dialog was open).

Some processes are never signalled, whoever asks: PID 1 (init: the node, or the container, goes
down with it), PID 2 (kthreadd) and kernel threads. A garbled process record (a driver and binding
that disagree on the record's size: nvitop PRs #79, #89, #94, #226; gpustat issue #161) can name
them. Nothing is signalled either where gputui does not run in the host's PID namespace: the
driver's PIDs are host PIDs (NVIDIA/nvidia-docker issue #1483), and the same number here may be
another process (:mod:`gputui.host.pidns`).
"""

from __future__ import annotations

import errno
import os
import signal

import psutil

from gputui.host.pidns import detect_pid_namespace, host_pids_only
from gputui.host.procstat import KTHREADD_PID, is_kernel_thread

START_TIME_TOLERANCE_S = 1.0
"""How far the start time read now may be from the one shown and still be the same process
(both come from the same clock; this only absorbs rounding and a stepped wall clock)."""


class ProcessRef(int):
    """A PID that remembers the start time of the process it names (``None``: unknown).

    It is an ``int``, so it passes unchanged through code that takes a PID (the sampler, the
    backends' ``signal_process``); :meth:`Backend.signal_process
    <gputui.backends.base.Backend.signal_process>` checks the identity before sending."""

    start_time: float | None

    def __new__(cls, pid: int, start_time: float | None) -> ProcessRef:
        ref = super().__new__(cls, pid)
        ref.start_time = start_time
        return ref


class SignalRefused(Exception):
    """The signal was not sent: the PID cannot be shown to name the process the user chose."""


class ProcessChanged(SignalRefused):
    """The PID now names another process (the chosen one exited and the PID was reused)."""


class IdentityUnknown(SignalRefused):
    """The chosen process's start time is unknown (or unreadable now), so a reused PID could not
    be told apart from it."""


class ProtectedProcess(SignalRefused):
    """PID 1, PID 2 or a kernel thread: never signalled."""


class OtherPidNamespace(SignalRefused):
    """gputui does not run in the host's PID namespace: the PID may name another process here."""


PROTECTED_PIDS = {1: "init", KTHREADD_PID: "kthreadd"}
"""PIDs never signalled, with what they are in the host's PID namespace."""


def protected_reason(pid: int, kernel_thread: bool | None) -> str | None:
    """Why ``pid`` is never signalled (PID 1, PID 2, a kernel thread); None when it may be."""
    what = PROTECTED_PIDS.get(pid)
    if what is None and kernel_thread:
        what = "a kernel thread"
    if what is None:
        return None
    return (
        f"PID {pid} is {what}: gputui never signals it (a process row naming it comes from a "
        "garbled driver record)"
    )


def namespace_reason(pid: int, proc_root: str = "/proc") -> str | None:
    """Why nothing is signalled from here (gputui is not in the host's PID namespace); None when
    it runs in the host's."""
    if not host_pids_only(detect_pid_namespace(proc_root)):
        return None
    return (
        f"PID {pid} is a host PID (the GPU driver reports those) and gputui does not run in the "
        "host's PID namespace: here it may be another process; nothing sent"
    )


def check_target(pid: int, proc_root: str = "/proc") -> None:
    """Raise :class:`OtherPidNamespace` or :class:`ProtectedProcess` when ``pid`` must not be
    signalled from here, whatever the start time."""
    _check_namespace(pid, proc_root)
    _check_protected(pid, proc_root)


def _check_namespace(pid: int, proc_root: str) -> None:
    reason = namespace_reason(pid, proc_root)
    if reason is not None:
        raise OtherPidNamespace(reason)


def _check_protected(pid: int, proc_root: str) -> None:
    reason = protected_reason(pid, is_kernel_thread(pid, proc_root))
    if reason is not None:
        raise ProtectedProcess(reason)


def send_signal(
    pid: int, sig: signal.Signals, *, start_time: float | None, proc_root: str = "/proc"
) -> None:
    """Send ``sig`` to ``pid`` if it still names the process that started at ``start_time``, and
    may be signalled at all (:func:`check_target`).

    Raises :class:`ProcessChanged`, :class:`IdentityUnknown`, :class:`ProtectedProcess` or
    :class:`OtherPidNamespace` (nothing sent), ``ProcessLookupError`` when no process has that
    PID, ``PermissionError`` like ``os.kill``. ``proc_root``: where ``/proc`` is (tests).
    """
    if pid <= 0:  # os.kill would read these as a process group, or every process
        raise ProcessLookupError(errno.ESRCH, f"no process {pid}")
    _check_namespace(pid, proc_root)  # first: here the PID may name nothing, or another process
    pidfd = _open_pidfd(pid)
    try:
        _check_protected(pid, proc_root)
        check_identity(pid, start_time)
        if pidfd is not None:
            signal.pidfd_send_signal(pidfd, sig)
        else:
            os.kill(pid, sig)
    finally:
        if pidfd is not None:
            os.close(pidfd)


def check_identity(pid: int, start_time: float | None) -> None:
    """Raise unless the process holding ``pid`` started at ``start_time``."""
    if start_time is None:
        raise IdentityUnknown(
            f"PID {pid}: its start time is unknown, so gputui cannot make sure the PID still "
            "belongs to the process shown; nothing sent"
        )
    try:
        actual = psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        raise ProcessLookupError(errno.ESRCH, f"no process {pid}") from None
    except psutil.Error as exc:  # AccessDenied (e.g. /proc mounted with hidepid)
        raise IdentityUnknown(
            f"PID {pid}: cannot read its start time ({exc}), so gputui cannot make sure the PID "
            "still belongs to the process shown; nothing sent"
        ) from None
    if abs(actual - start_time) > START_TIME_TOLERANCE_S:
        raise ProcessChanged(
            f"PID {pid} now belongs to another process (the one shown has exited and its PID "
            "was reused); nothing sent"
        )


def _open_pidfd(pid: int) -> int | None:
    """A pidfd for ``pid``; None where pidfds are not available (then ``os.kill`` is used).
    ``ProcessLookupError`` when no process has that PID."""
    if not (hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")):
        return None
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        raise
    except OSError:  # ENOSYS (an older kernel), EMFILE, a sandbox refusing the call...
        return None


__all__ = [
    "PROTECTED_PIDS",
    "START_TIME_TOLERANCE_S",
    "IdentityUnknown",
    "OtherPidNamespace",
    "ProcessChanged",
    "ProcessRef",
    "ProtectedProcess",
    "SignalRefused",
    "check_identity",
    "check_target",
    "namespace_reason",
    "protected_reason",
    "send_signal",
]
