"""`gputui pick --wait`: it returns when GPUs free up, reads a whole window before it trusts one
reading, times out with exit 1 and the reasons, exits 2 without a GPU or when the driver stops
answering, ends at once on Ctrl-C / SIGTERM (130 / 143), says one line when it starts waiting,
and reads the driver a bounded number of times on one opened session.

The simulated DGX H100 on a fake clock stands in for the node: GPUs 0-6 are busy for good, GPU 7
is held by an idle notebook (40 GB) whose process a test can end after a number of readings."""

from __future__ import annotations

import dataclasses
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tests.factories import start_gputui
from tests.fakes.clock import FakeClock

from gputui import cli
from gputui.backends import NoBackend
from gputui.backends.sim import SimBackend
from gputui.commands import interrupt, pick
from gputui.commands.common import Common, Seams
from gputui.commands.pick import PickOptions
from gputui.commands.pick_wait import brief, waiting_line
from gputui.core.choosing import Judged, Pick
from gputui.core.model import GpuSample, NodeInfo
from gputui.engine.session import BackendSpec

WINDOW_READS = 5
"""Readings in the default 2 s window, one every 0.5 s."""
HELD_GPU = 7


class Scripted(SimBackend):
    """The simulated DGX H100, its GPU readings counted (the driver calls a reading makes).

    ``free_at``: the notebook on GPU 7 exits just before that reading; ``blink``: readings in
    which GPU 7 reads as empty (the next ones show its 40 GB again); ``hang_at``: that reading
    blocks until ``release`` is set. More than ``limit`` readings is a busy loop: it fails."""

    def __init__(
        self,
        *,
        free_at: int | None = None,
        blink: frozenset[int] = frozenset(),
        hang_at: int | None = None,
        limit: int = 5_000,
    ) -> None:
        super().__init__("dgx-h100")
        self.free_at, self.blink, self.hang_at, self.limit = free_at, blink, hang_at, limit
        self.reads = 0
        self.opens = 0
        self.release = threading.Event()

    def open(self) -> NodeInfo:
        self.opens += 1
        return super().open()

    def read_gpus(self, now: float, *, slow: bool) -> list[GpuSample]:
        self.reads += 1
        if self.reads > self.limit:
            raise AssertionError(f"{self.reads} readings: pick polls in a busy loop")
        if self.reads == self.hang_at:
            self.release.wait(30)
        if self.reads == self.free_at:
            (holder,) = [p for p in self.read_processes(now) if p.gpu_index == HELD_GPU]
            self.signal_process(holder.pid, signal.SIGTERM)
        gpus = super().read_gpus(now, slow=slow)
        if self.reads in self.blink:
            held = gpus[HELD_GPU]
            gpus[HELD_GPU] = dataclasses.replace(
                held, memory_used_bytes=0, memory_free_bytes=held.memory_total_bytes
            )
        return gpus


