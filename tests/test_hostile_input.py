"""A recording is input from anywhere: a field of the wrong type, JSON nested 100,000 deep, a
number out of range, a line of 40 MB, a gzip bomb, escape sequences in names. Every reader path
says what is wrong and where (exit 2), never a traceback, and memory stays bounded."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.factories import lines_of, record
from tests.fakes.clock import T0

from gputui import cli
from gputui.backends.replay import ReplayBackend
from gputui.core.record import MAX_LINE_BYTES, RecordingError, read_recording

READINGS = 4
ESC = "\x1b"


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> list[bytes]:
    """The lines of a 4-reading recording of the faulty node (the last one empty)."""
    path = tmp_path_factory.mktemp("good") / "faulty.jsonl"
    record(path, readings=READINGS)
    return lines_of(path)


def write_lines(path: Path, lines: list[bytes]) -> Path:
    data = b"\n".join(lines)
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


def mutated(good: list[bytes], index: int, change: Callable[[dict[str, Any]], None]) -> list[bytes]:
    lines = list(good)
    data = json.loads(lines[index])
    change(data)
    lines[index] = json.dumps(data, separators=(",", ":")).encode()
    return lines


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def run_gputui(*args: str, env: dict[str, str] | None = None, **kwargs: Any):
    full_env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "gputui", *args],
        capture_output=True,
        env=full_env,
        stdin=subprocess.DEVNULL,
        timeout=120,
        **kwargs,
    )


# -- fields of the wrong type ----------------------------------------------------------------------


def _set(*path: Any, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        target: Any = data
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value

    return change


WRONG_TYPES = [
    (_set("processes", 0, "command", value=123), "processes[0].command: expected a string"),
    (_set("gpus", 0, "utilization_gpu_pct", value="99"), "gpus[0].utilization_gpu_pct"),
    (_set("findings", 0, "severity", value="bogus"), "findings[0].severity: expected one of"),
    (_set("host", "load_average", value=[1.0, 2.0]), "host.load_average: expected a list of 3"),
    (_set("gpus", 0, "index", value="0"), "gpus[0].index: expected an integer"),
    (_set("events", value=[{"gpu_index": 0}]), "events[0]"),
    (_set("host", value=[]), "'host' must be an object"),
]


@pytest.mark.parametrize(("change", "field"), WRONG_TYPES, ids=[f for _, f in WRONG_TYPES])
def test_a_field_of_the_wrong_type_names_the_line_and_the_field(
    tmp_path, good, capsys, change, field
) -> None:
    """Line 2 is the first reading: what topo and ``snapshot --at 0`` show, and what check and
    read_recording decode first."""
    path = write_lines(tmp_path / "bad.jsonl.gz", mutated(good, 1, change))
    with pytest.raises(RecordingError, match=re.escape(field)) as exc:
        read_recording(path)
    assert exc.value.line == 2
    # Replay indexes the line by its timestamp and reports it when the reading is shown.
    backend = ReplayBackend(path)
    backend.open()
    with pytest.raises(RecordingError, match=re.escape(field)) as exc:
        backend.snapshot_at(T0)
    assert exc.value.line == 2
    for argv in (
        ["snapshot", "--replay", str(path), "--at", "0"],
        ["snapshot", "--replay", str(path), "--at", "0", "--json"],
        ["check", "--replay", str(path)],
        ["check", "--replay", str(path), "--json"],
        ["topo", "--replay", str(path)],
        ["topo", "--replay", str(path), "--json"],
    ):
        code, out, err = run(argv, capsys)
        assert code == 2, (argv, err)
        assert "line 2:" in err and field in err and "internal error" not in err, (argv, err)
        assert out == ""


def test_a_header_of_the_wrong_type_names_line_1(tmp_path, good, capsys) -> None:
    lines = mutated(good, 0, lambda h: h["node"].update(hostname=["dgx"]))
    path = write_lines(tmp_path / "bad.jsonl", lines)
    for argv in (["snapshot"], ["check"], ["topo"]):
        code, _, err = run([*argv, "--replay", str(path)], capsys)
        assert code == 2
        assert "line 1:" in err and "hostname: expected a string" in err


def test_a_line_whose_start_fits_but_whose_body_does_not(tmp_path, good, capsys) -> None:
    """The index reads only the start of a line (``line_timestamp``): the rest is judged when the
    reading is shown, and then named like any other misfit."""
    bad = mutated(good, 2, _set("gpus", 0, "power_w", value={"watts": 1}))
    assert bad[2].startswith(b'{"type":"snapshot","timestamp":')
    path = write_lines(tmp_path / "bad.jsonl", bad)
    assert cli.main(["snapshot", "--replay", str(path), "--at", "0"]) == 0  # line 2 is fine
    capsys.readouterr()
    code, _, err = run(["snapshot", "--replay", str(path), "--at", "1"], capsys)
    assert code == 2 and "line 3:" in err and "gpus[0].power_w: expected a number" in err
    # A second "timestamp" later in the line does not move the reading silently.
    twice = list(good)
    twice[2] = twice[2][:-1] + b',"timestamp":1700000999.0}'
    path = write_lines(tmp_path / "twice.jsonl", twice)
    code, _, err = run(["snapshot", "--replay", str(path), "--at", "1"], capsys)
    assert code == 2 and "line 3: the line has two different timestamps" in err
    # Another type in the same place is named as well.
    other = list(good)
    other[2] = other[2][:-1] + b',"type":"comment"}'
    path = write_lines(tmp_path / "other.jsonl", other)
    code, _, err = run(["snapshot", "--replay", str(path), "--at", "1"], capsys)
    assert code == 2 and "line 3: not a snapshot line" in err


# -- JSON that no recording holds ------------------------------------------------------------------

DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (DEEP, "JSON nested too deeply"),
        (b'{"type":"snapshot","timestamp":1700000001.5,"x":' + DEEP + b"}", "nested too deeply"),
        (b'{"type":"snapshot","timestamp":1e999,"gpus":[]}', "'timestamp' inf is not a time"),
        (b'{"type":"snapshot","timestamp":Infinity,"gpus":[]}', "out of range: Infinity"),
        (b'{"type":"snapshot","timestamp":1e300,"gpus":[]}', "'timestamp' 1e+300 is not a time"),
        (b'{"type":"snapshot","timestamp":1.5,"gpus":[],"x":' + b"9" * 400 + b"}", "400 digits"),
        (b'{"type":"snapshot","timestamp":1.5,"x":' + b"9" * 5000 + b"}", "out of range"),
    ],
    ids=["deep", "deep-after-timestamp", "1e999", "Infinity", "1e300", "400-digits", "5000-digits"],
)
def test_json_beyond_any_recording_names_the_line(tmp_path, good, capsys, line, message) -> None:
    lines = list(good)
    lines.insert(2, line)  # line 3
    path = write_lines(tmp_path / "bad.jsonl.gz", lines)
    with pytest.raises(RecordingError, match=re.escape(message)) as exc:
        read_recording(path)
    assert exc.value.line == 3
    code, _, err = run(["check", "--replay", str(path)], capsys)
    assert code == 2 and "line 3:" in err and message in err and "internal error" not in err


def test_numbers_no_reading_holds_are_not_a_crash(tmp_path, good, capsys) -> None:
    """A float literal past 1e308 parses as an infinity, which no reading holds: the line is
    refused naming the field, never a crash."""
    lines = list(good)
    for i in range(1, READINGS + 1):
        lines[i] = lines[i].replace(b'"power_w":', b'"power_w":1e999,"x":', 1)
    path = write_lines(tmp_path / "inf.jsonl", lines)
    with pytest.raises(RecordingError, match=r"line 2: .*power_w: expected a finite number"):
        read_recording(path)
    for argv in (["snapshot"], ["check"], ["topo"], ["snapshot", "--json"]):
        code, _out, err = run([*argv, "--replay", str(path)], capsys)
        assert "internal error" not in err and "Traceback" not in err, (argv, err)
        assert code == 2 and "power_w: expected a finite number" in err, (argv, err)


def test_json_nested_too_deeply_in_the_header(tmp_path, good, capsys) -> None:
    path = write_lines(tmp_path / "deep.jsonl", [DEEP, *good[1:]])
    for argv in (["snapshot"], ["check"], ["topo"]):
        code, _, err = run([*argv, "--replay", str(path)], capsys)
        assert code == 2 and "line 1: not a gputui recording (JSON nested too deeply)" in err


def test_header_values_are_quoted_briefly(tmp_path, good) -> None:
    lines = mutated(good, 0, lambda h: h.update(version="v" * 100_000))
    path = write_lines(tmp_path / "bad.jsonl", lines)
    with pytest.raises(RecordingError) as exc:
        read_recording(path)
    assert len(str(exc.value)) < 300


# -- bounded work ----------------------------------------------------------------------------------


def gzip_of(path: Path, head: bytes, piece: bytes, total: int, tail: bytes = b"") -> Path:
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    with path.open("wb") as f:
        f.write(z.compress(head))
        for _ in range(total // len(piece)):
            f.write(z.compress(piece))
        f.write(z.compress(tail) + z.flush())
    return path


def test_runs_of_empty_lines_are_counted_not_held(tmp_path, good) -> None:
    """64 MiB of newlines between two readings: skipped in a few runs, line numbers exact."""
    blank = 64 << 20
    path = gzip_of(
        tmp_path / "blank.jsonl.gz", good[0] + b"\n" + good[1] + b"\n", b"\n" * (1 << 20), blank,
        tail=good[2] + b"\n",
    )  # fmt: skip
    recording = read_recording(path)
    assert len(recording.snapshots) == 2
    backend = ReplayBackend(path)
    backend.open()
    assert backend.readings == 2 and backend._lines == [2, 3 + blank]
    assert backend.snapshot_at(T0 + 1).timestamp == T0 + 1


def test_a_gzip_bomb_stops_at_the_expansion_bound(tmp_path, good, monkeypatch) -> None:
    monkeypatch.setattr("gputui.core.record._EXPANSION_FLOOR", 4 << 20)
    path = gzip_of(tmp_path / "bomb.jsonl.gz", good[0] + b"\n", b"\n" * (1 << 20), 32 << 20)
    with pytest.raises(RecordingError, match="expands more than 250 times"):
        read_recording(path)


def test_a_line_longer_than_the_bound_is_refused_early(tmp_path, good) -> None:
    path = tmp_path / "long.jsonl"
    with path.open("wb") as f:
        f.write(good[0] + b"\n" + good[1] + b"\n")
        f.write(b'{"type":"snapshot","timestamp":1700000002.0,"x":"' + b"a" * (40 << 20) + b'"}\n')
    with pytest.raises(RecordingError, match="line 3: longer than 16 MiB") as exc:
        read_recording(path)
    assert exc.value.line == 3
    with pytest.raises(Exception, match="line 3: longer than 16 MiB"):
        ReplayBackend(path).open()


def test_a_long_line_within_the_bound_still_reads(tmp_path, good) -> None:
    data = json.loads(good[1])
    data["from_a_later_gputui"] = "x" * (2 << 20)  # unknown keys are ignored
    lines = list(good)
    lines[1] = json.dumps(data).encode()
    assert 2 << 20 < len(lines[1]) < MAX_LINE_BYTES
    assert len(read_recording(write_lines(tmp_path / "long.jsonl.gz", lines)).snapshots) == 4


MEMORY_PROBE = """
import sys
from gputui.core.record import RecordingError, read_recording
from gputui.backends.replay import ReplayBackend
for read in (read_recording, lambda p: ReplayBackend(p).open()):
    try:
        read(sys.argv[1])
    except Exception as exc:
        print(type(exc).__name__, exc)
