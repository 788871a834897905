"""Whether the user may signal a process, decided before the UI offers to (no Textual here).

The kernel has the last word (a signal can still fail with EPERM, e.g. across user namespaces);
this check only keeps the UI from offering what will certainly be refused.
"""

from __future__ import annotations

import getpass
import os

from gputui.core.model import PidNamespace, ProcessSample
from gputui.host.pidns import host_pids_only, namespace_note
from gputui.host.signals import protected_reason


def current_username(euid: int | None = None) -> str | None:
    """The name of the effective user: from the password database, else from the environment."""
    if euid is None and hasattr(os, "geteuid"):
        euid = os.geteuid()
    if euid is not None:
        try:
            import pwd

            return pwd.getpwuid(euid).pw_name
        except (ImportError, KeyError):
            pass
    try:
        return getpass.getuser()
    except Exception:  # getuser raises OSError (KeyError before 3.13) when nothing names the user
        return None


def can_signal(
    process: ProcessSample, *, euid: int | None = None, current_user: str | None = None
) -> tuple[bool, str]:
    """``(allowed, reason)``: root may signal anything, others only their own processes.

    ``euid`` and ``current_user`` default to the running process's; tests pass them explicitly.
    The reason is empty when allowed for an ordinary user and says why otherwise.
    """
    if euid is None and hasattr(os, "geteuid"):
        euid = os.geteuid()
    if euid == 0:
        return True, "running as root"
    owner = process.user
    if not owner:
        return False, (
            f"PID {process.pid}: its owner is unknown, so gputui cannot tell whether it is yours "
            "(run as root to signal it)"
        )
    # psutil names a uid with no passwd entry by the number itself.
    if euid is not None and owner == str(euid):
        return True, ""
    if current_user is None:
        current_user = current_username(euid)
    if current_user is None:
        return False, f"PID {process.pid}: cannot tell who you are, so it cannot be signalled"
    if owner == current_user:
        return True, ""
    return False, (
        f"PID {process.pid} belongs to {owner}; only your own processes can be signalled "
        "(run as root to signal others)"
    )


def signal_refusal(process: ProcessSample | None, pid_namespace: PidNamespace | None) -> str | None:
    """Why gputui never signals ``process``, whoever runs it: the PIDs are host PIDs it cannot
    look up here (``pid_namespace``: the node's), or the row names PID 1, PID 2 or a kernel
    thread. None when nothing stands in the way (the user's rights aside: :func:`can_signal`)."""
    if host_pids_only(pid_namespace):
        return namespace_note(pid_namespace)
    if process is None:
        return None
    return protected_reason(process.pid, process.kernel_thread)


__all__ = ["can_signal", "current_username", "signal_refusal"]
