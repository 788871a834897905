"""Judging what the workers measured and reporting it: ``gputui probe`` and ``check --probe``.

Each result is compared with the spec of the GPU it ran on (:mod:`gputui.specs`) through the
rules in :mod:`gputui.probe.verdict`; :class:`ProbeReport` holds the outcome with its exit code
and JSON form, :func:`render_table` its text form, :func:`progress_printer` the live progress
lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from gputui.format import sanitize
from gputui.model import GpuInfo, NodeInfo
from gputui.probe import verdict as V
from gputui.probe.protocol import (
    Error,
    Hello,
    JsonObject,
    ProbeMessage,
    Result,
    Retry,
    Skipped,
)
from gputui.probe.runs import EventCallback, GpuRun
from gputui.probe.verdict import Judged
from gputui.specs import SpecMatch, lookup, scaled_peaks

EXIT_OK, EXIT_LOW, EXIT_CANNOT = 0, 1, 2

CPU_RUN = "CPU run (--cpu): measured on this machine's CPU, not on a GPU"
"""The label of a CPU run: the title of its text output and the start of its summary."""

Peaks = dict[str, "float | None"]
"""Spec peaks by name (``bf16_tflops``, ``memory_bw_gbs`` ...), scaled to the GPU's share."""


def spec_for(info: GpuInfo) -> tuple[SpecMatch | None, Peaks | None]:
    """(spec match or None, scaled peaks or None) for a GPU."""
    match = lookup(
        info.name,
        sm_count=info.sm_count,
        clock_mhz=info.sm_clock_max_mhz,
        compute_capability=info.compute_capability,
    )
    return match, (scaled_peaks(match) if match is not None else None)


def _judge_one(judged: Judged, info: GpuInfo, match: SpecMatch | None, peaks: Peaks | None) -> None:
    """Spec, expected fraction and verdict of one GPU result, in place."""
    tel = judged.telemetry
    gen = (tel.pcie_gen if tel else None) or info.pcie_max_gen
    width = (tel.pcie_width if tel else None) or info.pcie_max_width
    link = match.spec.link_gbs if match is not None else None
    judged.spec, judged.spec_source = V.spec_value(
        judged.test, peaks, pcie_gen=gen, pcie_width=width, link_gbs=link
    )
    if judged.spec and match is not None:
        judged.spec_source += f" of {match.spec.model} ({match.how})"
    fam = V.family(match.spec.architecture) if match is not None else "default"
    judged.expected = V.expected_fraction(fam, judged.test) if judged.spec else None
    V.judge(
        judged,
        sm_clock_max_mhz=info.sm_clock_max_mhz,
        power_default_limit_w=info.power_default_limit_w,
    )


def _peer(result: Result) -> int | None:
    peer = result.details.get("peer")
    return peer if isinstance(peer, int) and not isinstance(peer, bool) else None


def judge_runs(runs: Mapping[int | None, GpuRun], node: NodeInfo | None = None) -> list[Judged]:
    """Every result of every run as a :class:`~gputui.probe.verdict.Judged`, verdicts filled."""
    judged: list[Judged] = []
    limits: dict[int, tuple[float | None, float | None]] = {}
    for gpu, run in runs.items():
        info = node.gpu(gpu) if (node is not None and gpu is not None) else None
        match, peaks = spec_for(info) if info is not None else (None, None)
        if gpu is not None and info is not None:
            limits[gpu] = (info.sm_clock_max_mhz, info.power_default_limit_w)
        for measured in run.measurements:
            res = measured.result
            j = Judged(
                gpu=gpu,
                label=run.target.label,
                test=res.test,
                value=res.value,
                unit=res.unit,
                method=res.method,
                telemetry=measured.telemetry,
                peer=_peer(res),
            )
            if info is not None:
                _judge_one(j, info, match, peaks)
            else:
                j.spec_source = "CPU run: no spec comparison" if gpu is None else "no spec"
            judged.append(j)
    V.apply_node_relative(judged, limits)
    return judged


def _fmt(value: float | None, fmt: str = "{:.4g}") -> str:
    return "-" if value is None else fmt.format(value)


