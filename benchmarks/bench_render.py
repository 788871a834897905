#!/usr/bin/env python3
"""What one refresh of the dashboard costs: bytes to the terminal and CPU, drawn through gputui's
line widgets or through Textual's own paths.

The app runs headless (Pilot) on a simulated node (``dgx-h100``: what ``gputui --demo`` shows),
with a terminal driver that counts what the app writes instead of writing it. Readings are
posted by hand, one per refresh, the way the sampler thread posts them (the reading itself is not
counted). Per refresh: the bytes written, and the process's CPU time from posting the reading to
the frame written, less what waiting for an idle app costs the harness. Each mode runs in its
own process, round after round, so this machine's noise at that moment touches every mode alike;
the figures are medians over all refreshes.

Modes:

* ``fast``: as shipped: line widgets repaint only changed cell spans, hand their cached strips
  to the compositor (``LineWidget.render_lines``), and the dashboard's compositor writes the
  dirty spans only, with minimal escape codes.
* ``textual-render``: the same, but every line widget drawn through Textual's own
  ``Widget.render_lines`` (its StylesCache), as a plain Textual widget is.
* ``stock-compositor``: the fast path, written by Textual's own compositor.
* ``textual``: both of Textual's own: ``Widget.render_lines`` and its compositor.
* ``whole-widget``: as ``textual``, and a widget with anything changed repaints its whole region,
  as ``Static.update``, ``Sparkline`` or ``DataTable.update_cell`` do: what the dashboard would
  cost built from Textual's stock widgets (a lower bound: their own rendering, Rich text to
  segments, is not counted).

It is a script, not a test (timings depend on the machine)::

    python benchmarks/bench_render.py                         # dgx-h100, 120x40
    python benchmarks/bench_render.py --size 200x60 --refreshes 60 --rounds 5
    python benchmarks/bench_render.py --scenario crowded --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

MODES = ("fast", "textual-render", "stock-compositor", "textual", "whole-widget")


def patch(mode: str) -> None:
    """Force a mode's paths (this process only)."""
    from textual.widget import Widget

    from gputui.tui import span_compositor
    from gputui.tui.widgets.line_widget import LineWidget

    if mode in ("textual-render", "textual", "whole-widget"):
        LineWidget.render_lines = Widget.render_lines  # type: ignore[method-assign]
    if mode in ("stock-compositor", "textual", "whole-widget"):
        span_compositor.install = lambda screen: False
    if mode == "whole-widget":
        partial = LineWidget.rebuild

        def rebuild(self: LineWidget) -> None:
            before = self.spans_refreshed
            partial(self)
            if self.spans_refreshed != before:
                self.refresh()  # the whole widget, as a stock widget's update does

        LineWidget.rebuild = rebuild  # type: ignore[method-assign]


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    from tests.fakes.clock import fake_clock_sampler
    from textual.drivers.headless_driver import HeadlessDriver

    from gputui.tui.app import GpuTuiApp
    from gputui.tui.messages import SnapshotReady

    written = [0]

    class CountingDriver(HeadlessDriver):
        """Headless, but the app renders and writes every update (here: counts it)."""

        @property
        def is_headless(self) -> bool:
            return False

        def write(self, data: str) -> None:
            written[0] += len(data.encode("utf-8"))

    patch(args.mode)
    sampler = fake_clock_sampler(args.scenario, polls=args.history)
    app = GpuTuiApp(sampler, start_sampler=False)
    app.driver_class = CountingDriver
    bytes_per: list[int] = []
    cpu_per: list[float] = []
    harness: list[float] = []
    async with app.run_test(headless=False, size=args.size) as pilot:
        await pilot.pause()
        for _ in range(args.refreshes):  # what waiting for the app costs, with nothing to do
            t0 = time.process_time()
            await pilot.pause()
            await pilot.pause()
            harness.append(time.process_time() - t0)
        for n in range(args.warmup + args.refreshes):
            snapshot = sampler.poll()
            sampler.clock.now += 1.0  # type: ignore[attr-defined]
            before, t0 = written[0], time.process_time()
            app.post_message(SnapshotReady(snapshot))
            await pilot.pause()
            await pilot.pause()  # the frame is written on the next idle
            if n >= args.warmup:
                cpu_per.append(time.process_time() - t0)
                bytes_per.append(written[0] - before)
    base = statistics.median(harness)
    return {"mode": args.mode, "bytes": bytes_per, "cpu_s": [max(c - base, 0.0) for c in cpu_per]}


