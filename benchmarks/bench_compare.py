#!/usr/bin/env python3
"""gputui next to nvitop on the same NVML node, in one run.

Both tools refresh at the same ``--interval`` (2 s by default, nvitop's own default) in a
``--size`` pty (120x40 by default). Each round runs every tool once in the same pseudo-terminal
set-up as ``bench_tui.py`` (first frame, CPU % of one core, terminal bytes/s, peak RSS), one after
the other (every other round in the reverse order), so that the noise of this machine at that
moment touches them alike; the figures printed are medians over the rounds, and the ratios to
nvitop (and to ``--gputui-before``) are taken round by round (a tool's figure over the other's in
the same round), then their median.

With the simulated NVML library (``shared/fakenvml``; point ``--nvml-lib`` at the directory that
holds its ``libnvidia-ml.so.1``), every NVML call each tool makes during the measurement window is
counted through the library's own trace (``FAKE_NVML_TRACE=2``) and printed per GPU per second.
On a real driver the call counts are left out.

    python benchmarks/bench_compare.py --nvml-lib /path/to/fakenvml/build --nvitop /venv/bin/nvitop
    python benchmarks/bench_compare.py --rounds 5 --seconds 30 --json
    python benchmarks/bench_compare.py ... --gputui-before /path/to/old/src   # before/after

``--gputui-before SRC`` adds a third tool, gputui run with ``PYTHONPATH=SRC`` (an older
checkout's ``src``), measured in the same rounds, so a change is compared with what it changes
under the same noise. ``--baseline`` adds the trivial Textual app of ``bench_tui.py`` (what
Textual alone costs to start and to keep).

Targets (issue figures): CPU <= 0.8 x nvitop's at its default refresh, first frame <= 0.4 s,
<= 20 NVML calls per GPU per second, <= 3 KB/s at 120x40, RSS <= 60 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_tui  # a sibling script, not a package


@dataclass
class Tool:
    name: str
    command: list[str]
    marker: str
    pythonpath: str | None = None
    """``PYTHONPATH`` for this tool's runs (None: as this process has it)."""
    runs: list[bench_tui.RunResult] = field(default_factory=list)
    calls_per_gpu_s: list[float] = field(default_factory=list)


class CallCounter:
    """Counts NVML calls in the library's trace file between the window's start and end."""

    def __init__(self, path: Path, gpus: int) -> None:
        self.path = path
        self.gpus = gpus
        self.start_lines = 0
        self.result: float | None = None
        self._t0 = 0.0

    def _lines(self) -> int:
        try:
            with self.path.open("rb") as f:
                return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
        except FileNotFoundError:
            return 0

    def __call__(self, event: str) -> None:
        import time

        if event == "start":
            self.start_lines = self._lines()
            self._t0 = time.perf_counter()
        else:
            span = time.perf_counter() - self._t0
            calls = self._lines() - self.start_lines
            self.result = calls / span / self.gpus if span > 0 else None


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nvml-lib", help="directory with libnvidia-ml.so.1 (the simulated library)")
    p.add_argument("--nvitop", default=shutil.which("nvitop"), help="nvitop executable")
    p.add_argument("--python", default=sys.executable, help="the Python that runs gputui")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=20.0, help="measurement window per run")
    p.add_argument("--settle", type=float, default=3.0)
    p.add_argument("--size", type=bench_tui._size, default=(120, 40))
    p.add_argument("--gpus", type=int, default=8, help="GPUs on the node (for calls per GPU)")
    p.add_argument(
        "--interval",
        type=float,
        default=2.0,
        help="refresh interval in seconds, passed to both tools (default 2, nvitop's default)",
    )
    p.add_argument("--gputui-args", default="", help="extra arguments for gputui")
    p.add_argument(
        "--gputui-before",
        metavar="SRC",
        help="also run gputui with PYTHONPATH=SRC (an older checkout's src) in the same rounds",
    )
    p.add_argument(
        "--baseline",
        action="store_true",
        help="also run the trivial Textual app of bench_tui.py (Textual's own cost)",
    )
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--no-warmup",
        action="store_true",
        help="skip the uncounted first run of each tool (which fills the disk cache and, for "
        "Python tools, the bytecode cache)",
    )
    return p.parse_args(argv)


