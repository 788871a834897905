"""k on the dashboard where gputui never signals: host PIDs seen from a container, and rows naming
PID 1, PID 2 or a kernel thread. Not offered in the footer or the help; k says why. Where it is
offered, the dialog k opens sends a signal only on a deliberate second key."""

from __future__ import annotations

import dataclasses
import signal

import pytest
from tests.fakes.clock import FakeClock

from gputui.core.model import ProcessSample
from gputui.tui import permissions
from gputui.tui.app import GpuTuiApp
from gputui.tui.messages import SnapshotReady
from gputui.tui.screens import confirm_signal
from gputui.tui.screens.confirm_signal import TYPE_AHEAD_S, ConfirmSignalScreen
from gputui.tui.screens.dashboard import DashboardScreen
from gputui.tui.screens.help import key_rows
from gputui.tui.screens.topology import TopologyScreen
from gputui.tui.widgets.footer import KeyFooter

pytestmark = pytest.mark.usefixtures("tui_env")

GIB = 1024**3


def screen_text(app: GpuTuiApp) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def offered(app: GpuTuiApp) -> bool:
    """k Signal is bound, in the footer and in the help."""
    actions = {b.binding.action for b in app.screen.active_bindings.values()}
    footer = app.screen.query_one(KeyFooter).shown_keys
    help_rows = [description for _, description in key_rows(app.screen)]
    in_footer = "k Signal" in footer
    in_help = "Signal the tagged processes, or else the selected one" in help_rows
    assert ("signal" in actions) == in_footer == in_help
    return in_footer


def notes(app: GpuTuiApp) -> list[str]:
    return [n.message for n in app._notifications]


@pytest.fixture
def allowed(monkeypatch) -> list[tuple[int, signal.Signals]]:
    """The user's rights allow every signal; what would be sent is recorded, not sent."""
    monkeypatch.setattr(permissions, "can_signal", lambda process: (True, ""))
    return []


async def test_in_a_container_k_is_not_offered_and_says_why(sim_sampler, allowed, monkeypatch):
    sampler = sim_sampler("dgx-h100")
    assert sampler.node is not None
    sampler.node = dataclasses.replace(sampler.node, pid_namespace="container")
    for _ in range(3):
        sampler.poll()
        sampler.clock.now += 1.0  # type: ignore[attr-defined]
    monkeypatch.setattr(sampler, "signal_process", lambda pid, sig: allowed.append((pid, sig)))
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        assert app.dashboard.process_table.selected_process is not None
        assert not offered(app)
        assert screen_text(app).count("Host PIDs: gputui runs in a container") == 1
        await pilot.press("k")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        assert any(n.startswith("Host PIDs: gputui runs in a container") for n in notes(app))
        app.dashboard.action_signal()  # the action itself refuses too
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
    assert allowed == []


async def test_on_the_host_there_is_no_note(sim_sampler, allowed) -> None:
    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        assert offered(app)
        assert "Host PIDs" not in screen_text(app)
        assert not app.dashboard.pid_note.display


async def test_no_signal_for_rows_naming_pid_1_or_a_kernel_thread(sim_sampler, allowed) -> None:
    """A garbled driver record can name PID 1 or a kernel thread: as the cursor moves, k comes
    and goes; where it is gone, k says why and opens no dialog."""
    sampler = sim_sampler("dgx-h100", polls=3)
    latest = sampler.latest
    assert latest is not None
    t0 = latest.timestamp - 60
    rows = (  # by GPU memory, largest first: PID 1, an ordinary process, a kernel thread
        ProcessSample(pid=1, gpu_index=0, gpu_memory_bytes=9 * GIB, user="root", start_time=t0),
        ProcessSample(pid=4242, gpu_index=0, gpu_memory_bytes=5 * GIB, user="u", start_time=t0),
        ProcessSample(pid=87, gpu_index=0, gpu_memory_bytes=GIB, kernel_thread=True, start_time=t0),
    )
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(160, 45)) as pilot:
        app.post_message(SnapshotReady(dataclasses.replace(latest, processes=rows)))
        await pilot.pause()
        table = app.dashboard.process_table
        assert [p.pid for p in table.visible_processes] == [1, 4242, 87]
        assert table.selected_process.pid == 1 and not offered(app)
        await pilot.press("k")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        assert any("PID 1 is init" in n for n in notes(app))
        await pilot.press("down")
        await pilot.pause()
        assert table.selected_process.pid == 4242 and offered(app)
        await pilot.press("k")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmSignalScreen)
        await pilot.press("escape", "down")
        await pilot.pause()
        assert table.selected_process.pid == 87 and not offered(app)
        await pilot.press("k")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        assert any("PID 87 is a kernel thread" in n for n in notes(app))


