"""The dashboard app under Pilot: snapshots in, panels, keys, filters, screens, layouts.

Every test injects snapshots from the simulated backend on a fake clock (``start_sampler=False``),
so nothing waits on wall time.
"""

from __future__ import annotations

import itertools
import re
import signal
import threading
from typing import ClassVar

import pytest
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from gputui.core.format import fmt_pct
from gputui.core.model import GpuInfo, GpuSample, MigDeviceInfo, MigSample, Snapshot
from gputui.engine.sampler import Sampler
from gputui.tui.app import GpuTuiApp
from gputui.tui.messages import SamplerFailed, SnapshotReady
from gputui.tui.screens.dashboard import TOO_SMALL_TEXT, DashboardScreen, choose_layout
from gputui.tui.screens.help import HelpScreen
from gputui.tui.widgets.gpu_panel import LOST_TEXT, WAITING_TEXT, GpuPanel
from gputui.tui.widgets.line_widget import VALUE, changed_spans

pytestmark = pytest.mark.usefixtures("tui_env")

T0 = 1_700_000_000.0  # the sim_sampler fixture's fake clock start


def advance(sampler: Sampler, seconds: float = 1.0) -> None:
    sampler.clock.now += seconds  # type: ignore[attr-defined]


def screen_text(app: GpuTuiApp) -> str:
    """What the terminal shows, as plain text."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def show(app: GpuTuiApp, pilot, sampler: Sampler) -> Snapshot:
    """Poll once (fake clock +1 s), post the snapshot like the sampler thread does, settle."""
    snapshot = sampler.poll()
    advance(sampler)
    app.post_message(SnapshotReady(snapshot))
    await pilot.pause()
    return snapshot


def panel(app: GpuTuiApp, index: int) -> GpuPanel:
    return app.dashboard.panels[index]


def panel_text(app: GpuTuiApp, index: int) -> str:
    return "\n".join(panel(app, index).plain_lines)


# -- snapshots ------------------------------------------------------------------------------------


async def test_first_frame_waits_calmly_then_a_snapshot_fills_the_panels(sim_sampler) -> None:
    sampler = sim_sampler("dgx-h100")
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert WAITING_TEXT in panel_text(app, 0)
        assert "--:--:--" in app.dashboard.title_bar.plain_lines[0]
        snapshot = await show(app, pilot, sampler)
        for sample in snapshot.gpus:
            text = panel_text(app, sample.index)
            assert WAITING_TEXT not in text
            assert fmt_pct(sample.utilization_gpu_pct) in text
        title = app.dashboard.title_bar.plain_lines[0]
        assert "22:13:20" in title and "dgx-h100" in title and "8 GPUs" in title
        assert "HOST" in app.dashboard.host_strip.plain_lines[0]
        assert app.dashboard.process_table.row_count == len(snapshot.processes)


async def test_a_new_snapshot_repaints_only_changed_spans(sim_sampler) -> None:
    from gputui.tui.span_compositor import SpanCompositor

    sampler = sim_sampler("dgx-h100", polls=30)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        assert isinstance(app.dashboard._compositor, SpanCompositor)
        await show(app, pilot, sampler)
        p0 = panel(app, 0)
        before_lines, before_spans = p0.plain_lines, p0.spans_refreshed
        await show(app, pilot, sampler)
        changed = sum(
            len(changed_spans(a, " " * len(a), b, " " * len(b)))
            for a, b in zip(before_lines, p0.plain_lines, strict=True)
        )
        assert p0.plain_lines != before_lines
        # A span per changed run (or fewer when styles match too), never the whole panel.
        assert 0 < p0.spans_refreshed - before_spans <= max(changed, 1) + 6
        assert p0.spans_refreshed - before_spans < len(p0.plain_lines) * 4


async def test_a_symbol_one_cell_wide_keeps_repaints_small(sim_sampler) -> None:
    """The title bar's "✔ healthy" is one cell wide like its neighbours: a new reading repaints
    the clock's digits, not the whole line."""
    sampler = sim_sampler("dgx-h100", polls=30)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(app, pilot, sampler)
        bar = app.dashboard.title_bar
        stamp = app.dashboard.shown.timestamp
        bar.set_state(health=("✔ healthy", "ok"), timestamp=stamp)
        await pilot.pause()
        assert "✔" in bar.plain_lines[0]
        regions = []
        original = bar.refresh

        def record(*args, **kwargs):
            regions.extend(args)
            return original(*args, **kwargs)

        bar.refresh = record
        bar.set_state(timestamp=stamp + 1)
        await pilot.pause()
        assert regions and all(r.width < 20 for r in regions), regions


