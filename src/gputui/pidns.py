"""Whether gputui sees the host's PIDs: the ones the GPU driver reports.

The NVIDIA driver does not know PID namespaces: NVML lists host PIDs whoever asks, in a container
too (NVIDIA/nvidia-docker issue #1483: "you will always get the host pids, not the container
pids"). In any PID namespace other than the host's, such a number names no process in the local
``/proc``, or a different one; so there gputui shows the PIDs as they are, looks nothing up, and
signals nothing (:mod:`gputui.host`, :mod:`gputui.signals`).

How it is told, most reliable first (every path under a ``proc_root`` parameter, so tests build
fake ones):

1. ``/proc/self/ns/pid`` links to ``pid:[INODE]``; the host's (initial) PID namespace has the fixed
   inode ``PROC_PID_INIT_INO = 0xEFFFFFFC`` (the kernel's include/linux/proc_ns.h, since 3.8,
   commit 98f842e675f9). This holds whichever ``/proc`` is mounted: the link is the task's own.
2. ``NSpid`` in ``/proc/self/status`` (4.1+) lists one PID per namespace level from the namespace
   of that ``/proc`` mount down: more than one means a nested namespace. One proves nothing: a
   container that mounts its own ``/proc`` sees one entry.
3. PID 2 is kthreadd, a kernel thread, only in the host's namespace (kernel threads live in no
   other); in a container PID 2, if any, is an ordinary process.

With no ``/proc`` at all there are no PID namespaces to be in (not Linux): "host". When none of the
above can be read, "unknown", treated like a container: nothing is looked up or signalled.
"""

from __future__ import annotations

import os
import re

from gputui.model import PidNamespace
from gputui.procstat import KTHREADD_PID, is_kernel_thread

PROC_PID_INIT_INO = 0xEFFFFFFC
"""``PROC_PID_INIT_INO`` in the kernel's include/linux/proc_ns.h: the inode of the initial PID
namespace's ``/proc/PID/ns/pid`` (4026531836)."""

_NS_LINK = re.compile(r"pid:\[(\d+)\]")


def detect_pid_namespace(proc_root: str = "/proc") -> PidNamespace:
    """``host``, ``container`` (any other PID namespace) or ``unknown``; see the module's
    docstring for how."""
    try:
        match = _NS_LINK.fullmatch(os.readlink(f"{proc_root}/self/ns/pid"))
    except OSError:
        match = None
    if match is not None:
        return "host" if int(match.group(1)) == PROC_PID_INIT_INO else "container"
    if _nspid_levels(proc_root) > 1:
        return "container"
    kthreadd = is_kernel_thread(KTHREADD_PID, proc_root)
    if kthreadd is not None:
        return "host" if kthreadd else "container"
    if not os.path.isdir(f"{proc_root}/self"):
        return "host"
    return "unknown"


def in_host_pid_namespace(proc_root: str = "/proc") -> bool:
    """Whether the PIDs the GPU driver reports name the same processes here."""
    return detect_pid_namespace(proc_root) == "host"


def _nspid_levels(proc_root: str) -> int:
    """Entries on the ``NSpid`` line of this process's status (0: no such line)."""
    try:
        with open(f"{proc_root}/self/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("NSpid:"):
                    return len(line.split()) - 1
    except OSError:
        pass
    return 0


def host_pids_only(pid_namespace: PidNamespace | None) -> bool:
    """The PIDs shown are host PIDs that this gputui cannot look up or signal (None: the node's
    backend reports its own processes, e.g. a simulated node)."""
    return pid_namespace in ("container", "unknown")


def namespace_note(pid_namespace: PidNamespace | None) -> str | None:
    """One line saying why processes show no user, command or CPU and cannot be signalled (None
    when they can)."""
    if pid_namespace == "container":
        return (
            "Host PIDs: gputui runs in a container (a PID namespace of its own), so it does not "
            "look them up or signal them."
        )
    if pid_namespace == "unknown":
        return (
            "Host PIDs: gputui cannot tell whether it runs in the host's PID namespace, so it "
            "does not look them up or signal them."
        )
    return None


__all__ = [
    "PROC_PID_INIT_INO",
    "detect_pid_namespace",
    "host_pids_only",
    "in_host_pid_namespace",
    "namespace_note",
]
