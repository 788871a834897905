#!/usr/bin/env python3
"""Benchmark a terminal UI the way a user's SSH session sees it.

Runs a command (by default ``python -m gputui --demo``, the simulated 8-GPU node) in a
pseudo-terminal of a fixed size and reports:

* time to first frame: spawn -> marker string seen in the pty output (budgeted), and
  spawn -> first "quiet" frame (>= N bytes written, then 50 ms of silence; informational);
* CPU % of one core over a measurement window that starts after a settle period;
* bytes written to the terminal per second over the same window;
* peak RSS (sampled every 0.5 s over the whole run) and ``ru_maxrss`` after exit.

This is a script, not a test: see benchmarks/README.md. It deliberately does not import
gputui; it benchmarks a command line, so it can measure other tools too::

    python benchmarks/bench_tui.py                       # gputui --demo, 30 s window
    python benchmarks/bench_tui.py --seconds 5 --json
    python benchmarks/bench_tui.py --baseline            # a trivial Textual app
    python benchmarks/bench_tui.py -- nvitop             # any other command
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import json
import os
import re
import select
import shlex
import signal
import statistics
import struct
import sys
import termios
import time
from dataclasses import asdict, dataclass, field

import psutil

DEFAULT_COMMAND = [sys.executable, "-m", "gputui", "--demo"]

# Budgets for the default command (gputui --demo at 120x40, 1 Hz refresh).
BUDGETS = {
    "first_frame_s": 0.4,  # spawn -> marker visible
    "cpu_pct": 1.5,  # percent of one core, steady state
    "bytes_per_s": 3072.0,  # terminal output, steady state (3 KB/s at 120x40)
    "peak_rss_mb": 60.0,  # MiB, sampled
}

# The noise floor: what Textual alone costs (one Static, never updated).
BASELINE_APP = """\
from textual.app import App, ComposeResult
from textual.widgets import Static


class Baseline(App):
    BINDINGS = [("q", "quit", "Quit")]

    def compose(self) -> ComposeResult:
        yield Static("gputui baseline: one Static widget, no updates")


