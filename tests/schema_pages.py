"""Field paths of a JSON output, as emitted and as a schema page in docs/ documents them.

A path is dotted: ``pairs[].code`` is the ``code`` of every item of the list ``pairs``,
``gpus.*.label`` the ``label`` of every value of the object ``gpus`` (keyed by GPU, not by name).
Every key is a path, the objects' as well as the leaves'.

A schema page documents its fields in tables ``| field | type | meaning |`` under ``##`` headings.
The first table is the top-level object; a heading's first word names the object its table
describes (``## Pair``), and a field whose type names it (``Pair``, ``Pair or null``,
``list[Pair]``, ``dict[str, Pair]``) holds that object. One row may name several fields
(`` `a`, `b` ``). A field of type ``list`` whose meaning names `` `{a, b}` `` holds objects with
those fields (the first such braces in the meaning).
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[1] / "docs"

_HEADING = re.compile(r"^#{2,3}\s+(.*)$")
_ROW = re.compile(r"^\|(.*)\|\s*$")
_NAME = re.compile(r"`([^`]+)`")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LISTED = re.compile(r"`\{([^}`]*)\}`")


@dataclasses.dataclass(frozen=True)
class Row:
    names: tuple[str, ...]
    type: str
    meaning: str


def _sections(text: str) -> dict[str, list[Row]]:
    """Heading's first word -> the rows of the field table under it, in page order."""
    sections: dict[str, list[Row]] = {}
    current: str | None = None
    in_table = False
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            words = _WORD.findall(heading.group(1).replace("`", ""))
            current = words[0] if words else None
            in_table = False
            continue
        row = _ROW.match(line)
        if not row:
            in_table = False
            continue
        cells = [c.strip() for c in row.group(1).split("|")]
        if cells[:2] == ["field", "type"]:
            in_table = current is not None
            if in_table:
                assert current is not None
                sections.setdefault(current, [])
            continue
        if not in_table or set(cells[0]) <= set("-: "):
            continue
        assert current is not None
        names = tuple(_NAME.findall(cells[0]))
        assert names, f"a row of {current} names no field: {line}"
        sections[current].append(Row(names, cells[1], cells[2] if len(cells) > 2 else ""))
    return sections


def documented(page: str) -> tuple[set[str], set[str]]:
    """The field paths the page documents, and those of them that are maps (``dict[str, X]``)."""
    sections = _sections((DOCS / page).read_text(encoding="utf-8"))
    assert sections, f"{page} has no field table"
    root = next(iter(sections))
    paths: set[str] = set()
    maps: set[str] = set()

    def walk(section: str, prefix: str, seen: tuple[str, ...]) -> None:
        assert section not in seen, f"{page}: {section} contains itself"
        for row in sections[section]:
            for name in row.names:
                path = f"{prefix}{name}"
                paths.add(path)
                inner = [w for w in _WORD.findall(row.type) if w in sections and w != root]
                listed = _LISTED.search(row.meaning)
                if not inner and row.type == "list" and listed:  # `{a, b}`: the items' fields
                    paths.update(f"{path}[].{item.strip()}" for item in listed.group(1).split(","))
                if not inner:
                    continue
                (child,) = inner
                if f"list[{child}]" in row.type:
                    walk(child, f"{path}[].", (*seen, section))
                elif f"dict[str, {child}]" in row.type:
                    maps.add(path)
                    walk(child, f"{path}.*.", (*seen, section))
                else:
                    walk(child, f"{path}.", (*seen, section))

    walk(root, "", ())
    unused = (
        set(sections)
        - {root}
        - {w for rows in sections.values() for r in rows for w in _WORD.findall(r.type)}
    )
    assert not unused, f"{page}: no field holds {sorted(unused)}"
    return paths, maps


def emitted(value: Any, maps: Collection[str] = (), prefix: str = "") -> set[str]:
    """Every field path in ``value`` (plain JSON values); the objects at ``maps`` are keyed by
    data (their keys become ``*``)."""
    paths: set[str] = set()
    if isinstance(value, dict):
        keyed = prefix in maps
        for key, item in value.items():
            path = f"{prefix}.*" if keyed else (f"{prefix}.{key}" if prefix else key)
            if not keyed:
                paths.add(path)
            paths |= emitted(item, maps, path)
    elif isinstance(value, list):
        for item in value:
            paths |= emitted(item, maps, f"{prefix}[]")
    return paths


def declared(tp: type, prefix: str = "") -> set[str]:
    """Every field path an output dataclass can write, from its type hints (a list's items,
    a map's values and an optional value's object included)."""
    paths: set[str] = set()
    hints = typing.get_type_hints(tp)
    for f in dataclasses.fields(tp):
        path = f"{prefix}{f.name}"
        paths.add(path)
        for inner, suffix in _objects(hints[f.name]):
            paths |= declared(inner, f"{path}{suffix}.")
    return paths


def _objects(hint: Any, suffix: str = "") -> Iterator[tuple[type, str]]:
    """The dataclasses a field of type ``hint`` can hold, with the path step to them."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        yield hint, suffix
    elif origin in (typing.Union, types.UnionType):
        for arg in args:
            yield from _objects(arg, suffix)
    elif origin in (list, tuple, frozenset):
        for arg in args:
            if arg is not Ellipsis:
                yield from _objects(arg, suffix + "[]")
    elif origin is dict:
        yield from _objects(args[1], suffix + ".*")


def differences(documented_paths: set[str], written: set[str]) -> dict[str, list[str]]:
    """What the page leaves out and what it documents in vain ({} when they agree)."""
    out = {
        "written, not documented": sorted(written - documented_paths),
        "documented, not written": sorted(documented_paths - written),
    }
    return {k: v for k, v in out.items() if v}
