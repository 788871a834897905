"""A child process on a pseudo-terminal of its own, as a login shell would run it (the dashboard
draws only on a terminal)."""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
# Run as the session leader with the pty as controlling terminal, as a login shell would be
# (then closing the terminal sends SIGHUP), without forking the test process.
LAUNCH = (
    "import fcntl, os, sys, termios\n"
    "fcntl.ioctl(0, termios.TIOCSCTTY, 0)\n"
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])\n"
)


class Terminal:
    """A child process on a fresh 120x40 pty; ``read`` collects what it draws."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        environ = dict(os.environ, TERM="xterm-256color", **(env or {}))
        environ.pop("NO_COLOR", None)
        self.process = subprocess.Popen(
            [sys.executable, "-c", LAUNCH, *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            env=environ,
            cwd=ROOT,
        )
        os.close(slave)
        self.output = b""
        self.eof = False

    def read(self, until: Callable[[bytes], bool], timeout: float) -> bool:
        """Read until ``until(output)`` or the child closes the terminal (False) or timeout."""
        deadline = time.monotonic() + timeout
        while not self.eof and time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.05)
            if not ready:
                continue
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO: every copy of the slave side is closed
                data = b""
            if not data:
                self.eof = True
                break
            self.output += data
            if until(self.output):
                return True
        return False

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)
        if self.master >= 0:
            os.close(self.master)
            self.master = -1
