"""Plain-text reports (no Textual, no colour): one snapshot for ``gputui snapshot``, and the
verdict of ``gputui check``.

Every string from a reading (host, GPU and user names, commands, messages, hints) can hold
anything, a recording most of all: each goes through :func:`gputui.format.sanitize` before it is
measured or printed, and columns are measured in terminal cells (a CJK user name is two cells a
character)."""

from __future__ import annotations

import time

from gputui.format import (
    NA,
    cell_width,
    clip,
    command_text,
    finding_text,
    fmt_bytes,
    fmt_bytes_pair,
    fmt_duration,
    fmt_elapsed,
    fmt_load,
    fmt_mhz,
    fmt_pcie,
    fmt_pct,
    fmt_power_pair,
    fmt_temp,
    pad,
    sanitize,
    short_gpu_name,
)
from gputui.health.verdict import CheckResult
from gputui.model import (
    Finding,
    GpuSample,
    ProcessSample,
    Snapshot,
    describe_throttle,
)

GPU_COLUMNS = ("GPU", "NAME", "UTIL", "MEMORY", "POWER", "TEMP", "SM CLOCK", "PCIe", "ECC", "NOTES")
PROCESS_COLUMNS = ("GPU", "PID", "USER", "GPU MEM", "SM%", "CPU%", "RSS", "TIME", "COMMAND")


def render_snapshot(snapshot: Snapshot, width: int | None = None) -> str:
    """The node line, a GPU table, the health findings, the host line and a process table;
    ``width`` cuts long lines."""
    lines = [_node_line(snapshot), ""]
    lines += _table(GPU_COLUMNS, [_gpu_row(snapshot, s) for s in snapshot.gpus])
    lines += ["", *render_findings(snapshot.findings)]
    if snapshot.host is not None:
        lines += ["", _host_line(snapshot)]
    lines.append("")
    if snapshot.processes:
        rows = [_process_row(snapshot, p) for p in snapshot.processes]
        lines += _table(PROCESS_COLUMNS, rows)
    else:
        lines.append("No GPU processes.")
    if width:
        lines = [clip(sanitize(line), width) for line in lines]
    return "\n".join(sanitize(line).rstrip() for line in lines)


def render_findings(findings: tuple[Finding, ...] | list[Finding]) -> list[str]:
    """``severity  GPU n  message  [rule]`` with the hint indented below, in the order given (the
    health monitor's: worst first, hardware faults before busy GPUs)."""
    if not findings:
        return ["No findings."]
    lines = [f"Findings ({len(findings)}):"]
    for f in findings:
        where = "node" if f.gpu_index is None else f"GPU {f.gpu_index}"
        cleared = "" if f.active else " (cleared)"
        text = finding_text(f.message, f.gpu_index)
        lines.append(
            f"  {sanitize(f.severity):<4}  {where:<6}  {text}{cleared}  [{sanitize(f.rule)}]"
        )
        if f.hint:
            lines.append(f"                {sanitize(f.hint)}")
    return lines


def _node_line(snapshot: Snapshot) -> str:
    node = snapshot.node
    runtime = "ROCm" if node.gpus and node.gpus[0].vendor == "amd" else "CUDA"
    parts = [sanitize(node.hostname), sanitize(node.backend)]
    if node.driver_version:
        parts.append(f"driver {sanitize(node.driver_version)}")
    if node.runtime_version:
        parts.append(f"{runtime} {sanitize(node.runtime_version)}")
    parts.append(f"{len(snapshot.gpus)} GPU{'s' if len(snapshot.gpus) != 1 else ''}")
    parts.append(time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(snapshot.timestamp)))
    return " · ".join(parts)


