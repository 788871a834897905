"""``gputui`` (no sub-command): the live dashboard; on a terminal that cannot draw it
(``TERM=dumb``), one reading as text instead, as ``gputui snapshot`` prints it."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from dataclasses import field
from typing import TextIO

from gputui.commands.alerting import alerts_sent, refuse_for_replay
from gputui.commands.common import Common
from gputui.commands.output import encodable, error
from gputui.core.exitcodes import EXIT_NO_GPU, EXIT_OK, EXIT_USAGE
from gputui.core.frozen import frozen
from gputui.engine.session import BackendSpec, Session, SessionError, open_session
from gputui.settings.model import Settings

SHOW_AFTER_S = 2.0
"""An open that takes longer than this shows how long it has taken so far."""


@frozen
class DashboardOptions:
    spec: BackendSpec
    seed: int = 0
    settings: Settings = field(default_factory=Settings)
    """The interval, theme, keymap, read-only mode, recording directory, price and health
    thresholds."""


def options(args: argparse.Namespace, common: Common) -> DashboardOptions:
    """The dashboard's options are the command line's own (no sub-command)."""
    spec = common.spec()
    refuse_for_replay(common.settings, spec)
    return DashboardOptions(
        spec,
        seed=common.seed,
        settings=common.settings,
    )


def run(options: DashboardOptions) -> int:
    spec, seed = options.spec, options.seed
    # Textual reads keys from stdin and draws on stderr: both must be a terminal.
    drawable = sys.stdin.isatty() and sys.stderr.isatty()
    drawable = drawable and os.environ.get("TERM", "").strip().lower() != "dumb"
    try:
        session = _open_while_importing_the_tui(spec, seed, options.settings, drawable)
    except SessionError as exc:  # said once the opening status is off the terminal
        error(str(exc))
        return EXIT_NO_GPU
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        session.close()
        error(
            "gputui: the dashboard needs a terminal (stdin and stderr must be a TTY).\n"
            "For scripts use `gputui snapshot` (or `--json`); over SSH use `ssh -t`."
        )
        return EXIT_USAGE
    if os.environ.get("TERM", "").strip().lower() == "dumb":
        session.close()
        error(
            "gputui: TERM=dumb: this terminal cannot draw the dashboard (no cursor movement or "
            "colour); printing one reading instead, as `gputui snapshot` does."
        )
        from gputui.commands import snapshot

        return snapshot.run(snapshot.SnapshotOptions(spec, seed=seed, settings=options.settings))
    from gputui.tui.app import GpuTuiApp

    app = GpuTuiApp(session.sampler, settings=options.settings)
    if app.theme_problem is not None:
        error(app.theme_problem)
    try:
        # a failed alert shows as a notification; what was lost is said once the screen is back
        with alerts_sent(
            options.settings, session, report=app.report_alert_problem, announce=False
        ):
            app.run()  # SIGTERM / SIGHUP end it cleanly: return code 128 + the signal's number
    finally:
        session.close()
    return app.return_code or EXIT_OK


def _open_while_importing_the_tui(
    spec: BackendSpec, seed: int, settings: Settings, drawable: bool
) -> Session:
    """Open the backend (on a thread, see :func:`open_session`) while this thread imports
    Textual: loading the GPU library and importing the TUI are the two slow steps before the
    first frame, and the first spends much of its time outside Python (loading the driver
    library, initialising it). An open that takes a while shows its seconds on the terminal
    until it returns or the driver counts as not answering."""
    interval = settings.interval
    if not drawable:
        return open_session(spec, seed=seed, interval=interval, settings=settings)
    doing = "reading the recording" if spec.replayed else "opening the GPUs"
    status = _OpeningStatus(sys.stderr, doing)
    try:
        return open_session(
            spec,
            seed=seed,
            interval=interval,
            defer_topology=True,
            on_wait=status.update,
            settings=settings,
        )
    finally:
        status.clear()


class _OpeningStatus:
    """What the open is doing and for how long so far ("opening the GPUs… (12 s)"), on one
    terminal line, from :data:`SHOW_AFTER_S` on."""

    def __init__(self, stream: TextIO, doing: str) -> None:
        self.stream = stream
        self.doing = doing
        self.shown = ""

    def update(self, seconds: float) -> None:
        import gputui.tui.app  # noqa: F401  (the first call: the import overlaps the opening)

        if seconds < SHOW_AFTER_S:
            return
        text = f"gputui: {self.doing}… ({seconds:.0f} s)"
        if text != self.shown:
            self._write(f"\r{text}\x1b[K")
            self.shown = text

    def clear(self) -> None:
        if self.shown:
            self._write("\r\x1b[K")
            self.shown = ""

    def _write(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.stream.write(encodable(text, self.stream))
            self.stream.flush()


__all__ = ["DashboardOptions", "options", "run"]
