"""The join of a scheduler's grants with a reading: which GPU each grant names, its state, and how
long it has sat idle (:mod:`gputui.core.allocation` has the model and the states).

**Which GPU.** Slurm names a GPU by its GRES index (``IDX``), the device's position in gres.conf's
list, which is its device node's minor number where gres.conf lists ``/dev/nvidia0`` ... in order
(the usual ``File=/dev/nvidia[0-7]``, and Slurm's own NVML auto-detection). It is matched to the
GPU whose ``GpuInfo.minor_number`` it is, never to the NVML index of that number: NVML counts GPUs
in PCI order, the driver numbers device nodes in its probe order, and the two need not agree. The
kubelet names devices by the device plugin's ids: GPU or MIG UUIDs for NVIDIA's plugin (time-sliced
replicas as ``GPU-...::2``), matched by UUID, else by PCI bus id. A device found nowhere stays
listed, ``unknown``, with why (``no GPU with minor number 3``).

**State.** No process on the GPU (or its MIG instance) and no more than
:data:`~gputui.core.usage.HELD_MEMORY_BYTES` in use: ``no_process``, idle at once. Processes or
memory held, utilization under :data:`~gputui.core.usage.IDLE_UTIL_PCT` for ``idle_after_s``
(:data:`IDLE_AFTER_S`, a data loader's pause is no idleness): ``held_idle``; else ``in_use``. A
GPU that does not report utilization while something holds it (MIG on NVML) counts as in use: it
cannot be judged idle.

**Time.** Idle seconds are counted as :mod:`gputui.core.usage` counts them (the interval before a
reading, with that reading's state, up to :data:`~gputui.core.usage.MAX_GAP_INTERVALS` intervals)
per allocation, from when gputui first saw it; with a price of a GPU-hour they cost
``idle_s / 3600 x price``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gputui.core.allocation import (
    Allocation,
    AllocationState,
    Grant,
    SchedulerReading,
)
from gputui.core.frozen import frozen
from gputui.core.model import GpuSample, NodeInfo, ProcessSample
from gputui.core.usage import HELD_MEMORY_BYTES, IDLE_UTIL_PCT, MAX_GAP_INTERVALS, MIN_GAP_S

IDLE_AFTER_S = 30.0
"""Utilization under the idle threshold this long, with memory held, is ``held_idle``."""
MAX_TRACKED = 4096
"""Allocations whose idle time is remembered before the meter starts over."""


@frozen
class Located:
    """Where a grant's device is on this node."""

    gpu_index: int | None
    mig_uuid: str | None = None
    unmatched: str | None = None


def locate(grant: Grant, node: NodeInfo) -> Located:
    """The GPU (and MIG instance) ``grant`` names, or why none."""
    if grant.minor is not None:
        hits = [g.index for g in node.gpus if g.minor_number == grant.minor]
        if len(hits) == 1:
            return Located(hits[0])
        if len(hits) > 1:
            return Located(None, unmatched=f"several GPUs with minor number {grant.minor}")
        why = f"no GPU with minor number {grant.minor}"
        if node.gpus and all(g.minor_number is None for g in node.gpus):
            why += " (this driver does not report minor numbers)"
        elif node.inaccessible_gpus:
            why += " among those this user may open"
        return Located(None, unmatched=why)
    ident = _device_id(grant.device_id or "")
    if not ident:
        return Located(None, unmatched="no device named")
    for g in node.gpus:
        if g.uuid and g.uuid.lower() == ident:
            return Located(g.index)
        for mig in g.mig_devices:
            if mig.uuid.lower() == ident:
                return Located(g.index, mig_uuid=mig.uuid)
    bus = _pci(ident)
    if bus is not None:
        for g in node.gpus:
            if g.pci_bus_id and _pci(g.pci_bus_id.lower()) == bus:
                return Located(g.index)
    return Located(None, unmatched="no GPU with this id")


def _device_id(text: str) -> str:
    """A device plugin id as compared: lower case, without a time-slicing replica's ``::N``."""
    base, sep, replica = text.strip().rpartition("::")
    if sep and replica.isdigit():
        text = base
    return text.strip().lower()


def _pci(text: str) -> str | None:
    """``0000:18:00.0`` of ``00000000:18:00.0`` (NVML's 8-digit domain); None when not a bus id."""
    parts = text.split(":")
    if len(parts) != 3 or "." not in parts[2]:
        return None
    try:
        domain = int(parts[0], 16)
        bus = int(parts[1], 16)
        dev, _, fn = parts[2].partition(".")
        return f"{domain:04x}:{bus:02x}:{int(dev, 16):02x}.{int(fn, 16):x}"
    except ValueError:
        return None


@dataclass(slots=True)
class _Track:
    first_seen: float
    last_ts: float | None = None
    idle_since: float | None = None
    idle_s: float = 0.0


def _key(grant: Grant, where: Located) -> tuple[object, ...]:
    return (
        grant.scheduler,
        grant.job_id,
        grant.pod_uid,
        grant.container,
        grant.device,
        where.gpu_index,
        where.mig_uuid,
    )


