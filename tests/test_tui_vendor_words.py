"""Each vendor's words for what it measures: the process table's utilization column says what the
driver fills into it (NVML's SM utilization, AMD's GFX engine busy time, a neutral name on a
mixed node), and AMD's GPU link is spelled XGMI."""

from __future__ import annotations

import dataclasses

import pytest
from textual.app import App, ComposeResult

from gputui.core.model import Snapshot
from gputui.core.vendor_terms import busy_title, clock_label, link_name
from gputui.tui.widgets.line_widget import MeterPalette
from gputui.tui.widgets.process_table import ProcessTable

pytestmark = pytest.mark.usefixtures("tui_env")


def test_vendor_words() -> None:
    assert busy_title(["nvidia", "nvidia"]) == "SM%"
    assert busy_title(["amd"]) == "GFX%"
    assert busy_title(["amd", "nvidia"]) == "GPU%"
    assert busy_title([]) == "SM%"
    assert (link_name("amd"), link_name("amd", short=True)) == ("XGMI", "XGMI")
    assert (link_name("nvidia"), link_name("nvidia", short=True)) == ("NVLink", "NVL")
    assert (clock_label("amd"), clock_label("nvidia")) == ("GFX", "SM")


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield MeterPalette()
        yield ProcessTable(id="table")


async def header(snapshot: Snapshot, sort: str | None = None) -> str:
    app = TableApp()
    async with app.run_test(size=(80, 10)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(snapshot)
        if sort is not None:
            table.sort_by(sort)
        await pilot.pause()
        return table.plain_lines[0]


def mixed(snapshot: Snapshot) -> Snapshot:
    """The node with its first GPU made an NVIDIA one."""
    gpus = (dataclasses.replace(snapshot.node.gpus[0], vendor="nvidia"), *snapshot.node.gpus[1:])
    return dataclasses.replace(snapshot, node=dataclasses.replace(snapshot.node, gpus=gpus))


async def test_the_process_table_says_what_each_vendor_measures(sim_sampler) -> None:
    amd = sim_sampler("mi300x", polls=20).latest
    nvidia = sim_sampler("dgx-h100", polls=2).latest
    assert amd.processes and all(g.vendor == "amd" for g in amd.node.gpus)
    line = await header(amd)
    assert "GFX%" in line.split() and "SM%" not in line
    assert "SM%" in (await header(nvidia)).split()
    assert "GPU%" in (await header(mixed(amd))).split()
    # Sorted by it, the arrow still fits the column: GFX%▼, not a cut "GFX% ".
    assert "GFX%▼" in (await header(amd, sort="sm")).split()