Baseline().run()
"""
BASELINE_LABEL = "<embedded baseline Textual app>"

RSS_INTERVAL_S = 0.5
QUIT_GRACE_S = 3.0
TERM_GRACE_S = 2.0
MIB = 1024 * 1024

# Terminal queries we answer like a modern terminal would (xterm-256color over SSH into
# kitty / WezTerm / iTerm2 / foot / VTE). Textual sends DECRQM for modes 2026
# (synchronized output) and 2048 (in-band resize) but never blocks on the answer; we
# report 2026 as supported (so the app uses synchronized output, as it would for most
# users) and everything else as unknown.
_QUERY_RE = re.compile(
    rb"\x1b\[\?(?P<decrqm>\d+)\$p"  # DECRQM (private mode)
    rb"|\x1b\[(?P<da1>0?)c"  # primary device attributes
    rb"|\x1b\[(?P<dsr>[56])n"  # device status / cursor position report
    rb"|\x1b\](?P<osc>1[01]);\?(?:\x07|\x1b\\)"  # foreground/background colour query
)
_ANSI_RE = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")


def _answer(match: re.Match[bytes]) -> bytes:
    if match["decrqm"] is not None:
        mode = match["decrqm"].decode()
        setting = 2 if mode == "2026" else 0  # 2 = "reset but recognised", 0 = unknown
        return f"\x1b[?{mode};{setting}$y".encode()
    if match["da1"] is not None:
        return b"\x1b[?62;22c"
    if match["dsr"] is not None:
        return b"\x1b[0n" if match["dsr"] == b"5" else b"\x1b[1;1R"
    colour = "ffff/ffff/ffff" if match["osc"] == b"10" else "0000/0000/0000"
    return f"\x1b]{match['osc'].decode()};rgb:{colour}\x1b\\".encode()


class BenchError(RuntimeError):
    """The command could not be measured (died early, never drew anything...)."""


@dataclass
class RunResult:
    first_frame_s: float | None = None
    first_quiet_frame_s: float | None = None
    cpu_pct: float | None = None
    bytes_per_s: float | None = None
    peak_rss_mb: float | None = None
    ru_maxrss_mb: float | None = None
    window_s: float | None = None
    total_bytes: int = 0
    queries_answered: int = 0
    harness_cpu_pct: float | None = None
    exit: str = ""
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- process tree


def _tree(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return [proc]


def _tree_cpu_s(proc: psutil.Process) -> float:
    """user+system of the process, its live descendants and its reaped children."""
    total = 0.0
    for p in _tree(proc):
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in _tree(proc):
        try:
            total += p.memory_info().rss
        except psutil.Error:
            continue
    return total


def _self_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


# --------------------------------------------------------------------------- one run


_LIVE_CHILDREN: list[_Child] = []


class _Child:
    """A command running as session leader on a fresh pty of the given size."""

    def __init__(self, command: list[str], cols: int, rows: int, env: dict[str, str]) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        # Block our signals across fork so an interrupt cannot strike between fork() and
        # recording the pid (the child would then escape cleanup).
        blocked = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
        self.spawn_t = time.perf_counter()  # just before fork/exec
        pid = os.fork()
        if pid == 0:  # child: set up the terminal, restore signal defaults, exec
            try:
                os.close(master)
                os.setsid()
                fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
                for fd in (0, 1, 2):
                    os.dup2(slave, fd)
                if slave > 2:
                    os.close(slave)
                for sig in (*blocked, signal.SIGPIPE, signal.SIGXFSZ):
                    signal.signal(sig, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
                os.execvpe(command[0], command, env)
            except BaseException as exc:
                os.write(2, f"bench_tui: cannot exec {command[0]!r}: {exc}\r\n".encode())
            finally:
                os._exit(127)
        self.pid = pid
        self.master = master
        self.status: int | None = None
        self.rusage: object | None = None
        _LIVE_CHILDREN.append(self)  # main() cleans these up, however we get interrupted
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        os.close(slave)
        os.set_blocking(master, False)
        self.proc = psutil.Process(pid)

    def poll(self) -> bool:
        """Reap the child if it has exited; True once it has."""
        if self.status is None:
            try:
                pid, status, rusage = os.wait4(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.status = -1
                return True
            if pid:
                self.status, self.rusage = status, rusage
        return self.status is not None

    def wait(self) -> None:
        """Block until the child has exited and been reaped."""
        if self.status is None:
            try:
                _, self.status, self.rusage = os.wait4(self.pid, 0)
            except ChildProcessError:
                self.status = -1

    def signal_group(self, sig: int) -> None:
        """Signal the child's process group (it is alive and unreaped, so its pid is ours)."""
        if self.poll():
            return
        for kill in (lambda: os.killpg(self.pid, sig), lambda: os.kill(self.pid, sig)):
            try:
                kill()
                return
            except (ProcessLookupError, PermissionError):
                continue

    def describe_exit(self) -> str:
        if self.status is None:
            return "running"
        if self.status == -1:
            return "reaped elsewhere"
        if os.WIFSIGNALED(self.status):
            return f"killed by {signal.Signals(os.WTERMSIG(self.status)).name}"
        return f"exit status {os.waitstatus_to_exitcode(self.status)}"