# -- the dialog: a signal takes a deliberate second key --------------------------------------


@pytest.fixture
def dialog_clock(monkeypatch) -> FakeClock:
    """The dialog's clock: it stands still unless a test moves it on."""
    clock = FakeClock(1000.0)
    monkeypatch.setattr(confirm_signal, "monotonic", clock)
    return clock


def dialog_app(sim_sampler, sent: list, monkeypatch) -> GpuTuiApp:
    """The dashboard on a simulated node; what would be sent is recorded in ``sent``."""
    sampler = sim_sampler("dgx-h100", polls=3)
    monkeypatch.setattr(sampler, "signal_process", lambda pid, sig: sent.append((pid, sig)))
    return GpuTuiApp(sampler, start_sampler=False)


async def settle(app: GpuTuiApp, pilot) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()


async def test_k_k_sends_nothing(sim_sampler, allowed, monkeypatch, dialog_clock) -> None:
    """k opens the dialog; a second k (a double tap, key repeat, or on purpose later) is not
    Kill: it only says which key is."""
    app = dialog_app(sim_sampler, allowed, monkeypatch)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await pilot.press("k", "k")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmSignalScreen)
        dialog_clock.now += 5.0
        await pilot.press("k")
        await settle(app, pilot)
        assert any("K (upper-case) kills" in n for n in notes(app))
        await pilot.press("i")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmSignalScreen)
        assert notes(app) == ["I (upper-case) interrupts; esc cancels"]  # one notice at a time
    assert allowed == []


async def test_k_t_sends_nothing_and_opens_no_topology(
    sim_sampler, allowed, monkeypatch, dialog_clock
) -> None:
    """t is Topology on the dashboard and nothing in the dialog: neither a signal nor the
    topology screen, at once or later."""
    app = dialog_app(sim_sampler, allowed, monkeypatch)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await pilot.press("k", "t")
        await settle(app, pilot)
        dialog_clock.now += 5.0
        await pilot.press("t")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmSignalScreen)
        assert not any(isinstance(s, TopologyScreen) for s in app.screen_stack)
    assert allowed == []


async def test_upper_case_typed_ahead_chooses_nothing(
    sim_sampler, allowed, monkeypatch, dialog_clock
) -> None:
    """K, T, I or a move to another button typed before the dialog could be read (within
    TYPE_AHEAD_S of it opening) choose nothing; Cancel stays the default."""
    app = dialog_app(sim_sampler, allowed, monkeypatch)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await pilot.press("k", "K", "T", "I", "tab", "right", "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, DashboardScreen)  # enter pressed Cancel
    assert allowed == []


async def test_k_then_upper_k_after_a_pause_kills_the_selected_pid(
    sim_sampler, allowed, monkeypatch
) -> None:
    """On the real clock: k, a pause longer than TYPE_AHEAD_S, then K sends SIGKILL to the
    process under the cursor."""
    app = dialog_app(sim_sampler, allowed, monkeypatch)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        target = app.dashboard.process_table.selected_process
        await pilot.press("k")
        await pilot.pause(TYPE_AHEAD_S + 0.1)
        assert allowed == []
        await pilot.press("K")
        await settle(app, pilot)
        assert isinstance(app.screen, DashboardScreen)
    assert allowed == [(target.pid, signal.SIGKILL)]


@pytest.mark.parametrize("key", ["enter", "escape"])
async def test_k_then_enter_or_escape_cancels(
    sim_sampler, allowed, monkeypatch, dialog_clock, key
) -> None:
    app = dialog_app(sim_sampler, allowed, monkeypatch)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await pilot.press("k")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ConfirmSignalScreen)
        assert app.focused is dialog.query_one("#signal-cancel")
        await pilot.press(key)
        await settle(app, pilot)
        assert isinstance(app.screen, DashboardScreen)
    assert allowed == []


async def test_the_dialog_says_which_keys_do_what(sim_sampler, allowed, monkeypatch) -> None:
    app = dialog_app(sim_sampler, allowed, monkeypatch)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await pilot.press("k")
        await pilot.pause()
        text = " ".join(screen_text(app).split())
    assert "Keys (upper-case letters; lower-case ones send nothing)" in text
    assert "T terminate (SIGTERM" in text and "K kill (SIGKILL" in text
    assert "I interrupt (SIGINT" in text and "esc cancel" in text
    assert "Kill (K)" in text and "Cancel (Esc)" in text
