"""The topology screen (key t): matrix and legend, per-GPU PCIe/P2P/link summary, the links table
with live rates and a per-link history, GPU selection, and the single-GPU / no-link / no-topology
cases. Driven by the simulated backend on a fake clock."""

from __future__ import annotations

import dataclasses

import pytest

from gputui.core.model import Snapshot
from gputui.engine.sampler import Sampler
from gputui.tui.app import GpuTuiApp
from gputui.tui.commands import gputui_commands
from gputui.tui.messages import SnapshotReady
from gputui.tui.screens.help import HelpScreen, key_rows
from gputui.tui.screens.topology import (
    NO_LINKS_TEXT,
    NO_TOPOLOGY_TEXT,
    SINGLE_GPU_TEXT,
    LinesView,
    TopologyScreen,
    cell_class,
)
from gputui.tui.widgets.line_widget import BAD, DIM, FAST, LABEL, OK, SLOW, WARN

pytestmark = pytest.mark.usefixtures("tui_env")

SIZE = (120, 40)


def advance(sampler: Sampler, seconds: float = 1.0) -> None:
    sampler.clock.now += seconds  # type: ignore[attr-defined]


async def tick(app: GpuTuiApp, pilot, sampler: Sampler) -> Snapshot:
    """One more reading, posted the way the sampler thread posts it."""
    advance(sampler)
    snapshot = sampler.poll()
    app.post_message(SnapshotReady(snapshot))
    await pilot.pause()
    return snapshot


async def open_topology(app: GpuTuiApp, pilot) -> TopologyScreen:
    await pilot.pause()
    await pilot.press("t")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, TopologyScreen)
    return screen


def lines(view: LinesView) -> list[str]:
    return [line.rstrip() for line in view.plain_lines]


def text(view: LinesView) -> str:
    return "\n".join(lines(view))


def pieces(view: LinesView) -> list[tuple[str, str]]:
    return [piece for line in view._pieces for piece in line]


def test_cell_colours_follow_speed() -> None:
    assert cell_class("NV18", "nvlink") == FAST
    assert cell_class("XGMI", "xgmi") == FAST
    assert cell_class("PIX", "pcie") == OK and cell_class("PXB", "pcie") == OK
    assert cell_class("PHB", "pcie") == LABEL and cell_class("NODE", "pcie") == LABEL
    assert cell_class("SYS", "pcie") == SLOW
    assert cell_class("X", "self") == DIM and cell_class("?", "unknown") == DIM


async def test_t_opens_nv18_matrix_and_escape_closes(sim_sampler) -> None:
    sampler = sim_sampler("dgx-h100", polls=5)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_topology(app, pilot)
        matrix = screen.matrix_view.plain_lines
        assert matrix[0].split()[:8] == [f"GPU{i}" for i in range(8)]
        assert "CPU Affinity" in matrix[0] and "NUMA" in matrix[0]
        row0 = matrix[1].split()
        assert row0[:9] == ["GPU0", "X"] + ["NV18"] * 7
        assert row0[-2:] == ["0-55,112-167", "0"]
        assert ("NV18", FAST) in pieces(screen.matrix_view)
        assert "NV# = " in text(screen.matrix_view)  # the legend, codes present only
        assert "SYS =" not in text(screen.matrix_view)
        gpus = text(screen.gpu_view)
        assert "18/18 up" in gpus and "rw 1-7" in gpus and "5×16 / 5×16" in gpus
        links = screen.links_view.plain_lines
        assert len(links) == 2 + 8 * 18  # title, header, every link of every GPU
        assert "NVSwitch 0000:05:00.0" in links[2] and "NVLink4 26.6GB/s" in links[2]
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.dashboard
        # t toggles, and q closes the screen instead of quitting the app
        await pilot.press("t")
        await pilot.pause()
        assert isinstance(app.screen, TopologyScreen)
        await pilot.press("t")
        await pilot.pause()
        assert app.screen is app.dashboard
        await pilot.press("t", "q")
        await pilot.pause()
        assert app.screen is app.dashboard and app.is_running


