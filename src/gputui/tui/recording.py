"""Recording the live session from the TUI (key R): a :class:`gputui.core.record.Recorder` attached
to the sampler as a listener, so every reading the dashboard gets is also written to the file.

The listener runs on the polling thread; stopping happens on the UI thread. A lock keeps the file
from being closed in the middle of a write, and a write that fails (a full disk) is reported
through ``on_error`` (the app posts a message) instead of raising into the sampler; the file keeps
every complete line written before it, a readable recording.

The file is created as ``gputui record`` creates one (:class:`gputui.core.record.Recorder`):
exclusively, never through a symbolic link, and removed again when not even its header could be
written.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gputui.core.files import default_record_path
from gputui.core.model import NodeInfo, Snapshot


class RecordingSession:
    """One recording: open on construction, :meth:`write` per reading, :meth:`close` once."""

    def __init__(
        self,
        path: Path,
        *,
        node: NodeInfo | None = None,
        on_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        """``node``: write the header at once (a recording stopped before its first reading is
        still a valid, empty recording)."""
        from gputui.core.record import Recorder  # lazily: only when the user records

        self.path = path
        self.count = 0
        self.error: BaseException | None = None
        self._on_error = on_error
        self._lock = threading.Lock()
        self._closed = False
        # OSError: unwritable directory, a full disk (then no file is left), the name taken
        self._recorder: Any = Recorder(path, node=node)

    def write(self, snapshot: Snapshot) -> None:
        """The sampler listener (polling thread)."""
        with self._lock:
            if self._closed or self.error is not None:
                return
            try:
                self._recorder.write(snapshot)
            except Exception as exc:  # a full disk must not stop the readings
                self.error = exc
            else:
                self.count += 1
                return
        if self._on_error is not None:
            self._on_error(self.error)

    def close(self) -> BaseException | None:
        """Close the file (idempotent); the error closing it, if any."""
        with self._lock:
            if self._closed:
                return None
            self._closed = True
            try:
                self._recorder.close()
            except Exception as exc:
                return exc
        return None


class RecordingRefused(Exception):
    """No recording could be started; the message says why, naming the file."""


def start_session(
    node: NodeInfo, record_dir: Path, on_error: Callable[[BaseException], None] | None = None
) -> RecordingSession:
    """A recording in a new file in ``record_dir`` (named after the host and the time)."""
    for _attempt in range(3):  # another gputui may take the same name in the same second
        path = default_record_path(node.hostname, record_dir)
        try:
            return RecordingSession(path, node=node, on_error=on_error)
        except FileExistsError:
            continue
        except Exception as exc:  # unwritable directory, no such directory, ...
            raise RecordingRefused(f"could not record to {path}: {exc}") from exc
    raise RecordingRefused(f"could not record to {path}: it exists")


__all__ = ["RecordingRefused", "RecordingSession", "default_record_path", "start_session"]
