"""Rules about GPU memory health: ECC errors, retired pages, row remapping, ECC turned off.

Lifetime uncorrected ECC errors are history on a GPU that remaps rows (A100, H100 and later:
the remapped-rows fields answer). NVIDIA's "GPU Memory Error Management" guide: uncorrectable
errors there are contained to the application that hit them, the page is offlined at once and
the row remapped at the next reset; what needs action is a remap pending (reset) or a remap
failure (RMA), which :func:`rule_row_remap` judges. On page-retirement GPUs the lifetime count
stays a warning."""

from __future__ import annotations

from collections.abc import Iterable

from gputui.core.model import Finding, GpuSample
from gputui.health import hints
from gputui.health.rules.context import (
    RuleContext,
    finding,
    is_datacenter_gpu,
    is_vgpu_guest,
)


def rule_ecc_uncorrected(ctx: RuleContext) -> Iterable[Finding]:
    for info, s in ctx.live():
        if s.ecc_volatile_uncorrected:
            yield finding(
                "ecc_uncorrected",
                "fail",
                f"GPU {s.index}: {s.ecc_volatile_uncorrected} uncorrected ECC error(s) since the "
                "last driver load",
                f"drain the node and reset the GPU "
                f"({hints.reset(hints.vendor_of(info), s.index)}); RMA if errors return",
                s.index,
            )


def remaps_rows(s: GpuSample) -> bool:
    """The GPU answers the remapped-rows fields: it remaps rows (Ampere and later datacenter
    GPUs) instead of retiring pages."""
    fields = (
        s.remapped_rows_correctable,
        s.remapped_rows_uncorrectable,
        s.remapped_rows_pending,
        s.remapped_rows_failure,
    )
    return any(value is not None for value in fields)


def rule_ecc_aggregate(ctx: RuleContext) -> Iterable[Finding]:
    for info, s in ctx.live():
        count = s.ecc_aggregate_uncorrected
        if not count:
            continue
        base = ctx.ecc_baseline.get(s.index, count)
        growth = f", up from {base} when monitoring started" if count > base else ""
        message = f"GPU {s.index}: {count} uncorrected ECC error(s) over its lifetime{growth}"
        if remaps_rows(s):
            yield finding(
                "ecc_aggregate",
                "info",
                message + " (history: this GPU remaps the rows they hit)",
                "nothing to do while no row remap is pending or failed (the row_remap rule "
                "judges those)",
                s.index,
            )
            continue
        v = hints.vendor_of(info)
        yield finding(
            "ecc_aggregate",
            "warn",
            message,
            f"watch the count ({hints.ecc_counts(v, s.index)}); if it grows, check the retired "
            f"pages ({hints.retired_pages(v, s.index)}) and plan an RMA",
            s.index,
        )


def rule_retired_pages(ctx: RuleContext) -> Iterable[Finding]:
    for info, s in ctx.live():
        if s.retired_pages_pending:
            v = hints.vendor_of(info)
            yield finding(
                "retired_pages",
                "fail",
                f"GPU {s.index}: retired memory pages pending",
                f"reset the GPU ({hints.reset(v, s.index)}) or reboot so the page retirement "
                f"takes effect; {hints.retired_pages(v, s.index)} lists the pages",
                s.index,
            )


def rule_row_remap(ctx: RuleContext) -> Iterable[Finding]:
    for info, s in ctx.live():
        if s.remapped_rows_failure:
            yield finding(
                "row_remap",
                "fail",
                f"GPU {s.index}: row remapping failed (no spare rows left)",
                "drain the node; the GPU needs an RMA",
                s.index,
                "failure",
            )
        elif s.remapped_rows_pending:
            yield finding(
                "row_remap",
                "warn",
                f"GPU {s.index}: row remap pending, reset needed",
                f"reset the GPU ({hints.reset(hints.vendor_of(info), s.index)}) at the next "
                "opportunity; work can go on until then",
                s.index,
                "pending",
            )


def rule_ecc_disabled(ctx: RuleContext) -> Iterable[Finding]:
    for info, s in ctx.live():
        if (
            info is not None
            and info.ecc_enabled is False
            and is_datacenter_gpu(info)
            and not is_vgpu_guest(info)
        ):
            yield finding(
                "ecc_disabled",
                "warn",
                f"GPU {s.index}: ECC is disabled on a datacenter GPU ({info.name})",
                f"{hints.enable_ecc(info.vendor)}; memory errors go undetected without it",
                s.index,
            )
