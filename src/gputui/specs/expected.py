"""What share of its spec sheet a healthy GPU reaches in the probe, per GPU family and metric,
and where each number comes from.

The probe compares every result with ``spec x expected fraction`` (see
:mod:`gputui.probe.verdict`). A fraction is what published measurements of healthy GPUs of the
family reach with methods like the probe's (PyTorch ``copy_`` / triad, ``torch.mm`` of 8192²
random matrices, pinned ``copy_`` over PCIe, ``copy_`` between peers), never 100% of the
marketing number. Each entry names its evidence; an entry without a measured row says so and is
a middle value of the measured families. A fraction of None means "not judged": no honest
expectation exists (the result is shown with its value only).

Sources (as summarised in the project's probe-method and spec-sheet references):

* MAMF: ml-engineering's "maximum achievable matmul FLOPS" table (mean of 100 timed ``torch.mm``
  after 50 warm-ups, best shape, BF16 and FP8, efficiency = MAMF / spec).
* DCGM: NVIDIA DCGM diagnostic SKU thresholds (75% of NVIDIA's ``dcgmproftester`` and memcpy
  measurements).
* nvbandwidth / p2pBandwidthLatencyTest results published for H100 / H200 nodes.
* gpu-stream: te42kyfo/gpu-benches stream results (A100, H100 PCIe, H200).
* gpu-fryer: huggingface/gpu-fryer README reference numbers.
* public multi-host memory medians (read / write share of spec) for A10 and L40S.
* Azure HPC health-check floors (``check_gpu_bw``), which are minima, not typical values.

Families are keyed by compute capability (NVIDIA) or gfx target (AMD), so a GeForce part never
borrows a data-centre part's numbers (GA102 is not GA100, GB202 is not B200).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "DEFAULT_EXPECTED",
    "EXPECTED",
    "FAMILY_LABELS",
    "METRICS",
    "Expected",
    "expected_for",
    "family_of",
]

METRICS: tuple[str, ...] = ("hbm", "pcie", "p2p", "fp32", "tf32", "fp16", "bf16", "fp8")
"""What a probe test measures: device memory, host link, GPU-GPU link, matmul per precision."""


@dataclass(frozen=True, slots=True)
class Expected:
    """The share of spec a healthy GPU reaches (None: not judged) and the evidence for it."""

    fraction: float | None
    source: str
    measured: bool = True
    """False when no published measurement backs the number (an assumption, said as such)."""


def _assumed(fraction: float | None, why: str) -> Expected:
    return Expected(fraction, why, measured=False)


_NO_ROW = "no published measurement for this family: middle value of the measured families"

DEFAULT_EXPECTED: dict[str, Expected] = {
    "hbm": _assumed(0.75, _NO_ROW),
    "pcie": _assumed(0.80, _NO_ROW),
    "p2p": _assumed(0.80, _NO_ROW),
    "fp32": _assumed(0.75, _NO_ROW),
    "tf32": _assumed(0.75, _NO_ROW),
    "fp16": _assumed(0.75, _NO_ROW),
    "bf16": _assumed(0.75, _NO_ROW),
    "fp8": _assumed(0.70, _NO_ROW),
}

EXPECTED: dict[str, dict[str, Expected]] = {
    "hopper": {
        "hbm": Expected(
            0.75,
            "copy: H100 SXM memcpy diagnostic 2.48-2.51 of 3.35 TB/s (75%), DCGM proftester "
            "~2.54 TB/s (76%); H200 at least 75% (upper bound unverified)",
        ),
        "pcie": Expected(
            0.85,
            "nvbandwidth on an H200 node: H2D 55.4, D2H 55.1 GB/s = 88% / 87% of PCIe5 x16",
        ),
        "p2p": Expected(
            0.85,
            "of NVLink payload: P2P writes 371-377 GB/s on H100 and 396 GB/s on H200 of "
            "450 GB/s per direction (82-88%)",
        ),
        "fp32": _assumed(0.80, "no published FP32 (TF32 off) measurement: assumption"),
        "tf32": Expected(0.75, "gpu-fryer H100 SXM ~373 TFLOPS with TF32 = 75% of 494.5"),
        "fp16": _assumed(0.75, "as BF16 (same tensor-core rate; no separate measurement)"),
        "bf16": Expected(
            0.75,
            "MAMF H100 SXM 80.3%, H200 ~80%, GH200 83.8% at the best shape; gpu-fryer H100 "
            "~74%; a 1 s 8192³ probe sits a little below MAMF",
        ),
        "fp8": Expected(0.70, "MAMF FP8 H100 SXM 70.9%, H200 73.4%, GH200 77.6%"),
    },
    "ampere": {  # GA100: A100, A30 (compute capability 8.0)
        "hbm": Expected(
            0.85,
            "gpu-stream A100 80GB: init 1.88, read 1.77, triad 1.76 of 2.039 TB/s (86-92%); "
            "DCGM proftester 1.56 TB/s (77%)",
        ),
        "pcie": Expected(
            0.80,
            "nvbandwidth A100 H2D 25.1 GB/s at 512 MiB = 80% of PCIe4 x16 (31.5 GB/s); Azure's "
            "floor is 21 GB/s",
        ),
        "p2p": _assumed(
            0.80, "no published A100 P2P measurement; Azure's floor 235 GB/s is 78% of 300"
        ),
        "fp32": _assumed(0.80, "no published FP32 (TF32 off) measurement: assumption"),
        "tf32": Expected(0.83, "gpu-fryer A100 80GB ~130 TFLOPS with TF32 = 83% of 156"),
        "fp16": _assumed(0.85, "as BF16 (same tensor-core rate; no separate measurement)"),
        "bf16": Expected(0.85, "MAMF A100 SXM 86.9%, A100 PCIe 81.1%"),
    },
    "ampere-ga10x": {  # A10, A10G, A40, RTX A6000, RTX 3090 (compute capability 8.6)
        "hbm": Expected(0.80, "A10 memory read 83.5%, write 79.9% of spec (public medians)"),
    },
    "ada": {  # L4, L40, L40S, RTX 4090, RTX 6000 Ada (compute capability 8.9)
        "hbm": Expected(
            0.65,
            "L40S memory read 84.4% but write 50.1% of spec (public medians); copy and triad "
            "mix both, and GDDR writes are slow",
        ),
    },
    "blackwell": {  # B100, B200, GB200 (compute capability 10.0)
        "hbm": Expected(
            0.73, "DCGM proftester ~5.81 TB/s on B200: 73% of 8.0 TB/s (75% of 7.7 TB/s)"
        ),
        "bf16": Expected(0.75, "MAMF B200 77.6%, B300 78.6%, GB200 72.9%"),
        "fp16": _assumed(0.75, "as BF16 (same tensor-core rate; no separate measurement)"),
        "fp8": Expected(0.72, "MAMF FP8 B200 76.3%, B300 74.5%, GB200 72.3%"),
    },
    "cdna3": {  # MI300X, MI325X (gfx942)
        "bf16": Expected(
            0.45,
            "MAMF MI300X 51.4% with TunableOp on (ROCm 6.3), MI325X 60.4%; the probe never "
            "enables TunableOp, so an untuned share below the 51% row (to be calibrated on a "
            "real MI300X)",
        ),
        "fp16": _assumed(0.45, "as BF16 (same matrix-core rate; no separate measurement)"),
        "fp8": _assumed(0.40, "no published MI300X FP8 matmul measurement (MAMF row blank)"),
        "tf32": _assumed(
            0.45,
            "as BF16: no published XF32 measurement (the worker measures TF32 on ROCm only "
            "with HIPBLASLT_ALLOW_TF32=1 in effect)",
        ),
    },
    "cdna4": {  # MI355X (gfx950)
        "bf16": Expected(0.60, "MAMF MI355X 1565 of 2500 TFLOPS (62.6%)"),
        "fp16": _assumed(0.60, "as BF16 (same matrix-core rate; no separate measurement)"),
        "fp8": _assumed(0.55, "no published MI355X FP8 matmul measurement: assumption"),
    },
}
"""Per family and metric; a metric left out uses :data:`DEFAULT_EXPECTED`."""

FAMILY_LABELS: dict[str, str] = {
    "hopper": "Hopper (H100, H200, GH200, H20)",
    "ampere": "Ampere GA100 (A100, A30)",
    "ampere-ga10x": "Ampere GA10x (A10, A40, RTX A6000, RTX 3090)",
    "ada": "Ada (L4, L40, L40S, RTX 4090)",
    "blackwell": "Blackwell (B100, B200, GB200)",
    "cdna3": "CDNA3 (MI300X, MI325X)",
    "cdna4": "CDNA4 (MI355X)",
    "default": "any other GPU",
}

_BY_ARCH: dict[str, str] = {
    "9.0": "hopper",
    "8.0": "ampere",
    "8.6": "ampere-ga10x",
    "8.7": "ampere-ga10x",
    "8.9": "ada",
    "10.0": "blackwell",
    "gfx942": "cdna3",
    "gfx950": "cdna4",
}
_BY_NAME: tuple[tuple[str, str], ...] = (
    ("gh100", "hopper"),
    ("hopper", "hopper"),
    ("ga100", "ampere"),
    ("ga10", "ampere-ga10x"),
    ("ad10", "ada"),
    ("ada", "ada"),
    ("gb202", "default"),  # GeForce Blackwell: no measured row, never B200's numbers
    ("gb100", "blackwell"),
    ("blackwell", "blackwell"),
    ("cdna4", "cdna4"),
    ("cdna3", "cdna3"),
    ("ampere", "ampere"),
)


def family_of(architecture: str | None, cc_or_gfx: str | None = None) -> str:
    """The expectation family: from the compute capability / gfx target when known (``9.0`` ->
    ``hopper``, ``gfx942`` -> ``cdna3``), else from the architecture's name (``Hopper (GH100)``,
    ``Ampere (GA102)``); ``default`` when neither says."""
    arch = (cc_or_gfx or "").strip().lower().split(":")[0]
    if arch in _BY_ARCH:
        return _BY_ARCH[arch]
    text = (architecture or "").lower()
    for token in re.findall(r"\(([^)]*)\)", text):  # an estimate's "unknown (9.0)"
        if token.strip() in _BY_ARCH:
            return _BY_ARCH[token.strip()]
    for needle, fam in _BY_NAME:
        if needle in text:
            return fam
    return "default"


def expected_for(family: str, metric: str) -> Expected:
    """The expectation of ``metric`` for ``family`` (the default where the family has none)."""
    own = EXPECTED.get(family, {}).get(metric)
    if own is not None:
        return own
    return DEFAULT_EXPECTED.get(metric, _assumed(0.75, _NO_ROW))
