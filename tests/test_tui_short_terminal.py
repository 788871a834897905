"""A short terminal: the title bar keeps the idle cost before the interval text, and a terminal
too small for the dashboard is told the size it needs first."""

from __future__ import annotations

import pytest
from tests.fakes.clock import FakeClock

from gputui.backends.sim import SimBackend
from gputui.engine.session import sampler_for
from gputui.settings.model import Settings
from gputui.tui.app import GpuTuiApp
from gputui.tui.widgets.too_small import too_small_text

pytestmark = pytest.mark.usefixtures("tui_env")


def screen_text(app: GpuTuiApp) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def test_the_idle_cost_shows_at_80_columns_before_the_interval() -> None:
    clock = FakeClock()
    backend = SimBackend("dgx-h100", seed=0)
    sampler = sampler_for(
        backend, backend.open(), clock=clock, settings=Settings(gpu_hour_price=2.5)
    )
    for _ in range(10):
        sampler.poll()
        clock.now += 1.0
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        title = app.dashboard.title_bar.plain_lines[0]
    assert "1/8 idle · 2.50/h" in title and "every" not in title


@pytest.mark.parametrize(
    ("size", "text"),
    [
        ((50, 12), "needs 60×15 · now 50×12 · too small for gputui"),
        ((70, 12), "needs 60×15 · now 70×12 · 3 more rows · too small for gputui"),
        ((30, 5), "needs 60×15 · now 30×5"),
        ((12, 3), "needs 60×15"),
    ],
)
def test_too_small_says_the_size_it_needs_first(size: tuple[int, int], text: str) -> None:
    assert too_small_text(*size, 60, 15) == text


async def test_the_too_small_screen_follows_the_terminal_size(sim_sampler) -> None:
    app = GpuTuiApp(sim_sampler("dgx-h100", polls=2), start_sampler=False)
    async with app.run_test(size=(50, 12)) as pilot:
        await pilot.pause()
        assert screen_text(app).strip().startswith("needs 60×15 · now 50×12")
        await pilot.resize_terminal(75, 12)
        await pilot.pause()
        assert (
            screen_text(app).strip()
            == "needs 60×15 · now 75×12 · 3 more rows · too small for gputui"
        )
