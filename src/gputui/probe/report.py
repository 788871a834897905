"""Judging what the workers measured and reporting it: ``gputui probe`` and ``check --probe``.

Each result is compared with the spec of the GPU it ran on (:mod:`gputui.specs`) through the
rules in :mod:`gputui.probe.verdict`; :class:`ProbeReport` holds the outcome with its exit code,
:func:`render_table` its text form (its JSON form: :mod:`gputui.probe.output`),
:func:`progress_printer` the live progress lines.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from gputui.core.format import sanitize
from gputui.core.model import GpuInfo, NodeInfo
from gputui.probe import verdict as V
from gputui.probe.pairs import PairSpec, pair_spec
from gputui.probe.protocol import Error, Hello, ProbeMessage, Result, Retry, Skipped
from gputui.probe.runs import EventCallback, GpuRun
from gputui.probe.specref import SpecRef, host_link_spec, spec_for
from gputui.probe.verdict import Judged
from gputui.specs import SpecMatch
from gputui.specs.expected import C2C_EXPECTED, expected_for

if TYPE_CHECKING:
    from gputui.probe.output import SpecSummary

EXIT_OK, EXIT_LOW, EXIT_CANNOT = 0, 1, 2

CPU_RUN = "CPU run (--cpu): measured on this machine's CPU, not on a GPU"
"""The label of a CPU run: the title of its text output and the start of its summary."""

SPEC_SHEET_METRICS = frozenset({"hbm", "fp32", "tf32", "fp16", "bf16", "fp8"})
"""Metrics whose spec is a spec-sheet number (the others come from the PCIe link / wiring)."""


def _family(info: GpuInfo, match: SpecMatch | None) -> str:
    if match is not None:
        return V.family(match.spec.architecture, match.spec.cc_or_gfx)
    return V.family(info.architecture, info.compute_capability)


def _pcie_reason(judged: Judged, info: GpuInfo) -> str | None:
    """A LOW / WARN host copy on a link that ran below what it should train to."""
    tel = judged.telemetry
    if tel is None or not tel.pcie_gen or not tel.pcie_width:
        return None
    gen, width = info.pcie_max_gen, info.pcie_max_width
    if (gen and tel.pcie_gen < gen) or (width and tel.pcie_width < width):
        return (
            f"PCIe link at gen{tel.pcie_gen} x{tel.pcie_width} during the test "
            f"(it should train to gen{gen or '?'} x{width or '?'})"
        )
    return None


def judge_result(
    gpu: int | None,
    label: str,
    result: Result,
    node: NodeInfo | None,
    telemetry: V.Telemetry | None = None,
    spec: SpecRef | None = None,
) -> Judged:
    """One result judged against the spec of the GPU it ran on (the command and the probe screen
    both judge through this): spec value and source, expected fraction with its evidence,
    verdict, telemetry reasons, and the whole judgement in words (``Judged.judgement``).

    ``spec``: the GPU's :func:`spec_for`, when the caller has it already (a MIG GPU's is its
    probed slice's share). P2P results are judged against their pair's budget from ``node``'s
    wiring (:func:`pair_spec`); host copies against the PCIe link, or the NVLink-C2C link where
    the GPU has no PCIe link of its own (:func:`host_link_spec`). The expected fraction is the
    GPU's model's, board form factor's or family's (:func:`expected_for`); on a MIG slice it is
    marked assumed (it was measured on whole GPUs)."""
    judged = Judged(
        gpu=gpu,
        label=label,
        test=result.test,
        value=result.value,
        unit=result.unit,
        method=result.method,
        telemetry=telemetry,
        peer=_peer(result),
    )
    info = node.gpu(gpu) if (node is not None and gpu is not None) else None
    if info is None:
        judged.spec_source = "CPU run: no spec comparison" if gpu is None else "no spec"
        judged.judgement = V.explain(judged, None)
        return judged
    ref = spec if spec is not None else spec_for(info)
    match, peaks = ref.match, ref.peaks
    fam = _family(info, match)
    metric = V.TEST_METRIC.get(judged.test, "")
    host_link = host_link_spec(info, match) if metric == "pcie" else None
    if metric == "p2p":
        if judged.peer is None:
            pair = PairSpec(None, "the destination GPU is not known: no pair budget")
        elif result.details.get("peer_access") is False:
            pair = PairSpec(
                None,
                f"no peer access between GPU {info.index} and GPU {judged.peer} (the runtime "
                "refuses it), so torch copied through host memory: not a GPU-to-GPU link",
            )
        else:
            pair = pair_spec(node, info.index, judged.peer)
        judged.spec, judged.spec_source = pair.gbs, pair.source
        metric = pair.metric
    elif host_link is not None:
        judged.spec, judged.spec_source = host_link
    else:
        tel = judged.telemetry
        gen = info.pcie_max_gen or (tel.pcie_gen if tel else None)
        width = info.pcie_max_width or (tel.pcie_width if tel else None)
        judged.spec, judged.spec_source = V.spec_value(
            judged.test, peaks, pcie_gen=gen, pcie_width=width
        )
        if metric == "pcie" and judged.spec:
            judged.spec_source += " (the link's maximum)"
    if match is not None and metric in SPEC_SHEET_METRICS:
        share = ref.memory_share if metric == "hbm" else ref.compute_share
        if judged.spec:
            judged.spec_source += f" of {match.spec.model} ({match.how})"
            judged.spec_source += f" {share}" if share else ""
        elif share:
            judged.spec_source = share.removeprefix("not judged: ")
    exp = expected_for(fam, metric, form=ref.form, model=ref.model)
    if host_link is not None:
        exp = C2C_EXPECTED
    elif ref.mig is not None and exp.measured:
        exp = dataclasses.replace(
            exp,
            measured=False,
            source=f"{exp.source}; measured on whole GPUs, not on a MIG slice",
        )
    judged.expected = exp.fraction if judged.spec else None
    if judged.spec and exp.fraction is not None:
        judged.expected_assumed = exp.assumed
        judged.expected_scope = exp.scope
    V.judge(
        judged,
        sm_clock_max_mhz=info.sm_clock_max_mhz,
        power_default_limit_w=info.power_default_limit_w,
    )
    if metric == "pcie" and host_link is None and judged.verdict in (V.LOW, V.WARN):
        why = _pcie_reason(judged, info)
        if why:
            judged.reasons.append(why)
    judged.judgement = V.explain(judged, exp, exp.scope)
    return judged


def _peer(result: Result) -> int | None:
    peer = result.details.get("peer")
    return peer if isinstance(peer, int) and not isinstance(peer, bool) else None


def finish_judging(judged: list[Judged], node: NodeInfo | None) -> None:
    """The rules across GPUs (:func:`~gputui.probe.verdict.apply_node_relative`), in place."""
    limits: dict[int, tuple[float | None, float | None]] = {}
    for j in judged:
        info = node.gpu(j.gpu) if (node is not None and j.gpu is not None) else None
        if info is not None:
            limits[info.index] = (info.sm_clock_max_mhz, info.power_default_limit_w)
    V.apply_node_relative(judged, limits)


def judge_runs(runs: Mapping[int | None, GpuRun], node: NodeInfo | None = None) -> list[Judged]:
    """Every result of every run as a :class:`~gputui.probe.verdict.Judged`, verdicts filled."""
    judged: list[Judged] = []
    for gpu, run in runs.items():
        info = node.gpu(gpu) if (node is not None and gpu is not None) else None
        spec = spec_for(info) if info is not None else None
        for measured in run.measurements:
            judged.append(
                judge_result(gpu, run.target.label, measured.result, node, measured.telemetry, spec)
            )
    finish_judging(judged, node)
    return judged


def _fmt(value: float | None, fmt: str = "{:.4g}") -> str:
    return "-" if value is None else fmt.format(value)


def render_table(judged: Sequence[Judged]) -> str:
    """The results as a plain-text table, one row per result, "how measured and judged" last."""
    head = (
        "GPU",
        "test",
        "measured",
        "spec",
        "% spec",
        "expected",
        "verdict",
        "how measured and judged",
    )
    rows = [
        (
            j.label,
            j.test + (f"->{j.peer}" if j.peer is not None else ""),
            f"{j.value:.4g} {j.unit}",
            "-" if j.spec is None else f"{j.spec:.4g} {j.unit}",
            _fmt(j.pct_of_spec, "{:.0f}%"),
            _fmt(None if j.expected is None else 100 * j.expected, "{:.0f}%"),
            j.verdict,
            j.how,
        )
        for j in judged
    ]
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head) - 1)]
    lines = []
    for r in (head, *rows):
        cells = [c.ljust(w) for c, w in zip(r[:-1], widths, strict=False)]
        lines.append("  ".join([*cells, r[-1]]).rstrip())
    return "\n".join(lines)


@dataclass
class ProbeReport:
    """The outcome of ``gputui probe`` / ``check --probe``."""

    mode: str  # "gpu" | "cpu"
    judged: list[Judged] = field(default_factory=list)
    runs: dict[int | None, GpuRun] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    specs: dict[int, SpecSummary | None] = field(default_factory=dict)
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


def progress_printer(stream: TextIO) -> EventCallback:
    """``on_event`` that writes one line per hello / result / retry / skip / error."""

    def show(gpu: int | None, msg: ProbeMessage) -> None:
        who = "CPU" if gpu is None else f"GPU {gpu}"
        match msg:
            case Hello(device_name=name, torch_version=torch_version):
                text = f"{name} (torch {torch_version})"
            case Result(test=test, value=value, unit=unit, details=details):
                peer = details.get("peer")
                to = f" to GPU {peer}" if isinstance(peer, int) and test == "p2p" else ""
                text = f"{test}{to}: {value:.4g} {unit}"
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
