"""Record (key R) and replay controls in the dashboard.

Replay tests drive a stand-in for ``gputui.backends.replay.ReplayBackend`` (the simulated backend
plus the replay attributes the app uses, recording every call), so keys can be checked against the
exact arguments they pass; the app is told to treat it as a replay backend. Recording tests use
the real :class:`gputui.core.record.Recorder` and read the file back.
"""

from __future__ import annotations

import gzip
import json

import pytest

from gputui.backends.sim import SimBackend
from gputui.core.model import Snapshot
from gputui.engine.sampler import Sampler
from gputui.tui.app import GpuTuiApp
from gputui.tui.commands import gputui_commands
from gputui.tui.messages import SnapshotReady
from gputui.tui.recording import RecordingSession, default_record_path
from gputui.tui.replay import ReplayStatus, fmt_hms
from gputui.tui.screens.help import HelpScreen, key_rows
from gputui.tui.widgets.footer import KeyFooter

pytestmark = pytest.mark.usefixtures("tui_env")

T0 = 1_700_000_000.0
HOUR = 3600.0
REPLAY_IDS = {
    "replay.play",
    "replay.back",
    "replay.forward",
    "replay.back_long",
    "replay.forward_long",
    "replay.start",
    "replay.end",
    "replay.slower",
    "replay.faster",
}


class FakeReplay(SimBackend):
    """The replay backend's interface over the simulated node; ``calls`` lists every control."""

    def __init__(self, *, position: float = 0.0, duration: float = HOUR, paused: bool = False):
        super().__init__("dgx-h100", seed=0)
        self.start = T0
        self.end = T0 + duration
        self.duration_s = duration
        self.position = T0 + position
        self.speed = 1.0
        self.paused = paused
        self.calls: list[tuple[str, float | bool]] = []

    @property
    def playback(self) -> FakeReplay:
        return self

    def clock(self) -> float:
        return self.position

    @property
    def at_end(self) -> bool:
        return self.position >= self.end

    def seek(self, timestamp: float) -> None:
        self.calls.append(("seek", timestamp))
        self.position = min(max(timestamp, self.start), self.end)

    def seek_relative(self, seconds: float) -> None:
        self.calls.append(("seek_relative", seconds))
        self.seek(self.position + seconds)
        self.calls.pop()

    def set_speed(self, speed: float) -> None:
        self.calls.append(("set_speed", speed))
        self.speed = speed

    def set_paused(self, paused: bool) -> None:
        self.calls.append(("set_paused", paused))
        self.paused = paused


@pytest.fixture
def fake_replay():
    """``fake_replay(position=..., duration=..., paused=...)`` -> (backend, sampler); the app
    treats the stand-in as a replay backend."""

    def make(**kwargs) -> tuple[FakeReplay, Sampler]:
        backend = FakeReplay(**kwargs)
        sampler = Sampler(backend, interval=1.0, clock=backend.clock)
        sampler.open()
        return backend, sampler

    return make


async def show(app: GpuTuiApp, pilot, sampler: Sampler) -> Snapshot:
    snapshot = sampler.poll()
    app.post_message(SnapshotReady(snapshot))
    await pilot.pause()
    return snapshot


def title(app: GpuTuiApp) -> str:
    return app.dashboard.title_bar.plain_lines[0]


def binding_ids(app: GpuTuiApp) -> set[str]:
    return {b.binding.id for b in app.screen.active_bindings.values() if b.binding.id}


def on(app: GpuTuiApp) -> set[str]:
    """The ids of the bindings that do something here (not off)."""
    return {b.binding.id for b in app.screen.active_bindings.values() if b.binding.id and b.enabled}


def messages(app: GpuTuiApp) -> list[str]:
    return [n.message for n in app._notifications]


# -- replay: title bar ----------------------------------------------------------------------------


def test_replay_status_text_and_hms() -> None:
    status = ReplayStatus(position_s=754.9, duration_s=HOUR, speed=4.0, paused=False)
    assert status.text == "REPLAY 00:12:34 / 01:00:00 ×4 ▶"
    assert ReplayStatus(0, 90, 0.25, True).text == "REPLAY 00:00:00 / 00:01:30 ×0.25 paused"
    assert fmt_hms(100 * HOUR + 61) == "100:01:01"
    assert fmt_hms(-3) == fmt_hms(float("nan")) == "00:00:00"


