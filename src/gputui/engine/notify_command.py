"""``--notify CMD``: each alert runs CMD with the alert's JSON on its stdin.

The command never meets the terminal: stdin is the JSON, stdout goes nowhere, stderr is read
for the error message, and it runs in a session of its own (no controlling terminal, so it
cannot open ``/dev/tty`` or be stopped by the dashboard's Ctrl-C). It has :data:`TIMEOUT_S`
seconds; then its process group (what it started too) is killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time

from gputui.core.files import os_reason
from gputui.core.notify_command import program_name, split_command
from gputui.engine.alert_send import SendFailed, clipped

TIMEOUT_S = 10.0
POLL_S = 0.2
"""How often a running command is checked for the dispatcher stopping."""
REAP_S = 2.0
"""How long a killed command is waited for."""


class NotifyCommand:
    """Runs the command for each alert; :class:`SendFailed` when it cannot start, exits with an
    error or runs past its time."""

    def __init__(
        self, command: str, *, timeout: float = TIMEOUT_S, stop: threading.Event | None = None
    ) -> None:
        self.argv = split_command(command)
        self.name = f"--notify {program_name(self.argv)}"
        self.timeout = timeout
        self._stop = stop if stop is not None else threading.Event()

    def send(self, body: bytes) -> None:
        try:
            process = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            raise SendFailed("start", f"cannot run it: {os_reason(exc)}") from None
        errors = self._wait(process, body)
        code = process.returncode
        if code == 0:
            return
        said = errors.decode("utf-8", "replace").strip().splitlines()
        detail = f": {clipped(said[0])}" if said else ""
        if code < 0:
            raise SendFailed("exit", f"killed by signal {-code}{detail}")
        raise SendFailed("exit", f"exited with status {code}{detail}")

    def _wait(self, process: subprocess.Popen[bytes], body: bytes) -> bytes:
        """Feed ``body`` and wait for the end; kill it past its time or when stopped."""
        deadline = time.monotonic() + self.timeout
        given: bytes | None = body  # communicate takes the input once; a retry goes on with it
        while True:
            left = deadline - time.monotonic()
            try:
                _, errors = process.communicate(given, timeout=max(min(left, POLL_S), 0.0))
                return errors or b""
            except subprocess.TimeoutExpired:
                given = None
                if self._stop.is_set():
                    _kill(process)
                    raise SendFailed("stopped", "stopped: gputui was exiting") from None
                if time.monotonic() >= deadline:
                    _kill(process)
                    raise SendFailed(
                        "timeout", f"did not finish within {self.timeout:g} s; killed"
                    ) from None


def _kill(process: subprocess.Popen[bytes]) -> None:
    """Kill the command and what it started (its process group), and reap it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(REAP_S)
    for stream in (process.stdin, process.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


__all__ = ["TIMEOUT_S", "NotifyCommand"]
