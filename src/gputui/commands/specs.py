"""``gputui specs [NAME]``: the built-in GPU spec table, or the row a GPU name matches."""

from __future__ import annotations

import argparse
import difflib

from gputui.commands.common import Common
from gputui.commands.output import emit, error
from gputui.core.exitcodes import EXIT_OK, EXIT_USAGE
from gputui.core.frozen import frozen
from gputui.specs import (
    GpuSpec,
    SpecMatch,
    all_names,
    find_models,
    load_specs,
    lookup,
    scaled_peaks,
)
from gputui.specs.hostlinks import host_link_for
from gputui.specs.query import search


@frozen
class SpecsOptions:
    name: str | None = None


def options(args: argparse.Namespace, common: Common) -> SpecsOptions:
    return SpecsOptions(args.name)


def run(options: SpecsOptions) -> int:
    """``gputui specs``: the compact table; ``gputui specs NAME``: one row in full. NAME is a
    name a driver reports (``NVIDIA H100 80GB HBM3``) or a model name from the table, whole or
    from the start of a word (``H100 SXM5 80GB``, ``h100 sxm``), in any case, spacing or
    punctuation, with or without the vendor (``rtx4090``, ``A100 80GB``:
    :mod:`gputui.specs.query`). A name several rows share lists them, and exits 2."""
    name = options.name

    def num(value: float | None, fmt: str = "{:g}") -> str:
        return "-" if value is None else fmt.format(value)

    if name is None:
        head = ("model", "arch", "SMs/CUs", "mem GB", "BW GB/s", "BF16 TF", "FP8 TF", "TDP W")
        rows = [
            (
                s.model,
                s.cc_or_gfx,
                num(s.sm_count),
                num(s.memory_gb),
                num(s.memory_bw_gbs),
                num(s.bf16_tflops),
                num(s.fp8_tflops),
                num(s.tdp_w),
            )
            for s in load_specs()
        ]
        widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head))]
        table = []
        for r in (head, *rows):
            cells = [r[0].ljust(widths[0]), r[1].ljust(widths[1])]
            cells += [c.rjust(w) for c, w in zip(r[2:], widths[2:], strict=True)]
            table.append("  ".join(cells).rstrip())
        table.append(
            "Dense peaks (no sparsity); BF16/FP8 with FP32 accumulate. "
            "`gputui specs NAME`: one row."
        )
        emit("\n".join(table))
        return EXIT_OK
    match = lookup(name)
    if match is None:
        # As a person types it: any case, spacing, punctuation, with or without the vendor
        # (rtx4090, "A100 80GB"); then the start of a model's words (H100 SXM).
        models = search(name) or find_models(name)
        if len(models) > 1:
            error(
                f"gputui: {name!r} matches {len(models)} rows of the spec table; "
                "give more of the name, one of:"
            )
            width = max(len(spec.model) for spec in models)
            for spec in models:
                error(f"  {spec.model:<{width}}  {_row_summary(spec)}")
            return EXIT_USAGE
        if models:
            why = f"{name.strip()!r} names this row (case, blanks, punctuation, vendor aside)"
            match = SpecMatch(models[0], "pattern", 1.0, why)
    if match is None:
        close = difflib.get_close_matches(name.strip(), all_names(), n=5, cutoff=0.5)
        error(f"gputui: no spec for {name!r}")
        if close:
            error("Close names: " + ", ".join(repr(c) for c in close))
        error("`gputui specs` lists every row.")
        return EXIT_USAGE
    s = match.spec
    peaks = scaled_peaks(match)
    unit = s.unit_name
    lines = [
        ("model", f"{s.vendor} {s.model}" + (f" ({s.form_factor})" if s.form_factor else "")),
        ("matched", f"{match.how}: {match.note} (scale {match.scale:g})"),
        ("names", " | ".join(s.names) or "-"),
        ("architecture", f"{s.architecture} ({s.cc_or_gfx})"),
        (unit, num(s.sm_count)),
        ("boost clock", num(s.boost_clock_mhz, "{:g} MHz")),
        ("memory", num(s.memory_gb, "{:g} GB") + (f" {s.memory_type}" if s.memory_type else "")),
        ("bandwidth", num(s.memory_bw_gbs, "{:g} GB/s")),
        ("FP32", num(peaks["fp32_tflops"], "{:.4g} TFLOPS") + " (non-tensor)"),
        ("TF32", num(peaks["tf32_tflops"], "{:.4g} TFLOPS")),
        ("FP16", num(peaks["fp16_tflops"], "{:.4g} TFLOPS")),
        ("BF16", num(peaks["bf16_tflops"], "{:.4g} TFLOPS")),
        ("FP8", num(peaks["fp8_tflops"], "{:.4g} TFLOPS")),
        ("INT8", num(peaks["int8_tops"], "{:.4g} TOPS")),
        ("TDP", num(s.tdp_w, "{:g} W")),
        ("NVLink/XGMI", num(s.link_gbs, "{:g} GB/s")),
        ("PCIe", num(s.pcie_gen, "gen {:g}")),
    ]
    host = host_link_for(s.model)
    if host is not None:
        lines.append(("host link", f"{host.link} {host.gbs_per_direction:g} GB/s per direction"))
    lines.append(("source", s.source or "-"))
    if s.notes:
        lines.append(("notes", s.notes))
    width = max(len(k) for k, _ in lines)
    out = []
    for key, value in lines:
        out.append(f"{key.ljust(width)}  {value}")
    out.append("Peaks are dense (no sparsity); FP16/BF16/FP8/INT8 with FP32 accumulate.")
    emit("\n".join(out))
    return EXIT_OK


def _row_summary(spec: GpuSpec) -> str:
    """``108 SMs · 80 GB HBM2e · BF16 312 TFLOPS``: enough to tell candidate rows apart."""
    parts = []
    if spec.sm_count is not None:
        parts.append(f"{spec.sm_count} {spec.unit_name}")
    if spec.memory_gb is not None:
        parts.append(f"{spec.memory_gb:g} GB {spec.memory_type}".rstrip())
    if spec.bf16_tflops is not None:
        parts.append(f"BF16 {spec.bf16_tflops:g} TFLOPS")
    if spec.form_factor:
        parts.append(spec.form_factor)
    return " · ".join(parts)


__all__ = ["SpecsOptions", "options", "run"]
