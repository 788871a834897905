"""Every setting the config file, the environment and the command line can give: its name in the
file, type, range, default, environment variable, option, the commands that use it and one line
of what it does (for ``gputui config --init`` and the messages). And the key binding ids the
``[keymap]`` table may rebind."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

from gputui.core.frozen import frozen
from gputui.core.metric_names import DCGM_NAMES
from gputui.settings.model import (
    DEFAULT_INTERVAL,
    DEFAULT_THEME,
    AlertSettings,
    ExportSettings,
    HealthSettings,
    IncidentSettings,
)

Kind = Literal["number", "integer", "bool", "text", "rules", "choice", "duration"]

CONFIG_ENV = "GPUTUI_CONFIG"
DASHBOARD = "dashboard"
"""The command name of ``gputui`` without a sub-command."""
READING = frozenset({DASHBOARD, "snapshot", "export", "record"})
"""Commands that read the GPUs through a session (price, health rules)."""
WATCHING = frozenset({DASHBOARD, "export", "record"})
"""Commands that keep reading until stopped (alerts)."""
TABLES = ("health", "export", "incidents", "alerts", "keymap")

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


@frozen
class Key:
    """One setting."""

    name: str
    """Dotted, as in the file: ``interval``, ``health.ignore``."""
    kind: Kind
    default: object
    doc: str
    low: float | None = None
    high: float | None = None
    env: str | None = None
    option: str | None = None
    commands: frozenset[str] = READING
    parse_env: Callable[[str], object] | None = None
    """How the environment's text becomes a value (default: by :attr:`kind`)."""
    example: str | None = None
    """For a setting without a default value: a commented example line in the default file."""
    choices: tuple[str, ...] = ()
    """A ``choice`` setting's words."""
    validate: Callable[[object], object] | None = None
    """A further check of a value of the right kind: the value to use, or ValueError(why)."""
    secret: bool = False
    """Parts of the value are secret: messages and ``gputui config`` show it redacted."""

    def shown(self, value: object) -> object:
        """``value`` as it may be shown: a secret URL as ``scheme://host/…``."""
        if self.secret and isinstance(value, str):
            from gputui.core.webhook_url import redact_url

            return redact_url(value)
        return value

    def expected(self) -> str:
        if self.kind == "number" or self.kind == "integer":
            what = "a number" if self.kind == "number" else "a whole number"
            if self.low is not None and self.high is not None:
                return f"{what} from {self.low:g} to {self.high:g}"
            if self.low is not None:
                return f"{what} of {self.low:g} or more"
            return what
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind == "duration":
            what = 'seconds or a duration ("90s", "10m", "1h")'
            if self.low is not None and self.high is not None:
                return f"{what} from {self.low:g} to {self.high:g} s"
            return what
        return {
            "bool": "true or false",
            "text": "a string",
            "rules": "a list of rule ids (see `gputui check --list-rules`)",
        }[self.kind]

    def check(self, value: object) -> object:
        """A value from the file as this setting; ValueError(why) when it is not one."""
        value = self._check_kind(value)
        return value if self.validate is None else self.validate(value)

    def _check_kind(self, value: object) -> object:
        if self.kind in ("number", "integer"):
            allowed = isinstance(value, (int, float) if self.kind == "number" else int)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not allowed:
                raise ValueError(f"expected {self.expected()}")
            if not math.isfinite(value) or not self._in_range(float(value)):
                raise ValueError(f"expected {self.expected()}")
            return float(value) if self.kind == "number" else int(value)
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise ValueError(f"expected {self.expected()}")
            return value
        if self.kind == "text":
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"expected {self.expected()}")
            return value.strip()
        if self.kind == "choice":
            return self._choice(value)
        if self.kind == "duration":
            return self._duration(value)
        return _rules(value)

    def _duration(self, value: object) -> float:
        """Seconds as a number, or a duration as the options take it (``"90s"``, ``"1m30s"``)."""
        from gputui.core.record import parse_duration

        if isinstance(value, str):
            try:
                value = parse_duration(value)
            except ValueError:
                raise ValueError(f"expected {self.expected()}") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"expected {self.expected()}")
        if not math.isfinite(value) or not self._in_range(float(value)):
            raise ValueError(f"expected {self.expected()}")
        return float(value)

    def _choice(self, value: object) -> str:
        # ``dcgm_names = 4.7`` unquoted is a TOML float: the word it spells is meant
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        word = repr(value) if number else value.strip() if isinstance(value, str) else ""
        if word not in self.choices:
            raise ValueError(f"expected {self.expected()}")
        return word

    def parse(self, text: str) -> object:
        """An environment variable's text as this setting; ValueError(why)."""
        if self.parse_env is not None:
            return self.parse_env(text)
        if self.kind == "bool":
            word = text.strip().lower()
            if word in _TRUE or word in _FALSE:
                return word in _TRUE
            raise ValueError(f"{text!r} is not 1/0, true/false, yes/no or on/off")
        if self.kind == "duration":
            return self.check(text)
        if self.kind in ("number", "integer"):
            try:
                value: object = float(text) if self.kind == "number" else int(text)
            except ValueError:
                raise ValueError(f"{text!r} is not {self.expected()}") from None
            try:
                return self.check(value)
            except ValueError:
                raise ValueError(f"{text!r} is not {self.expected()}") from None
        return self.check(text)

    def _in_range(self, value: float) -> bool:
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)


