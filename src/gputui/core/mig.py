"""MIG instances as the reports show them: under their parent GPU, with profile, GPU / compute
instance ids, memory and the processes running in them.

A GPU in MIG mode lists its instances in ``GpuInfo.mig_devices`` (static: ids, profile, size),
reads their memory in ``GpuSample.mig_devices`` (matched by UUID) and tags each process running
in one with ``ProcessSample.mig_uuid``. This module joins the three for the text report, the
check and the exporter; it imports nothing but the model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from gputui.core.frozen import frozen
from gputui.core.model import (
    Finding,
    GpuInfo,
    GpuSample,
    MigDeviceInfo,
    MigSample,
    ProcessSample,
    Snapshot,
)

_PROFILE = re.compile(r"\b\d+g\.\d+gb(?:\+\w+)?\b", re.IGNORECASE)
_PID = re.compile(r"\bPID (\d+)\b")


def mig_profile(name: str | None) -> str:
    """The profile of a MIG instance from its NVML name: ``1g.10gb`` from ``NVIDIA H100 80GB
    HBM3 MIG 1g.10gb`` (or from ``1g.10gb``); the name itself when it names no profile, ``MIG``
    when there is no name."""
    if not name:
        return "MIG"
    found = _PROFILE.search(name)
    return found.group(0) if found else name


def instance_label(info: MigDeviceInfo) -> str:
    """``1g.10gb GI 7 CI 0``: how an instance is named in reports (``nvidia-smi``'s ids)."""
    return f"{mig_profile(info.name)} GI {info.gpu_instance_id} CI {info.compute_instance_id}"


def instance_tag(info: MigDeviceInfo) -> str:
    """``g7`` for GPU instance 7 (``g7c1`` when the compute instance is not 0): what a process
    table writes after the parent GPU's index, ``3·g7``."""
    ci = info.compute_instance_id
    return f"g{info.gpu_instance_id}" + (f"c{ci}" if ci else "")


def process_gpu_text(p: ProcessSample, instances: Mapping[str, MigDeviceInfo]) -> str:
    """A process's GPU as a table shows it: ``3``, or ``3·g7`` when it runs in GPU instance 7
    of GPU 3 (``instances``: :func:`instances_by_uuid`); an instance the node does not list
    reads ``3·?``."""
    if p.mig_uuid is None:
        return str(p.gpu_index)
    info = instances.get(p.mig_uuid)
    return f"{p.gpu_index}·{instance_tag(info) if info is not None else '?'}"


def process_gpu_order(
    p: ProcessSample, instances: Mapping[str, MigDeviceInfo]
) -> tuple[int, int, int]:
    """Sort key of a process's GPU: the parent's index, then the GPU and compute instance ids
    (a process on the whole GPU first)."""
    info = instances.get(p.mig_uuid) if p.mig_uuid is not None else None
    if info is None:
        return (p.gpu_index, -1, -1)
    return (p.gpu_index, info.gpu_instance_id, info.compute_instance_id)


@frozen
class MigView:
    """One MIG instance with its reading and its processes."""

    info: MigDeviceInfo
    sample: MigSample | None
    processes: tuple[ProcessSample, ...]

    @property
    def profile(self) -> str:
        return mig_profile(self.info.name)

    @property
    def label(self) -> str:
        return instance_label(self.info)

    @property
    def memory_used_bytes(self) -> int | None:
        return self.sample.memory_used_bytes if self.sample is not None else None

    @property
    def memory_total_bytes(self) -> int | None:
        total = self.sample.memory_total_bytes if self.sample is not None else None
        return total if total is not None else self.info.memory_total_bytes


def mig_views(snapshot: Snapshot, gpu_index: int) -> tuple[MigView, ...]:
    """The MIG instances of GPU ``gpu_index`` in the node's order; () when it has none."""
    info = snapshot.node.gpu(gpu_index)
    if info is None or not info.mig_devices:
        return ()
    procs: dict[str, list[ProcessSample]] = {}
    for p in snapshot.processes:
        if p.gpu_index == gpu_index and p.mig_uuid is not None:
            procs.setdefault(p.mig_uuid, []).append(p)
    return instance_views(info, snapshot.sample(gpu_index), procs)


def instance_views(
    info: GpuInfo,
    sample: GpuSample | None,
    processes: Mapping[str, Iterable[ProcessSample]] | None = None,
) -> tuple[MigView, ...]:
    """The MIG instances of one GPU with their readings from ``sample`` (and their processes,
    by instance UUID, when given), in the node's order: what a GPU panel shows of them."""
    readings = {m.uuid: m for m in sample.mig_devices} if sample is not None else {}
    procs = processes or {}
    return tuple(
        MigView(m, readings.get(m.uuid), tuple(procs.get(m.uuid, ()))) for m in info.mig_devices
    )


def has_mig(snapshot: Snapshot) -> bool:
    """Whether any GPU of the node is in MIG mode."""
    return any(g.mig_enabled for g in snapshot.node.gpus)


def instances_by_uuid(snapshot: Snapshot) -> dict[str, MigDeviceInfo]:
    return {m.uuid: m for g in snapshot.node.gpus for m in g.mig_devices}


def describe_processes(procs: Iterable[ProcessSample], limit: int = 3) -> str:
    """``PID 713382 (svc-chat vllm), PID 1354420 (svc-chat vllm) +2 more``; ``no processes``."""
    listed = list(procs)
    if not listed:
        return "no processes"
    parts = [f"PID {p.pid} ({p.user or '?'} {p.name or '?'})" for p in listed[:limit]]
    more = f" +{len(listed) - limit} more" if len(listed) > limit else ""
    return ", ".join(parts) + more


def finding_instances(
    finding: Finding, snapshot: Snapshot
) -> list[tuple[MigDeviceInfo, tuple[int, ...]]]:
    """The MIG instances a finding's processes run in: each with the PIDs the message names
    (``PID n``) that run in it, in the order of the node's instances."""
    if finding.gpu_index is None:
        return []
    pids = {int(m) for m in _PID.findall(finding.message)}
    if not pids:
        return []
    on: dict[str, list[int]] = {}
    for p in snapshot.processes:
        if p.gpu_index == finding.gpu_index and p.pid in pids and p.mig_uuid is not None:
            on.setdefault(p.mig_uuid, []).append(p.pid)
    info = snapshot.node.gpu(finding.gpu_index)
    if info is None or not on:
        return []
    return [(m, tuple(sorted(on[m.uuid]))) for m in info.mig_devices if m.uuid in on]


def finding_note(finding: Finding, snapshot: Snapshot) -> str:
    """``on MIG 1g.10gb GI 7 CI 0: PID 713382; 1g.10gb GI 8 CI 0: PID 1354420`` for a finding
    about processes in MIG instances; '' for any other."""
    found = finding_instances(finding, snapshot)
    if not found:
        return ""
    parts = [f"{instance_label(m)}: {', '.join(f'PID {pid}' for pid in pids)}" for m, pids in found]
    return "on MIG " + "; ".join(parts)


__all__ = [
    "MigView",
    "describe_processes",
    "finding_instances",
    "finding_note",
    "has_mig",
    "instance_label",
    "instance_tag",
    "instance_views",
    "instances_by_uuid",
    "mig_profile",
    "mig_views",
    "process_gpu_order",
    "process_gpu_text",
]
