"""Whether gputui sees the host's PIDs: the ones the GPU driver reports.

The NVIDIA driver does not know PID namespaces: NVML lists host PIDs whoever asks, in a container
too (NVIDIA/nvidia-docker issue #1483: "you will always get the host pids, not the container
pids"). In any PID namespace other than the host's, such a number names no process in the local
``/proc``, or a different one; so there gputui shows the PIDs as they are, looks nothing up, and
signals nothing (:mod:`gputui.host.processes`, :mod:`gputui.host.signals`).

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

Even in the host's namespace, ``/proc`` mounted with ``hidepid`` hides other users' processes
(:func:`proc_hides_processes`): a PID missing there may name a live process, not an exited one.
"""

from __future__ import annotations

import os
import re

from gputui.core.model import PidNamespace
from gputui.host.procstat import KTHREADD_PID, is_kernel_thread

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


_HIDING = frozenset({"1", "2", "4", "noaccess", "invisible", "ptraceable"})
"""``hidepid`` values that keep other users' processes from a caller (the kernel's
Documentation/filesystems/proc.rst): ``noaccess`` (1) their ``/proc/PID`` cannot be read,
``invisible`` (2) it is not listed at all, ``ptraceable`` (4) only what the caller may ptrace is
listed. ``off`` (0) hides nothing; ``subset=pid`` leaves out the non-process files, not
processes."""


def proc_hides_processes(proc_root: str = "/proc") -> bool | None:
    """Whether ``proc_root`` is mounted with a ``hidepid`` that hides processes from this caller,
    read from ``<proc_root>/self/mountinfo`` (else ``<proc_root>/mounts``); None when it cannot be
    told. A ``/proc`` mounted more than once over the same place is judged by the last mount,
    the one that shows. Whoever may see past ``hidepid`` (its ``gid=`` group, a caller with
    CAP_SYS_PTRACE) is not told apart: a missing PID proves nothing there either."""
    if not os.path.isdir(f"{proc_root}/self"):
        return False  # no procfs (not Linux): nothing to hide processes with
    mounts = _proc_mounts(proc_root)
    if mounts is None:
        return None
    wanted = os.path.normpath(proc_root)
    options = [o for point, o in mounts if point == wanted] or [
        o for point, o in mounts if point == "/proc"
    ]
    if not options:
        return None
    return any(
        name == "hidepid" and value in _HIDING
        for option in options[-1]
        for name, _, value in [option.partition("=")]
    )


def _proc_mounts(proc_root: str) -> list[tuple[str, list[str]]] | None:
    """(mount point, options) of each procfs mount, in mount order; None when unreadable."""
    found: list[tuple[str, list[str]]] = []
    try:
        with open(f"{proc_root}/self/mountinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                # ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER-OPTIONS
                left, sep, right = line.partition(" - ")
                fields, tail = left.split(), right.split()
                if sep and len(fields) >= 6 and len(tail) >= 3 and tail[0] == "proc":
                    opts = fields[5].split(",") + tail[2].split(",")
                    found.append((_unescape(fields[4]), opts))
        return found
    except OSError:
        pass
    try:
        with open(f"{proc_root}/mounts", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                fields = line.split()  # SOURCE POINT TYPE OPTIONS 0 0
                if len(fields) >= 4 and fields[2] == "proc":
                    found.append((_unescape(fields[1]), fields[3].split(",")))
        return found
    except OSError:
        return None


def _unescape(path: str) -> str:
    """A mount point as the kernel writes it (space, tab, newline and backslash as octal)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)


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
    "proc_hides_processes",
]
