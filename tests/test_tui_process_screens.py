"""ProcessDetailScreen and ConfirmSignalScreen."""

from __future__ import annotations

import signal
from typing import Any

import pytest
from tests.fakes.clock import FakeClock
from textual.app import App, ComposeResult
from textual.widgets import Button, Label, Static

from gputui.core.format import fmt_bytes
from gputui.core.history import History
from gputui.core.model import (
    MAX_COMMAND_CHARS,
    GpuInfo,
    GpuSample,
    MigDeviceInfo,
    NodeInfo,
    ProcessSample,
    Snapshot,
)
from gputui.tui.screens import confirm_signal
from gputui.tui.screens.confirm_signal import TYPE_AHEAD_S, ConfirmSignalScreen
from gputui.tui.screens.process_detail import ProcessChart, ProcessDetailScreen

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


def known(values: list[float]) -> list[float]:
    return [v for v in values if v == v]


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

        chart = screen.query_one("#plot-gpu_memory_bytes", ProcessChart)
        memory_label = chart.plain_lines[0]
        assert memory_label.startswith("GPU memory")
        assert f"now {fmt_bytes(2 * GiB)}" in memory_label
        assert f"min {fmt_bytes(GiB)}" in memory_label
        assert f"max {fmt_bytes(3 * GiB)}" in memory_label
        assert known(chart.values) == [GiB, 3 * GiB, 2 * GiB]  # a reading a column

        # A new reading updates numbers and plots.
        newer = proc(gpu_memory_bytes=5 * GiB)
        history.record(snap(newer, ts=T0 + 3))
        screen.update_snapshot(snap(newer, ts=T0 + 3))
        await pilot.pause()
        memory_label = chart.plain_lines[0]
        assert f"now {fmt_bytes(5 * GiB)}" in memory_label
        assert f"max {fmt_bytes(5 * GiB)}" in memory_label
        assert known(chart.values)[-1] == 5 * GiB


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
        memory_label = screen.query_one("#plot-gpu_memory_bytes", ProcessChart).plain_lines[0]
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


@pytest.fixture
def dialog_clock(monkeypatch) -> FakeClock:
    """The dialog's clock: it stands still unless a test moves it on."""
    clock = FakeClock(1000.0)
    monkeypatch.setattr(confirm_signal, "monotonic", clock)
    return clock


async def confirm_with(
    clock: FakeClock, *keys: str, click: str | None = None, read: bool = True
) -> signal.Signals | None:
    """Open the dialog, let the user read it (``read``: TYPE_AHEAD_S pass), then click and press
    ``keys``; what it dismissed with."""
    results: list[signal.Signals | None] = []
    app = HostApp()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = ConfirmSignalScreen(proc())
        app.push_screen(screen, results.append)
        await pilot.pause()
        shown = text_of(screen.query_one("#confirm-details", Static))
        assert "4242" in shown and "alice" in shown and "2.00 GiB GPU memory" in shown
        assert "train.py" in shown
        assert app.focused is screen.query_one("#signal-cancel", Button)
        if read:
            clock.now += TYPE_AHEAD_S + 0.05
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
        (("T",), signal.SIGTERM),
        (("K",), signal.SIGKILL),
        (("I",), signal.SIGINT),
        (("escape",), None),
        (("enter",), None),  # the default button is Cancel
        (("t", "k", "i", "enter"), None),  # lower-case letters send nothing
        (("right", "enter"), signal.SIGINT),
        (("right", "right", "enter"), signal.SIGTERM),
        (("tab", "tab", "tab", "enter"), signal.SIGKILL),
    ],
)
async def test_confirm_keys(
    dialog_clock: FakeClock, keys: tuple[str, ...], expected: signal.Signals | None
) -> None:
    assert await confirm_with(dialog_clock, *keys) is expected


async def test_confirm_buttons(dialog_clock: FakeClock) -> None:
    assert await confirm_with(dialog_clock, click="#signal-kill") is signal.SIGKILL
    assert await confirm_with(dialog_clock, click="#signal-cancel") is None


async def test_nothing_typed_or_clicked_ahead_chooses_a_signal(dialog_clock: FakeClock) -> None:
    """Within TYPE_AHEAD_S of opening, K and a click on Kill choose nothing and tab moves to no
    other button: enter then presses Cancel."""
    assert await confirm_with(dialog_clock, "K", "tab", "enter", read=False) is None
    assert await confirm_with(dialog_clock, "escape", click="#signal-kill", read=False) is None


async def test_confirm_with_push_screen_wait(dialog_clock: FakeClock) -> None:
    app = HostApp()
    results: list[signal.Signals | None] = []
    async with app.run_test(size=(120, 40)) as pilot:

        async def ask() -> None:
            results.append(await app.push_screen_wait(ConfirmSignalScreen(proc())))

        app.run_worker(ask())
        await pilot.pause()
        dialog_clock.now += TYPE_AHEAD_S + 0.05
        await pilot.press("K")
        await app.workers.wait_for_complete()
    assert results == [signal.SIGKILL]


