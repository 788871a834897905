"""The app's one notice (gputui.tui.notice): one small toast at a time, the newest replacing the
one shown, for a few seconds; never over the title bar; none for what the title bar shows."""

from __future__ import annotations

import pytest
from textual.widgets._toast import Toast, ToastHolder

from gputui.core.model import Snapshot
from gputui.engine.sampler import INTERVAL_PRESETS, Sampler
from gputui.tui.app import GpuTuiApp
from gputui.tui.messages import SnapshotReady
from gputui.tui.notice import NOTICE_TIMEOUT_S

pytestmark = pytest.mark.usefixtures("tui_env")


async def show(app: GpuTuiApp, pilot, sampler: Sampler) -> Snapshot:
    snapshot = sampler.poll()
    sampler.clock.now += 1.0  # type: ignore[attr-defined]
    app.post_message(SnapshotReady(snapshot))
    await pilot.pause()
    return snapshot


def title(app: GpuTuiApp) -> str:
    return app.dashboard.title_bar.plain_lines[0]


def messages(app: GpuTuiApp) -> list[str]:
    return [n.message for n in app._notifications]


async def test_interval_keys_give_no_notice_the_title_bar_shows_it(sim_sampler) -> None:
    """Ten presses of - made ten toasts over half the screen; the title bar says it."""
    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await show(app, pilot, sampler)
        await pilot.press(*["minus"] * 10)
        assert sampler.interval == INTERVAL_PRESETS[0]
        assert "every 250ms" in title(app)
        await pilot.press("plus")
        assert "every 500ms" in title(app)
        assert messages(app) == []
        assert not app.screen.query(Toast)


async def test_notices_replace_each_other(sim_sampler) -> None:
    """One toast at a time, whichever screen is in front; no empty holders pile up."""
    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await show(app, pilot, sampler)
        await pilot.press("9")  # no such GPU
        app.notify("first")
        app.notify("second", title="two", severity="warning")
        await pilot.pause()
        await pilot.press("9")
        await pilot.pause()
        assert messages(app) == ["there is no GPU 9"]
        assert len(app.screen.query(Toast)) == 1
        assert len(app.screen.query(ToastHolder)) == 1
        await pilot.press("h")
        app.notify("on the findings screen")
        await pilot.pause()
        await pilot.pause()
        assert messages(app) == ["on the findings screen"]
        assert len(app.screen.query(Toast)) == 1
        await pilot.press("escape")
        await pilot.pause()
        assert len(app.screen.query(Toast)) == 1
        assert app.screen.query_one(Toast)._notification.message == "on the findings screen"


async def test_a_notice_is_short_and_plain(sim_sampler) -> None:
    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        app.notify("a [keymap] key", severity="error", timeout=30)
        await pilot.pause()
        (notice,) = app._notifications
        assert notice.timeout == NOTICE_TIMEOUT_S["error"] <= 8
        assert not notice.markup  # brackets are text
        app.notify("done", timeout=1)
        await pilot.pause()
        assert [n.timeout for n in app._notifications] == [1]
        app.notify("done")
        await pilot.pause()
        assert [n.timeout for n in app._notifications] == [NOTICE_TIMEOUT_S["information"]]


@pytest.mark.parametrize("size", [(120, 40), (60, 15)])
async def test_a_long_notice_stays_off_the_title_bar(sim_sampler, size) -> None:
    """Bottom right, above the footer, a few lines at most, even in the smallest terminal."""
    sampler = sim_sampler("faulty", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=size, notifications=True) as pilot:
        await show(app, pilot, sampler)
        before = title(app)
        app.notify("why " * 200, title="a long one", severity="warning")
        await pilot.pause()
        await pilot.pause()
        toast = app.screen.query_one(Toast)
        region = toast.region
        assert region.height <= 6
        assert region.y >= 1 and region.bottom <= size[1] - 1  # under the title, over the footer
        top = app.screen._compositor.render_strips()[0].text
        assert top.rstrip() == before.rstrip()
