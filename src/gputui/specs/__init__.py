"""GPU spec sheets: the data file ``gpus.csv`` (one row per SKU) and the lookup from the name a
driver reports (NVML, AMD-SMI, torch) to the row.

Peaks are dense (no 2:4 sparsity); FP16 / BF16 / FP8 / INT8 are the FP32-accumulate tensor-core
(matrix-core) rates, which is what ``torch.matmul`` and ``torch._scaled_mm`` use. FP32 is the
non-tensor (CUDA-core / vector) rate. Memory sizes are decimal GB and bandwidths GB/s as marketed.

Lookup order (:func:`lookup`):

1. exact name (trimmed, case-insensitive) against the row's name strings, then its model name
   (with or without the vendor: ``H100 SXM5 80GB``, ``NVIDIA H100 SXM5 80GB``);
2. the longest name string found in the reported name on word boundaries (so ``NVIDIA L4`` never
   matches ``NVIDIA L40S``), skipping rows whose ``exclude`` strings occur in the name;
3. several rows for one name (``AMD Instinct MI250X / MI250``): the row whose SM/CU count equals
   the reported one, else the first row in file order;
4. a MIG slice or an AMD compute partition reports fewer SMs/CUs than the SKU: compute peaks
   are scaled by the share (:func:`scaled_peaks`);
5. an unknown name with compute capability (or gfx target), SM/CU count and clock: peaks
   estimated as SMs x clock x FLOP/clock/SM, labelled "estimated".

Memory size is never parsed from a name (``NVIDIA GH200 480GB`` names the CPU's memory).
"""

from __future__ import annotations

import csv
import functools
import io
import re
from dataclasses import fields
from importlib import resources
from typing import Literal

from gputui.core.frozen import frozen

__all__ = [
    "PEAK_FIELDS",
    "GpuSpec",
    "SpecMatch",
    "all_names",
    "estimate",
    "find_models",
    "load_specs",
    "lookup",
    "normalize_arch",
    "scaled_peaks",
]

DATA_FILE = "gpus.csv"

PEAK_FIELDS = (
    "fp32_tflops",
    "tf32_tflops",
    "fp16_tflops",
    "bf16_tflops",
    "fp8_tflops",
    "int8_tops",
)
"""The compute peaks (TFLOPS, INT8 in TOPS) that scale with the SM/CU share."""


@frozen(slots=False)
class GpuSpec:
    """One row of ``gpus.csv``; None where the cell is blank (no hardware path or not published)."""

    vendor: str
    model: str
    form_factor: str
    names: tuple[str, ...]
    """Exact name strings as NVML / AMD-SMI / torch report them."""
    exclude: tuple[str, ...]
    """Substrings that rule this row out of pattern matching (``4090 D``, ``Laptop``)."""
    architecture: str
    cc_or_gfx: str
    """CUDA compute capability (``9.0``) or LLVM gfx target (``gfx942``)."""
    sm_count: int | None
    """SMs (NVIDIA) or CUs (AMD) as the device reports them."""
    boost_clock_mhz: int | None
    memory_gb: float | None
    memory_type: str
    memory_bw_gbs: float | None
    fp32_tflops: float | None
    tf32_tflops: float | None
    fp16_tflops: float | None
    bf16_tflops: float | None
    fp8_tflops: float | None
    int8_tops: float | None
    tdp_w: int | None
    link_gbs: float | None
    """NVLink / XGMI (Infinity Fabric) total bidirectional GPU-to-GPU bandwidth per GPU."""
    pcie_gen: int | None
    source: str
    notes: str = ""

    @property
    def unit_name(self) -> str:
        """``SMs`` or ``CUs``."""
        return "CUs" if self.vendor.upper() == "AMD" else "SMs"


_INT_FIELDS = {"sm_count", "boost_clock_mhz", "tdp_w", "pcie_gen"}
_FLOAT_FIELDS = {"memory_gb", "memory_bw_gbs", "link_gbs", *PEAK_FIELDS}
_TUPLE_FIELDS = {"names", "exclude"}


def _parse_row(row: dict[str, str]) -> GpuSpec:
    values: dict[str, object] = {}
    for f in fields(GpuSpec):
        text = (row.get(f.name) or "").strip()
        if f.name in _TUPLE_FIELDS:
            values[f.name] = tuple(p.strip() for p in text.split("|") if p.strip())
        elif f.name in _INT_FIELDS:
            values[f.name] = int(text) if text else None
        elif f.name in _FLOAT_FIELDS:
            values[f.name] = float(text) if text else None
        else:
            values[f.name] = text
    return GpuSpec(**values)  # type: ignore[arg-type]


@functools.cache
def load_specs() -> tuple[GpuSpec, ...]:
    """Every row of the packaged ``gpus.csv``, in file order (read once)."""
    text = resources.files(__name__).joinpath(DATA_FILE).read_text(encoding="utf-8")
    return tuple(_parse_row(row) for row in csv.DictReader(io.StringIO(text)))


