"""The one-line title bar: gputui, host, backend, driver/runtime, GPU count, the time of the last
reading (from the snapshot, never from the wall clock), the node's health ("✔ healthy",
"▲ 2 warnings", "✖ 1 failure") and a "PAUSED" badge; "● REC" while the session is recorded; in
replay mode "REPLAY 00:12:34 / 01:00:00 ×4 ▶" (position, length, speed, playing or paused)
instead of the interval. While GPUs are idle, how many and what they cost ("3/8 GPUs idle (1
held) · 7.50/h", :func:`gputui.core.usage.idle_forms`). When the line is short (80 columns), what
gives way for the idle cost, first to last: the runtime and driver versions, the interval text
("every 1s"), the idle text's longer forms ("3/8 idle · 7.50/h", then "idle 7.50/h": the cost
stays), the backend, the GPU count; only then the idle text itself, before the hostname. The idle
text stands before the interval, on the right. No clock
animation: it changes only when a reading arrives or a key changes it."""

from __future__ import annotations

from collections.abc import Sequence

from gputui.core.format import cell_width, fmt_clock, fmt_duration, fmt_interval, sanitize
from gputui.core.model import NodeInfo
from gputui.tui.replay import ReplayStatus, fmt_hms, fmt_speed
from gputui.tui.widgets.line_widget import (
    ACCENT,
    ALARM,
    BAD,
    DIM,
    LABEL,
    OK,
    PAUSED,
    TITLE,
    VALUE,
    WARN,
    Line,
    LineBuilder,
    LineWidget,
    Piece,
)

_HEALTH_CLASS = {"ok": OK, "warn": WARN, "fail": BAD}


def runtime_label(node: NodeInfo) -> str:
    vendors = {g.vendor for g in node.gpus}
    return "ROCm" if vendors == {"amd"} else "CUDA"


_IDLE_STEPS: tuple[int, ...] = (5, 4, 3, 2, 1)
"""The node facts kept for the idle text, step by step (those ranked up to this): the runtime
(5) and driver (4) versions go first, then the backend (3) and the GPU count (2). At the steps
that keep the backend, the idle text's whole form is tried with the interval first; from the
backend's step on, without the interval, its longest form that fits (and the interval again
when it fits beside that form)."""


