"""The minutes around an incident (``--incidents DIR``): what starts one, the ring of readings
before it, the file around it, joining, the directory's bounds, safe names, a directory that
cannot be written, and ``record`` / ``export`` writing files that ``check --replay`` fails.

Readings come from the simulated ``faulty`` node (its GPU 2 reports a double-bit ECC error with
XID 48 at 1 s, its GPU 3 falls off the bus with XID 79 at ``lost_after_s``) or from hand-built
snapshots judged by the real health monitor, all on a fake clock."""

from __future__ import annotations

import dataclasses
import os
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from tests.factories import T, sample, snap
from tests.fakes.clock import T0, fake_clock_sampler

from gputui import cli
from gputui.commands import export as export_command
from gputui.commands.common import Common, Seams, UsageError
from gputui.commands.settings_from_args import settings_for
from gputui.core.model import Finding, GpuEvent, Snapshot
from gputui.core.record import read_recording
from gputui.engine.incidents import (
    INCIDENT_NAME,
    MAX_SPAN_AFTERS,
    IncidentPolicy,
    IncidentWatcher,
    Onsets,
    incident_name,
    prune,
)
from gputui.engine.sampler import Sampler
from gputui.health import HealthConfig, HealthMonitor

QUIET = frozenset({"temperature"})
"""The faulty node's memory temperature wavers around its threshold (a fail that clears and
comes back every few seconds): left out where a test counts the other incidents."""


def faulty(lost_after_s: float = 40.0, ignore: frozenset[str] = QUIET) -> Sampler:
    """The faulty node on a fake clock at T0, judged as the dashboard judges it."""
    sampler = fake_clock_sampler("faulty", lost_after_s=lost_after_s)
    sampler.health = HealthMonitor(HealthConfig(current_user="tester", ignore=ignore), env={})
    return sampler


def poll(sampler: Sampler, n: int) -> None:
    for _ in range(n):
        sampler.poll()
        sampler.clock.now += sampler.interval  # type: ignore[attr-defined]


def incident_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if INCIDENT_NAME.match(p.name))


def times(path: Path) -> list[float]:
    """The readings' times in an incident file, in seconds after T0 (it must replay)."""
    return [s.timestamp - T0 for s in read_recording(path).snapshots]


def judged(snapshots: Iterable[Snapshot]) -> Iterator[Snapshot]:
    """Hand-built readings with the findings the real health monitor lists for them."""
    monitor = HealthMonitor(HealthConfig(current_user="tester"), env={})
    for s in snapshots:
        yield dataclasses.replace(s, findings=monitor.update(s))


def readings(lost_at: Iterable[int], seconds: int, events: dict[int, GpuEvent] | None = None):
    """One GPU read every second from T for ``seconds``: lost at the seconds in ``lost_at``;
    ``events``: second -> the event that reading carries."""
    lost, events = set(lost_at), events or {}
    for i in range(seconds):
        gpu = sample(lost=True) if i in lost else sample()
        extra = (events[i],) if i in events else ()
        yield snap((gpu,), t=T + i, events=extra)


def xid(at: float, code: int = 79) -> GpuEvent:
    return GpuEvent(timestamp=at, kind="xid", gpu_index=0, code=code, message="", source="nvml")


def watch(directory: Path, snapshots: Iterable[Snapshot], **policy: float) -> IncidentWatcher:
    """A watcher writing in ``directory`` that has seen ``snapshots``, closed."""
    watcher = IncidentWatcher(directory, IncidentPolicy(**policy))  # type: ignore[arg-type]
    for s in snapshots:
        watcher.observe(s)
    assert watcher.close()
    return watcher


def relative(watcher: IncidentWatcher) -> list[list[float]]:
    """Each file's readings, in seconds after T (hand-built readings)."""
    return [
        [s.timestamp - T for s in read_recording(i.path).snapshots]  # type: ignore[arg-type]
        for i in watcher.written
    ]


