"""Opening a command's session, and saying why not when it cannot be opened."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gputui.commands.output import error
from gputui.engine.session import BackendSpec, Session, SessionError, open_session


def open_or_report(
    spec: BackendSpec,
    *,
    describe: Callable[[SessionError], str] = str,
    **options: Any,
) -> Session | None:
    """:func:`gputui.engine.session.open_session` with ``options``; when it fails, the message
    (``describe(exc)``: the error's own by default) goes to stderr and None comes back: the
    command then exits 2 (every "cannot open" is :data:`gputui.core.exitcodes.EXIT_NO_GPU`)."""
    try:
        return open_session(spec, **options)
    except SessionError as exc:
        error(describe(exc))
        return None


__all__ = ["open_or_report"]
