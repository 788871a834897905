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
"""

from __future__ import annotations

import errno
import os
import signal

import psutil

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


def send_signal(pid: int, sig: signal.Signals, *, start_time: float | None) -> None:
    """Send ``sig`` to ``pid`` if it still names the process that started at ``start_time``.

    Raises :class:`ProcessChanged` or :class:`IdentityUnknown` (nothing sent),
    ``ProcessLookupError`` when no process has that PID, ``PermissionError`` like ``os.kill``.
    """
    if pid <= 0:  # os.kill would read these as a process group, or every process
        raise ProcessLookupError(errno.ESRCH, f"no process {pid}")
    pidfd = _open_pidfd(pid)
    try:
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
    "START_TIME_TOLERANCE_S",
    "IdentityUnknown",
    "ProcessChanged",
    "ProcessRef",
    "SignalRefused",
    "check_identity",
    "send_signal",
]
