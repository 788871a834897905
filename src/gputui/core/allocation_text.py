"""Short words about allocations for the dashboard: a GPU panel's tag (``job 4242 idle 12m03s``)
and the title bar's line of jobs and pods whose GPUs idle (``job 4242: 2 GPUs idle 12m03s``)."""

from __future__ import annotations

from collections.abc import Iterable

from gputui.core.allocation import Allocation, owner_text
from gputui.core.format import fmt_duration

MAX_OWNERS = 2
"""Owners named in the summary; the rest are counted."""


def gpu_tag(allocations: Iterable[Allocation], gpu_index: int, now: float) -> tuple[str, bool]:
    """The tag of GPU ``gpu_index`` and whether it idles: ``("job 4242 idle 12m03s", True)``,
    ``("pod vllm-0", False)``, ``("job 7 +1", ...)`` with another owner; ``("", False)`` for a GPU
    nobody holds (or when no scheduler answers)."""
    held = [a for a in allocations if a.gpu_index == gpu_index and a.state != "free"]
    if not held:
        return "", False
    idle = [a for a in held if a.idle]
    shown = max(idle, key=lambda a: a.idle_for(now)) if idle else held[0]
    text = owner_text(shown, short=True)
    others = len({a.owner_key for a in held}) - 1
    if others > 0:
        text += f" +{others}"
    if shown.idle:
        text += f" idle {fmt_duration(shown.idle_for(now))}"
    return text, shown.idle


def idle_owners(allocations: Iterable[Allocation], now: float) -> str:
    """The jobs and pods holding idle GPUs, longest idle first: ``job 4242: 2 GPUs idle 12m03s ·
    pod nb-0: 1 GPU idle 45s +1 more``; '' when none."""
    groups: dict[tuple[str, str], list[Allocation]] = {}
    for a in allocations:
        if a.idle and a.gpu_index is not None:
            groups.setdefault(a.owner_key, []).append(a)
    if not groups:
        return ""
    ranked = sorted(groups.values(), key=lambda held: -max(a.idle_for(now) for a in held))
    parts = []
    for held in ranked[:MAX_OWNERS]:
        gpus = len({a.gpu_index for a in held})
        longest = max(a.idle_for(now) for a in held)
        plural = "s" if gpus != 1 else ""
        parts.append(
            f"{owner_text(held[0], short=True)}: {gpus} GPU{plural} idle {fmt_duration(longest)}"
        )
    more = len(ranked) - MAX_OWNERS
    return " · ".join(parts) + (f" +{more} more" if more > 0 else "")


__all__ = ["MAX_OWNERS", "gpu_tag", "idle_owners"]
