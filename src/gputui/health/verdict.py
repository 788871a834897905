"""A check's verdict: the findings on the judged GPUs, graded into healthy / warnings / failed.

:func:`evaluate` turns the last snapshot of a check (its findings, judged by the health monitor)
and the GPU selection into a :class:`CheckResult`, whose ``exit_code`` is the command's status
(its ``--json`` form, ``docs/check-json.md``: :mod:`gputui.health.check_output`).

On a GPU in MIG mode the check names the MIG instances: each GPU's status lists its instances
(``GpuStatus.mig``: profile, ids, memory, the PIDs in it), and a finding about processes in MIG
instances carries them (``CheckResult.finding_mig``); in the JSON both appear as
``mig_devices``, present only where there are MIG instances to name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import field
from typing import Literal

from gputui.core.exitcodes import EXIT_FAILED, EXIT_HEALTHY, EXIT_WARNINGS
from gputui.core.format import fmt_bytes_pair, fmt_pct
from gputui.core.frozen import frozen
from gputui.core.mig import describe_processes, finding_instances, mig_profile, mig_views
from gputui.core.model import Finding, GpuEvent, NodeInfo, Snapshot
from gputui.core.selection import Selection
from gputui.health import hints
from gputui.health.rollup import Status, counts, gpu_status, headline_finding, sorted_findings
from gputui.health.rules import RULES

CHECK_RULES: dict[str, str] = {
    "visible_devices": "fail: CUDA_VISIBLE_DEVICES names a GPU this node does not list, or "
    "no GPU at all",
    "probe": "warn (--probe): a probe result LOW against spec or the node's other GPUs, "
    "or the probe failed",
}
"""Rules of the check itself (on top of the health module's), accepted by ``--ignore`` too."""


def all_rules() -> dict[str, str]:
    """Rule id -> one-line description, for ``--ignore`` and ``--list-rules``."""
    rules = {rule_id: entry[1] for rule_id, entry in RULES.items()}
    rules.update(CHECK_RULES)
    return dict(sorted(rules.items()))


Verdict = Literal["healthy", "warnings", "failed"]


@frozen
class MigStatus:
    """A MIG instance as the check names it: ids, profile, memory and the PIDs running in it."""

    uuid: str
    profile: str
    gpu_instance_id: int
    compute_instance_id: int
    pids: tuple[int, ...] = ()
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    summary: str = ""

    @property
    def label(self) -> str:
        return f"{self.profile} GI {self.gpu_instance_id} CI {self.compute_instance_id}"


@frozen
class GpuStatus:
    index: int
    name: str
    uuid: str
    status: Status
    summary: str = ""
    mig: tuple[MigStatus, ...] = ()
    """Its MIG instances (() when MIG is off)."""


@frozen
class CheckResult:
    hostname: str
    backend: str
    checked_gpus: tuple[int, ...]
    selection_source: str
    findings: tuple[Finding, ...]
    gpus: tuple[GpuStatus, ...]
    not_checked: tuple[str, ...]
    notes: tuple[str, ...]
    duration_s: float
    strict: bool = False
    node_gpu_count: int = 0
    kernel_events: tuple[GpuEvent, ...] = field(default=())
    finding_mig: tuple[tuple[str, tuple[MigStatus, ...]], ...] = ()
    """(finding key, the MIG instances its processes run in) for findings about such processes."""

    def mig_of(self, finding: Finding) -> tuple[MigStatus, ...]:
        """The MIG instances ``finding``'s processes run in (() for most findings)."""
        for key, instances in self.finding_mig:
            if key == finding.key:
                return instances
        return ()

    def finding_notes(self) -> dict[str, str]:
        """Finding key -> ``on MIG 1g.10gb GI 7 CI 0: PID 713382; ...`` for the report."""
        return {
            key: "on MIG "
            + "; ".join(f"{m.label}: {', '.join(f'PID {p}' for p in m.pids)}" for m in instances)
            for key, instances in self.finding_mig
        }

    def count(self, severity: str) -> int:
        """Findings of ``severity`` listed at the end (cleared ones included: see rollup)."""
        n = counts(self.findings)
        return {"fail": n.fail, "warn": n.warn, "info": n.info}.get(severity, 0)

    @property
    def verdict(self) -> Verdict:
        if self.count("fail") or (self.strict and self.count("warn")):
            return "failed"
        return "warnings" if self.count("warn") else "healthy"

    @property
    def exit_code(self) -> int:
        return {"healthy": EXIT_HEALTHY, "warnings": EXIT_WARNINGS, "failed": EXIT_FAILED}[
            self.verdict
        ]

    def headline(self) -> str:
        verdict = self.verdict
        if verdict == "failed":
            n = self.count("fail") + (self.count("warn") if self.strict else 0)
            word = f"FAILED ({n})"
        elif verdict == "warnings":
            word = f"WARNINGS ({self.count('warn')})"
        else:
            word = "HEALTHY"
        n_gpus = len(self.checked_gpus)
        parts = [word, self.hostname, self.backend, f"{n_gpus} GPU{'s' if n_gpus != 1 else ''}"]
        line = " · ".join(parts)
        first = headline_finding(self.findings)
        if first is not None:  # the first line alone makes a useful drain reason
            line += f" · {_where(first)}{first.message}"[:200]
        return line


def _where(finding: Finding) -> str:
    """``GPU n: `` unless the message already names the GPU."""
    if finding.gpu_index is None or f"GPU {finding.gpu_index}" in finding.message:
        return ""
    return f"GPU {finding.gpu_index}: "


def evaluate(
    snapshot: Snapshot,
    selection: Selection,
    *,
    ignore: Iterable[str] = (),
    strict: bool = False,
    not_checked: Sequence[str] = (),
    duration_s: float = 0.0,
    kernel_events: Sequence[GpuEvent] = (),
) -> CheckResult:
    """The findings on the judged GPUs (node-wide ones always count), sorted worst first."""
    ignored = frozenset(ignore)
    node = snapshot.node
    judged = sorted(
        g.index for g in node.gpus if selection.indices is None or g.index in selection.indices
    )
    findings = [
        f
        for f in snapshot.findings
        if f.rule not in ignored and (f.gpu_index is None or f.gpu_index in judged)
    ]
    if "visible_devices" not in ignored:
        findings += [
            Finding(
                rule="visible_devices",
                severity="fail",
                message=f"CUDA_VISIBLE_DEVICES names {token}, which this node does not list",
                hint="the GPU may have fallen off the bus (check "
                f"`{hints.list_gpus(hints.vendor_of(None, node))}` and the kernel log), or the "
                "variable is stale",
                key=f"visible_devices:{token}",
                first_seen=snapshot.timestamp,
                last_seen=snapshot.timestamp,
                action="drain",
            )
            for token in selection.unknown
        ]
        if selection.none_visible is not None:
            findings.append(
                Finding(
                    rule="visible_devices",
                    severity="fail",
                    message=f"no visible GPU: {selection.none_visible}",
                    hint="a job started with this environment sees no GPU: fix or unset "
                    "CUDA_VISIBLE_DEVICES (the scheduler sets it for the GPUs it allocated)",
                    key="visible_devices:none",
                    first_seen=snapshot.timestamp,
                    last_seen=snapshot.timestamp,
                    action="drain",
                )
            )
    findings = sorted_findings(findings)
    statuses = []
    for index in judged:
        info = node.gpu(index)
        assert info is not None
        # A driver that does not answer fails every GPU behind it (its lock is node-wide).
        status = "fail" if snapshot.stall is not None else gpu_status(findings, index)
        statuses.append(
            GpuStatus(
                index,
                info.name,
                info.uuid,
                status,
                _gpu_summary(snapshot, index),
                _mig_statuses(snapshot, index),
            )
        )
    return CheckResult(
        hostname=node.hostname,
        backend=node.backend,
        checked_gpus=tuple(judged),
        selection_source=selection.source,
        findings=tuple(findings),
        gpus=tuple(statuses),
        not_checked=(*not_checked, *_inaccessible(node)),
        notes=selection.notes,
        duration_s=duration_s,
        strict=strict,
        node_gpu_count=len(node.gpus),
        kernel_events=tuple(kernel_events),
        finding_mig=tuple(
            (f.key, instances) for f in findings if (instances := _finding_mig(f, snapshot))
        ),
    )


def _inaccessible(node: NodeInfo) -> tuple[str, ...]:
    """GPUs the driver counts but this user may not open: not checked, and not a fault."""
    if not node.inaccessible_gpus:
        return ()
    ids = ", ".join(str(i) for i in node.inaccessible_gpus)
    many = len(node.inaccessible_gpus) > 1
    return (
        f"GPU{'s' if many else ''} {ids}: not accessible to this user (the driver lists "
        f"{'them' if many else 'it'} but denies opening {'them' if many else 'it'}: a container "
        "or cgroup without its device node)",
    )


def _mig_statuses(snapshot: Snapshot, index: int) -> tuple[MigStatus, ...]:
    if snapshot.stall is not None:
        return ()
    sample = snapshot.sample(index)
    if sample is None or sample.lost:
        return ()
    return tuple(
        MigStatus(
            uuid=view.info.uuid,
            profile=view.profile,
            gpu_instance_id=view.info.gpu_instance_id,
            compute_instance_id=view.info.compute_instance_id,
            pids=tuple(p.pid for p in view.processes),
            memory_used_bytes=view.memory_used_bytes,
            memory_total_bytes=view.memory_total_bytes,
            summary=" · ".join(
                [
                    fmt_bytes_pair(view.memory_used_bytes, view.memory_total_bytes),
                    describe_processes(view.processes),
                ]
            ),
        )
        for view in mig_views(snapshot, index)
    )


def _finding_mig(finding: Finding, snapshot: Snapshot) -> tuple[MigStatus, ...]:
    return tuple(
        MigStatus(
            uuid=info.uuid,
            profile=mig_profile(info.name),
            gpu_instance_id=info.gpu_instance_id,
            compute_instance_id=info.compute_instance_id,
            pids=pids,
        )
        for info, pids in finding_instances(finding, snapshot)
    )


def _gpu_summary(snapshot: Snapshot, index: int) -> str:
    if snapshot.stall is not None:
        return "no answer from the driver"
    sample = snapshot.sample(index)
    if sample is None:
        return "not read"
    if sample.lost:
        return sample.error or "lost"
    procs = snapshot.processes_on(index)
    users = sorted({p.user for p in procs if p.user})
    info = snapshot.node.gpu(index)
    n_mig = len(info.mig_devices) if info is not None and info.mig_enabled else None
    parts = [
        # NVML reports no utilization for a GPU in MIG mode: say what it is instead
        f"MIG: {n_mig} instance{'s' if n_mig != 1 else ''}"
        if n_mig is not None
        else f"{fmt_pct(sample.utilization_gpu_pct)} busy",
        fmt_bytes_pair(sample.memory_used_bytes, sample.memory_total_bytes),
        f"{len(procs)} process{'es' if len(procs) != 1 else ''}"
        + (f" ({', '.join(users)})" if users else ""),
    ]
    return " · ".join(parts)


def list_rules() -> str:
    rules = all_rules()
    width = max(len(r) for r in rules)
    return "\n".join(f"{rule:<{width}}  {text}" for rule, text in rules.items())


__all__ = [
    "CHECK_RULES",
    "CheckResult",
    "GpuStatus",
    "MigStatus",
    "all_rules",
    "evaluate",
    "list_rules",
]
