"""``gputui snapshot``: one reading as text or JSON (``docs/snapshot-schema.md``); with
``--replay FILE [--at TIME]`` the recorded reading at TIME.

The text fits the terminal it is printed on (``COLUMNS`` when set, else the terminal's width;
whole lines into a pipe or a file), as the dashboard fits its tables; the usage table is left
out of a one-shot reading and kept for a recording (and in ``--json`` always)."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import sys
from dataclasses import field
from typing import TextIO

from gputui.commands.common import REAL, Common, Seams, UsageError
from gputui.commands.output import emit, error
from gputui.commands.session_open import open_or_report
from gputui.core.codec import snapshot_to_json
from gputui.core.exitcodes import EXIT_FAILED, EXIT_NO_GPU, EXIT_OK, EXIT_USAGE
from gputui.core.format import fmt_duration
from gputui.core.frozen import frozen
from gputui.core.model import Snapshot
from gputui.core.record import RecordingError, parse_duration
from gputui.engine.session import BackendSpec
from gputui.settings.model import Settings
from gputui.views.report import render_snapshot

SETTLE_S = 0.5
"""``snapshot`` reads twice this far apart, so rates (PCIe, NVLink, CPU %) are real numbers."""
SCHEDULER_WAIT_S = 3.0
"""How long ``snapshot`` waits for the schedulers' first answer before its last reading (past
it, the snapshot says they have not answered yet)."""


@frozen
class AtTime:
    """``--at``: seconds from the start, a clock time on the recording's first day, or an
    absolute (ISO) time; resolved against the recording by :func:`resolve_at`."""

    text: str
    offset_s: float | None = None
    clock: tuple[int, int, float] | None = None
    when: dt.datetime | None = None


def parse_at(text: str) -> AtTime:
    """ValueError with a message for the user when ``text`` is not a time."""
    match = re.fullmatch(r"\s*(\d{1,2}):(\d{2})(?::(\d{2}(?:\.\d+)?))?\s*", text)
    if match:
        h, m, sec = int(match.group(1)), int(match.group(2)), float(match.group(3) or 0)
        if h > 23 or m > 59 or sec >= 60:
            raise ValueError(f"{text!r} is not a clock time (HH:MM:SS)")
        return AtTime(text, clock=(h, m, sec))
    try:
        return AtTime(text, offset_s=parse_duration(text))
    except ValueError:
        pass
    try:
        return AtTime(text, when=dt.datetime.fromisoformat(text.strip()))
    except ValueError:
        raise ValueError(
            f"{text!r} is not a time: give seconds from the start (90, 1m30s), a clock time "
            "(14:05:00) or an ISO timestamp (2024-05-01T14:05:00)"
        ) from None


def resolve_at(at: AtTime, start: float, end: float) -> float:
    """The recorded timestamp ``at`` names; ValueError when it lies outside the recording."""
    if at.offset_s is not None:
        ts = start + at.offset_s
    elif at.clock is not None:
        h, m, sec = at.clock
        day = dt.datetime.fromtimestamp(start).replace(hour=0, minute=0, second=0, microsecond=0)
        ts = (day + dt.timedelta(hours=h, minutes=m, seconds=sec)).timestamp()
        if ts < start - 0.5:  # a recording across midnight: the time on the next day
            ts = (day + dt.timedelta(days=1, hours=h, minutes=m, seconds=sec)).timestamp()
    else:
        assert at.when is not None
        ts = at.when.timestamp()  # naive: local time
    if not start - 0.5 <= ts <= end + 0.5:
        raise ValueError(
            f"--at {at.text}: not in the recording, which runs from {_fmt_time(start)} to "
            f"{_fmt_time(end)} ({fmt_duration(end - start)})"
        )
    return min(max(ts, start), end)


def _fmt_time(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).isoformat(sep=" ", timespec="seconds")


@frozen
class SnapshotOptions:
    spec: BackendSpec
    seed: int = 0
    as_json: bool = False
    at: AtTime | None = None
    settings: Settings = field(default_factory=Settings)
    """The price of a GPU-hour and the health thresholds."""


def options(args: argparse.Namespace, common: Common) -> SnapshotOptions:
    spec = common.spec()
    if args.at is not None and not spec.replayed:
        raise UsageError("--at needs --replay FILE")
    return SnapshotOptions(
        spec, seed=common.seed, as_json=args.json, at=args.at, settings=common.settings
    )


def text_width(seams: Seams) -> int | None:
    """The width the text report fits when it goes to a terminal: ``COLUMNS`` when set (as
    Python's ``shutil.get_terminal_size`` takes it), else the terminal's own; None (whole lines)
    into a pipe or a file, whatever ``COLUMNS`` says, so a script gets every line whole."""
    stream = seams.out if seams.out is not None else sys.stdout
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError):  # closed, or no such method
        return None
    environ = seams.environ if seams.environ is not None else os.environ
    columns = environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return None


def run(options: SnapshotOptions, seams: Seams = REAL) -> int:
    width = None if options.as_json else text_width(seams)
    if options.spec.replayed:
        return run_replay(
            options.spec,
            at=options.at,
            as_json=options.as_json,
            settings=options.settings,
            width=width,
            out=seams.out,
        )
    session = open_or_report(
        options.spec,
        seed=options.seed,
        interval=SETTLE_S,
        slow_interval=SETTLE_S,
        settings=options.settings,
    )
    if session is None:
        return EXIT_NO_GPU
    with session:
        sampler = session.sampler
        sampler.allocation_meter.idle_after_s = 0.0  # its two readings are its whole window
        snapshot = sampler.poll(deadline=sampler.deadline)
        if snapshot.stall is None:
            seams.sleep(SETTLE_S)
            sampler.wait_for_schedulers(SCHEDULER_WAIT_S)
            snapshot = sampler.poll(deadline=sampler.deadline)
    _print(snapshot, options.as_json, width, seams.out)
    if snapshot.stall is not None:  # printed with its "not responding" finding, and failed
        error(f"gputui snapshot: {session.backend.name} is not answering (a driver call hangs)")
        return EXIT_FAILED
    return EXIT_OK


def run_replay(
    spec: BackendSpec,
    *,
    at: AtTime | None,
    as_json: bool,
    settings: Settings | None = None,
    width: int | None = None,
    out: TextIO | None = None,
) -> int:
    """The recorded reading at ``at`` (default: the last)."""
    session = open_or_report(spec, settings=settings)
    if session is None:
        return EXIT_USAGE
    with session:
        playback = session.playback
        assert playback is not None
        playback.set_paused(True)
        try:
            ts = playback.end if at is None else resolve_at(at, playback.start, playback.end)
        except ValueError as exc:
            error(f"gputui snapshot: {exc}")
            return EXIT_USAGE
        playback.seek(ts)
        try:
            snapshot = session.sampler.poll()
        except RecordingError as exc:
            error(f"gputui: cannot replay: {exc}")
            return EXIT_USAGE
    _print(snapshot, as_json, width, out)
    return EXIT_OK


def _print(
    snapshot: Snapshot, as_json: bool, width: int | None = None, out: TextIO | None = None
) -> None:
    text = snapshot_to_json(snapshot, indent=2) if as_json else render_snapshot(snapshot, width)
    emit(text, out)


__all__ = [
    "SETTLE_S",
    "AtTime",
    "SnapshotOptions",
    "options",
    "parse_at",
    "resolve_at",
    "run",
    "run_replay",
    "text_width",
]