async def test_a100_pcie_shows_sys_and_no_link_table(sim_sampler) -> None:
    sampler = sim_sampler("a100-pcie", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_topology(app, pilot)
        assert screen.matrix_view.plain_lines[1].split()[:3] == ["GPU0", "X", "SYS"]
        assert ("SYS", SLOW) in pieces(screen.matrix_view)
        assert "SYS = " in text(screen.matrix_view)
        assert lines(screen.links_view) == [NO_LINKS_TEXT]
        gpus = text(screen.gpu_view)
        assert "none 1" in gpus  # no P2P across the sockets
        assert "Links" not in gpus


async def test_single_gpu_says_so(sim_sampler) -> None:
    sampler = sim_sampler("rtx4090", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_topology(app, pilot)
        matrix = lines(screen.matrix_view)
        assert matrix[0] == SINGLE_GPU_TEXT
        assert "CPU affinity 0-31" in matrix[1] and "NUMA node 0" in matrix[1]
        assert "4×16 / 4×16" in text(screen.gpu_view)
        assert not screen.links_view.display


async def test_no_topology_says_so(sim_sampler) -> None:
    sampler = sim_sampler("dgx-h100", polls=2)
    app = GpuTuiApp(sampler, start_sampler=False)
    app.dashboard.node = dataclasses.replace(app.dashboard.node, topology=None)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_topology(app, pilot)
        assert lines(screen.matrix_view) == [NO_TOPOLOGY_TEXT]
        assert "5×16" in text(screen.gpu_view)  # PCIe still comes from the readings
        assert not screen.links_view.display


async def test_faulty_down_link_and_degraded_pcie_are_highlighted(sim_sampler) -> None:
    sampler = sim_sampler("faulty", polls=30)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_topology(app, pilot)
        assert ("DOWN", BAD) in pieces(screen.links_view)
        down = [line for line in screen.links_view.plain_lines if "DOWN" in line]
        assert len(down) == 1 and down[0].split()[:3] == ["1", "7", "DOWN"]
        assert down[0].split()[-3:] == ["17", "3", "9"]
        assert ("1 DOWN", BAD) in [(t.strip(), c) for t, c in pieces(screen.gpu_view)]
        assert (" below max!", WARN) in pieces(screen.gpu_view)  # GPU 6 at gen3 x8
        gpu3 = screen.gpu_view.plain_lines[4]
        assert gpu3.startswith("3") and "lost" in gpu3


async def test_live_update_changes_rates_in_place(sim_sampler) -> None:
    sampler = sim_sampler("dgx-h100", polls=5)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_topology(app, pilot)
        matrix_before = screen.matrix_view.plain_lines
        before = screen.links_view.plain_lines
        history_before = len(screen.link_history[(0, 0)])
        spans_before = screen.links_view.spans_refreshed
        for _ in range(6):  # through an all-reduce burst
            await tick(app, pilot, sampler)
        after = screen.links_view.plain_lines
        assert after != before
        assert after[:2] == before[:2]  # titles unchanged
        assert len(screen.link_history[(0, 0)]) == history_before + 6
        assert screen.links_view.spans_refreshed > spans_before  # partial repaints
        assert screen.matrix_view.plain_lines == matrix_before  # static
        # the same snapshot twice records once
        screen.update_snapshot(app.latest)
        assert len(screen.link_history[(0, 0)]) == history_before + 6


async def test_gpu_selection_filters_links(sim_sampler) -> None:
    sampler = sim_sampler("mi300x", polls=20)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_topology(app, pilot)
        assert len(screen.links_view.plain_lines) == 2 + 8 * 7
        assert not screen.peer_view.display
        await pilot.press("3")
        await pilot.pause()
        assert screen.selected == 3
        rows = screen.links_view.plain_lines[2:]
        assert len(rows) == 7 and all(r.split()[0] == "3" for r in rows)
        assert "GPU 3" in screen.links_view.plain_lines[0]
        peers = text(screen.peer_view)
        assert "GPU 3 to its peers" in peers and "1 hop, weight 15" in peers
        assert "GPU3" not in peers.split("\n", 1)[1]  # itself is not a peer
        await pilot.press("a")
        await pilot.pause()
        assert screen.selected is None
        assert len(screen.links_view.plain_lines) == 2 + 8 * 7
        await pilot.press("9")  # no such GPU: selection unchanged
        await pilot.pause()
        assert screen.selected is None


async def test_help_footer_and_palette_list_topology(sim_sampler) -> None:
    sampler = sim_sampler("dgx-h100", polls=1)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=SIZE) as pilot:
        assert ("t", "Topology") in key_rows(app.dashboard)
        commands = {t: cb for t, _, cb in gputui_commands(app)}
        commands["Show topology"]()
        await pilot.pause()
        assert isinstance(app.screen, TopologyScreen)
        await pilot.press("escape", "question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert "Topology" in app.screen.help_text.plain