# -- the ring and the file around an incident ------------------------------------------------------


def test_the_ring_keeps_exactly_the_before_window(tmp_path) -> None:
    sampler = fake_clock_sampler("dgx-h100", interval=0.5)
    watcher = IncidentWatcher(tmp_path, IncidentPolicy(before_s=10, after_s=5))
    sampler.add_listener(watcher)
    poll(sampler, 61)  # 30 s of readings, nothing fails
    now = sampler.latest.timestamp  # type: ignore[union-attr]
    kept = watcher.ring.timestamps()
    assert kept == [now - 10 + 0.5 * i for i in range(21)]  # from now - 10 s to now, both in
    assert len(watcher.ring.lines()) == 21 and watcher.incidents == []
    # bounded by count too (short intervals), the newest kept
    few = IncidentWatcher(tmp_path, IncidentPolicy(before_s=10, ring_readings=4))
    for t in range(10):
        few.observe(snap(t=T + t))
    assert few.ring.timestamps() == [T + 6, T + 7, T + 8, T + 9]
    # ... and by bytes
    line_bytes = len(few.ring.lines()[0])
    small = IncidentWatcher(tmp_path, IncidentPolicy(before_s=10, ring_bytes=3 * line_bytes))
    for t in range(10):
        small.observe(snap(t=T + t))
    assert len(small.ring) == 3 and small.ring.bytes <= 3 * line_bytes
    assert list(tmp_path.iterdir()) == []


def test_one_file_per_incident_from_before_to_after(tmp_path) -> None:
    """XID 48 and the ECC event at 1 s, GPU 3 lost with XID 79 at 40 s: two incidents, each file
    the readings from 10 s before to 5 s after (the first one's before-window starts with the
    session), replayable, named by host, UTC time and the first finding."""
    sampler = faulty(lost_after_s=40)
    watcher = IncidentWatcher(tmp_path, IncidentPolicy(before_s=10, after_s=5))
    sampler.add_listener(watcher)
    poll(sampler, 70)
    assert watcher.close()
    files = incident_files(tmp_path)
    assert [p.name for p in files] == [
        "dgx-h100-13_20231114T221321Z_xid-gpu2.jsonl.gz",
        "dgx-h100-13_20231114T221400Z_gpu-lost-gpu3.jsonl.gz",
    ]
    assert times(files[0]) == [float(t) for t in range(0, 7)]
    assert times(files[1]) == [float(t) for t in range(30, 46)]
    first, second = watcher.written
    assert [f.key for f in first.triggers] == ["xid:2:48", "gpu_event:2:ecc_double_bit"]
    assert [f.key for f in second.triggers] == ["gpu_lost:3", "xid:3:79"]
    # each reading as it was: the lost GPU, its XID event and the findings listed with it
    lost = read_recording(files[1]).snapshots[10]
    assert lost.gpus[3].lost and [e.code for e in lost.events] == [79]
    assert {f.key for f in lost.findings} >= {"gpu_lost:3", "xid:3:79", "xid:2:48"}
    assert lost.processes  # with who was using the GPUs


def test_what_fails_at_the_first_reading_is_the_baseline(tmp_path) -> None:
    """The faulty node throttles and has a link down from its first reading: no incident for
    them, only for what begins later (XID 48 at 1 s). A GPU lost from the first reading until
    it comes back is no incident either."""
    sampler = faulty()
    watcher = IncidentWatcher(tmp_path, IncidentPolicy(before_s=5, after_s=2))
    sampler.add_listener(watcher)
    poll(sampler, 1)
    first = sampler.latest.findings  # type: ignore[union-attr]
    assert {"throttle:5", "nvlink_down:1:link7"} <= {f.key for f in first if f.severity == "fail"}
    assert watcher.incidents == []
    poll(sampler, 5)
    assert watcher.close()
    assert [[f.key for f in i.triggers] for i in watcher.written] == [
        ["xid:2:48", "gpu_event:2:ecc_double_bit"]
    ]
    watcher = watch(tmp_path / "b", judged(readings(lost_at=range(0, 3), seconds=20)))
    assert watcher.incidents == []
    onsets = Onsets()
    failing = Finding("gpu_lost", "fail", "lost", gpu_index=0, key="gpu_lost:0")
    assert onsets.take([failing]) == [] and onsets.take([failing]) == []


