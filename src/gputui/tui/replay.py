"""Replay mode: how the app tells a replayed recording from a live node, and what the title bar
shows about it.

The app reads the replay position from the backend (``gputui.backends.replay.ReplayBackend``),
whose clock the sampler reads; it never imports that module unless asked whether a backend is
one (so a live session does not load it).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any

SPEED_MIN = 0.25
SPEED_MAX = 64.0
SEEK_SHORT_S = 10.0
SEEK_LONG_S = 60.0


def replay_backend(backend: object) -> Any | None:
    """``backend`` when it replays a recording, else None.

    A ReplayBackend exists only once its module has been imported, so a live session never pays
    for importing the replay and recording modules just to ask."""
    module = sys.modules.get("gputui.backends.replay")
    if module is None:
        return None
    return backend if isinstance(backend, module.ReplayBackend) else None


def fmt_hms(seconds: float) -> str:
    """``00:12:34`` (hours grow past two digits rather than wrap)."""
    if not math.isfinite(seconds) or seconds < 0:
        seconds = 0.0
    total = int(seconds)
    return f"{total // 3600:02d}:{total % 3600 // 60:02d}:{total % 60:02d}"


def fmt_speed(speed: float) -> str:
    return f"×{speed:g}"


@dataclass(frozen=True)
class ReplayStatus:
    """What the title bar shows in replay mode."""

    position_s: float
    """Seconds since the start of the recording."""
    duration_s: float
    speed: float
    paused: bool
    at_end: bool = False

    @classmethod
    def of(cls, backend: Any) -> ReplayStatus:
        return cls(
            position_s=backend.position - backend.start,
            duration_s=backend.duration_s,
            speed=backend.speed,
            paused=backend.paused,
            at_end=backend.at_end,
        )

    @property
    def text(self) -> str:
        """``REPLAY 00:12:34 / 01:00:00 ×4 ▶`` or ``... ×4 paused`` (the title bar colours it)."""
        state = "paused" if self.paused else "▶"
        return (
            f"REPLAY {fmt_hms(self.position_s)} / {fmt_hms(self.duration_s)} "
            f"{fmt_speed(self.speed)} {state}"
        )


__all__ = [
    "SEEK_LONG_S",
    "SEEK_SHORT_S",
    "SPEED_MAX",
    "SPEED_MIN",
    "ReplayStatus",
    "fmt_hms",
    "fmt_speed",
    "replay_backend",
]