async def test_replaceable_snapshots_collapse_to_the_newest(sim_sampler) -> None:
    sampler = sim_sampler("rtx4090")
    a, b = SnapshotReady(sampler.poll()), SnapshotReady(sampler.poll())
    assert b.can_replace(a)
    assert not b.can_replace(SamplerFailed(RuntimeError("x")))


async def test_pause_freezes_the_display_but_keeps_collecting(sim_sampler) -> None:
    sampler = sim_sampler("dgx-h100", polls=5)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(app, pilot, sampler)
        title_before = app.dashboard.title_bar.plain_lines[0]
        lines_before = panel(app, 0).plain_lines
        await pilot.press("Z")  # space tags processes here (htop's keys)
        assert app.paused
        assert "PAUSED" in app.dashboard.title_bar.plain_lines[0]
        history_before = len(sampler.history)
        for _ in range(3):
            await show(app, pilot, sampler)
        assert len(sampler.history) == history_before + 3
        assert panel(app, 0).plain_lines == lines_before
        assert app.dashboard.title_bar.plain_lines[0].split()[-1] == title_before.split()[-1]
        await pilot.press("Z")
        assert not app.paused
        title = app.dashboard.title_bar.plain_lines[0]
        assert "PAUSED" not in title and title.split()[-1] != title_before.split()[-1]


async def test_lost_gpu_is_shown_calmly(sim_sampler) -> None:
    sampler = sim_sampler("faulty", polls=10)
    assert sampler.latest is not None and sampler.latest.sample(3).lost
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        text = panel_text(app, 3)
        assert LOST_TEXT in text and "last reading" in text
        assert LOST_TEXT not in panel_text(app, 2)
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert LOST_TEXT in panel_text(app, 3)
        assert LOST_TEXT in screen_text(app)


# -- GPU selection, filters, keys -----------------------------------------------------------------


async def test_gpu_keys_filter_the_process_table(sim_sampler) -> None:
    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        table = app.dashboard.process_table
        assert len({p.gpu_index for p in table.visible_processes}) > 1
        await pilot.press("3")
        assert table.gpu_filter == 3
        assert table.visible_processes
        assert {p.gpu_index for p in table.visible_processes} == {3}
        assert panel(app, 3).selected and not panel(app, 2).selected
        assert "GPU 3 only" in app.dashboard.title_bar.plain_lines[0]
        await pilot.press("a")
        assert table.gpu_filter is None and not panel(app, 3).selected
        await pilot.press("9")  # no such GPU: a warning, nothing filtered
        assert table.gpu_filter is None


async def test_clicking_a_panel_selects_its_gpu(sim_sampler) -> None:
    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.click("#gpu-5")
        assert app.dashboard.gpu_filter == 5
        await pilot.click("#gpu-5")
        assert app.dashboard.gpu_filter is None


async def test_slash_filters_processes_by_text(sim_sampler) -> None:
    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        table = app.dashboard.process_table
        user = table.visible_processes[-1].user
        assert user
        await pilot.press("slash")
        assert app.focused is app.dashboard.filter_input
        await pilot.press(*user)
        await pilot.pause()
        assert table.visible_processes and all(p.user == user for p in table.visible_processes)
        await pilot.press("enter")
        assert app.focused is table
        await pilot.press("escape")
        assert table.text_filter == "" and not app.dashboard.filter_bar.display


async def test_interval_keys_step_through_presets(sim_sampler) -> None:
    sampler = sim_sampler("rtx4090")
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("plus")
        assert sampler.interval == 2.0
        assert "every 2s" in app.dashboard.title_bar.plain_lines[0]
        await pilot.press("minus", "minus")
        assert sampler.interval == 0.5


async def test_help_screen_lists_keys_and_closes(sim_sampler) -> None:
    sampler = sim_sampler("dgx-h100", polls=2)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.pause()
        text = app.screen.help_text.plain
        for words in ("Pause", "Filter", "Signal", "0–9", "GPU panels", "Host strip", "Sort"):
            assert words in text
        assert "Cursor up" not in text
        assert "Show one GPU" in screen_text(app)
        await pilot.press("escape")
        assert isinstance(app.screen, DashboardScreen)


async def test_hidden_dashboard_catches_up_when_shown_again(sim_sampler) -> None:
    sampler = sim_sampler("dgx-h100", polls=2)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        before = app.dashboard.title_bar.plain_lines[0]
        snapshot = await show(app, pilot, sampler)
        assert app.dashboard.title_bar.plain_lines[0] == before  # not drawn while hidden
        await pilot.press("escape")
        await pilot.pause()
        assert app.dashboard.shown is snapshot


