"""What a scheduler allocated on this node, per GPU, and whether it is used: the model.

A scheduler (Slurm, the kubelet) says which devices it gave to whom: a :class:`Grant` each, read by
the host layer (:mod:`gputui.host.allocations`) in the background, with one
:class:`SchedulerStatus` per scheduler saying whether it answered. The engine joins the grants with
each reading (:mod:`gputui.core.allocation_meter`) into one :class:`Allocation` per GPU (and MIG
instance) and scheduler entry, with its state:

``free``         no scheduler entry names the GPU
``no_process``   allocated, no process on it and no memory held (idle at once)
``held_idle``    allocated, memory held (processes, or memory in use), utilization under the idle
                 threshold for a while: somebody holds the GPU without working on it
``in_use``       allocated and working (or working for too short a while to judge)
``unknown``      allocated, but the device is not one of this node's readable GPUs (``unmatched``
                 says why: ``no GPU with minor number 3``), or the GPU did not answer

Pure data: this module imports nothing of gputui, so :mod:`gputui.core.model` can hold these types
on a :class:`~gputui.core.model.Snapshot`.
"""

from __future__ import annotations

from typing import Literal

from gputui.core.frozen import frozen

Scheduler = Literal["slurm", "kubernetes"]
AllocationState = Literal["free", "no_process", "held_idle", "in_use", "unknown"]
SchedulerState = Literal["ok", "waiting", "stale", "unreachable"]
"""``ok``: the last ask answered; ``waiting``: asked, no answer yet; ``stale``: the last ask failed
and an older answer is still used (see :data:`gputui.host.allocations.STALE_AFTER_S`);
``unreachable``: no usable answer (its allocations are left out, not guessed)."""

STATE_WORDS: dict[str, str] = {
    "free": "free",
    "no_process": "allocated, no process",
    "held_idle": "allocated, memory held, no work",
    "in_use": "in use",
    "unknown": "allocated, GPU unknown",
}
IDLE_STATES: frozenset[str] = frozenset({"no_process", "held_idle"})
"""States in which an allocated GPU does no work (``allocated_idle``)."""


@frozen
class Grant:
    """One device a scheduler allocated to a job or a pod's container, as the scheduler names it.
    The host layer builds these; every text comes from outside and is bounded there."""

    scheduler: Scheduler
    device: str
    """What the scheduler calls the device: ``IDX 3`` (Slurm), ``GPU-8f3c...`` (kubelet)."""
    minor: int | None = None
    """Slurm's GRES index: the device node's minor number (``/dev/nvidiaN``)."""
    device_id: str | None = None
    """A device plugin's id: a GPU or MIG UUID, or a PCI bus id."""
    job_id: str | None = None
    job_name: str | None = None
    user: str | None = None
    pod_uid: str | None = None
    pod_name: str | None = None
    namespace: str | None = None
    container: str | None = None
    started: float | None = None
    """When the job started (Slurm's ``StartTime``); None where the scheduler does not say."""


@frozen
class SchedulerStatus:
    """Whether one scheduler answered, for the views to say so."""

    scheduler: Scheduler
    state: SchedulerState
    message: str = ""
    """Why it is not ``ok`` (the tool's error), or what was read."""
    answered_at: float | None = None
    """Wall-clock time of the answer in use (None: none yet)."""
    node: str | None = None
    """Slurm: the node name this host is known by (``SLURMD_NODENAME``, else the short
    hostname)."""


@frozen
class SchedulerReading:
    """What the host layer has from the schedulers now: their states and the grants in use."""

    statuses: tuple[SchedulerStatus, ...] = ()
    grants: tuple[Grant, ...] = ()


@frozen
class Allocation:
    """One GPU (or MIG instance) and who the scheduler allocated it to, in this reading."""

    gpu_index: int | None
    """The GPU (NVML / AMD-SMI index); None when the scheduler's device is not found here."""
    state: AllocationState
    scheduler: Scheduler | None = None
    """None for a ``free`` GPU."""
    device: str = ""
    """What the scheduler calls the device (``IDX 3``, a UUID)."""
    mig_uuid: str | None = None
    """The MIG instance allocated, when the scheduler gave one (the kubelet's MIG UUIDs)."""
    unmatched: str | None = None
    """Why the device is not one of this node's GPUs (``no GPU with minor number 3``)."""
    job_id: str | None = None
    job_name: str | None = None
    user: str | None = None
    pod_uid: str | None = None
    pod_name: str | None = None
    namespace: str | None = None
    container: str | None = None
    started: float | None = None
    """When the job started, where the scheduler says (Slurm)."""
    first_seen: float | None = None
    """When gputui first saw this allocation."""
    processes: int = 0
    """Processes on the GPU (the MIG instance) in this reading."""
    memory_used_bytes: int | None = None
    idle_since: float | None = None
    """Start of the current idle stretch (no process, or utilization under the idle threshold);
    None while working."""
    idle_s: float = 0.0
    """Seconds allocated and idle since gputui first saw the allocation."""
    idle_cost: float | None = None
    """``idle_s`` x the price of a GPU-hour; None without a price."""

    @property
    def idle(self) -> bool:
        return self.state in IDLE_STATES

    def idle_for(self, now: float) -> float:
        """Seconds of the current idle stretch as of ``now`` (0 while working)."""
        return 0.0 if self.idle_since is None else max(now - self.idle_since, 0.0)

    @property
    def owner_key(self) -> tuple[str, str]:
        """Who holds it, for grouping by job or pod: ``("slurm", job id)``, ``("pod", uid)``;
        ``("", "")`` for a free GPU."""
        if self.job_id:
            return ("slurm", self.job_id)
        if self.pod_uid:
            return ("pod", self.pod_uid)
        return ("", "")


def owner_text(a: Allocation, *, short: bool = False) -> str:
    """Who holds the GPU, as views say it: ``job 4242 train (alice)``, ``pod ml/trainer-0``;
    ``short``: the id alone (``job 4242``, ``pod trainer-0``); '' for a free GPU."""
    if a.job_id:
        if short:
            return f"job {a.job_id}"
        name = f" {a.job_name}" if a.job_name else ""
        user = f" ({a.user})" if a.user else ""
        return f"job {a.job_id}{name}{user}"
    if a.pod_uid or a.pod_name:
        name = a.pod_name or (a.pod_uid or "")[:8]
        if short:
            return f"pod {name}"
        where = f"{a.namespace}/" if a.namespace and a.pod_name else ""
        container = f" [{a.container}]" if a.container else ""
        return f"pod {where}{name}{container}"
    return ""


def device_text(a: Allocation) -> str:
    """The device as the scheduler named it, and why it is not found where it is not:
    ``IDX 3 (no GPU with minor number 3)``."""
    return f"{a.device} ({a.unmatched})" if a.unmatched else a.device


__all__ = [
    "IDLE_STATES",
    "STATE_WORDS",
    "Allocation",
    "AllocationState",
    "Grant",
    "Scheduler",
    "SchedulerReading",
    "SchedulerState",
    "SchedulerStatus",
    "device_text",
    "owner_text",
]
