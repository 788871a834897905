"""Who uses the GPUs, on the dashboard: the JOB / POD column and the ``/`` filter over jobs, pods
and containers on the simulated demo node; idle GPUs in the title bar; processes in MIG
instances under their parent GPU (``sim:mig``)."""

from __future__ import annotations

import dataclasses

import pytest
from textual.app import App, ComposeResult

from gputui.core.mig import instances_by_uuid
from gputui.core.model import GpuInfo, NodeInfo, Snapshot, Usage
from gputui.engine.sampler import Sampler
from gputui.tui.app import GpuTuiApp
from gputui.tui.messages import SnapshotReady
from gputui.tui.widgets.line_widget import MeterPalette
from gputui.tui.widgets.title_bar import TitleBar

pytestmark = pytest.mark.usefixtures("tui_env")

T0 = 1_700_000_000.0


def key(pid: int, gpu: int) -> str:
    return f"{pid}:{gpu}"


async def post(app: GpuTuiApp, pilot, sampler: Sampler, **changes: object) -> Snapshot:
    """Poll once (fake clock +1 s), change the snapshot's fields, post it, settle."""
    snapshot = dataclasses.replace(sampler.poll(), **changes)  # type: ignore[arg-type]
    sampler.clock.now += 1.0  # type: ignore[attr-defined]
    app.post_message(SnapshotReady(snapshot))
    await pilot.pause()
    return snapshot


# -- the JOB / POD column on the demo node ---------------------------------------------------------


async def test_demo_table_names_the_job_pod_and_container(sim_sampler) -> None:
    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        table = app.dashboard.process_table
        assert "workload" in table.column_keys
        by_kind = {}
        for p in table.visible_processes:
            by_kind.setdefault(p.name, []).append(p)
        ranks = [p for p in table.visible_processes if p.slurm_job_id]
        assert len(ranks) == 6
        for p in ranks:
            assert table.cell_text(key(p.pid, p.gpu_index), "workload") == "job 4242 train-ll…"
        (server,) = by_kind["vllm"]
        assert table.cell_text(key(server.pid, 6), "workload") == "pod ml/vllm-0"
        (kernel,) = [p for p in table.visible_processes if p.gpu_index == 7]
        assert table.cell_text(key(kernel.pid, 7), "workload") == "ctr jupyter"
        # The containers are named once, in their column.
        assert not any("[ctr" in line for line in table.plain_lines)
        assert "JOB / POD" in table.plain_lines[0]


@pytest.mark.parametrize(
    ("typed", "gpus"),
    [
        ("vllm-0", {6}),
        ("4242", {0, 1, 2, 3, 4, 5}),
        ("jupyter", {7}),
        ("train-llama", set(range(6))),
    ],
)
async def test_slash_filters_by_job_pod_and_container(sim_sampler, typed, gpus) -> None:
    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        table = app.dashboard.process_table
        await pilot.press("slash", *typed)
        await pilot.pause()
        assert {p.gpu_index for p in table.visible_processes} == gpus
        assert table.row_count == len(gpus)  # one process a GPU on this node
        await pilot.press("enter", "escape")
        assert table.row_count == 8


# -- idle GPUs in the title bar --------------------------------------------------------------------


def usage(idle: int, held: int = 0, price: float | None = None) -> Usage:
    return Usage(
        since=T0,
        gpu_hour_price=price,
        gpus_counted=8,
        idle_gpus=idle,
        held_idle_gpus=held,
        idle_cost_per_hour=None if price is None else idle * price,
    )


async def test_title_bar_says_how_many_gpus_are_idle(sim_sampler) -> None:
    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        title = app.dashboard.title_bar.plain_lines[0]
        assert "1/8 GPUs idle (1 held)" in title  # the demo's notebook holds GPU 7 idle

        await post(app, pilot, sampler, usage=usage(3, 1, price=2.5))
        title = app.dashboard.title_bar.plain_lines[0]
        assert "3/8 GPUs idle (1 held) · 7.50/h" in title
        assert title.index("idle") < title.index("every 1s")

        await post(app, pilot, sampler, usage=usage(0))
        assert "idle" not in app.dashboard.title_bar.plain_lines[0]
        await post(app, pilot, sampler, usage=None)  # a replay without usage: nothing
        assert "idle" not in app.dashboard.title_bar.plain_lines[0]


class BarApp(App[None]):
    def compose(self) -> ComposeResult:
        yield MeterPalette()
        yield TitleBar(
            NodeInfo(
                hostname="gpu-node-17",
                backend="nvml",
                gpus=tuple(GpuInfo(i, "H100", f"GPU-{i}", "nvidia") for i in range(8)),
                driver_version="550.54.15",
                runtime_version="12.4",
            )
        )


IDLE_FORMS = ("3/8 GPUs idle (1 held) · 7.50/h", "3/8 idle · 7.50/h", "idle 7.50/h")