async def test_enter_opens_process_details(sim_sampler) -> None:
    from gputui.tui.screens.process_detail import ProcessDetailScreen

    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        selected = app.dashboard.process_table.selected_process
        await pilot.press("enter")
        assert isinstance(app.screen, ProcessDetailScreen)
        assert app.screen.process.pid == selected.pid
        await show(app, pilot, sampler)  # routed to the detail screen without error
        await pilot.press("escape")
        assert isinstance(app.screen, DashboardScreen)


# -- signals and --readonly -----------------------------------------------------------------------


async def choose(pilot, key: str) -> None:
    """Press ``key`` in the signal dialog once it has been open long enough to be read."""
    from gputui.tui.screens.confirm_signal import TYPE_AHEAD_S

    await pilot.pause(TYPE_AHEAD_S + 0.05)
    await pilot.press(key)


async def test_readonly_turns_the_signal_key_off(sim_sampler) -> None:
    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, readonly=True, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        on = {b.binding.action for b in app.screen.active_bindings.values() if b.enabled}
        assert "signal" not in on
        await pilot.press("k")
        assert isinstance(app.screen, DashboardScreen)
        assert "k Signal" not in screen_text(app)
        assert "k p R off: read-only" in screen_text(app)


async def test_k_confirms_then_signals_off_the_ui_thread(sim_sampler, monkeypatch) -> None:
    from gputui.tui import permissions
    from gputui.tui.screens.confirm_signal import ConfirmSignalScreen

    monkeypatch.setattr(permissions, "can_signal", lambda process: (True, ""))
    sampler = sim_sampler("dgx-h100", polls=3)
    sent: list[tuple[int, signal.Signals, str]] = []
    real = sampler.signal_process

    def record(pid: int, sig: signal.Signals) -> None:
        sent.append((pid, sig, threading.current_thread().name))
        real(pid, sig)

    monkeypatch.setattr(sampler, "signal_process", record)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert "Signal" in screen_text(app)
        target = app.dashboard.process_table.selected_process
        await pilot.press("k")
        assert isinstance(app.screen, ConfirmSignalScreen)
        await choose(pilot, "T")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert [(pid, sig) for pid, sig, _ in sent] == [(target.pid, signal.SIGTERM)]
        assert sent[0][2] != threading.main_thread().name
        assert any(f"sent SIGTERM to PID {target.pid}" in n.message for n in app._notifications)


async def test_signal_refused_by_permissions_is_explained(sim_sampler, monkeypatch) -> None:
    from gputui.tui import permissions

    monkeypatch.setattr(permissions, "can_signal", lambda process: (False, "not yours"))
    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("k")
        assert isinstance(app.screen, DashboardScreen)
        assert any("not yours" in n.message for n in app._notifications)


async def test_readonly_disables_the_probe_and_recording_too(sim_sampler, tmp_path) -> None:
    """--readonly: no signals (k), no probe (p: it loads the GPUs), no recording (R): off in the
    footer and the help's keys (with why), gone from the palette, and the keys only say why."""
    from gputui.tui.commands import gputui_commands

    for readonly in (False, True):
        sampler = sim_sampler("dgx-h100", polls=3)
        app = GpuTuiApp(sampler, readonly=readonly, start_sampler=False, record_dir=tmp_path)
        async with app.run_test(size=(200, 40)) as pilot:
            await pilot.pause()
            actions = {b.binding.action for b in app.screen.active_bindings.values() if b.enabled}
            footer = screen_text(app).splitlines()[-1]
            titles = {title for title, _, _ in gputui_commands(app)}
            await pilot.press("question_mark")
            await pilot.pause()
            help_text = app.screen.help_text.plain
            await pilot.press("escape")
            if not readonly:  # what --readonly takes away is there without it
                assert {"signal", "probe", "toggle_record"} <= actions
                assert all(word in footer for word in ("Signal", "Probe", "Record"))
                assert {"Run the probe", "Start recording"} <= titles
                assert "Run the probe" in help_text and "recording to a file" in help_text
                continue
            assert not actions & {"signal", "probe", "toggle_record"}
            assert not any(word in footer for word in ("Signal", "Probe", "Record"))
            assert "k p R off: read-only" in footer
            assert not titles & {"Run the probe", "Start recording"}
            assert "Run the probe (off: read-only)" in help_text
            assert "recording to a file (off: read-only)" in help_text
            for key, what in (("p", "Probe"), ("R", "Record"), ("k", "Signal")):
                await pilot.press(key)
                await pilot.pause()
                assert [n.title for n in app._notifications] == [f"{what} is off"]
            assert isinstance(app.screen, DashboardScreen)
            app.action_probe()  # and the actions themselves refuse
            app.start_recording()
            await pilot.pause()
            assert isinstance(app.screen, DashboardScreen)
            assert app.recording is None and list(tmp_path.iterdir()) == []


