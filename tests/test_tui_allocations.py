"""Allocated but idle on the dashboard: each GPU panel's bottom border names who the scheduler
gave it to (``job 4242 idle 3s`` while it does no work), and the title bar lists the jobs and pods
whose GPUs idle. The simulated demo node, with a scheduler that answers what the test says."""

from __future__ import annotations

import pytest
from tests.fakes.schedulers import FixedSchedulers, slurm_job

from gputui.core.allocation import Allocation, Grant
from gputui.core.allocation_text import gpu_tag, idle_owners
from gputui.tui.app import GpuTuiApp
from gputui.tui.messages import SnapshotReady

T = 1_700_000_000.0


def test_gpu_tags_and_the_owner_line() -> None:
    job = Allocation(3, "no_process", "slurm", "IDX 3", job_id="4242", idle_since=T - 75)
    other = Allocation(3, "in_use", "kubernetes", "MIG-a", pod_uid="u", pod_name="nb-0")
    busy = Allocation(4, "in_use", "slurm", "IDX 4", job_id="4242")
    pod = Allocation(5, "held_idle", "kubernetes", "GPU-5", pod_uid="u2", pod_name="vllm-0",
                     idle_since=T - 5)  # fmt: skip
    allocations = (job, other, busy, pod, Allocation(6, "free"))
    assert gpu_tag(allocations, 3, T) == ("job 4242 +1 idle 1m15s", True)
    assert gpu_tag(allocations, 4, T) == ("job 4242", False)
    assert gpu_tag(allocations, 6, T) == ("", False)
    assert idle_owners(allocations, T) == ("job 4242: 1 GPU idle 1m15s · pod vllm-0: 1 GPU idle 5s")
    third = Allocation(7, "no_process", "slurm", "IDX 7", job_id="9", idle_since=T - 1)
    assert idle_owners((*allocations, third), T).endswith(" +1 more")
    assert idle_owners((busy,), T) == ""


@pytest.mark.usefixtures("tui_env")
async def test_panels_and_title_bar_name_idle_allocations(sim_sampler) -> None:
    """Job 4242 holds GPU 6 (busy) and 7 (the demo's idle notebook); a pod holds GPU 5."""
    sampler = sim_sampler("dgx-h100", polls=0)
    uuid = sampler.node.gpus[5].uuid
    pod = Grant("kubernetes", uuid, device_id=uuid, pod_uid="u1", pod_name="vllm-0")
    sampler.allocations = FixedSchedulers((*slurm_job("4242", 6, 7), pod))
    sampler.allocation_meter.idle_after_s = 0.0
    for _ in range(4):
        sampler.poll()
        sampler.clock.now += 1.0
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(200, 60)) as pilot:
        app.post_message(SnapshotReady(sampler.latest))
        await pilot.pause()
        panels = app.dashboard.panels
        bottom = {i: panels[i].plain_lines[-1] for i in (0, 5, 6, 7)}
        assert "job 4242 idle 3s" in bottom[7]
        assert "job 4242" in bottom[6] and "idle" not in bottom[6]
        assert "pod vllm-0" in bottom[5]
        assert "job" not in bottom[0] and "pod" not in bottom[0]
        title = app.dashboard.title_bar.plain_lines[0]
        assert "job 4242: 1 GPU idle 3s" in title