# VmHWM is this process's own peak: ru_maxrss would carry the parent's size across fork + exec.
with open("/proc/self/status") as status:
    peak_kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(peak_kb // 1024)
"""


@pytest.mark.parametrize("kind", ["newlines", "one line"])
def test_a_small_gzip_file_does_not_take_gigabytes(tmp_path, good, kind) -> None:
    """300 KB of gzip: 300 MB of newlines, or one 300 MB line (it took 2.7 GB and 600 MB)."""
    piece = b"\n" * (1 << 20) if kind == "newlines" else b"a" * (1 << 20)
    path = gzip_of(tmp_path / "bomb.jsonl.gz", good[0] + b"\n", piece, 300 << 20)
    assert path.stat().st_size < 400_000
    result = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    )
    assert result.returncode == 0, result.stderr
    *errors, peak = result.stdout.splitlines()
    expected = "expands more than 250 times" if kind == "newlines" else "longer than 16 MiB"
    assert len(errors) == 2 and all(expected in e for e in errors), errors
    assert int(peak) < 200, f"peak {peak} MiB"


# -- nothing from a recording reaches the terminal raw ---------------------------------------------

HOSTILE = f"evil{ESC}]0;pwned\a{ESC}[2J\u202eabc\x9b31m"


@pytest.fixture
def hostile(tmp_path, good) -> Path:
    def change(h: dict[str, Any]) -> None:
        node = h["node"]
        node["hostname"] = node["backend"] = node["driver_version"] = HOSTILE
        node["gpus"][0]["name"] = HOSTILE
        node["topology"]["locality"][0]["cpu_affinity"] = HOSTILE

    lines = mutated(good, 0, change)
    for i in range(1, READINGS + 1):
        lines = mutated(lines, i, _process_and_finding(HOSTILE))
    return write_lines(tmp_path / "hostile.jsonl", lines)


def _process_and_finding(text: str) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        proc = data["processes"][0]
        proc["user"] = proc["command"] = proc["container_id"] = text
        data["findings"][0].update(message=text, hint=text, rule=text)
        data["gpus"][0].update(error=text)

    return change


@pytest.mark.parametrize(
    "argv", [["snapshot"], ["topo"], ["check"], ["snapshot", "--json"], ["check", "--json"]]
)
def test_no_escape_sequence_reaches_the_terminal(hostile, capsys, argv) -> None:
    cli.main([*argv, "--replay", str(hostile)])
    out, err = capsys.readouterr()
    for text in (out, err):
        assert ESC not in text and "\a" not in text and "\x9b" not in text
        assert "\u202e" not in text
    if "--json" in argv:  # JSON escapes them, and they read back exactly
        assert "\\u001b" in out
        data = json.loads(out)
        assert data.get("hostname", data.get("node", {}).get("hostname")) == HOSTILE
    else:
        assert "evil?]0;pwned??[2J?abc?31m" in out


def test_workload_names_reach_snapshot_text_sanitised(tmp_path, good, capsys) -> None:
    """A Slurm job's name and user, a pod's name and namespace and a container's name come from
    users: the JOB / POD column of ``snapshot`` shows them as one safe line."""

    def change(data: dict[str, Any]) -> None:
        first, second = data["processes"][0], data["processes"][1]
        first.update(slurm_job_id="4242", slurm_job_name=HOSTILE, slurm_job_user=HOSTILE)
        second.update(k8s_pod_uid="u", k8s_pod_name=HOSTILE, k8s_namespace=HOSTILE)
        second.update(container_name=HOSTILE)

    lines = list(good)
    for i in range(1, READINGS + 1):
        lines = mutated(lines, i, change)
    path = write_lines(tmp_path / "names.jsonl", lines)
    assert cli.main(["snapshot", "--replay", str(path)]) == 0
    out, _err = capsys.readouterr()
    assert ESC not in out and "\a" not in out and "\x9b" not in out and "\u202e" not in out
    assert "job 4242 evil?]0;pwned??[2J?abc?31m" in out
    shown = "evil?]0;pwned??[2J?abc?31m"
    assert f"pod {shown}/{shown}"[:39] + "…" in out  # clipped as the dashboard clips it


def test_recording_messages_are_sanitised(tmp_path, capsys) -> None:
    name = tmp_path / f"x{ESC}[2J.jsonl"
    name.write_text("not json\n")
    code, out, err = run(["snapshot", "--replay", str(name)], capsys)
    assert code == 2 and out == "" and ESC not in err and "x?[2J.jsonl: line 1" in err


# -- files: never through a link, never into a device ----------------------------------------------


def test_record_refuses_links_devices_fifos_and_directories(tmp_path, capsys) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to(tmp_path / "nowhere")
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    cases = [
        (link, "symbolic link"),
        (dangling, "symbolic link"),
        (fifo, "a FIFO, not a regular file"),
        (tmp_path, "a directory, not a regular file"),
        (Path(os.devnull), "a character device, not a regular file"),
    ]
    for path, message in cases:
        for force in ([], ["--force"]):
            argv = ["record", str(path), "--demo", "--duration", "1", *force]
            code, out, err = run(argv, capsys)
            assert code == 2 and message in err and "recording" not in err, (path, err)
            assert out == ""
    assert target.read_text() == "keep me"
    assert not (tmp_path / "nowhere").exists()


def test_force_replaces_a_regular_file_only_once_the_header_is_written(tmp_path, capsys) -> None:
    path = tmp_path / "old.jsonl"
    path.write_text("an older recording\n")
    code, _, err = run(["record", str(path), "--demo", "--duration", "0.2"], capsys)
    assert code == 2 and "exists (use --force" in err
    args = ["record", str(path), "--demo", "--interval", "0.1", "--duration", "0.3", "--force"]
    code, out, err = run(args, capsys)
    assert code == 0 and f"to {path}" in out, err
    assert read_recording(path).snapshots
    assert (path.stat().st_mode & 0o777) == 0o644 & ~_umask()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.jsonl"]  # no temporary left


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# -- the dashboard ---------------------------------------------------------------------------------


@pytest.mark.usefixtures("tui_env")
async def test_the_dashboard_says_which_line_does_not_fit(tmp_path, good) -> None:
    """A replayed reading that does not fit is a notification naming the line and the field;
    the dashboard goes on running."""
    import asyncio

    from gputui.engine.session import BackendSpec, open_session
    from gputui.tui.app import GpuTuiApp

    bad = mutated(good, 1, _set("processes", 0, "command", value=123))
    path = write_lines(tmp_path / "bad.jsonl.gz", bad)
    session = open_session(BackendSpec.replay(str(path)), interval=0.2)
    app = GpuTuiApp(session.sampler)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            for _ in range(50):
                await pilot.pause()
                if app._notifications:
                    break
                await asyncio.sleep(0.1)
            notes = [n.message for n in app._notifications]
            assert any("line 2:" in m and "processes[0].command" in m for m in notes), notes
    finally:
        session.close()
