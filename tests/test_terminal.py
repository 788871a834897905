"""The dashboard in a real pseudo-terminal (as benchmarks/bench_tui.py runs it): SIGTERM and SIGHUP
restore the terminal as q does, a terminal that goes away does not leave gputui running, and
TERM=dumb gets the one-shot text instead of a full-screen app."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.fakes.terminal import Terminal

from gputui.tui.exit_signals import HUNG_UP_GRACE_S, SIGNAL_EXIT_GRACE_S

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="pseudo-terminals as on Linux")

ROOT = Path(__file__).resolve().parent.parent
FIRST_FRAME = b"H100"  # a GPU name in the demo's panels: the first frame is on the screen
STARTUP_S = 30.0  # generous: a loaded two-core machine
# What Textual writes when it leaves application mode (after q or Ctrl-C).
RESTORE = {
    "leave the alternate screen": b"\x1b[?1049l",
    "show the cursor": b"\x1b[?25h",
    "stop mouse reporting": b"\x1b[?1000l",
    "stop all-motion mouse reporting": b"\x1b[?1003l",
    "stop SGR mouse reporting": b"\x1b[?1006l",
    "stop bracketed paste": b"\x1b[?2004l",
}


@pytest.fixture
def terminal() -> Iterator[Callable[..., Terminal]]:
    opened: list[Terminal] = []

    def open_(args: list[str], env: dict[str, str] | None = None) -> Terminal:
        term = Terminal(args, env)
        opened.append(term)
        return term

    yield open_
    for term in opened:
        term.close()


def wait_for_first_frame(term: Terminal) -> None:
    assert term.read(lambda out: FIRST_FRAME in out, STARTUP_S), term.output[-2000:]
    assert b"\x1b[?1049h" in term.output and b"\x1b[?1000h" in term.output  # app mode is on


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_signal_restores_the_terminal_and_exits(terminal, sig: signal.Signals) -> None:
    """SIGTERM/SIGHUP end the dashboard like q: out of the alternate screen, cursor shown, mouse
    reporting off; exit status 128 + the signal's number, well within the grace period."""
    term = terminal(["-m", "gputui", "--demo"])
    wait_for_first_frame(term)
    before = len(term.output)
    sent = time.monotonic()
    term.process.send_signal(sig)
    term.read(lambda out: False, SIGNAL_EXIT_GRACE_S + 5)  # until the child closes the pty
    code = term.process.wait(10)
    took = time.monotonic() - sent
    after = term.output[before:]
    missing = [what for what, seq in RESTORE.items() if seq not in after]
    assert not missing, (missing, after[-400:])
    assert after.rfind(b"\x1b[?1049l") > after.rfind(b"\x1b[?1049h")
    assert code == 128 + sig, code
    assert took < SIGNAL_EXIT_GRACE_S, took


def test_a_terminal_that_goes_away_does_not_leave_gputui_running(terminal) -> None:
    """Closing the terminal (the SSH connection drops) hangs it up: gputui exits, 128 + SIGHUP,
    promptly, although writing to the dead terminal can block Textual's output thread."""
    term = terminal(["-m", "gputui", "--demo"])
    wait_for_first_frame(term)
    closed = time.monotonic()
    os.close(term.master)
    term.master = -1
    code = term.process.wait(SIGNAL_EXIT_GRACE_S + 5)
    took = time.monotonic() - closed
    assert code == 128 + signal.SIGHUP
    # the output thread can block on the dead terminal: the short grace for a hung-up one ends it
    assert took < HUNG_UP_GRACE_S + 2.0, took


def test_dumb_terminal_gets_the_one_shot_text() -> None:
    """TERM=dumb (no cursor movement): no full-screen app; the snapshot text on stdout, and why
    on stderr, exit 0."""
    master, slave = os.openpty()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "gputui", "--demo"],
            stdin=slave,
            stderr=slave,
            stdout=subprocess.PIPE,
            env=dict(os.environ, TERM="dumb"),
            cwd=ROOT,
            timeout=STARTUP_S,
        )
        os.close(slave)
        slave = -1
        err = b""
        while select.select([master], [], [], 0.2)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            err += chunk
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)
    assert result.returncode == 0
    out = result.stdout.decode()
    assert "dgx-h100" in out and "GPU  NAME" in out and "\x1b" not in out
    assert b"TERM=dumb" in err and b"gputui snapshot" in err
    assert b"\x1b[?1049h" not in err
