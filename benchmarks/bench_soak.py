#!/usr/bin/env python3
"""Leave the dashboard running and watch its memory: RSS over time, for the 15-minute target.

Runs ``python -m gputui`` (the NVML path with ``--nvml-lib DIR`` holding the simulated
``libnvidia-ml.so.1``; ``--demo`` otherwise) in a pseudo-terminal like ``bench_tui.py``, keeps
reading its output (as a terminal would), and prints the resident memory of the process every
``--every`` seconds. History buffers fill after 900 readings (15 minutes at the default 1 s);
``--interval 0.25`` fills them four times faster, to see the plateau sooner.

    python benchmarks/bench_soak.py --nvml-lib /path/to/fakenvml/build --minutes 15
    python benchmarks/bench_soak.py --demo --minutes 4 --interval 0.25
"""

from __future__ import annotations

import argparse
import errno
import os
import select
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_tui  # a sibling script, not a package


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nvml-lib", help="directory with the simulated libnvidia-ml.so.1")
    p.add_argument("--demo", action="store_true", help="the simulated node instead of NVML")
    p.add_argument("--minutes", type=float, default=15.0)
    p.add_argument("--every", type=float, default=60.0, help="seconds between RSS samples")
    p.add_argument("--interval", type=float, default=1.0, help="gputui's refresh interval")
    p.add_argument("--size", type=bench_tui._size, default=(120, 40))
    args = p.parse_args(argv)
    env = dict(os.environ, TERM="xterm-256color", COLORTERM="truecolor")
    if args.nvml_lib:
        env["LD_LIBRARY_PATH"] = args.nvml_lib
    command = [sys.executable, "-m", "gputui", "--interval", str(args.interval)]
    if args.demo:
        command.append("--demo")
    child = bench_tui._Child(command, args.size[0], args.size[1], env)
    start = time.monotonic()
    end = start + args.minutes * 60
    next_sample = start + 5.0
    readings_per_s = 1.0 / args.interval
    print(f"{' '.join(command)} @ {args.size[0]}x{args.size[1]}, {args.minutes:g} min")
    print(f"{'minutes':>8} {'readings':>9} {'RSS MB':>8}")
    peak = 0.0
    try:
        while time.monotonic() < end:
            ready, _, _ = select.select([child.master], [], [], 0.5)
            if ready:
                try:
                    os.read(child.master, 65536)  # a terminal reads what is drawn
                except OSError as exc:
                    if exc.errno != errno.EIO:
                        raise
                    print("gputui exited", file=sys.stderr)
                    return 2
            now = time.monotonic()
            if now >= next_sample:
                rss = bench_tui._tree_rss(child.proc) / 2**20
                peak = max(peak, rss)
                elapsed = now - start
                print(f"{elapsed / 60:8.1f} {int(elapsed * readings_per_s):9d} {rss:8.1f}")
                sys.stdout.flush()
                next_sample += args.every
    finally:
        os.write(child.master, b"q")
        deadline = time.monotonic() + 5
        while not child.poll() and time.monotonic() < deadline:
            time.sleep(0.1)
        if not child.poll():
            child.signal_group(signal.SIGKILL)
            child.wait()
    print(f"peak RSS {peak:.1f} MB (target <= 60 MB after 15 minutes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
