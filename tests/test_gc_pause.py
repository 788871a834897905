"""The collector paused while gputui starts (gputui.core.gc_pause): on again, with the start's
objects frozen, once a command starts its work or the dashboard has drawn its first frame; a
collector someone else turned off stays off."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator

import pytest

from gputui.core import gc_pause


@pytest.fixture
def collector() -> Iterator[None]:
    """Leaves the collector as it found it (on, nothing frozen)."""
    yield
    gc_pause.resume()
    gc.unfreeze()
    gc.enable()


def test_resume_turns_the_collector_on_with_the_start_frozen(collector: None) -> None:
    gc_pause.pause()
    assert not gc.isenabled()
    made_while_paused: list[list[int]] = [[] for _ in range(100)]
    gc_pause.resume()
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(made_while_paused)
    gc.unfreeze()
    gc_pause.resume()  # a second call does nothing
    assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_a_collector_turned_off_elsewhere_stays_off(collector: None) -> None:
    gc.disable()
    gc_pause.pause()
    gc_pause.resume()
    assert not gc.isenabled()
    assert gc.get_freeze_count() == 0


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.strip()


def test_the_entry_point_pauses_and_a_command_resumes() -> None:
    """``gputui`` (``gputui.__main__``) starts with the collector off; ``gputui specs`` has it
    on while it works."""
    out = _run(
        "import gc, io, contextlib\n"
        "import gputui.__main__ as entry\n"
        "print(gc.isenabled())\n"
        "from gputui.commands import specs\n"
        "seen = []\n"
        "real = specs.run\n"
        "specs.run = lambda options: seen.append(gc.isenabled()) or real(options)\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    code = entry.main(['specs', 'rtx4090'])\n"
        "print(seen, code, gc.get_freeze_count() > 0)\n"
    )
    assert out.splitlines() == ["False", "[True] 0 True"]


async def test_the_dashboard_resumes_after_its_first_frame(collector: None, sim_sampler) -> None:  # type: ignore[no-untyped-def]
    from gputui.tui.app import GpuTuiApp

    app = GpuTuiApp(sim_sampler("dgx-h100", polls=2), start_sampler=False)
    gc_pause.pause()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert gc.isenabled()
        assert gc.get_freeze_count() > 0