class Bench:
    """A pick run on a :class:`Scripted` node and a fake clock: what it slept, read and said."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, backend: Scripted) -> None:
        self.backend = backend
        self.clock = FakeClock()
        self.began = self.clock.now
        self.sleeps: list[float] = []
        self.opened = 0
        monkeypatch.setattr("gputui.backends.open_backend", self._open)

    def _open(self, spec: object, **kw: object) -> tuple[SimBackend, NodeInfo]:
        self.opened += 1
        return self.backend, self.backend.open()

    def sleep(self, seconds: float) -> None:
        assert seconds > 0, "a sleep of nothing: a busy loop"
        self.sleeps.append(seconds)
        self.clock.now += seconds

    def seams(self, **kw: Any) -> Seams:
        """Its clock and sleep, an environment where indices need no note, stderr a file."""
        kw = {"sleep": self.sleep, "stderr_is_terminal": False, **kw}
        env = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
        return Seams(clock=self.clock, monotonic=self.clock, environ=env, **kw)

    def run(self, capsys, seams: Seams | None = None, **kw: Any) -> tuple[int, str, str]:
        """``pick`` with ``PickOptions(**kw)``: (exit status, stdout, stderr)."""
        options = PickOptions(BackendSpec.parse("sim:dgx-h100"), **kw)
        code = pick.run(options, seams or self.seams())
        out, err = capsys.readouterr()
        return code, out, err

    @property
    def reads(self) -> int:
        return self.backend.reads

    @property
    def elapsed(self) -> float:
        return self.clock.now - self.began


def polls(b: Bench) -> list[float]:
    """The sleeps between polls (not those within a window)."""
    return [s for s in b.sleeps if s != pick.READING_GAP_S]


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Bench]]:
    """``bench(**Scripted's knobs)``: a :class:`Bench`; a hung reading is released at the end."""
    made: list[Bench] = []

    def make(**kw: Any) -> Bench:
        made.append(Bench(monkeypatch, Scripted(**kw)))
        return made[-1]

    yield make
    for b in made:
        b.backend.release.set()


# -- it returns when a GPU frees, and only once the GPU stays free over a window ------------------


def test_returns_when_the_gpu_frees(bench, capsys) -> None:
    # the notebook exits before reading 20: the first window (5), then 14 polls of 5 s
    b = bench(free_at=WINDOW_READS + 15)
    code, out, err = b.run(capsys, count=1, wait_s=30 * 60)
    assert (code, out, err) == (0, "7\n", "")
    freed_at = 2.0 + 15 * 5.0  # the first window, then 15 polls
    assert freed_at <= b.elapsed <= freed_at + 2.0  # found at the poll that saw it, one window on
    assert b.reads == WINDOW_READS + 15 + (WINDOW_READS - 1)  # that reading began a whole window
    assert max(b.sleeps) == 5.0 and b.opened == 1 and b.backend.opens == 1


def test_a_gpu_free_in_one_reading_only_is_not_picked(bench, capsys) -> None:
    # GPU 7 reads as empty in one polled reading; the window begun with it shows its 40 GB again
    b = bench(blink=frozenset({WINDOW_READS + 3}))
    code, out, err = b.run(capsys, count=1, wait_s=60)
    assert (code, out) == (1, "")
    assert "GPU 7: held: 39.3G in use by 1 process" in err


def test_the_wait_counts_from_the_first_reading_and_the_poll_is_an_option(bench, capsys) -> None:
    b = bench(free_at=WINDOW_READS + 2)
    code, out, _ = b.run(capsys, count=1, wait_s=600, poll_s=60.0)
    assert (code, out) == (0, "7\n")
    assert polls(b) == [60.0, 60.0] and b.elapsed == 2.0 + 120 + 2.0


# -- the time runs out: exit 1 with what was missing -----------------------------------------------


def test_times_out_with_exit_1_and_the_reasons(bench, capsys) -> None:
    b = bench()
    code, out, err = b.run(capsys, count=2, wait_s=60)
    assert code == 1 and out == ""
    lines = err.splitlines()
    assert lines[0] == "gputui pick: 0 GPUs qualify, 2 asked for, after waiting 1m02s:"
    assert lines[1].startswith("  GPU 0: busy: utilization up to")
    assert lines[8].startswith("  GPU 7: held: 39.3G in use by 1 process")
    assert 60.0 <= b.elapsed <= 62.0  # the wait, then the last window it judged
    assert sum(b.sleeps) == pytest.approx(b.elapsed)


def test_what_qualifies_is_printed_when_the_time_runs_out(bench, capsys) -> None:
    b = bench(free_at=WINDOW_READS + 2)
    code, out, err = b.run(capsys, count=2, wait_s=30)
    assert (code, out) == (1, "7\n")  # GPU 7 freed; a second never did
    assert "1 GPU qualifies, 2 asked for, after waiting" in err and "  GPU 7: picked" in err


def test_more_gpus_than_the_node_has_is_not_waited_for(bench, capsys) -> None:
    b = bench()
    code, out, err = b.run(capsys, count=9, wait_s=600)
    assert (code, out) == (1, "")
    assert "9 asked for (not waiting: only 8 candidate GPUs)" in err
    assert b.elapsed == 2.0 and b.reads == WINDOW_READS


# -- no GPU, or a driver that stops answering: exit 2 ---------------------------------------------


def test_no_gpu_exits_2_without_waiting(monkeypatch, capsys) -> None:
    def refuse(spec: object, **kw: object) -> None:
        raise NoBackend([("NVML", "libnvidia-ml.so.1 not found (no NVIDIA driver)")])

    slept: list[float] = []
    monkeypatch.setattr("gputui.backends.open_backend", refuse)
    options = PickOptions(BackendSpec.parse("auto"), count=2, wait_s=1800)
    assert pick.run(options, Seams(sleep=slept.append, environ={})) == 2
    assert "NVML: libnvidia-ml.so.1 not found" in capsys.readouterr().err
    assert slept == []
    monkeypatch.undo()  # a node, but CUDA_VISIBLE_DEVICES hides every GPU
    hidden = Seams(sleep=slept.append, environ={"CUDA_VISIBLE_DEVICES": "-1"})
    options = PickOptions(BackendSpec.parse("sim:dgx-h100"), wait_s=1800)
    assert pick.run(options, hidden) == 2
    assert "no GPU to pick from" in capsys.readouterr().err
    assert slept == []


def test_a_driver_that_stops_answering_while_waiting_exits_2(bench, monkeypatch, capsys) -> None:
    monkeypatch.setattr(pick, "READING_WAIT_S", 0.3)  # how long a reading may take (real time)
    b = bench(hang_at=WINDOW_READS + 4)
    began = time.monotonic()
    code, out, err = b.run(capsys, count=1, wait_s=1800)
    assert (code, out) == (2, "")
    assert err.rstrip().endswith(
        "sim:dgx-h100 is not answering (a driver call hangs); it stopped answering while pick "
        "waited for free GPUs"
    )
    assert b.elapsed == 2.0 + 4 * 5.0  # it stopped at the reading that hung
    assert time.monotonic() - began < 5


# -- Ctrl-C and SIGTERM ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raised", "code", "said"),
    [
        (KeyboardInterrupt, 130, "gputui pick: interrupted (Ctrl-C); no GPU picked"),
        (
            interrupt.Stopped(signal.SIGTERM),
            143,
            "gputui pick: terminated (SIGTERM); no GPU picked",
        ),
    ],
)
def test_a_signal_mid_wait_ends_it_with_one_line(bench, capsys, raised, code, said) -> None:
    b = bench()

    def sleep(seconds: float) -> None:
        b.sleep(seconds)
        if len(b.sleeps) > WINDOW_READS + 2:  # after the window's 4 sleeps and 3 polls
            raise raised

    assert b.run(capsys, b.seams(sleep=sleep), count=2, wait_s=600) == (code, "", said + "\n")