def _gpu_row(snapshot: Snapshot, sample: GpuSample) -> list[str]:
    info = snapshot.node.gpu(sample.index)
    name = short_gpu_name(sanitize(info.name)) if info else NA
    if sample.lost:
        return [
            str(sample.index),
            name,
            "LOST",
            sanitize(sample.error or "GPU is lost"),
            "",
            "",
            "",
            "",
            "",
            "",
        ]
    pcie = fmt_pcie(sample.pcie_gen, sample.pcie_width)
    if info and (info.pcie_max_gen or info.pcie_max_width):
        pcie += f" of {fmt_pcie(info.pcie_max_gen, info.pcie_max_width)}"
    ecc = sample.ecc_volatile_uncorrected
    notes = describe_throttle(sample.throttle_reasons)
    if sample.remapped_rows_pending:
        notes = ", ".join(filter(None, [notes, "row remap pending"]))
    return [
        str(sample.index),
        name,
        fmt_pct(sample.utilization_gpu_pct),
        fmt_bytes_pair(sample.memory_used_bytes, sample.memory_total_bytes),
        fmt_power_pair(sample.power_w, sample.power_limit_w),
        fmt_temp(sample.temperature_gpu_c),
        fmt_mhz(sample.clock_sm_mhz),
        pcie,
        NA if ecc is None else f"{ecc} unc",
        notes,
    ]


def _host_line(snapshot: Snapshot) -> str:
    host = snapshot.host
    assert host is not None
    return "  ".join(
        [
            f"host CPU {fmt_pct(host.cpu_pct)}",
            f"RAM {fmt_bytes_pair(host.memory_used_bytes, host.memory_total_bytes)}",
            f"swap {fmt_bytes_pair(host.swap_used_bytes, host.swap_total_bytes)}",
            f"load {fmt_load(host.load_average)}",
            f"up {fmt_duration(host.uptime_s)}",
        ]
    )


def _process_row(snapshot: Snapshot, proc: ProcessSample) -> list[str]:
    return [
        str(proc.gpu_index),
        str(proc.pid),
        sanitize(proc.user or NA),
        fmt_bytes(proc.gpu_memory_bytes),
        "-" if proc.sm_pct is None else f"{proc.sm_pct:.0f}",
        "-" if proc.cpu_pct is None else f"{proc.cpu_pct:.0f}",
        fmt_bytes(proc.host_rss_bytes),
        fmt_elapsed(proc.running_for(snapshot.timestamp)),
        command_text(proc.command, proc.name, proc.container_id),
    ]


def _table(headers: tuple[str, ...], rows: list[list[str]]) -> list[str]:
    """Left-aligned text columns, measured in terminal cells; the last column is never padded
    (it holds free text)."""
    rows = [[sanitize(cell) for cell in row] for row in rows]
    widths = [max([len(h)] + [cell_width(r[i]) for r in rows]) for i, h in enumerate(headers)]
    out = []
    for row in [list(headers), *rows]:
        cells = [pad(cell, widths[i]) for i, cell in enumerate(row[:-1])] + [row[-1]]
        out.append("  ".join(cells))
    return out


def render_check(result: CheckResult) -> str:
    """The report of ``gputui check``: headline, findings with hints, one line per GPU, notes."""
    lines = [result.headline(), "", *render_findings(result.findings)]
    lines += ["", "GPUs:"]
    names = [short_gpu_name(sanitize(g.name)) for g in result.gpus]
    width = max((cell_width(name) for name in names), default=0)
    for g, name in zip(result.gpus, names, strict=True):
        lines.append(f"  GPU {g.index:<2} {pad(name, width)}  {g.status:<4}  {g.summary}")
    if not result.gpus:
        lines.append("  none")
    lines += ["", _judged_line(result)]
    lines += [f"Note: {note}" for note in result.notes]
    if result.not_checked:
        lines.append("Not checked:")
        lines += [f"  - {item}" for item in result.not_checked]
    policy = "warnings fail (--strict)" if result.strict else "exit 0 healthy, 1 warnings, 2 failed"
    lines.append(f"Took {result.duration_s:.1f} s, no load put on the GPUs; {policy}.")
    return "\n".join(sanitize(line).rstrip() for line in lines)


def _judged_line(result: CheckResult) -> str:
    gpus = ", ".join(str(i) for i in result.checked_gpus) or "none"
    if result.selection_source == "all":
        return f"Judged: GPUs {gpus} (all {result.node_gpu_count} of the node)."
    return (
        f"Judged: GPUs {gpus} (from {result.selection_source}; "
        f"the node has {result.node_gpu_count})."
    )
