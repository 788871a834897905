#!/usr/bin/env python3
"""How long the dashboard takes to handle a key, and a refresh, with thousands of processes.

The app runs headless under Pilot on the simulated ``crowded`` node (8 GPUs, 2,000 processes),
or, with ``--scenario``, on another simulated node whose process list is padded with synthetic
processes (``--processes``, 2,000 by default: many users, interpreters, ranks, ports). Each key is
pressed several times; a figure is the CPU time the process spends from sending the key until the
app is idle again and a whole frame has been built, minus the same for a key nothing is bound to
(the harness's own cost). The sampler does not run (readings are posted by hand), so that is the
time the key took to handle: on an otherwise idle core, the latency the user sees. A refresh is
a new reading posted the way the sampler thread posts it (the reading itself is not counted).

It is a script, not a test (timings depend on the machine)::

    python benchmarks/bench_keys.py                     # sim:crowded, 200x60
    python benchmarks/bench_keys.py --scenario dgx-h100 --processes 500 --size 120x40
    python benchmarks/bench_keys.py --json

``--demo`` runs the same node live on the wall clock (what ``bench_tui.py`` measures)::

    python benchmarks/bench_tui.py --seconds 20 -- python benchmarks/bench_keys.py --demo
    python benchmarks/bench_tui.py --seconds 20 -- python -m gputui --backend sim:crowded
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import time
from dataclasses import replace
from typing import Any

USERS = ("alice", "bob", "carol", "dmitri", "svc-train", "svc-infer", "root", "jupyter")
COMMANDS = (
    "/opt/conda/envs/train/bin/python -u /home/{user}/src/llm/train.py --config "
    "configs/llama-70b.yaml --local-rank={rank}",
    "python3 -m torch.distributed.run --nproc-per-node 8 finetune.py --rank {rank}",
    "/usr/bin/python3 /usr/local/bin/vllm serve meta-llama/Llama-3.1-8B-Instruct --port {port}",
    "python -m ipykernel_launcher -f /home/{user}/.local/share/jupyter/runtime/kernel-{rank}.json",
    "/usr/local/bin/tritonserver --model-repository=/models --http-port {port}",
    "ffmpeg -hwaccel cuda -i /data/in/{rank}.mp4 -c:v h264_nvenc /data/out/{rank}.mp4",
)


class SyntheticProcesses:
    """``n`` processes spread over ``gpus`` GPUs, cheap to read again: each slot's fixed facts
    are drawn once; per reading about 1 % of the slots start or exit and a fifth change SM% and
    CPU%, the others are the same objects as last time (as a real process list mostly is)."""

    def __init__(self, n: int, gpus: int, seed: int = 0) -> None:
        from gputui.core.model import ProcessSample

        rng = random.Random(seed)
        self.slots: list[ProcessSample] = []
        for i in range(n + n // 50):  # 2 % spare slots for the ones that come and go
            user = USERS[rng.randrange(len(USERS))]
            command = COMMANDS[rng.randrange(len(COMMANDS))].format(
                user=user, rank=i % 64, port=8000 + i % 1000
            )
            self.slots.append(
                ProcessSample(
                    pid=100_000 + i,
                    gpu_index=i % gpus,
                    type="compute",
                    gpu_memory_bytes=rng.randrange(1, 4000) * (1 << 20),
                    sm_pct=float(rng.randrange(101)),
                    user=user,
                    name=command.split()[0].rsplit("/", 1)[-1],
                    command=command,
                    cpu_pct=round(rng.uniform(0, 400), 1),
                    host_rss_bytes=rng.randrange(100, 30000) * (1 << 20),
                    start_time=1_699_900_000.0 - rng.randrange(86400),
                    container_id=None if rng.random() < 0.5 else f"{rng.getrandbits(64):016x}",
                )
            )
        self.n = n
        self.rng = random.Random(seed + 1)
        self.absent: set[int] = set(range(n, len(self.slots)))

    def read(self) -> list[Any]:
        rng, slots = self.rng, self.slots
        for _ in range(max(self.n // 100, 1)):  # one in a hundred exits, another starts
            gone = rng.randrange(len(slots))
            if gone not in self.absent and self.absent:
                back = self.absent.pop()
                self.absent.add(gone)
                slots[back] = replace(slots[back], pid=slots[back].pid + 1_000_000)
        for i in rng.sample(range(len(slots)), len(slots) // 5):
            slots[i] = replace(
                slots[i], sm_pct=float(rng.randrange(101)), cpu_pct=round(rng.uniform(0, 400), 1)
            )
        return [p for i, p in enumerate(slots) if i not in self.absent]


def crowded_backend(processes: int, scenario: str = "", seed: int = 0) -> Any:
    """The simulated ``crowded`` node (2,000 processes) when the simulated backend has it and
    no other ``scenario`` is asked for; else the simulated ``scenario`` (default ``dgx-h100``)
    with its own processes plus synthetic ones, ``processes`` in all."""
    from gputui.backends.sim import SimBackend
    from gputui.backends.sim.scenarios import SCENARIOS

    if not scenario and "crowded" in SCENARIOS:
        return SimBackend("crowded", seed=seed)
    scenario = scenario or "dgx-h100"

    class Padded(SimBackend):
        extra: SyntheticProcesses | None = None

        def read_processes(self, now: float) -> list[Any]:
            real = super().read_processes(now)
            if self.extra is None:
                self.extra = SyntheticProcesses(max(processes - len(real), 0), len(self._gpus))
            return sorted([*real, *self.extra.read()], key=lambda p: (p.gpu_index, p.pid))

    backend = Padded(scenario, seed=seed)
    backend.name = f"sim:{scenario}+{processes}"
    return backend


# -- key latency -----------------------------------------------------------------------------------

KEYS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # (what, keys pressed in one step)
    ("sort: next column (s)", ("s",)),
    ("sort: reverse (S)", ("S",)),
    ("scroll: down", ("down",)),
    ("scroll: page down", ("pagedown",)),
    ("scroll: end", ("end",)),
    ("scroll: home", ("home",)),
    ("GPU filter (3)", ("3",)),
    ("GPU filter off (a)", ("a",)),
    ("filter: open (/)", ("slash",)),
    ("filter: type a letter", ("r",)),
    ("filter: backspace", ("backspace",)),
    ("filter: clear (escape)", ("escape",)),
)


async def measure_keys(args: argparse.Namespace) -> dict[str, Any]:
    from tests.fakes.clock import FakeClock

    from gputui.engine.session import sampler_for
    from gputui.tui.app import GpuTuiApp
    from gputui.tui.messages import SnapshotReady

    clock = FakeClock()
    backend = crowded_backend(args.processes, args.scenario)
    sampler = sampler_for(backend, backend.open(), interval=1.0, clock=clock, judge="none")
    for _ in range(30):
        sampler.poll()
        clock.now += 1.0
    app = GpuTuiApp(sampler, start_sampler=False)
    results: dict[str, list[float]] = {}
    async with app.run_test(size=args.size) as pilot:
        await pilot.pause()

        def render() -> None:
            list(app.screen._compositor.render_strips())  # what a full frame costs to build

        async def timed(keys: tuple[str, ...]) -> float:
            # CPU time of the whole process: the key's handling and the frame, not the
            # harness's sleeps while it waits for the app to go idle.
            t0 = time.process_time()
            await pilot.press(*keys)
            await pilot.pause()
            render()
            return time.process_time() - t0

        async def refresh() -> float:
            snapshot = sampler.poll()
            clock.now += 1.0
            t0 = time.process_time()
            app.post_message(SnapshotReady(snapshot))
            await pilot.pause()
            render()
            return time.process_time() - t0

        render()
        table = app.dashboard.process_table
        results["(no-op key)"] = [await timed(("f12",)) for _ in range(args.repeat)]
        for what, keys in KEYS:
            samples: list[float] = []
            for _ in range(args.repeat):
                samples.append(await timed(keys))
                if what.startswith("filter: type"):
                    await pilot.press("backspace")  # type the same letter again next time
                elif what.startswith("filter: backspace"):
                    await pilot.press("r")
                elif what.startswith("filter: open") or what.startswith("filter: clear"):
                    await pilot.press("escape" if what.startswith("filter: open") else "slash")
                elif what.startswith("GPU filter (") or what.startswith("GPU filter off"):
                    await pilot.press("a" if what.startswith("GPU filter (") else "3")
                await pilot.pause()
            results[what] = samples
            if what.startswith("filter: open"):
                await pilot.press("slash")  # the next steps type into the filter
                await pilot.pause()
            if what == "GPU filter off (a)":
                await pilot.press("a")
                await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        results["refresh (new reading)"] = [await refresh() for _ in range(args.repeat)]
        rows = table.row_count
        rows_all = len(app.latest.processes) if app.latest is not None else rows
    base = statistics.median(results["(no-op key)"])
    figures = {
        what: {
            "median_ms": round(1000 * max(statistics.median(s) - base, 0.0), 1),
            "max_ms": round(1000 * max(max(s) - base, 0.0), 1),
        }
        for what, s in results.items()
        if what != "(no-op key)"
    }
    return {
        "backend": backend.name,
        "processes": rows_all,
        "rows_in_table": rows,
        "size": f"{args.size[0]}x{args.size[1]}",
        "repeat": args.repeat,
        "harness_ms": round(1000 * base, 1),
        "cpu_count": os.cpu_count(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "figures": figures,
    }


def render_table(summary: dict[str, Any]) -> str:
    lines = [
        f"{summary['backend']}: {summary['processes']} processes ({summary['rows_in_table']} rows) "
        f"at {summary['size']}, "
        f"median/max of {summary['repeat']} presses, minus {summary['harness_ms']} ms of harness "
        f"({summary['cpu_count']} CPUs, load {summary['loadavg'][0]:.2f})",
        "",
        f"{'step':<28}{'median':>10}{'max':>10}",
    ]
    for what, fig in summary["figures"].items():
        lines.append(f"{what:<28}{fig['median_ms']:>8.1f}ms{fig['max_ms']:>8.1f}ms")
    return "\n".join(lines)


# -- live demo -------------------------------------------------------------------------------------


def run_demo(args: argparse.Namespace) -> int:
    from gputui.engine.session import sampler_for
    from gputui.tui.app import GpuTuiApp

    backend = crowded_backend(args.processes, args.scenario)
    sampler = sampler_for(backend, backend.open(), interval=1.0)
    app = GpuTuiApp(sampler)
    app.run()
    return app.return_code or 0


def _size(text: str) -> tuple[int, int]:
    cols, _, rows = text.lower().partition("x")
    return int(cols), int(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench_keys.py", description=__doc__.splitlines()[0])
    p.add_argument(
        "--scenario",
        default="",
        help="simulated node (default: crowded if there is one, else dgx-h100 padded with "
        "synthetic processes)",
    )
    p.add_argument(
        "--processes",
        type=int,
        default=2000,
        help="processes in all when padding a scenario (default 2000)",
    )
    p.add_argument("--size", type=_size, default=(200, 60), help="COLSxROWS (default 200x60)")
    p.add_argument("--repeat", type=int, default=5, help="presses per key (default 5)")
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.add_argument("--demo", action="store_true", help="run the crowded node live instead")
    args = p.parse_args(argv)
    if args.demo:
        return run_demo(args)
    os.environ["TZ"] = "UTC"
    time.tzset()
    summary = asyncio.run(measure_keys(args))
    print(json.dumps(summary, indent=2) if args.json else render_table(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
