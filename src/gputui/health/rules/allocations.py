"""The rule about GPUs a scheduler allocated that do no work (``allocated_idle``): a job or pod
holds them while others wait, so whoever owns it is the one to ask."""

from __future__ import annotations

import time
from collections.abc import Iterable

from gputui.core.allocation import STATE_WORDS, Allocation, owner_text
from gputui.core.format import fmt_duration
from gputui.core.model import Finding, Severity
from gputui.core.usage import fmt_money
from gputui.health.rules.context import RuleContext, finding


def _since(a: Allocation, now: float) -> str:
    """``allocated since 14:02 (2h 5m)``: the job's start where the scheduler says, else when
    gputui first saw the allocation."""
    when = a.started if a.started is not None else a.first_seen
    if when is None:
        return ""
    word = "allocated since" if a.started is not None else "seen allocated since"
    clock = time.strftime("%H:%M", time.localtime(when))
    return f", {word} {clock} ({fmt_duration(max(now - when, 0.0))})"


def _hint(a: Allocation) -> str:
    if a.job_id:
        who = f"ask {a.user}" if a.user else "ask the job's owner"
        return f"{who} to use the GPU or release it (scancel {a.job_id}): others may wait for it"
    where = f" -n {a.namespace}" if a.namespace else ""
    pod = a.pod_name or a.pod_uid or "?"
    return f"ask the pod's owner to use the GPU or release it (kubectl delete pod{where} {pod})"


def rule_allocated_idle(ctx: RuleContext) -> Iterable[Finding]:
    """Info while an allocated GPU does no work, warn after ``allocated_idle_minutes``; the
    owner and, with a price, what its idle time cost."""
    warn_after = ctx.config.allocated_idle_minutes * 60.0
    usage = ctx.snapshot.usage
    price = usage.gpu_hour_price if usage is not None else None
    for a in ctx.snapshot.allocations:
        if not a.idle or a.gpu_index is None or not ctx.judged(a.gpu_index):
            continue
        idle = a.idle_for(ctx.now)
        severity: Severity = "warn" if idle >= warn_after else "info"
        where = f"GPU {a.gpu_index}" + (f" ({a.mig_uuid})" if a.mig_uuid else "")
        message = (
            f"{where}: {STATE_WORDS[a.state]} for {fmt_duration(idle)}: "
            f"{owner_text(a)}{_since(a, ctx.now)}"
        )
        if a.idle_cost is not None and price is not None:
            message += f"; idle cost {fmt_money(a.idle_cost)} at {fmt_money(price)} per GPU-hour"
        owner = ":".join(a.owner_key)
        yield finding(
            "allocated_idle",
            severity,
            message,
            _hint(a),
            a.gpu_index,
            f"{owner}:{a.mig_uuid}" if a.mig_uuid else owner,
        )


__all__ = ["rule_allocated_idle"]