async def test_detail_charts_scale_from_zero_with_labelled_axes() -> None:
    """A 59.9–60.3 GB wobble on an 80 GB GPU is a flat line at three quarters of the height, not
    a plot filling it; the scale says 0 and the GPU's memory, the time axis how long ago."""
    history = History()
    total = 80 * GiB
    used, free = 61 * GiB, 19 * GiB
    wobble = [59.9, 60.3, 60.0, 60.2, 59.9, 60.3] * 10
    for i, gb in enumerate(wobble):
        sample = proc(gpu_memory_bytes=int(gb * GiB), sm_pct=40.0 + i % 3, cpu_pct=250.0)
        history.record(
            Snapshot(
                timestamp=T0 + i,
                node=NODE,
                gpus=(
                    GpuSample(
                        index=0, timestamp=T0 + i, memory_used_bytes=used, memory_free_bytes=free
                    ),
                ),
                processes=(sample,),
            )
        )
    latest = Snapshot(
        timestamp=T0 + 59,
        node=NODE,
        gpus=(
            GpuSample(index=0, timestamp=T0 + 59, memory_used_bytes=used, memory_free_bytes=free),
        ),
        processes=(sample,),
    )
    app = HostApp()
    async with app.run_test(size=(100, 60)) as pilot:
        screen = ProcessDetailScreen(sample, history)
        await app.push_screen(screen)
        screen.update_snapshot(latest)
        await pilot.pause()
        lines = screen.query_one("#plot-gpu_memory_bytes", ProcessChart).plain_lines
        plot = lines[1:-1]
        assert plot[0].startswith(fmt_bytes(total)) and plot[-1].lstrip().startswith("0B")
        # Every column at the same height, three quarters up: the top row empty, the bottom full.
        columns = [line.split("▕", 1)[1] for line in plot]
        assert columns[0].strip() == ""
        assert set(columns[-1].strip()) == {"█"}
        assert len(columns[-1].strip()) == len(wobble)
        assert lines[-1].rstrip().endswith("now") and "-30s" in lines[-1]

        sm = screen.query_one("#plot-sm_pct", ProcessChart).plain_lines
        assert sm[1].lstrip().startswith("100%") and sm[-2].lstrip().startswith("0%")
        cpu = screen.query_one("#plot-cpu_pct", ProcessChart).plain_lines
        assert cpu[1].lstrip().startswith("300%")  # several cores: a round number above the largest


# --- who the process works for, and its MIG instance -------------------------------------------


async def detail_info(process: ProcessSample, snapshot: Snapshot | None = None) -> str:
    app = HostApp()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = ProcessDetailScreen(process, History())
        await app.push_screen(screen)
        if snapshot is not None:
            screen.update_snapshot(snapshot)
        await pilot.pause()
        return text_of(screen.query_one("#detail-info", Static))


def info_rows(info: str) -> dict[str, str]:
    """``label -> value`` of the detail lines (labels are padded to 14 cells)."""
    return {line[:14].strip(): line[14:].strip() for line in info.splitlines() if line.strip()}


async def test_detail_lists_the_slurm_job_pod_and_container() -> None:
    container_id = "ab12" * 16
    process = proc(
        container_id=container_id,
        container_name="vllm",
        container_runtime="containerd",
        slurm_job_id="4242",
        slurm_step="0",
        slurm_job_name="train-llama",
        slurm_job_user="svc-train",
        k8s_pod_uid="3f1c9a52-8d4e-4b7a-9c21-5e6f7a8b9c0d",
        k8s_pod_name="vllm-0",
        k8s_namespace="ml",
    )
    rows = info_rows(await detail_info(process, snap(process)))
    assert rows["Slurm job"] == "4242 step 0"
    assert rows["Job name"] == "train-llama"
    assert rows["Job user"] == "svc-train"
    assert rows["Pod"] == "ml/vllm-0"
    assert rows["Pod UID"] == "3f1c9a52-8d4e-4b7a-9c21-5e6f7a8b9c0d"
    assert rows["Container"] == "vllm (containerd)"
    assert rows["Container id"] == container_id
    assert rows["User"] == "alice" and rows["PID"] == "4242"  # the other facts stay


async def test_detail_of_a_process_of_nobodys_says_no_container() -> None:
    process = proc(container_id=None)
    rows = info_rows(await detail_info(process, snap(process)))
    assert rows["Container"] == "none"
    assert not {"Slurm job", "Pod", "Container id"} & set(rows)


MIG_NODE = NodeInfo(
    hostname="node1",
    backend="fake",
    gpus=(
        GpuInfo(
            index=0,
            name="NVIDIA H100 80GB HBM3",
            uuid="GPU-0",
            vendor="nvidia",
            mig_enabled=True,
            mig_devices=(
                MigDeviceInfo(0, 7, 0, "MIG-aaaa", "NVIDIA H100 80GB HBM3 MIG 1g.10gb"),
                MigDeviceInfo(0, 8, 0, "MIG-bbbb", "NVIDIA H100 80GB HBM3 MIG 1g.10gb"),
            ),
        ),
    ),
)


async def test_detail_names_the_mig_instance_and_keeps_its_uuid() -> None:
    process = proc(mig_uuid="MIG-bbbb")
    snapshot = Snapshot(
        timestamp=T0, node=MIG_NODE, gpus=(GpuSample(index=0, timestamp=T0),), processes=(process,)
    )
    rows = info_rows(await detail_info(process, snapshot))
    assert rows["GPU"] == "0  (MIG 1g.10gb GI 8 CI 0)"
    assert rows["MIG device"] == "MIG-bbbb"
    # Before any snapshot names its instance, the UUID alone.
    rows = info_rows(await detail_info(process))
    assert rows["GPU"] == "0  (MIG instance)" and rows["MIG device"] == "MIG-bbbb"
    # Not in MIG: no MIG line.
    rows = info_rows(await detail_info(proc(), snap(proc())))
    assert rows["GPU"] == "0" and "MIG device" not in rows


async def test_a_huge_command_is_shown_up_to_the_bound() -> None:
    """A command of megabytes (a replayed or simulated row: what is read from /proc is bounded
    already) is shown up to MAX_COMMAND_CHARS characters and marked cut."""
    command = "python train.py " + "--flag " * 300_000
    rows = info_rows(await detail_info(proc(command=command)))
    assert rows["Command"] == command[:MAX_COMMAND_CHARS] + "…"
