"""Alerts for the modes that keep reading (the dashboard, ``export``, ``record``): one helper
that attaches an :class:`~gputui.engine.alerts.AlertDispatcher` to the session's sampler while
the mode runs, and closes it (a bounded wait) when the mode ends.

A replay sends no alert (its findings are history): ``--notify`` / ``--webhook`` with
``--replay`` is a usage error, and alerts set in the config file or environment are left off.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from gputui.backends.spec import BackendSpec
from gputui.commands.common import UsageError
from gputui.commands.output import error
from gputui.engine.alerts import AlertDispatcher
from gputui.engine.session import Session
from gputui.settings.keys import KEYS_BY_NAME
from gputui.settings.model import COMMAND_LINE, AlertSettings, Settings

SENDING = ("alerts.notify", "alerts.webhook")


def refuse_for_replay(settings: Settings, spec: BackendSpec) -> None:
    """:class:`UsageError` when the command line asks for alerts from a replay."""
    if not spec.replayed:
        return
    given = [KEYS_BY_NAME[name].option for name in SENDING if settings.source(name) == COMMAND_LINE]
    if given:
        raise UsageError(
            f"{' and '.join(str(o) for o in given)}: a replay sends no alerts (its findings "
            "are history)"
        )


def describe(alerts: AlertSettings, dispatcher: AlertDispatcher) -> str:
    """``gputui: alerts (warn and worse) by --webhook https://hooks.slack.com/…``."""
    level = {"info": "every finding", "warn": "warn and fail", "fail": "fail"}[alerts.min_severity]
    names = " and ".join(sender.name for sender in dispatcher.senders)
    return f"gputui: alerts ({level}) by {names}"


@contextmanager
def alerts_sent(
    settings: Settings,
    session: Session,
    *,
    report: Callable[[str], object] = error,
    announce: bool = True,
) -> Iterator[AlertDispatcher | None]:
    """Send alerts from ``session``'s readings while the block runs (None: none asked for, or
    a replay). ``report``: where a failed send is said while the mode runs; afterwards, and
    for what was lost, stderr. ``announce``: say on stderr where alerts go."""
    alerts = settings.alerts
    if not alerts.enabled or session.playback is not None:
        yield None
        return
    dispatcher = AlertDispatcher(alerts, report=report)
    sampler = session.sampler
    sampler.add_listener(dispatcher.on_snapshot)
    if announce:
        error(describe(alerts, dispatcher))
    try:
        yield dispatcher
    finally:
        sampler.remove_listener(dispatcher.on_snapshot)
        dispatcher.reporter.target = error  # the mode is over: its terminal is stderr again
        for counts in dispatcher.close():
            if counts.lost:
                error(f"gputui: alerts {counts.describe()}")


__all__ = ["alerts_sent", "describe", "refuse_for_replay"]
