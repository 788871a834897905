"""``gputui`` (no sub-command): the live dashboard; on a terminal that cannot draw it
(``TERM=dumb``), one reading as text instead, as ``gputui snapshot`` prints it."""

from __future__ import annotations

import os
import sys
import threading

from gputui.commands.output import error
from gputui.exitcodes import EXIT_NO_GPU, EXIT_OK, EXIT_USAGE
from gputui.session import BackendSpec, Session, SessionError, open_session


def run(
    spec: BackendSpec,
    *,
    seed: int = 0,
    interval: float = 1.0,
    readonly: bool = False,
    light: bool = False,
) -> int:
    # Textual reads keys from stdin and draws on stderr: both must be a terminal.
    drawable = sys.stdin.isatty() and sys.stderr.isatty()
    drawable = drawable and os.environ.get("TERM", "").strip().lower() != "dumb"
    try:
        session = _open_while_importing_the_tui(spec, seed, interval, drawable)
    except SessionError as exc:
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

        return snapshot.run(spec, seed=seed)
    from gputui.tui.app import GpuTuiApp

    app = GpuTuiApp(session.sampler, readonly=readonly, theme="textual-light" if light else None)
    try:
        app.run()  # SIGTERM / SIGHUP end it cleanly: return code 128 + the signal's number
    finally:
        session.close()
    return app.return_code or EXIT_OK


def _open_while_importing_the_tui(
    spec: BackendSpec, seed: int, interval: float, drawable: bool
) -> Session:
    """Open the backend on a thread while this one imports Textual: loading the GPU library
    and importing the TUI are the two slow steps before the first frame, and the first spends
    much of its time outside Python (loading the driver library, initialising it)."""
    if not drawable:
        return open_session(spec, seed=seed, interval=interval)
    result: list[Session | SessionError] = []

    def open_it() -> None:
        try:
            result.append(open_session(spec, seed=seed, interval=interval, defer_topology=True))
        except SessionError as exc:
            result.append(exc)

    opener = threading.Thread(target=open_it, name="gputui-open", daemon=True)
    opener.start()
    import gputui.tui.app  # noqa: F401  (the import is the point: it overlaps the opening)

    opener.join()
    opened = result[0]
    if isinstance(opened, SessionError):
        raise opened
    return opened


__all__ = ["run"]