async def test_title_bar_shows_replay_position_length_speed_and_state(fake_replay) -> None:
    backend, sampler = fake_replay(position=754.0)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        assert app.replay is backend
        assert "REPLAY 00:12:34 / 01:00:00 ×1 ▶" in title(app)  # before the first reading too
        assert "every" not in title(app)  # the speed, not the interval
        backend.position += 6
        await show(app, pilot, sampler)
        assert "REPLAY 00:12:40 / 01:00:00 ×1 ▶" in title(app)
        assert "22:26:00" in title(app)  # the reading's (recorded) time
        await pilot.press("greater_than_sign", "greater_than_sign", "space")
        assert "REPLAY 00:12:40 / 01:00:00 ×4 paused" in title(app)


async def test_live_title_bar_has_no_replay_text(sim_sampler) -> None:
    app = GpuTuiApp(sim_sampler("dgx-h100", polls=1), start_sampler=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        assert app.replay is None
        assert "REPLAY" not in title(app) and "every 1s" in title(app)


# -- replay: keys ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (["right"], [("seek_relative", 10.0)]),
        (["left"], [("seek_relative", -10.0)]),
        (["shift+right", "right_square_bracket"], [("seek_relative", 60.0)] * 2),
        (["shift+left", "left_square_bracket"], [("seek_relative", -60.0)] * 2),
        (["home"], [("seek", T0)]),
        (["end"], [("seek", T0 + HOUR)]),
        (["greater_than_sign", "full_stop"], [("set_speed", 2.0), ("set_speed", 4.0)]),
        (["less_than_sign", "comma"], [("set_speed", 0.5), ("set_speed", 0.25)]),
        (["space", "space"], [("set_paused", True), ("set_paused", False)]),
    ],
)
async def test_replay_keys_call_the_backend(fake_replay, keys, expected) -> None:
    backend, sampler = fake_replay(position=600.0)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(app, pilot, sampler)  # the process table has focus and rows
        await pilot.press(*keys)
        assert backend.calls == expected
        assert app.paused is False  # space is the replay's play/pause, not the display pause


async def test_speed_is_clamped_to_the_backend_range(fake_replay) -> None:
    backend, sampler = fake_replay()
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press(*["greater_than_sign"] * 8)
        assert backend.speed == 64.0
        await pilot.press(*["less_than_sign"] * 10)
        assert backend.speed == 0.25
        assert "×0.25" in title(app)
        assert messages(app) == []  # the title bar shows the speed: no notice


async def test_a_seek_clears_the_history_and_asks_for_a_reading(fake_replay, monkeypatch) -> None:
    backend, sampler = fake_replay(position=600.0)
    app = GpuTuiApp(sampler, start_sampler=False)
    refreshes: list[bool] = []
    monkeypatch.setattr(sampler, "refresh_now", lambda: refreshes.append(True))
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(3):
            await show(app, pilot, sampler)
            backend.position += 1
        assert len(sampler.history.gpu_series(0, "utilization_gpu_pct")) == 3
        await pilot.press("left")
        assert sampler.history.gpu_series(0, "utilization_gpu_pct") == []
        assert refreshes == [True]
        assert "REPLAY 00:09:53" in title(app)  # 603 - 10 s, shown before the next reading
        await show(app, pilot, sampler)
        assert len(sampler.history.gpu_series(0, "utilization_gpu_pct")) == 1


async def test_replay_keys_are_hidden_outside_replay(sim_sampler) -> None:
    sampler = sim_sampler("dgx-h100", polls=1)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        ids = binding_ids(app)
        assert not ids & REPLAY_IDS
        assert {"pause", "record"} <= ids
        assert not [row for row in key_rows(app.dashboard) if "Replay" in row[1]]
        assert not [t for t, _, _ in gputui_commands(app) if "eplay" in t]
        await pilot.press("Z")  # the display pause (space tags processes on the dashboard)
        assert app.paused is True


