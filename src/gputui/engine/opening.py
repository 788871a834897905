"""Opening the GPU library with a limit, and ending a process that a hung driver call is stuck in.

A driver call that hangs while the library opens (a wedged driver, a sick GPU) cannot be
interrupted, and while the main thread is inside it not even Ctrl-C gets through. So
:class:`Opening` runs the open on a daemon thread and the main thread waits for it in short
slices: Ctrl-C ends the wait at once (``KeyboardInterrupt``), and past :func:`open_deadline` the
wait gives up with :class:`OpenTimedOut`.

A thread stuck in a driver call cannot be joined, and the driver library's own exit handlers may
wait on that call: :func:`ends_cleanly` (around ``cli.main``) ends such a process with
:func:`exit_now` (output flushed, helper processes stopped, ``os._exit``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Generic, NoReturn, ParamSpec, TypeVar

from gputui.backends.base import OpenProgress
from gputui.core.exitcodes import EXIT_INTERRUPTED
from gputui.host import children

COLD_OPEN_ALLOWANCE_S = 4.0
"""How long one GPU may take to open (NVIDIA: 1-3 s a GPU without persistence mode)."""
DEFAULT_TIMEOUT_S = 20.0
"""How long an open may go without progress before the driver counts as not answering."""
WAIT_SLICE_S = 0.2
"""The main thread wakes this often while it waits (Ctrl-C, the deadline, progress shown)."""

T = TypeVar("T")
P = ParamSpec("P")

_openers: set[threading.Thread] = set()
"""Threads of opens not waited for to the end (given up on, or the wait interrupted)."""
_openers_lock = threading.Lock()


class OpenTimedOut(Exception):
    """The open did not return by its deadline; ``allowed_s``: how long it was given."""

    def __init__(self, allowed_s: float) -> None:
        super().__init__(f"the open did not return within {allowed_s:.0f} s")
        self.allowed_s = allowed_s


def open_deadline(started: float, timeout: float, progress: OpenProgress | None) -> float:
    """The monotonic time after which a command started at ``started`` with ``timeout`` counts
    the driver as not answering.

    A slow open that keeps making progress is a cold driver, not a hung one (without persistence
    mode each GPU takes 1-3 s to initialise on first open): while ``progress`` shows GPUs being
    opened, the deadline moves out by :data:`COLD_OPEN_ALLOWANCE_S` a GPU, and what follows the
    open gets the whole ``timeout`` again. Still bounded: at most ``timeout`` plus the allowance
    for every GPU, plus ``timeout``."""
    base = started + timeout
    if progress is None or not progress.expected:
        return base
    if progress.done_at is not None:
        return max(base, progress.done_at + timeout)
    cap = base + COLD_OPEN_ALLOWANCE_S * progress.expected
    if progress.opened == 0:
        return cap  # still in the library's init, which may initialise every GPU
    return max(base, min(cap, progress.last_step + COLD_OPEN_ALLOWANCE_S))


class Opening(Generic[T]):
    """``open_it()`` running on a daemon thread; :meth:`wait` for what it returns.

    ``timeout`` (None: no limit) and ``progress`` (what ``open_it`` reports) set the deadline,
    see :func:`open_deadline`."""

    def __init__(
        self,
        open_it: Callable[[], T],
        *,
        timeout: float | None,
        progress: OpenProgress | None = None,
    ) -> None:
        self.timeout = timeout
        self.progress = progress
        self.started = time.monotonic()
        self._done = threading.Event()
        self._result: list[T] = []
        self._error: list[BaseException] = []
        self._thread = threading.Thread(
            target=self._run, args=(open_it,), name="gputui-open", daemon=True
        )
        with _openers_lock:
            _openers.add(self._thread)
        self._thread.start()

    def _run(self, open_it: Callable[[], T]) -> None:
        try:
            self._result.append(open_it())
        except BaseException as exc:  # handed to the waiting thread
            self._error.append(exc)
        finally:
            self._done.set()

    def deadline(self) -> float | None:
        if self.timeout is None:
            return None
        return open_deadline(self.started, self.timeout, self.progress)

    def wait(self, on_tick: Callable[[float], None] | None = None) -> T:
        """What the open returned (or raise what it raised). Raises :class:`OpenTimedOut` past
        the deadline, leaving the thread to its call. ``on_tick(seconds since the start)`` runs
        on this thread before the first slice and after each one while the open goes on."""
        while True:
            if on_tick is not None:
                on_tick(time.monotonic() - self.started)
            if self._done.wait(WAIT_SLICE_S):
                break
            deadline = self.deadline()
            if deadline is not None and time.monotonic() >= deadline:
                raise OpenTimedOut(deadline - self.started)
        self._thread.join()
        with _openers_lock:
            _openers.discard(self._thread)
        if self._error:
            raise self._error[0]
        return self._result[0]


def stuck(ignore: frozenset[threading.Thread] = frozenset()) -> bool:
    """Whether an open's thread (not one of ``ignore``) was left behind and has still not
    returned."""
    with _openers_lock:
        left = _openers - ignore
    return any(thread.is_alive() for thread in left)


def exit_now(code: int) -> NoReturn:
    """End the process with ``code`` at once: output flushed, helper processes stopped, and no
    exit handlers run (the driver library's may wait on the call that hangs)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    children.stop_all()
    os._exit(code)


def ends_cleanly(main: Callable[P, int]) -> Callable[P, int]:
    """``main`` with Ctrl-C as :data:`EXIT_INTERRUPTED` (no traceback); when it leaves an open's
    thread stuck, the process then ends with :func:`exit_now`."""

    @functools.wraps(main)
    def run(*args: P.args, **kwargs: P.kwargs) -> int:
        with _openers_lock:  # only this call's: a caller (tests) may call it again
            before = frozenset(_openers)
        try:
            code = main(*args, **kwargs)
        except KeyboardInterrupt:
            code = EXIT_INTERRUPTED
        if stuck(ignore=before):
            exit_now(code)
        return code

    return run


__all__ = [
    "COLD_OPEN_ALLOWANCE_S",
    "DEFAULT_TIMEOUT_S",
    "OpenTimedOut",
    "Opening",
    "ends_cleanly",
    "exit_now",
    "open_deadline",
    "stuck",
]
