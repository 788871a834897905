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


def test_readme_recipes_ignore_only_rules_that_exist() -> None:
    from gputui.health.verdict import all_rules

    text = (ROOT / "README.md").read_text()
    ignored = {
        rule.strip()
        for value in re.findall(r"--ignore[ =]([\w,]+)", text)
        for rule in value.split(",")
    }
    ignored.discard("RULE")  # the placeholder in the options table
    assert ignored <= set(all_rules()), ignored - set(all_rules())


def test_readme_rule_table_matches_list_rules() -> None:
    from gputui.health.verdict import all_rules

    text = (ROOT / "README.md").read_text()
    rows = dict(re.findall(r"^\| `(\w+)` \| (.+?) \|$", text, re.M))
    assert {rule: rows.get(rule) for rule in all_rules()} == all_rules()