async def test_the_signal_carries_the_start_time_shown(sim_sampler, monkeypatch) -> None:
    """The worker hands the backend the PID with the start time the dialog showed, so the backend
    can check, right before sending, that the PID still names that process."""
    from gputui.host.signals import ProcessRef
    from gputui.tui import permissions

    monkeypatch.setattr(permissions, "can_signal", lambda process: (True, ""))
    sampler = sim_sampler("dgx-h100", polls=3)
    targets: list[int] = []
    monkeypatch.setattr(sampler, "signal_process", lambda pid, sig: targets.append(pid))
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        target = app.dashboard.process_table.selected_process
        assert target.start_time is not None
        await pilot.press("k")
        await choose(pilot, "T")
        await app.workers.wait_for_complete()
        await pilot.pause()
    assert len(targets) == 1 and isinstance(targets[0], ProcessRef)
    assert targets[0] == target.pid and targets[0].start_time == target.start_time


async def test_a_pid_that_changed_hands_is_refused_with_a_reason(sim_sampler, monkeypatch) -> None:
    from gputui.host.signals import ProcessChanged
    from gputui.tui import permissions

    monkeypatch.setattr(permissions, "can_signal", lambda process: (True, ""))
    sampler = sim_sampler("dgx-h100", polls=3)

    def changed(pid: int, sig: signal.Signals) -> None:
        raise ProcessChanged(f"PID {pid} now belongs to another process; nothing sent")

    monkeypatch.setattr(sampler, "signal_process", changed)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        target = app.dashboard.process_table.selected_process
        await pilot.press("k")
        await choose(pilot, "K")
        await app.workers.wait_for_complete()
        await pilot.pause()
        notes = [n for n in app._notifications if "another process" in n.message]
        assert len(notes) == 1 and notes[0].severity == "warning"
        assert notes[0].title == "SIGKILL not sent" and f"PID {target.pid}" in notes[0].message
        assert not any("has already exited" in n.message for n in app._notifications)


# -- layout ---------------------------------------------------------------------------------------


def test_layout_choice() -> None:
    assert choose_layout(120, 40, 8) == choose_layout(120, 40, 8)
    wide = choose_layout(120, 40, 8)
    assert (wide.mode, wide.columns, wide.panel_height) == ("normal", 2, 6)
    assert choose_layout(80, 24, 8).mode == "compact"
    assert choose_layout(120, 40, 1).mode == "roomy"
    assert choose_layout(120, 40, 2).mode == "roomy"
    assert choose_layout(59, 40, 8).mode == "too-small"
    assert choose_layout(120, 14, 8).mode == "too-small"
    assert choose_layout(60, 15, 8).mode == "compact"
    # A big terminal: panels with charts, as tall as the process table leaves room for.
    big = choose_layout(200, 60, 8)
    assert (big.mode, big.columns, big.panel_height) == ("charts", 2, 11)
    assert choose_layout(240, 80, 8).panel_height == 16
    assert choose_layout(200, 50, 8).mode == "normal"  # charts would be too flat
    # One GPU: the roomy panel grows with the terminal.
    assert choose_layout(120, 40, 1).panel_height == 27
    assert choose_layout(200, 60, 1).panel_height == 47


