"""Health rules: each a small pure function ``(RuleContext) -> Iterable[Finding]``, registered in
:data:`RULES` under its id (the id ``--ignore`` takes). The order of :data:`RULES` is the order
findings of one severity are listed in (hardware faults before busy GPUs). Thresholds that the
dashboard colours too live in :mod:`gputui.health.levels`.

The rules live by subject: :mod:`.node` (driver, GPUs lost or missing), :mod:`.events` (XIDs and
other events; :mod:`.aging` says when a kernel-log XID is history), :mod:`.memory` (ECC, retired
pages, row remapping), :mod:`.clocks` (slowdowns, power, temperature, persistence),
:mod:`.links` (PCIe, NVLink / XGMI), :mod:`.processes`, :mod:`.allocations` (GPUs a scheduler
allocated that do no work); what they read is
:class:`.context.RuleContext`.
"""

from __future__ import annotations

from gputui.health.rules.allocations import rule_allocated_idle
from gputui.health.rules.clocks import (
    rule_persistence_mode,
    rule_power_limit,
    rule_temperature,
    rule_throttle,
)
from gputui.health.rules.context import RuleContext, RuleFn, is_datacenter_gpu, is_vgpu_guest
from gputui.health.rules.events import event_key, rule_gpu_event, rule_xid
from gputui.health.rules.links import (
    rule_nvlink_down,
    rule_nvlink_fabric,
    rule_nvlink_unused,
    rule_pcie_link,
)
from gputui.health.rules.memory import (
    rule_ecc_aggregate,
    rule_ecc_disabled,
    rule_ecc_uncorrected,
    rule_retired_pages,
    rule_row_remap,
)
from gputui.health.rules.node import (
    rule_driver_cuda,
    rule_gpu_count,
    rule_gpu_lost,
    rule_no_readings,
    rule_not_responding,
    rule_slow_open,
)
from gputui.health.rules.processes import (
    IDLE_INFO_AFTER_S,
    IDLE_PCT,
    UNEXPLAINED_MEMORY_BYTES,
    rule_idle_memory,
    rule_other_processes,
    rule_process_list,
)
from gputui.health.rules.stragglers import rule_straggler

RULES: dict[str, tuple[RuleFn, str]] = {
    "not_responding": (rule_not_responding, "fail: NVML / AMD-SMI or a GPU not answering"),
    "gpu_lost": (rule_gpu_lost, "fail: GPU lost (fallen off the bus)"),
    "no_readings": (
        rule_no_readings,
        "fail: no reading of what a GPU does answered (utilization, memory, processes: errors, "
        "not 'not supported')",
    ),
    "gpu_count": (rule_gpu_count, "fail: fewer GPUs than expected (--expect-gpus or Slurm)"),
    "xid": (
        rule_xid,
        "fail/warn/info: XID errors, graded by code, kept until acknowledged; info once the "
        "driver reloaded, the GPU was re-enumerated or --xid-window passed (kernel log)",
    ),
    "gpu_event": (rule_gpu_event, "fail/info: ECC and GPU-lost events, kept until acknowledged"),
    "ecc_uncorrected": (rule_ecc_uncorrected, "fail: volatile uncorrected ECC errors"),
    "ecc_aggregate": (
        rule_ecc_aggregate,
        "warn: lifetime uncorrected ECC errors (nonzero); info on GPUs that remap rows",
    ),
    "retired_pages": (rule_retired_pages, "fail: retired pages pending (reset needed)"),
    "row_remap": (rule_row_remap, "fail: row remap failure (RMA); warn: remap pending (reset)"),
    "ecc_disabled": (
        rule_ecc_disabled,
        "warn: ECC disabled on an HBM datacenter GPU (not judged in a vGPU guest)",
    ),
    "throttle": (
        rule_throttle,
        "fail: HW slowdown / HW thermal / power brake; warn: SW thermal (each timed by the "
        "driver's duration counters, else set on two readings in a row)",
    ),
    "power_limit": (rule_power_limit, "warn: power limit set below the default"),
    "temperature": (
        rule_temperature,
        "warn: within 5°C of a sensor's limit (GPU/edge, hotspot, memory); fail: at or above it",
    ),
    "pcie_link": (rule_pcie_link, "warn: PCIe link below max gen / width under load"),
    "nvlink_down": (
        rule_nvlink_down,
        "fail: an NVLink / XGMI link is down (it was up, or it has a remote end to reach)",
    ),
    "nvlink_fabric": (
        rule_nvlink_fabric,
        "fail: NVSwitch fabric set-up failed; warn: not finished (no NVLink traffic yet)",
    ),
    "persistence_mode": (
        rule_persistence_mode,
        "warn: persistence mode off (Linux, datacenter; not judged in a vGPU guest)",
    ),
    "other_processes": (
        rule_other_processes,
        "info: other users' processes, or memory in use by processes not visible here; fail "
        "with --require-idle: any process on the GPU (any user, root included) or such memory",
    ),
    "nvlink_unused": (
        rule_nvlink_unused,
        "info: NVLinks inactive since start with no remote end (not wired or not set up)",
    ),
    "process_list": (
        rule_process_list,
        "info: the process list may be incomplete (AMD, not root: other users' processes hidden)",
    ),
    "slow_open": (
        rule_slow_open,
        "info: opening the GPUs took seconds (persistence mode off: the driver initialises them)",
    ),
    "driver_cuda": (rule_driver_cuda, "warn: driver's CUDA older than torch's CUDA build"),
    "straggler": (
        rule_straggler,
        "warn: a busy GPU's clock, power or utilization stays >10% below its siblings' (its "
        "job's or pod's GPUs, else busy GPUs of its model) for 30 s (check: all its readings)",
    ),
    "idle_memory": (
        rule_idle_memory,
        "info after 1 min, warn after idle_memory_minutes: memory held with no utilization",
    ),
    "allocated_idle": (
        rule_allocated_idle,
        "info while a GPU the scheduler allocated (Slurm, Kubernetes) does no work, warn after "
        "allocated_idle_minutes: its owner and idle cost",
    ),
}
"""Rule id -> (rule, one-line description)."""

EVENT_RULES = frozenset({"xid", "gpu_event"})
"""Rules whose findings come from events (listed until acknowledged, never "cleared")."""


__all__ = [
    "EVENT_RULES",
    "IDLE_INFO_AFTER_S",
    "IDLE_PCT",
    "RULES",
    "UNEXPLAINED_MEMORY_BYTES",
    "RuleContext",
    "RuleFn",
    "event_key",
    "is_datacenter_gpu",
    "is_vgpu_guest",
]