@pytest.mark.parametrize(
    ("width", "idle", "interval", "facts", "left_out"),
    [
        (140, IDLE_FORMS[0], True, ("nvml", "driver 550.54.15", "CUDA 12.4", "8 GPUs"), ()),
        # Too short for all: the driver and runtime versions make room for the idle summary.
        (110, IDLE_FORMS[0], True, ("nvml", "8 GPUs"), ("driver", "CUDA")),
        # Shorter: the interval goes, then the idle text's longer forms; the cost stays.
        (90, IDLE_FORMS[1], False, ("nvml", "8 GPUs"), ("CUDA",)),
        (80, IDLE_FORMS[2], False, ("nvml", "8 GPUs"), ("CUDA",)),
        # At 60 columns the backend and the GPU count give way before the idle cost does.
        (60, IDLE_FORMS[2], False, (), ("nvml", "8 GPUs")),
        # Too short even for that: no idle text, the interval back.
        (52, None, True, (), ("nvml", "gpu-node-17")),
    ],
)
async def test_a_short_title_bar_keeps_the_idle_cost_before_the_interval(
    width: int,
    idle: str | None,
    interval: bool,
    facts: tuple[str, ...],
    left_out: tuple[str, ...],
) -> None:
    app = BarApp()
    async with app.run_test(size=(width, 3)) as pilot:
        bar = app.query_one(TitleBar)
        bar.set_state(timestamp=T0, interval=1.0, health=("▲ 2 warnings", "warn"), idle=IDLE_FORMS)
        await pilot.pause()
        line = bar.plain_lines[0]
        assert len(line) == width
        shown = [form for form in IDLE_FORMS if form in line]
        assert shown[:1] == ([idle] if idle else []), line
        assert ("every 1s" in line) is interval, line
        if idle and interval:
            assert line.index(idle) < line.index("every 1s")
        assert "▲ 2 warnings" in line  # never pushed out
        assert ("gpu-node-17" in line) is (idle is not None)  # the host goes after the idle text
        for fact in facts:
            assert fact in line
        for fact in left_out:
            assert fact not in line
        bar.set_state(idle="")
        await pilot.pause()
        assert "idle" not in bar.plain_lines[0]


# -- MIG instances under their GPU -----------------------------------------------------------------


async def test_mig_processes_show_their_instance_under_their_gpu(sim_sampler) -> None:
    sampler = sim_sampler("mig", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        table = app.dashboard.process_table
        snapshot = app.dashboard.shown
        assert snapshot is not None
        instances = instances_by_uuid(snapshot)
        in_mig = [p for p in snapshot.processes if p.mig_uuid is not None]
        assert in_mig
        for p in in_mig:
            gi = instances[p.mig_uuid].gpu_instance_id
            assert table.cell_text(key(p.pid, p.gpu_index), "gpu") == f"{p.gpu_index}·g{gi}"
        whole = [p for p in snapshot.processes if p.mig_uuid is None]
        assert [table.cell_text(key(p.pid, 7), "gpu") for p in whole] == ["7"]

        table.sort_by("gpu")
        await pilot.press("home")  # the cursor stayed on its process: back to the top
        order = [
            (p.gpu_index, instances[p.mig_uuid].gpu_instance_id if p.mig_uuid else -1)
            for p in table.visible_processes
        ]
        assert order == sorted(order)
        drawn = [line.split()[0] for line in table.plain_lines[1:] if line.strip()]
        assert drawn[:3] == ["0·g7", "0·g8", "0·g9"]

        await pilot.press("0")  # the parent GPU: the processes of all its instances
        await pilot.pause()
        on_gpu0 = {p.pid for p in snapshot.processes if p.gpu_index == 0}
        assert len(on_gpu0) == 6
        assert {p.pid for p in table.visible_processes} == on_gpu0
        assert all(p.mig_uuid for p in table.visible_processes)


async def test_mig_process_detail_names_its_instance(sim_sampler) -> None:
    from textual.widgets import Static

    from gputui.tui.screens.process_detail import ProcessDetailScreen

    sampler = sim_sampler("mig", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        table = app.dashboard.process_table
        table.sort_by("gpu")
        await pilot.press("home")
        process = table.selected_process
        assert process is not None and process.mig_uuid
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ProcessDetailScreen)
        info = str(app.screen.query_one("#detail-info", Static).render())
        assert "GPU           0  (MIG 1g.10gb GI 7 CI 0)" in info
        assert f"MIG device    {process.mig_uuid}" in info
        assert "Pod           ml/qwen-chat-0" in info


def test_mig_panels_name_instances_by_profile() -> None:
    """NVML names an instance ``NVIDIA H100 80GB HBM3 MIG 1g.10gb``: the panels say ``1g.10gb``."""
    from gputui.core.model import GpuSample as Sample
    from gputui.core.model import MigDeviceInfo, MigSample
    from gputui.tui.widgets.gpu_mig import mig_lines, mig_summary

    nvml = "NVIDIA H100 80GB HBM3 MIG "
    devices = (
        MigDeviceInfo(0, 1, 0, "MIG-a", nvml + "3g.40gb"),
        MigDeviceInfo(0, 2, 0, "MIG-b", nvml + "3g.40gb"),
        MigDeviceInfo(0, 7, 0, "MIG-c", nvml + "1g.10gb"),
        MigDeviceInfo(0, 8, 0, "MIG-d", None),
    )
    assert mig_summary(devices) == "MIG 2×3g.40gb 1×1g.10gb 1×slice"
    info = GpuInfo(
        0, "NVIDIA H100 80GB HBM3", "GPU-0", "nvidia", mig_enabled=True, mig_devices=devices
    )
    sample = Sample(0, T0, mig_devices=(MigSample("MIG-c", 2 * 1024**3, 10 * 1024**3),))
    lines = ["".join(text for text, _ in line) for line in mig_lines(info, sample, 60)]
    assert lines[2].split()[:6] == ["MIG", "1g.10gb", "GI", "7", "CI", "0"]
    assert not any("NVIDIA" in line for line in lines)
