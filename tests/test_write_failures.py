"""Writing that fails: a full disk under a recording (``gputui record`` and the dashboard's R),
and a command's output to a stream that cannot take it (an ASCII locale, ``> /dev/full``)."""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.clock import fake_clock_sampler

from gputui import cli
from gputui.commands.output import OutputError, emit, encodable
from gputui.core.record import Recorder, RecordingWriteError, read_recording
from gputui.tui.recording import RecordingSession


class FullDisk(io.RawIOBase):
    """The real file, until ``room`` bytes are written: then ENOSPC (a short write first, as a
    disk that fills up mid-write gives)."""

    def __init__(self, fd: int, room: int) -> None:
        self.file = os.fdopen(fd, "wb", buffering=0)
        self.room = room

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        data = bytes(data)
        if self.room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = self.file.write(data[: self.room])
        assert n is not None
        self.room -= n
        return n

    def close(self) -> None:
        self.file.close()
        super().close()


@pytest.fixture
def full_disk(monkeypatch):
    """``full_disk(room)``: every Recorder from now on gets ``room`` bytes of disk."""

    def install(room: int) -> None:
        monkeypatch.setattr("gputui.core.record._open_file", lambda fd: FullDisk(fd, room))

    return install


@pytest.mark.parametrize("name", ["r.jsonl", "r.jsonl.gz"])
def test_a_full_disk_stops_the_recording_and_keeps_it_readable(tmp_path, full_disk, name) -> None:
    path = tmp_path / name
    sampler = fake_clock_sampler("faulty")
    room = 40_000 if name.endswith(".gz") else 120_000
    full_disk(room)
    recorder = Recorder(path, node=sampler.node)
    written = []
    with pytest.raises(RecordingWriteError) as exc:
        for _ in range(100):
            snapshot = sampler.poll()
            sampler.clock.now += 1  # type: ignore[attr-defined]
            recorder.write(snapshot)
            written.append(snapshot)
    assert str(exc.value) == f"writing {path} failed: No space left on device"
    with pytest.raises(RecordingWriteError):  # and again, without writing
        recorder.write(snapshot)
    recorder.close()  # no second error: it has been reported
    assert path.stat().st_size == room
    recording = read_recording(path)
    assert recording.truncated and recording.snapshots == written
    assert len(written) >= 1


def test_a_full_disk_before_the_header_leaves_no_file(tmp_path, full_disk) -> None:
    sampler = fake_clock_sampler("a100-pcie")
    full_disk(0)
    path = tmp_path / "r.jsonl.gz"
    with pytest.raises(RecordingWriteError, match="No space left on device"):
        Recorder(path, node=sampler.node)
    assert list(tmp_path.iterdir()) == []
    # Replacing a file: the old one stays when the new one cannot be written.
    path.write_bytes(b"the old recording\n")
    with pytest.raises(RecordingWriteError):
        Recorder(path, node=sampler.node, replace=True)
    assert path.read_bytes() == b"the old recording\n"
    assert list(tmp_path.iterdir()) == [path]


def test_a_full_disk_at_the_gzip_trailer_is_reported_by_close(tmp_path, full_disk) -> None:
    sampler = fake_clock_sampler("a100-pcie")
    path = tmp_path / "r.jsonl.gz"
    full_disk(1 << 30)
    recorder = Recorder(path, node=sampler.node)
    recorder.write(sampler.poll())
    recorder._file.room = 0  # type: ignore[attr-defined]
    with pytest.raises(RecordingWriteError, match="No space left on device"):
        recorder.close()
    recorder.close()  # idempotent
    assert len(read_recording(path).snapshots) == 1


def test_record_command_on_a_full_disk_exits_1(tmp_path, full_disk, capsys) -> None:
    path = tmp_path / "demo.jsonl.gz"
    full_disk(30_000)
    argv = ["record", str(path), "--demo", "--interval", "0.1", "--duration", "20"]
    assert cli.main(argv) == 1
    out, err = capsys.readouterr()
    assert f"gputui record: writing {path} failed: No space left on device" in err
    assert "Traceback" not in err and "internal error" not in err
    assert f", {path.stat().st_size} bytes) to {path}" in out
    assert read_recording(path).snapshots  # what was written is a recording