def test_signal_handlers_are_put_back() -> None:
    assert threading.current_thread() is threading.main_thread()  # else SIGTERM ends the run
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with interrupt.stop_on_signals():
        assert signal.getsignal(signal.SIGTERM) is not before[0]
        with pytest.raises(interrupt.Stopped) as stopped:
            signal.raise_signal(signal.SIGTERM)
    assert stopped.value.exit_code == 143
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


WAITING_PICK = ("pick", "-n", "2", "--wait", "10m", "-v", "--backend", "sim:dgx-h100")


@pytest.fixture
def waiting_pick() -> Iterator[subprocess.Popen[str]]:
    """``gputui pick -n 2 --wait 10m -v`` on the simulated DGX H100 (nothing frees), in a child
    process, once it has said that it waits."""
    proc = start_gputui(*WAITING_PICK)
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()  # blocks until it waits (or it ended: "")
        assert first.startswith("gputui pick: waiting up to 10m00s for 2 free GPUs"), first
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_waiting_pick_ends_promptly_on_a_signal(waiting_pick, sig, code) -> None:
    time.sleep(0.3)  # into its sleep between polls
    sent = time.monotonic()
    waiting_pick.send_signal(sig)
    out, err = waiting_pick.communicate(timeout=10)
    took = time.monotonic() - sent
    assert waiting_pick.returncode == code and out == ""
    assert took < 2.0
    word = "interrupted (Ctrl-C)" if sig == signal.SIGINT else "terminated (SIGTERM)"
    assert err == f"gputui pick: {word}; no GPU picked\n"  # one line, no traceback


# -- what it says while it waits ------------------------------------------------------------------