class AllocationMeter:
    """Joins each reading with the schedulers' grants and keeps each allocation's idle time. One
    caller (the sampler's thread); :attr:`idle_after_s` may be set before a reading (``check``
    and ``snapshot`` set 0: their few readings are their whole window)."""

    def __init__(
        self,
        *,
        idle_util_pct: float = IDLE_UTIL_PCT,
        held_memory_bytes: int = HELD_MEMORY_BYTES,
        idle_after_s: float = IDLE_AFTER_S,
    ) -> None:
        self.idle_util_pct = idle_util_pct
        self.held_memory_bytes = held_memory_bytes
        self.idle_after_s = idle_after_s
        self._tracks: dict[tuple[object, ...], _Track] = {}

    def update(
        self,
        now: float,
        node: NodeInfo,
        gpus: Sequence[GpuSample],
        processes: Iterable[ProcessSample],
        reading: SchedulerReading | None,
        *,
        price: float | None = None,
        interval: float = 1.0,
    ) -> tuple[Allocation, ...]:
        """The allocations of this reading, GPU by GPU (``unknown`` devices last); () when no
        scheduler answers (then nothing is said about allocations at all)."""
        answering = reading is not None and any(
            s.state in ("ok", "stale") for s in reading.statuses
        )
        if reading is None or not answering:
            self._tracks.clear()
            return ()
        samples = {s.index: s for s in gpus}
        on_gpu: dict[int, list[ProcessSample]] = {}
        pods: dict[str, tuple[str | None, str | None]] = {}
        for p in processes:
            if not p.exited:
                on_gpu.setdefault(p.gpu_index, []).append(p)
            if p.k8s_pod_uid and p.k8s_pod_name:  # the pod's name as its processes' show it
                pods[p.k8s_pod_uid] = (p.k8s_pod_name, p.k8s_namespace)
        max_gap = max(MIN_GAP_S, MAX_GAP_INTERVALS * interval)
        out: list[Allocation] = []
        alive: set[tuple[object, ...]] = set()
        named: set[int] = set()
        for grant in reading.grants:
            where = locate(grant, node)
            key = _key(grant, where)
            if key in alive:  # one device listed twice by one job: once is enough
                continue
            alive.add(key)
            if where.gpu_index is not None:
                named.add(where.gpu_index)
            track = self._tracks.get(key)
            if track is None:
                if len(self._tracks) >= MAX_TRACKED:
                    self._tracks.clear()
                track = self._tracks[key] = _Track(first_seen=now)
            sample = None if where.gpu_index is None else samples.get(where.gpu_index)
            listed = [] if where.gpu_index is None else on_gpu.get(where.gpu_index, [])
            procs = [p for p in listed if where.mig_uuid is None or p.mig_uuid == where.mig_uuid]
            memory = _memory(sample, where.mig_uuid)
            pod_name, namespace = grant.pod_name, grant.namespace
            if grant.pod_uid and pod_name is None:
                pod_name, namespace = pods.get(grant.pod_uid, (None, namespace))
            state, idle = self._state(sample, procs, memory)
            self._count(track, now, idle, max_gap)
            if state == "in_use" and idle and now - (track.idle_since or now) >= self.idle_after_s:
                state = "held_idle"
            out.append(
                Allocation(
                    gpu_index=where.gpu_index,
                    state=state,
                    scheduler=grant.scheduler,
                    device=grant.device,
                    mig_uuid=where.mig_uuid,
                    unmatched=where.unmatched,
                    job_id=grant.job_id,
                    job_name=grant.job_name,
                    user=grant.user,
                    pod_uid=grant.pod_uid,
                    pod_name=pod_name,
                    namespace=namespace,
                    container=grant.container,
                    started=grant.started,
                    first_seen=track.first_seen,
                    processes=len(procs),
                    memory_used_bytes=memory,
                    idle_since=track.idle_since,
                    idle_s=round(track.idle_s, 3),
                    idle_cost=None if price is None else round(track.idle_s / 3600.0 * price, 6),
                )
            )
        for key in set(self._tracks) - alive:  # the job ended, the pod went
            del self._tracks[key]
        for g in node.gpus:
            if g.index not in named:
                out.append(Allocation(gpu_index=g.index, state="free"))
        out.sort(key=lambda a: (a.gpu_index is None, a.gpu_index or 0, a.mig_uuid or ""))
        return tuple(out)

    def _state(
        self, sample: GpuSample | None, procs: list[ProcessSample], memory: int | None
    ) -> tuple[AllocationState, bool]:
        """The state before the idle stretch's length is known (``held_idle`` needs it), and
        whether the GPU is idle in this reading."""
        if sample is None or sample.lost:
            return "unknown", False
        held = memory is not None and memory > self.held_memory_bytes
        if not procs and not held:
            return "no_process", True
        util = sample.utilization_gpu_pct
        idle = util is not None and util == util and util < self.idle_util_pct
        return "in_use", idle

    @staticmethod
    def _count(track: _Track, now: float, idle: bool, max_gap: float) -> None:
        if idle:
            if track.idle_since is None:
                track.idle_since = now
            if track.last_ts is not None and now > track.last_ts:
                track.idle_s += min(now - track.last_ts, max_gap)
        else:
            track.idle_since = None
        track.last_ts = now


def _memory(sample: GpuSample | None, mig_uuid: str | None) -> int | None:
    if sample is None or sample.lost:
        return None
    if mig_uuid is None:
        return sample.memory_used_bytes
    for mig in sample.mig_devices:
        if mig.uuid == mig_uuid:
            return mig.memory_used_bytes
    return None


__all__ = ["IDLE_AFTER_S", "MAX_TRACKED", "AllocationMeter", "Located", "locate"]
