"""``gputui config``: the effective settings and where each came from (the default, the config
file, an environment variable, the command line); ``--json``; ``--init`` writes a commented
default config file. A secret setting (the webhook's URL) shows only as ``scheme://host/…``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from gputui.commands.common import Common
from gputui.commands.output import emit, error
from gputui.core.exitcodes import EXIT_OK, EXIT_USAGE
from gputui.core.files import os_reason
from gputui.core.frozen import frozen
from gputui.settings.keys import KEYS
from gputui.settings.model import DEFAULT, Settings
from gputui.settings.toml_text import toml_value


@frozen
class ConfigOptions:
    settings: Settings
    as_json: bool = False
    init: bool = False
    force: bool = False


def options(args: argparse.Namespace, common: Common) -> ConfigOptions:
    return ConfigOptions(common.settings, as_json=args.json, init=args.init, force=args.force)


def run(options: ConfigOptions) -> int:
    settings = options.settings
    if options.init:
        return _init(settings, force=options.force)
    emit(json.dumps(as_dict(settings), indent=2) if options.as_json else render(settings))
    return EXIT_OK


def as_dict(settings: Settings) -> dict[str, Any]:
    def plain(value: object) -> object:
        return sorted(value) if isinstance(value, frozenset) else value

    entries = {
        key.name: {
            "value": plain(key.shown(settings.value(key.name))),
            "source": settings.source(key.name),
        }
        for key in KEYS
    }
    keymap_source = next(
        (source for name, source in settings.sources if name.startswith("keymap.")), DEFAULT
    )
    entries["keymap"] = {"value": settings.keymap_dict, "source": keymap_source}
    return {
        "config_file": settings.config_file,
        "config_file_found": settings.config_found,
        "settings": entries,
    }


def render(settings: Settings) -> str:
    found = "" if settings.config_found else " (not found; `gputui config --init` writes one)"
    rows = [
        (key.name, _shown(key.shown(settings.value(key.name))), settings.source(key.name))
        for key in KEYS
    ]
    rows += [
        (f"keymap.{binding}", toml_value(keys), settings.source(f"keymap.{binding}"))
        for binding, keys in settings.keymap
    ]
    if not settings.keymap:
        rows.append(("keymap", "(the default keys)", DEFAULT))
    width = max(len(name) for name, _, _ in rows) + 2
    value_width = max(len(value) for _, value, _ in rows) + 2
    lines = [f"Config file: {settings.config_file}{found}", ""]
    lines.append(f"{'setting':<{width}}{'value':<{value_width}}from")
    lines += [f"{name:<{width}}{value:<{value_width}}{source}" for name, value, source in rows]
    return "\n".join(lines)


def _shown(value: object) -> str:
    return "none" if value is None else toml_value(value)


def _init(settings: Settings, *, force: bool) -> int:
    from gputui.settings.init_file import write_default_file

    assert settings.config_file is not None
    path = Path(settings.config_file)
    try:
        write_default_file(path, force=force)
    except FileExistsError:
        error(f"gputui config: {path} exists (use --force to overwrite it)")
        return EXIT_USAGE
    except OSError as exc:
        error(f"gputui config: cannot write {path}: {os_reason(exc)}")
        return EXIT_USAGE
    emit(str(path))
    return EXIT_OK


__all__ = ["ConfigOptions", "as_dict", "options", "render", "run"]