def run_once(command: list[str], args: argparse.Namespace) -> RunResult:
    env = dict(os.environ)
    env.update(TERM="xterm-256color", COLORTERM="truecolor")
    for var in ("LINES", "COLUMNS"):  # would override the pty size in some libraries
        env.pop(var, None)

    res = RunResult()
    marker = args.marker.encode()
    dump = open(args.dump, "wb") if args.dump else None  # noqa: SIM115 (closed in finally)
    child = _Child(command, args.cols, args.rows, env)
    t0 = child.spawn_t
    master = child.master

    total = 0  # bytes read so far
    scan_tail = b""  # overlap for markers / queries split across reads
    out_tail = bytearray()  # last bytes, for error messages
    last_read_t: float | None = None
    rss_peak = 0
    next_rss_t = t0
    win_start_t: float | None = None
    win_end_t = 0.0
    win_start_bytes = 0
    win_start_cpu = win_start_self = 0.0
    frame_seen_t: float | None = None
    eof = False
    quit_sent_t: float | None = None
    term_sent_t: float | None = None

    def drain(now: float) -> None:
        nonlocal total, scan_tail, last_read_t, eof
        while True:
            try:
                chunk = os.read(master, 65536)
            except BlockingIOError:
                return
            except OSError as exc:  # EIO: every slave fd closed (child gone)
                if exc.errno != errno.EIO:
                    raise
                eof = True
                return
            if not chunk:
                eof = True
                return
            total += len(chunk)
            last_read_t = now
            if dump is not None:
                dump.write(chunk)
            out_tail.extend(chunk)
            del out_tail[:-8192]
            window = scan_tail + chunk
            if res.first_frame_s is None and marker in window:
                res.first_frame_s = now - t0
            if args.answer_queries and b"\x1b" in window:
                for m in _QUERY_RE.finditer(window):
                    if m.end() > len(scan_tail):  # not already answered last time
                        _send(master, _answer(m))
                        res.queries_answered += 1
            scan_tail = window[-max(len(marker), 32) :]

    in_window = False
    try:
        while True:
            now = time.perf_counter()
            quiet_s = args.quiet_ms / 1000
            if (
                res.first_quiet_frame_s is None
                and last_read_t is not None
                and total >= args.frame_bytes
                and now - last_read_t >= quiet_s
            ):
                res.first_quiet_frame_s = last_read_t - t0
            if frame_seen_t is None:
                seen = [x for x in (res.first_frame_s, res.first_quiet_frame_s) if x is not None]
                if seen:
                    frame_seen_t = t0 + min(seen)
                    win_start_t = frame_seen_t + args.settle
                elif now - t0 > args.timeout and quit_sent_t is None:
                    res.notes.append(f"no frame within {args.timeout:g} s")
                    quit_sent_t = now
                    _send(master, b"q")

            if child.poll():
                drain(now)
                break

            if now >= next_rss_t:
                rss_peak = max(rss_peak, _tree_rss(child.proc))
                next_rss_t = max(next_rss_t + RSS_INTERVAL_S, now)

            if quit_sent_t is None and win_start_t is not None:
                if not in_window and now >= win_start_t:
                    drain(now)
                    win_start_cpu = _tree_cpu_s(child.proc)
                    win_start_self = _self_cpu_s()
                    win_start_bytes = total
                    win_start_t = time.perf_counter()
                    win_end_t = win_start_t + args.seconds
                    in_window = True
                    if getattr(args, "window_hook", None) is not None:
                        args.window_hook("start")
                elif in_window and now >= win_end_t:
                    drain(now)
                    end_cpu = _tree_cpu_s(child.proc)
                    end_self = _self_cpu_s()
                    end_t = time.perf_counter()
                    span = end_t - win_start_t
                    res.window_s = span
                    res.cpu_pct = 100.0 * (end_cpu - win_start_cpu) / span
                    res.harness_cpu_pct = 100.0 * (end_self - win_start_self) / span
                    res.bytes_per_s = (total - win_start_bytes) / span
                    if getattr(args, "window_hook", None) is not None:
                        args.window_hook("end")
                    quit_sent_t = end_t
                    _send(master, b"q")

            if quit_sent_t is not None:
                if term_sent_t is None and now - quit_sent_t >= QUIT_GRACE_S:
                    res.notes.append("did not quit on 'q' within 3 s: sent SIGTERM")
                    child.signal_group(signal.SIGTERM)
                    term_sent_t = now
                elif term_sent_t is not None and now - term_sent_t >= TERM_GRACE_S:
                    res.notes.append("did not exit on SIGTERM: sent SIGKILL")
                    child.signal_group(signal.SIGKILL)
                    child.wait()
                    break

            # Sleep until something is due, or output arrives.
            deadlines = [next_rss_t]
            if last_read_t is not None and res.first_quiet_frame_s is None:
                deadlines.append(last_read_t + quiet_s)
            if frame_seen_t is None:
                deadlines.append(t0 + args.timeout)
            elif quit_sent_t is None:
                deadlines.append(win_end_t if in_window else win_start_t)
            if quit_sent_t is not None:
                deadlines.append(now + 0.05)  # poll for exit
            timeout = max(0.0, min(deadlines) - time.perf_counter())
            if eof:  # slave closed but child not reaped yet
                time.sleep(min(timeout, 0.05))
                continue
            ready, _, _ = select.select([master], [], [], timeout)
            if ready:
                drain(time.perf_counter())
    finally:
        _release(child)
        if dump is not None:
            dump.close()

    res.total_bytes = total
    if res.first_frame_s is None:
        res.notes.append(f"marker {args.marker!r} never appeared in the output (see --marker)")
    res.peak_rss_mb = rss_peak / MIB if rss_peak else None
    if child.rusage is not None:
        res.ru_maxrss_mb = child.rusage.ru_maxrss * 1024 / MIB  # Linux: KiB
    res.exit = child.describe_exit()
    if res.window_s is None:
        text = _ANSI_RE.sub(b"", bytes(out_tail)).decode(errors="replace").strip()
        detail = "; ".join(res.notes) or f"command ended ({res.exit}) before the window closed"
        raise BenchError(f"{detail}\n--- last output ---\n{text[-2000:]}")
    return res


