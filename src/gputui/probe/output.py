"""``gputui probe --json``: the report as dataclasses the codec writes (``docs/probe-schema.md``).

The field order of each class is the order of the keys in the output. :func:`probe_output` builds
the object from a :class:`~gputui.probe.report.ProbeReport`; :func:`spec_summary` is the spec row
a GPU was matched to, kept on the report while it runs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import TYPE_CHECKING

from gputui.core.codec import OMIT_DEFAULT
from gputui.core.frozen import frozen
from gputui.core.model import GpuInfo
from gputui.probe import verdict as V
from gputui.probe.protocol import Skipped
from gputui.probe.specref import spec_for
from gputui.probe.verdict import Judged, Telemetry

if TYPE_CHECKING:
    from gputui.probe.report import ProbeReport
    from gputui.probe.runs import GpuRun


@frozen
class SpecSummary:
    """The spec row a GPU was matched to and how; for a GPU in MIG mode also the slice it is
    judged as and the shares its peaks were scaled by (those keys only then)."""

    model: str
    how: str
    scale: float
    note: str
    source: str
    form_factor: str
    mig_uuid: str | None = field(default=None, metadata=OMIT_DEFAULT)
    mig_compute_share: str | None = field(default=None, metadata=OMIT_DEFAULT)
    mig_memory_share: str | None = field(default=None, metadata=OMIT_DEFAULT)


def spec_summary(info: GpuInfo) -> SpecSummary | None:
    """The spec row ``info`` matches (None: no row matches)."""
    ref = spec_for(info)
    match = ref.match
    if match is None:
        return None
    spec = match.spec
    summary = SpecSummary(
        model=spec.model,
        how=match.how,
        scale=match.scale,
        note=match.note,
        source=spec.source,
        form_factor=spec.form_factor,
    )
    if ref.mig is not None:
        summary = dataclasses.replace(
            summary,
            mig_uuid=ref.mig.uuid,
            mig_compute_share=ref.compute_share,
            mig_memory_share=ref.memory_share,
        )
    return summary


@frozen
class ResultOutput:
    """One judged result: percentages rounded to 0.1, fractions as percentages."""

    gpu: int | None
    label: str
    test: str
    value: float
    unit: str
    method: str
    spec: float | None
    spec_source: str
    pct_of_spec: float | None
    expected_pct: float | None
    verdict: str
    reasons: tuple[str, ...]
    sibling_gap_pct: float | None
    telemetry: Telemetry | None
    peer: int | None
    judgement: str
    expected_assumed: bool | None
    expected_scope: str | None


def result_output(j: Judged) -> ResultOutput:
    return ResultOutput(
        gpu=j.gpu,
        label=j.label,
        test=j.test,
        value=j.value,
        unit=j.unit,
        method=j.method,
        spec=j.spec,
        spec_source=j.spec_source,
        pct_of_spec=_pct(j.pct_of_spec, 1.0),
        expected_pct=_pct(j.expected, 100.0),
        verdict=j.verdict,
        reasons=tuple(j.reasons),
        sibling_gap_pct=_pct(j.sibling_gap, 100.0),
        telemetry=j.telemetry,
        peer=j.peer,
        judgement=j.judgement,
        expected_assumed=j.expected_assumed,
        expected_scope=j.expected_scope or None,
    )


def _pct(value: float | None, scale: float) -> float | None:
    return None if value is None else round(scale * value, 1)


@frozen
class RetryOutput:
    test: str
    reason: str
    size: int


@frozen
class RunOutput:
    """One device's run: the device its worker opened (None before its hello) and what it said
    besides results."""

    label: str
    device: str
    device_name: str | None
    device_uuid: str | None
    device_pci_bus_id: str | None
    torch_version: str | None
    skipped: tuple[Skipped, ...]
    retries: tuple[RetryOutput, ...]
    errors: tuple[str, ...]
    notes: tuple[str, ...]
    cancelled: bool
    spec: SpecSummary | None


def run_output(run: GpuRun, spec: SpecSummary | None) -> RunOutput:
    hello = run.hello
    return RunOutput(
        label=run.target.label,
        device=run.target.device,
        device_name=hello.device_name if hello is not None else None,
        device_uuid=hello.uuid if hello is not None else None,
        device_pci_bus_id=hello.pci_bus_id if hello is not None else None,
        torch_version=hello.torch_version if hello is not None else None,
        skipped=tuple(run.skipped),
        retries=tuple(RetryOutput(r.test, r.reason, r.size) for r in run.retries),
        errors=tuple(run.errors),
        notes=tuple(run.notes),
        cancelled=run.cancelled,
        spec=spec,
    )


@frozen
class ProbeOutput:
    """The ``gputui probe --json`` object."""

    mode: str
    cpu_run: bool
    verdict: str
    exit_code: int
    results: tuple[ResultOutput, ...]
    gpus: dict[str, RunOutput]
    """By GPU index as a string (``"None"`` for the CPU run)."""
    summary: tuple[str, ...]
    notes: tuple[str, ...]
    refused: tuple[str, ...]
    errors: tuple[str, ...]
    expected_source: str


def probe_output(report: ProbeReport) -> ProbeOutput:
    return ProbeOutput(
        mode=report.mode,
        cpu_run=report.mode == "cpu",
        verdict=V.worst(report.judged),
        exit_code=report.exit_code,
        results=tuple(result_output(j) for j in report.judged),
        gpus={
            str(k): run_output(r, report.specs.get(k) if k is not None else None)
            for k, r in report.runs.items()
        },
        summary=tuple(report.summary()),
        notes=tuple(report.notes),
        refused=tuple(report.refused),
        errors=tuple(report.errors),
        expected_source=V.EXPECTED_SOURCE,
    )


__all__ = [
    "ProbeOutput",
    "ResultOutput",
    "RetryOutput",
    "RunOutput",
    "SpecSummary",
    "probe_output",
    "result_output",
    "run_output",
    "spec_summary",
]
