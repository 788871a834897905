"""GPU process lists (gputui.backends.nvml.processes): compute and graphics merged, implausible
rows dropped, per-process SM use; and on real drivers: record sizes that moved (R535), entry
points that came and went, and the raw buffers of a real H100 (tests/data/real/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.factories import open_nvml
from tests.fakes.fake_pynvml import (
    FakeGpu,
    FakeMig,
    FakeNvml,
    FakeProcess,
    FakeProcUtil,
    GiB,
    MiB,
    driver_535_98,
    driver_535_early,
    make_fake_nvml,
)

from gputui.backends.nvml import NvmlBackend
from gputui.backends.nvml.records import (
    MAX_PID,
    ProcessRecord,
    decode,
    decode_plausible,
    pid_max,
    plausible,
)

pytestmark = pytest.mark.usefixtures("nvml_backends")

REAL = Path(__file__).parent / "data" / "real" / "h100-sxm5-580.159.04"
FIVE = [FakeProcess(1000 + i, (i + 1) * GiB) for i in range(5)]
V3 = ("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v3")
V2 = ("nvmlDeviceGetComputeRunningProcesses_v2", "nvmlDeviceGetGraphicsRunningProcesses_v2")


def listed(gpus: list[FakeGpu], **knobs: object) -> tuple[list[tuple[int, int | None]], FakeNvml]:
    fake = make_fake_nvml(gpus, **knobs)
    backend = NvmlBackend(fake)
    backend.open()
    try:
        rows = backend.read_processes(1.0)
    finally:
        backend.close()
    return sorted((p.pid, p.gpu_memory_bytes) for p in rows), fake


def test_v2_is_asked_first_and_v3_never_where_v2_answers() -> None:
    rows, fake = listed([FakeGpu(compute_processes=FIVE)])
    assert rows == [(p.pid, p.used_gpu_memory) for p in FIVE]
    assert fake.calls["nvmlDeviceGetComputeRunningProcesses_v2"] >= 1
    assert fake.calls["nvmlDeviceGetComputeRunningProcesses_v3"] == 0


def test_every_process_is_kept_on_a_535_driver_with_32_byte_v3_records() -> None:
    # The binding reads 24-byte records: asked first, _v3 kept 2 of 5 processes here.
    rows, _ = listed([FakeGpu(compute_processes=FIVE)], **driver_535_early())
    assert rows == [(p.pid, p.used_gpu_memory) for p in FIVE]


def test_v3_raw_records_are_decoded_at_their_own_size_where_v2_is_missing() -> None:
    knobs = driver_535_early()
    knobs["missing"] = set(V2)
    rows, fake = listed([FakeGpu(compute_processes=FIVE)], **knobs)
    assert rows == [(p.pid, p.used_gpu_memory) for p in FIVE]
    assert fake.calls["nvmlDeviceGetComputeRunningProcesses_v3"] >= 1


def test_the_binding_alone_garbles_32_byte_records() -> None:
    """What the fake's binding layer does is what nvidia-ml-py does on those drivers."""
    fake = make_fake_nvml([FakeGpu(compute_processes=FIVE)], **driver_535_early())
    fake.nvmlInit()
    handle = fake.nvmlDeviceGetHandleByIndex(0)
    pids = [row.pid for row in fake.nvmlDeviceGetComputeRunningProcesses_v3(handle)]
    assert pids != [p.pid for p in FIVE]
    assert [row.pid for row in fake.nvmlDeviceGetComputeRunningProcesses_v2(handle)] == [
        p.pid for p in FIVE
    ]


def test_mig_rows_never_become_pids_1_and_2() -> None:
    """On MIG the instance ids (1, 2 ...) land where a 24-byte reader looks for a PID."""
    migs: list[FakeMig | None] = [
        FakeMig(
            gpu_instance_id=gi,
            compute_instance_id=0,
            compute_processes=[
                FakeProcess(2000 + 10 * gi + k, GiB, gpu_instance_id=gi, compute_instance_id=0)
                for k in range(4)
            ],
        )
        for gi in (1, 2)
    ]
    knobs = driver_535_early()
    knobs["missing"] = set(V2)
    rows, _ = listed([FakeGpu(mig_mode=1, migs=migs)], **knobs)
    pids = [pid for pid, _ in rows]
    assert pids == [2010, 2011, 2012, 2013, 2020, 2021, 2022, 2023]
    assert not {1, 2} & set(pids)


def test_a_driver_without_v3_answers_through_v2() -> None:
    rows, fake = listed([FakeGpu(compute_processes=FIVE)], **driver_535_98())
    assert len(rows) == 5
    assert fake.calls["nvmlDeviceGetComputeRunningProcesses_v3"] == 0


