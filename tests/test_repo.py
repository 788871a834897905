"""Promises the repository makes to its users: the README's commands are the ones CI runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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


def pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_test_command_installs_the_test_group_with_a_pip_that_can() -> None:
    command = readme_command("Run the tests")
    assert command.startswith("python3 -m venv .venv && ")
    assert command.endswith(" && .venv/bin/pytest")  # parallelism and timeouts: pyproject's
    upgrade, install = command.index('-U "pip>=25.1"'), command.index("--group test")
    assert upgrade < install  # `pip install --group` needs pip 25.1, newer than a venv's own


def test_torch_is_pinned_for_the_tests_only() -> None:
    config = pyproject()
    assert "torch==2.13.0" in config["dependency-groups"]["test"]
    assert config["project"]["optional-dependencies"]["probe"] == ["torch>=2.1"]
    assert "test" not in config["project"]["optional-dependencies"]


def test_the_suite_runs_in_parallel_and_no_test_runs_unbounded() -> None:
    options = pyproject()["tool"]["pytest"]["ini_options"]
    assert "-n auto" in options["addopts"]
    assert 0 < options["timeout"] <= 300
    group = " ".join(pyproject()["dependency-groups"]["test"])
    assert "pytest-xdist" in group and "pytest-timeout" in group