@frozen(slots=False)
class SpecMatch:
    spec: GpuSpec
    how: Literal["exact", "pattern", "estimated"]
    scale: float
    """Factor applied to the compute peaks (reported SMs / the SKU's SMs; 1.0 for a whole GPU)."""
    note: str


def _norm(name: str) -> str:
    return " ".join(name.split()).casefold()


def _contains_word(name: str, pattern: str) -> bool:
    """``pattern`` occurs in ``name`` with no letter or digit right before or after it."""
    return re.search(r"(?<![0-9a-z])" + re.escape(pattern) + r"(?![0-9a-z])", name) is not None


def _pick(candidates: list[GpuSpec], sm_count: int | None) -> GpuSpec:
    if sm_count is not None:
        for spec in candidates:
            if spec.sm_count == sm_count:
                return spec
    return candidates[0]


def _scaled(spec: GpuSpec, how: str, sm_count: int | None, why: str) -> SpecMatch:
    full = spec.sm_count
    if sm_count is None or full is None or sm_count == full:
        return SpecMatch(spec, how, 1.0, why)  # type: ignore[arg-type]
    unit = spec.unit_name
    if 0 < sm_count < full:
        scale = sm_count / full
        part = "compute partition" if unit == "CUs" else "MIG slice"
        note = (
            f"{why}; {sm_count} of {full} {unit} ({part}): compute peaks "
            f"scaled by {scale:.3f}; memory size and bandwidth are the whole GPU's"
        )
        return SpecMatch(spec, how, scale, note)  # type: ignore[arg-type]
    note = f"{why}; the device reports {sm_count} {unit}, the spec row {full}: peaks not scaled"
    return SpecMatch(spec, how, 1.0, note)  # type: ignore[arg-type]


def lookup(
    name: str,
    *,
    sm_count: int | None = None,
    clock_mhz: int | None = None,
    compute_capability: str | None = None,
) -> SpecMatch | None:
    """The spec row for a reported device name, or an estimate, or None (see the module doc).

    ``sm_count``: SMs/CUs the device reports (breaks ties, scales MIG slices and partitions);
    ``clock_mhz``: max SM clock, for estimates; ``compute_capability``: ``9.0`` / ``sm_90`` /
    ``gfx942:sramecc+:xnack-``, for estimates."""
    key = _norm(name)
    specs = load_specs()
    if key:
        exact = [s for s in specs if any(_norm(n) == key for n in s.names)]
        if exact:
            return _scaled(_pick(exact, sm_count), "exact", sm_count, "exact name")
        by_model = [s for s in specs if key in (_norm(s.model), _norm(f"{s.vendor} {s.model}"))]
        if by_model:
            return _scaled(_pick(by_model, sm_count), "exact", sm_count, "exact model name")
        best_len = 0
        best: list[GpuSpec] = []
        for spec in specs:
            if any(_norm(x) in key for x in spec.exclude):
                continue
            length = max(
                (len(_norm(n)) for n in spec.names if _contains_word(key, _norm(n))), default=0
            )
            if length > best_len:
                best_len, best = length, [spec]
            elif length and length == best_len:
                best.append(spec)
        if best:
            spec = _pick(best, sm_count)
            pattern = max((n for n in spec.names if _contains_word(key, _norm(n))), key=len)
            return _scaled(spec, "pattern", sm_count, f"name contains {pattern!r}")
    return estimate(
        name, sm_count=sm_count, clock_mhz=clock_mhz, compute_capability=compute_capability
    )


# Dense FLOP per clock per SM (NVIDIA) or CU (AMD):
# (FP32 vector, TF32, FP16, BF16, FP8, INT8); None = no tensor path. These reproduce the sheet
# values at the boost clock (e.g. H100 SXM: 132 x 4096 x 1.83 GHz = 989 TFLOPS BF16).
_Rates = tuple[int | None, int | None, int | None, int | None, int | None, int | None]
FLOP_PER_CLOCK: dict[str, _Rates] = {
    "6.0": (128, None, None, None, None, None),
    "7.0": (128, None, 1024, None, None, None),
    "7.5": (128, None, 1024, None, None, 2048),
    "8.0": (128, 1024, 2048, 2048, None, 4096),
    "8.6": (256, 512, 1024, 1024, None, 2048),
    "8.9": (256, 512, 1024, 1024, 2048, 2048),
    "9.0": (256, 2048, 4096, 4096, 8192, 8192),
    "10.0": (256, 4096, 8192, 8192, 16384, 16384),
    # GeForce Blackwell: FP16/BF16 and FP8 with FP32 accumulate at half the FP16-accumulate rate
    # (RTX 5090: 170 x 2407 MHz x 1024 = 419 TFLOPS FP8); INT8 accumulates in INT32, full rate.
    "12.0": (256, 256, 512, 512, 1024, 2048),
    "gfx908": (128, None, 1024, 512, None, 1024),
    "gfx90a": (128, None, 1024, 1024, None, 1024),
    "gfx942": (256, 1024, 2048, 2048, 4096, 4096),
    "gfx950": (256, None, 4096, 4096, 8192, 8192),
    "gfx1100": (256, None, 512, 512, None, None),
}
GEFORCE_FLOP_PER_CLOCK: dict[str, _Rates] = {
    # GeForce runs FP16/BF16 with FP32 accumulate at half rate.
    "7.5": (128, None, 512, None, None, 2048),
    "8.6": (256, 256, 512, 512, None, 2048),
    "8.9": (256, 256, 512, 512, 1024, 2048),
}


