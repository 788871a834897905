"""Each ``--json`` output's schema page in docs/ documents exactly the fields the command writes:
the field paths of representative runs (simulated nodes, a faked worker, recorded Prometheus
answers) and those the output's dataclasses declare are both compared with the page's tables, so
a field added to an output but not to its page, or documented but never written, fails here."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.schema_pages import declared, differences, documented, emitted

from gputui import cli
from gputui.topology_output import TopologyOutput


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    cli.main(list(argv))
    out = capsys.readouterr().out
    return json.loads(out)


def assert_page_matches(page: str, runs: list[Any], output: type) -> None:
    paths, maps = documented(page)
    written: set[str] = set()
    for data in runs:
        written |= emitted(data, maps)
    assert differences(paths, written) == {}, f"{page} and what the runs wrote"
    assert differences(paths, declared(output)) == {}, f"{page} and {output.__name__}"


def test_the_topo_page(capsys: pytest.CaptureFixture[str]) -> None:
    runs = [
        run_cli(capsys, "topo", "--json", "--backend", f"sim:{scenario}")
        for scenario in ("dgx-h100", "mi300x", "a100-pcie")
    ]
    assert_page_matches("topo-schema.md", runs, TopologyOutput)
