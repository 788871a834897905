"""Recordings: lossless round trip (plain and gzip), compact lines, truncated and corrupt files,
errors naming the line, a recording being written."""

from __future__ import annotations

import gzip
import json

import pytest
from tests.factories import lines_of, record
from tests.fakes.clock import fake_clock_sampler

from gputui.core.model import Snapshot
from gputui.core.record import (
    Recorder,
    RecordingError,
    RecordingReader,
    parse_duration,
    read_recording,
)


@pytest.mark.parametrize("name", ["faulty.jsonl", "faulty.jsonl.gz"])
def test_round_trip_is_lossless(tmp_path, name) -> None:
    path = tmp_path / name
    originals = record(path)
    assert (path.read_bytes()[:2] == b"\x1f\x8b") == name.endswith(".gz")
    recording = read_recording(path)
    assert not recording.truncated
    assert recording.node == originals[0].node
    assert len(recording.snapshots) == 30
    for got, want in zip(recording.snapshots, originals, strict=True):
        assert got == want
    # The test covers what matters: findings, events, a lost GPU, processes, links.
    assert any(s.events for s in originals)
    assert any(f.rule == "gpu_lost" for f in originals[-1].findings)
    assert any(g.lost for g in originals[-1].gpus)
    assert all(s.processes and s.host for s in originals)
    assert any(g.links for g in originals[-1].gpus)
    assert recording.duration_s == 29.0


def test_lines_are_compact_and_carry_no_node(tmp_path) -> None:
    path = tmp_path / "r.jsonl"
    record(path, readings=5)
    header, *rest = lines_of(path)
    head = json.loads(header)
    assert head["type"] == "gputui-recording" and head["version"] == 1
    assert head["schema_version"] == 1 and head["node"]["hostname"] == "dgx-h100-13"
    assert rest[-1] == b""  # every line ends with a newline
    for line in rest[:-1]:
        assert line.startswith(b'{"type":"snapshot","timestamp":')
        assert b"null" not in line and b'"node"' not in line


def test_truncated_last_line_is_left_out(tmp_path) -> None:
    path = tmp_path / "cut.jsonl"
    originals = record(path, readings=10)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 500])  # the last line loses its end
    recording = read_recording(path)
    assert recording.truncated
    assert recording.snapshots == originals[:9]


def test_truncated_gzip_stream_replays_up_to_its_last_complete_line(tmp_path) -> None:
    path = tmp_path / "cut.jsonl.gz"
    originals = record(path, readings=10)
    data = path.read_bytes()
    for cut in (len(data) - 8, len(data) - 300, len(data) // 2):  # the trailer, then data
        path.write_bytes(data[:cut])
        snapshots = read_recording(path).snapshots
        assert snapshots == originals[: len(snapshots)]
        assert len(snapshots) >= (10 if cut == len(data) - 8 else 1)


def test_a_recording_being_written_reads_up_to_its_last_line(tmp_path) -> None:
    """Each line is flushed (gzip: a sync flush), so a reader sees complete lines at once."""
    path = tmp_path / "live.jsonl.gz"
    sampler = fake_clock_sampler("dgx-h100")
    recorder = Recorder(path)
    reader = RecordingReader(path)
    seen: list[Snapshot] = []
    try:
        for i in range(1, 6):
            recorder.write(sampler.poll())
            sampler.clock.now += 1.0  # type: ignore[attr-defined]
            seen += reader.read_new()
            assert len(seen) == i
        assert read_recording(path).snapshots == seen
    finally:
        recorder.close()
    assert reader.read_new() == []


def test_corrupt_line_in_the_middle_names_the_line(tmp_path) -> None:
    path = tmp_path / "bad.jsonl"
    record(path, readings=8)
    lines = lines_of(path)
    lines[4] = lines[4][: len(lines[4]) // 2]  # line 5 cut in half
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(RecordingError) as exc:
        read_recording(path)
    assert exc.value.line == 5
    assert "line 5: bad JSON" in str(exc.value) and str(path) in str(exc.value)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"type":"snapshot","timestamp":"noon","gpus":[]}', "'timestamp' must be a number"),
        (b'{"type":"snapshot","timestamp":1.0,"gpus":7}', "'gpus' must be a list"),
        (b'{"type":"snapshot","timestamp":1.0,"gpus":[{"index":0}]}', "does not fit the schema"),
        (b"[1, 2]", "must be a JSON object"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_line_that_does_not_fit_the_schema_names_the_line(tmp_path, line, message) -> None:
    path = tmp_path / "bad.jsonl.gz"
    record(path, readings=4)
    lines = lines_of(path)
    lines.insert(3, line)  # becomes line 4
    path.write_bytes(gzip.compress(b"\n".join(lines)))
    with pytest.raises(RecordingError, match=message) as exc:
        read_recording(path)
    assert exc.value.line == 4 and "line 4:" in str(exc.value)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b'{"hello": 1}\n{"type":"snapshot"}\n',
        b"not json at all\n",
        b"\x00\x01\x02binary" * 100,
        gzip.compress(b"# some other log\nline 2\n", mtime=0),  # same test id every run
        b'{"type":"gputui-recording","version":9,"schema_version":1,"node":{}}\n',
    ],
)
def test_not_a_recording_names_line_1(tmp_path, content) -> None:
    path = tmp_path / "other.jsonl"
    path.write_bytes(content)
    with pytest.raises(RecordingError) as exc:
        read_recording(path)
    assert exc.value.line == 1 and "line 1:" in str(exc.value)


def test_header_written_at_once_when_the_node_is_known(tmp_path) -> None:
    sampler = fake_clock_sampler("a100-pcie")
    path = tmp_path / "empty.jsonl"
    Recorder(path, node=sampler.node, started=5.0).close()
    recording = read_recording(path)
    assert recording.node == sampler.node and recording.snapshots == []
    assert recording.header["started"] == 5.0


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90), ("30s", 30), ("10m", 600), ("1h", 3600), ("1h30m", 5400), ("1m30s", 90)],
)
def test_durations(text, seconds) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "1h30", "-5", "1d"])
def test_bad_durations(text) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)
