"""Values written as TOML (the default config file, messages): the few types settings have."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable


def toml_value(value: object) -> str:
    """``true``, ``1.0``, ``"text"``, ``["a", "b"]``; TypeError for anything else (TOML has no
    null: a setting without a value is left out of the file)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string
    if isinstance(value, (list, tuple, set, frozenset)):
        items: Iterable[object] = sorted(value) if isinstance(value, (set, frozenset)) else value
        return "[" + ", ".join(toml_value(v) for v in items) + "]"
    raise TypeError(f"no TOML for {value!r}")


__all__ = ["toml_value"]
