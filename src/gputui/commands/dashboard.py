"""``gputui`` (no sub-command): the live dashboard; on a terminal that cannot draw it
(``TERM=dumb``), one reading as text instead, as ``gputui snapshot`` prints it."""

from __future__ import annotations

import os
import sys

from gputui.commands.output import error
from gputui.exitcodes import EXIT_NO_GPU, EXIT_OK, EXIT_USAGE
from gputui.session import BackendSpec, SessionError, open_session


def run(
    spec: BackendSpec,
    *,
    seed: int = 0,
    interval: float = 1.0,
    readonly: bool = False,
    light: bool = False,
) -> int:
    try:
        session = open_session(spec, seed=seed, interval=interval)
    except SessionError as exc:
        error(str(exc))
        return EXIT_NO_GPU
    # Textual reads keys from stdin and draws on stderr: both must be a terminal.
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

        return snapshot.run(spec, seed=seed)
    from gputui.tui.app import GpuTuiApp

    app = GpuTuiApp(session.sampler, readonly=readonly, theme="textual-light" if light else None)
    try:
        app.run()  # SIGTERM / SIGHUP end it cleanly: return code 128 + the signal's number
    finally:
        session.close()
    return app.return_code or EXIT_OK


__all__ = ["run"]
