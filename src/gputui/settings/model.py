"""The effective settings: one frozen value, built once per run (see :mod:`gputui.settings.load`)
and handed to the session and the dashboard. Nothing here is read from module-global state."""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any, Literal

from gputui.core.frozen import frozen
from gputui.core.metric_names import DcgmNames
from gputui.core.model import Severity
from gputui.health.config import DEFAULT_XID_WINDOW_HOURS, HealthConfig

DEFAULT_INTERVAL = 1.0
DEFAULT_THEME = "textual-dark"
LIGHT_THEME = "textual-light"
"""What ``--light`` stands for."""
DEFAULT = "default"
COMMAND_LINE = "command line"


def _health_default(name: str) -> Any:
    """A :class:`HealthConfig` field's default: the thresholds are written once, there."""
    for f in dataclasses.fields(HealthConfig):
        if f.name == name:
            return f.default
    raise KeyError(name)


@frozen
class HealthSettings:
    """The ``[health]`` table: thresholds of the health rules and the rules left out."""

    idle_memory_minutes: float = _health_default("idle_memory_minutes")
    idle_memory_min_bytes: int = _health_default("idle_memory_min_bytes")
    allocated_idle_minutes: float = _health_default("allocated_idle_minutes")
    straggler_pct: float = _health_default("straggler_pct")
    straggler_seconds: float = _health_default("straggler_seconds")
    xid_window_hours: float = DEFAULT_XID_WINDOW_HOURS
    """0: no window (TOML has no null)."""
    expect_gpus: int | None = None
    """None: what Slurm allocated."""
    ignore: frozenset[str] = frozenset()

    def config(self, **facts: Any) -> HealthConfig:
        """The rules' :class:`HealthConfig` with these thresholds; ``facts`` adds the rest."""
        return HealthConfig(
            expect_gpus=self.expect_gpus,
            ignore=self.ignore,
            idle_memory_minutes=self.idle_memory_minutes,
            idle_memory_min_bytes=self.idle_memory_min_bytes,
            allocated_idle_minutes=self.allocated_idle_minutes,
            xid_window_hours=self.xid_window_hours or None,
            straggler_pct=self.straggler_pct,
            straggler_seconds=self.straggler_seconds,
            **facts,
        )


@frozen
class ExportSettings:
    """The ``[export]`` table: what ``gputui export`` publishes."""

    dcgm_names: DcgmNames = "legacy"
    """dcgm-exporter's legacy names, DCGM 4.7's, or both (:data:`DCGM_NAMES`)."""


@frozen
class IncidentSettings:
    """The ``[incidents]`` table: the windows around an incident and the directory's bounds
    (``record`` and ``export`` with ``--incidents DIR``)."""

    before: float = 60.0
    """Seconds of readings kept before the finding that starts an incident."""
    after: float = 30.0
    """Seconds of readings written after it (later findings move the end)."""
    max_files: int = 50
    max_bytes: int = 500 << 20
    """The incident files kept in the directory, oldest removed first."""


DEFAULT_RATE_LIMIT_MINUTES = 10.0


@frozen
class AlertSettings:
    """The ``[alerts]`` table: where new health findings are sent, from which severity on, and
    how often one finding may be sent again (the dashboard, ``export``, ``record``)."""

    notify: str | None = None
    """A command (split as a shell would, run without one) that gets each alert on stdin."""
    webhook: str | None = None
    """An http(s) URL each alert is POSTed to; a secret: shown only as ``scheme://host/…``."""
    min_severity: Severity = "warn"
    rate_limit_minutes: float = DEFAULT_RATE_LIMIT_MINUTES
    """At most one alert per finding (key and severity) this often."""

    @property
    def enabled(self) -> bool:
        return self.notify is not None or self.webhook is not None


Origin = Literal["file", "env"]


@frozen
class Problem:
    """Something in the config file or the environment that could not be used."""

    message: str
    """The whole line for the user, ``gputui: ...``."""
    origin: Origin
    key: str | None = None
    """The setting it concerns (dotted, as in the file); None for the file as a whole."""


@frozen
class Settings:
    """Defaults < config file < environment < command line, for one run."""

    interval: float = DEFAULT_INTERVAL
    gpu_hour_price: float | None = None
    theme: str = DEFAULT_THEME
    record_dir: str = "."
    """Where recordings go when given a bare file name or none (``~`` already expanded)."""
    readonly: bool = False
    health: HealthSettings = field(default_factory=HealthSettings)
    export: ExportSettings = field(default_factory=ExportSettings)
    incidents: IncidentSettings = field(default_factory=IncidentSettings)
    alerts: AlertSettings = field(default_factory=AlertSettings)
    keymap: tuple[tuple[str, str], ...] = ()
    """(binding id, keys) pairs, for ``App.set_keymap``."""
    config_file: str | None = field(default=None, compare=False)
    """The config file read or looked for; None when none was looked for."""
    config_found: bool = field(default=False, compare=False)
    sources: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    """(setting, where its value came from): the file's path, ``env VAR``, ``command line``;
    a setting not listed has its default."""
    problems: tuple[Problem, ...] = field(default=(), compare=False)

    def value(self, key: str) -> Any:
        """A setting by its dotted name (``interval``, ``health.ignore``, ``keymap``)."""
        owner: Any = self
        for part in key.split("."):
            owner = getattr(owner, part)
        return owner

    def source(self, key: str) -> str:
        return dict(self.sources).get(key, DEFAULT)

    @property
    def keymap_dict(self) -> dict[str, str]:
        return dict(self.keymap)


__all__ = [
    "COMMAND_LINE",
    "DEFAULT",
    "DEFAULT_INTERVAL",
    "DEFAULT_RATE_LIMIT_MINUTES",
    "DEFAULT_THEME",
    "LIGHT_THEME",
    "AlertSettings",
    "ExportSettings",
    "HealthSettings",
    "IncidentSettings",
    "Origin",
    "Problem",
    "Settings",
]
