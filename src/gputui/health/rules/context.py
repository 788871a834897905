"""What every rule reads (:class:`RuleContext`) and the small helpers rules share: a finding with
its key, the datacenter-GPU test, sizes and link words."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import field

from gputui.core.format import fmt_bytes
from gputui.core.frozen import frozen
from gputui.core.history import History
from gputui.core.model import Action, Finding, GpuEvent, GpuInfo, GpuSample, Severity, Snapshot
from gputui.health.actions import action_for
from gputui.health.config import HealthConfig

_CONSUMER = re.compile(r"\b(GeForce|RTX|Quadro|TITAN|Radeon)\b", re.IGNORECASE)
_HBM_CLASS = re.compile(
    r"\b(HBM\w*|G?[AHB]\d{2,3}\w*|[PV]100\w*|MI\d{2,3}\w*)\b",
    re.IGNORECASE,
)


def is_datacenter_gpu(info: GpuInfo) -> bool:
    """Name heuristic: a datacenter GPU with HBM-class memory, where ECC should be on.

    True for names of HBM parts (P100, V100, A100/A800/A30, H100/H200/H800/H20, GH200, B100/B200,
    GB200, AMD Instinct MI100+) or names that say ``HBM``; False for anything GeForce / RTX /
    Quadro / TITAN / Radeon (consumer or workstation, GDDR) and for GDDR datacenter parts
    (T4, A10, A40, L4, L40), where ECC off is a legitimate choice."""
    name = info.name
    if _CONSUMER.search(name):
        return False
    if re.search(r"\b(T4|A10G?|A16|A2|A40|L4|L40S?|L20)\b", name, re.IGNORECASE):
        return False
    return bool(_HBM_CLASS.search(name))


def is_vgpu_guest(info: GpuInfo) -> bool:
    """A vGPU inside a VM (NVML virtualization mode ``VGPU``): the hypervisor host owns the
    physical GPU's ECC mode and driver state, so the guest cannot change either. A passthrough
    GPU (a whole GPU in a VM) is not one: its guest owns it as on bare metal."""
    return info.virtualization_mode == "vgpu"


def gib(value: float | None) -> str:
    """Binary sizes with binary units: ``1.25 GiB`` (never "GB" for a GiB figure)."""
    text = fmt_bytes(value, space=True)
    return text if text.endswith("B") else text + "iB"


def link_text(gen: int | None, width: int | None) -> str:
    return f"Gen{gen if gen is not None else '?'} x{width if width is not None else '?'}"


# -- the context rules read ----------------------------------------------------------------------


@frozen
class RuleContext:
    """Everything a rule may look at: the reading, the config, and the monitor's state."""

    snapshot: Snapshot
    config: HealthConfig = field(default_factory=HealthConfig)
    expected_gpus: int | None = None
    """From the config, else from Slurm (resolved by the monitor)."""
    events: tuple[GpuEvent, ...] = ()
    """Every event seen so far and not acknowledged (not only this reading's)."""
    idle_since: Mapping[tuple[int, int], float] = field(default_factory=dict)
    """(pid, gpu) -> when that process started holding memory with no utilization."""
    ecc_baseline: Mapping[int, int] = field(default_factory=dict)
    """GPU -> aggregate uncorrected ECC count at the first reading the monitor saw."""
    history: History | None = None
    platform: str = sys.platform

    @property
    def now(self) -> float:
        return self.snapshot.timestamp

    def judged(self, index: int | None) -> bool:
        return index is None or self.config.gpus is None or index in self.config.gpus

    def samples(self) -> Iterator[tuple[GpuInfo | None, GpuSample]]:
        """(static info, reading) of each judged GPU."""
        for sample in self.snapshot.gpus:
            if self.judged(sample.index):
                yield self.snapshot.node.gpu(sample.index), sample

    def live(self) -> Iterator[tuple[GpuInfo | None, GpuSample]]:
        """Like :meth:`samples`, without lost or erroring GPUs."""
        for info, sample in self.samples():
            if not sample.lost and sample.error is None:
                yield info, sample


RuleFn = Callable[[RuleContext], Iterable[Finding]]


def finding(
    rule: str,
    severity: Severity,
    message: str,
    hint: str,
    gpu: int | None,
    subject: str = "",
    action: Action | None = None,
) -> Finding:
    """A finding with its key; its action is the rule's at that severity
    (:func:`~gputui.health.actions.action_for`) unless ``action`` names one."""
    key = f"{rule}:{'node' if gpu is None else gpu}" + (f":{subject}" if subject else "")
    return Finding(
        rule=rule,
        severity=severity,
        message=message,
        hint=hint,
        gpu_index=gpu,
        key=key,
        action=action if action is not None else action_for(rule, severity),
    )


# -- rules ---------------------------------------------------------------------------------------
