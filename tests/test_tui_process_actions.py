"""What the dashboard does with its processes: the filter's line and footer, tags and one signal to
every tagged process, a signal from a process's details, the row of a signalled process, the
environment view, and a table as tall as its processes need in a big terminal."""

from __future__ import annotations

import dataclasses
import signal

import pytest
from tests.fakes.clock import FakeClock

from gputui.host.environ import Environ
from gputui.tui import permissions
from gputui.tui.app import GpuTuiApp
from gputui.tui.messages import SnapshotReady
from gputui.tui.screens import confirm_signal
from gputui.tui.screens.confirm_signal import ConfirmSignalScreen
from gputui.tui.screens.dashboard import DashboardScreen, choose_layout, table_lines
from gputui.tui.screens.environ import EnvironScreen
from gputui.tui.screens.help import key_rows
from gputui.tui.screens.process_detail import ProcessDetailScreen

pytestmark = pytest.mark.usefixtures("tui_env")


def screen_text(app: GpuTuiApp) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def notes(app: GpuTuiApp) -> list[str]:
    return [n.message for n in app._notifications]


@pytest.fixture
def allowed(monkeypatch) -> None:
    """The user's rights allow every signal."""
    monkeypatch.setattr(permissions, "can_signal", lambda process: (True, ""))


@pytest.fixture
def dialog_clock(monkeypatch) -> FakeClock:
    """The dialog's clock: it stands still unless a test moves it on."""
    clock = FakeClock(1000.0)
    monkeypatch.setattr(confirm_signal, "monotonic", clock)
    return clock


def recording_app(sim_sampler, monkeypatch, sent: list, **kwargs) -> GpuTuiApp:
    """The dashboard on the simulated node; what would be sent is recorded in ``sent``."""
    sampler = sim_sampler("dgx-h100", polls=3)
    monkeypatch.setattr(sampler, "signal_process", lambda pid, sig: sent.append((pid, sig)))
    return GpuTuiApp(sampler, start_sampler=False, **kwargs)


async def settle(app: GpuTuiApp, pilot) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()


# -- the filter -----------------------------------------------------------------------------------


async def test_the_filter_has_a_label_a_footer_of_its_own_and_the_text_as_typed(
    sim_sampler,
) -> None:
    app = GpuTuiApp(sim_sampler("dgx-h100", polls=3), start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        dashboard = app.dashboard
        assert not dashboard.filter_footer.display and dashboard.key_footer.display
        await pilot.press("slash", *"rank='3")
        await pilot.pause()
        text = screen_text(app)
        assert "Filter: rank='3" in text  # the label, and the text exactly as typed
        assert "enter keep it and go back to the table" in text and "esc clear it" in text
        assert dashboard.filter_footer.display and not dashboard.key_footer.display
        assert "q Quit" not in text  # q types a q here: the keys' footer is gone
        await pilot.press("backspace", "backspace", "3")  # rank=3: the third rank
        await pilot.pause()
        table = dashboard.process_table
        assert [p.pid for p in table.visible_processes] == [2218068]
        await pilot.press("enter")
        await pilot.pause()
        assert app.focused is table
        assert dashboard.key_footer.display and not dashboard.filter_footer.display
        assert "Filter: rank=3" in screen_text(app)  # still in force, and said so
        await pilot.press("escape")
        await pilot.pause()
        assert not dashboard.filter_bar.display and table.text_filter == ""


# -- tags: one signal to several processes --------------------------------------------------------


async def test_tagged_processes_are_listed_and_signalled_together(
    sim_sampler, allowed, monkeypatch, dialog_clock
) -> None:
    sent: list = []
    app = recording_app(sim_sampler, monkeypatch, sent)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        table = app.dashboard.process_table
        first, second, third = table.visible_processes[:3]
        await pilot.press("space", "down", "space")  # tag the first and the third
        await pilot.pause()
        assert [p.pid for p in table.tagged_processes] == [first.pid, third.pid]
        assert "2 tagged" in table.plain_lines[0]
        await pilot.press("k")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ConfirmSignalScreen)
        assert [p.pid for p in dialog.processes] == [first.pid, third.pid]
        assert "Send a signal to these 2 processes?" in screen_text(app)
        listed = str(dialog.query_one("#confirm-details").render())
        assert str(first.pid) in listed and str(third.pid) in listed
        assert str(second.pid) not in listed
        await pilot.press("K")  # typed ahead: nothing
        await settle(app, pilot)
        assert sent == [] and isinstance(app.screen, ConfirmSignalScreen)
        dialog_clock.now += 5.0
        await pilot.press("T")
        await settle(app, pilot)
        assert isinstance(app.screen, DashboardScreen)
    assert sent == [(first.pid, signal.SIGTERM), (third.pid, signal.SIGTERM)]


