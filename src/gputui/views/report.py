"""Plain-text reports (no Textual, no colour): one snapshot for ``gputui snapshot``, and the
verdict of ``gputui check``.

Every string from a reading (host, GPU and user names, commands, messages, hints) can hold
anything, a recording most of all: each goes through :func:`gputui.core.format.sanitize` before it
is measured or printed, and columns are measured in terminal cells (a CJK user name is two cells a
character).

A GPU in MIG mode gets a line per MIG instance under its row (profile, GPU / compute instance
ids, memory, processes), its processes GI / CI columns, and a finding about processes in MIG
instances a line naming them.

Processes that run in a Slurm job, a Kubernetes pod or a container get a JOB / POD column
(:mod:`gputui.host.workload`); the usage since the session started (energy, idle and held-idle time
per GPU, what idle GPUs cost) follows the host line."""

from __future__ import annotations

import time
from collections.abc import Mapping

from gputui.core.allocation import STATE_WORDS, device_text, owner_text
from gputui.core.command_text import command_text
from gputui.core.format import (
    NA,
    cell_width,
    clip,
    finding_text,
    fmt_bytes,
    fmt_bytes_pair,
    fmt_c2c,
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
from gputui.core.mig import describe_processes, finding_note, instances_by_uuid, mig_views
from gputui.core.model import (
    Finding,
    GpuSample,
    MigDeviceInfo,
    ProcessSample,
    Snapshot,
    describe_throttle,
)
from gputui.core.usage import fmt_energy, fmt_money
from gputui.health.verdict import CheckResult
from gputui.host.pidns import namespace_note
from gputui.host.workload import COLUMN_TITLE as WORKLOAD_COLUMN
from gputui.host.workload import has_workloads, workload_label

GPU_COLUMNS = ("GPU", "NAME", "UTIL", "MEMORY", "POWER", "TEMP", "SM CLOCK", "PCIe", "ECC", "NOTES")
PROCESS_COLUMNS = ("GPU", "PID", "USER", "GPU MEM", "SM%", "CPU%", "RSS", "TIME", "COMMAND")
MIG_PROCESS_COLUMNS = ("GPU", "GI", "CI", *PROCESS_COLUMNS[1:])
"""The process table when processes run in MIG instances (the ids ``nvidia-smi`` shows)."""
MIG_INDENT = " " * 5
WORKLOAD_WIDTH = 40
"""Cells of the JOB / POD column at most: every row is padded to the widest cell, and a job or
pod name can be megabytes (longer ones are clipped with … as the dashboard clips them)."""
USER_WIDTH = 32
"""Cells of the USER column at most (a recording's user can be anything)."""


def render_snapshot(snapshot: Snapshot, width: int | None = None) -> str:
    """The node line, a GPU table, the health findings, the host line and a process table;
    ``width`` cuts long lines."""
    lines = [_node_line(snapshot), ""]
    gpu_lines = _table(GPU_COLUMNS, [_gpu_row(snapshot, s) for s in snapshot.gpus])
    lines.append(gpu_lines[0])
    for sample, line in zip(snapshot.gpus, gpu_lines[1:], strict=True):
        lines.append(line)
        if not sample.lost:
            lines += _instance_lines(snapshot, sample.index)
    notes = {f.key: finding_note(f, snapshot) for f in snapshot.findings}
    lines += ["", *render_findings(snapshot.findings, notes)]
    if snapshot.host is not None:
        lines += ["", _host_line(snapshot)]
    if snapshot.usage is not None and snapshot.usage.gpus:
        lines += ["", *render_usage(snapshot)]
    if snapshot.schedulers:
        lines += ["", *render_allocations(snapshot)]
    lines.append("")
    note = namespace_note(snapshot.node.pid_namespace)  # why no user or command, once
    if note is not None:
        lines.append(note)
    if snapshot.processes:
        instances = instances_by_uuid(snapshot)
        workloads = has_workloads(snapshot.processes)
        rows = [_process_row(snapshot, p, workloads) for p in snapshot.processes]
        columns: tuple[str, ...] = PROCESS_COLUMNS
        if workloads:  # the job / pod / container column, before the command
            columns = (*columns[:-1], WORKLOAD_COLUMN, columns[-1])
        if any(p.mig_uuid is not None for p in snapshot.processes):
            rows = [
                [row[0], *_instance_ids(p.mig_uuid, instances), *row[1:]]
                for row, p in zip(rows, snapshot.processes, strict=True)
            ]
            columns = (columns[0], *MIG_PROCESS_COLUMNS[1:3], *columns[1:])
        lines += _table(columns, rows)
    else:
        lines.append("No GPU processes.")
    if width:
        lines = [clip(sanitize(line), width) for line in lines]
    return "\n".join(sanitize(line).rstrip() for line in lines)


def render_findings(
    findings: tuple[Finding, ...] | list[Finding], notes: Mapping[str, str] | None = None
) -> list[str]:
    """``severity  GPU n  message  [rule]`` with the action and hint indented below
    (``→ reset_gpu · drain the node and ...``), in the order given (the health monitor's: worst
    first, hardware faults before busy GPUs); ``notes`` (finding key -> text) adds a line under a
    finding, e.g. the MIG instances its processes run in."""
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
        todo = [f"→ {f.action}"] if f.action != "none" else []
        if f.hint:
            todo.append(sanitize(f.hint))
        if todo:
            lines.append(f"                {' · '.join(todo)}")
        if notes and (note := notes.get(f.key)):
            lines.append(f"                {sanitize(note)}")
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
    if node.inaccessible_gpus:
        hidden = ",".join(str(i) for i in node.inaccessible_gpus)
        parts.append(f"GPU {hidden} not accessible to this user")
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
    if info is not None and (c2c := fmt_c2c(info.host_link, info.host_link_bandwidth_gbs)):
        pcie = c2c
    ecc = sample.ecc_volatile_uncorrected
    notes = describe_throttle(sample.throttle_reasons)
    if sample.remapped_rows_pending:
        notes = ", ".join(filter(None, [notes, "row remap pending"]))
    if info is not None and info.compute_partition_index is not None:
        part = f"{info.compute_partition or ''} partition {info.compute_partition_index}"
        notes = ", ".join(filter(None, [part.strip(), notes]))
    if info is not None and info.mig_enabled:
        n = len(info.mig_devices)
        mig = f"MIG: {n} instance{'s' if n != 1 else ''}"
        notes = ", ".join(filter(None, [mig, notes]))
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


def _instance_lines(snapshot: Snapshot, index: int) -> list[str]:
    """A line per MIG instance of GPU ``index``, aligned among themselves, under its row."""
    views = mig_views(snapshot, index)
    rows = [
        [
            view.profile,
            f"GI {view.info.gpu_instance_id}",
            f"CI {view.info.compute_instance_id}",
            fmt_bytes_pair(view.memory_used_bytes, view.memory_total_bytes),
            describe_processes(view.processes),
        ]
        for view in views
    ]
    lines = _table(("",) * 5, rows)[1:] if rows else []
    return [
        f"{MIG_INDENT}{'└' if k == len(lines) - 1 else '├'} {line}" for k, line in enumerate(lines)
    ]


def _instance_ids(uuid: str | None, instances: Mapping[str, MigDeviceInfo]) -> list[str]:
    info = instances.get(uuid) if uuid is not None else None
    if info is None:
        return ["-", "-"]
    return [str(info.gpu_instance_id), str(info.compute_instance_id)]


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


def _process_row(snapshot: Snapshot, proc: ProcessSample, workloads: bool = False) -> list[str]:
    """A process's cells; with ``workloads`` its job / pod / container cell before the command
    (which then leaves out the container tag the cell already gives)."""
    row = [
        str(proc.gpu_index),
        str(proc.pid),
        _clipped(proc.user or NA, USER_WIDTH),
        fmt_bytes(proc.gpu_memory_bytes),
        "-" if proc.sm_pct is None else f"{proc.sm_pct:.0f}",
        "-" if proc.cpu_pct is None else f"{proc.cpu_pct:.0f}",
        fmt_bytes(proc.host_rss_bytes),
        fmt_elapsed(proc.running_for(snapshot.timestamp)),
    ]
    if workloads:
        workload = _clipped(workload_label(proc) or "-", WORKLOAD_WIDTH)
        return [*row, workload, command_text(proc.command, proc.name, None)]
    return [*row, command_text(proc.command, proc.name, proc.container_id)]


def _clipped(text: str, width: int) -> str:
    """``text`` made safe and at most ``width`` cells, ending in … when cut."""
    safe = sanitize(text[: 4 * width])  # the cut first: a cell is never megabytes to measure
    if len(text) <= 4 * width and cell_width(safe) <= width:
        return safe
    return clip(safe, width - 1) + "…"


def _seconds(value: float) -> str:
    """``0.5s`` below ten seconds (a one-shot reading), else ``12m03s``."""
    if value <= 0:
        return "0s"
    return f"{value:.1f}s" if value < 10 else fmt_duration(value)


def render_usage(snapshot: Snapshot) -> list[str]:
    """Energy and idle time per GPU since the session started, and the GPUs idle now with what
    they cost per hour when a price is set (see :mod:`gputui.core.usage`)."""
    usage = snapshot.usage
    if usage is None:
        return []
    span = _seconds(max(snapshot.timestamp - usage.since, 0.0))
    lines = [
        f"Usage over {span} (idle: utilization below {usage.idle_util_pct:g} %; held: idle with "
        f"more than {usage.held_memory_bytes / 2**30:g} GiB in use):"
    ]
    rows = []
    for g in usage.gpus:
        share = f" ({g.idle_s / g.observed_s:.0%})" if g.observed_s > 0 else ""
        now = {None: "-", True: "held idle" if g.held_idle else "idle", False: "busy"}[g.idle]
        rows.append(
            [
                str(g.index),
                fmt_energy(g.energy_used_j),
                f"{_seconds(g.idle_s)} of {_seconds(g.observed_s)}{share}",
                _seconds(g.held_idle_s),
                now,
            ]
        )
    lines += ["  " + line for line in _table(("GPU", "ENERGY", "IDLE", "HELD IDLE", "NOW"), rows)]
    if usage.gpus_counted:
        idle = [g for g in usage.gpus if g.idle]
        names = ", ".join(f"{g.index}{' (held)' if g.held_idle else ''}" for g in idle)
        text = f"Idle now: {usage.idle_gpus} of {usage.gpus_counted} GPUs"
        text += f": GPU {names}" if idle else ""
        if usage.gpu_hour_price is not None and usage.idle_cost_per_hour is not None:
            text += (
                f"; at {fmt_money(usage.gpu_hour_price)} per GPU-hour they cost "
                f"{fmt_money(usage.idle_cost_per_hour)} per hour"
            )
            if usage.idle_cost is not None:
                text += f" ({fmt_money(usage.idle_cost)} idle so far)"
        lines.append(text)
    return lines


def render_allocations(snapshot: Snapshot) -> list[str]:
    """Each scheduler's state, then who holds each GPU and whether it works (free GPUs on one
    line): see :mod:`gputui.core.allocation`."""
    lines = []
    for s in snapshot.schedulers:
        name = "Slurm" if s.scheduler == "slurm" else "Kubernetes"
        lines.append(f"{name}: {s.state}" + (f" ({s.message})" if s.message else ""))
    held = [a for a in snapshot.allocations if a.state != "free"]
    rows = [
        [
            "-" if a.gpu_index is None else str(a.gpu_index),
            device_text(a),
            clip(owner_text(a), WORKLOAD_WIDTH),
            STATE_WORDS[a.state],
            fmt_duration(a.idle_for(snapshot.timestamp)) if a.idle else "",
        ]
        for a in held
    ]
    if rows:
        lines += _table(("GPU", "DEVICE", "HELD BY", "STATE", "IDLE"), rows)
    free = [str(a.gpu_index) for a in snapshot.allocations if a.state == "free"]
    if free:
        lines.append(f"Free (not allocated): GPU {', '.join(free)}")
    return lines


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
    lines = [result.headline(), "", *render_findings(result.findings, result.finding_notes())]
    lines += ["", "GPUs:"]
    names = [short_gpu_name(sanitize(g.name)) for g in result.gpus]
    width = max((cell_width(name) for name in names), default=0)
    for g, name in zip(result.gpus, names, strict=True):
        lines.append(f"  GPU {g.index:<2} {pad(name, width)}  {g.status:<4}  {g.summary}")
        rows = [
            [m.profile, f"GI {m.gpu_instance_id}", f"CI {m.compute_instance_id}", m.summary]
            for m in g.mig
        ]
        instances = _table(("",) * 4, rows)[1:] if rows else []
        lines += [
            f"{MIG_INDENT}{'└' if k == len(instances) - 1 else '├'} {line}"
            for k, line in enumerate(instances)
        ]
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