def test_one_line_when_waiting_starts_on_a_terminal_or_with_verbose(bench, capsys) -> None:
    b = bench(free_at=WINDOW_READS + 10)
    code, out, err = b.run(capsys, b.seams(stderr_is_terminal=True), count=1, wait_s=600)
    assert (code, out) == (0, "7\n")
    assert err.splitlines() == [
        "gputui pick: waiting up to 10m00s for 1 free GPU (0 qualify now): "
        "GPU 0 busy (100 % util), GPU 1 busy (100 % util), GPU 2 busy (100 % util), "
        "GPU 3 busy (100 % util), GPU 4 busy (100 % util), GPU 5 busy (99 % util), "
        "GPU 6 busy (70 % util), GPU 7 held (39.3G in use)",
        "gputui pick: free after waiting 54s",
    ]  # one line however many polls (10 here), and one when it is done
    b = bench(free_at=WINDOW_READS + 10)
    code, out, err = b.run(capsys, count=1, wait_s=600, verbose=True)
    assert code == 0 and err.count("waiting up to") == 1 and "  GPU 7: picked" in err


def test_nothing_is_said_while_waiting_into_a_file(bench, capsys) -> None:
    b = bench(free_at=WINDOW_READS + 10)
    assert b.run(capsys, count=1, wait_s=600) == (0, "7\n", "")


# -- the driver is read a bounded number of times, on one session ----------------------------------


@pytest.mark.parametrize(("wait_s", "poll_s"), [(3600.0, 5.0), (3600.0, 60.0), (20.0, 5.0)])
def test_readings_while_waiting_stay_bounded(bench, capsys, wait_s, poll_s) -> None:
    b = bench()
    code, _, _ = b.run(capsys, count=2, wait_s=wait_s, poll_s=poll_s)
    assert code == 1
    probes = int(wait_s // poll_s)
    # the first window, one reading a poll, the last window (begun with the last poll's reading)
    assert b.reads == WINDOW_READS + probes + (WINDOW_READS - 1)
    assert b.opened == 1 and b.backend.opens == 1  # never reopened
    slept = polls(b)  # each poll_s, the last one what was left of the wait
    assert slept[:-1] == [poll_s] * (len(slept) - 1) and 0 < slept[-1] <= poll_s


# -- the command line -----------------------------------------------------------------------------


def test_wait_and_poll_from_the_command_line(capsys) -> None:
    argv = ["pick", "-n", "2", "--wait", "1h30m", "--poll", "9", "--window", "0"]
    args = cli.build_parser().parse_args(argv)
    options = pick.options(args, Common.from_args(args))
    assert (options.wait_s, options.poll_s) == (5400.0, 9.0)
    args = cli.build_parser().parse_args(["pick", "--wait", "90s"])
    assert pick.options(args, Common.from_args(args)).poll_s == 5.0
    # the MI300X node is idle for its first 15 s: found at once, nothing said
    code = cli.main(["pick", "--backend", "sim:mi300x", *argv[1:]])
    assert (code, *capsys.readouterr()) == (0, "0,1\n", "")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["pick", "--wait", "soon"], "is not a duration"),
        (["pick", "--wait", "0"], "more than 0 seconds"),
        (["pick", "--wait", "1m", "--poll", "0.2"], "between 1 and 3600"),
        (["pick", "--poll", "10"], "give --wait DURATION too"),
    ],
)
def test_bad_wait_arguments_exit_2(capsys, argv, message) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("reason", "said"),
    [
        ("busy: utilization up to 87 % over 2.0 s (--max-util 10)", "busy (87 % util)"),
        ("held: 30.0G in use (a free GPU holds at most 1 GiB; ...)", "held (30.0G in use)"),
        ("lost: GPU is lost (fell off the bus)", "lost"),
        ("unhealthy: GPU 5: XID 79 [xid]", "unhealthy"),
        ("in MIG mode: a job names a MIG instance's UUID there, not the GPU", "in MIG mode"),
        ("50.0G free, needs 60.0G (--min-free)", "50.0G free, needs 60.0G"),
        ("PID 1 (eve) started 1m00s ago (--idle-for 5m00s)", "PID 1 (eve) started 1m00s ago"),
        ("PID 3: start time unknown (--idle-for)", "PID 3: start time unknown"),
    ],
)
def test_the_waiting_line_says_each_reason_in_a_few_words(reason, said) -> None:
    judged = Judged(3, (reason, "a second reason is left out"), peak_util_pct=87.0)
    assert brief(judged) == said
    line = waiting_line(Pick((), (judged, Judged(4)), 2), 90)
    assert line == (
        f"gputui pick: waiting up to 1m30s for 2 free GPUs (1 qualifies now): GPU 3 {said}"
    )