def test_a_driver_older_than_r450_answers_through_the_unversioned_16_byte_call() -> None:
    rows, fake = listed(
        [FakeGpu(compute_processes=FIVE, graphics_processes=[FakeProcess(77, None)])],
        missing={*V2, *V3},
    )
    assert rows == sorted([(p.pid, p.used_gpu_memory) for p in FIVE] + [(77, None)])
    assert fake.calls["nvmlDeviceGetComputeRunningProcesses"] >= 1


def test_unversioned_symbol_at_16_bytes_is_read_as_16_bytes() -> None:
    fake = make_fake_nvml([FakeGpu(compute_processes=FIVE)], missing={*V2, *V3})
    assert fake.process_record_sizes["nvmlDeviceGetComputeRunningProcesses"] == 16
    rows, _ = listed([FakeGpu(compute_processes=FIVE)], missing={*V2, *V3})
    assert [pid for pid, _ in rows] == [p.pid for p in FIVE]


# -- the decoder on its own ------------------------------------------------------------------------


def test_one_record_decodes_the_same_at_every_size() -> None:
    data = bytes.fromhex("25020000000000000000606000000000ffffffffffffffff")
    for stride in (16, 24):
        records = decode(data + bytes(8), 1, stride)
        assert records is not None and records[0].pid == 0x225


def test_no_plausible_size_keeps_only_the_plausible_rows() -> None:
    garbage = bytes.fromhex("010000000000000001000000000000000500000007000000") * 2
    garbage += bytes.fromhex("ffffffff000000000000000000000000ffffffffffffffff")
    records = decode_plausible(garbage, 3, (24,), memory_limit=80 * GiB, highest_pid=MAX_PID)
    assert [r.pid for r in records] == [1, 1]


@pytest.mark.parametrize(
    ("record", "ok"),
    [
        (ProcessRecord(pid=0, used_memory=GiB), False),
        (ProcessRecord(pid=MAX_PID + 1, used_memory=GiB), False),
        (ProcessRecord(pid=12, used_memory=81 * GiB), False),
        (ProcessRecord(pid=12, used_memory=None), True),
        (ProcessRecord(pid=12, used_memory=GiB, gpu_instance_id=0xFFFFFFFF), True),
        (ProcessRecord(pid=12, used_memory=GiB, gpu_instance_id=3, compute_instance_id=0), True),
        (ProcessRecord(pid=12, used_memory=GiB, gpu_instance_id=4711), False),
        (ProcessRecord(pid=12, used_memory=GiB, protected_memory=90 * GiB), False),
    ],
)
def test_plausible_records(record: ProcessRecord, ok: bool) -> None:
    assert plausible(record, 80 * GiB, MAX_PID) is ok


def test_pid_max_is_read_from_the_kernel_and_capped(tmp_path: Path) -> None:
    pid_max.cache_clear()
    try:
        for text, expected in (("32768\n", 32768), ("99999999", MAX_PID), ("junk", MAX_PID)):
            path = tmp_path / f"pid_max_{expected}_{len(text)}"
            path.write_text(text)
            assert pid_max(str(path)) == expected
        assert pid_max(str(tmp_path / "absent")) == MAX_PID
    finally:
        pid_max.cache_clear()


# -- a real H100 on driver 580.159.04 -------------------------------------------------------------


def real_buffers() -> dict[str, dict[str, object]]:
    dump = json.loads((REAL / "nvml_raw_procs.json").read_text())
    return dict(dump["devices"][0]["processes_raw"])


def smi_apps() -> list[tuple[int, int]]:
    """(pid, MiB) from ``nvidia-smi --query-compute-apps`` on the same machine."""
    lines = (REAL / "smi_apps.csv").read_text().splitlines()[1:]
    return [(int(f[0]), int(f[2].split()[0])) for f in (line.split(", ") for line in lines)]


@pytest.mark.parametrize(
    ("symbol", "strides"),
    [
        ("nvmlDeviceGetComputeRunningProcesses_v2", (24, 32, 16)),
        ("nvmlDeviceGetComputeRunningProcesses_v3", (24, 32, 16)),
        ("nvmlDeviceGetComputeRunningProcesses", (16, 24, 32)),
    ],
)
def test_real_r580_buffers_decode_to_what_nvidia_smi_lists(
    symbol: str, strides: tuple[int, ...]
) -> None:
    raw = real_buffers()[symbol]
    data = bytes.fromhex(str(raw["hex"]))
    records = decode_plausible(data, int(str(raw["count"])), strides, 80 * GiB, MAX_PID)
    assert [(r.pid, (r.used_memory or 0) >> 20) for r in records] == smi_apps()


