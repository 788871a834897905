"""Rules over events (XIDs, ECC and GPU-lost events): findings listed until acknowledged."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gputui.health import hints
from gputui.health.rules.context import RuleContext
from gputui.model import Finding, GpuEvent, Severity
from gputui.xid import XID_TABLE, describe_xid, xid_hint


def event_key(event: GpuEvent) -> str:
    gpu = "node" if event.gpu_index is None else event.gpu_index
    if event.kind == "xid":
        return f"xid:{gpu}:{event.code}"
    return f"gpu_event:{gpu}:{event.kind}"


def _grouped(
    events: Iterable[GpuEvent], accept: Callable[[GpuEvent], bool]
) -> dict[str, list[GpuEvent]]:
    groups: dict[str, list[GpuEvent]] = {}
    for event in events:
        if accept(event):
            groups.setdefault(event_key(event), []).append(event)
    return groups


def _event_finding(
    rule: str, key: str, severity: Severity, message: str, hint: str, group: list[GpuEvent]
) -> Finding:
    times = [e.timestamp for e in group]
    count = f" (×{len(group)})" if len(group) > 1 else ""
    return Finding(
        rule=rule,
        severity=severity,
        message=message + count,
        hint=hint,
        gpu_index=group[0].gpu_index,
        key=key,
        first_seen=min(times),
        last_seen=max(times),
    )


def rule_xid(ctx: RuleContext) -> Iterable[Finding]:
    for key, group in _grouped(ctx.events, lambda e: e.kind == "xid").items():
        code = group[0].code if group[0].code is not None else -1
        severity, meaning = describe_xid(code)
        where = "" if group[0].gpu_index is None else f" on GPU {group[0].gpu_index}"
        if code in XID_TABLE:
            message = f"XID {code}{where}: {meaning}"
        else:
            message = f"XID {code}{where} (see NVIDIA's XID catalog)"
        yield _event_finding("xid", key, severity, message, xid_hint(code), group)


_EVENT_KINDS: dict[str, tuple[Severity, str, str]] = {
    "ecc_double_bit": (
        "fail",
        "double-bit (uncorrectable) ECC error",
        "drain the node and reset the GPU; RMA if it recurs",
    ),
    "ecc_single_bit": (
        "info",
        "single-bit ECC error (corrected)",
        "nothing to do unless they become frequent",
    ),
    "gpu_lost": (
        "fail",
        "GPU fell off the bus",
        "drain the node and reset the GPU or reboot; RMA if it recurs",
    ),
}


def rule_gpu_event(ctx: RuleContext) -> Iterable[Finding]:
    for key, group in _grouped(ctx.events, lambda e: e.kind != "xid").items():
        first = group[0]
        known = _EVENT_KINDS.get(first.kind)
        severity, words, hint = known or (
            "warn",
            first.kind.replace("_", " "),
            "check the kernel log and the vendor tool's report (nvidia-smi -q / amd-smi metric)",
        )
        where = "" if first.gpu_index is None else f"GPU {first.gpu_index}: "
        detail = f" ({group[-1].message})" if group[-1].message and known is None else ""
        if first.gpu_index is not None and "reset the GPU" in hint:
            v = hints.vendor_of(ctx.snapshot.node.gpu(first.gpu_index), ctx.snapshot.node)
            command = hints.reset(v, first.gpu_index)
            hint = hint.replace("reset the GPU", f"reset the GPU ({command})")
        yield _event_finding("gpu_event", key, severity, where + words + detail, hint, group)
