"""What a GPU process works for, as views show it: one label per process (the JOB / POD
column), the words the process filter matches, and usage summed per Slurm job, pod and container.

Pure functions over :class:`~gputui.core.model.ProcessSample` (no Textual): the dashboard, the text
report and the exporter share them. A process is attributed to the most specific thing people
manage: its Slurm job, else its Kubernetes pod, else its container.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from gputui.core.frozen import frozen
from gputui.core.model import ProcessSample
from gputui.host.attribution import is_rootless

WorkloadKind = Literal["slurm", "pod", "container"]
COLUMN_TITLE = "JOB / POD"
SHORT_ID = 12
"""Characters of a container id shown when its name is not known (as ``docker ps`` does)."""
SHORT_UID = 8


@frozen
class Workload:
    """The Slurm job, pod or container a process runs in."""

    kind: WorkloadKind
    key: str
    """Identity: the job id, the pod UID, the container id (a rootless container's with its
    runtime before it: ``rootless podman:<id>``)."""
    label: str
    """What a view shows: ``job 4242 train``, ``pod ml/trainer-0``, ``ctr vllm``."""


def short_container(p: ProcessSample) -> str | None:
    """The container's name, else its short id; None outside a container."""
    if p.container_name:
        return p.container_name
    return p.container_id[:SHORT_ID] if p.container_id else None


def pod_label(p: ProcessSample) -> str | None:
    """``namespace/name``, the name, or the UID's first characters; None outside a pod."""
    if p.k8s_pod_uid is None and p.k8s_pod_name is None:
        return None
    name = p.k8s_pod_name or (p.k8s_pod_uid or "")[:SHORT_UID]
    return f"{p.k8s_namespace}/{name}" if p.k8s_namespace and p.k8s_pod_name else name


def workload_of(p: ProcessSample) -> Workload | None:
    """The process's Slurm job, else its pod, else its container; None when it has none."""
    if p.slurm_job_id:
        label = f"job {p.slurm_job_id}"
        if p.slurm_job_name:
            label += f" {p.slurm_job_name}"
        return Workload("slurm", p.slurm_job_id, label)
    pod = pod_label(p)
    if pod is not None:
        return Workload("pod", p.k8s_pod_uid or pod, f"pod {pod}")
    container = short_container(p)
    if container is not None:
        key = p.container_id or container
        if is_rootless(p.container_runtime):  # a user's own: never summed with root's of that id
            key = f"{p.container_runtime}:{key}"
        return Workload("container", key, f"ctr {container}")
    return None


def workload_label(p: ProcessSample) -> str:
    """The JOB / POD cell of a process ('' when it has none)."""
    workload = workload_of(p)
    return "" if workload is None else workload.label


def has_workloads(processes: Iterable[ProcessSample]) -> bool:
    """Whether any process has a job, pod or container (then the JOB / POD column shows)."""
    return any(workload_of(p) is not None for p in processes)


def workload_words(p: ProcessSample) -> str:
    """Every attribution word of a process, lower case, for the process filter (``/``): job id,
    step, name and user, pod name, namespace and UID, container name, id and runtime."""
    words = [
        p.slurm_job_id and f"job {p.slurm_job_id}",
        p.slurm_step and f"step {p.slurm_step}",
        p.slurm_job_name,
        p.slurm_job_user,
        p.k8s_pod_name and f"pod {p.k8s_pod_name}",
        p.k8s_namespace,
        p.k8s_pod_uid,
        p.container_name,
        p.container_id,
        p.container_runtime,
    ]
    return " ".join(w for w in words if w).lower()


def attribution_rows(p: ProcessSample) -> list[tuple[str, str]]:
    """(label, value) lines for a process's detail view; only what is known."""
    rows: list[tuple[str, str]] = []
    if p.slurm_job_id:
        job = p.slurm_job_id + (f" step {p.slurm_step}" if p.slurm_step else "")
        rows.append(("Slurm job", job))
        if p.slurm_job_name:
            rows.append(("Job name", p.slurm_job_name))
        if p.slurm_job_user:
            rows.append(("Job user", p.slurm_job_user))
    if p.k8s_pod_uid or p.k8s_pod_name:
        rows.append(("Pod", pod_label(p) or ""))
        if p.k8s_pod_uid:
            rows.append(("Pod UID", p.k8s_pod_uid))
    if p.container_id or p.container_name:
        name = short_container(p) or ""
        runtime = f" ({p.container_runtime})" if p.container_runtime else ""
        rows.append(("Container", name + runtime))
        if p.container_id:
            rows.append(("Container id", p.container_id))
    return rows


@frozen
class WorkloadUsage:
    """What one job, pod or container holds on one GPU."""

    workload: Workload
    gpu_index: int
    processes: int
    gpu_memory_bytes: int | None
    """Summed over its processes on the GPU; None when no process reports memory."""
    sm_pct: float | None
    """Summed SM % of its processes on the GPU (their share of the GPU); None when none
    reports it."""


def usage_by(
    processes: Iterable[ProcessSample], kind: WorkloadKind | None = None
) -> list[WorkloadUsage]:
    """Usage per workload and GPU, in (kind, key, GPU) order. ``kind``: only jobs, pods or
    containers (a process counts once, under :func:`workload_of`'s choice)."""
    memory: dict[tuple[WorkloadKind, str, int], int | None] = {}
    sm: dict[tuple[WorkloadKind, str, int], float | None] = {}
    count: dict[tuple[WorkloadKind, str, int], int] = {}
    found: dict[tuple[WorkloadKind, str], Workload] = {}
    for p in processes:
        workload = workload_of(p)
        if workload is None or (kind is not None and workload.kind != kind):
            continue
        key = (workload.kind, workload.key, p.gpu_index)
        # a later label (the job's name arrived) wins over an earlier one
        found[(workload.kind, workload.key)] = workload
        count[key] = count.get(key, 0) + 1
        if p.gpu_memory_bytes is not None:
            memory[key] = (memory.get(key) or 0) + p.gpu_memory_bytes
        else:
            memory.setdefault(key, None)
        if p.sm_pct is not None:
            sm[key] = (sm.get(key) or 0.0) + p.sm_pct
        else:
            sm.setdefault(key, None)
    return [
        WorkloadUsage(found[(k, w)], gpu, count[(k, w, gpu)], memory[(k, w, gpu)], sm[(k, w, gpu)])
        for (k, w, gpu) in sorted(count)
    ]


__all__ = [
    "COLUMN_TITLE",
    "Workload",
    "WorkloadKind",
    "WorkloadUsage",
    "attribution_rows",
    "has_workloads",
    "pod_label",
    "short_container",
    "usage_by",
    "workload_label",
    "workload_of",
    "workload_words",
]