def test_the_same_xid_in_several_readings_is_one_incident(tmp_path) -> None:
    """The driver (or the kernel log read again) reports the same XID in three readings: one
    incident. A new XID 79 on the same GPU after that incident ended is a new one."""
    same = xid(T + 2)
    events = {2: same, 3: same, 4: same, 30: xid(T + 30)}
    watcher = watch(tmp_path, judged(readings([], 40, events)), before_s=2, after_s=5)
    assert relative(watcher) == [[0.0, 1, 2, 3, 4, 5, 6, 7], [28.0, 29, 30, 31, 32, 33, 34, 35]]
    assert [[f.key for f in i.triggers] for i in watcher.written] == [["xid:0:79"]] * 2
    # the XID finding stays listed all along: only a new event of it counts again
    onsets = Onsets()
    listed = Finding("xid", "fail", "XID 79", gpu_index=0, key="xid:0:79", last_seen=T + 2)
    assert onsets.take([]) == []
    assert onsets.take([listed]) == [listed]
    assert onsets.take([listed]) == [] and onsets.take([listed]) == []
    again = dataclasses.replace(listed, last_seen=T + 30)
    assert onsets.take([again]) == [again]


def test_a_cleared_and_returned_condition_is_a_new_incident(tmp_path) -> None:
    """GPU 0 lost at 5-6 s, back from 7 s, lost again at 20 s: two incidents. Lost without a
    break (5-25 s) is one. A warning that becomes a failure counts too."""
    lost_twice = judged(readings(lost_at=[5, 6, 20], seconds=30))
    watcher = watch(tmp_path, lost_twice, before_s=3, after_s=4)
    assert relative(watcher) == [[2.0, 3, 4, 5, 6, 7, 8, 9], [17.0, 18, 19, 20, 21, 22, 23, 24]]
    assert [i.trigger.key for i in watcher.written] == ["gpu_lost:0", "gpu_lost:0"]

    lost_long = judged(readings(lost_at=range(5, 26), seconds=40))
    assert len(watch(tmp_path / "b", lost_long, before_s=3, after_s=4).incidents) == 1

    onsets = Onsets()
    warn = Finding("row_remap", "warn", "remap pending", gpu_index=1, key="row_remap:1")
    fail = dataclasses.replace(warn, severity="fail")
    cleared = dataclasses.replace(fail, active=False)
    assert onsets.take([warn]) == [] and onsets.take([fail]) == [fail]
    assert onsets.take([cleared]) == [] and onsets.take([fail]) == [fail]


def test_overlapping_triggers_join_into_one_file(tmp_path) -> None:
    """A failure at 10 s (after-window to 15 s) and another at 13 s: one file to 18 s. One at
    19 s, past that end, starts a second file."""
    lost = {10: xid(T + 10, 48), 13: xid(T + 13, 79), 19: xid(T + 19, 74)}
    watcher = watch(tmp_path, judged(readings([], 30, lost)), before_s=2, after_s=5)
    assert relative(watcher) == [
        [float(t) for t in range(8, 19)],
        [float(t) for t in range(17, 25)],
    ]
    assert [[f.key for f in i.triggers] for i in watcher.written] == [
        ["xid:0:48", "xid:0:79"],
        ["xid:0:74"],
    ]
    assert len(incident_files(tmp_path)) == 2


