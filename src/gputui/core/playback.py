"""Playback: what a backend that replays a recording offers beyond reading GPUs.

A backend's :attr:`~gputui.backends.base.Backend.playback` is None for a live node and a
:class:`Playback` for a recording. The sampler, the dashboard and ``check --replay`` use this one
interface: the sampler reads its clock from it (each snapshot carries the recorded time of the
reading it replays) and takes complete readings (no slow-tier carry-over, which after a seek could
come from another moment); the dashboard moves the position; ``check`` steps through every reading.

This module is light on purpose (no recording or JSON code), so a live session never loads the
replay machinery just to ask whether it is replaying.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from gputui.core.model import Finding

if TYPE_CHECKING:
    from gputui.core.history import History
    from gputui.core.model import Snapshot

MIN_SPEED = 0.25
MAX_SPEED = 64.0


class Playback(Protocol):
    """The replay clock and its controls (thread-safe in implementations)."""

    @property
    def start(self) -> float:
        """Timestamp of the first reading."""

    @property
    def end(self) -> float:
        """Timestamp of the last reading (so far, for a recording still being written)."""

    @property
    def duration_s(self) -> float: ...

    @property
    def position(self) -> float:
        """The replay position, a recorded timestamp between :attr:`start` and :attr:`end`."""

    @property
    def speed(self) -> float: ...

    @property
    def paused(self) -> bool: ...

    @property
    def at_end(self) -> bool: ...

    def clock(self) -> float:
        """The sampler's clock: the timestamp of the recorded reading at the position."""

    def seek(self, timestamp: float) -> float:
        """Move to ``timestamp`` (clamped to the recording); returns the new position."""

    def seek_relative(self, seconds: float) -> float: ...

    def set_speed(self, speed: float) -> float:
        """Clamped to :data:`MIN_SPEED` .. :data:`MAX_SPEED`; returns the speed set."""

    def set_paused(self, paused: bool) -> None: ...

    def timestamps(self) -> Sequence[float]:
        """Every reading's timestamp, in time order."""

    def findings_at(self, timestamp: float) -> tuple[Finding, ...]:
        """The findings recorded with the reading at ``timestamp``."""


class RecordedFindings:
    """The health evaluator of a replayed session: the findings recorded with each reading (as
    they were judged when recorded) instead of judging the readings again."""

    def __init__(self, playback: Playback) -> None:
        self.playback = playback

    def update(self, snapshot: Snapshot, history: History) -> tuple[Finding, ...]:
        return self.playback.findings_at(snapshot.timestamp)

    def acknowledge(self, key: str | None = None) -> int:
        """Recorded findings cannot be acknowledged away (the recording is not changed)."""
        return 0


def clamp_speed(speed: float) -> float:
    return min(max(speed, MIN_SPEED), MAX_SPEED)


__all__ = ["MAX_SPEED", "MIN_SPEED", "Playback", "RecordedFindings", "clamp_speed"]