def run_args(
    args: argparse.Namespace, marker: str, hook: CallCounter | None, seconds: float | None = None
) -> argparse.Namespace:
    window = args.seconds if seconds is None else seconds
    ns = bench_tui.parse_args(["--seconds", str(window), "--settle", str(args.settle)])[0]
    ns.cols, ns.rows = args.size
    ns.marker = marker
    ns.window_hook = hook
    return ns


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    interval = ["--interval", f"{args.interval:g}"]
    gputui = [args.python, "-m", "gputui", *interval, *args.gputui_args.split()]
    tools = [Tool("gputui", gputui, "gputui")]
    if args.gputui_before:
        before = str(Path(args.gputui_before).resolve())
        tools.append(Tool("before", gputui, "gputui", pythonpath=before))
    if args.nvitop:
        tools.append(Tool("nvitop", [args.nvitop, *interval], "NVITOP"))
    else:
        print("nvitop not found (--nvitop PATH): measuring gputui alone", file=sys.stderr)
    if args.baseline:
        tools.append(Tool("textual", [args.python, "-c", bench_tui.BASELINE_APP], "baseline"))
    trace_dir = Path(tempfile.mkdtemp(prefix="bench-compare-"))
    saved = dict(os.environ)
    try:
        if args.nvml_lib:
            os.environ["LD_LIBRARY_PATH"] = os.pathsep.join(
                [args.nvml_lib, os.environ.get("LD_LIBRARY_PATH", "")]
            ).rstrip(os.pathsep)
        # As on a user's machine: Python caches compiled bytecode (a shell that sets
        # PYTHONDONTWRITEBYTECODE would make every start compile gputui from source).
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        pythonpath = os.environ.get("PYTHONPATH")

        def use_pythonpath(tool: Tool) -> None:
            path = tool.pythonpath if tool.pythonpath is not None else pythonpath
            if path is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = path

        if not args.no_warmup:
            for tool in tools:
                print(f"warm-up: {tool.name} ...", file=sys.stderr)
                use_pythonpath(tool)
                bench_tui.run_once(tool.command, run_args(args, tool.marker, None, seconds=1.0))
        for round_no in range(args.rounds):
            # Every other round in the reverse order: no tool always runs right after another.
            for tool in tools if round_no % 2 == 0 else tools[::-1]:
                use_pythonpath(tool)
                counter = None
                if args.nvml_lib:
                    trace = trace_dir / f"{tool.name}-{round_no}.log"
                    os.environ["FAKE_NVML_TRACE"] = "2"
                    os.environ["FAKE_NVML_TRACE_FILE"] = str(trace)
                    counter = CallCounter(trace, args.gpus)
                print(f"round {round_no + 1}/{args.rounds}: {tool.name} ...", file=sys.stderr)
                result = bench_tui.run_once(tool.command, run_args(args, tool.marker, counter))
                tool.runs.append(result)
                if counter is not None and counter.result is not None:
                    tool.calls_per_gpu_s.append(counter.result)
    finally:
        os.environ.clear()
        os.environ.update(saved)
        shutil.rmtree(trace_dir, ignore_errors=True)
    report = summarise(tools, args)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)
    return 0


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def summarise(tools: list[Tool], args: argparse.Namespace) -> dict[str, object]:
    out: dict[str, object] = {
        "size": f"{args.size[0]}x{args.size[1]}",
        "seconds": args.seconds,
        "rounds": args.rounds,
        "interval": args.interval,
        "nvml": "simulated" if args.nvml_lib else "driver",
        "loadavg": os.getloadavg(),
        "tools": {},
    }
    per_tool: dict[str, dict[str, float | None]] = {}
    for tool in tools:
        per_tool[tool.name] = {
            "first_frame_s": _median([r.first_frame_s for r in tool.runs]),
            "first_quiet_frame_s": _median([r.first_quiet_frame_s for r in tool.runs]),
            "cpu_pct": _median([r.cpu_pct for r in tool.runs]),
            "bytes_per_s": _median([r.bytes_per_s for r in tool.runs]),
            "peak_rss_mb": _median([r.peak_rss_mb for r in tool.runs]),
            "nvml_calls_per_gpu_s": _median(list(tool.calls_per_gpu_s)),
        }
    out["tools"] = per_tool
    by_name = {tool.name: tool for tool in tools}
    if "nvitop" in by_name:
        out["ratios_to_nvitop"] = {
            tool.name: {key: _round_ratios(tool, by_name["nvitop"], key) for key in RATIO_KEYS}
            for tool in tools
            if tool.name in ("gputui", "before")
        }
    if "before" in by_name:
        out["ratios_to_before"] = {
            "gputui": {
                key: _round_ratios(by_name["gputui"], by_name["before"], key) for key in RATIO_KEYS
            }
        }
    return out


