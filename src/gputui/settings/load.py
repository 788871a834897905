"""Building :class:`Settings` from defaults < config file < environment < command line.

The file is ``$XDG_CONFIG_HOME/gputui/config.toml`` (``~/.config/gputui/config.toml``), or the
one ``GPUTUI_CONFIG`` or ``--config FILE`` names. What cannot be used never stops the program: a
file that is not TOML is left out as a whole, an unknown key or a value of the wrong type on its
own, each with one line naming the file, the line and the key (:class:`Problem`). The caller
decides where those lines go, and whether a bad environment variable is an error for its command.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from gputui.core.metric_names import DcgmNames
from gputui.core.model import Severity
from gputui.settings.keys import CONFIG_ENV, KEYMAP, KEYS, KEYS_BY_NAME, TABLES
from gputui.settings.model import (
    COMMAND_LINE,
    DEFAULT,
    AlertSettings,
    ExportSettings,
    HealthSettings,
    IncidentSettings,
    Problem,
    Settings,
)

CONFIG_NAME = "config.toml"


def default_config_path() -> Path:
    """``$XDG_CONFIG_HOME/gputui/config.toml``, else ``~/.config/gputui/config.toml``."""
    import platformdirs

    return Path(platformdirs.user_config_dir("gputui", appauthor=False)) / CONFIG_NAME


def config_path(option: str | None, environ: Mapping[str, str]) -> tuple[Path, str]:
    """The file to read and what named it: ``--config``, ``GPUTUI_CONFIG`` or the default."""
    if option:
        return Path(option).expanduser(), "--config"
    named = environ.get(CONFIG_ENV, "").strip()
    if named:
        return Path(named).expanduser(), CONFIG_ENV
    return default_config_path(), DEFAULT


def load_settings(
    *,
    command_line: Mapping[str, object] | None = None,
    environ: Mapping[str, str] | None = None,
    config: str | None = None,
    missing_ok: bool = False,
) -> Settings:
    """The settings for this run. ``command_line``: setting name -> value given as an option
    (None: not given); ``config``: ``--config FILE``; ``missing_ok``: a file named by
    ``--config`` or ``GPUTUI_CONFIG`` may be absent (``gputui config --init`` writes it)."""
    env = os.environ if environ is None else environ
    path, named_by = config_path(config, env)
    values: dict[str, object] = {key.name: key.default for key in KEYS}
    sources: dict[str, str] = {}
    keymap: dict[str, str] = {}
    found, file_problems = _read_file(path, named_by, missing_ok, values, sources, keymap)
    env_problems = _read_env(env, values, sources)
    for name, value in (command_line or {}).items():
        if value is not None:
            values[name], sources[name] = value, COMMAND_LINE
    problems = [_finish(p, sources) for p in file_problems]
    problems += [p for p in env_problems if sources.get(p.key or "") != COMMAND_LINE]
    return Settings(
        interval=cast(float, values["interval"]),
        gpu_hour_price=cast("float | None", values["gpu_hour_price"]),
        theme=cast(str, values["theme"]),
        record_dir=os.path.expanduser(cast(str, values["record_dir"])),
        readonly=cast(bool, values["readonly"]),
        health=HealthSettings(
            idle_memory_minutes=cast(float, values["health.idle_memory_minutes"]),
            idle_memory_min_bytes=cast(int, values["health.idle_memory_min_bytes"]),
            allocated_idle_minutes=cast(float, values["health.allocated_idle_minutes"]),
            straggler_pct=cast(float, values["health.straggler_pct"]),
            straggler_seconds=cast(float, values["health.straggler_seconds"]),
            xid_window_hours=cast(float, values["health.xid_window_hours"]),
            expect_gpus=cast("int | None", values["health.expect_gpus"]),
            ignore=frozenset(cast("frozenset[str]", values["health.ignore"])),
        ),
        export=ExportSettings(dcgm_names=cast("DcgmNames", values["export.dcgm_names"])),
        incidents=IncidentSettings(
            before=cast(float, values["incidents.before"]),
            after=cast(float, values["incidents.after"]),
            max_files=cast(int, values["incidents.max_files"]),
            max_bytes=cast(int, values["incidents.max_bytes"]),
        ),
        alerts=AlertSettings(
            notify=cast("str | None", values["alerts.notify"]),
            webhook=cast("str | None", values["alerts.webhook"]),
            min_severity=cast("Severity", values["alerts.min_severity"]),
            rate_limit_minutes=cast(float, values["alerts.rate_limit_minutes"]),
        ),
        keymap=tuple(sorted(keymap.items())),
        config_file=str(path),
        config_found=found,
        sources=tuple(sorted(sources.items())),
        problems=tuple(problems),
    )


# -- the file --------------------------------------------------------------------------------------


class _Pending(Problem):
    """A file problem whose ending ("using the default ...") waits for the other layers."""

    __slots__ = ()


def _read_file(
    path: Path,
    named_by: str,
    missing_ok: bool,
    values: dict[str, object],
    sources: dict[str, str],
    keymap: dict[str, str],
) -> tuple[bool, list[Problem]]:
    """Read ``path`` into ``values`` / ``keymap``; whether it was found, and its problems."""
    where = f"gputui: {path}"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if named_by == DEFAULT or missing_ok:
            return False, []
        return False, [
            Problem(f"{where} (from {named_by}) does not exist; using the defaults", "file")
        ]
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return True, [Problem(f"{where}: cannot be read ({reason}); using the defaults", "file")]
    # Imported here: most runs have no config file (tomllib is a few modules of start-up).
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return True, [Problem(_syntax_message(where, text, exc), "file")]
    problems: list[Problem] = []
    source = str(path)
    for name, value in _flatten(data, problems, where, text):
        if name.startswith("keymap."):
            binding = name.removeprefix("keymap.")
            keys = _keys(value)
            if binding not in KEYMAP:
                problems.append(_unknown(where, text, name, list(KEYMAP), "keymap."))
            elif keys is None:
                line = _at(where, text, name)
                why = 'expected keys as a string, e.g. "ctrl+q"'
                problems.append(Problem(f"{line}: {name}: {why}; ignored", "file", name))
            else:
                keymap[binding] = keys
                sources[name] = source
            continue
        key = KEYS_BY_NAME.get(name)
        if key is None:
            problems.append(_unknown(where, text, name, list(KEYS_BY_NAME)))
            continue
        try:
            values[name] = key.check(value)
        except ValueError as exc:
            line = _at(where, text, name)
            shown = _show(key.shown(value))
            problems.append(_Pending(f"{line}: {name} = {shown}: {exc}", "file", name))
        else:
            sources[name] = source
    return True, problems


def _flatten(
    data: dict[str, Any], problems: list[Problem], where: str, text: str, prefix: str = ""
) -> list[tuple[str, object]]:
    """(dotted name, value) for every setting in the file; the tables opened up."""
    out: list[tuple[str, object]] = []
    for name, value in data.items():
        dotted = f"{prefix}{name}"
        if not prefix and name in TABLES:
            if isinstance(value, dict):
                out += _flatten(value, problems, where, text, f"{dotted}.")
            else:
                line = _at(where, text, dotted)
                problems.append(Problem(f"{line}: {dotted} must be a table ([{dotted}])", "file"))
        elif prefix.startswith("keymap.") and isinstance(value, dict):
            out += _flatten(value, problems, where, text, f"{dotted}.")  # gpu.3 = "f3"
        else:
            out.append((dotted, value))
    return out


def _keys(value: object) -> str | None:
    """A keymap entry's keys: ``"ctrl+q"``, ``"f1,ctrl+h"`` or a list of them."""
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, list) and value and all(isinstance(v, str) and v.strip() for v in value):
        return ",".join(v.strip() for v in value)
    return None


