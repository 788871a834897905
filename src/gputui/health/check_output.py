"""``gputui check --json``: a :class:`~gputui.health.verdict.CheckResult` as dataclasses the codec
writes (``docs/check-json.md``). The field order of each class is the order of the keys in the
output; ``mig_devices`` appears only where there are MIG instances to name."""

from __future__ import annotations

import dataclasses
from dataclasses import field

from gputui.core.codec import OMIT_DEFAULT
from gputui.core.frozen import frozen
from gputui.core.model import SCHEMA_VERSION, Finding
from gputui.health.rollup import Status
from gputui.health.verdict import CheckResult, GpuStatus, MigStatus, Verdict


@frozen
class MigInstance:
    """A MIG instance a finding's processes run in."""

    uuid: str
    profile: str
    gpu_instance_id: int
    compute_instance_id: int
    pids: tuple[int, ...]


@frozen
class MigDevice:
    """A MIG instance of a judged GPU, with its memory (None: not read)."""

    uuid: str
    profile: str
    gpu_instance_id: int
    compute_instance_id: int
    memory_used_bytes: int | None
    memory_total_bytes: int | None
    pids: tuple[int, ...]


@frozen
class CheckFinding(Finding):
    """A finding as a snapshot has it, and the MIG instances its processes run in."""

    mig_devices: tuple[MigInstance, ...] = field(default=(), metadata=OMIT_DEFAULT)


@frozen
class CheckGpu:
    index: int
    name: str
    uuid: str
    status: Status
    mig_devices: tuple[MigDevice, ...] = field(default=(), metadata=OMIT_DEFAULT)


@frozen
class CheckOutput:
    """The ``gputui check --json`` object."""

    verdict: Verdict
    exit_code: int
    strict: bool
    hostname: str
    backend: str
    checked_gpus: tuple[int, ...]
    findings: tuple[CheckFinding, ...]
    gpus: tuple[CheckGpu, ...]
    not_checked: tuple[str, ...]
    notes: tuple[str, ...]
    duration_s: float
    schema_version: int = SCHEMA_VERSION


_FINDING_FIELDS = tuple(f.name for f in dataclasses.fields(Finding))


def _finding(result: CheckResult, finding: Finding) -> CheckFinding:
    instances = tuple(
        MigInstance(m.uuid, m.profile, m.gpu_instance_id, m.compute_instance_id, m.pids)
        for m in result.mig_of(finding)
    )
    values = {name: getattr(finding, name) for name in _FINDING_FIELDS}
    return CheckFinding(**values, mig_devices=instances)


def _mig_device(m: MigStatus) -> MigDevice:
    return MigDevice(
        uuid=m.uuid,
        profile=m.profile,
        gpu_instance_id=m.gpu_instance_id,
        compute_instance_id=m.compute_instance_id,
        memory_used_bytes=m.memory_used_bytes,
        memory_total_bytes=m.memory_total_bytes,
        pids=m.pids,
    )


def _gpu(g: GpuStatus) -> CheckGpu:
    return CheckGpu(g.index, g.name, g.uuid, g.status, tuple(_mig_device(m) for m in g.mig))


def check_output(result: CheckResult) -> CheckOutput:
    return CheckOutput(
        verdict=result.verdict,
        exit_code=result.exit_code,
        strict=result.strict,
        hostname=result.hostname,
        backend=result.backend,
        checked_gpus=result.checked_gpus,
        findings=tuple(_finding(result, f) for f in result.findings),
        gpus=tuple(_gpu(g) for g in result.gpus),
        not_checked=result.not_checked,
        notes=result.notes,
        duration_s=round(result.duration_s, 3),
    )


__all__ = ["CheckFinding", "CheckGpu", "CheckOutput", "MigDevice", "MigInstance", "check_output"]
