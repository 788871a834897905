"""``@frozen`` (gputui.core.frozen): records equal and hashable by their fields, slotted, and
frozen where it is checked, by mypy."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import gputui
from gputui.core.frozen import frozen


@frozen
class Point:
    x: int
    y: int = 0
    tags: tuple[str, ...] = dataclasses.field(default=())


@frozen(slots=False)
class Loose:
    name: str


def test_a_record_is_equal_and_hashable_by_its_fields() -> None:
    assert Point(1, 2) == Point(1, 2) and Point(1, 2) != Point(1, 3)
    assert hash(Point(1, 2)) == hash(Point(1, 2))
    assert len({Point(1), Point(1), Point(2)}) == 2
    assert dataclasses.replace(Point(1, 2), y=5) == Point(1, 5)
    assert [f.name for f in dataclasses.fields(Point)] == ["x", "y", "tags"]


@frozen
class Reading:
    value: int
    source: str = dataclasses.field(default="", compare=False)
    cache: dict[str, int] = dataclasses.field(default_factory=dict, hash=False, repr=False)


@frozen
class Named:
    name: str

    def __repr__(self) -> str:
        return f"<{self.name}>"


def test_field_options_and_a_class_own_methods_are_kept() -> None:
    assert Reading(1, "a") == Reading(1, "b")  # compare=False: not compared
    assert hash(Reading(1, cache={"x": 1})) == hash(Reading(1))  # hash=False: not hashed
    assert Reading(1, cache={"x": 1}) != Reading(1)  # ... yet compared
    assert repr(Reading(1, "a")) == "Reading(value=1, source='a')"  # repr=False: not shown
    assert repr(Point(1, tags=("a",))) == "Point(x=1, y=0, tags=('a',))"
    assert repr(Named("n")) == "<n>"
    assert Point(1) != (1, 0, ()) and Point(1).__eq__(Named("n")) is NotImplemented


def test_a_record_has_slots_unless_asked_not_to() -> None:
    assert not hasattr(Point(1), "__dict__")
    assert hasattr(Loose("a"), "__dict__")


def test_mypy_refuses_a_changed_field(tmp_path: Path) -> None:
    program = textwrap.dedent(
        """
        import dataclasses
        from gputui.core.frozen import frozen

        @frozen
        class Point:
            x: int
            tags: tuple[str, ...] = dataclasses.field(default=())

        p = Point(1)
        p.x = 2
        q = dataclasses.replace(p, x=3)
        """
    )
    script = tmp_path / "uses_a_record.py"
    script.write_text(program, encoding="utf-8")
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\n", encoding="utf-8")
    source_root = Path(gputui.__file__).resolve().parents[1]
    options = ["--strict", "--config-file", str(config), "--cache-dir", str(tmp_path / "cache")]
    done = subprocess.run(
        [sys.executable, "-m", "mypy", *options, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "MYPYPATH": str(source_root)},
    )
    assert done.returncode == 1, done.stdout + done.stderr
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and '"x"' in errors[0] and "read-only" in errors[0], done.stdout
