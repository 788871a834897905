"""The commented default config file that ``gputui config --init`` writes: every setting at its
default (so the file, unchanged, loads to the defaults), settings without a default and the
keymap as comments."""

from __future__ import annotations

import os
from pathlib import Path

from gputui.settings.keys import KEYMAP, KEYS, TABLES, Key
from gputui.settings.toml_text import toml_value

HEADER = """\
# gputui configuration (TOML). What is set here is overridden by the environment
# (GPUTUI_* variables), and both by the command line. `gputui config` shows the effective
# settings and where each comes from.
"""


def _entry(key: Key, name: str) -> list[str]:
    lines = [f"# {key.doc[0].upper()}{key.doc[1:]}."]
    where = [f"env {key.env}"] if key.env else []
    where += [key.option] if key.option else []
    if where:
        lines.append(f"# Also: {', '.join(where)}.")
    if key.default is None:
        assert key.example is not None
        lines.append(f"# {key.example}")
    else:
        lines.append(f"{name} = {toml_value(key.default)}")
    return lines


def default_file_text() -> str:
    out = [HEADER]
    for key in KEYS:
        if "." not in key.name:
            out += _entry(key, key.name)
    for table in TABLES:
        keys = [key for key in KEYS if key.name.partition(".")[0] == table]
        if keys:
            out += ["", f"[{table}]"]
            for key in keys:
                out += _entry(key, key.name.partition(".")[2])
    out += [
        "",
        "[keymap]",
        '# Binding id = keys (Textual\'s key names, comma-separated), e.g. quit = "ctrl+q";',
        "# an id with a dot in quotes. The ids and their default keys:",
    ]
    out += [
        f"# {toml_value(b) if '.' in b else b} = {toml_value(k)}" for b, (k, _) in KEYMAP.items()
    ]
    return "\n".join(out) + "\n"


def write_default_file(path: Path, *, force: bool = False) -> None:
    """Write :func:`default_file_text` to ``path`` (its directory made); FileExistsError when it
    exists and not ``force``; OSError when it cannot be written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = default_file_text()
    if force:
        temporary = path.with_name(f".{path.name}.new")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
        return
    with open(path, "x", encoding="utf-8") as file:  # never over an existing file
        file.write(text)


__all__ = ["default_file_text", "write_default_file"]