def _unknown(where: str, text: str, name: str, known: list[str], table: str = "") -> Problem:
    import difflib  # only for a mistyped key

    close = difflib.get_close_matches(name.removeprefix(table), known, n=1)
    hint = f" (did you mean {table}{close[0]}?)" if close else ""
    return Problem(f"{_at(where, text, name)}: unknown key {name}{hint}; ignored", "file", name)


def _finish(problem: Problem, sources: Mapping[str, str]) -> Problem:
    if not isinstance(problem, _Pending):
        return problem
    assert problem.key is not None
    if problem.key in sources:  # the environment or the command line gives it
        return Problem(f"{problem.message}; ignored", "file", problem.key)
    default = _show(KEYS_BY_NAME[problem.key].default)
    return Problem(f"{problem.message}; using the default ({default})", "file", problem.key)


def _syntax_message(where: str, text: str, exc: Exception) -> str:
    """``gputui: FILE, line 3: not TOML (Expected '=' ...): `price 2`; ...``."""
    reason = str(exc)
    number = getattr(exc, "lineno", None)
    match = re.search(r"\s*\(at line (\d+), column \d+\)", reason)
    if match:
        number = number or int(match.group(1))
        reason = reason[: match.start()] + reason[match.end() :]
    if not number:
        return f"{where}: not TOML ({reason}); the whole file is ignored, using the defaults"
    lines = text.splitlines()
    shown = lines[number - 1].strip() if 0 < number <= len(lines) else ""
    quoted = f": `{shown}`" if shown else ""
    return (
        f"{where}, line {number}: not TOML ({reason}){quoted}; the whole file is ignored, "
        "using the defaults"
    )


_TABLE = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(?:#.*)?$")
_PART = r"""(?:[A-Za-z0-9_\-]+|"[^"]*"|'[^']*')"""
_ASSIGN = re.compile(rf"^\s*({_PART}(?:\s*\.\s*{_PART})*)\s*=")


def find_line(text: str, name: str) -> int | None:
    """The line (from 1) that sets the dotted ``name``, found by reading the text: tables and
    dotted or quoted keys; None when it cannot be told (an inline table)."""
    table = ""
    for number, line in enumerate(text.splitlines(), 1):
        match = _TABLE.match(line)
        if match:
            table = _dotted(match.group(1))
            continue
        match = _ASSIGN.match(line)
        if match:
            key = _dotted(match.group(1))
            if (f"{table}.{key}" if table else key) == name:
                return number
    return None


def _dotted(text: str) -> str:
    return ".".join(part.strip().strip("\"'") for part in text.split("."))


def _at(where: str, text: str, name: str) -> str:
    number = find_line(text, name)
    return f"{where}, line {number}" if number else where


def _show(value: object) -> str:
    """A value as TOML writes it, for messages."""
    from gputui.settings.toml_text import toml_value

    if value is None:
        return "none"
    try:
        return toml_value(value)
    except TypeError:
        return repr(value)


# -- the environment ----------------------------------------------------------------------------


def _read_env(
    env: Mapping[str, str], values: dict[str, object], sources: dict[str, str]
) -> list[Problem]:
    problems: list[Problem] = []
    for key in KEYS:
        text = env.get(key.env, "").strip() if key.env else ""
        if not key.env or not text:
            continue  # unset or empty: not given
        try:
            values[key.name] = key.parse(text)
        except ValueError as exc:
            problems.append(Problem(f"{key.env}: {exc}", "env", key.name))
        else:
            sources[key.name] = f"env {key.env}"
    return problems


__all__ = ["CONFIG_NAME", "config_path", "default_config_path", "find_line", "load_settings"]
