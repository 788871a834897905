"""Ending a waiting command on Ctrl-C or SIGTERM: at once, with one line and the shell's status.

A command that waits (``pick --wait``) must end as soon as it is told to: a job scheduler sends
SIGTERM, a user presses Ctrl-C. Inside :func:`stop_on_signals` both raise :class:`Stopped` on the
main thread, out of whatever sleep or wait it is in; the command catches it, says so in one line
and returns :attr:`Stopped.exit_code`, 128 + the signal's number as shells report a process a
signal ended (130 for SIGINT, 143 for SIGTERM). ``Stopped`` is a ``BaseException``, like
``KeyboardInterrupt``, so no ``except Exception`` on the way takes it for an error.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_WHAT = {signal.SIGINT: "interrupted (Ctrl-C)", signal.SIGTERM: "terminated (SIGTERM)"}


class Stopped(BaseException):
    """A signal asked the command to stop."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(_WHAT.get(signal.Signals(signum), signal.Signals(signum).name))

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    @property
    def what(self) -> str:
        """``interrupted (Ctrl-C)`` or ``terminated (SIGTERM)``."""
        return str(self)


def _raise_stopped(signum: int, frame: FrameType | None) -> None:
    raise Stopped(signum)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`Stopped` while inside; the previous handlers come back
    after. Only the main thread receives signals: elsewhere nothing changes (Ctrl-C stays a
    ``KeyboardInterrupt``)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _raise_stopped) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            if handler is not None:  # None: not set from Python; nothing to put back
                signal.signal(sig, handler)


__all__ = ["STOP_SIGNALS", "Stopped", "stop_on_signals"]
