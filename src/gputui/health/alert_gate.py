"""Which findings of a reading are worth an alert: new ones, severe enough, not too often.

- New: the finding is active and its key was not active at this severity or above in the
  previous reading. A finding that stays active is not sent again; one that gets worse (warn to
  fail) is; one that cleared (or was acknowledged) and came back is, subject to the rate limit.
- Severe enough: at or above ``min_severity``.
- Not too often: at most one alert per key and severity per ``rate_limit_s`` seconds (by the
  readings' clock), so a flapping finding does not send a message every reading. An alert held
  back by the limit is dropped, not sent later.
- One per key: a reading that lists a key twice sends the worse one.
"""

from __future__ import annotations

from collections.abc import Iterable

from gputui.core.model import SEVERITY_ORDER, Finding, Severity
from gputui.health.rollup import finding_key, sorted_findings

MAX_REMEMBERED = 1000
"""Send times kept before those past the limit are forgotten."""


class AlertGate:
    """Remembers the previous reading's active findings and when each key was last sent."""

    def __init__(self, min_severity: Severity = "warn", rate_limit_s: float = 600.0) -> None:
        self.min_rank = SEVERITY_ORDER[min_severity]
        self.rate_limit_s = rate_limit_s
        self._active: dict[str, int] = {}
        """Key -> severity rank, of the previous reading's active findings."""
        self._sent: dict[tuple[str, int], float] = {}
        """(key, severity rank) -> when last sent."""
        self.held_back = 0
        """Alerts the rate limit held back so far."""

    def take(self, findings: Iterable[Finding], now: float) -> list[Finding]:
        """The findings of the reading taken at ``now`` to alert on, worst first."""
        worst: dict[str, Finding] = {}
        for finding in findings:
            if not finding.active:
                continue
            key = finding_key(finding)
            other = worst.get(key)
            if other is None or SEVERITY_ORDER[finding.severity] > SEVERITY_ORDER[other.severity]:
                worst[key] = finding
        previous, self._active = (
            self._active,
            {key: SEVERITY_ORDER[f.severity] for key, f in worst.items()},
        )
        chosen = []
        for key, finding in worst.items():
            rank = SEVERITY_ORDER[finding.severity]
            if rank < self.min_rank or previous.get(key, -1) >= rank:
                continue
            if self._limited(key, rank, now):
                self.held_back += 1
                continue
            self._sent[(key, rank)] = now
            chosen.append(finding)
        if len(self._sent) > MAX_REMEMBERED:
            self._forget(now)
        return sorted_findings(chosen)

    def _forget(self, now: float) -> None:
        """Drop the send times the limit no longer needs (keys with subjects that come and go:
        processes, links)."""
        self._sent = {k: t for k, t in self._sent.items() if self._limited_since(t, now)}

    def _limited(self, key: str, rank: int, now: float) -> bool:
        last = self._sent.get((key, rank))
        return last is not None and self._limited_since(last, now)

    def _limited_since(self, last: float, now: float) -> bool:
        # a clock that went back (the wall clock set back) does not hold alerts back for ever
        return 0 <= now - last < self.rate_limit_s


__all__ = ["AlertGate"]
