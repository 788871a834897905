"""Every key does what it says: keys typed ahead apply in order, focus survives a resize, Ctrl+C
quits, and the footer shows the keys of the screen in front (and why a key does nothing)."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from textual.drivers.linux_driver import LinuxDriver

from gputui.core.model import Snapshot
from gputui.engine.sampler import Sampler
from gputui.tui.app import GpuTuiApp
from gputui.tui.messages import SnapshotReady
from gputui.tui.screens.topology import TopologyScreen

pytestmark = pytest.mark.usefixtures("tui_env")


async def show(app: GpuTuiApp, pilot, sampler: Sampler) -> Snapshot:
    snapshot = sampler.poll()
    sampler.clock.now += 1.0  # type: ignore[attr-defined]
    app.post_message(SnapshotReady(snapshot))
    await pilot.pause()
    return snapshot


def stack(app: GpuTuiApp) -> list[str]:
    return [type(screen).__name__ for screen in app.screen_stack]


# -- keys typed ahead ------------------------------------------------------------------------------


@contextmanager
def terminal_input(app: GpuTuiApp) -> Iterator[int]:
    """The app's own terminal driver reading keys from a pipe, as from a terminal: its input
    thread and parser run as they do for a user. Yields the pipe's end to write bytes to."""
    assert issubclass(app.driver_class, LinuxDriver)
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTSTP, signal.SIGCONT)}
    read_end, write_end = os.pipe()
    driver = app.driver_class(app, debug=False, mouse=False)
    driver.fileno = read_end
    thread = threading.Thread(target=driver.run_input_thread, daemon=True)
    thread.start()
    try:
        yield write_end
    finally:
        driver.exit_event.set()
        thread.join(2)
        os.close(write_end)
        os.close(read_end)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


async def type_keys(write_end: int, keys: list[bytes], gap: float) -> None:
    """Each key as its bytes, with a real pause between them: a fast typist."""
    for key in keys:
        os.write(write_end, key)
        await asyncio.sleep(gap)
    await asyncio.sleep(0.4)  # the parser gives a lone Esc after its wait


@pytest.mark.parametrize(
    ("keys", "screens"),
    [
        ([b"h", b"\x1b", b"t"], ["DashboardScreen", "TopologyScreen"]),
        ([b"h", b"\x1b", b"?"], ["DashboardScreen", "HelpScreen"]),
        ([b"t", b"\x1b", b"Z", b"h"], ["DashboardScreen", "FindingsScreen"]),
    ],
)
async def test_keys_typed_ahead_apply_in_order(sim_sampler, keys, screens) -> None:
    """h, Esc, t typed 50 ms apart ends on the topology: the Esc and the t are two keys (the
    terminal's parser read them as Alt+t, and h, Esc, t ended on the findings screen)."""
    sampler = sim_sampler("faulty", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(app, pilot, sampler)
        with terminal_input(app) as terminal:
            await type_keys(terminal, keys, gap=0.05)
            await pilot.pause()
        assert stack(app) == screens
        if keys[2] == b"Z":
            assert app.paused  # Z (pause; space tags a process now) after Esc paused the display


async def test_known_sequences_and_bound_alt_keys_are_kept() -> None:
    """Cursor keys, Alt+Backspace and an Alt key the keymap binds are read as before."""
    from gputui.tui.typeahead import TypeAheadParser

    def keys(data: str, keep: tuple[str, ...] = ()) -> list[str]:
        parser = TypeAheadParser(keep=keep)
        return [e.key for e in [*parser.feed(data), *parser.feed("")]]  # type: ignore[attr-defined]

    assert keys("\x1bt") == ["escape", "t"]
    assert keys("\x1b?") == ["escape", "question_mark"]
    assert keys("\x1b ") == ["escape", "space"]
    assert keys("\x1b\x1bt") == ["escape", "escape", "t"]
    assert keys("\x1b[D\x1bOA") == ["left", "up"]
    assert keys("\x1b\x7f") == ["ctrl+w"]  # Alt+Backspace, a sequence Textual knows
    assert keys("\x1bx", keep=("alt+x",)) == ["alt+x"]


# -- focus across resizes --------------------------------------------------------------------------


async def test_the_process_table_keeps_the_keys_after_the_too_small_screen(sim_sampler) -> None:
    """Below the minimum size the dashboard hides (and its widgets lose the focus); back to a
    usable size, s and S sort at once, without a Tab first."""
    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(app, pilot, sampler)
        table = app.dashboard.process_table
        before = table.sort_column
        await pilot.resize_terminal(50, 10)
        assert app.dashboard.layout_choice.mode == "too-small"
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert app.focused is table
        await pilot.press("s")
        assert table.sort_column != before
        reverse = table.sort_reverse
        await pilot.press("S")
        assert table.sort_reverse != reverse


async def test_a_filter_typed_before_the_too_small_screen_stays(sim_sampler) -> None:
    """The filter keeps filtering; the keys go to the table (t is Topology, not a letter)."""
    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(app, pilot, sampler)
        await pilot.press("slash", "p", "y")
        await pilot.resize_terminal(40, 12)
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert app.focused is app.dashboard.process_table
        assert app.dashboard.process_table.text_filter == "py"
        await pilot.press("t")
        assert isinstance(app.screen, TopologyScreen)


# -- ctrl+c ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "before",
    [
        [],  # the dashboard
        ["slash", "p"],  # typing in the filter
        ["h"],  # another screen
        ["k"],  # the signal dialog
        ["ctrl+p", "x"],  # typing in the command palette
    ],
)
async def test_ctrl_c_quits_everywhere(sim_sampler, monkeypatch, before) -> None:
    """As in htop and nvtop (Textual only said to press ctrl+q), also where text is typed."""
    from gputui.tui import permissions

    monkeypatch.setattr(permissions, "can_signal", lambda process: (True, ""))
    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(app, pilot, sampler)
        if before:
            await pilot.press(*before)
            await pilot.pause(0.4)  # the dialog takes no key in its first moments
        assert app.is_running
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running
    assert app.return_code == 0


