"""``gputui record FILE``: readings with their findings and events, until ``--duration`` or
Ctrl-C, as a recording for ``--replay`` (see :mod:`gputui.record`)."""

from __future__ import annotations

import os
import threading
import time

from gputui.commands.output import error
from gputui.exitcodes import EXIT_NO_GPU, EXIT_OK, EXIT_USAGE
from gputui.model import Snapshot
from gputui.record import Recorder, fmt_size
from gputui.session import BackendSpec, SessionError, open_session

EXIT_WRITE_FAILED = 1
"""Writing failed part-way; what was written is still a readable recording."""


def run(
    spec: BackendSpec,
    path: str,
    *,
    seed: int = 0,
    interval: float = 1.0,
    duration: float | None = None,
    force: bool = False,
) -> int:
    """Exit 0 when done (Ctrl-C included), 2 when the backend or FILE cannot be used, 1 when
    writing failed part-way."""
    if os.path.exists(path) and os.path.getsize(path) > 0 and not force:
        error(f"gputui record: {path} exists (use --force to overwrite it)")
        return EXIT_USAGE
    try:
        session = open_session(spec, seed=seed, interval=interval)
    except SessionError as exc:
        error(str(exc))
        return EXIT_NO_GPU
    try:
        recorder = Recorder(path, node=session.node)
    except OSError as exc:
        session.close()
        error(f"gputui record: cannot write {path}: {exc.strerror or exc}")
        return EXIT_USAGE
    failed: list[BaseException] = []
    done = threading.Event()

    def write(snapshot: Snapshot) -> None:
        try:
            recorder.write(snapshot)
        except (OSError, ValueError) as exc:  # a full disk: stop, keep what was written
            failed.append(exc)
            done.set()

    sampler = session.sampler
    sampler.add_listener(write)
    node = session.node
    until = f" for {duration:g} s" if duration else " until Ctrl-C"
    error(
        f"gputui: recording {node.hostname} ({len(node.gpus)} GPUs, {session.backend.name}) "
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
        recorder.close()
    size = os.path.getsize(path)
    print(f"Recorded {recorder.count} readings ({fmt_size(size)}, {size} bytes) to {path}")
    if failed:
        error(f"gputui record: writing {path} failed: {failed[0]}")
        return EXIT_WRITE_FAILED
    return EXIT_OK


__all__ = ["run"]
