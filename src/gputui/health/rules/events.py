"""Rules over events (XIDs, ECC and GPU-lost events): findings listed until acknowledged.

An XID from the kernel log that no longer counts (see :mod:`.aging`) is ``info``, saying when it
happened and why; an XID on a MIG instance names the instance."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gputui.core.format import fmt_datetime
from gputui.core.mig import mig_profile
from gputui.core.model import Action, Finding, GpuEvent, Severity
from gputui.core.xid import KERNEL_LOG_MARKERS, XID_TABLE, describe_xid, xid_hint
from gputui.health import hints
from gputui.health.actions import xid_action
from gputui.health.rules.aging import HISTORY_HINT, history_reason, markers
from gputui.health.rules.context import RuleContext


def event_key(event: GpuEvent) -> str:
    gpu = "node" if event.gpu_index is None else event.gpu_index
    if event.kind == "xid":
        return f"xid:{gpu}:{event.code}" + _instance_key(event)
    return f"gpu_event:{gpu}:{event.kind}"


def _instance_key(event: GpuEvent) -> str:
    """``:gi5:ci2`` for an XID the driver attributed to a MIG instance, else ``""``."""
    key = "" if event.gpu_instance_id is None else f":gi{event.gpu_instance_id}"
    return key + ("" if event.compute_instance_id is None else f":ci{event.compute_instance_id}")


def _grouped(
    events: Iterable[GpuEvent], accept: Callable[[GpuEvent], bool]
) -> dict[str, list[GpuEvent]]:
    groups: dict[str, list[GpuEvent]] = {}
    for event in events:
        if accept(event):
            groups.setdefault(event_key(event), []).append(event)
    return groups


def _event_finding(
    rule: str,
    key: str,
    severity: Severity,
    message: str,
    hint: str,
    group: list[GpuEvent],
    after: str = "",
    action: Action = "none",
) -> Finding:
    times = [e.timestamp for e in group]
    count = f" (×{len(group)})" if len(group) > 1 else ""
    return Finding(
        rule=rule,
        severity=severity,
        message=message + count + after,
        hint=hint,
        gpu_index=group[0].gpu_index,
        key=key,
        first_seen=min(times),
        last_seen=max(times),
        action=action,
    )


def rule_xid(ctx: RuleContext) -> Iterable[Finding]:
    marks = markers(ctx.events)
    for key, group in _grouped(ctx.events, lambda e: e.kind == "xid").items():
        code = group[0].code if group[0].code is not None else -1
        severity, meaning = describe_xid(code)
        where = _xid_where(group[0], ctx)
        text = f": {meaning}" if code in XID_TABLE else " (see NVIDIA's XID catalog)"
        reasons = [history_reason(e, marks, ctx) for e in group]
        current = [e for e, reason in zip(group, reasons, strict=True) if reason is None]
        if current:
            message = f"XID {code}{where}{text}"
            action = xid_action(code, current[-1].message or "")
            yield _event_finding("xid", key, severity, message, xid_hint(code), current, "", action)
            continue
        last, reason = max(zip(group, reasons, strict=True), key=lambda pair: pair[0].timestamp)
        at = f"{'last ' if len(group) > 1 else ''}at {fmt_datetime(last.timestamp)}"
        after = f"; history: {reason}, so it no longer counts"
        message = f"XID {code}{where} {at}{text}"
        yield _event_finding("xid", key, "info", message, HISTORY_HINT, group, after)


def _xid_where(event: GpuEvent, ctx: RuleContext) -> str:
    """`` on GPU 0``, and the MIG instance the driver named: `` on GPU 0 (MIG 1g.10gb GI 5
    CI 2)``; the profile where the GPU lists one such instance."""
    where = "" if event.gpu_index is None else f" on GPU {event.gpu_index}"
    gi, ci = event.gpu_instance_id, event.compute_instance_id
    if gi is None:
        return where
    info = None if event.gpu_index is None else ctx.snapshot.node.gpu(event.gpu_index)
    matching = [
        m
        for m in (info.mig_devices if info is not None else ())
        if m.gpu_instance_id == gi and (ci is None or m.compute_instance_id == ci)
    ]
    words = ["MIG"]
    if len(matching) == 1 and matching[0].name:
        words.append(mig_profile(matching[0].name))
    words.append(f"GI {gi}")
    if ci is not None:
        words.append(f"CI {ci}")
    return f"{where} ({' '.join(words)})"


_EVENT_ACTIONS: dict[str, Action] = {
    "ecc_double_bit": "reset_gpu",
    "ecc_single_bit": "none",
    "gpu_lost": "reboot",
}
"""What to do about each event kind (another kind: ``watch``)."""

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
    def accept(e: GpuEvent) -> bool:
        return e.kind != "xid" and e.kind not in KERNEL_LOG_MARKERS

    for key, group in _grouped(ctx.events, accept).items():
        first = group[0]
        known = _EVENT_KINDS.get(first.kind)
        node = ctx.snapshot.node
        v = hints.vendor_of(None if first.gpu_index is None else node.gpu(first.gpu_index), node)
        severity, words, hint = known or (
            "warn",
            first.kind.replace("_", " "),
            f"check the kernel log and the vendor tool's report ({hints.query(v)})",
        )
        where = "" if first.gpu_index is None else f"GPU {first.gpu_index}: "
        detail = f" ({group[-1].message})" if group[-1].message and known is None else ""
        if first.gpu_index is not None and "reset the GPU" in hint:
            command = hints.reset(v, first.gpu_index)
            hint = hint.replace("reset the GPU", f"reset the GPU ({command})")
        action = _EVENT_ACTIONS.get(first.kind, "watch")
        message = where + words + detail
        yield _event_finding("gpu_event", key, severity, message, hint, group, "", action)
