"""Drivers older or newer than the binding: versioned structs the driver does not know, entry
points it lacks (R470), and an event thread stuck in its wait at exit."""

from __future__ import annotations

import threading
import time

from tests.fakes.checks import check_json
from tests.fakes.fake_pynvml import (
    R470_MISSING_FIELDS,
    FakeGpu,
    FakeProcess,
    GiB,
    driver_r470,
    make_fake_nvml,
)

from gputui.backends.nvml import NvmlBackend


def test_a_versioned_call_the_driver_does_not_know_falls_back_and_is_not_asked_again() -> None:
    fake = make_fake_nvml(
        [FakeGpu()], version_mismatch={"nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetTemperatureV"}
    )
    backend = NvmlBackend(fake)
    backend.open()
    try:
        for t in range(3):
            (sample,) = backend.read_gpus(float(t), slow=False)
            # v1 memory (reserved folded into used) and the unversioned temperature answered.
            assert sample.memory_used_bytes == 10 * GiB + 512 * 2**20
            assert sample.memory_reserved_bytes is None
            assert sample.temperature_gpu_c == 45.0
            assert sample.error is None
        assert fake.calls["nvmlDeviceGetTemperatureV"] == 1  # remembered as unsupported
        assert fake.calls["nvmlDeviceGetTemperature"] == 3
    finally:
        backend.close()


def test_fabric_info_falls_back_to_the_unversioned_call_on_a_version_mismatch() -> None:
    fake = make_fake_nvml(
        [FakeGpu(fabric_state=3)], version_mismatch={"nvmlDeviceGetGpuFabricInfoV"}
    )
    backend = NvmlBackend(fake)
    info = backend.open().gpus[0]
    backend.close()
    assert info.fabric_state == "completed"


def r470_gpu(**changes: object) -> FakeGpu:
    values: dict[str, object] = {
        "unsupported_fields": set(R470_MISSING_FIELDS),
        "compute_processes": [FakeProcess(4242, 3 * GiB)],
        "throttle_reasons": 0x4,
    }
    values.update(changes)
    return FakeGpu(**values)  # type: ignore[arg-type]


def test_every_reading_still_works_on_an_r470_driver() -> None:
    fake = make_fake_nvml([r470_gpu()], **driver_r470())
    backend = NvmlBackend(fake)
    node = backend.open()
    try:
        assert node.driver_version == "470.239.06" and node.runtime_version == "11.4"
        backend.read_gpus(1.0, slow=True)
        (sample,) = backend.read_gpus(2.0, slow=True)
        assert sample.error is None and not sample.lost
        assert sample.utilization_gpu_pct == 50.0
        assert sample.memory_used_bytes is not None and sample.memory_total_bytes == 80 * GiB
        assert sample.power_w == 350.0 and sample.power_limit_w == 700.0  # the calls, not fields
        assert sample.temperature_gpu_c == 45.0
        assert sample.clock_sm_mhz == 1755
        assert sample.throttle_reasons == {"sw_power_cap"}  # the older throttle-reasons call
        assert (sample.pcie_gen, sample.pcie_width) == (4, 16)
        assert sample.ecc_volatile_uncorrected == 0
        (process,) = backend.read_processes(2.0)
        assert (process.pid, process.gpu_memory_bytes) == (4242, 3 * GiB)
        info = node.gpus[0]
        assert info.sm_count == 132 and info.pcie_max_gen == 4  # attributes, host-limited max
    finally:
        backend.close()


def test_an_r470_node_checks_healthy() -> None:
    code, doc = check_json(make_fake_nvml([r470_gpu(), r470_gpu()], **driver_r470()))
    assert (doc["verdict"], code) == ("healthy", 0), doc["findings"]


def test_nvml_is_not_shut_down_under_an_event_thread_still_in_its_wait() -> None:
    stuck = threading.Event()
    fake = make_fake_nvml(1, event_wait_hang=stuck)
    backend = NvmlBackend(fake)
    backend.event_wait_ms = 20
    backend.open()
    time.sleep(0.1)  # the thread is inside nvmlEventSetWait
    started = time.monotonic()
    backend.close()
    assert time.monotonic() - started < 2.0
    assert fake.calls["nvmlShutdown"] == 0  # was called: a use-after-free of the waited-on set
    assert fake.live_event_sets()  # and the set was not freed either
    stuck.set()  # the driver answers at last: the thread ends
    for _ in range(100):
        if not any(t.name == "gputui-nvml-events" and t.is_alive() for t in threading.enumerate()):
            break
        time.sleep(0.02)


def test_nvml_is_shut_down_once_the_event_thread_has_stopped() -> None:
    fake = make_fake_nvml(1)
    backend = NvmlBackend(fake)
    backend.event_wait_ms = 20
    backend.open()
    backend.close()
    assert fake.calls["nvmlShutdown"] == 1
    assert not fake.live_event_sets()