@pytest.mark.parametrize(("scenario", "gpus"), [("dgx-h100", 8), ("mi300x", 8), ("a100-pcie", 2)])
@pytest.mark.parametrize("size", [(80, 24), (120, 40), (60, 15), (200, 60)])
async def test_every_gpu_is_visible_at_every_size(sim_sampler, scenario, gpus, size) -> None:
    sampler = sim_sampler(scenario, polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        text = screen_text(app)
        for index in range(gpus):
            p = panel(app, index)
            assert p.region.height > 0 and p.region.bottom <= size[1] - 1
            assert p.region.right <= size[0]
            first = p.plain_lines[0]
            assert first.startswith(f"{index} ") or f"─ {index} " in first
            assert first.strip() in text or first in text


def rows_with_content(app: GpuTuiApp) -> int:
    return sum(1 for line in screen_text(app).splitlines() if line.strip())


@pytest.mark.parametrize(("scenario", "size"), [("dgx-h100", (200, 60)), ("rtx4090", (200, 60))])
async def test_a_big_terminal_is_used(sim_sampler, scenario, size) -> None:
    """At 200x60 at least 85 % of the rows show something (charts grow into the room the
    process table does not need)."""
    sampler = sim_sampler(scenario, polls=60)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        assert rows_with_content(app) >= 0.85 * size[1]


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (60, 20), (200, 60)])
async def test_footer_keys_are_whole_and_nothing_strays(sim_sampler, size) -> None:
    from gputui.tui.widgets.footer import KeyFooter

    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        footer = app.screen.query_one(KeyFooter)
        line = screen_text(app).splitlines()[-1]
        assert len(line) == size[0]
        shown = footer.shown_keys
        assert "q Quit" in shown and "? Help" in shown
        for key in shown:  # every key and its whole description
            assert f"{key} " in line
        # The palette key sits at the right edge, with nothing under or after it.
        assert line.endswith("▏^p palette ")
        keys_end = line.index("▏^p palette")
        assert line[:keys_end].rstrip() == " ".join(shown)
        if size[0] <= 80:
            assert len(shown) < 10  # the rest are in the help (?) and the palette


async def test_resize_to_80x24_switches_to_compact_rows(sim_sampler) -> None:
    sampler = sim_sampler("dgx-h100", polls=5)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.dashboard.layout_choice.mode == "normal"
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert app.dashboard.layout_choice.mode == "compact"
        rows = [line for line in screen_text(app).splitlines() if " H100 " in line[:10]]
        assert [row.split()[0] for row in rows] == [str(i) for i in range(8)]
        assert app.dashboard.process_table.region.height >= 6


async def test_one_gpu_gets_the_roomy_view(sim_sampler) -> None:
    sampler = sim_sampler("rtx4090", polls=60)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        text = panel_text(app, 0)
        for label in ("Board", "GPU util", "Memory", "Power", "Temp", "Clocks", "PCIe", "NVLink"):
            assert label in text
        assert "ECC" in text and "Throttle" in text and "n/a" in text
        assert "GPU utilization %" in text and "Memory used %" in text


@pytest.mark.parametrize("size", [(50, 12), (59, 30), (120, 14), (10, 3), (1, 1)])
async def test_tiny_terminal_shows_one_line_message(sim_sampler, size) -> None:
    sampler = sim_sampler("dgx-h100", polls=2)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await show(app, pilot, sampler)
        assert app.dashboard.too_small.display
        assert app.dashboard.layout_choice.mode == "too-small"
        if size[0] >= len(TOO_SMALL_TEXT):
            assert TOO_SMALL_TEXT in screen_text(app)
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert app.dashboard.layout_choice.mode == "normal"
        assert TOO_SMALL_TEXT not in screen_text(app)


# -- themes ---------------------------------------------------------------------------------------


