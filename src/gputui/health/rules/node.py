"""Rules about the node as a whole: the driver answering, GPUs lost or missing, the CUDA driver
against torch's build."""

from __future__ import annotations

from collections.abc import Iterable

from gputui.core.format import fmt_duration
from gputui.core.model import Finding, Severity
from gputui.health import hints
from gputui.health.config import version_tuple
from gputui.health.rules.context import RuleContext, finding


def rule_not_responding(ctx: RuleContext) -> Iterable[Finding]:
    node = ctx.snapshot.node
    vendor = hints.vendor_of(None, node)
    stall = ctx.snapshot.stall
    if stall is not None:
        waited = fmt_duration(max(ctx.now - stall.since, 0.0))
        where = f"reading GPU {stall.gpu_index}, " if stall.gpu_index is not None else ""
        library = node.backend.split(":", 1)[0]
        seen = (
            f"; values shown are from {fmt_duration(max(ctx.now - stall.last_reading, 0.0))} ago"
            if stall.last_reading is not None
            else ""
        )
        yield Finding(
            rule="not_responding",
            severity="fail",
            message=f"{library} not responding for {waited} ({where}a driver call hangs){seen}",
            hint=f"check {hints.smi(vendor)} (it may hang too) and the "
            f"kernel log (dmesg) for GPU errors; drain the node, then reset the GPU or reboot",
            gpu_index=None,  # the driver's lock is node-wide: every GPU waits behind it
            key="not_responding:stall",
            action="reboot",
        )
        return
    if not node.gpus:
        yield finding(
            "not_responding",
            "fail",
            f"no GPUs found by the {node.backend} backend",
            f"check that the driver is loaded ({hints.smi(vendor)}, lsmod | grep "
            f"{hints.driver_module(vendor)}) and the devices are visible",
            None,
        )
        return
    judged = [i.index for i in node.gpus if ctx.judged(i.index)]
    readings = {s.index: s for s in ctx.snapshot.gpus}
    if judged and not any(i in readings for i in judged):
        yield finding(
            "not_responding",
            "fail",
            f"{node.backend} returned no readings",
            f"the management library is not answering: check {hints.smi(vendor)}; restart the "
            "driver or reboot if it hangs",
            None,
        )
        return
    for info, sample in ctx.samples():
        if sample.error is not None and not sample.lost:
            v = hints.vendor_of(info)
            yield finding(
                "not_responding",
                "fail",
                f"GPU {sample.index} not responding: {sample.error}",
                f"check {hints.smi(v)}, that the {hints.driver_module(v)} driver is loaded, and "
                f"the kernel log; reset the GPU ({hints.reset(v, sample.index)}) or reboot",
                sample.index,
            )


def rule_no_readings(ctx: RuleContext) -> Iterable[Finding]:
    """A GPU none of whose readings of what it is doing answered (utilization, memory, the
    process list: each failed with an error, or is not supported) is neither healthy nor idle.
    A reading the GPU does not support is no failure, and one that answered is judged."""
    for info, s in ctx.live():
        if not s.unanswered or s.utilization_gpu_pct is not None or s.memory_used_bytes is not None:
            continue
        failed = dict(s.unanswered)
        if "processes" not in failed and ctx.snapshot.processes_on(s.index):
            continue  # the process list answered: who uses the GPU is known
        by_error: dict[str, list[str]] = {}
        for reading, error in s.unanswered:
            by_error.setdefault(error, []).append(reading)
        why = "; ".join(f"{', '.join(readings)}: {error}" for error, readings in by_error.items())
        v = hints.vendor_of(info)
        yield finding(
            "no_readings",
            "fail",
            f"GPU {s.index}: no reading answered ({why})",
            f"check {hints.smi(v)} (it may fail too) and the kernel log (dmesg) for GPU errors; "
            f"drain the node, then reset the GPU ({hints.reset(v, s.index)}) or reboot",
            s.index,
        )


def rule_gpu_lost(ctx: RuleContext) -> Iterable[Finding]:
    for info, sample in ctx.samples():
        if not sample.lost:
            continue
        v = hints.vendor_of(info)
        # Backends say "GPU is lost (fell off the bus)"; anything else is worth quoting.
        error = sample.error or ""
        said = ("lost", "fell off")
        detail = "" if not error or any(w in error.lower() for w in said) else f": {error}"
        message = f"GPU {sample.index} is lost (fell off the bus){detail}"
        hint = (
            f"drain the node and reset the GPU ({hints.reset(v, sample.index)}) or reboot; "
            "reseat or RMA it if it recurs"
        )
        yield finding("gpu_lost", "fail", message, hint, sample.index)


def rule_gpu_count(ctx: RuleContext) -> Iterable[Finding]:
    expected = ctx.expected_gpus
    if expected is None:
        return
    present = [i.index for i in ctx.snapshot.node.gpus if ctx.judged(i.index)]
    if len(present) < expected:
        yield finding(
            "gpu_count",
            "fail",
            f"{len(present)} GPU(s) visible, {expected} expected",
            "a GPU is missing (fallen off the bus, not bound to the driver, or hidden): check "
            "lspci and the kernel log, then reboot or drain the node",
            None,
        )


def rule_driver_cuda(ctx: RuleContext) -> Iterable[Finding]:
    node = ctx.snapshot.node
    if not node.gpus or any(g.vendor != "nvidia" for g in node.gpus):
        return  # runtime_version is ROCm on AMD nodes
    torch_v = version_tuple(ctx.config.torch_cuda_version)
    driver_v = version_tuple(node.runtime_version)
    if torch_v is None or driver_v is None or driver_v[:2] >= torch_v[:2]:
        return
    severity: Severity = "fail" if driver_v[0] < torch_v[0] else "warn"
    yield finding(
        "driver_cuda",
        severity,
        f"CUDA driver API {node.runtime_version} < torch built for {ctx.config.torch_cuda_version}",
        "update the NVIDIA driver, or install a torch build for the driver's CUDA version "
        "(minor-version compatibility runs most kernels, but not PTX-JIT ones; a lower major "
        "version does not run at all)",
        None,
    )


SLOW_OPEN_S = 2.0
"""Opening the GPUs takes well under a second with persistence mode on."""


def rule_slow_open(ctx: RuleContext) -> Iterable[Finding]:
    """Opening the library and the GPUs took seconds: without persistence mode the driver
    initialises each GPU whenever a program opens it (1-3 s a GPU, NVIDIA's "Driver
    Persistence" notes), every job and every check paying it again."""
    node = ctx.snapshot.node
    if node.open_seconds is None or node.open_seconds < SLOW_OPEN_S:
        return
    cold = [g.index for g in node.gpus if ctx.judged(g.index) and g.persistence_mode is False]
    why = (
        f" (persistence mode is off on {len(cold)} GPU{'s' if len(cold) != 1 else ''}: the "
        "driver initialises a GPU each time a program first opens it)"
        if cold
        else ""
    )
    yield finding(
        "slow_open",
        "info",
        f"opening the GPUs took {node.open_seconds:.1f} s{why}",
        "enable persistence mode (the nvidia-persistenced service, or nvidia-smi -pm 1) so the "
        "driver keeps the GPUs initialised between programs"
        if cold
        else "check the kernel log for driver messages; a loaded node answers slowly",
        None,
    )