def test_real_r580_v2_buffer_is_24_bytes_and_only_24_bytes_is_plausible() -> None:
    raw = real_buffers()["nvmlDeviceGetComputeRunningProcesses_v2"]
    data, count = bytes.fromhex(str(raw["hex"])), int(str(raw["count"]))
    verdicts = {}
    for stride in (16, 24, 32):
        records = decode(data, count, stride)
        assert records is not None
        verdicts[stride] = all(plausible(r, 80 * GiB, MAX_PID) for r in records)
    assert verdicts == {16: False, 24: True, 32: False}
    assert raw["first_ret"] == 7  # NVML_ERROR_INSUFFICIENT_SIZE with the count, as modelled


# -- processes ------------------------------------------------------------------------------------


def test_processes_merge_compute_and_graphics() -> None:
    gpu = FakeGpu(
        compute_processes=[FakeProcess(100, 2 * GiB), FakeProcess(101, None)],
        graphics_processes=[FakeProcess(100, GiB), FakeProcess(102, 64 * MiB)],
    )
    backend, _ = open_nvml([gpu])
    rows = {p.pid: p for p in backend.read_processes(1.0)}
    assert set(rows) == {100, 101, 102}
    assert rows[100].type == "compute+graphics"
    assert rows[100].gpu_memory_bytes == 2 * GiB  # the larger of the two reports
    assert rows[101].type == "compute"
    assert rows[101].gpu_memory_bytes is None
    assert rows[102].type == "graphics"
    for p in rows.values():
        assert p.gpu_index == 0
        assert p.mig_uuid is None
        assert (p.user, p.name, p.command, p.cpu_pct, p.host_rss_bytes) == (None,) * 5
        assert (p.start_time, p.container_id) == (None, None)


def test_insane_process_rows_are_dropped() -> None:
    gpu = FakeGpu(
        memory_total=80 * GiB,
        compute_processes=[
            FakeProcess(0, GiB),  # garbled: PID 0
            FakeProcess(MAX_PID + 1, GiB),  # garbled: beyond pid_max
            FakeProcess(300, 81 * GiB),  # more memory than the GPU has
            FakeProcess(301, GiB),
            FakeProcess(301, GiB),  # duplicate row
        ],
    )
    backend, _ = open_nvml([gpu])
    rows = backend.read_processes(1.0)
    assert [(p.pid, p.gpu_memory_bytes) for p in rows] == [(301, GiB)]


def test_per_process_sm_uses_the_last_seen_timestamp() -> None:
    gpu = FakeGpu(
        compute_processes=[FakeProcess(10), FakeProcess(11), FakeProcess(12)],
        process_utilization=[
            FakeProcUtil(10, 1_000, 20),
            FakeProcUtil(10, 2_000, 45),  # newer sample of the same PID wins
            FakeProcUtil(11, 1_500, 250),  # garbage is clamped
        ],
    )
    backend, fake = open_nvml([gpu])
    rows = {p.pid: p.sm_pct for p in backend.read_processes(1.0)}
    assert rows == {10: 45.0, 11: 100.0, 12: 0.0}
    gpu.process_utilization.append(FakeProcUtil(12, 3_000, 5))
    rows = {p.pid: p.sm_pct for p in backend.read_processes(2.0)}
    assert rows == {10: 0.0, 11: 0.0, 12: 5.0}
    rows = {p.pid: p.sm_pct for p in backend.read_processes(3.0)}  # NotFound: nothing new
    assert rows == {10: 0.0, 11: 0.0, 12: 0.0}
    stamps = [args[1] for args in fake.args_of("nvmlDeviceGetProcessesUtilizationInfo")]
    assert stamps == [0, 2_000, 3_000]


def test_per_process_sm_is_none_when_unsupported() -> None:
    gpu = FakeGpu(
        compute_processes=[FakeProcess(10)],
        unsupported={"nvmlDeviceGetProcessesUtilizationInfo", "nvmlDeviceGetProcessUtilization"},
    )
    backend, fake = open_nvml([gpu])
    assert backend.read_processes(1.0)[0].sm_pct is None
    assert backend.read_processes(2.0)[0].sm_pct is None
    assert fake.calls["nvmlDeviceGetProcessesUtilizationInfo"] == 1
    assert fake.calls["nvmlDeviceGetProcessUtilization"] == 1


def test_no_processes_means_no_utilization_call() -> None:
    backend, fake = open_nvml(1)
    assert backend.read_processes(1.0) == []
    assert fake.calls["nvmlDeviceGetProcessesUtilizationInfo"] == 0