async def test_no_color_is_legible(sim_sampler, monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    sampler = sim_sampler("faulty", polls=10)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.no_color
        text = screen_text(app)
        assert LOST_TEXT in text
        # trouble is marked in words, not only in colour (shortened when the border is full)
        assert "thermal slowdown!" in text or "HW thermal!" in text
        assert "▕" in text and "█" in text  # bars are drawn with characters


async def test_light_theme_and_toggle(sim_sampler) -> None:
    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, theme="textual-light", start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.theme == "textual-light"
        await show(app, pilot, sampler)

        def value_brightness() -> float:
            style = panel(app, 0)._style(VALUE)
            assert style.color is not None and style.color.triplet is not None
            return sum(style.color.triplet) / (3 * 255)

        assert value_brightness() < 0.4  # dark text on the light background
        app.action_toggle_dark()
        await pilot.pause()
        assert app.current_theme.dark
        assert value_brightness() > 0.6  # re-styled, not left over from the light theme
        app.action_toggle_dark()
        await pilot.pause()
        assert app.theme == "textual-light"
        assert value_brightness() < 0.4
        assert "22:13" in app.dashboard.title_bar.plain_lines[0]


# -- command palette ------------------------------------------------------------------------------


async def test_command_palette_commands(sim_sampler) -> None:
    from gputui.tui.commands import gputui_commands

    sampler = sim_sampler("dgx-h100", polls=2)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        commands = {title: callback for title, _, callback in gputui_commands(app)}
        for title in ("Show GPU 7 only", "Show all GPUs", "Pause display", "Interval 5s", "Help"):
            assert title in commands
        assert "Toggle light/dark theme" in commands and "Quit gputui" in commands
        commands["Show GPU 7 only"]()
        await pilot.pause()
        assert app.dashboard.gpu_filter == 7
        commands["Interval 5s"]()
        assert sampler.interval == 5.0
        commands["Pause display"]()
        assert app.paused


async def test_command_palette_runs_a_gpu_command(sim_sampler) -> None:
    sampler = sim_sampler("dgx-h100", polls=2)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+p")
        await pilot.press(*"show gpu 4")
        for _ in range(20):
            await pilot.pause()
            if "Show GPU 4 only" in screen_text(app):
                break
        await pilot.press("enter")
        await pilot.pause()
        assert app.dashboard.gpu_filter == 4


# -- the sampler contract -------------------------------------------------------------------------


class ThreadedFakeSampler(Sampler):
    """Records start/stop; start() delivers one snapshot from another thread, like the real one."""

    def start(self, on_snapshot, on_error=None) -> None:  # type: ignore[override]
        self.started = True
        snapshot = self.poll()
        thread = threading.Thread(target=on_snapshot, args=(snapshot,))
        thread.start()
        thread.join()
        if on_error is not None:
            err = threading.Thread(target=on_error, args=(RuntimeError("driver hiccup"),))
            err.start()
            err.join()

    def stop(self, timeout: float = 2.0) -> None:
        self.stopped = True


async def test_app_starts_and_stops_the_sampler() -> None:
    from gputui.backends.sim import SimBackend

    sampler = ThreadedFakeSampler(SimBackend("rtx4090"), clock=lambda: T0)
    sampler.open()
    app = GpuTuiApp(sampler)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.pause()
        assert sampler.started
        assert app.dashboard.shown is not None
        assert any("driver hiccup" in n.message for n in app._notifications)
    assert sampler.stopped


async def test_run_handles_sigterm_and_sighup_then_gives_them_back(sim_sampler) -> None:
    """While the app runs, SIGTERM/SIGHUP are the app's (they end it like q; see
    tests/test_terminal.py for real signals); afterwards the previous handlers are back, and
    run() still returns what the app exited with."""
    from gputui.tui.exit_signals import EXIT_SIGNALS

    before = {sig: signal.getsignal(sig) for sig in EXIT_SIGNALS}
    during = {}

    async def auto_pilot(pilot) -> None:
        await pilot.pause()
        during.update({sig: signal.getsignal(sig) for sig in EXIT_SIGNALS})
        pilot.app.exit("done")

    app = GpuTuiApp(sim_sampler("rtx4090", polls=1), start_sampler=False)
    result = await app.run_async(headless=True, size=(120, 40), auto_pilot=auto_pilot)
    assert result == "done"
    assert all(during[sig] != before[sig] for sig in EXIT_SIGNALS), during
    assert {sig: signal.getsignal(sig) for sig in EXIT_SIGNALS} == before


# -- pieces ---------------------------------------------------------------------------------------


def test_changed_spans_merge_close_runs() -> None:
    assert changed_spans("abcdef", "      ", "abcdef", "      ") == []
    assert changed_spans("abcdef", "      ", "abXdeY", "      ") == [(2, 6)]
    assert changed_spans("a" * 20, " " * 20, "X" + "a" * 18 + "Y", " " * 20) == [(0, 1), (19, 20)]
    assert changed_spans("abc", "   ", "abcde", "     ") == [(3, 5)]
    assert changed_spans("abc", "AAA", "abc", "ABA") == [(1, 2)]


class MiniTerminal:
    """Just enough of a terminal to check what an update paints: cursor moves (to a cell, to a
    column, forward), SGR, text."""

    TOKEN = re.compile(r"\x1b\[(\d+);(\d+)H|\x1b\[(\d*)([GC])|\x1b\[([0-9;]*)m|([^\x1b])")
    ATTR_OFF: ClassVar[dict[str, set[str]]] = {
        "22": {"1", "2"},
        "23": {"3"},
        "24": {"4", "21"},
        "25": {"5", "6"},
        "27": {"7"},
    }

    def __init__(self, attrs=(), fg=None, bg=None) -> None:
        self.cells: dict[tuple[int, int], tuple[str, frozenset[str], object, object]] = {}
        self.attrs, self.fg, self.bg = set(attrs), fg, bg
        self.x = self.y = 0

    def feed(self, data: str) -> MiniTerminal:
        for row, col, n, move, sgr, char in self.TOKEN.findall(data):
            if row:
                self.y, self.x = int(row) - 1, int(col) - 1
            elif move == "G":
                self.x = int(n or 1) - 1
            elif move == "C":
                self.x += int(n or 1)
            elif char:
                self.cells[self.x, self.y] = (char, frozenset(self.attrs), self.fg, self.bg)
                self.x += 1
            else:
                self._sgr(sgr.split(";") if sgr else ["0"])
        return self

    def _sgr(self, params: list[str]) -> None:
        i = 0
        while i < len(params):
            p = params[i]
            if p == "0":
                self.attrs, self.fg, self.bg = set(), None, None
            elif p in ("38", "48"):
                n = 3 if params[i + 1] == "5" else 5
                value = tuple(params[i + 1 : i + n])
                if p == "38":
                    self.fg = value
                else:
                    self.bg = value
                i += n - 1
            elif p == "39":
                self.fg = None
            elif p == "49":
                self.bg = None
            elif p in self.ATTR_OFF:
                self.attrs -= self.ATTR_OFF[p]
            elif 30 <= int(p) <= 37 or 90 <= int(p) <= 97:
                self.fg = (p,)
            elif 40 <= int(p) <= 47 or 100 <= int(p) <= 107:
                self.bg = (p,)
            else:
                self.attrs.add(p)
            i += 1


@pytest.mark.parametrize("color_system", ["256", "truecolor", "standard"])
def test_span_compositor_paints_exactly_the_spans_in_the_right_styles(color_system) -> None:
    """Against Textual's own rendering of every cell, from a terminal left in a messy state."""
    import random

    from rich.console import Console

    from gputui.tui.span_compositor import SpanChopsUpdate

    rng = random.Random(7)
    bg = Style(bgcolor="#101020")
    styles = [
        None,
        Style(color="red") + bg,
        Style(color="#30c050", bold=True) + bg,
        Style(color="blue", bgcolor="#202020"),
        Style(color="#e0e0e0", reverse=True) + bg,
        Style(color="default", bgcolor="default"),
        Style(dim=True, italic=True),
        Style(color="#ffaa00") + bg,
    ]
    console = Console(color_system=color_system, force_terminal=True, width=80)
    cs = console._color_system
    for _ in range(50):
        chops, ends, spans, expected = [], [], [], {}
        for y in range(4):
            cuts = sorted(rng.sample(range(1, 60), 3))
            bounds = [0, *cuts, 60]
            line, line_ends = {}, []
            for x0, x1 in itertools.pairwise(bounds):
                segments, width = [], x1 - x0
                while width:
                    n = rng.randint(1, width)
                    segments.append(
                        Segment("".join(rng.choice("ab▕█ 1") for _ in range(n)), rng.choice(styles))
                    )
                    width -= n
                line[x0] = Strip(segments, x1 - x0)
                line_ends.append(x1)
            chops.append(line)
            ends.append(line_ends)
            for _ in range(rng.randint(0, 3)):
                a = rng.randint(0, 58)
                spans.append((y, a, rng.randint(a + 1, 60)))
        spans.sort()
        if not spans:
            continue
        out = SpanChopsUpdate(chops, spans, ends).render_segments(console)
        term = MiniTerminal(attrs={"1", "7"}, fg=("31",), bg=("44",)).feed(out)
        for y, a, b in spans:
            for x in range(a, b):
                start = max(c for c in chops[y] if c <= x)
                cell = chops[y][start].crop(x - start, x - start + 1)
                ((text, style, _),) = list(cell)
                # Textual's rendering of the cell (render_ansi: Style caches _ansi per object,
                # whatever the colour system, so ask for the codes afresh).
                ansi = Strip.render_ansi(style, cs) if style else ""
                painted = f"\x1b[{ansi}m{text}\x1b[0m" if ansi else text
                expected[x, y] = MiniTerminal().feed(f"\x1b[{y + 1};{x + 1}H{painted}").cells[x, y]
        assert term.cells == expected
        assert out.endswith("\x1b[0m") or (term.attrs == set() and term.fg is None)


def test_span_compositor_is_frugal() -> None:
    from rich.console import Console

    from gputui.tui.span_compositor import SpanChopsUpdate

    red, blue = Style(color="red", bgcolor="black"), Style(color="blue", bgcolor="black")
    strip = Strip([Segment("0123456789", red), Segment("abcdefghij", blue)], 20)
    console = Console(color_system="256", force_terminal=True, width=40)
    out = SpanChopsUpdate([{5: strip}], [(0, 17, 20)], [[25]]).render_segments(console)
    # Screen cells 17-19 are the strip's cells 12-14: one move, one full style, the text, reset.
    assert out == "\x1b[1;18H\x1b[0;34;40mcde\x1b[0m"
    # Same style across two spans: set once; a colour change sends only the foreground; a move
    # along the line is forward or to the column, whichever is shorter.
    out = SpanChopsUpdate([{0: strip}], [(0, 1, 2), (0, 5, 6), (0, 12, 13)], [[20]])
    text = out.render_segments(console)
    assert text == "\x1b[1;2H\x1b[0;31;40m1\x1b[6G5\x1b[6C\x1b[34mc\x1b[0m"
    # The cells of one style are written together, wherever they are: a style is set once.
    line = Strip([Segment("ab", red), Segment("cd", blue), Segment("ef", red)], 6)
    chops = [{0: line}, {0: line}]
    out = SpanChopsUpdate(chops, [(0, 0, 6), (1, 0, 6)], [[6], [6]])
    text = out.render_segments(console)
    assert text == (
        "\x1b[1;1H\x1b[0;31;40mab\x1b[5Gef\x1b[2;1Hab\x1b[5Gef\x1b[1;3H\x1b[34mcd\x1b[2;3Hcd\x1b[0m"
    )


async def test_mig_slices_are_listed() -> None:
    from textual.app import App, ComposeResult

    from gputui.tui.widgets.line_widget import MeterPalette

    slices = tuple(
        MigDeviceInfo(0, gi, 0, f"MIG-{gi}", name=name, memory_total_bytes=10 * 1024**3)
        for gi, name in ((1, "3g.40gb"), (2, "3g.40gb"), (3, "1g.10gb"))
    )
    info = GpuInfo(
        0, "NVIDIA A100-SXM4-80GB", "GPU-0", "nvidia", mig_enabled=True, mig_devices=slices
    )
    sample = GpuSample(
        0,
        T0,
        utilization_gpu_pct=50.0,
        memory_used_bytes=30 * 1024**3,
        memory_free_bytes=50 * 1024**3,
        mig_devices=(MigSample("MIG-1", 5 * 1024**3, 40 * 1024**3),),
    )

    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield MeterPalette()
            yield GpuPanel(info, id="p")

    async def run(height: int) -> str:
        app = One()
        async with app.run_test(size=(100, height + 2)) as pilot:
            p = app.query_one(GpuPanel)
            p.styles.height = height
            await pilot.pause()
            p.update_sample(sample)
            await pilot.pause()
            return "\n".join(p.plain_lines)

    normal = await run(6)
    assert "MIG 2×3g.40gb 1×1g.10gb" in normal
    roomy = await run(20)
    slice_rows = [line for line in roomy.splitlines() if line.startswith("│ MIG")]
    assert len(slice_rows) == 3
    assert "5.00/40.0G" in slice_rows[0] and "1g.10gb" in slice_rows[2]


async def test_panel_without_readings_shows_na_not_zero() -> None:
    from textual.app import App, ComposeResult

    from gputui.tui.widgets.line_widget import MeterPalette

    info = GpuInfo(0, "Mystery GPU", "GPU-0", "nvidia")
    sample = GpuSample(0, T0)  # nothing supported

    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield MeterPalette()
            yield GpuPanel(info)

    async def run(height: int) -> str:
        app = One()
        async with app.run_test(size=(100, 30)) as pilot:
            p = app.query_one(GpuPanel)
            p.styles.height = height
            await pilot.pause()
            p.update_sample(sample)
            await pilot.pause()
            return "\n".join(p.plain_lines)

    for height in (1, 6, 20):
        text = await run(height)
        assert "n/a" in text
        assert " 0%" not in text and "0W" not in text


def test_importing_the_app_stays_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys, gputui.tui.app; "
        "print(sorted(m for m in ('torch', 'numpy', 'pynvml', 'amdsmi', 'plotext') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "texts",
    [
        ("0123", "4567", "89"),
        ("ab", "中文", "cd"),
        ("x", "", "yz"),
        # A wide character and a combining mark: as many characters as cells, yet not one each.
        ("ab", "名\u0301", "cd"),
        ("✔ ok", "—", "▲…"),
    ],
)
def test_span_crop_cuts_like_textual(texts) -> None:
    """The compositor's own cropping (by string index for one-cell text) gives Textual's cells."""
    from gputui.tui.span_compositor import _crop

    styles = [Style(color="red"), Style(color="blue"), None]
    strip = Strip([Segment(t, s) for t, s in zip(texts, styles, strict=True)])
    for start in range(strip.cell_length):
        for end in range(start + 1, strip.cell_length + 1):
            ours = [(s.text, s.style) for s in _crop(strip, start, end) if s.text]
            textual = [(s.text, s.style) for s in strip.crop(start, end) if s.text]
            assert ours == textual, (start, end)
