"""Rules about who uses the GPUs: other users' processes, memory nobody explains, memory held
idle, a process list that may leave processes out."""

from __future__ import annotations

from collections.abc import Iterable

from gputui.core.command_text import command_text
from gputui.core.format import fmt_duration
from gputui.core.model import Finding, ProcessSample, Severity
from gputui.health import hints
from gputui.health.config import GIB, MIB
from gputui.health.rules.context import RuleContext, finding, gib

IDLE_PCT = 1.0
"""SM / GPU utilization at or below which a process counts as idle."""
IDLE_INFO_AFTER_S = 60.0
"""Idle memory is an ``info`` finding after this long, ``warn`` after ``idle_memory_minutes``."""
UNEXPLAINED_MEMORY_BYTES = GIB
"""GPU memory in use beyond what the listed processes hold that counts as "in use"."""
IDLE_UNEXPLAINED_MEMORY_BYTES = 256 * MIB
"""The same for ``--require-idle`` where the driver reports its reserved memory apart (NVML's
v2 memory info): "used" is then 0 on an idle GPU (a real H100 on R580 reads 0 B), and a CUDA
context alone takes more than this (about 500 MiB on an H100), while MIG instances' own
bookkeeping stays under it. Without the reserved part, "used" includes it (about 500 MiB on an
H100), so the 1 GiB floor stays. In another PID namespace the driver lists no process of the
host (the real H100's process list was empty there), so this is all that shows the holder."""


def describe_process(p: ProcessSample) -> str:
    what = command_text(p.command, p.name, None, short=True)
    if len(what) > 40:
        what = what[:39] + "…"
    return f"PID {p.pid} ({p.user or '?'}, {what})"


def held_out_of_sight(procs: list[ProcessSample]) -> str:
    """What processes not visible here hold: "40.0 GiB held by PID 4242, a process not
    visible here"."""
    sizes = [p.gpu_memory_bytes for p in procs if p.gpu_memory_bytes is not None]
    what = gib(sum(sizes)) if sizes else "memory"
    if len(procs) == 1:
        return f"{what} held by PID {procs[0].pid}, a process not visible here"
    pids = ", ".join(str(p.pid) for p in procs[:3])
    more = f" and {len(procs) - 3} more" if len(procs) > 3 else ""
    return f"{what} held by PIDs {pids}{more}, processes not visible here"


def rule_other_processes(ctx: RuleContext) -> Iterable[Finding]:
    """Who else is on the GPU. With ``require_idle`` any process fails it, whoever runs it
    (root's too: a prolog runs as root, and container workloads show as root on the host), and
    so does memory held by processes not visible here (another PID namespace, ``hidepid``);
    without, they are information."""
    config = ctx.config
    severity: Severity = "fail" if config.require_idle else "info"
    hint = (
        "wait for them to finish or ask their owners; in a prolog, drain the node"
        if config.require_idle
        else "shared GPU: expect less memory and compute for your work"
    )
    for info, s in ctx.live():
        procs = [p for p in ctx.snapshot.processes_on(s.index) if p.pid != config.own_pid]
        hidden = [p for p in procs if p.not_visible]
        # A process that exited between the driver's listing and the host lookup is nobody's job.
        running = [p for p in procs if not p.exited and not p.not_visible]
        if not config.require_idle:
            me = config.current_user
            running = [p for p in running if p.user is None or p.user != me]
        held = sum(p.gpu_memory_bytes or 0 for p in ctx.snapshot.processes_on(s.index))
        unexplained = (s.memory_used_bytes or 0) - held
        parts = []
        if running:
            listed = ", ".join(
                f"{describe_process(p)} {gib(p.gpu_memory_bytes)}"
                if p.gpu_memory_bytes is not None
                else describe_process(p)
                for p in running[:3]
            )
            more = f" and {len(running) - 3} more" if len(running) > 3 else ""
            whose = "running" if config.require_idle else "of other users"
            parts.append(f"{len(running)} process(es) {whose}: {listed}{more}")
        if hidden:
            parts.append(held_out_of_sight(hidden))
        floor = (
            IDLE_UNEXPLAINED_MEMORY_BYTES
            if config.require_idle and s.memory_reserved_bytes is not None
            else UNEXPLAINED_MEMORY_BYTES
        )
        if unexplained >= floor:
            parts.append(f"{gib(unexplained)} in use by processes not visible here")
        if parts:
            message = f"GPU {s.index}: " + "; ".join(parts)
            smi = hints.smi(hints.vendor_of(info))
            why = (
                "; a process not visible here runs in another container or PID namespace, or "
                f"/proc hides it (hidepid): look on the host as root ({smi})"
                if hidden
                else ""
            )
            yield finding("other_processes", severity, message, hint + why, s.index)


def rule_idle_memory(ctx: RuleContext) -> Iterable[Finding]:
    warn_after = ctx.config.idle_memory_minutes * 60.0
    for p in ctx.snapshot.processes:
        if not ctx.judged(p.gpu_index):
            continue
        since = ctx.idle_since.get((p.pid, p.gpu_index))
        if since is None:
            continue
        idle = ctx.now - since
        if idle < IDLE_INFO_AFTER_S:
            continue
        severity: Severity = "warn" if idle >= warn_after else "info"
        yield finding(
            "idle_memory",
            severity,
            f"{describe_process(p)} holds {gib(p.gpu_memory_bytes)} on GPU {p.gpu_index} and has "
            f"been idle for {fmt_duration(idle)}",
            "ask its owner to free it (e.g. shut down the notebook kernel) or end the process",
            p.gpu_index,
            str(p.pid),
        )


def rule_process_list(ctx: RuleContext) -> Iterable[Finding]:
    for _info, s in ctx.live():
        if s.process_list_incomplete:
            yield finding(
                "process_list",
                "info",
                f"GPU {s.index}: the process list may be incomplete (no permission to list "
                "other users' processes)",
                "run as root to see every process (older ROCm hides other users' processes "
                "from other callers)",
                s.index,
            )
