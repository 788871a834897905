"""``gputui record [FILE]``: readings with their findings and events, until ``--duration`` or
Ctrl-C, as a recording for ``--replay`` (see :mod:`gputui.record`).

A bare file name goes in the ``record_dir`` setting's directory, and without FILE the recording
is named as the dashboard's key R names one, ``gputui-HOST-DATE-TIME.jsonl.gz``, there. FILE is
created, never opened through a symbolic link or as a device (:mod:`gputui.files`);
``--force`` replaces a regular file, and only once the new recording's header is written."""

from __future__ import annotations

import threading
import time

from gputui.commands.output import emit, error
from gputui.exitcodes import EXIT_NO_GPU, EXIT_OK, EXIT_USAGE
from gputui.files import check_target, default_record_path, in_directory, os_reason
from gputui.format import fmt_clock
from gputui.model import Snapshot
from gputui.record import Recorder, fmt_size
from gputui.session import BackendSpec, SessionError, open_session
from gputui.settings.model import Settings

EXIT_WRITE_FAILED = 1
"""Writing failed part-way; what was written is still a readable recording."""


def _refused(path: str, exc: OSError) -> int:
    """The message for a FILE that cannot be created; exit 2."""
    if isinstance(exc, FileExistsError):
        error(f"gputui record: {path} exists (use --force to overwrite it)")
    else:
        error(f"gputui record: cannot write {path}: {os_reason(exc)}")
    return EXIT_USAGE


def run(
    spec: BackendSpec,
    path: str | None,
    *,
    seed: int = 0,
    interval: float = 1.0,
    duration: float | None = None,
    force: bool = False,
    settings: Settings | None = None,
) -> int:
    """Exit 0 when done (Ctrl-C included), 2 when the backend or FILE cannot be used, 1 when
    writing failed part-way. ``settings``: the recording directory, the price of a GPU-hour and
    the health thresholds."""
    settings = settings if settings is not None else Settings()
    if path is not None:
        path = in_directory(path, settings.record_dir)
        try:
            check_target(path, replace=force)  # before opening the backend; created safely below
        except OSError as exc:
            return _refused(path, exc)
    try:
        session = open_session(spec, seed=seed, interval=interval, settings=settings)
    except SessionError as exc:
        error(str(exc))
        return EXIT_NO_GPU
    if path is None:
        path = str(default_record_path(session.node.hostname, settings.record_dir))
    try:
        recorder = Recorder(path, node=session.node, replace=force)
    except OSError as exc:  # nothing is left behind: a replaced file is still there
        session.close()
        return _refused(path, exc)
    failed: list[Exception] = []
    done = threading.Event()
    unanswered: list[Snapshot] = []

    def write(snapshot: Snapshot) -> None:
        if snapshot.stall is not None:
            unanswered.append(snapshot)  # written too: a replay shows the gap as it was
        try:
            recorder.write(snapshot)
        except (OSError, ValueError) as exc:  # a full disk: stop, keep what was written
            failed.append(exc)
            done.set()

    sampler = session.sampler
    sampler.add_listener(write)
    node = session.node
    until = f" for {duration:g} s" if duration else " until Ctrl-C"
    gpus = f"{len(node.gpus)} GPU{'s' if len(node.gpus) != 1 else ''}"
    error(
        f"gputui: recording {node.hostname} ({gpus}, {session.backend.name}) "
        f"every {interval:g} s to {path}{until}"
    )
    deadline = None if duration is None else time.monotonic() + duration
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
        try:
            recorder.close()  # the gzip trailer can meet a full disk too
        except OSError as exc:
            failed.append(exc)
    size = recorder.bytes_written
    emit(f"Recorded {recorder.count} readings ({fmt_size(size)}, {size} bytes) to {path}")
    if unanswered:
        stall = unanswered[0].stall
        assert stall is not None
        error(
            f"gputui record: {len(unanswered)} of the {recorder.count} readings are missing: "
            f"{session.backend.name} did not answer from {fmt_clock(stall.since)} "
            "(those lines repeat the last values, marked as not answered)"
        )
    if failed:
        first = failed[0]
        reason = os_reason(first) if isinstance(first, OSError) else str(first)
        error(f"gputui record: writing {path} failed: {reason}")
        return EXIT_WRITE_FAILED
    return EXIT_OK


__all__ = ["EXIT_WRITE_FAILED", "run"]
