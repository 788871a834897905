"""Promises the repository makes to its users: the README's commands are the ones CI runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_command(heading: str) -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split(f"## {heading}", 1)[1]
    match = re.search(r"```sh\n(.+?)\n```", section, re.S)
    assert match, f"no command block under '## {heading}'"
    return match.group(1).strip()


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert readme_command("Run the tests") in ci


def test_demo_command_installs_and_starts_the_demo() -> None:
    command = readme_command("Try it")
    assert "pip install" in command and command.endswith("gputui --demo")