async def test_replay_mode_bindings_help_and_palette(fake_replay) -> None:
    _, sampler = fake_replay()
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(app, pilot, sampler)
        ids = binding_ids(app)
        assert ids >= REPLAY_IDS
        assert "pause" not in ids  # no display pause: space plays and pauses the replay
        # Read-only: signals, the probe and recording are off, and the footer says why.
        assert {"record", "signal", "probe"} <= ids and not {"record", "signal", "probe"} & on(app)
        assert "k p R off: replay" in app.screen.query_one(KeyFooter).shown_keys
        assert app.readonly and app.dashboard.readonly
        rows = dict(key_rows(app.dashboard))
        assert rows["←"] == "Replay: back 10 s"
        assert rows["shift+→ ]"] == "Replay: forward 1 min"
        assert rows["home"] == "Replay: go to the start"
        assert rows["< ,"] == "Replay: half the speed"
        assert rows["space"] == "Play/pause the replay"
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert "history plots start empty" in app.screen.help_text.plain
        await pilot.press("escape")
        titles = [t for t, _, _ in gputui_commands(app)]
        assert "Pause replay" in titles and "Replay back 10 s" in titles
        assert "Pause display" not in titles and "Start recording" not in titles


async def test_cursor_keys_belong_to_the_filter_while_typing(fake_replay) -> None:
    backend, sampler = fake_replay(position=600.0)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(app, pilot, sampler)
        await pilot.press("slash", "a", "b", "left", "home", "x")
        assert app.dashboard.filter_input.value == "xab"
        assert backend.calls == []
        await pilot.press("enter", "right")  # back on the table: the key seeks again
        assert backend.calls == [("seek_relative", 10.0)]


async def test_cursor_keys_do_not_seek_from_another_screen(fake_replay) -> None:
    backend, sampler = fake_replay(position=600.0)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(app, pilot, sampler)
        await pilot.press("h", "right", "end")  # the findings screen
        assert backend.calls == []
        await pilot.press("greater_than_sign")  # speed works everywhere
        assert backend.calls == [("set_speed", 2.0)]


async def test_the_end_of_the_recording_pauses_and_space_plays_it_again(fake_replay) -> None:
    backend, sampler = fake_replay(position=HOUR - 1)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await show(app, pilot, sampler)
        assert backend.calls == []
        backend.position = backend.end
        await show(app, pilot, sampler)
        assert backend.calls == [("set_paused", True)]
        assert "REPLAY 01:00:00 / 01:00:00 ×1 end" in title(app)
        assert messages(app) == []  # the title bar says it: no notice
        await show(app, pilot, sampler)
        assert backend.calls == [("set_paused", True)]  # paused once
        await pilot.press("space")
        assert backend.calls[1:] == [("seek", T0), ("set_paused", False)]
        assert "REPLAY 00:00:00 / 01:00:00 ×1 ▶" in title(app)


async def test_a_burst_of_replay_keys_at_the_end_gives_no_notice(fake_replay) -> None:
    """Speed, seeks and the end of the recording are in the title bar: no toasts for them (a
    burst of them left pieces of old toasts on the panels)."""
    backend, sampler = fake_replay(position=HOUR - 1)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await show(app, pilot, sampler)
        backend.position = backend.end
        await show(app, pilot, sampler)
        keys = ["greater_than_sign", "less_than_sign", "right", "left", "full_stop", "end"] * 3
        await pilot.press(*keys)
        await show(app, pilot, sampler)
        assert messages(app) == []
        assert "×8 end" in title(app)


async def test_after_a_seek_the_findings_there_give_no_notice(fake_replay) -> None:
    """A seek lands among findings the title bar already counts: no notice for them; one that
    comes up while the replay plays on gets its notice."""
    import dataclasses

    from tests.factories import T

    from gputui.core.model import Finding

    def finding(gpu: int) -> Finding:
        return Finding("gpu_lost", "fail", "is lost", "", gpu, f"gpu_lost:{gpu}", T, T, True)

    async def show_with(app, pilot, sampler, findings) -> None:
        snapshot = dataclasses.replace(sampler.poll(), findings=findings)
        app.post_message(SnapshotReady(snapshot))
        await pilot.pause()

    _, sampler = fake_replay(position=600.0)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await show_with(app, pilot, sampler, ())
        await pilot.press("right_square_bracket")
        await show_with(app, pilot, sampler, (finding(1), finding(2)))
        assert messages(app) == []
        await show_with(app, pilot, sampler, (finding(1), finding(2), finding(3)))
        assert messages(app) == ["is lost"]