class TitleBar(LineWidget):
    """Node facts on the left, reading time and state on the right."""

    def __init__(
        self, node: NodeInfo | None, *, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.node = node
        self.timestamp: float | None = None
        self.paused = False
        self.interval: float | None = None
        self.gpu_filter: int | None = None
        self.note = ""
        self.health: tuple[str, str] | None = None
        """``(text, severity)`` of the node's health badge; None: not shown."""
        self.recording = False
        self.replay: ReplayStatus | None = None
        """Replay position and state; None: a live session."""
        self.stale_s: float | None = None
        """Seconds the backend has not answered (the values shown are older); None: answering."""
        self.idle: tuple[str, ...] = ()
        """How many GPUs are idle now and what they cost, longest form first (() when none is,
        or it is not known)."""

    def set_state(
        self,
        *,
        timestamp: float | None = None,
        paused: bool | None = None,
        interval: float | None = None,
        gpu_filter: int | str | None = "",
        note: str | None = None,
        health: tuple[str, str] | str | None = "",
        recording: bool | None = None,
        replay: ReplayStatus | None = None,
        stale_s: float | str | None = "",
        idle: str | Sequence[str] | None = None,
    ) -> None:
        """Change what the bar shows (arguments left out keep their value)."""
        if timestamp is not None:
            self.timestamp = timestamp
        if paused is not None:
            self.paused = paused
        if interval is not None:
            self.interval = interval
        if gpu_filter != "":
            self.gpu_filter = gpu_filter  # type: ignore[assignment]
        if note is not None:
            self.note = note
        if health != "":
            self.health = health  # type: ignore[assignment]
        if recording is not None:
            self.recording = recording
        if replay is not None:
            self.replay = replay
        if not isinstance(stale_s, str):
            self.stale_s = stale_s
        if idle is not None:
            forms = (idle,) if isinstance(idle, str) else tuple(idle)
            self.idle = tuple(sanitize(form) for form in forms if form)
        self.rebuild()

    def build_lines(self, width: int, height: int) -> list[Line]:
        node = self.node
        # (priority, pieces): when the line is short, the highest numbers are left out first.
        left: list[tuple[int, list[Piece]]] = [(0, [("gputui", TITLE)])]
        if node is not None:
            left.append((1, [(sanitize(node.hostname), ACCENT)]))
            left.append((3, [(sanitize(node.backend), VALUE)]))
            if node.driver_version:
                left.append((4, [("driver ", LABEL), (sanitize(node.driver_version), VALUE)]))
            if node.runtime_version:
                label = f"{runtime_label(node)} "
                left.append((5, [(label, LABEL), (sanitize(node.runtime_version), VALUE)]))
            count = len(node.gpus)
            left.append((2, [(f"{count} GPU{'s' if count != 1 else ''}", VALUE)]))
        idle, interval = self._fit_idle(left, width)
        state = self._right(LineBuilder(), interval=interval)
        right = LineBuilder()
        if idle:
            right.add(idle, LABEL).add("  ")
        right.extend(state.pieces)
        b = LineBuilder().add(" ")
        room = width - right.width - 5  # at least three cells between the sides
        chosen: set[int] = set()
        used = 0
        # The facts by rank as room allows: the idle text and the interval were fitted beside
        # those the step keeps; what room is left may still hold a lower-ranked one.
        for i in sorted(range(len(left)), key=lambda i: left[i][0]):
            w = sum(len(t) for t, _ in left[i][1]) + (3 if chosen else 0)
            if used + w <= room:
                chosen.add(i)
                used += w
        for i, (_, pieces) in enumerate(left):
            if i not in chosen:
                continue
            if b.width > 1:
                b.add(" · ", DIM)
            b.extend(pieces)
        b.pad(width - right.width - 1)
        b.extend(right.pieces).add(" ")
        return [b.line(width)]

    def _fit_idle(self, left: list[tuple[int, list[Piece]]], width: int) -> tuple[str, bool]:
        """(idle text, whether the interval shows): the first step of :data:`_IDLE_STEPS` at
        which a form of the idle text fits beside the facts it keeps; without one, no idle text
        and the interval."""

        def fits(kept: int, form: str, interval: bool) -> bool:
            facts = [pieces for rank, pieces in left if rank <= kept]
            facts_w = sum(len(t) for pieces in facts for t, _ in pieces) + 3 * (len(facts) - 1)
            state_w = self._right(LineBuilder(), interval=interval).width
            return 1 + facts_w + 3 + cell_width(form) + 2 + state_w + 1 <= width

        for kept in _IDLE_STEPS:
            if self.idle and fits(kept, self.idle[0], True):
                return self.idle[0], True
            if kept > 3:
                continue
            for form in self.idle:
                if fits(kept, form, False):
                    return form, fits(kept, form, True)
        return "", True

    def _right(self, right: LineBuilder, *, interval: bool = True) -> LineBuilder:
        """The state on the right (health, stalls, filters, pause, recording, replay or the
        interval, and the time of the reading), added to ``right``; ``interval`` False leaves
        the interval text out."""
        if self.health is not None:
            text, severity = self.health
            right.add(text, _HEALTH_CLASS.get(severity, OK)).add("  ")
        if self.stale_s is not None:
            right.add(f" NO ANSWER {fmt_duration(self.stale_s)} ", ALARM).add("  ")
        if self.note:
            right.add(self.note, WARN).add("  ")
        if self.gpu_filter is not None:
            right.add(f"GPU {self.gpu_filter} only", WARN).add("  ")
        if self.paused:
            right.add(" PAUSED ", PAUSED).add("  ")
        if self.recording:
            right.add("● REC", BAD).add("  ")
        replay = self.replay
        if replay is not None:
            right.add("REPLAY ", ACCENT).add(fmt_hms(replay.position_s), VALUE)
            right.add(" / ", DIM).add(fmt_hms(replay.duration_s), LABEL)
            right.add(f" {fmt_speed(replay.speed)} ", VALUE)
            if replay.at_end:
                right.add("end", WARN)
            else:
                right.add("paused" if replay.paused else "▶", WARN if replay.paused else OK)
            right.add("  ")
        elif self.interval is not None and interval:
            right.add("every ", LABEL).add(fmt_interval(self.interval), VALUE).add("  ")
        return right.add(
            fmt_clock(self.timestamp) if self.timestamp else "--:--:--",
            VALUE if self.timestamp and self.stale_s is None else DIM,
        )


__all__ = ["TitleBar"]