def _send(master: int, data: bytes) -> None:
    with contextlib.suppress(OSError):
        os.write(master, data)


def _cleanup(child: _Child) -> None:
    """Make sure the child (and its process group) is gone, whatever happened."""
    # Once the leader is reaped its pid may be reused, so never signal it then; the
    # kernel already sent SIGHUP to its foreground group when it (the controlling
    # process of the pty's session) exited.
    if child.poll():
        return
    child.signal_group(signal.SIGTERM)
    deadline = time.monotonic() + TERM_GRACE_S
    while time.monotonic() < deadline:
        if child.poll():
            return
        try:  # keep the pty drained so the child can write its exit sequences
            os.read(child.master, 65536)
        except OSError:
            time.sleep(0.02)
    child.signal_group(signal.SIGKILL)
    child.wait()


def _release(child: _Child) -> None:
    _cleanup(child)
    if child in _LIVE_CHILDREN:
        _LIVE_CHILDREN.remove(child)
        os.close(child.master)


# --------------------------------------------------------------------------- reporting


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def summarise(runs: list[RunResult], command_label: list[str], args: argparse.Namespace) -> dict:
    keys = (
        "first_frame_s",
        "first_quiet_frame_s",
        "cpu_pct",
        "bytes_per_s",
        "peak_rss_mb",
        "ru_maxrss_mb",
        "harness_cpu_pct",
    )
    out: dict = {k: _median([getattr(r, k) for r in runs]) for k in keys}
    passed = {k: (out[k] is not None and out[k] <= budget) for k, budget in BUDGETS.items()}
    out.update(
        seconds=args.seconds,
        settle=args.settle,
        size=f"{args.cols}x{args.rows}",
        command=command_label,
        marker=args.marker,
        repeat=len(runs),
        budgets=dict(BUDGETS),
        passed=passed,
        ok=all(passed.values()),
        cpu_count=os.cpu_count(),
        loadavg=[round(x, 2) for x in os.getloadavg()],
        runs=[asdict(r) for r in runs],
    )
    return out


def _fmt(value: float | None, unit: str, digits: int) -> str:
    return "n/a" if value is None else f"{value:.{digits}f} {unit}"


def render_table(s: dict) -> str:
    n = s["repeat"]
    head = (
        f"{shlex.join(s['command'])} @ {s['size']}, window {s['seconds']:g} s "
        f"after {s['settle']:g} s settle, "
        + (f"median of {n} runs" if n > 1 else "1 run")
        + f" ({s['cpu_count']} CPUs, load {s['loadavg'][0]:.2f})"
    )
    b, p = s["budgets"], s["passed"]

    def verdict(key: str) -> str:
        return "PASS" if p[key] else "FAIL"

    rows = [
        (
            f"first frame (marker {s['marker']!r})",
            _fmt(s["first_frame_s"], "s", 3),
            f"<= {b['first_frame_s']:g} s",
            verdict("first_frame_s"),
        ),
        ("first quiet frame", _fmt(s["first_quiet_frame_s"], "s", 3), "-", "info"),
        (
            "CPU (% of one core)",
            _fmt(s["cpu_pct"], "%", 2),
            f"<= {b['cpu_pct']:g} %",
            verdict("cpu_pct"),
        ),
        (
            "terminal output",
            _fmt(s["bytes_per_s"], "B/s", 0),
            f"<= {b['bytes_per_s']:g} B/s",
            verdict("bytes_per_s"),
        ),
        (
            "peak RSS (sampled)",
            _fmt(s["peak_rss_mb"], "MB", 1),
            f"<= {b['peak_rss_mb']:g} MB",
            verdict("peak_rss_mb"),
        ),
        ("ru_maxrss (after exit)", _fmt(s["ru_maxrss_mb"], "MB", 1), "-", "info"),
        ("harness's own CPU", _fmt(s["harness_cpu_pct"], "%", 2), "-", "info"),
    ]
    widths = [
        max(len(r[i]) for r in [("figure", "value", "budget", "result"), *rows]) for i in range(4)
    ]
    lines = [head, ""]
    for r in [("figure", "value", "budget", "result"), *rows]:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    notes = dict.fromkeys(note for run in s["runs"] for note in run["notes"])
    lines += [f"note: {note}" for note in notes]
    lines.append("overall: " + ("PASS" if s["ok"] else "FAIL (over budget)"))
    return "\n".join(lines)


