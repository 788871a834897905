"""The settings of one ``gputui`` run from its parsed arguments: the one call after parsing.

Problems in the config file are reported on stderr and the run goes on with the defaults for
what could not be used. A bad environment variable is a usage error (exit 2) for a command that
uses that setting, like a bad option; other commands do not read it (``gputui config`` shows it).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from gputui.commands.output import error
from gputui.settings.keys import DASHBOARD, KEYS_BY_NAME
from gputui.settings.load import load_settings
from gputui.settings.model import LIGHT_THEME, Settings

OPTIONS = {
    "interval": "interval",
    "gpu_hour_price": "gpu_hour_price",
    "theme": "theme",
    "readonly": "readonly",
    "health.expect_gpus": "expect_gpus",
    "health.xid_window_hours": "xid_window",
    "export.dcgm_names": "dcgm_names",
    "incidents.before": "before",
    "incidents.after": "after",
    "alerts.notify": "notify",
    "alerts.webhook": "webhook",
    "alerts.min_severity": "alert_severity",
}
"""Setting -> the attribute its option sets on the parsed arguments (None: not given)."""


def settings_for(
    args: argparse.Namespace,
    parser: argparse.ArgumentParser,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    given = {name: getattr(args, attr, None) for name, attr in OPTIONS.items()}
    given["readonly"] = getattr(args, "readonly", False) or None  # a flag: only ever True
    if getattr(args, "light", False) and given["theme"] is None:
        given["theme"] = LIGHT_THEME
    command = args.command or DASHBOARD
    _refuse_unused_alerts(given, command, parser)
    settings = load_settings(
        command_line=given,
        environ=environ,
        config=getattr(args, "config", None),
        missing_ok=command == "config" and bool(getattr(args, "init", False)),
    )
    for problem in settings.problems:
        if problem.origin == "file":
            error(problem.message)
            continue
        key = KEYS_BY_NAME[problem.key or ""]
        if command in key.commands:
            parser.error(problem.message)
        if command == "config":
            error(f"gputui: {problem.message}; ignored")
    return settings


def _refuse_unused_alerts(
    given: Mapping[str, object], command: str, parser: argparse.ArgumentParser
) -> None:
    """``gputui --webhook URL snapshot``: an alert option before a command that sends none is
    an error, not silently nothing sent."""
    for name, value in given.items():
        key = KEYS_BY_NAME[name]
        unused = command not in key.commands and command != "config"  # config shows it
        if name.startswith("alerts.") and value is not None and unused:
            parser.error(f"{key.option} is for the dashboard, export and record, not {command}")


__all__ = ["OPTIONS", "settings_for"]