def test_a_flapping_failure_does_not_make_one_endless_file(tmp_path) -> None:
    """A GPU lost every other second keeps moving the end, but an incident ends at most
    MAX_SPAN_AFTERS after-windows past its first failure; the next failure starts a new one."""
    flapping = judged(readings(lost_at=range(10, 200, 2), seconds=200))
    watcher = watch(tmp_path, flapping, before_s=2, after_s=3)
    spans = relative(watcher)
    limit = 10 + MAX_SPAN_AFTERS * 3
    assert spans[0][0] == 8.0 and spans[0][-1] == limit
    assert spans[1][0] == limit  # lost again at limit + 2: its own 2 s before-window
    assert all(s[-1] - s[0] <= 2 + MAX_SPAN_AFTERS * 3 for s in spans)


# -- the directory ---------------------------------------------------------------------------------


def test_the_directory_bounds_remove_the_oldest_of_ours_and_nothing_else(tmp_path) -> None:
    directory = tmp_path / "incidents"
    directory.mkdir()
    precious = tmp_path / "precious.jsonl.gz"
    precious.write_bytes(b"keep me")
    old = [
        "dgx01_20200101T000000Z_xid-gpu1.jsonl.gz",
        "dgx01_20200101T000000Z_xid-gpu1_2.jsonl.gz",
        "dgx02_20200102T000000Z_gpu-lost-gpu0.jsonl.gz",
    ]
    for name in old:
        (directory / name).write_bytes(b"x" * 1000)
    others = {
        "notes.txt": b"mine",
        "dgx01_20190101T000000Z_xid-gpu1.jsonl": b"not gzip: not ours",
        "my-own-recording.jsonl.gz": b"someone's",
    }
    for name, data in others.items():
        (directory / name).write_bytes(data)
    (directory / "dgx01_20100101T000000Z_xid-gpu0.jsonl.gz").symlink_to(precious)
    (directory / "dgx01_20110101T000000Z_xid-gpu0.jsonl.gz").mkdir()

    # two incidents, three of ours allowed: the two oldest of ours go
    events = {1: xid(T + 1, 48), 10: xid(T + 10, 79)}
    watcher = watch(directory, judged(readings([], 15, events)), before_s=1, after_s=2, max_files=3)
    assert len(watcher.written) == 2 and watcher.removed == old[:2]
    left = {p.name for p in directory.iterdir()}
    kept = {old[2], *(Path(i.path).name for i in watcher.written)}  # type: ignore[arg-type]
    assert left == kept | set(others) | {
        "dgx01_20100101T000000Z_xid-gpu0.jsonl.gz",
        "dgx01_20110101T000000Z_xid-gpu0.jsonl.gz",
    }
    assert precious.read_bytes() == b"keep me"
    assert all((directory / n).read_bytes() == data for n, data in others.items())

    # bounded by bytes: the oldest go until the rest fit; the newest stays even when alone
    newest = Path(watcher.written[-1].path).name  # type: ignore[arg-type]
    size = sum((directory / n).stat().st_size for n in kept)
    assert prune(str(directory), 100, size - 1, keep=newest) == [old[2]]
    assert prune(str(directory), 100, 1, keep=newest) == [min(kept - {old[2]})]
    regular = [p.name for p in incident_files(directory) if p.is_file() and not p.is_symlink()]
    assert regular == [newest]
    assert precious.read_bytes() == b"keep me" and (directory / "notes.txt").exists()


def test_a_taken_name_gets_a_counter_and_nothing_is_overwritten(tmp_path) -> None:
    events = {1: xid(T + 1)}
    directory = tmp_path / "incidents"
    first = watch(directory, judged(readings([], 5, events)), before_s=1, after_s=1)
    name = Path(first.written[0].path).name  # type: ignore[arg-type]
    target = tmp_path / "elsewhere"
    target.write_bytes(b"untouched")
    link = directory / name.replace(".jsonl.gz", "_2.jsonl.gz")
    link.symlink_to(target)  # a link where the next name would go is passed over
    second = watch(directory, judged(readings([], 5, events)), before_s=1, after_s=1)
    third = watch(directory, judged(readings([], 5, events)), before_s=1, after_s=1)
    names = [Path(w.written[0].path).name for w in (second, third)]  # type: ignore[arg-type]
    assert names == [name.replace(".jsonl.gz", f"_{n}.jsonl.gz") for n in (3, 4)]
    assert target.read_bytes() == b"untouched" and link.is_symlink()
    assert len(read_recording(directory / name).snapshots) == 3