# --------------------------------------------------------------------------- CLI


def _size(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)[xX](\d+)", text)
    if not m or not (0 < int(m[1]) < 65536 and 0 < int(m[2]) < 65536):
        raise argparse.ArgumentTypeError("expected COLSxROWS, e.g. 120x40")
    return int(m[1]), int(m[2])


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    command: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, command = argv[:i], argv[i + 1 :]
    p = argparse.ArgumentParser(
        prog="bench_tui.py",
        description="Benchmark a TUI in a pseudo-terminal (default: python -m gputui --demo).",
        epilog="Anything after '--' is the command to benchmark instead of gputui --demo.",
    )
    p.add_argument("--size", type=_size, default=(120, 40), help="COLSxROWS (default 120x40)")
    p.add_argument("--seconds", type=float, default=30.0, help="measurement window (default 30)")
    p.add_argument(
        "--settle", type=float, default=3.0, help="wait after the first frame (default 3)"
    )
    p.add_argument("--marker", default="gputui", help="text whose appearance is 'first frame'")
    p.add_argument("--repeat", type=int, default=1, help="runs; figures are medians")
    p.add_argument("--json", action="store_true", help="JSON on stdout (table on stderr)")
    p.add_argument("--check", action="store_true", help="exit 1 if any figure is over budget")
    p.add_argument("--baseline", action="store_true", help="run a trivial Textual app instead")
    p.add_argument(
        "--frame-bytes",
        type=int,
        default=2048,
        help="bytes a 'quiet frame' must have produced (default 2048)",
    )
    p.add_argument("--quiet-ms", type=float, default=50.0, help="silence ending a quiet frame")
    p.add_argument("--timeout", type=float, default=15.0, help="give up if no frame by then")
    p.add_argument("--dump", metavar="PATH", help="write the raw pty output (last run) here")
    p.add_argument(
        "--no-answer-queries",
        dest="answer_queries",
        action="store_false",
        help="do not answer terminal queries (DECRQM, DA1, DSR, OSC 10/11)",
    )
    args = p.parse_args(argv)
    args.cols, args.rows = args.size
    if args.baseline and command:
        p.error("--baseline and a '--' command are mutually exclusive")
    if args.seconds <= 0 or args.settle < 0 or args.repeat < 1:
        p.error("--seconds must be > 0, --settle >= 0, --repeat >= 1")
    return args, command


def main(argv: list[str] | None = None) -> int:
    args, command = parse_args(sys.argv[1:] if argv is None else argv)
    if args.baseline:
        command, label = [sys.executable, "-c", BASELINE_APP], [sys.executable, BASELINE_LABEL]
    else:
        command = command or list(DEFAULT_COMMAND)
        label = command

    def on_signal(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)

    runs: list[RunResult] = []
    try:
        for i in range(args.repeat):
            if args.repeat > 1:
                print(f"run {i + 1}/{args.repeat} ...", file=sys.stderr, flush=True)
            runs.append(run_once(command, args))
    except KeyboardInterrupt:
        print("bench_tui: interrupted; child stopped.", file=sys.stderr)
        return 130
    except BenchError as exc:
        print(f"bench_tui: {shlex.join(label)}: {exc}", file=sys.stderr)
        return 2
    finally:
        if _LIVE_CHILDREN:  # interrupted: a second Ctrl-C must not abort the cleanup
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(sig, signal.SIG_IGN)
            for child in list(_LIVE_CHILDREN):
                _release(child)

    summary = summarise(runs, label, args)
    table = render_table(summary)
    if args.json:
        print(table, file=sys.stderr)
        print(json.dumps(summary, indent=2))
    else:
        print(table)
    return 1 if args.check and not summary["ok"] else 0


if __name__ == "__main__":
    sys.exit(main())
