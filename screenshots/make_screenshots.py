"""Make the README's screenshots from the simulated backend.

Usage: python screenshots/make_screenshots.py [--out screenshots]

Each shot runs the real app headless on a simulated node whose clock has been stepped through
two minutes of readings (so the history plots have data), then saves what the screen shows as
an SVG. The result is the same on every machine: fixed seed, fixed clock, UTC clock labels.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path

SHOTS: tuple[tuple[str, str, tuple[int, int], tuple[str, ...]], ...] = (
    # (file name, scenario, terminal size, keys pressed before the shot)
    ("dashboard-200x60", "dgx-h100", (200, 60), ()),
    ("dashboard-120x40", "dgx-h100", (120, 40), ()),
    ("dashboard-80x24", "dgx-h100", (80, 24), ()),
    ("faulty-node", "faulty", (120, 40), ()),
    ("single-gpu", "rtx4090", (120, 40), ()),
    ("gpu-selected", "dgx-h100", (120, 40), ("7",)),
    ("mi300x", "mi300x", (120, 40), ()),
    ("mig-node", "mig", (120, 40), ()),
    ("topology", "dgx-h100", (120, 40), ("t",)),
    ("straggler", "straggler", (120, 40), ()),
)
WARM_UP_POLLS = 120


async def shoot(name: str, scenario: str, size: tuple[int, int], keys: tuple[str, ...], out: Path):
    from tests.fakes.clock import fake_clock_sampler

    from gputui.tui.app import GpuTuiApp

    sampler = fake_clock_sampler(scenario, polls=WARM_UP_POLLS)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        if keys:
            await pilot.press(*keys)
            await pilot.pause()
        path = app.save_screenshot(filename=f"{name}.svg", path=str(out))
    return Path(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = parser.parse_args()
    os.environ["TZ"] = "UTC"
    time.tzset()
    os.environ.pop("NO_COLOR", None)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, scenario, size, keys in SHOTS:
        path = asyncio.run(shoot(name, scenario, size, keys, args.out))
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
