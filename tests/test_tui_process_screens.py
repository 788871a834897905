"""ProcessDetailScreen and ConfirmSignalScreen."""

from __future__ import annotations

import signal
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Button, Label, Sparkline, Static

from gputui.format import fmt_bytes
from gputui.history import History
from gputui.model import GpuInfo, GpuSample, NodeInfo, ProcessSample, Snapshot
from gputui.tui.screens.confirm_signal import ConfirmSignalScreen
from gputui.tui.screens.process_detail import ProcessDetailScreen

GiB = 1024**3
T0 = 1_700_000_000.0
NODE = NodeInfo(
    hostname="node1",
    backend="fake",
    gpus=(GpuInfo(index=0, name="Fake GPU", uuid="GPU-0", vendor="nvidia"),),
)
LONG_COMMAND = "python -m torch.distributed.run --nproc-per-node 8 train.py " + " ".join(
    f"--option-{i}=value-{i}" for i in range(12)
)


def proc(**kw: Any) -> ProcessSample:
    values: dict[str, Any] = {
        "pid": 4242,
        "gpu_index": 0,
        "gpu_memory_bytes": 2 * GiB,
        "sm_pct": 50.0,
        "user": "alice",
        "name": "python",
        "command": LONG_COMMAND,
        "cpu_pct": 100.0,
        "host_rss_bytes": GiB,
        "start_time": T0 - 3661,
        "container_id": "abcdef0123456789" * 4,
    }
    values.update(kw)
    return ProcessSample(**values)


def snap(*processes: ProcessSample, ts: float = T0) -> Snapshot:
    return Snapshot(
        timestamp=ts,
        node=NODE,
        gpus=(GpuSample(index=0, timestamp=ts),),
        processes=processes,
    )


def text_of(widget: Static) -> str:
    return str(widget.render())


class HostApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Label("dashboard")


# --- detail screen ------------------------------------------------------------------------------


async def test_detail_shows_process_and_history() -> None:
    history = History()
    for i, mem in enumerate((1 * GiB, 3 * GiB, 2 * GiB)):
        history.record(snap(proc(gpu_memory_bytes=mem, sm_pct=10.0 * (i + 1)), ts=T0 + i))
    process = proc(gpu_memory_bytes=2 * GiB, sm_pct=30.0)
    app = HostApp()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = ProcessDetailScreen(process, history)
        await app.push_screen(screen)
        await pilot.pause()
        info = text_of(screen.query_one("#detail-info", Static))
        assert "4242" in info and "alice" in info
        assert "abcdef0123456789" in info  # the full container id
        assert "1:01:03" in info  # elapsed at the last recorded snapshot (T0 + 2)
        # The full command, wrapped rather than cut.
        assert LONG_COMMAND.split()[-1] in info
        assert text_of(screen.query_one("#detail-status", Label)) == "running"

        memory_label = text_of(screen.query(".detail-plot-label").first(Label))
        assert f"now {fmt_bytes(2 * GiB)}" in memory_label
        assert f"min {fmt_bytes(GiB)}" in memory_label
        assert f"max {fmt_bytes(3 * GiB)}" in memory_label
        assert list(screen.query_one("#plot-gpu_memory_bytes", Sparkline).data) == [
            GiB,
            3 * GiB,
            2 * GiB,
        ]

        # A new reading updates numbers and plots.
        newer = proc(gpu_memory_bytes=5 * GiB)
        history.record(snap(newer, ts=T0 + 3))
        screen.update_snapshot(snap(newer, ts=T0 + 3))
        await pilot.pause()
        memory_label = text_of(screen.query(".detail-plot-label").first(Label))
        assert f"now {fmt_bytes(5 * GiB)}" in memory_label
        assert f"max {fmt_bytes(5 * GiB)}" in memory_label
        assert list(screen.query_one("#plot-gpu_memory_bytes", Sparkline).data)[-1] == 5 * GiB


async def test_detail_reports_exit_calmly_and_closes() -> None:
    history = History()
    process = proc()
    history.record(snap(process))
    app = HostApp()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = ProcessDetailScreen(process, history)
        await app.push_screen(screen)
        await pilot.pause()

        screen.update_snapshot(snap(ts=T0 + 1))  # the process is gone
        await pilot.pause()
        status = screen.query_one("#detail-status", Label)
        assert text_of(status) == "process exited"
        assert screen.exited
        memory_label = text_of(screen.query(".detail-plot-label").first(Label))
        assert f"last {fmt_bytes(2 * GiB)}" in memory_label

        # A new process that reuses the PID is not the one we were showing.
        screen.update_snapshot(snap(proc(start_time=T0 + 0.5), ts=T0 + 2))
        await pilot.pause()
        assert text_of(status) == "process exited"

        await pilot.press("q")
        await pilot.pause()
        assert app.screen is not screen


async def test_detail_closes_on_escape() -> None:
    app = HostApp()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = ProcessDetailScreen(proc(), History())
        await app.push_screen(screen)
        await pilot.pause()
        assert app.screen is screen
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is not screen


# --- confirm dialog -----------------------------------------------------------------------------


async def confirm_with(*keys: str, click: str | None = None) -> signal.Signals | None:
    results: list[signal.Signals | None] = []
    app = HostApp()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = ConfirmSignalScreen(proc())
        app.push_screen(screen, results.append)
        await pilot.pause()
        shown = text_of(screen.query_one("#confirm-details", Static))
        assert "4242" in shown and "alice" in shown and fmt_bytes(2 * GiB) in shown
        assert "train.py" in shown
        assert app.focused is screen.query_one("#signal-term", Button)
        if click:
            assert await pilot.click(click)
        await pilot.press(*keys)
        await pilot.pause()
        assert app.screen is not screen
    assert len(results) == 1
    return results[0]


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (("t",), signal.SIGTERM),
        (("k",), signal.SIGKILL),
        (("i",), signal.SIGINT),
        (("escape",), None),
        (("enter",), signal.SIGTERM),  # the default button
    ],
)
async def test_confirm_keys(keys: tuple[str, ...], expected: signal.Signals | None) -> None:
    assert await confirm_with(*keys) is expected


async def test_confirm_buttons() -> None:
    assert await confirm_with(click="#signal-kill") is signal.SIGKILL
    assert await confirm_with(click="#signal-cancel") is None


async def test_confirm_with_push_screen_wait() -> None:
    app = HostApp()
    results: list[signal.Signals | None] = []
    async with app.run_test(size=(120, 40)) as pilot:

        async def ask() -> None:
            results.append(await app.push_screen_wait(ConfirmSignalScreen(proc())))

        app.run_worker(ask())
        await pilot.pause()
        await pilot.press("k")
        await app.workers.wait_for_complete()
    assert results == [signal.SIGKILL]
