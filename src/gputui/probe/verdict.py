"""Judging probe results: spec value per test, expected fraction of spec, verdict and reasons.

Pure functions, no torch and no I/O. The expected fractions and their sources live in
:mod:`gputui.specs.expected` (published measurements: ml-engineering's MAMF table, DCGM diagnostic
thresholds, nvbandwidth, gpu-stream and gpu-fryer results):

* spec per test: ``memory_copy`` / ``memory_triad`` -> memory bandwidth; ``h2d`` / ``d2h`` -> the
  PCIe link the GPU should train to (per-lane GB/s x width at the host-limited maximum), or its
  NVLink-C2C host link; ``matmul_*`` -> the dtype's dense peak; a MIG slice's peaks are its share
  of the GPU's (:mod:`gputui.probe.specref`); ``p2p`` -> the pair's own link budget from the
  node's wiring (:mod:`gputui.probe.pairs`).
* expected fraction of spec: what a quick PyTorch probe reaches on a healthy GPU of that model,
  board form factor or family, never 100% of the marketing number, and whether a measurement
  backs it or it is assumed; None where no honest expectation exists (not judged).
* an FP32 matmul above 1.3x the FP32 peak ran as TF32: WARN, with the reason.
* verdict: OK when measured >= 90% of expected, WARN at 80-90%, LOW below 80%; on a node with
  several GPUs also LOW when below 90% of the node's best GPU for the same test and the same spec
  (gpu-fryer's rule; GPU pairs are compared only with pairs wired alike).
* every LOW is qualified with telemetry when it explains it: SM clock < 90% of max, HW slowdown /
  thermal bits, a power limit below the default, a PCIe link trained below its maximum.
* every judged result carries ``judgement``: the spec, the expected fraction with its source and
  the thresholds, in words, so that the number can be checked by hand.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputui.core.frozen import frozen
from gputui.specs.expected import Expected, expected_for, family_of

if TYPE_CHECKING:
    from gputui.core.model import GpuSample

OK, WARN, LOW, NA = "OK", "WARN", "LOW", "n/a"

OK_FRACTION = 0.90  # of expected
WARN_FRACTION = 0.80  # of expected; below it: LOW
SIBLING_FRACTION = 0.90  # of the node's best GPU for the same test
CLOCK_FRACTION = 0.90  # SM clock below this share of max is worth saying
FP32_TF32_FACTOR = 1.3
"""An FP32 matmul above this multiple of the FP32 (CUDA-core) peak ran on tensor cores: TF32
was in effect (an override variable, or a library default), so it is not an FP32 number."""

PCIE_LANE_GBS: dict[int, float] = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}
"""Usable GB/s per lane and direction after line encoding (gen3+ 128b/130b, gen6 FLIT)."""

TEST_METRIC: dict[str, str] = {
    "memory_copy": "hbm",
    "memory_triad": "hbm",
    "h2d": "pcie",
    "d2h": "pcie",
    "p2p": "p2p",
    "matmul_fp32": "fp32",
    "matmul_tf32": "tf32",
    "matmul_fp16": "fp16",
    "matmul_bf16": "bf16",
    "matmul_fp8": "fp8",
}

TEST_LABEL: dict[str, str] = {
    "memory_copy": "memory copy",
    "memory_triad": "memory triad",
    "h2d": "host to device",
    "d2h": "device to host",
    "p2p": "GPU to GPU",
    "matmul_fp32": "FP32 matmul",
    "matmul_tf32": "TF32 matmul",
    "matmul_fp16": "FP16 matmul",
    "matmul_bf16": "BF16 matmul",
    "matmul_fp8": "FP8 matmul",
}

EXPECTED_SOURCE = (
    "expected fractions per GPU model (calibrated on a real GPU), board form factor and family "
    "and per test, from measurements (gputui's probe on an H100 SXM5, ml-engineering MAMF "
    "table, torch-performance-test-data, DCGM diagnostic thresholds, nvbandwidth, gpu-stream "
    "and gpu-fryer results); each result's judgement names its own source, and "
    "expected_assumed is true where no measurement backs the fraction"
)


def family(architecture: str | None, cc_or_gfx: str | None = None) -> str:
    """``"Hopper (GH100)"`` -> ``"hopper"`` (compute capability / gfx target first when given);
    unknown -> ``"default"``. See :mod:`gputui.specs.expected`."""
    return family_of(architecture, cc_or_gfx)


def expectation(fam: str, test: str) -> Expected:
    """The expected fraction of spec for ``test`` on a GPU of family ``fam``, with its source."""
    return expected_for(fam, TEST_METRIC.get(test, ""))


def expected_fraction(fam: str, test: str) -> float | None:
    """Just the fraction of :func:`expectation` (None: not judged)."""
    return expectation(fam, test).fraction


def pcie_spec_gbs(gen: int | None, width: int | None) -> float | None:
    """Per-direction GB/s of a PCIe link: per-lane rate x width (gen5 x16 -> 63 GB/s)."""
    if not gen or not width or gen not in PCIE_LANE_GBS:
        return None
    return PCIE_LANE_GBS[gen] * width


def spec_value(
    test: str,
    peaks: Mapping[str, float | None] | None,
    *,
    pcie_gen: int | None = None,
    pcie_width: int | None = None,
    link_gbs: float | None = None,
) -> tuple[float | None, str]:
    """The spec number a test is compared with, and where it comes from, in words."""
    metric = TEST_METRIC.get(test)
    if metric == "pcie":
        value = pcie_spec_gbs(pcie_gen, pcie_width)
        if value is None or pcie_gen is None:
            return None, "PCIe link unknown"
        return value, f"PCIe gen{pcie_gen} x{pcie_width} ({PCIE_LANE_GBS[pcie_gen]:g} GB/s/lane)"
    if metric == "p2p":
        # The spec sheet's per-GPU total: a pair's budget only where every link reaches every
        # peer (NVSwitch). The report judges P2P by the pair's own wiring (probe.pairs) instead.
        if not link_gbs:
            return None, "no NVLink/XGMI figure"
        return link_gbs / 2, f"NVLink/XGMI {link_gbs:g} GB/s bidirectional / 2"
    if peaks is None or metric is None:
        return None, "no spec"
    if metric == "hbm":
        value = peaks.get("memory_bw_gbs")
        return value, "spec memory bandwidth" if value else "no spec"
    value = peaks.get(f"{metric}_tflops")
    return value, f"spec dense {metric.upper()} peak" if value else "no spec"


@frozen
class Telemetry:
    """Medians of the readings taken while one test ran (None: not read)."""

    samples: int = 0
    sm_clock_mhz: float | None = None
    power_w: float | None = None
    temperature_c: float | None = None
    power_limit_w: float | None = None
    throttle_reasons: tuple[str, ...] = ()
    pcie_gen: int | None = None  # highest seen (links down-train at idle)
    pcie_width: int | None = None


def _median(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return float(statistics.median(vals)) if vals else None


def _highest(values: Iterable[int | None]) -> int | None:
    vals = [v for v in values if v is not None]
    return max(vals) if vals else None


def summarize_samples(samples: Sequence[GpuSample]) -> Telemetry:
    """Telemetry from the readings taken while one test ran."""
    reasons: set[str] = set()
    for s in samples:
        reasons |= set(s.throttle_reasons or ())
    reasons.discard("gpu_idle")
    return Telemetry(
        samples=len(samples),
        sm_clock_mhz=_median(s.clock_sm_mhz for s in samples),
        power_w=_median(s.power_w for s in samples),
        temperature_c=_median(s.temperature_gpu_c for s in samples),
        power_limit_w=_median(s.power_limit_w for s in samples),
        throttle_reasons=tuple(sorted(reasons)),
        pcie_gen=_highest(s.pcie_gen for s in samples),
        pcie_width=_highest(s.pcie_width for s in samples),
    )


def telemetry_reasons(
    tel: Telemetry | None,
    *,
    sm_clock_max_mhz: float | None = None,
    power_default_limit_w: float | None = None,
) -> list[str]:
    """Plain-language explanations the telemetry offers for a low result."""
    if tel is None:
        return []
    out: list[str] = []
    reasons = set(tel.throttle_reasons)
    if (
        tel.sm_clock_mhz
        and sm_clock_max_mhz
        and tel.sm_clock_mhz < CLOCK_FRACTION * sm_clock_max_mhz
    ):
        pct = 100 * tel.sm_clock_mhz / sm_clock_max_mhz
        by = ""
        if reasons & {"hw_thermal", "sw_thermal"}:
            by = " by thermal slowdown"
        elif "hw_power_brake" in reasons:
            by = " by the HW power brake"
        elif "hw_slowdown" in reasons:
            by = " by HW slowdown"
        elif "sw_power_cap" in reasons:
            by = " by power cap"
        elif "applications_clocks" in reasons:
            by = " by the application clocks setting"
        out.append(f"SM clock held at {tel.sm_clock_mhz:.0f} MHz ({pct:.0f}% of max){by}")
    if "hw_thermal" in reasons or "sw_thermal" in reasons:
        kind = "HW" if "hw_thermal" in reasons else "SW"
        temp = f" at {tel.temperature_c:.0f} C" if tel.temperature_c is not None else ""
        out.append(f"{kind} thermal slowdown during the test{temp}")
    if "hw_slowdown" in reasons:
        out.append("HW slowdown during the test")
    if "hw_power_brake" in reasons:
        out.append("HW power brake during the test")
    if (
        tel.power_limit_w
        and power_default_limit_w
        and tel.power_limit_w < 0.98 * power_default_limit_w
    ):
        out.append(
            f"power limit {tel.power_limit_w:.0f} W below default {power_default_limit_w:.0f} W"
        )
    return out


@dataclass
class Judged:
    """One measured result with its spec, verdict and reasons."""

    gpu: int | None  # NVML index; None for the CPU
    label: str  # "GPU 3" or "CPU"
    test: str
    value: float
    unit: str
    method: str = ""
    spec: float | None = None
    spec_source: str = ""
    expected: float | None = None  # fraction of spec
    verdict: str = NA
    reasons: list[str] = field(default_factory=list)
    sibling_gap: float | None = None  # fraction below the node's best GPU (0.18 = 18% below)
    telemetry: Telemetry | None = None
    peer: int | None = None  # p2p: the other GPU (NVML index)
    judgement: str = ""  # how the verdict was reached, in words (spec, expected, thresholds)
    expected_assumed: bool | None = None  # no measurement backs the expected share (None: n/a)
    expected_scope: str = ""  # the boards the expected share is for ("H100 SXM5 80GB" ...)

    @property
    def how(self) -> str:
        """How the number was measured and how it was judged, in one text."""
        parts = [p for p in (self.method, self.judgement and f"judged: {self.judgement}") if p]
        return "; ".join(parts)

    @property
    def pct_of_spec(self) -> float | None:
        return None if not self.spec else 100.0 * self.value / self.spec

    @property
    def pct_of_expected(self) -> float | None:
        pct = self.pct_of_spec
        return None if pct is None or not self.expected else pct / self.expected


def verdict_for(value: float, spec: float | None, expected: float | None) -> str:
    """OK >= 90% of expected, WARN 80-90%, LOW < 80%; n/a without a spec or an expectation."""
    if not spec or not expected:
        return NA
    ratio = value / (spec * expected)
    if ratio >= OK_FRACTION:
        return OK
    if ratio >= WARN_FRACTION:
        return WARN
    return LOW


def _num(value: float) -> str:
    return f"{value:,.4g}" if value < 1e4 else f"{value:,.0f}"


def explain(judged: Judged, exp: Expected | None, family_label: str = "") -> str:
    """How ``judged`` is judged, in words: the spec and where it comes from, the expected share
    with its evidence, and the value each verdict needs (or why it is not judged)."""
    if judged.gpu is None:
        return "not judged: CPU run, no spec to compare with"
    if not judged.spec:
        return f"not judged: {judged.spec_source or 'no spec'}"
    spec = f"spec {_num(judged.spec)} {judged.unit} ({judged.spec_source})"
    if exp is None or exp.fraction is None:
        why = exp.source if exp is not None else "no expected fraction"
        return f"{spec}; not judged: {why.removeprefix('not judged: ')}"
    target = judged.spec * exp.fraction
    who = f" for {family_label}" if family_label else ""
    kind = "measured" if exp.measured else "assumed, no measurement behind it"
    return (
        f"{spec}; expected {100 * exp.fraction:.0f}% of spec{who} = {_num(target)} "
        f"{judged.unit} ({kind}: {exp.source}); OK >= {_num(OK_FRACTION * target)}, "
        f"WARN >= {_num(WARN_FRACTION * target)}, LOW below (90% / 80% of expected); "
        f"with several GPUs also LOW when more than {100 * (1 - SIBLING_FRACTION):.0f}% below "
        "the best GPU on the same test"
    )


def judge(
    judged: Judged,
    *,
    sm_clock_max_mhz: float | None = None,
    power_default_limit_w: float | None = None,
) -> Judged:
    """Fill in the verdict (absolute) and, when LOW or WARN, the telemetry reasons."""
    judged.verdict = verdict_for(judged.value, judged.spec, judged.expected)
    if judged.verdict in (LOW, WARN):
        judged.reasons = telemetry_reasons(
            judged.telemetry,
            sm_clock_max_mhz=sm_clock_max_mhz,
            power_default_limit_w=power_default_limit_w,
        )
    too_fast = tf32_suspect(judged)
    if too_fast:
        judged.reasons.append(too_fast)
        if judged.verdict in (OK, NA):
            judged.verdict = WARN
    return judged


def tf32_suspect(judged: Judged) -> str | None:
    """Why an FP32 matmul result is not an FP32 number: faster than FP32 can run
    (:data:`FP32_TF32_FACTOR` x its peak); None otherwise."""
    if judged.test != "matmul_fp32" or not judged.spec:
        return None
    if judged.value <= FP32_TF32_FACTOR * judged.spec:
        return None
    return (
        f"FP32 matmul at {judged.value / judged.spec:.1f}x the FP32 peak: more than FP32 can "
        "run, so TF32 tensor cores were in effect (TORCH_ALLOW_TF32_CUBLAS_OVERRIDE, "
        "NVIDIA_TF32_OVERRIDE or a library default); not an FP32 measurement"
    )


def _sibling_key(r: Judged) -> tuple[str, float | None] | None:
    """Results that should be equal on a healthy node: the same test against the same spec.

    A GPU pair is compared only with pairs of the same link budget (an NVLink pair is not a
    PCIe pair's sibling); a pair whose wiring is unknown is compared with none."""
    if r.gpu is None or r.value <= 0:
        return None
    if TEST_METRIC.get(r.test) == "p2p" and not r.spec:
        return None
    return r.test, (round(r.spec, 3) if r.spec else None)


def apply_node_relative(
    results: Iterable[Judged],
    limits: Mapping[int, tuple[float | None, float | None]] | None = None,
) -> None:
    """LOW when a GPU is below 90% of the node's best GPU for the same test and spec (results
    of >= 2 GPUs). ``limits`` maps a GPU to (sm_clock_max_mhz, power_default_limit_w) for the
    reasons."""
    groups: dict[tuple[str, float | None], list[tuple[int, Judged]]] = {}
    for r in results:
        key = _sibling_key(r)
        if key is not None and r.gpu is not None:
            groups.setdefault(key, []).append((r.gpu, r))
    for items in groups.values():
        if len({gpu for gpu, _ in items}) < 2:
            continue
        best = max(r.value for _, r in items)
        for gpu, r in items:
            if r.value < SIBLING_FRACTION * best:
                r.sibling_gap = 1 - r.value / best
                if r.judgement:
                    r.judgement += (
                        f"; LOW: {100 * r.sibling_gap:.0f}% below the node's best GPU "
                        f"({best:.4g} {r.unit}) on the same test"
                    )
                if r.verdict != LOW:
                    r.verdict = LOW
                    clock_max, default_w = (limits or {}).get(gpu, (None, None))
                    r.reasons = telemetry_reasons(
                        r.telemetry, sm_clock_max_mhz=clock_max, power_default_limit_w=default_w
                    )


def describe(r: Judged) -> str:
    """``"BF16 matmul 18% below its siblings; SM clock held at 1410 MHz by power cap"``."""
    name = TEST_LABEL.get(r.test, r.test)
    if r.peer is not None:
        name = f"P2P copy to GPU {r.peer}"
    if r.sibling_gap is not None:
        head = f"{name} {100 * r.sibling_gap:.0f}% below its siblings"
    elif r.pct_of_spec is not None and r.expected:
        assumed = ", assumed" if r.expected_assumed else ""
        head = (
            f"{name} at {r.pct_of_spec:.0f}% of spec "
            f"(expected about {100 * r.expected:.0f}%{assumed})"
        )
    else:
        head = f"{name} {r.value:.4g} {r.unit}"
    return "; ".join([head, *r.reasons])


def summary_lines(results: Sequence[Judged]) -> list[str]:
    """One line per LOW (then WARN) result, worst first; an all-clear line when none."""
    bad = [r for r in results if r.verdict in (LOW, WARN)]
    bad.sort(key=lambda r: (r.verdict != LOW, r.gpu if r.gpu is not None else -1, r.test))
    lines = [f"{r.label}: {describe(r)}" + (" (WARN)" if r.verdict == WARN else "") for r in bad]
    if not lines:
        judged = [r for r in results if r.verdict != NA]
        if judged:
            lines.append(f"All {len(judged)} results within the expected range of spec.")
        elif results:
            lines.append("No spec comparison (CPU run or unknown GPU): values only.")
    return lines


def worst(results: Iterable[Judged]) -> str:
    verdicts = {r.verdict for r in results}
    for v in (LOW, WARN, OK):
        if v in verdicts:
            return v
    return NA