@pytest.mark.parametrize(
    "hostname",
    [
        "../../etc/cron.d/x",
        "/",
        "..",
        "",
        "a\nb;rm -rf ~ $(id)",
        "dgx_01",
        "nöde-ünïcode",
        "-" * 10 + "x" * 300,
        "host\\..\\windows",
    ],
)
def test_a_hostile_hostname_gives_a_safe_file_name(tmp_path, hostname) -> None:
    events = {1: xid(T + 1)}
    hostile = [
        dataclasses.replace(s, node=dataclasses.replace(s.node, hostname=hostname))
        for s in readings([], 4, events)
    ]
    directory = tmp_path / "incidents"
    watcher = watch(directory, judged(hostile), before_s=1, after_s=1)
    (written,) = watcher.written
    path = Path(written.path)  # type: ignore[arg-type]
    assert path.parent == directory
    assert INCIDENT_NAME.match(path.name) and len(path.name) < 160
    assert [p.name for p in tmp_path.rglob("*")] == ["incidents", path.name]
    assert read_recording(path).node.hostname == hostname  # the recording keeps it as read
    # a rule from a recording (an export of a replay) is no path either
    finding = Finding("../x/../../y", "fail", "?", gpu_index=None)
    name = incident_name(hostname, T, finding, 7)
    assert INCIDENT_NAME.match(name) and "/" not in name and name.endswith("-node_7.jsonl.gz")


# -- a directory that cannot be written, a slow disk -----------------------------------------------


def test_a_directory_that_goes_away_is_said_once_and_the_readings_go_on(tmp_path) -> None:
    problems: list[str] = []
    directory = tmp_path / "incidents"
    watcher = IncidentWatcher(
        directory, IncidentPolicy(before_s=2, after_s=2), on_problem=problems.append
    )
    sampler = faulty(lost_after_s=20)
    sampler.add_listener(watcher)
    directory.write_text("a file where the directory should be")  # cannot be made now
    poll(sampler, 30)
    assert watcher.close()
    assert len(watcher.incidents) == 2 and watcher.written == []
    assert [i.error for i in watcher.failed] == ["File exists"] * 2
    assert problems == [f"cannot write incident files in {directory}: File exists"]
    assert sampler.latest is not None and sampler.latest.timestamp == T0 + 29
    assert sampler._listeners == [watcher]  # not removed as a failing listener


def test_an_unwritable_directory_gives_a_message_and_recording_continues(tmp_path, capsys) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    bad = blocker / "incidents"
    out = tmp_path / "node.jsonl.gz"
    quick = ["--backend", "sim:faulty", "--interval", "0.1", "--duration", "0.3"]
    assert cli.main(["record", str(out), "--incidents", str(bad), *quick]) == 0
    captured = capsys.readouterr()
    assert f"gputui record: cannot write incident files in {bad}: Not a directory; " in (
        captured.err
    )
    assert captured.err.count("incident files") == 1 and "Traceback" not in captured.err
    assert "Recorded " in captured.out and len(read_recording(out).snapshots) >= 2
    # with only incident files to write, there is nothing to do: exit 2, the same message
    assert cli.main(["record", "--incidents", str(bad), *quick]) == 2
    captured = capsys.readouterr()
    assert f"cannot write incident files in {bad}: Not a directory\n" in captured.err


