"""Host-side facts from psutil: the host strip (CPU, RAM, swap, load, uptime) and the host half of
each GPU process row (user, name, command line, CPU %, RSS, start time, the parent's PID and name,
and what the process runs in: container, Kubernetes pod, Slurm job; see
:mod:`gputui.host.attribution`).

psutil.Process objects are cached per PID because CPU % is measured between two calls on the same
object; a PID that has vanished simply keeps its GPU-side facts and gets None for the host ones.
The attribution is read once per process (a PID's cgroup does not change) and kept with it; Slurm
job names come from a background lookup (:mod:`gputui.host.slurmjobs`) and fill in when it answers.

The driver reports host PIDs (NVIDIA/nvidia-docker issue #1483). Where gputui does not run in the
host's PID namespace (:mod:`gputui.host.pidns`), the same number in the local ``/proc`` is nothing
or another process: rows are then marked ``not_visible``, nothing looked up. In the host's namespace
a PID missing from a ``/proc`` mounted with ``hidepid`` is ``not_visible`` too, not ``exited``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

import psutil

from gputui.core.model import MAX_NAME_CHARS, HostSample, PidNamespace, ProcessSample
from gputui.host.attribution import Attribution, AttributionReader
from gputui.host.pidns import detect_pid_namespace, proc_hides_processes
from gputui.host.procstat import is_kernel_thread, read_cmdline
from gputui.host.slurmjobs import SlurmJobs

T = TypeVar("T")


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


@dataclasses.dataclass(slots=True)
class _Known:
    process: psutil.Process
    user: str | None
    uid: int | None
    name: str | None
    command: str | None
    start_time: float | None
    attribution: Attribution
    kernel_thread: bool
    ppid: int | None = None
    parent_name: str | None = None


class ProcessEnricher:
    """Fills the host-side fields of GPU process rows, caching what never changes per PID.

    A PID the driver listed but that no longer exists on the host is marked ``exited`` (it ended
    between the driver's listing and this lookup), where that is proof: in the host's PID
    namespace, with a ``/proc`` that hides no process. Where ``/proc`` hides other users'
    processes (``hidepid``) such a PID is marked ``not_visible``; outside the host's PID
    namespace nothing is looked up and every row is ``not_visible``."""

    def __init__(
        self,
        *,
        host_pids: bool | None = None,
        proc_root: str = "/proc",
        attribution: AttributionReader | None = None,
        slurm: SlurmJobs | None = None,
    ) -> None:
        """``host_pids``: whether gputui sees the host's PIDs (default: told from ``proc_root``,
        see :mod:`gputui.host.pidns`); ``attribution`` reads cgroups and engine state (default: this
        machine's roots); ``slurm`` looks up job names (default: ``scontrol`` where it is
        installed)."""
        self._known: dict[int, _Known] = {}
        self.proc_root = proc_root
        self.pid_namespace: PidNamespace = (
            detect_pid_namespace(proc_root)
            if host_pids is None
            else ("host" if host_pids else "container")
        )
        """Where gputui runs (the sampler puts it on the node, so every view can say so)."""
        self._host_pids = self.pid_namespace == "host"
        self._exits_proven = self._host_pids and proc_hides_processes(proc_root) is False
        """A PID missing here has exited (no ``hidepid`` hides a live one)."""
        self._gone: set[int] = set()
        self.attribution = attribution if attribution is not None else AttributionReader()
        self.slurm = slurm if slurm is not None else SlurmJobs()

    def enrich(self, processes: Iterable[ProcessSample]) -> list[ProcessSample]:
        rows = list(processes)
        if not self._host_pids:  # host PIDs: here they name nothing, or other processes
            return [dataclasses.replace(row, not_visible=True) for row in rows]
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
                if row.pid in self._gone and self._exits_proven:
                    row = dataclasses.replace(row, exited=True)
                elif row.pid in self._gone:  # hidepid: gone, or only hidden from this user
                    row = dataclasses.replace(row, not_visible=True)
                enriched.append(row)
                continue
            cpu_pct, rss_bytes = cpu_by_pid[row.pid]
            found = self._owned(known)  # what the backend gave wins over what was read
            job = row.slurm_job_id or found.slurm_job_id
            job_name, job_user = self._job_facts(row, job)
            enriched.append(
                dataclasses.replace(
                    row,
                    user=row.user or known.user,
                    name=row.name or known.name,
                    command=row.command or known.command,
                    cpu_pct=cpu_pct if row.cpu_pct is None else row.cpu_pct,
                    host_rss_bytes=rss_bytes if row.host_rss_bytes is None else row.host_rss_bytes,
                    start_time=row.start_time or known.start_time,
                    kernel_thread=row.kernel_thread or known.kernel_thread,
                    container_id=row.container_id or found.container_id,
                    container_runtime=row.container_runtime or found.container_runtime,
                    container_name=row.container_name or found.container_name,
                    slurm_job_id=job,
                    slurm_step=row.slurm_step or found.slurm_step,
                    slurm_job_name=job_name,
                    slurm_job_user=job_user,
                    k8s_pod_uid=row.k8s_pod_uid or found.k8s_pod_uid,
                    k8s_pod_name=row.k8s_pod_name or found.k8s_pod_name,
                    k8s_namespace=row.k8s_namespace or found.k8s_namespace,
                    ppid=row.ppid or known.ppid,
                    parent_name=row.parent_name or known.parent_name,
                )
            )
        return enriched

    def _owned(self, known: _Known) -> Attribution:
        """The process's attribution, less its Slurm job when ``scontrol`` says the job is
        another user's (then it is not that job's process, whatever its cgroup says)."""
        found = known.attribution
        if found.slurm_job_id is None:
            return found
        info = self.slurm.lookup(found.slurm_job_id)
        if info is None or info.owned_by(known.uid, known.user) is not False:
            return found
        return dataclasses.replace(found, slurm_job_id=None, slurm_step=None)

    def close(self) -> None:
        """Stop the background job-name lookups (an ``scontrol`` still running is killed)."""
        self.slurm.close()

    def _job_facts(self, row: ProcessSample, job: str | None) -> tuple[str | None, str | None]:
        """The Slurm job's name and user: the row's, else what the background lookup has
        found so far (it never waits: None until ``scontrol`` has answered)."""
        name, user = row.slurm_job_name, row.slurm_job_user
        if job is not None and (name is None or user is None):
            info = self.slurm.lookup(job)
            if info is not None:
                name, user = name or info.name, user or info.user
        return name, user

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
                uids = _safe(process.uids)
                ppid = _safe(process.ppid)
            process.cpu_percent(None)  # prime: the next call measures from here
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            self._gone.add(pid)
            return None
        except psutil.AccessDenied:
            return None
        command = read_cmdline(pid, self.proc_root)  # bounded: any user can make it megabytes
        name, user = name[:MAX_NAME_CHARS], user and user[:MAX_NAME_CHARS]
        kthread = bool(is_kernel_thread(pid, self.proc_root))
        uid = None if uids is None else uids.real
        attribution = self.attribution.read(pid, owner_uid=uid)
        parent = _parent_name(ppid)
        known = _Known(
            process, user, uid, name, command, start, attribution, kthread, ppid or None, parent
        )
        self._known[pid] = known
        return known


def _parent_name(ppid: int | None) -> str | None:
    """The parent's name (the process tree's label for processes that share it)."""
    if not ppid:
        return None
    try:
        return psutil.Process(ppid).name()[:MAX_NAME_CHARS]
    except (psutil.Error, OSError):
        return None


def _safe(getter: Callable[[], T]) -> T | None:
    try:
        return getter()
    except (psutil.AccessDenied, psutil.ZombieProcess, OSError):
        return None