RATIO_KEYS = ("first_frame_s", "first_quiet_frame_s", "cpu_pct", "bytes_per_s", "peak_rss_mb")


def _round_ratios(tool: Tool, other: Tool, key: str) -> dict[str, object]:
    """``tool``'s figure over ``other``'s, round by round (the same moment's noise), and their
    median."""
    ratios = []
    for a, b in zip(tool.runs, other.runs, strict=True):
        x, y = getattr(a, key), getattr(b, key)
        if x is not None and y:
            ratios.append(x / y)
    return {"median": statistics.median(ratios) if ratios else None, "rounds": ratios}


def print_table(report: dict[str, object]) -> None:
    tools = report["tools"]
    assert isinstance(tools, dict)
    names = list(tools)
    rows = [
        ("first frame (s)", "first_frame_s", "{:.3f}"),
        ("first quiet frame (s)", "first_quiet_frame_s", "{:.3f}"),
        ("CPU (% of one core)", "cpu_pct", "{:.2f}"),
        ("terminal output (B/s)", "bytes_per_s", "{:.0f}"),
        ("peak RSS (MB)", "peak_rss_mb", "{:.1f}"),
        ("NVML calls per GPU per s", "nvml_calls_per_gpu_s", "{:.1f}"),
    ]
    width = max(len(r[0]) for r in rows)
    print(
        f"{report['size']}, every {report['interval']:g} s, "
        f"{report['rounds']} rounds of {report['seconds']:g} s, NVML "
        f"{report['nvml']}, load {report['loadavg'][0]:.2f}; medians"  # type: ignore[index]
    )
    print(" " * width + "".join(f"  {n:>10}" for n in names))
    for label, key, fmt in rows:
        cells = []
        for n in names:
            value = tools[n][key]
            cells.append(f"  {fmt.format(value):>10}" if value is not None else f"  {'-':>10}")
        print(label.ljust(width) + "".join(cells))
    for other in ("nvitop", "before"):
        _print_ratios(report.get(f"ratios_to_{other}"), other, rows, width)


def _print_ratios(ratios: object, other: str, rows: list[tuple[str, str, str]], width: int) -> None:
    if not isinstance(ratios, dict):
        return
    print(f"\nratio to {other}, round by round (median; rounds)")
    for name, per_key in ratios.items():
        for label, key, _ in rows:
            if key not in per_key:
                continue
            r = per_key[key]
            if r["median"] is None:
                continue
            by_round = ", ".join(f"{x:.2f}" for x in r["rounds"])
            print(f"  {name:>6} {label.ljust(width)}  {r['median']:.2f}  ({by_round})")


if __name__ == "__main__":
    raise SystemExit(main())