def run_rounds(args: argparse.Namespace) -> dict[str, Any]:
    samples: dict[str, dict[str, list[float]]] = {m: {"bytes": [], "cpu_s": []} for m in args.modes}
    for _ in range(args.rounds):
        for mode in args.modes:
            command = [
                sys.executable, __file__, "--one", mode, "--scenario", args.scenario,
                "--size", f"{args.size[0]}x{args.size[1]}", "--refreshes", str(args.refreshes),
                "--warmup", str(args.warmup), "--history", str(args.history),
            ]  # fmt: skip
            out = subprocess.run(command, capture_output=True, text=True, check=False)
            if out.returncode != 0:
                raise SystemExit(f"{mode} failed:\n{out.stderr[-3000:]}")
            result = json.loads(out.stdout)
            samples[mode]["bytes"] += result["bytes"]
            samples[mode]["cpu_s"] += result["cpu_s"]
    figures = {
        mode: {
            "bytes_per_refresh": statistics.median(s["bytes"]),
            "bytes_mean": round(statistics.fmean(s["bytes"]), 1),
            "cpu_ms_per_refresh": round(1000 * statistics.median(s["cpu_s"]), 2),
        }
        for mode, s in samples.items()
    }
    return {
        "scenario": args.scenario,
        "size": f"{args.size[0]}x{args.size[1]}",
        "refreshes": args.refreshes * args.rounds,
        "rounds": args.rounds,
        "cpu_count": os.cpu_count(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "figures": figures,
    }


def render_table(summary: dict[str, Any]) -> str:
    figures = summary["figures"]
    fast = figures.get("fast")
    lines = [
        f"sim:{summary['scenario']} at {summary['size']}: medians over {summary['refreshes']} "
        f"refreshes ({summary['rounds']} rounds; {summary['cpu_count']} CPUs, "
        f"load {summary['loadavg'][0]:.2f})",
        "",
        f"{'mode':<18}{'bytes/refresh':>15}{'(mean)':>10}{'CPU/refresh':>14}",
    ]
    for mode, fig in figures.items():
        ratio = ""
        if fast and mode != "fast" and fast["bytes_mean"]:
            ratio = f"   ×{fig['bytes_mean'] / fast['bytes_mean']:.1f} bytes"
            ratio += f", ×{fig['cpu_ms_per_refresh'] / fast['cpu_ms_per_refresh']:.1f} CPU"
        lines.append(
            f"{mode:<18}{fig['bytes_per_refresh']:>15.0f}{fig['bytes_mean']:>10.0f}"
            f"{fig['cpu_ms_per_refresh']:>11.2f} ms{ratio}"
        )
    return "\n".join(lines)


def _size(text: str) -> tuple[int, int]:
    cols, _, rows = text.lower().partition("x")
    return int(cols), int(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench_render.py", description=__doc__.splitlines()[0])
    p.add_argument("--scenario", default="dgx-h100", help="simulated node (default dgx-h100)")
    p.add_argument("--size", type=_size, default=(120, 40), help="COLSxROWS (default 120x40)")
    p.add_argument("--refreshes", type=int, default=30, help="refreshes per round (default 30)")
    p.add_argument("--warmup", type=int, default=5, help="refreshes not counted (default 5)")
    p.add_argument("--history", type=int, default=60, help="readings before (default 60)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of every mode (default 3)")
    p.add_argument(
        "--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}"
    )
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.add_argument("--one", metavar="MODE", help=argparse.SUPPRESS)  # one process, one mode
    args = p.parse_args(argv)
    os.environ["TZ"] = "UTC"
    time.tzset()
    if args.one:
        args.mode = args.one
        print(json.dumps(asyncio.run(measure(args))))
        return 0
    args.modes = [m for m in args.modes.split(",") if m]
    unknown = set(args.modes) - set(MODES)
    if unknown:
        p.error(f"unknown mode(s): {', '.join(sorted(unknown))}")
    summary = run_rounds(args)
    print(json.dumps(summary, indent=2) if args.json else render_table(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