def normalize_arch(compute_capability: str) -> str:
    """``sm_90`` / ``90`` / ``9.0`` -> ``9.0``; ``gfx942:sramecc+:xnack-`` -> ``gfx942``."""
    text = compute_capability.strip().lower().split(":")[0]
    if text.startswith("gfx"):
        return text
    text = text.removeprefix("sm_").removeprefix("compute_")
    if text.isdigit() and len(text) in (2, 3):
        text = f"{text[:-1]}.{text[-1]}"
    return text


def estimate(
    name: str,
    *,
    sm_count: int | None,
    clock_mhz: int | None,
    compute_capability: str | None,
) -> SpecMatch | None:
    """Peaks for an unknown SKU from SMs x clock x FLOP/clock/SM; None without all three."""
    if not (compute_capability and sm_count and clock_mhz):
        return None
    arch = normalize_arch(compute_capability)
    geforce = "geforce" in name.casefold()
    rates = (GEFORCE_FLOP_PER_CLOCK if geforce else {}).get(arch) or FLOP_PER_CLOCK.get(arch)
    if rates is None:
        return None
    peaks = [None if r is None else round(sm_count * clock_mhz * 1e6 * r / 1e12, 1) for r in rates]
    amd = arch.startswith("gfx")
    unit = "CUs" if amd else "SMs"
    spec = GpuSpec(
        vendor="AMD" if amd else "NVIDIA",
        model=name.strip() or "unknown GPU",
        form_factor="",
        names=(name.strip(),) if name.strip() else (),
        exclude=(),
        architecture=f"unknown ({arch})",
        cc_or_gfx=arch,
        sm_count=sm_count,
        boost_clock_mhz=clock_mhz,
        memory_gb=None,
        memory_type="",
        memory_bw_gbs=None,
        fp32_tflops=peaks[0],
        tf32_tflops=peaks[1],
        fp16_tflops=peaks[2],
        bf16_tflops=peaks[3],
        fp8_tflops=peaks[4],
        int8_tops=peaks[5],
        tdp_w=None,
        link_gbs=None,
        pcie_gen=None,
        source="estimated",
        notes="",
    )
    kind = (
        "GeForce (half-rate FP32 accumulate)" if geforce and arch in GEFORCE_FLOP_PER_CLOCK else ""
    )
    note = (
        f"estimated: {sm_count} {unit} x {clock_mhz} MHz x FLOP/clock/{unit[:-1]} of "
        f"{arch}{' ' + kind if kind else ''}; not a spec sheet"
    )
    return SpecMatch(spec, "estimated", 1.0, note)


def scaled_peaks(match: SpecMatch) -> dict[str, float | None]:
    """The compute peaks of the match times its scale (MIG slice / partition share), plus the
    memory bandwidth (not scaled: a slice's share of memory bandwidth is not known here)."""
    peaks: dict[str, float | None] = {}
    for name in PEAK_FIELDS:
        value = getattr(match.spec, name)
        peaks[name] = None if value is None else value * match.scale
    peaks["memory_bw_gbs"] = match.spec.memory_bw_gbs
    return peaks


def find_models(query: str) -> list[GpuSpec]:
    """Rows whose model name, with or without the vendor, contains ``query`` (trimmed,
    case-insensitive) from the start of a word to the end of a word or of its letters or digits:
    what a person types after reading the table of ``gputui specs`` (``H100 SXM`` for ``H100
    SXM5 80GB``, ``mi300x``, ``b200``), never part of a number (``H10`` is not ``H100``). Not used
    for reported device names."""
    key = _norm(query)
    if not key:
        return []
    end = r"(?:(?![0-9a-z])|(?<=[a-z])(?=[0-9])|(?<=[0-9])(?=[a-z]))"
    word = re.compile(r"(?<![0-9a-z])" + re.escape(key) + end)
    return [s for s in load_specs() if word.search(_norm(f"{s.vendor} {s.model}"))]


def all_names() -> list[str]:
    """Every name string and model name in the table (for "did you mean")."""
    names: list[str] = []
    for spec in load_specs():
        for n in (*spec.names, spec.model):
            if n not in names:
                names.append(n)
    return names
