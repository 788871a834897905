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
per GPU, what idle GPUs cost) follows the host line when the session is longer than a glance
(:data:`USAGE_MIN_SPAN_S`: a replayed recording; not the one reading of ``gputui snapshot``,
which says only which GPUs are idle now).

At a width (a terminal's), every line fits it as the dashboard fits its own: tables give up the
columns that matter least, then fit their last column (a command as the process table shortens
it, notes cut with ``…``), and findings and the node's facts go on under their first line.
Sizes are written GiB (the dashboard's panels write G)."""

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
    fmt_c2c,
    fmt_duration,
    fmt_elapsed,
    fmt_load,
    fmt_mhz,
    fmt_pcie,
    fmt_pct,
    fmt_power_pair,
    fmt_size,
    fmt_size_pair,
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
from gputui.core.vendor_terms import busy_title
from gputui.core.wrap import wrap_text
from gputui.health.verdict import CheckResult
from gputui.host.pidns import namespace_note
from gputui.host.workload import COLUMN_TITLE as WORKLOAD_COLUMN
from gputui.host.workload import has_workloads, workload_label
from gputui.views.table import Cell, FitText, clipped, text_table

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
USAGE_MIN_SPAN_S = 10.0
"""A session this long or longer gets the usage table; a shorter one is a glance (``gputui
snapshot`` reads for half a second), whose idle and energy figures would say nothing."""
NOTES_GIVE_WAY = (GPU_COLUMNS.index("SM CLOCK"),)
"""GPU table columns left out, in order, before NOTES gets too narrow to read."""
FINDING_INDENT = " " * 16


def render_snapshot(snapshot: Snapshot, width: int | None = None) -> str:
    """The node line, a GPU table, the health findings, the host line, the usage (sessions
    longer than a glance) and a process table; at a ``width``, every line fits it (see the
    module)."""
    lines = [*_flowed(_node_parts(snapshot), width, " · "), ""]
    gpu_lines = text_table(
        GPU_COLUMNS,
        [_gpu_row(snapshot, s) for s in snapshot.gpus],
        width=width,
        give_way=NOTES_GIVE_WAY,
    )
    lines.append(gpu_lines[0])
    for sample, line in zip(snapshot.gpus, gpu_lines[1:], strict=True):
        lines.append(line)
        if not sample.lost:
            lines += _instance_lines(snapshot, sample.index, width)
    notes = {f.key: finding_note(f, snapshot) for f in snapshot.findings}
    lines += ["", *render_findings(snapshot.findings, notes, width)]
    if snapshot.host is not None:
        lines += ["", *_flowed(_host_parts(snapshot), width, "  ")]
    usage = snapshot.usage
    if usage is not None and usage.gpus:
        if snapshot.timestamp - usage.since >= USAGE_MIN_SPAN_S:
            lines += ["", *render_usage(snapshot, width)]
        elif (idle := _idle_now(snapshot, glance=True)) is not None:
            lines += ["", *wrap_text(idle, width or 0, indent="  ")]
    if snapshot.schedulers:
        lines += ["", *render_allocations(snapshot, width)]
    lines.append("")
    note = namespace_note(snapshot.node.pid_namespace)  # why no user or command, once
    if note is not None:
        lines += wrap_text(note, width or 0, indent="  ")
    if snapshot.processes:
        lines += _process_table(snapshot, width)
    else:
        lines.append("No GPU processes.")
    if width:
        lines = [clip(sanitize(line), width) for line in lines]
    return "\n".join(sanitize(line).rstrip() for line in lines)


def _process_table(snapshot: Snapshot, width: int | None) -> list[str]:
    """GPU, [GI, CI,] PID, USER, GPU MEM, SM% (what the vendor measures), CPU%, RSS, TIME,
    [JOB / POD,] COMMAND; at a width RSS, TIME and JOB / POD give way, as in the dashboard's
    table, before COMMAND has fewer than 24 cells, and COMMAND keeps what tells processes apart."""
    instances = instances_by_uuid(snapshot)
    workloads = has_workloads(snapshot.processes)
    columns = [
        *PROCESS_COLUMNS[:4],
        busy_title(g.vendor for g in snapshot.node.gpus),
        *PROCESS_COLUMNS[5:],
    ]
    rows = [_process_row(snapshot, p, workloads) for p in snapshot.processes]
    if workloads:  # the job / pod / container column, before the command
        columns.insert(-1, WORKLOAD_COLUMN)
    if any(p.mig_uuid is not None for p in snapshot.processes):
        rows = [
            [row[0], *_instance_ids(p.mig_uuid, instances), *row[1:]]
            for row, p in zip(rows, snapshot.processes, strict=True)
        ]
        columns[1:1] = MIG_PROCESS_COLUMNS[1:3]
    give_way = [columns.index(c) for c in ("RSS", "TIME", WORKLOAD_COLUMN) if c in columns]
    return text_table(columns, rows, width=width, give_way=give_way)


def _flowed(parts: list[str], width: int | None, sep: str) -> list[str]:
    """``parts`` joined by ``sep`` in lines of at most ``width`` cells, each part whole (cut
    when longer than a line), the lines after the first indented by two."""
    if width is None:
        return [sep.join(parts)]
    lines = [""]
    for part in parts:
        joined = f"{lines[-1]}{sep}{part}" if lines[-1] else part
        if cell_width(joined) <= width or not lines[-1]:
            lines[-1] = clipped(joined, width)
        else:
            lines.append(clipped(f"  {part}", width))
    return lines


def render_findings(
    findings: tuple[Finding, ...] | list[Finding],
    notes: Mapping[str, str] | None = None,
    width: int | None = None,
) -> list[str]:
    """``severity  GPU n  message  [rule]`` with the action and hint indented below
    (``→ reset_gpu · drain the node and ...``), in the order given (the health monitor's: worst
    first, hardware faults before busy GPUs); ``notes`` (finding key -> text) adds a line under a
    finding, e.g. the MIG instances its processes run in. At a ``width``, each goes on under its
    message (a number kept with its unit)."""
    if not findings:
        return ["No findings."]
    wrap = width or 0
    lines = [f"Findings ({len(findings)}):"]
    for f in findings:
        where = "node" if f.gpu_index is None else f"GPU {f.gpu_index}"
        cleared = "" if f.active else " (cleared)"
        text = finding_text(f.message, f.gpu_index)
        head = f"  {sanitize(f.severity):<4}  {where:<6}  "
        lines += wrap_text(
            f"{text}{cleared}  [{sanitize(f.rule)}]", wrap, first=head, indent=FINDING_INDENT
        )
        todo = [f"→ {f.action}"] if f.action != "none" else []
        if f.hint:
            todo.append(sanitize(f.hint))
        for extra in (" · ".join(todo), notes.get(f.key) if notes else None):
            if extra:
                lines += wrap_text(
                    sanitize(extra), wrap, first=FINDING_INDENT, indent=FINDING_INDENT + "  "
                )
    return lines


def _node_parts(snapshot: Snapshot) -> list[str]:
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
    return parts


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
    most = fmt_pcie(info.pcie_max_gen, info.pcie_max_width) if info else NA
    if most not in (NA, pcie):  # trained below its maximum (or the maximum unknown in part)
        pcie += f" of {most}"
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
        fmt_size_pair(sample.memory_used_bytes, sample.memory_total_bytes),
        fmt_power_pair(sample.power_w, sample.power_limit_w),
        fmt_temp(sample.temperature_gpu_c),
        fmt_mhz(sample.clock_sm_mhz),
        pcie,
        NA if ecc is None else "ok" if ecc == 0 else f"{ecc} uncorr.",
        notes,
    ]


def _instance_lines(snapshot: Snapshot, index: int, width: int | None = None) -> list[str]:
    """A line per MIG instance of GPU ``index``, aligned among themselves, under its row."""
    views = mig_views(snapshot, index)
    rows: list[list[Cell]] = [
        [
            view.profile,
            f"GI {view.info.gpu_instance_id}",
            f"CI {view.info.compute_instance_id}",
            fmt_size_pair(view.memory_used_bytes, view.memory_total_bytes),
            describe_processes(view.processes),
        ]
        for view in views
    ]
    indent = MIG_INDENT + "├ "
    lines = text_table(("",) * 5, rows, width=width, indent=indent)[1:] if rows else []
    return [
        f"{MIG_INDENT}{'└' if k == len(lines) - 1 else '├'} {line[len(indent) :]}"
        for k, line in enumerate(lines)
    ]


def _instance_ids(uuid: str | None, instances: Mapping[str, MigDeviceInfo]) -> list[str]:
    info = instances.get(uuid) if uuid is not None else None
    if info is None:
        return ["-", "-"]
    return [str(info.gpu_instance_id), str(info.compute_instance_id)]


def _host_parts(snapshot: Snapshot) -> list[str]:
    host = snapshot.host
    assert host is not None
    return [
        f"host CPU {fmt_pct(host.cpu_pct)}",
        f"RAM {fmt_size_pair(host.memory_used_bytes, host.memory_total_bytes)}",
        f"swap {fmt_size_pair(host.swap_used_bytes, host.swap_total_bytes)}",
        f"load {fmt_load(host.load_average)}",
        f"up {fmt_duration(host.uptime_s)}",
    ]


def _process_row(snapshot: Snapshot, proc: ProcessSample, workloads: bool = False) -> list[Cell]:
    """A process's cells; with ``workloads`` its job / pod / container cell before the command
    (which then leaves out the container tag the cell already gives). The command is fitted to
    the width its column gets, as the dashboard's table fits it."""
    row: list[Cell] = [
        str(proc.gpu_index),
        str(proc.pid),
        _clipped(proc.user or NA, USER_WIDTH),
        fmt_size(proc.gpu_memory_bytes),
        "-" if proc.sm_pct is None else f"{proc.sm_pct:.0f}",
        "-" if proc.cpu_pct is None else f"{proc.cpu_pct:.0f}",
        fmt_size(proc.host_rss_bytes),
        fmt_elapsed(proc.running_for(snapshot.timestamp)),
    ]
    if workloads:
        workload = _clipped(workload_label(proc) or "-", WORKLOAD_WIDTH)
        return [*row, workload, _command(proc, None)]
    return [*row, _command(proc, proc.container_id)]


def _command(proc: ProcessSample, container_id: str | None) -> FitText:
    def fitted(width: int | None) -> str:
        return command_text(proc.command, proc.name, container_id, width=width)

    return fitted


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


def render_usage(snapshot: Snapshot, width: int | None = None) -> list[str]:
    """Energy and idle time per GPU since the session started, and the GPUs idle now with what
    they cost per hour when a price is set (see :mod:`gputui.core.usage`)."""
    usage = snapshot.usage
    if usage is None:
        return []
    span = _seconds(max(snapshot.timestamp - usage.since, 0.0))
    lines = wrap_text(
        f"Usage over {span} (idle: utilization below {usage.idle_util_pct:g} %; held: idle with "
        f"more than {usage.held_memory_bytes / 2**30:g} GiB in use):",
        width or 0,
        indent="  ",
    )
    rows: list[list[Cell]] = []
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
    headers = ("GPU", "ENERGY", "IDLE", "HELD IDLE", "NOW")
    lines += text_table(headers, rows, width=width, indent="  ")
    idle = _idle_now(snapshot)
    if idle is not None:
        lines += wrap_text(idle, width or 0, indent="  ")
    return lines


def _idle_now(snapshot: Snapshot, *, glance: bool = False) -> str | None:
    """``Idle now: 1 of 8 GPUs: GPU 7 (held); at 2.50 per GPU-hour they cost 2.50 per hour``
    (and what they cost so far, unless ``glance``: one reading has no "so far"); None when
    no GPU was counted, or at a ``glance`` when none is idle."""
    usage = snapshot.usage
    if usage is None or not usage.gpus_counted or (glance and not usage.idle_gpus):
        return None
    idle = [g for g in usage.gpus if g.idle]
    names = ", ".join(f"{g.index}{' (held)' if g.held_idle else ''}" for g in idle)
    text = f"Idle now: {usage.idle_gpus} of {usage.gpus_counted} GPUs"
    text += f": GPU {names}" if idle else ""
    if usage.gpu_hour_price is not None and usage.idle_cost_per_hour is not None:
        text += (
            f"; at {fmt_money(usage.gpu_hour_price)} per GPU-hour they cost "
            f"{fmt_money(usage.idle_cost_per_hour)} per hour"
        )
        if usage.idle_cost is not None and not glance:
            text += f" ({fmt_money(usage.idle_cost)} idle so far)"
    return text


def render_allocations(snapshot: Snapshot, width: int | None = None) -> list[str]:
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
        lines += text_table(("GPU", "DEVICE", "HELD BY", "STATE", "IDLE"), rows, width=width)
    free = [str(a.gpu_index) for a in snapshot.allocations if a.state == "free"]
    if free:
        lines.append(f"Free (not allocated): GPU {', '.join(free)}")
    return lines


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
        instances = text_table(("",) * 4, rows)[1:] if rows else []
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