def _rules(value: object) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("expected a list of rule ids (see `gputui check --list-rules`)")
    from gputui.health.verdict import all_rules

    known = all_rules()
    unknown = sorted({v for v in value if v not in known})
    if unknown:
        raise ValueError(f"unknown rule {', '.join(unknown)} (see `gputui check --list-rules`)")
    return frozenset(value)


def _price(text: str) -> object:
    from gputui.core.usage import parse_price

    return parse_price(text)


def _command(value: object) -> object:
    from gputui.core.notify_command import check_command

    return check_command(value)


def _webhook(value: object) -> object:
    from gputui.core.webhook_url import check_webhook_url

    return check_webhook_url(value)


_HEALTH = HealthSettings()
_ALERTS = AlertSettings()
_HEALTH_USERS = READING | {"check"}
_INCIDENTS = IncidentSettings()
_INCIDENT_USERS = frozenset({"record", "export"})

KEYS: tuple[Key, ...] = (
    Key(
        "interval",
        "number",
        DEFAULT_INTERVAL,
        "seconds between readings (the dashboard, record, export)",
        low=0.1,
        high=3600,
        env="GPUTUI_INTERVAL",
        option="--interval",
        commands=frozenset({DASHBOARD, "record", "export"}),
    ),
    Key(
        "gpu_hour_price",
        "number",
        None,
        "what one GPU-hour costs: idle GPUs are shown and exported with their cost (no currency)",
        low=0,
        env="GPUTUI_GPU_HOUR_PRICE",
        option="--gpu-hour-price",
        parse_env=_price,
        example="gpu_hour_price = 2.50",
    ),
    Key(
        "theme",
        "text",
        DEFAULT_THEME,
        "the dashboard's colour theme: gputui-high-contrast, textual-light, nord, ... "
        "(the command palette lists them)",
        env="GPUTUI_THEME",
        option="--theme",
        commands=frozenset({DASHBOARD}),
    ),
    Key(
        "record_dir",
        "text",
        ".",
        "where recordings go (gputui record with a bare file name or none, key R)",
        env="GPUTUI_RECORD_DIR",
        commands=frozenset({DASHBOARD, "record"}),
    ),
    Key(
        "readonly",
        "bool",
        False,
        "look only: no signals to processes, no probe, no recording from the dashboard",
        env="GPUTUI_READONLY",
        option="--readonly",
        commands=frozenset({DASHBOARD}),
    ),
    Key(
        "health.idle_memory_minutes",
        "number",
        _HEALTH.idle_memory_minutes,
        "memory held with no utilization warns after this many minutes",
        low=1,
        high=10080,
        commands=_HEALTH_USERS,
    ),
    Key(
        "health.idle_memory_min_bytes",
        "integer",
        _HEALTH.idle_memory_min_bytes,
        "... when a process holds at least this many bytes",
        low=0,
        commands=_HEALTH_USERS,
    ),
    Key(
        "health.allocated_idle_minutes",
        "number",
        _HEALTH.allocated_idle_minutes,
        "a GPU the scheduler allocated (Slurm, Kubernetes) that does no work warns after this "
        "many minutes",
        low=0,
        high=10080,
        commands=_HEALTH_USERS,
    ),
    Key(
        "health.straggler_pct",
        "number",
        _HEALTH.straggler_pct,
        "a GPU this far (%) below its siblings' median clock, power or utilization is a "
        "straggler (0: off)",
        low=0,
        high=90,
        commands=_HEALTH_USERS,
    ),
    Key(
        "health.straggler_seconds",
        "number",
        _HEALTH.straggler_seconds,
        "... once it has stayed there this many seconds",
        low=1,
        high=86400,
        commands=_HEALTH_USERS,
    ),
    Key(
        "health.xid_window_hours",
        "number",
        _HEALTH.xid_window_hours,
        "an XID in the kernel log older than this is history (0: no window)",
        low=0,
        high=24 * 366,
        option="--xid-window",
        commands=_HEALTH_USERS,
    ),
    Key(
        "health.expect_gpus",
        "integer",
        None,
        "GPUs that must be present (default: what Slurm allocated, if anything)",
        low=0,
        option="--expect-gpus",
        commands=_HEALTH_USERS,
        example="expect_gpus = 8",
    ),
    Key(
        "health.ignore",
        "rules",
        frozenset(),
        "rules whose findings are left out (check --ignore adds to these)",
        option="--ignore",
        commands=_HEALTH_USERS,
    ),
    Key(
        "export.dcgm_names",
        "choice",
        ExportSettings().dcgm_names,
        "the DCGM metric names gputui export publishes: legacy (dcgm-exporter up to 4.8), "
        "4.7 (DCGM 4.7's, as dcgm-exporter 4.9) or both",
        option="--dcgm-names",
        commands=frozenset({"export"}),
        choices=tuple(DCGM_NAMES),
    ),
    Key(
        "incidents.before",
        "duration",
        _INCIDENTS.before,
        'seconds (or "2m") of readings an incident file holds before the failure that starts it',
        low=1,
        high=3600,
        option="--before",
        commands=_INCIDENT_USERS,
    ),
    Key(
        "incidents.after",
        "duration",
        _INCIDENTS.after,
        "... and after it (a failure within that window moves the end)",
        low=1,
        high=3600,
        option="--after",
        commands=_INCIDENT_USERS,
    ),
    Key(
        "incidents.max_files",
        "integer",
        _INCIDENTS.max_files,
        "incident files kept in the directory (the oldest of them removed first)",
        low=1,
        high=100_000,
        commands=_INCIDENT_USERS,
    ),
    Key(
        "incidents.max_bytes",
        "integer",
        _INCIDENTS.max_bytes,
        "... and the bytes they may take in all",
        low=1 << 20,
        commands=_INCIDENT_USERS,
    ),
    Key(
        "alerts.notify",
        "text",
        None,
        "a command that gets each new finding as JSON on stdin (split as a shell splits, "
        "run without one)",
        env="GPUTUI_NOTIFY",
        option="--notify",
        commands=WATCHING,
        validate=_command,
        example='notify = "logger -t gputui"',
    ),
    Key(
        "alerts.webhook",
        "text",
        None,
        "an http(s) URL each new finding is POSTed to as JSON (shown only as scheme://host/…)",
        env="GPUTUI_WEBHOOK",
        option="--webhook",
        commands=WATCHING,
        validate=_webhook,
        secret=True,
        example='webhook = "https://hooks.slack.com/services/T000/B000/XXXX"',
    ),
    Key(
        "alerts.min_severity",
        "choice",
        _ALERTS.min_severity,
        "the least severe finding that is sent: info, warn or fail",
        option="--alert-severity",
        commands=WATCHING,
        choices=("info", "warn", "fail"),
    ),
    Key(
        "alerts.rate_limit_minutes",
        "number",
        _ALERTS.rate_limit_minutes,
        "one finding (its key and severity) is sent at most once this many minutes, however "
        "often it clears and comes back (0: no limit)",
        low=0,
        high=10080,
        commands=WATCHING,
    ),
)

