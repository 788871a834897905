"""SIGTERM and SIGHUP end the dashboard the way q does: the terminal is restored and the exit
status is 128 + the signal's number. A shutdown that does not finish within
:data:`SIGNAL_EXIT_GRACE_S` (a terminal that has gone away can block the output thread) is cut
short with the same status."""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

EXIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""Signals that end the app cleanly (as q does) instead of killing it with the terminal still in
the alternate screen, the cursor hidden and mouse reporting on."""
SIGNAL_EXIT_GRACE_S = 5.0
"""After SIGTERM/SIGHUP the process exits within this long, even when shutting down blocks."""
HUNG_UP_GRACE_S = 1.0
"""The same when the terminal has gone away (nothing to restore; the output thread may block)."""

Previous = signal.Handlers | int | Callable[..., Any]


def catch_exit_signals(
    loop: asyncio.AbstractEventLoop, handler: Callable[[signal.Signals], None]
) -> dict[signal.Signals, Previous]:
    """Call ``handler(sig)`` on the event loop for :data:`EXIT_SIGNALS`; the handlers they
    replace (give them to :func:`restore_signals`)."""
    caught: dict[signal.Signals, Previous] = {}
    if threading.current_thread() is not threading.main_thread():
        return caught  # only the main thread may set signal handlers
    for sig in EXIT_SIGNALS:
        previous = signal.getsignal(sig)
        if previous is signal.SIG_IGN:
            continue  # started under nohup (or the like): leave it ignored
        try:
            loop.add_signal_handler(sig, handler, sig)
        except (NotImplementedError, RuntimeError, ValueError):
            continue
        caught[sig] = previous if previous is not None else signal.SIG_DFL
    return caught


def restore_signals(
    loop: asyncio.AbstractEventLoop, caught: dict[signal.Signals, Previous]
) -> None:
    for sig, previous in caught.items():
        loop.remove_signal_handler(sig)
        signal.signal(sig, previous)


def start_exit_deadline(sig: signal.Signals) -> None:
    """Leave with 128 + ``sig`` after the grace period, whatever the shutdown is doing by then."""
    grace = HUNG_UP_GRACE_S if terminal_gone() else SIGNAL_EXIT_GRACE_S
    threading.Thread(
        target=_exit_after_grace, args=(128 + int(sig), grace), name="gputui-exit", daemon=True
    ).start()


def terminal_gone() -> bool:
    """Whether the terminal the app draws on has been hung up (the SSH connection dropped): then
    every call on it fails with EIO."""
    import termios

    stream = sys.__stderr__
    try:
        if stream is not None:
            termios.tcgetattr(stream.fileno())
    except termios.error as exc:
        return bool(exc.args) and exc.args[0] == errno.EIO  # not ENOTTY: no terminal at all
    except (OSError, ValueError):  # a closed or unusual stream
        pass
    return False


def _exit_after_grace(code: int, grace: float) -> None:
    """Started by SIGTERM/SIGHUP: the normal shutdown restores the terminal and exits well within
    the grace period; if it has not (the output thread blocked writing to a terminal that has
    gone away), leave anyway."""
    time.sleep(grace)
    os._exit(code)


__all__ = [
    "EXIT_SIGNALS",
    "HUNG_UP_GRACE_S",
    "SIGNAL_EXIT_GRACE_S",
    "catch_exit_signals",
    "restore_signals",
    "start_exit_deadline",
    "terminal_gone",
]
