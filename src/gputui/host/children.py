"""Helper programs gputui starts for itself (``scontrol``), never left running behind it.

A Slurm prolog runs ``gputui check`` or ``snapshot`` on every job: a helper that hangs (a Slurm
controller that does not answer) must not outlive the command, or each run leaves one more behind.
Each helper runs in a session of its own, so killing its process group also ends whatever it
started. :func:`stop` ends one helper; :func:`stop_all` ends every one still running, at exit
(``atexit``) and before a hard exit (:func:`gputui.engine.opening.exit_now` skips ``atexit``).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence

STOP_WAIT_S = 2.0
"""How long stopping the helpers waits for them to be gone, in all."""

_lock = threading.Lock()
_running: set[subprocess.Popen[str]] = set()


def start(argv: Sequence[str]) -> subprocess.Popen[str]:
    """Start ``argv`` in a session of its own, stdout and stderr as text pipes, no stdin; it is
    stopped at exit unless it has been waited for. OSError when it cannot be started."""
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    with _lock:
        _running.add(proc)
    return proc


def output(proc: subprocess.Popen[str], timeout: float) -> tuple[int, str] | None:
    """The exit status and stdout of a helper from :func:`start`; None when it did not end
    within ``timeout`` seconds (then it is stopped) or was stopped meanwhile."""
    try:
        stdout, _ = proc.communicate(timeout=timeout)
    except (subprocess.TimeoutExpired, OSError, ValueError):
        stop(proc)
        return None
    finally:
        with _lock:
            _running.discard(proc)
    if proc.returncode < 0:  # killed (by stop, from another thread)
        return None
    return proc.returncode, stdout


def bounded_output(
    proc: subprocess.Popen[str], timeout: float, max_chars: int
) -> tuple[int, str, str] | None:
    """The exit status, stdout and the start of stderr of a helper from :func:`start`, reading
    at most ``max_chars`` of stdout (a scheduler's answer on a large cluster can be megabytes);
    None when it did not end within ``timeout`` seconds, wrote more than that, or was stopped
    meanwhile (then it is stopped)."""
    timer = threading.Timer(max(timeout, 0.0), stop, (proc,))
    timer.daemon = True
    timer.start()
    try:
        assert proc.stdout is not None and proc.stderr is not None
        out = proc.stdout.read(max_chars + 1)
        if len(out) > max_chars:
            stop(proc)
            return None
        err = proc.stderr.read(4096)
        proc.wait()
    except (OSError, ValueError):
        stop(proc)
        return None
    finally:
        timer.cancel()
        with _lock:
            _running.discard(proc)
    if proc.returncode is None or proc.returncode < 0:  # killed (the timer, or stop)
        return None
    return proc.returncode, out, err


def stop(proc: subprocess.Popen[str], wait_s: float = STOP_WAIT_S) -> None:
    """Kill the helper's process group and wait up to ``wait_s`` for the helper to end."""
    if proc.returncode is None:  # not reaped yet: its PID (the group's id) is still its own
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired, OSError):
        proc.wait(timeout=max(wait_s, 0.0))
    with _lock:
        _running.discard(proc)


def stop_all() -> None:
    """Stop every helper still running (waiting :data:`STOP_WAIT_S` at most, in all)."""
    with _lock:
        procs = list(_running)
    end = time.monotonic() + STOP_WAIT_S
    for proc in procs:
        stop(proc, end - time.monotonic())


atexit.register(stop_all)

__all__ = ["STOP_WAIT_S", "bounded_output", "output", "start", "stop", "stop_all"]