def test_a_slow_disk_never_stalls_the_readings(tmp_path, monkeypatch) -> None:
    """The incident file's disk hangs: readings go on (the polling thread never waits for it),
    and once the disk answers every reading of the incident is in the file. A writer further
    behind than its bound leaves readings out, counted and said once."""
    release = threading.Event()
    real_open = os.fdopen

    class Hung:
        def __init__(self, fd: int) -> None:
            self.file = real_open(fd, "wb", buffering=0)

        def write(self, data: bytes) -> int:
            release.wait(30)
            return self.file.write(data)

        def close(self) -> None:
            self.file.close()

    monkeypatch.setattr("gputui.core.record._open_file", Hung)
    problems: list[str] = []
    watcher = IncidentWatcher(
        tmp_path, IncidentPolicy(before_s=5, after_s=20), on_problem=problems.append
    )
    sampler = faulty()
    sampler.add_listener(watcher)
    poll(sampler, 30)  # returns although the writer has not written one byte
    assert not watcher.wait(0)
    release.set()
    assert watcher.close()
    (path,) = incident_files(tmp_path)
    assert times(path) == [float(t) for t in range(0, 22)]
    assert problems == []

    release.clear()
    line = len(watcher.ring.lines()[-1])
    behind = IncidentWatcher(
        tmp_path / "b",
        IncidentPolicy(before_s=5, after_s=20, pending_bytes=5 * line),
        on_problem=problems.append,
    )
    sampler = faulty()
    sampler.add_listener(behind)
    poll(sampler, 30)
    (incident,) = behind.incidents
    assert incident.dropped > 0  # memory stayed bounded while the disk hung
    release.set()
    assert behind.close()
    assert incident.readings + incident.dropped == 22
    assert len(problems) == 1 and problems[0].startswith("the disk is behind: ")


def test_a_failing_report_does_not_end_the_writer(tmp_path) -> None:
    said: list[str] = []

    def written(incident) -> None:
        said.append(incident.path)
        if len(said) == 1:
            raise OSError("stderr is gone")

    watcher = IncidentWatcher(tmp_path, IncidentPolicy(before_s=1, after_s=2), on_written=written)
    for s in judged(readings([], 15, {1: xid(T + 1, 48), 10: xid(T + 10, 79)})):
        watcher.observe(s)
    assert watcher.close()
    assert len(said) == 2 and [i.path for i in watcher.written] == said
    assert [str(p) for p in incident_files(tmp_path)] == said


# -- the commands ----------------------------------------------------------------------------------