def render_table(judged: Sequence[Judged]) -> str:
    """The results as a plain-text table, one row per result, "how measured" last."""
    head = ("GPU", "test", "measured", "spec", "% spec", "expected", "verdict", "how measured")
    rows = [
        (
            j.label,
            j.test + (f"->{j.peer}" if j.peer is not None else ""),
            f"{j.value:.4g} {j.unit}",
            "-" if j.spec is None else f"{j.spec:.4g} {j.unit}",
            _fmt(j.pct_of_spec, "{:.0f}%"),
            _fmt(None if j.expected is None else 100 * j.expected, "{:.0f}%"),
            j.verdict,
            j.method,
        )
        for j in judged
    ]
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head) - 1)]
    lines = []
    for r in (head, *rows):
        cells = [c.ljust(w) for c, w in zip(r[:-1], widths, strict=False)]
        lines.append("  ".join([*cells, r[-1]]).rstrip())
    return "\n".join(lines)


def spec_summary(info: GpuInfo) -> JsonObject | None:
    """The spec row a GPU was matched to and how (for the JSON report), or None."""
    match, _ = spec_for(info)
    if match is None:
        return None
    return {
        "model": match.spec.model,
        "how": match.how,
        "scale": match.scale,
        "note": match.note,
        "source": match.spec.source,
    }


def _run_dict(run: GpuRun, spec: JsonObject | None) -> JsonObject:
    hello: Hello | None = run.hello
    return {
        "label": run.target.label,
        "device": run.target.device,
        "device_name": hello.device_name if hello is not None else None,
        "torch_version": hello.torch_version if hello is not None else None,
        "skipped": [{"test": s.test, "reason": s.reason} for s in run.skipped],
        "retries": [{"test": s.test, "reason": s.reason, "size": s.size} for s in run.retries],
        "errors": [*run.errors],
        "cancelled": run.cancelled,
        "spec": spec,
    }


@dataclass
class ProbeReport:
    """The outcome of ``gputui probe`` / ``check --probe``."""

    mode: str  # "gpu" | "cpu"
    judged: list[Judged] = field(default_factory=list)
    runs: dict[int | None, GpuRun] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    specs: dict[int, JsonObject | None] = field(default_factory=dict)
    no_torch: bool = False
    cancelled: bool = False

    @property
    def exit_code(self) -> int:
        """0: every result OK/WARN; 1: any LOW; 2: some device could not be probed (refused:
        lost, not answering or busy), a worker failed, torch is missing, or a cancel left no
        result."""
        if self.refused or self.errors or self.no_torch or (self.cancelled and not self.judged):
            return EXIT_CANNOT
        return EXIT_LOW if any(j.verdict == V.LOW for j in self.judged) else EXIT_OK

    def summary(self) -> list[str]:
        if self.mode == "cpu":
            n = len(self.judged)
            return [f"{CPU_RUN}: {n} result{'s' if n != 1 else ''}, values only, no spec."]
        return V.summary_lines(self.judged)

    def to_dict(self) -> JsonObject:
        return {
            "mode": self.mode,
            "cpu_run": self.mode == "cpu",
            "verdict": V.worst(self.judged),
            "exit_code": self.exit_code,
            "results": [j.to_dict() for j in self.judged],
            "gpus": {
                str(k): _run_dict(r, self.specs.get(k) if k is not None else None)
                for k, r in self.runs.items()
            },
            "summary": [*self.summary()],
            "notes": [*self.notes],
            "refused": [*self.refused],
            "errors": [*self.errors],
            "expected_source": V.EXPECTED_SOURCE,
        }


def progress_printer(stream: TextIO) -> EventCallback:
    """``on_event`` that writes one line per hello / result / retry / skip / error."""

    def show(gpu: int | None, msg: ProbeMessage) -> None:
        who = "CPU" if gpu is None else f"GPU {gpu}"
        match msg:
            case Hello(device_name=name, torch_version=torch_version):
                text = f"{name} (torch {torch_version})"
            case Result(test=test, value=value, unit=unit):
                text = f"{test}: {value:.4g} {unit}"
            case Retry(test=test, reason=reason, text=size):
                text = f"{test}: {reason}, retrying smaller {size}"
            case Skipped(test=test, reason=reason):
                text = f"{test}: skipped ({reason})"
            case Error(test=test, message=message):
                text = f"error{' in ' + test if test else ''}: {message}"
            case _:
                return
        print(sanitize(f"[{who}] {text}"), file=stream, flush=True)

    return show