KEYS_BY_NAME = {key.name: key for key in KEYS}

KEYMAP: dict[str, tuple[str, str]] = {
    "quit": ("q", "quit"),
    "quit.interrupt": ("ctrl+c", "quit, also while typing in a filter or a dialog"),
    "help": ("question_mark", "help screen"),
    "health": ("h", "health findings"),
    "topology": ("t", "topology"),
    "probe": ("p", "performance probe"),
    "pause": ("space,Z", "pause the display (Z where space tags processes)"),
    "interval.up": ("plus,equals_sign", "longer interval"),
    "interval.down": ("minus", "shorter interval"),
    "refresh": ("r", "read now"),
    "record": ("R", "start / stop recording"),
    **{f"gpu.{i}": (str(i), f"GPU {i}'s processes") for i in range(10)},
    "gpu.all": ("a", "every GPU's processes"),
    "filter": ("slash", "filter processes"),
    "details": ("enter", "process details"),
    "tag": ("space", "tag the selected process (k signals every tagged one)"),
    "untag": ("U", "untag every process"),
    "environ": ("e", "the selected process's environment"),
    "signal": ("k", "signal the tagged processes, or the selected one"),
    "signal.refused": ("k", "why no signal is offered"),
    "clear": ("escape", "clear the filters"),
    "process_table.cycle_sort": ("s", "sort by the next column"),
    "process_table.reverse_sort": ("S", "reverse the sort"),
    "process_table.up": ("up", "previous process"),
    "process_table.down": ("down", "next process"),
    "process_table.page_up": ("pageup", "a page up"),
    "process_table.page_down": ("pagedown", "a page down"),
    "process_table.first": ("home", "first process"),
    "process_table.last": ("end", "last process"),
    "process_table.select": ("enter", "select the process"),
    "process_table.group": ("g", "group the processes by GPU, or not"),
    "process_table.tree": ("f,f5", "the processes as a tree, or not"),
    "process_table.command_left": ("left", "scroll the commands left"),
    "process_table.command_right": ("right", "scroll the commands right"),
    "process_table.command_start": ("circumflex_accent", "the commands from their start"),
    "process_table.command_end": ("dollar_sign", "the end of the selected command"),
    "confirm_signal.terminate": ("T", "send SIGTERM"),
    "confirm_signal.kill": ("K", "send SIGKILL"),
    "confirm_signal.interrupt": ("I", "send SIGINT"),
    "confirm_signal.cancel": ("escape", "send nothing"),
    "process_detail.close": ("escape", "close the details"),
    "process_detail.close_q": ("q", "close the details"),
    "process_detail.signal": ("k", "signal the process"),
    "process_detail.environ": ("e", "the process's environment"),
    "environ.close": ("escape,q,e", "close the environment"),
    "health.ack": ("a", "acknowledge the selected finding"),
    "health.ack_all": ("A", "acknowledge every cleared finding"),
    "health.close": ("escape,q,h", "close the findings"),
    **{f"topology.gpu.{i}": (str(i), f"topology of GPU {i}") for i in range(10)},
    "topology.gpu.all": ("a", "topology of every GPU"),
    "topology.close": ("escape,q,t", "close the topology"),
    "probe.start": ("enter", "start the probe"),
    "probe.close": ("escape,q,p", "close the probe"),
    "probe.toggle": ("space", "check or uncheck a GPU or a test in the probe"),
    "probe.next": ("tab", "the probe's next list or button"),
    "help.close": ("escape,q,question_mark", "close the help"),
    "replay.play": ("space", "replay: play / pause"),
    "replay.back": ("left", "replay: back 10 s"),
    "replay.forward": ("right", "replay: forward 10 s"),
    "replay.back_long": ("shift+left,left_square_bracket", "replay: back 1 min"),
    "replay.forward_long": ("shift+right,right_square_bracket", "replay: forward 1 min"),
    "replay.start": ("home", "replay: to the start"),
    "replay.end": ("end", "replay: to the end"),
    "replay.slower": ("less_than_sign,comma", "replay: half the speed"),
    "replay.faster": ("greater_than_sign,full_stop", "replay: twice the speed"),
}
"""Binding id -> (default keys, what it does): what ``[keymap]`` may rebind. Keys are Textual's
names, comma-separated (``ctrl+q``, ``f5``, ``question_mark``)."""


__all__ = [
    "CONFIG_ENV",
    "DASHBOARD",
    "KEYMAP",
    "KEYS",
    "KEYS_BY_NAME",
    "READING",
    "TABLES",
    "WATCHING",
    "Key",
    "Kind",
]
