"""Settings: defaults < config file < environment < command line, built once per run
(:func:`load_settings`, or :func:`gputui.commands.settings_from_args.settings_for` from parsed
arguments) and passed to the session and the dashboard."""

from __future__ import annotations

from gputui.settings.load import config_path, default_config_path, find_line, load_settings
from gputui.settings.model import (
    COMMAND_LINE,
    DEFAULT,
    DEFAULT_INTERVAL,
    DEFAULT_THEME,
    LIGHT_THEME,
    ExportSettings,
    HealthSettings,
    IncidentSettings,
    Problem,
    Settings,
)

__all__ = [
    "COMMAND_LINE",
    "DEFAULT",
    "DEFAULT_INTERVAL",
    "DEFAULT_THEME",
    "LIGHT_THEME",
    "ExportSettings",
    "HealthSettings",
    "IncidentSettings",
    "Problem",
    "Settings",
    "config_path",
    "default_config_path",
    "find_line",
    "load_settings",
]
