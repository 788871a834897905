"""The exporter's series of who the scheduler allocated each GPU to (:mod:`gputui.core.allocation`).

Per GPU a job or pod holds (labels ``gpu``, ``slurm_job``, ``pod``, ``namespace``, ``user``; an
empty label is an absent one):

``gputui_gpu_allocated``                   1
``gputui_gpu_allocated_idle``              1 while it does no work (no process, or memory held
                                           with no work), else 0: what the fleet view counts
``gputui_gpu_allocated_idle_seconds_total`` seconds allocated and idle since the exporter first
                                           saw the allocation (a counter; a new job is a new
                                           series)

Per job or pod, with a price of a GPU-hour: ``gputui_allocation_idle_cost`` (``slurm_job``,
``pod``, ``namespace``, ``user``), its GPUs' idle seconds x the price. Named for the allocation,
not ``gputui_job_*``: those families are Slurm jobs only, and this one covers pods too. Per
scheduler asked: ``gputui_scheduler_up`` (``scheduler``: ``slurm``, ``kubernetes``), 1 while its
answer is used, 0 when it has gone silent; without it (no scheduler here) the fleet view says
nothing about allocations. MIG instances of one GPU held by one owner are one series (summed).
"""

from __future__ import annotations

from typing import Protocol

from gputui.core.allocation import Allocation
from gputui.core.model import Snapshot


class Sink(Protocol):
    """Where families go (the collector's; it passes label values through ``label_value``)."""

    def gauge(self, name: str, doc: str, labels: dict[str, str], value: float) -> None: ...

    def counter(self, name: str, doc: str, labels: dict[str, str], value: float) -> None: ...


ALLOCATION_LABELS = ("slurm_job", "pod", "namespace", "user")


def owner_labels(a: Allocation) -> dict[str, str]:
    return {
        "slurm_job": a.job_id or "",
        "pod": a.pod_name or a.pod_uid or "",
        "namespace": a.namespace or "",
        "user": a.user or "",
    }


def allocation_series(out: Sink, snapshot: Snapshot) -> None:
    """The allocation families of ``snapshot`` into ``out``."""
    for status in snapshot.schedulers:
        out.gauge(
            "gputui_scheduler_up",
            "1 while the scheduler's allocations are read (Slurm, the kubelet), 0 when it has "
            "stopped answering.",
            {"scheduler": status.scheduler},
            1.0 if status.state in ("ok", "stale") else 0.0,
        )
    per_gpu: dict[tuple[str, ...], tuple[bool, float]] = {}
    per_owner: dict[tuple[str, ...], float] = {}
    for a in snapshot.allocations:
        if a.gpu_index is None or a.state == "free":
            continue
        owner = owner_labels(a)
        key = (str(a.gpu_index), *owner.values())
        idle, seconds = per_gpu.get(key, (False, 0.0))
        per_gpu[key] = (idle or a.idle, seconds + a.idle_s)
        if a.idle_cost is not None:
            owner_key = tuple(owner.values())
            per_owner[owner_key] = per_owner.get(owner_key, 0.0) + a.idle_cost
    for key, (idle, seconds) in sorted(per_gpu.items()):
        labels = dict(zip(("gpu", *ALLOCATION_LABELS), key, strict=True))
        out.gauge(
            "gputui_gpu_allocated",
            "A GPU the scheduler allocated to a Slurm job or a pod (always 1).",
            labels,
            1.0,
        )
        out.gauge(
            "gputui_gpu_allocated_idle",
            "1 while an allocated GPU does no work (no process, or memory held with no "
            "utilization), else 0.",
            labels,
            1.0 if idle else 0.0,
        )
        out.counter(
            "gputui_gpu_allocated_idle_seconds",
            "Seconds an allocated GPU did no work, since the exporter first saw the allocation.",
            labels,
            seconds,
        )
    for owner_key, cost in sorted(per_owner.items()):
        out.gauge(
            "gputui_allocation_idle_cost",
            "What a job's or pod's allocated GPUs cost while idle (idle GPU-hours x the price "
            "of a GPU-hour), since the exporter first saw them.",
            dict(zip(ALLOCATION_LABELS, owner_key, strict=True)),
            cost,
        )


__all__ = ["ALLOCATION_LABELS", "Sink", "allocation_series", "owner_labels"]
