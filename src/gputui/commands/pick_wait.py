"""``gputui pick --wait``: read until the pick is complete, or the time runs out.

While it waits, one reading every ``poll_s`` (default :data:`DEFAULT_POLL_S`) tells whether
enough GPUs look free in that reading; only then is a whole window read (the window ``pick``
reads without ``--wait``, begun with that reading) and judged, and the window's verdict decides:
a GPU must stay free over the window, as always. So a long wait costs one reading (one round of
driver calls, on the session opened once) per poll, plus a window each time a reading looks
promising. When the time runs out a last window is read and judged, so the report says how the
GPUs are then, not how they were when the wait began. A window begun before the time runs out
is read to its end (at most ``--window`` past it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from gputui.commands.parsers.pick import DEFAULT_POLL_S, MAX_POLL_S, MIN_POLL_S
from gputui.core.choosing import Judged, Pick
from gputui.core.format import fmt_duration
from gputui.core.frozen import frozen
from gputui.core.model import Snapshot

_LABELS = frozenset({"lost", "unhealthy", "warning", "in MIG mode", "utilization not reported"})
_HINT = re.compile(r" \([^()]*\)$")
"""The option a reason ends with, ``(--max-util 10)``: left out of the one-line summary."""


@frozen
class Judgement:
    """Readings and the pick judged over them."""

    readings: tuple[Snapshot, ...]
    result: Pick

    @property
    def stalled(self) -> bool:
        """The driver did not answer the last reading."""
        return self.readings[-1].stall is not None


@frozen
class Reader:
    """How the wait reads and judges: the command's own readings and criteria."""

    probe: Callable[[], Snapshot]
    """One reading now."""
    window: Callable[[Snapshot], Sequence[Snapshot]]
    """A whole window of readings, begun with the given one."""
    judge: Callable[[Sequence[Snapshot]], Pick]


def wait_for_pick(
    first: Judgement,
    reader: Reader,
    *,
    until: float,
    poll_s: float,
    monotonic: Callable[[], float],
    sleep: Callable[[float], None],
) -> Judgement:
    """The first complete judgement of a window, or the last one when ``monotonic()`` passes
    ``until``, or the reading the driver did not answer (see the module doc)."""
    latest = first
    while not latest.result.complete and not latest.stalled:
        left = until - monotonic()
        if left <= 0:
            break
        sleep(min(poll_s, left))
        reading = reader.probe()
        if reading.stall is not None:
            return Judgement((reading,), reader.judge([reading]))
        out_of_time = monotonic() >= until
        if out_of_time or reader.judge([reading]).complete:
            readings = tuple(reader.window(reading))
            latest = Judgement(readings, reader.judge(readings))
            if out_of_time:
                break
    return latest


def brief(judged: Judged) -> str:
    """Why a GPU does not qualify, in a few words: ``busy (87 % util)``, ``held (39.3G in
    use)``, ``lost``."""
    reason = judged.reasons[0] if judged.reasons else "qualifies"
    label, _, detail = reason.partition(": ")
    if label == "busy" and judged.peak_util_pct is not None:
        return f"busy ({judged.peak_util_pct:.0f} % util)"
    if label == "held":
        return f"held ({detail.split(' by ')[0].split(' (')[0]})"
    if label in _LABELS:
        return label
    return _HINT.sub("", reason)


def waiting_line(result: Pick, wait_s: float) -> str:
    """The one line said when the wait begins: how long, for what, and what is missing."""
    wanted = result.wanted
    ok = sum(1 for j in result.judged if j.qualifies)
    missing = ", ".join(
        f"GPU {j.index} {brief(j)}"
        for j in sorted(result.judged, key=lambda j: j.index)
        if not j.qualifies
    )
    return (
        f"gputui pick: waiting up to {fmt_duration(wait_s)} for {wanted} free "
        f"GPU{'s' if wanted != 1 else ''} ({ok} qualif{'y' if ok != 1 else 'ies'} now)"
        + (f": {missing}" if missing else "")
    )


__all__ = [
    "DEFAULT_POLL_S",
    "MAX_POLL_S",
    "MIN_POLL_S",
    "Judgement",
    "Reader",
    "brief",
    "wait_for_pick",
    "waiting_line",
]