async def test_escape_sends_nothing_to_the_tagged_processes(
    sim_sampler, allowed, monkeypatch, dialog_clock
) -> None:
    sent: list = []
    app = recording_app(sim_sampler, monkeypatch, sent)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await pilot.press("space", "space", "space")
        await pilot.press("k")
        await pilot.pause()
        assert len(app.screen.processes) == 3  # type: ignore[attr-defined]
        dialog_clock.now += 5.0
        await pilot.press("escape")
        await settle(app, pilot)
        assert len(app.dashboard.process_table.tags) == 3  # still tagged
        await pilot.press("U")
        assert not app.dashboard.process_table.tags
    assert sent == []


async def test_readonly_space_pauses_and_tags_nothing(sim_sampler, monkeypatch) -> None:
    sent: list = []
    app = recording_app(sim_sampler, monkeypatch, sent, readonly=True)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await pilot.press("space")
        assert app.paused and not app.dashboard.process_table.tags
        rows = dict((description, keys) for keys, description in key_rows(app.dashboard))
        assert "Tag / untag the process (k then signals every tagged one)" not in rows
        await pilot.press("k")
        await settle(app, pilot)
        assert isinstance(app.screen, DashboardScreen)
    assert sent == []


async def test_live_space_tags_and_z_pauses(sim_sampler, monkeypatch, allowed) -> None:
    app = recording_app(sim_sampler, monkeypatch, [])
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await pilot.press("space")
        assert not app.paused and len(app.dashboard.process_table.tags) == 1
        await pilot.press("Z")
        assert app.paused
        rows = dict((description, keys) for keys, description in key_rows(app.dashboard))
        assert rows["Tag / untag the process (k then signals every tagged one)"] == "space"
        assert rows["Pause"] == "Z"
        assert rows["The processes as a tree (parents above their children), or not"] == "f f5"
        assert rows["Scroll the commands right (shown whole)"] == "→"
        assert rows["The commands from their start"] == "^"
        assert rows["Untag every process"] == "U"


# -- a signal from the details, and what the row says after one -----------------------------------


async def test_the_details_signal_through_the_same_dialog(
    sim_sampler, allowed, monkeypatch, dialog_clock
) -> None:
    sent: list = []
    app = recording_app(sim_sampler, monkeypatch, sent)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        target = app.dashboard.process_table.selected_process
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ProcessDetailScreen)
        assert "k Signal" in screen_text(app)
        await pilot.press("k")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmSignalScreen)
        assert app.screen.processes == (target,)
        dialog_clock.now += 5.0
        await pilot.press("I")
        await settle(app, pilot)
        assert isinstance(app.screen, ProcessDetailScreen)
    assert sent == [(target.pid, signal.SIGINT)]


async def test_no_signal_from_the_details_when_read_only(sim_sampler, monkeypatch) -> None:
    sent: list = []
    app = recording_app(sim_sampler, monkeypatch, sent, readonly=True)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ProcessDetailScreen)
        assert "k Signal" not in screen_text(app)
        await pilot.press("k")
        await settle(app, pilot)
        assert isinstance(app.screen, ProcessDetailScreen)
    assert sent == []


async def test_a_killed_process_is_marked_at_once_and_gone_at_the_next_reading(
    sim_sampler, allowed, monkeypatch, dialog_clock
) -> None:
    """On the simulated node: K kills the process under the cursor; its row says so before any
    new reading, the process list is asked for at once, and the next reading no longer lists
    it (its memory freed), instead of 69 GB at 100 % for the slow tier's seconds."""
    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    refreshed: list[bool] = []
    monkeypatch.setattr(sampler, "refresh_now", lambda processes=False: refreshed.append(processes))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        app.start_sampler = True  # as when live: the app asks for a new reading
        table = app.dashboard.process_table
        target = table.selected_process
        key = f"{target.pid}:{target.gpu_index}"
        await pilot.press("k")
        dialog_clock.now += 5.0
        await pilot.press("K")
        await settle(app, pilot)
        assert table.cell_text(key, "command").strip().startswith("SIGKILL sent · ")
        assert refreshed == [True]
        assert any(f"sent SIGKILL to PID {target.pid}" in n for n in notes(app))
        sampler.clock.now += 1.0  # type: ignore[attr-defined]
        app.post_message(SnapshotReady(sampler.poll()))
        await pilot.pause()
        assert target.pid not in [p.pid for p in table.visible_processes]
        app.start_sampler = False


