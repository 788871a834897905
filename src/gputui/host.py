"""Host-side facts from psutil: the host strip (CPU, RAM, swap, load, uptime) and the host half of
each GPU process row (user, name, command line, CPU %, RSS, start time, container id).

psutil.Process objects are cached per PID because CPU % is measured between two calls on the same
object; a PID that has vanished simply keeps its GPU-side facts and gets None for the host ones.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

import psutil

from gputui.model import HostSample, ProcessSample

T = TypeVar("T")

_CONTAINER_ID = re.compile(r"(?:docker|containerd|crio|libpod|cri-containerd)[-/:]([0-9a-f]{64})")
_BARE_ID = re.compile(r"/([0-9a-f]{64})(?:\.scope)?$")


def read_host(now: float | None = None) -> HostSample:
    """One reading of the host. CPU % is since the previous call (the first call reads 0)."""
    now = time.time() if now is None else now
    per_core = tuple(psutil.cpu_percent(percpu=True))
    memory = psutil.virtual_memory()
    swap = psutil.swap_memory()
    try:
        load = tuple(round(x, 2) for x in psutil.getloadavg())
    except (AttributeError, OSError):
        load = None
    return HostSample(
        timestamp=now,
        cpu_pct=round(sum(per_core) / len(per_core), 1) if per_core else None,
        per_core_pct=per_core,
        memory_total_bytes=memory.total,
        memory_used_bytes=memory.total - memory.available,
        memory_available_bytes=memory.available,
        swap_total_bytes=swap.total,
        swap_used_bytes=swap.used,
        load_average=load,  # type: ignore[arg-type]
        uptime_s=max(time.time() - psutil.boot_time(), 0.0),
    )


def container_id_of(pid: int) -> str | None:
    """The 64-hex container id from /proc/PID/cgroup (Docker, containerd, CRI-O, Podman)."""
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    for line in text.splitlines():
        path = line.rsplit(":", 1)[-1]
        match = _CONTAINER_ID.search(path) or _BARE_ID.search(path)
        if match:
            return match.group(1)
    return None


@dataclasses.dataclass(slots=True)
class _Known:
    process: psutil.Process
    user: str | None
    name: str | None
    command: str | None
    start_time: float | None
    container_id: str | None


def in_host_pid_namespace(status_path: str = "/proc/self/status") -> bool:
    """Whether this process sees the host's PIDs (the ones the GPU driver reports). In a nested
    PID namespace (most containers) ``NSpid`` lists one PID per level."""
    try:
        with open(status_path, encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return len(line.split()) <= 2
    except OSError:
        pass
    return True


class ProcessEnricher:
    """Fills the host-side fields of GPU process rows, caching what never changes per PID.

    A PID the driver listed but that no longer exists on the host is marked ``exited`` (it ended
    between the driver's listing and this lookup). In a container that cannot see the host's PIDs
    a missing PID proves nothing, so it is left unmarked."""

    def __init__(self, *, host_pids: bool | None = None) -> None:
        self._known: dict[int, _Known] = {}
        self._host_pids = in_host_pid_namespace() if host_pids is None else host_pids
        self._gone: set[int] = set()

    def enrich(self, processes: Iterable[ProcessSample]) -> list[ProcessSample]:
        rows = list(processes)
        self._gone = set()
        alive: set[int] = set()
        cpu_by_pid: dict[int, tuple[float | None, int | None]] = {}
        for row in rows:
            if row.pid in cpu_by_pid:
                continue
            is_new = row.pid not in self._known
            known = self._lookup(row.pid)
            if known is None:
                cpu_by_pid[row.pid] = (None, None)
                continue
            alive.add(row.pid)
            try:
                with known.process.oneshot():
                    # A process seen for the first time has no CPU interval yet: None, not 0.
                    cpu = None if is_new else round(known.process.cpu_percent(None), 1)
                    rss = known.process.memory_info().rss
                cpu_by_pid[row.pid] = (cpu, rss)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                cpu_by_pid[row.pid] = (None, None)
        for pid in set(self._known) - alive:
            del self._known[pid]
        enriched = []
        for row in rows:
            known = self._known.get(row.pid)
            if known is None:
                gone = row.pid in self._gone and self._host_pids
                enriched.append(dataclasses.replace(row, exited=True) if gone else row)
                continue
            cpu_pct, rss_bytes = cpu_by_pid[row.pid]
            enriched.append(
                dataclasses.replace(
                    row,
                    user=row.user or known.user,
                    name=row.name or known.name,
                    command=row.command or known.command,
                    cpu_pct=cpu_pct if row.cpu_pct is None else row.cpu_pct,
                    host_rss_bytes=rss_bytes if row.host_rss_bytes is None else row.host_rss_bytes,
                    start_time=row.start_time or known.start_time,
                    container_id=row.container_id or known.container_id,
                )
            )
        return enriched

    def _lookup(self, pid: int) -> _Known | None:
        known = self._known.get(pid)
        if known is not None:
            if known.process.is_running():
                return known
            del self._known[pid]  # the PID was reused by a new process
        try:
            process = psutil.Process(pid)
            with process.oneshot():
                name = process.name()
                start = process.create_time()
                user = _safe(process.username)
                cmdline = _safe(process.cmdline)
            process.cpu_percent(None)  # prime: the next call measures from here
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            self._gone.add(pid)
            return None
        except psutil.AccessDenied:
            return None
        command = " ".join(cmdline) if cmdline else None
        known = _Known(process, user, name, command, start, container_id_of(pid))
        self._known[pid] = known
        return known


def _safe(getter: Callable[[], T]) -> T | None:
    try:
        return getter()
    except (psutil.AccessDenied, psutil.ZombieProcess, OSError):
        return None