def test_dashboard_recording_on_a_full_disk(tmp_path, full_disk) -> None:
    """Key R: a disk full from the start leaves no empty file; one that fills up later stops
    the recording through ``on_error`` (the app then says so) and keeps what was written."""
    sampler = fake_clock_sampler("faulty")
    full_disk(0)
    with pytest.raises(OSError, match="No space left on device"):
        RecordingSession(tmp_path / "a.jsonl.gz", node=sampler.node)
    assert list(tmp_path.iterdir()) == []

    full_disk(30_000)
    errors: list[BaseException] = []
    path = tmp_path / "b.jsonl.gz"
    session = RecordingSession(path, node=sampler.node, on_error=errors.append)
    for _ in range(50):
        session.write(sampler.poll())
        sampler.clock.now += 1  # type: ignore[attr-defined]
    assert len(errors) == 1 and isinstance(errors[0], RecordingWriteError)
    assert "No space left on device" in str(errors[0])
    assert session.close() is None
    assert len(read_recording(path).snapshots) == session.count >= 1


def test_dashboard_recording_creates_its_file_safely(tmp_path) -> None:
    sampler = fake_clock_sampler("a100-pcie")
    target = tmp_path / "elsewhere"
    link = tmp_path / "rec.jsonl.gz"
    link.symlink_to(target)
    with pytest.raises(OSError, match="symbolic link"):
        RecordingSession(link, node=sampler.node)
    assert not target.exists()


# -- a command's output ----------------------------------------------------------------------------


def run_gputui(*args: str, env: dict[str, str] | None = None, stdout: Any = subprocess.PIPE):
    full_env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "gputui", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        env=full_env,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def test_an_ascii_output_gets_readable_stand_ins() -> None:
    reference = run_gputui("check", "--demo")
    assert "·".encode() in reference.stdout
    for encoding in ("ascii", "latin-1"):
        result = run_gputui("check", "--demo", env={"PYTHONIOENCODING": encoding})
        assert result.returncode == reference.returncode, result.stderr
        assert b"Traceback" not in result.stderr and b"Error" not in result.stderr
        text = result.stdout.decode(encoding)
        first = text.splitlines()[0]
        assert first.startswith(("HEALTHY", "WARNINGS", "FAILED"))
        if encoding == "ascii":
            assert " - dgx-h100-07 - " in first
        else:
            assert " · dgx-h100-07 · " in first  # latin-1 has the middle dot


def test_stand_ins_for_what_an_encoding_lacks() -> None:
    stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    text = "a · b ✖ c ▲ d ✔ e … f ≥ 3 67°C 5×16 名前 \u2603"
    assert encodable(text, stream) == "a - b x c ^ d + e ... f >= 3 67C 5x16 ???? ?"
    latin = io.TextIOWrapper(io.BytesIO(), encoding="latin-1")
    assert encodable("67°C · ≥", latin) == "67°C · >="
    assert encodable("≥", io.StringIO()) == "≥"  # no encoding: a str buffer takes anything


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
@pytest.mark.parametrize("argv", [["check", "--demo"], ["snapshot", "--demo", "--json"]])
def test_a_full_stdout_exits_2_with_one_line(argv) -> None:
    with open("/dev/full", "w") as full:
        result = run_gputui(*argv, stdout=full)
    assert result.returncode == 2
    assert result.stderr == b"gputui: writing the output failed: No space left on device\n"


def test_emit_to_a_failing_stream_raises_output_error(capsys) -> None:
    class Broken(io.StringIO):
        def flush(self) -> None:
            raise OSError(errno.EIO, "Input/output error")

    with pytest.raises(OutputError) as exc:
        emit("hello", Broken())
    assert exc.value.code == 2
    assert capsys.readouterr().err == "gputui: writing the output failed: Input/output error\n"