async def test_ctrl_q_still_quits_and_the_help_lists_ctrl_c(sim_sampler) -> None:
    from gputui.tui.screens.help import key_rows

    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(app, pilot, sampler)
        assert ("q ctrl+c", "Quit") in key_rows(app.dashboard)
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert not app.is_running


# -- the footer ------------------------------------------------------------------------------------


def footer_line(app: GpuTuiApp) -> str:
    """The bottom line of the screen in front, as drawn."""
    return app.screen._compositor.render_strips()[-1].text


async def test_the_footer_shows_the_keys_of_the_screen_in_front(sim_sampler, monkeypatch) -> None:
    """The signal dialog's and the help's keys, not the dashboard's under them; the probe's
    space and tab; no h Health on the health screen, where h closes it."""
    from gputui.tui import permissions

    monkeypatch.setattr(permissions, "can_signal", lambda process: (True, ""))
    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(app, pilot, sampler)
        assert "s Sort" in footer_line(app)
        await pilot.press("k")
        await pilot.pause()
        line = footer_line(app)
        for words in ("T Terminate", "K Kill", "I Interrupt", "esc Cancel"):
            assert words in line
        assert "s Sort" not in line and "q Quit" not in line
        await pilot.pause(0.4)
        await pilot.press("escape", "question_mark")
        await pilot.pause()
        line = footer_line(app)
        assert "esc Close" in line and "s Sort" not in line and "k Signal" not in line
        await pilot.press("escape", "p")
        await pilot.pause()
        line = footer_line(app)
        assert "space Check" in line and "tab Next" in line and "esc Close" in line
        await pilot.press("escape", "h")
        await pilot.pause()
        line = footer_line(app)
        assert "esc Close" in line and "h Health" not in line
        await pilot.press("h")  # closes it, as the footer's Close does
        assert app.screen is app.dashboard


async def test_keys_that_are_off_say_why(sim_sampler, tmp_path) -> None:
    """In a replay k, p and R do nothing: the footer marks them off with why, and each says why
    when pressed (or clicked), in one short notice."""
    from gputui.backends.replay import ReplayBackend
    from gputui.core.record import Recorder
    from gputui.engine.session import sampler_for
    from gputui.tui.notice import EXPLAINED, REPLAY
    from gputui.tui.screens.help import key_rows

    live = sim_sampler("dgx-h100")
    path = tmp_path / "session.jsonl.gz"
    with Recorder(path) as recorder:
        live.add_listener(recorder.write)
        for _ in range(3):
            live.poll()
            live.clock.now += 1.0  # type: ignore[attr-defined]
    backend = ReplayBackend(path, start_paused=True)
    sampler = sampler_for(backend, backend.open())
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        app.post_message(SnapshotReady(sampler.poll()))
        await pilot.pause()
        line = footer_line(app)
        assert "k p R off: replay" in line
        assert "k Signal" not in line and "p Probe" not in line
        rows = dict(key_rows(app.dashboard))
        assert rows["k"] == "Signal the tagged processes, or else the selected one (off: replay)"
        for key, what in (("k", "Signal"), ("p", "Probe"), ("R", "Record")):
            await pilot.press(key)
            notices = [(n.title, n.message) for n in app._notifications]
            assert notices == [(f"{what} is off", EXPLAINED[REPLAY])]
            assert app.screen is app.dashboard and app.recording is None
        app.clear_notifications()
        start = line.index("k p R off")
        await pilot.click(offset=(start + 1, 39))
        await pilot.pause()
        assert [n.title for n in app._notifications] == ["Signal is off"]