@pytest.fixture
def quiet(tmp_path) -> list[str]:
    """``--config FILE`` leaving out the faulty node's wavering memory temperature, so the first
    incident is the XID 48 at 1 s whatever the timing."""
    config = tmp_path / "quiet.toml"
    config.write_text('[health]\nignore = ["temperature"]\n')
    return ["--config", str(config)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_record_writes_incident_files_that_check_fails(tmp_path, capsys, quiet) -> None:
    """``gputui record --backend sim:faulty --incidents DIR`` without FILE: only incident files
    (the XID 48 at 1 s), each a recording ``check --replay`` fails with exit 2."""
    directory = tmp_path / "incidents"
    argv = [*quiet, "record", "--backend", "sim:faulty", "--incidents", str(directory)]
    assert cli.main([*argv, "--interval", "0.1", "--duration", "1.5", "--before", "5s"]) == 0
    captured = capsys.readouterr()
    files = incident_files(directory)
    assert len(files) == 1 and files[0].name.startswith("dgx-h100-13_")
    assert files[0].name.endswith("_xid-gpu2.jsonl.gz")
    assert sorted(tmp_path.iterdir()) == [directory, tmp_path / "quiet.toml"]  # no recording
    assert captured.out == f"Wrote 1 incident file to {directory}\n"
    assert "incident (GPU 2): XID 48 on GPU 2" in captured.err and str(files[0]) in captured.err
    snapshots = read_recording(files[0]).snapshots
    assert snapshots[0].timestamp < snapshots[-1].timestamp - 0.3  # before and after it
    assert cli.main(["check", "--replay", str(files[0])]) == 2
    assert "XID 48" in capsys.readouterr().out


def test_record_writes_its_file_and_the_incidents(tmp_path, capsys, quiet) -> None:
    directory, out = tmp_path / "incidents", tmp_path / "node.jsonl.gz"
    argv = [*quiet, "record", str(out), "--backend", "sim:faulty", "--incidents", str(directory)]
    assert cli.main([*argv, "--interval", "0.1", "--duration", "1.5", "--after", "1m"]) == 0
    captured = capsys.readouterr()
    (incident,) = incident_files(directory)
    whole = read_recording(out).snapshots
    part = read_recording(incident).snapshots
    assert [s.timestamp for s in part] == [s.timestamp for s in whole]  # within the windows
    assert "Recorded " in captured.out and "Wrote 1 incident file" in captured.out


def test_export_writes_incident_files(tmp_path, capsys, quiet) -> None:
    directory = tmp_path / "incidents"
    argv = [
        *quiet,
        "export",
        "--backend",
        "sim:faulty",
        "--listen",
        f"127.0.0.1:{free_port()}",
        "--interval",
        "0.1",
        "--incidents",
        str(directory),
        "--after",
        "1",
    ]
    parser = cli.build_parser()
    args = parser.parse_args(argv)
    options = export_command.options(args, Common.from_args(args, settings_for(args, parser)))
    stop = threading.Event()
    result: list[int] = []
    thread = threading.Thread(
        target=lambda: result.append(export_command.run(options, Seams(stop=stop)))
    )
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not (directory.is_dir() and incident_files(directory)):
            assert time.monotonic() < deadline, "no incident file was written"
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(20)
    assert result == [0]
    files = incident_files(directory)
    assert files[0].name.endswith("_xid-gpu2.jsonl.gz")
    assert "Wrote " in capsys.readouterr().out
    assert cli.main(["check", "--replay", str(files[0])]) == 2


# -- options and settings --------------------------------------------------------------------------


def test_the_windows_come_from_the_options_or_the_config_file(tmp_path, capsys) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[incidents]\nbefore = "2m"\nafter = 45\nmax_files = 7\nmax_bytes = 10485760\n'
    )

    def options(*argv: str):
        parser = cli.build_parser()
        args = parser.parse_args(["--config", str(config), *argv])
        common = Common.from_args(args, settings_for(args, parser))
        try:
            return cli.COMMANDS[args.command].options(args, common).incidents
        except UsageError as exc:
            parser.error(str(exc))

    record = options("record", "--demo", "--incidents", str(tmp_path / "i"))
    assert record.policy == IncidentPolicy(120.0, 45.0, 7, 10 << 20)
    export = options("export", "--incidents", "~/i", "--before", "1m30s", "--after", "10s")
    assert export.directory == os.path.expanduser("~/i")
    assert (export.policy.before_s, export.policy.after_s, export.policy.max_files) == (90, 10, 7)
    assert options("record", "--demo") is None

    for bad, message in [
        (["--before", "30s"], "--before needs --incidents DIR"),
        (["--incidents", "d", "--after", "0"], "more than 0"),
        (["--incidents", "d", "--before", "2h"], "give a window from 1s to 1h"),
        (["--incidents", "d", "--after", "soon"], "is not a duration"),
    ]:
        with pytest.raises(SystemExit) as exc:
            options("record", "--demo", *bad)
        assert exc.value.code == 2
        assert message in capsys.readouterr().err

    config.write_text('[incidents]\nbefore = "forever"\nmax_files = 0\n')
    assert options("record", "--demo", "--incidents", "d").policy == IncidentPolicy()
    err = capsys.readouterr().err
    assert 'incidents.before = "forever": expected seconds or a duration' in err
    assert "incidents.max_files = 0: expected a whole number from 1" in err
