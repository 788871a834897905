"""``gputui record [FILE]``: readings with their findings and events, until ``--duration`` or
Ctrl-C, as a recording for ``--replay`` (see :mod:`gputui.core.record`).

A bare file name goes in the ``record_dir`` setting's directory, and without FILE the recording
is named as the dashboard's key R names one, ``gputui-HOST-DATE-TIME.jsonl.gz``, there. FILE is
created, never opened through a symbolic link or as a device (:mod:`gputui.core.files`);
``--force`` replaces a regular file, and only once the new recording's header is written.

``--incidents DIR`` also writes the minutes around each failure that begins as a recording of
its own (:mod:`gputui.engine.incidents`); with it and no FILE, only those are written."""

from __future__ import annotations

import argparse
import threading
import time
from dataclasses import field

from gputui.commands import incident_files
from gputui.commands.alerting import alerts_sent
from gputui.commands.common import Common, UsageError
from gputui.commands.incident_files import IncidentOptions
from gputui.commands.output import emit, error
from gputui.commands.session_open import open_or_report
from gputui.core.exitcodes import EXIT_NO_GPU, EXIT_OK, EXIT_USAGE
from gputui.core.files import check_target, default_record_path, in_directory, os_reason
from gputui.core.format import fmt_clock
from gputui.core.frozen import frozen
from gputui.core.model import Snapshot, Stall
from gputui.core.record import Recorder, fmt_size, snapshot_line
from gputui.engine.session import BackendSpec
from gputui.settings.model import Settings

PROG = "gputui record"
EXIT_WRITE_FAILED = 1
"""Writing failed part-way; what was written is still a readable recording."""


def _refused(path: str, exc: OSError) -> int:
    """The message for a FILE that cannot be created; exit 2."""
    if isinstance(exc, FileExistsError):
        error(f"{PROG}: {path} exists (use --force to overwrite it)")
    else:
        error(f"{PROG}: cannot write {path}: {os_reason(exc)}")
    return EXIT_USAGE


@frozen
class RecordOptions:
    spec: BackendSpec
    path: str | None
    """None: named as the dashboard names a recording, in ``settings.record_dir``; with
    :attr:`incidents`, no recording but the incident files."""
    seed: int = 0
    interval: float = 1.0
    duration: float | None = None
    force: bool = False
    settings: Settings = field(default_factory=Settings)
    """The recording directory, the price of a GPU-hour and the health thresholds."""
    incidents: IncidentOptions | None = None
    """``--incidents DIR``: a file around each failure that begins."""


def options(args: argparse.Namespace, common: Common) -> RecordOptions:
    spec = common.spec()
    if spec.replayed:
        raise UsageError("record reads GPUs (or --demo); it cannot record a replay")
    return RecordOptions(
        spec,
        args.file,
        seed=common.seed,
        interval=common.interval,
        duration=args.duration,
        force=args.force,
        settings=common.settings,
        incidents=incident_files.incident_options(args, common.settings),
    )


def run(options: RecordOptions) -> int:
    """Exit 0 when done (Ctrl-C included), 2 when the backend or FILE cannot be used (or, with
    only incident files to write, their directory), 1 when writing failed part-way."""
    interval, duration, settings = options.interval, options.duration, options.settings
    incidents = options.incidents
    path = None if options.path is None else in_directory(options.path, settings.record_dir)
    if path is not None:
        try:
            check_target(path, replace=options.force)  # before opening; created safely below
        except OSError as exc:
            return _refused(path, exc)
    to_file = path is not None or incidents is None
    if incidents is not None:
        why = incident_files.unusable(incidents)
        if why is not None:
            carry_on = "" if not to_file else "; recording without them"
            incident_files.refused(PROG, incidents, why, carry_on)
            if not to_file:
                return EXIT_USAGE  # nothing else to write
            incidents = None
    session = open_or_report(options.spec, seed=options.seed, interval=interval, settings=settings)
    if session is None:
        return EXIT_NO_GPU
    if path is None and to_file:
        path = str(default_record_path(session.node.hostname, settings.record_dir))
    recorder = None
    if path is not None:
        try:
            recorder = Recorder(path, node=session.node, replace=options.force)
        except OSError as exc:  # nothing is left behind: a replaced file is still there
            session.close()
            return _refused(path, exc)
    watching = None
    if incidents is not None:
        carry_on = "; the recording carries on" if recorder is not None else "; carrying on"
        watching = incident_files.watcher(PROG, incidents, carry_on)
    failed: list[Exception] = []
    done = threading.Event()
    readings = 0
    unanswered = 0
    first_stall: Stall | None = None

    def write(snapshot: Snapshot) -> None:
        nonlocal readings, unanswered, first_stall
        readings += 1
        if snapshot.stall is not None:  # written too: a replay shows the gap as it was
            unanswered += 1
            first_stall = first_stall or snapshot.stall
        line = snapshot_line(snapshot)  # encoded once for the file and the incidents' ring
        if watching is not None:
            watching.observe(snapshot, line)
        if recorder is None:
            return
        try:
            recorder.write_line(line)
        except (OSError, ValueError) as exc:  # a full disk: stop, keep what was written
            failed.append(exc)
            done.set()

    sampler = session.sampler
    sampler.add_listener(write)
    node = session.node
    until = f" for {duration:g} s" if duration else " until Ctrl-C"
    gpus = f"{len(node.gpus)} GPU{'s' if len(node.gpus) != 1 else ''}"
    where = f" to {path}" if path is not None else ""
    if incidents is not None:
        both = path is not None
        where += f"{' and' if both else ', only'} incidents to {incidents.directory}"
    error(
        f"gputui: recording {node.hostname} ({gpus}, {session.backend.name}) "
        f"every {interval:g} s{where}{until}"
    )
    deadline = None if duration is None else time.monotonic() + duration
    with alerts_sent(settings, session):
        try:
            sampler.start(lambda snapshot: None)
            while not done.is_set():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                done.wait(0.5 if left is None else min(left, 0.5))
        except KeyboardInterrupt:
            pass
        finally:
            session.close()
            if recorder is not None:
                try:
                    recorder.close()  # the gzip trailer can meet a full disk too
                except OSError as exc:
                    failed.append(exc)
    if recorder is not None:
        size = recorder.bytes_written
        emit(f"Recorded {recorder.count} readings ({fmt_size(size)}, {size} bytes) to {path}")
    incidents_written = watching is None or incident_files.finish(PROG, watching)
    if first_stall is not None:
        error(
            f"{PROG}: {unanswered} of the {readings} readings are missing: "
            f"{session.backend.name} did not answer from {fmt_clock(first_stall.since)} "
            "(those lines repeat the last values, marked as not answered)"
        )
    if failed:
        first = failed[0]
        reason = os_reason(first) if isinstance(first, OSError) else str(first)
        error(f"{PROG}: writing {path} failed: {reason}")
        return EXIT_WRITE_FAILED
    if recorder is None and not incidents_written:
        return EXIT_WRITE_FAILED  # the incident files were all there was to write
    return EXIT_OK


__all__ = ["EXIT_WRITE_FAILED", "RecordOptions", "options", "run"]
