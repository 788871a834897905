"""MIG on NVML: slices listed under their parent GPU, read each tick, and their processes mapped
to the slice and the parent."""

from __future__ import annotations

import pytest
from tests.factories import open_nvml
from tests.fakes.fake_pynvml import (
    FakeGpu,
    FakeMig,
    FakeProcess,
    GiB,
    make_fake_nvml,
)

from gputui.backends.nvml import (
    NvmlBackend,
)

pytestmark = pytest.mark.usefixtures("nvml_backends")


# -- MIG ------------------------------------------------------------------------------------------


def mig_gpu() -> FakeGpu:
    return FakeGpu(
        mig_mode=1,
        migs=[
            FakeMig(
                gpu_instance_id=1,
                compute_instance_id=0,
                memory_total=20 * GiB,
                memory_used=3 * GiB,
                sm_count=32,
                name="NVIDIA H100 80GB HBM3 MIG 2g.20gb",
                compute_processes=[FakeProcess(500, 2 * GiB)],
            ),
            None,  # an empty slot
            FakeMig(
                gpu_instance_id=5,
                compute_instance_id=0,
                compute_processes=[FakeProcess(501, GiB), FakeProcess(502, 11 * GiB)],
                graphics_processes=[FakeProcess(501, GiB)],
            ),
        ],
        compute_processes=[FakeProcess(999)],  # the parent's aggregate list is not used
    )


def test_mig_slices_are_listed_under_their_parent() -> None:
    node = NvmlBackend(make_fake_nvml([FakeGpu(), mig_gpu()])).open()
    assert node.gpus[0].mig_enabled is False
    parent = node.gpus[1]
    assert parent.mig_enabled is True
    first, second = parent.mig_devices
    assert (first.parent_index, first.gpu_instance_id, first.compute_instance_id) == (1, 1, 0)
    assert first.uuid == "MIG-0001-0000-fake"
    assert first.name == "NVIDIA H100 80GB HBM3 MIG 2g.20gb"
    assert first.memory_total_bytes == 20 * GiB
    assert first.sm_count == 32
    assert (second.gpu_instance_id, second.uuid) == (5, "MIG-0001-0002-fake")


def test_mig_slices_are_sampled_each_tick() -> None:
    gpu = mig_gpu()
    backend, _ = open_nvml([gpu])
    (s,) = backend.read_gpus(1.0, slow=False)
    assert s.utilization_gpu_pct is None  # NotSupported on a MIG-enabled parent
    assert [(m.uuid, m.memory_used_bytes, m.memory_total_bytes) for m in s.mig_devices] == [
        ("MIG-0000-0000-fake", 3 * GiB, 20 * GiB),
        ("MIG-0000-0002-fake", GiB, 10 * GiB),
    ]
    gpu.migs[0].memory_used = 7 * GiB
    (s,) = backend.read_gpus(2.0, slow=True)
    assert s.mig_devices[0].memory_used_bytes == 7 * GiB


def test_mig_processes_map_to_slice_and_parent() -> None:
    backend, fake = open_nvml([FakeGpu(compute_processes=[FakeProcess(7)]), mig_gpu()])
    rows = {p.pid: p for p in backend.read_processes(1.0)}
    assert set(rows) == {7, 500, 501}  # 502 claims more memory than its 10 GiB slice: dropped
    assert rows[7].gpu_index == 0 and rows[7].mig_uuid is None
    assert rows[500].gpu_index == 1 and rows[500].mig_uuid == "MIG-0001-0000-fake"
    assert rows[501].mig_uuid == "MIG-0001-0002-fake"
    assert rows[501].type == "compute+graphics"
    assert rows[500].sm_pct is None  # per-process utilization is not supported on MIG
    parent_calls = [a for a in fake.args_of("nvmlDeviceGetComputeRunningProcesses_v3", 1)]
    assert all(a[0].mig_slot is not None for a in parent_calls)
