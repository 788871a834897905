"""What to do about a finding: one vocabulary across NVIDIA and AMD, so a prolog, an alert or a
person can route on it without knowing every XID.

``none``        nothing to do (information)
``watch``       keep an eye on it; act if it grows or recurs
``restart_job`` the job or application failed; restart it, the GPU itself is fine
``reset_gpu``   reset the GPU (``nvidia-smi -r`` / ``amd-smi reset``) once no job runs on it
``reboot``      reboot the node (the GPU cannot be recovered in place)
``drain``       take the node out of service and investigate (cooling, cabling, a link)
``replace``     the hardware is failing: replace it (RMA)

Sources: NVIDIA's XID catalogue (docs.nvidia.com/deploy/xid-errors, its "Resolution Bucket
(Immediate Action)": RESTART_APP -> ``restart_job``, RESET_GPU -> ``reset_gpu``, RESTART_BM ->
``reboot``, CONTACT_SUPPORT -> ``drain``); the row-remapping and page-retirement semantics of
NVIDIA's memory error documents (a pending remap or retirement takes effect at the next reset:
``reset_gpu``; a failed remap needs the board replaced: ``replace``); AMD's RAS: uncorrectable
errors need a GPU reset, a bad-page table past its threshold retires the board (``replace``).
"""

from __future__ import annotations

from gputui.core.model import Action, Severity

ACTIONS: tuple[Action, ...] = (
    "none",
    "watch",
    "restart_job",
    "reset_gpu",
    "reboot",
    "drain",
    "replace",
)
"""The vocabulary, from harmless to most disruptive."""

DRAIN_ACTIONS: frozenset[Action] = frozenset({"drain", "replace", "reset_gpu", "reboot"})
"""Actions that take the node (or a GPU) out of service: a Slurm prolog drains on these."""

BY_SEVERITY: dict[Severity, Action] = {
    "ok": "none",
    "info": "none",
    "warn": "watch",
    "fail": "drain",
}
"""A rule's action when it names none of its own."""

RULE_ACTIONS: dict[tuple[str, Severity], Action] = {
    ("not_responding", "fail"): "reboot",  # a hung driver: nothing short of a reboot is sure
    ("gpu_lost", "fail"): "reboot",  # fallen off the bus: power-cycle, RMA if it recurs
    ("gpu_count", "fail"): "reboot",  # a GPU missing from the bus
    ("no_readings", "fail"): "reset_gpu",
    ("ecc_uncorrected", "fail"): "reset_gpu",  # volatile DBEs clear, pending retirements apply
    ("ecc_aggregate", "warn"): "watch",
    ("retired_pages", "fail"): "reset_gpu",  # pending retirement applies at the next reset
    ("row_remap", "fail"): "replace",  # remapping failed: no spare rows left
    ("row_remap", "warn"): "reset_gpu",  # remap pending: applies at the next reset
    ("ecc_disabled", "warn"): "watch",
    ("throttle", "fail"): "drain",  # HW slowdown / thermal / power brake: cooling or power
    ("throttle", "warn"): "watch",
    ("temperature", "fail"): "drain",
    ("temperature", "warn"): "watch",
    ("power_limit", "warn"): "watch",
    ("pcie_link", "warn"): "drain",  # a degraded link: reseat or replace the riser / cable
    ("nvlink_down", "fail"): "reset_gpu",
    ("nvlink_fabric", "fail"): "drain",  # the fabric manager / NVSwitch set-up
    ("nvlink_fabric", "warn"): "watch",
    ("persistence_mode", "warn"): "watch",
    ("other_processes", "fail"): "none",  # --require-idle: someone else's job, not a fault
    ("driver_cuda", "warn"): "watch",
    ("idle_memory", "warn"): "none",  # a person to ask, not a node to fix
    ("allocated_idle", "warn"): "none",  # the job's or pod's owner to ask
    ("straggler", "warn"): "watch",
}
"""Rule and severity -> action, where it differs from :data:`BY_SEVERITY`."""

_XID_ACTIONS: dict[int, Action] = {
    # RESTART_APP: the application's error; the GPU is fine
    13: "restart_job",
    31: "restart_job",
    43: "restart_job",
    45: "restart_job",
    68: "restart_job",
    69: "restart_job",
    73: "restart_job",
    94: "restart_job",  # contained ECC error: only the affected application was stopped
    # RESET_GPU
    46: "reset_gpu",
    48: "reset_gpu",  # double-bit ECC: the reset retires / remaps the page
    56: "reset_gpu",
    62: "reset_gpu",
    63: "reset_gpu",  # remap or retirement recorded: takes effect at the next reset
    65: "reset_gpu",
    74: "reset_gpu",
    80: "reset_gpu",
    81: "reset_gpu",
    95: "reset_gpu",  # uncontained ECC error
    109: "reset_gpu",
    110: "reset_gpu",
    119: "reset_gpu",
    120: "reset_gpu",
    136: "reset_gpu",
    140: "reset_gpu",
    155: "reset_gpu",
    156: "reset_gpu",
    158: "reset_gpu",
    # RESTART_BM: the node
    79: "reboot",  # fallen off the bus: power-cycle; replace if it recurs
    143: "reboot",
    # the hardware itself
    54: "drain",  # auxiliary power not connected: a cable, on site
    57: "replace",
    58: "replace",  # unstable video memory interface
    64: "replace",  # remapping / retirement failed
    92: "replace",  # high single-bit ECC rate: the memory is wearing out
}
"""XID -> action, after NVIDIA's XID catalogue."""

_XID_154: tuple[tuple[str, Action], ...] = (
    ("node reboot", "reboot"),
    ("gpu reset", "reset_gpu"),
    ("drain", "drain"),
)
"""XID 154 names the recovery it wants in its message ("GPU Reset Required", "Node Reboot
Required", "Drain P2P")."""


def xid_action(code: int, message: str = "") -> Action:
    """What to do about XID ``code`` (``message``: the event's text, for XID 154); an XID the
    catalogue here does not know: ``drain`` (investigate before new work lands on it)."""
    if code == 154:
        lowered = message.lower()
        for words, action in _XID_154:
            if words in lowered:
                return action
        return "drain"
    return _XID_ACTIONS.get(code, "drain")


def action_for(rule: str, severity: Severity) -> Action:
    """A rule's action at a severity (see :data:`RULE_ACTIONS`)."""
    return RULE_ACTIONS.get((rule, severity), BY_SEVERITY[severity])


__all__ = ["ACTIONS", "BY_SEVERITY", "DRAIN_ACTIONS", "RULE_ACTIONS", "action_for", "xid_action"]
