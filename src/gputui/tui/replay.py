"""Replay mode: what the title bar shows about a replayed recording. The app reads the position
from the sampler's :class:`~gputui.core.playback.Playback` (None for a live node)."""

from __future__ import annotations

import math

from gputui.core.frozen import frozen
from gputui.core.playback import Playback

SEEK_SHORT_S = 10.0
SEEK_LONG_S = 60.0


def fmt_hms(seconds: float) -> str:
    """``00:12:34`` (hours grow past two digits rather than wrap)."""
    if not math.isfinite(seconds) or seconds < 0:
        seconds = 0.0
    total = int(seconds)
    return f"{total // 3600:02d}:{total % 3600 // 60:02d}:{total % 60:02d}"


def fmt_speed(speed: float) -> str:
    return f"×{speed:g}"


@frozen(slots=False)
class ReplayStatus:
    """What the title bar shows in replay mode."""

    position_s: float
    """Seconds since the start of the recording."""
    duration_s: float
    speed: float
    paused: bool
    at_end: bool = False

    @classmethod
    def of(cls, playback: Playback) -> ReplayStatus:
        return cls(
            position_s=playback.position - playback.start,
            duration_s=playback.duration_s,
            speed=playback.speed,
            paused=playback.paused,
            at_end=playback.at_end,
        )

    @property
    def text(self) -> str:
        """``REPLAY 00:12:34 / 01:00:00 ×4 ▶`` or ``... ×4 paused`` (the title bar colours it)."""
        state = "paused" if self.paused else "▶"
        return (
            f"REPLAY {fmt_hms(self.position_s)} / {fmt_hms(self.duration_s)} "
            f"{fmt_speed(self.speed)} {state}"
        )


__all__ = ["SEEK_LONG_S", "SEEK_SHORT_S", "ReplayStatus", "fmt_hms", "fmt_speed"]