# -- the environment ------------------------------------------------------------------------------


async def test_e_shows_the_environment_on_screen_only(sim_sampler) -> None:
    app = GpuTuiApp(sim_sampler("dgx-h100", polls=3), start_sampler=False)
    asked: list[int] = []

    def reader(process):
        asked.append(process.pid)
        return Environ(process.pid, (("HOME", "/home/svc"), ("HF_TOKEN", "hf_s3cret\x1b[2J")))

    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.dashboard.environ_reader = reader
        target = app.dashboard.process_table.selected_process
        await pilot.press("e")
        await settle(app, pilot)
        assert isinstance(app.screen, EnvironScreen)
        text = screen_text(app)
        assert f"Environment of PID {target.pid}" in text
        assert "HF_TOKEN = hf_s3cret?[2J" in text  # shown, its control characters made safe
        assert not any("s3cret" in n for n in notes(app))
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
    assert asked == [target.pid]


async def test_an_unreadable_environment_says_why(sim_sampler) -> None:
    app = GpuTuiApp(sim_sampler("dgx-h100", polls=3), start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("e")  # the simulated node's processes are none of this machine's
        await settle(app, pilot)
        assert "a simulated or recorded process, not one on this machine" in screen_text(app)
        await pilot.press("e")  # e closes it too
        await pilot.pause()
        app.dashboard.environ_reader = lambda p: Environ(
            p.pid, problem=f"PID {p.pid} belongs to bob: only its owner (or root) may read it"
        )
        await pilot.press("enter")  # from the details too
        await pilot.pause()
        await pilot.press("e")
        await settle(app, pilot)
        assert isinstance(app.screen, EnvironScreen)
        assert "belongs to bob: only its owner (or root) may read it" in screen_text(app)


# -- a table as tall as its processes -------------------------------------------------------------


def test_charts_give_way_to_a_line_per_process() -> None:
    assert table_lines(60, 8) == 10 and table_lines(60, 22) == 23 and table_lines(60, 2000) == 30
    assert choose_layout(200, 60, 8, processes=8).mode == "charts"
    assert choose_layout(200, 60, 8, processes=22).mode == "normal"  # charts give way
    tall = choose_layout(200, 80, 8)
    shrunk = choose_layout(200, 80, 8, processes=30)  # the charts shrink for the table first
    assert shrunk.mode == "charts" and shrunk.panel_height < tall.panel_height
    assert 80 - 3 - 4 * shrunk.panel_height >= 31


async def test_in_a_big_terminal_every_process_of_the_mig_node_is_in_view(sim_sampler) -> None:
    """28 processes at 200x60: each has a line (with charts, 12 did)."""
    app = GpuTuiApp(sim_sampler("mig", polls=3), start_sampler=False)
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        await pilot.pause()
        table = app.dashboard.process_table
        rows = table.row_count
        assert rows > 20
        assert table.size.height >= rows + 1
        drawn = [line for line in table.plain_lines[1:] if line.strip()]
        assert len(drawn) == rows
        # One more process: the layout is chosen again only if that moves the line.
        latest = app.sampler.latest
        assert latest is not None
        extra = dataclasses.replace(latest.processes[0], pid=99)
        app.post_message(
            SnapshotReady(dataclasses.replace(latest, processes=(*latest.processes, extra)))
        )
        await pilot.pause()
        await pilot.pause()
        assert table.row_count == rows + 1 and table.size.height >= rows + 2


async def test_a_tagged_process_gputui_never_signals_is_left_out_and_said(
    sim_sampler, monkeypatch
) -> None:
    """Tagged: PID 1 (a garbled record), another user's process and one of the user's own:
    the dialog lists the last only, and says why the others are left out."""
    sampler = sim_sampler("dgx-h100", polls=3)
    latest = sampler.latest
    assert latest is not None
    mine, theirs = latest.processes[0], latest.processes[1]
    init = dataclasses.replace(mine, pid=1, gpu_memory_bytes=99 * 1024**3)
    monkeypatch.setattr(
        permissions,
        "can_signal",
        lambda p: (True, "") if p.pid == mine.pid else (False, f"PID {p.pid} belongs to bob"),
    )
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(160, 45)) as pilot:
        app.post_message(SnapshotReady(dataclasses.replace(latest, processes=(init, mine, theirs))))
        await pilot.pause()
        await pilot.press("home", "space", "space", "space", "k")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmSignalScreen)
        assert [p.pid for p in app.screen.processes] == [mine.pid]
        said = "\n".join(notes(app))
        assert "PID 1 is init" in said and f"PID {theirs.pid} belongs to bob" in said
