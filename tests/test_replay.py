"""Replay: the ReplayBackend's clock and controls, reads at the position, events once, a growing
file, and the command line (record, snapshot --replay --at, check --replay, bad files)."""

from __future__ import annotations

import json
import signal

import pytest
from tests.factories import lines_of, record
from tests.fakes.clock import T0, fake_clock_sampler

from gputui import cli
from gputui.backends import create_backend
from gputui.backends.base import BackendUnavailable
from gputui.backends.replay import ReplayBackend
from gputui.core.codec import snapshot_to_json
from gputui.core.record import Recorder, read_recording
from gputui.engine.session import sampler_for


class Wall:
    """A fake monotonic clock for playback."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    """A 30-reading recording of the faulty node (T0 .. T0+29) and its original snapshots."""
    path = tmp_path_factory.mktemp("rec") / "faulty.jsonl.gz"
    return path, record(path, readings=30)


def open_replay(path, **kwargs):
    wall = Wall()
    backend = ReplayBackend(path, monotonic=wall, **kwargs)
    node = backend.open()
    return backend, node, wall


def test_clock_advances_with_wall_time_and_speed(faulty) -> None:
    path, _ = faulty
    backend, _node, wall = open_replay(path)
    assert backend.name == "replay:faulty.jsonl.gz"
    assert (backend.start, backend.end, backend.duration_s) == (T0, T0 + 29, 29.0)
    assert backend.position == T0 and backend.clock() == T0 and not backend.paused
    wall.now += 2.5
    assert backend.position == T0 + 2.5
    assert backend.clock() == T0 + 2  # the recorded reading at the position
    assert backend.set_speed(4) == 4
    wall.now += 1
    assert backend.position == T0 + 6.5
    assert backend.set_speed(1000) == 64 and backend.set_speed(0.01) == 0.25
    backend.set_speed(1)
    backend.set_paused(True)
    wall.now += 10
    assert backend.paused and backend.position == T0 + 6.5
    backend.set_paused(False)
    wall.now += 1
    assert backend.position == T0 + 7.5


def test_seek_is_clamped_and_playback_stops_at_the_end(faulty) -> None:
    path, _ = faulty
    backend, _node, wall = open_replay(path, start_paused=True)
    assert backend.paused
    assert backend.seek(T0 + 12) == T0 + 12
    assert backend.seek_relative(-5) == T0 + 7
    assert backend.seek(T0 - 100) == T0
    assert backend.seek_relative(1e6) == T0 + 29 and backend.at_end
    backend.seek(T0 + 20)
    backend.set_paused(False)
    assert not backend.at_end
    wall.now += 1000
    assert backend.at_end and backend.position == T0 + 29
    wall.now += 5
    assert backend.position == T0 + 29  # stays at the end
    assert backend.seek_relative(-4) == T0 + 25  # and plays on after a seek back
    wall.now += 1
    assert backend.position == T0 + 26


def test_reads_return_the_recorded_reading_at_the_position(faulty) -> None:
    path, originals = faulty
    backend, node, _wall = open_replay(path, start_paused=True)
    assert node == originals[0].node
    sampler = sampler_for(backend, node)
    for offset in (0, 17, 3, 29, 11.6):  # backwards too: nothing carried from a later reading
        backend.seek(T0 + offset)
        snapshot = sampler.poll()
        want = originals[int(offset)]
        assert snapshot.timestamp == want.timestamp
        assert snapshot.gpus == want.gpus
        assert snapshot.processes == want.processes
        assert snapshot.host == want.host
        assert snapshot.findings == want.findings  # the recorded findings, not judged again
        assert snapshot.node == want.node


def test_events_are_returned_once_and_not_after_a_backward_seek(faulty) -> None:
    path, originals = faulty
    backend, node, wall = open_replay(path)
    sampler = sampler_for(backend, node)
    backend.set_speed(3)
    events = []
    while True:
        events += sampler.poll().events
        if backend.at_end:
            break
        wall.now += 1  # 3 recorded seconds per poll: readings are skipped, events are not
    assert events == [e for s in originals for e in s.events]
    assert events, "the faulty node has XID and ECC events"
    backend.seek(T0)
    assert sampler.poll().events == ()


def test_a_replay_cannot_signal_processes(faulty) -> None:
    backend, _node, _wall = open_replay(faulty[0])
    with pytest.raises(PermissionError, match="a replay cannot signal processes"):
        backend.signal_process(1234, signal.SIGTERM)


def test_replay_follows_a_recording_being_written(tmp_path) -> None:
    path = tmp_path / "live.jsonl"
    sampler = fake_clock_sampler("dgx-h100")
    with Recorder(path) as recorder:
        for _ in range(3):
            recorder.write(sampler.poll())
            sampler.clock.now += 1  # type: ignore[attr-defined]
        backend, node, wall = open_replay(path)
        assert backend.readings == 3
        wall.now += 100
        assert backend.at_end and backend.clock() == T0 + 2
        for _ in range(3):
            recorder.write(sampler.poll())
            sampler.clock.now += 1  # type: ignore[attr-defined]
        sampler_for(backend, node).poll()  # a read at the end picks up the new lines
        assert backend.readings == 6 and backend.end == T0 + 5


def test_create_backend_replay_spec_and_bad_files(tmp_path, faulty) -> None:
    assert isinstance(create_backend(f"replay:{faulty[0]}"), ReplayBackend)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("hello\n")
    with pytest.raises(BackendUnavailable, match="line 1: not a gputui recording"):
        ReplayBackend(bad).open()
    with pytest.raises(BackendUnavailable, match="cannot read"):
        ReplayBackend(tmp_path / "missing.jsonl").open()


# -- command line ----------------------------------------------------------------------------------


def test_record_command_on_the_demo_node(tmp_path, capsys) -> None:
    path = tmp_path / "demo.jsonl.gz"
    code = cli.main(["record", str(path), "--demo", "--interval", "0.1", "--duration", "0.5"])
    assert code == 0
    out, err = capsys.readouterr()
    assert f"to {path}" in out and "Recorded" in out and "recording dgx-h100-07" in err
    recording = read_recording(path)
    assert recording.node.backend == "sim:dgx-h100"
    assert 2 <= len(recording.snapshots) <= 10
    assert f"Recorded {len(recording.snapshots)} readings" in out
    # A second run does not overwrite it by accident.
    assert cli.main(["record", str(path), "--demo", "--duration", "1"]) == 2
    assert "exists" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["record", "x.jsonl", "--duration", "soon"], "is not a duration"),
        (["record", "x.jsonl", "--duration", "0"], "more than 0"),
        (["snapshot", "--at", "10"], "--at needs --replay"),
        (["--demo", "--replay", "x.jsonl"], "cannot be combined"),
        (["snapshot", "--replay", "x.jsonl", "--at", "noonish"], "is not a time"),
    ],
)
def test_bad_record_and_replay_arguments(capsys, argv, message) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("at", "offset"),
    [
        (None, 29),  # the last reading
        ("10", 10),
        ("12.5", 12),  # between readings: the one before
        ("22:13:25", 5),  # T0 is 22:13:20 UTC
        ("2023-11-14T22:13:27+00:00", 7),
        ("00:00:07", None),  # not on the recording's day
    ],
)
def test_snapshot_replay_at(faulty, capsys, utc, at, offset) -> None:
    argv = ["snapshot", "--replay", str(faulty[0]), "--json"] + (["--at", at] if at else [])
    code = cli.main(argv)
    out, err = capsys.readouterr()
    if offset is None:
        assert code == 2 and "not in the recording" in err
        return
    assert code == 0, err
    data = json.loads(out)
    assert data["timestamp"] == T0 + offset
    assert data["node"]["hostname"] == "dgx-h100-13"
    assert data["findings"] == [
        f for f in json.loads(snapshot_to_json(faulty[1][offset]))["findings"]
    ]


def test_snapshot_replay_at_past_the_end_exits_2(faulty, capsys) -> None:
    assert cli.main(["snapshot", "--replay", str(faulty[0]), "--at", "1h"]) == 2
    assert "not in the recording" in capsys.readouterr().err


def test_check_replay_fails_naming_the_lost_gpu(faulty, capsys) -> None:
    code = cli.main(["check", "--replay", str(faulty[0])])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out.startswith("FAILED (") and "sim:faulty" in out.splitlines()[0]
    assert "GPU 3 is lost (fell off the bus)" in out
    assert "replayed 30 readings" in out and "kernel log: not read for a recording" in out
    cli.main(["check", "--replay", str(faulty[0]), "--gpus", "0,1", "--json"])
    assert json.loads(capsys.readouterr().out)["checked_gpus"] == [0, 1]


def test_check_replay_of_a_healthy_recording_exits_0(tmp_path, capsys) -> None:
    path = tmp_path / "calm.jsonl"
    record(path, readings=5, scenario="a100-pcie")
    assert cli.main(["check", "--replay", str(path)]) == 0, capsys.readouterr()


def test_bad_files_exit_2_naming_the_line(tmp_path, faulty, capsys) -> None:
    corrupt = tmp_path / "corrupt.jsonl"
    lines = lines_of(faulty[0])
    lines[6] = b'{"type":"snapshot","timestamp":1700000005.0,"gpus":[{"index":0'
    corrupt.write_bytes(b"\n".join(lines))
    assert cli.main(["check", "--replay", str(corrupt)]) == 2
    err = capsys.readouterr().err
    assert "line 7" in err and "Traceback" not in err
    other = tmp_path / "notes.txt"
    other.write_text("shopping list\n")
    for argv in (["snapshot"], ["check"], ["topo"]):
        assert cli.main([*argv, "--replay", str(other)]) == 2
        assert "line 1: not a gputui recording" in capsys.readouterr().err
    assert cli.main(["snapshot", "--replay", str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_truncated_recording_replays_up_to_its_last_complete_line(tmp_path, faulty, capsys) -> None:
    cut = tmp_path / "cut.jsonl.gz"
    data = faulty[0].read_bytes()
    cut.write_bytes(data[: len(data) * 2 // 3])
    assert cli.main(["snapshot", "--replay", str(cut), "--json"]) == 0
    last = json.loads(capsys.readouterr().out)["timestamp"]
    assert T0 + 5 <= last < T0 + 29