async def test_replay_disables_signals_and_recording(fake_replay, tmp_path) -> None:
    _, sampler = fake_replay()
    app = GpuTuiApp(sampler, start_sampler=False, record_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(app, pilot, sampler)
        await pilot.press("R", "k")
        assert app.recording is None
        assert list(tmp_path.iterdir()) == []
        assert app.screen is app.dashboard  # no signal dialog
        app.action_toggle_record()  # the palette and scripts are refused too
        assert app.recording is None


# -- recording ------------------------------------------------------------------------------------


def read_lines(path) -> list[dict]:
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f]


def test_default_record_path(tmp_path) -> None:
    path = default_record_path("gpu/node 7", tmp_path, when=T0)
    assert path.parent == tmp_path
    assert path.name.startswith("gputui-gpu_node_7-2023") and path.name.endswith(".jsonl.gz")
    path.touch()
    second = default_record_path("gpu/node 7", tmp_path, when=T0)
    assert second != path and second.name.endswith("-2.jsonl.gz")


async def test_r_starts_and_stops_recording(sim_sampler, tmp_path) -> None:
    sampler = sim_sampler("dgx-h100", polls=1)
    app = GpuTuiApp(sampler, start_sampler=False, record_dir=tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await show(app, pilot, sampler)
        assert "● REC" not in title(app)
        await pilot.press("R")
        session = app.recording
        assert session is not None
        assert session.write in sampler._listeners
        assert "● REC" in title(app)
        path = session.path
        assert path.parent == tmp_path and path.name.startswith("gputui-dgx-h100-")
        assert f"recording to {path}" in messages(app)
        for _ in range(3):
            sampler.clock.now += 1  # type: ignore[attr-defined]
            await show(app, pilot, sampler)
        await pilot.press("R")
        assert app.recording is None
        assert session.write not in sampler._listeners
        assert "● REC" not in title(app)
        assert f"recorded 3 readings to {path}" in messages(app)
        lines = read_lines(path)
        assert lines[0]["type"] == "gputui-recording"
        assert [line["type"] for line in lines[1:]] == ["snapshot"] * 3
        sampler.poll()  # no longer recorded
        assert len(read_lines(path)) == 4


async def test_the_recording_is_closed_on_exit(sim_sampler, tmp_path) -> None:
    sampler = sim_sampler("dgx-h100", polls=1)
    app = GpuTuiApp(sampler, start_sampler=False, record_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("R")
        session = app.recording
        assert session is not None
        sampler.poll()
    assert session.write not in sampler._listeners
    assert session._closed
    assert len(read_lines(session.path)) == 2  # complete gzip stream: header and one reading


async def test_an_unwritable_directory_is_an_error_not_a_crash(sim_sampler, tmp_path) -> None:
    sampler = sim_sampler("dgx-h100", polls=1)
    app = GpuTuiApp(sampler, start_sampler=False, record_dir=tmp_path / "missing")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("R")
        assert app.recording is None
        assert sampler._listeners == []
        errors = [n for n in app._notifications if n.severity == "error"]
        assert errors and "could not record to" in errors[0].message
        assert "● REC" not in title(app)


async def test_a_failing_write_stops_the_recording(sim_sampler, tmp_path, monkeypatch) -> None:
    class FullDisk:
        def __init__(self, path, **kwargs) -> None:
            self.closed = False

        def write(self, snapshot) -> None:
            raise OSError(28, "No space left on device")

        def close(self) -> None:
            self.closed = True

    monkeypatch.setattr("gputui.core.record.Recorder", FullDisk)
    sampler = sim_sampler("dgx-h100", polls=1)
    app = GpuTuiApp(sampler, start_sampler=False, record_dir=tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.press("R")
        session = app.recording
        assert session is not None
        await show(app, pilot, sampler)  # the listener fails on the polling thread
        await pilot.pause()
        assert app.recording is None
        assert session.write not in sampler._listeners
        assert session._recorder.closed
        assert any("No space left" in m for m in messages(app))
        assert "● REC" not in title(app)


async def test_palette_starts_and_stops_recording(sim_sampler, tmp_path) -> None:
    sampler = sim_sampler("dgx-h100", polls=1)
    app = GpuTuiApp(sampler, start_sampler=False, record_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        dict((t, cb) for t, _, cb in gputui_commands(app))["Start recording"]()
        await pilot.pause()
        assert app.recording is not None
        dict((t, cb) for t, _, cb in gputui_commands(app))["Stop recording"]()
        await pilot.pause()
        assert app.recording is None
        assert "Start recording" in [t for t, _, _ in gputui_commands(app)]


def test_session_ignores_writes_after_close(sim_sampler, tmp_path) -> None:
    sampler = sim_sampler("dgx-h100", polls=1)
    session = RecordingSession(tmp_path / "x.jsonl.gz", node=sampler.node)
    session.write(sampler.poll())
    assert session.close() is None
    session.write(sampler.poll())
    assert session.count == 1 and session.close() is None


# -- the real replay backend ----------------------------------------------------------------------

READINGS = 180


class Wall:
    """The replay's wall clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def recording(tmp_path, sim_sampler):
    """Three minutes of the simulated DGX, one reading a second, recorded by the real Recorder."""
    from gputui.core.record import Recorder

    sampler = sim_sampler("dgx-h100")
    path = tmp_path / "session.jsonl.gz"
    with Recorder(path) as recorder:
        sampler.add_listener(recorder.write)
        for _ in range(READINGS):
            sampler.poll()
            sampler.clock.now += 1  # type: ignore[attr-defined]
    return path


async def test_replaying_a_real_recording(recording) -> None:
    from gputui.backends.replay import ReplayBackend
    from gputui.engine.session import sampler_for

    wall = Wall()
    backend = ReplayBackend(recording, start_paused=True, monotonic=wall)
    sampler = sampler_for(backend, backend.open())
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await show(app, pilot, sampler)
        assert app.replay is backend and app.readonly
        assert "REPLAY 00:00:00 / 00:02:59 ×1 paused" in title(app)
        assert not on(app) & {"record", "pause", "signal"}
        await pilot.press("right", "right_square_bracket")
        assert backend.position == T0 + 70
        snapshot = await show(app, pilot, sampler)
        assert snapshot.timestamp == T0 + 70
        assert "REPLAY 00:01:10 / 00:02:59 ×1 paused" in title(app)
        assert len(sampler.history.gpu_series(0, "utilization_gpu_pct")) == 1  # rebuilt
        await pilot.press("greater_than_sign", "full_stop", "greater_than_sign", "space")
        assert backend.speed == 8 and not backend.paused
        wall.now += 2
        await show(app, pilot, sampler)
        assert "REPLAY 00:01:26 / 00:02:59 ×8 ▶" in title(app)
        await pilot.press("left")
        assert backend.position == T0 + 76
        await pilot.press("end")
        await show(app, pilot, sampler)
        assert backend.paused and backend.at_end
        assert "REPLAY 00:02:59 / 00:02:59 ×8 end" in title(app)
        await pilot.press("space")
        assert backend.position == T0 and not backend.paused
        wall.now += 1
        await pilot.press("space", "home")
        assert backend.position == T0 and backend.paused


def test_a_live_session_does_not_import_replay_or_recording() -> None:
    """Start-up is budgeted: the live dashboard must not load the replay and recording code."""
    import subprocess
    import sys

    script = """
import asyncio, sys
from tests.fakes.clock import fake_clock_sampler
from gputui.tui.app import GpuTuiApp

async def main():
    app = GpuTuiApp(fake_clock_sampler("dgx-h100", polls=2), start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()

asyncio.run(main())
print(sorted(m for m in sys.modules if m in ("gputui.core.record", "gputui.backends.replay")))
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
