"""The health monitor: runs the rules after each reading and keeps findings across readings.

- each finding's ``first_seen`` / ``last_seen`` by ``key``;
- a condition that clears stays listed with ``active=False`` until acknowledged;
- events (XID, ECC, GPU lost) stay listed, with the time of the first and last occurrence, until
  acknowledged;
- per-process idle timers for the "memory held with no utilization" rule.

:meth:`HealthMonitor.update` returns every listed finding; which of them are new (to notify once)
is told from the listed findings alone by :class:`gputui.health.rollup.NewFindings`, so a replayed
recording notifies the same way.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
from collections.abc import Iterable, Mapping

from gputui.core.history import History
from gputui.core.model import Finding, GpuEvent, Snapshot
from gputui.health.config import HealthConfig, slurm_expected_gpus
from gputui.health.rollup import finding_sort_key
from gputui.health.rules import EVENT_RULES, IDLE_PCT, RULES, RuleContext, RuleFn, event_key

MAX_EVENTS = 1000
"""Events kept (oldest dropped first), so an XID storm cannot grow memory without bound."""


def _event_ident(e: GpuEvent) -> tuple[object, ...]:
    return (e.timestamp, e.kind, e.gpu_index, e.code, e.message, e.source)


class HealthMonitor:
    """Runs :data:`RULES` after each reading and keeps findings across readings.

    Thread-safe: the sampler thread calls :meth:`update`; the UI thread may call
    :meth:`acknowledge`, :meth:`add_events` and :attr:`findings` at any time."""

    def __init__(
        self,
        config: HealthConfig | None = None,
        *,
        env: Mapping[str, str] | None = None,
        rules: Mapping[str, tuple[RuleFn, str]] | None = None,
        platform: str = sys.platform,
    ) -> None:
        self.config = config if config is not None else HealthConfig()
        self.expected_gpus = (
            self.config.expect_gpus
            if self.config.expect_gpus is not None
            else slurm_expected_gpus(os.environ if env is None else env)
        )
        self.rules = dict(RULES if rules is None else rules)
        self.platform = platform
        self._lock = threading.Lock()
        self._findings: dict[str, Finding] = {}
        self._events: list[GpuEvent] = []
        self._event_ids: set[tuple[object, ...]] = set()
        self._idle_since: dict[tuple[int, int], float] = {}
        self._ecc_baseline: dict[int, int] = {}

    # -- input -----------------------------------------------------------------------------------

    def add_events(self, events: Iterable[GpuEvent]) -> None:
        """Events from outside the readings (e.g. XIDs from the kernel log); duplicates ignored.
        They are judged at the next :meth:`update`."""
        with self._lock:
            self._add_events(events)

    def _add_events(self, events: Iterable[GpuEvent]) -> None:
        for event in events:
            ident = _event_ident(event)
            if ident in self._event_ids:
                continue
            self._event_ids.add(ident)
            self._events.append(event)
        if len(self._events) > MAX_EVENTS:
            del self._events[: len(self._events) - MAX_EVENTS]
        if len(self._event_ids) > 10 * MAX_EVENTS:
            self._event_ids = {_event_ident(e) for e in self._events}

    def _track(self, snapshot: Snapshot) -> None:
        now = snapshot.timestamp
        util = {s.index: s.utilization_gpu_pct for s in snapshot.gpus}
        idle_now: set[tuple[int, int]] = set()
        for p in snapshot.processes:
            gpu_util = util.get(p.gpu_index)
            if (
                p.gpu_memory_bytes is not None
                and p.gpu_memory_bytes >= self.config.idle_memory_min_bytes
                and (p.sm_pct is None or p.sm_pct <= IDLE_PCT)
                and gpu_util is not None
                and gpu_util <= IDLE_PCT
            ):
                key = (p.pid, p.gpu_index)
                idle_now.add(key)
                self._idle_since.setdefault(key, now)
        for key in list(self._idle_since):
            if key not in idle_now:
                del self._idle_since[key]
        for s in snapshot.gpus:
            if s.ecc_aggregate_uncorrected is not None:
                self._ecc_baseline.setdefault(s.index, s.ecc_aggregate_uncorrected)

    # -- HealthEvaluator ---------------------------------------------------------------------------

    def update(self, snapshot: Snapshot, history: History | None = None) -> tuple[Finding, ...]:
        """Judge one reading; returns every listed finding, worst first."""
        with self._lock:
            self._add_events(snapshot.events)
            self._track(snapshot)
            ctx = RuleContext(
                snapshot=snapshot,
                config=self.config,
                expected_gpus=self.expected_gpus,
                events=tuple(self._events),
                idle_since=dict(self._idle_since),
                ecc_baseline=dict(self._ecc_baseline),
                history=history,
                platform=self.platform,
            )
            now = snapshot.timestamp
            current: dict[str, Finding] = {}
            for rule_id, (fn, _doc) in self.rules.items():
                if rule_id in self.config.ignore:
                    continue
                for finding in fn(ctx):
                    if ctx.judged(finding.gpu_index):
                        current[finding.key or f"{finding.rule}:{finding.gpu_index}"] = finding
            for key, finding in current.items():
                prev = self._findings.get(key)
                first = finding.first_seen
                if first is None:
                    first = prev.first_seen if prev is not None else now
                last = finding.last_seen if finding.last_seen is not None else now
                listed = dataclasses.replace(
                    finding, key=key, first_seen=first, last_seen=last, active=True
                )
                self._findings[key] = listed
            for key, prev in list(self._findings.items()):
                if key not in current and prev.active:
                    self._findings[key] = dataclasses.replace(prev, active=False)
            return tuple(sorted(self._findings.values(), key=finding_sort_key))

    # -- output ----------------------------------------------------------------------------------

    @property
    def findings(self) -> tuple[Finding, ...]:
        """Every listed finding as of the last update, worst first."""
        with self._lock:
            return tuple(sorted(self._findings.values(), key=finding_sort_key))

    def acknowledge(self, key: str | None = None) -> int:
        """Drop acknowledged findings; returns how many were dropped.

        ``key=None`` drops every finding that is not a live condition: cleared ones
        (``active=False``) and event findings (XID, ECC, GPU-lost events). A key drops that
        finding if it is cleared or an event finding; a live condition cannot be acknowledged
        away (it would be listed again at the next reading), so it stays and counts 0."""
        with self._lock:
            if key is None:
                keys = [
                    k for k, f in self._findings.items() if not f.active or f.rule in EVENT_RULES
                ]
            else:
                f = self._findings.get(key)
                keys = [key] if f is not None and (not f.active or f.rule in EVENT_RULES) else []
            for k in keys:
                finding = self._findings.pop(k)
                if finding.rule in EVENT_RULES:
                    # Their ids stay known, so re-reading the kernel log does not bring them back.
                    self._events = [e for e in self._events if event_key(e) != k]
            return len(keys)


__all__ = ["MAX_EVENTS", "HealthMonitor"]
