"""What ``/proc/PID/stat`` says about a process: its parent and whether it is a kernel thread;
and its command line from ``/proc/PID/cmdline``, read up to a bound.

A process row can name a kernel thread, PID 1 or PID 2 when the driver and its binding disagree on
the size of a process record (NVML's process info v2 and v3 structs: nvitop PRs #79, #89, #94 and
#226, gpustat issue #161): such a row must never be offered a signal, and
:mod:`gputui.host.signals` refuses it. The root of ``/proc`` is a parameter, so tests build fake
ones.

The stat line is ``PID (COMM) STATE PPID PGRP SESSION TTY_NR TPGID FLAGS ...`` (proc(5)). COMM
may hold spaces and parentheses, so the fields are counted after its last ``)``.
"""

from __future__ import annotations

from gputui.core.frozen import frozen
from gputui.core.model import MAX_COMMAND_CHARS

PF_KTHREAD = 0x00200000
"""``#define PF_KTHREAD 0x00200000 /* I am a kernel thread */`` in the kernel's
include/linux/sched.h (the per-task flags; the 9th field of /proc/PID/stat since 2.6.27)."""
KTHREADD_PID = 2
"""kthreadd, the parent of every kernel thread in the host's PID namespace."""
CMDLINE_CUT = f" … [cut at {MAX_COMMAND_CHARS // 1024} KiB]"
"""What ends a command line longer than :data:`~gputui.core.model.MAX_COMMAND_CHARS` bytes."""


@frozen
class ProcStat:
    """The few fields of ``/proc/PID/stat`` gputui reads (None: missing or not a number)."""

    comm: str
    ppid: int | None
    flags: int | None


def parse_stat(text: str) -> ProcStat | None:
    """The fields of one ``/proc/PID/stat`` line; None when it is not one."""
    open_at, close_at = text.find("("), text.rfind(")")
    if open_at < 0 or close_at < open_at:
        return None
    rest = text[close_at + 1 :].split()
    return ProcStat(
        comm=text[open_at + 1 : close_at],
        ppid=_int(rest, 1),  # STATE PPID ...
        flags=_int(rest, 6),  # STATE PPID PGRP SESSION TTY_NR TPGID FLAGS
    )


def read_stat(pid: int, proc_root: str = "/proc") -> ProcStat | None:
    """``/proc/PID/stat`` parsed; None when it cannot be read (no such process, hidepid)."""
    try:
        with open(f"{proc_root}/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            return parse_stat(handle.read())
    except OSError:
        return None


def is_kernel_thread(pid: int, proc_root: str = "/proc") -> bool | None:
    """Whether ``pid`` is a kernel thread: PF_KTHREAD in its flags; where the flags cannot be
    read, a child of kthreadd (or kthreadd itself), else an empty command line (a user process
    has at least its program's name; a zombie's is empty too, and signalling one does nothing).
    None when nothing can be read."""
    stat = read_stat(pid, proc_root)
    if stat is not None and stat.flags is not None:
        return bool(stat.flags & PF_KTHREAD)
    if stat is not None and stat.ppid is not None:
        return KTHREADD_PID in (pid, stat.ppid)
    try:
        with open(f"{proc_root}/{pid}/cmdline", "rb") as handle:
            return not handle.read(1)
    except OSError:
        return None


def read_cmdline(pid: int, proc_root: str = "/proc", limit: int = MAX_COMMAND_CHARS) -> str | None:
    """``/proc/PID/cmdline`` as one line, its arguments joined by spaces (as ``ps`` shows them),
    from at most ``limit`` bytes: a longer one ends with :data:`CMDLINE_CUT`. None when it
    cannot be read or is empty (a kernel thread, a zombie)."""
    try:
        with open(f"{proc_root}/{pid}/cmdline", "rb") as handle:
            data = handle.read(limit + 1)
    except OSError:
        return None
    cut = len(data) > limit
    data = data[:limit] if cut else data.removesuffix(b"\0")
    text = data.replace(b"\0", b" ").decode("utf-8", errors="replace")
    if not text:
        return None
    return text + CMDLINE_CUT if cut else text


def _int(fields: list[str], index: int) -> int | None:
    try:
        return int(fields[index])
    except (IndexError, ValueError):
        return None


__all__ = [
    "CMDLINE_CUT",
    "KTHREADD_PID",
    "PF_KTHREAD",
    "ProcStat",
    "is_kernel_thread",
    "parse_stat",
    "read_cmdline",
    "read_stat",
]
