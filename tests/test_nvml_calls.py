"""Calls that do not answer (gputui.backends.nvml.calls): "not supported" remembered, lost GPUs,
the driver going away mid-run, and fallbacks for older drivers and bindings."""

from __future__ import annotations

import pynvml
import pytest
from tests.factories import open_nvml
from tests.fakes.fake_pynvml import (
    FakeGpu,
    FakeMig,
    FakeProcess,
    FakeProcUtil,
    GiB,
    MiB,
    NVMLError_GpuIsLost,
    make_fake_nvml,
)

from gputui.backends.nvml import (
    LOST_MESSAGE,
    NvmlBackend,
)
from gputui.core.model import SLOW_SAMPLE_FIELDS

pytestmark = pytest.mark.usefixtures("nvml_backends")

FAST_FIELDS_OF_INTEREST = (
    "utilization_gpu_pct",
    "memory_used_bytes",
    "power_w",
    "energy_j",
    "temperature_gpu_c",
    "clock_sm_mhz",
    "pstate",
    "pcie_gen",
    "throttle_reasons",
)


# -- unsupported calls are remembered --------------------------------------------------------------


def test_not_supported_is_none_and_never_asked_again() -> None:
    gpu = FakeGpu(unsupported={"nvmlDeviceGetPowerUsage", "nvmlDeviceGetTotalEccErrors"})
    backend, fake = open_nvml([gpu])
    for t in range(5):
        (s,) = backend.read_gpus(float(t), slow=True)
        assert s.power_w is None
        assert s.ecc_volatile_corrected is None
        assert s.power_limit_w == 700.0
    # The batched fields said "not supported" once; the fallback calls, once each, too.
    assert fake.calls["nvmlDeviceGetPowerUsage"] == 1
    assert fake.calls["nvmlDeviceGetTotalEccErrors"] == 4  # four counters, each asked once
    # The limit answers through the batched field values: no call of its own.
    assert fake.calls["nvmlDeviceGetEnforcedPowerLimit"] == 0
    requests = [[fid for fid, _ in args[1]] for args in fake.args_of("nvmlDeviceGetFieldValues")]
    assert all(190 in r and 185 not in r and 3 not in r for r in requests[1:])


def test_unsupported_is_remembered_per_gpu() -> None:
    gpus = [FakeGpu(unsupported={"nvmlDeviceGetPowerUsage"}), FakeGpu()]
    backend, fake = open_nvml(gpus)
    for t in range(3):
        first, second = backend.read_gpus(float(t), slow=False)
        assert first.power_w is None
        assert second.power_w == 350.0
    assert fake.gpu_calls[(0, "nvmlDeviceGetPowerUsage")] == 1  # the fallback, once
    assert fake.gpu_calls[(1, "nvmlDeviceGetPowerUsage")] == 0  # answered by the field
    assert fake.gpu_calls[(1, "nvmlDeviceGetFieldValues")] == 3


def test_no_permission_for_one_call_is_remembered() -> None:
    gpu = FakeGpu(errors={"nvmlDeviceGetSerial": pynvml.NVMLError_NoPermission})
    backend, fake = open_nvml([gpu])
    assert fake.calls["nvmlDeviceGetSerial"] == 1
    backend.read_gpus(1.0, slow=True)
    assert fake.calls["nvmlDeviceGetSerial"] == 1


def test_transient_errors_are_not_remembered() -> None:
    gpu = FakeGpu(errors={"nvmlDeviceGetPowerUsage": pynvml.NVMLError_Unknown})
    backend, fake = open_nvml([gpu])
    assert backend.read_gpus(1.0, slow=False)[0].power_w is None
    assert backend.read_gpus(2.0, slow=False)[0].power_w is None
    del gpu.errors["nvmlDeviceGetPowerUsage"]
    assert backend.read_gpus(3.0, slow=False)[0].power_w == 350.0
    # The field failed with a transient error twice: asked every time, never given up on.
    requests = [[fid for fid, _ in args[1]] for args in fake.args_of("nvmlDeviceGetFieldValues")]
    assert all(185 in r for r in requests)


def test_unsupported_field_values_are_not_requested_again() -> None:
    backend, fake = open_nvml([FakeGpu(unsupported_fields={82})])
    for t in range(3):
        assert backend.read_gpus(float(t), slow=False)[0].temperature_memory_c is None
    requests = [[fid for fid, _ in args[1]] for args in fake.args_of("nvmlDeviceGetFieldValues")]
    assert 82 in requests[0]
    assert all(82 not in r and 83 in r for r in requests[1:])


def test_handles_are_fetched_once() -> None:
    gpus = [FakeGpu(), FakeGpu(mig_mode=1, migs=[FakeMig(1), FakeMig(2)])]
    backend, fake = open_nvml(gpus)
    for t in range(5):
        backend.read_gpus(float(t), slow=t % 2 == 0)
        backend.read_processes(float(t))
    assert fake.calls["nvmlDeviceGetHandleByIndex"] == 2
    assert fake.calls["nvmlDeviceGetMigDeviceHandleByIndex"] == 7  # the slots, once, at open


def test_unexpected_exception_stays_on_its_gpu() -> None:
    gpus = [
        FakeGpu(errors={"nvmlDeviceGetUtilizationRates": RuntimeError("binding bug")}),
        FakeGpu(),
    ]
    backend, _ = open_nvml(gpus)
    first, second = backend.read_gpus(1.0, slow=False)
    assert first.error == "binding bug"
    assert not first.lost
    assert second.power_w == 350.0


# -- lost GPUs ------------------------------------------------------------------------------------


def test_gpu_lost_mid_run_others_keep_working() -> None:
    gpus = [
        FakeGpu(compute_processes=[FakeProcess(10)]),
        FakeGpu(compute_processes=[FakeProcess(20)]),
    ]
    backend, fake = open_nvml(gpus)
    assert [s.lost for s in backend.read_gpus(1.0, slow=False)] == [False, False]
    gpus[0].lost = True
    first, second = backend.read_gpus(2.0, slow=True)
    assert first.lost is True
    assert first.error == LOST_MESSAGE
    assert first.timestamp == 2.0
    for name in FAST_FIELDS_OF_INTEREST + SLOW_SAMPLE_FIELDS:
        assert getattr(first, name) is None, name
    assert not second.lost and second.power_w == 350.0
    calls_after_loss = fake.calls_on(0)
    for t in range(3, 6):
        first, second = backend.read_gpus(float(t), slow=True)
        assert first.lost and not second.lost
        assert [p.pid for p in backend.read_processes(float(t))] == [20]
    assert fake.calls_on(0) == calls_after_loss  # a lost GPU is not asked again


def test_gpu_lost_after_some_calls_inside_a_read() -> None:
    backend, fake = open_nvml([FakeGpu(), FakeGpu()])
    fake.gpus[1].lost_after = fake.gpus[1].call_count + 3  # falls off in the middle of a read
    first, second = backend.read_gpus(1.0, slow=False)
    assert not first.lost
    assert second.lost and second.power_w is None and second.error == LOST_MESSAGE


def test_gpu_lost_reported_in_a_field_value_entry() -> None:
    backend, fake = open_nvml([FakeGpu(), FakeGpu()])
    fake.gpus[0].field_returns[83] = pynvml.NVML_ERROR_GPU_IS_LOST
    first, second = backend.read_gpus(1.0, slow=False)
    assert first.lost and not second.lost


def test_gpu_lost_while_listing_processes() -> None:
    gpus = [
        FakeGpu(compute_processes=[FakeProcess(10)]),
        FakeGpu(compute_processes=[FakeProcess(20)]),
    ]
    backend, _ = open_nvml(gpus)
    gpus[1].lost = True
    assert [p.pid for p in backend.read_processes(1.0)] == [10]
    assert backend.read_gpus(1.0, slow=False)[1].lost


def test_gpu_lost_at_open_keeps_the_others() -> None:
    backend, _ = open_nvml([FakeGpu(lost=True), FakeGpu()])
    first, second = backend.read_gpus(1.0, slow=False)
    assert first.lost and first.error == LOST_MESSAGE
    assert not second.lost


# -- the library or driver stops answering --------------------------------------------------------

DRIVER_ERRORS = [
    (pynvml.NVMLError_DriverNotLoaded, "NVML: NVIDIA driver not loaded"),
    (pynvml.NVMLError_Uninitialized, "NVML: library not initialized"),
    (pynvml.NVMLError_Unknown, "NVML: unknown error"),
    (
        pynvml.NVMLError_LibRmVersionMismatch,
        "NVML: library and kernel driver versions differ (driver updated but not reloaded)",
    ),
]


@pytest.mark.parametrize(("error", "message"), DRIVER_ERRORS)
def test_driver_not_answering_mid_run_is_a_gpu_error_retried_every_read(
    error: type, message: str
) -> None:
    gpus = [FakeGpu(compute_processes=[FakeProcess(10)]), FakeGpu()]
    backend, fake = open_nvml(gpus)
    assert [s.error for s in backend.read_gpus(1.0, slow=True)] == [None, None]
    unsupported_before = len(backend._calls.unsupported)  # type: ignore[union-attr]
    gpus[0].fail_with = error  # from this tick on, every call for GPU 0 raises it
    for t in (2.0, 3.0):
        before = fake.calls_on(0)
        first, second = backend.read_gpus(t, slow=t == 2.0)
        assert first.error == message
        assert first.lost is False  # not "fell off the bus"
        assert (first.index, first.timestamp) == (0, t)
        for name in FAST_FIELDS_OF_INTEREST + SLOW_SAMPLE_FIELDS:
            assert getattr(first, name) is None, name
        assert fake.calls_on(0) > before  # asked again: nothing was taken as unsupported
        assert second.error is None and second.power_w == 350.0
    assert len(backend._calls.unsupported) == unsupported_before  # type: ignore[union-attr]
    assert backend.read_processes(3.0) == []
    gpus[0].fail_with = None  # the driver answers again
    first, second = backend.read_gpus(4.0, slow=True)
    assert first.error is None and not first.lost
    assert first.power_w == 350.0 and first.temperature_gpu_c == 45.0
    assert [p.pid for p in backend.read_processes(4.0)] == [10]


def test_driver_unloaded_in_the_middle_of_a_read_is_an_error_at_once() -> None:
    backend, fake = open_nvml([FakeGpu(), FakeGpu()])
    fake.gpus[1].fail_with = pynvml.NVMLError_DriverNotLoaded
    fake.gpus[1].fail_after = fake.gpus[1].call_count + 3  # some calls answered first
    first, second = backend.read_gpus(1.0, slow=False)
    assert first.error is None
    assert second.error == "NVML: NVIDIA driver not loaded" and not second.lost
    assert second.power_w is None


def test_one_odd_unknown_error_among_answers_is_not_a_gpu_error() -> None:
    gpu = FakeGpu(errors={"nvmlDeviceGetPowerUsage": pynvml.NVMLError_Unknown})
    backend, _ = open_nvml([gpu])
    (sample,) = backend.read_gpus(1.0, slow=False)
    assert sample.error is None and sample.power_w is None
    assert sample.temperature_gpu_c == 45.0


def test_not_supported_everywhere_stays_quiet_not_an_error() -> None:
    backend, fake = open_nvml([FakeGpu()])
    fake.gpus[0].fail_with = pynvml.NVMLError_NotSupported
    (sample,) = backend.read_gpus(1.0, slow=True)
    assert sample.error is None and not sample.lost and sample.power_w is None


def test_gpu_is_lost_is_still_lost_not_a_driver_error() -> None:
    backend, fake = open_nvml([FakeGpu(), FakeGpu()])
    fake.gpus[0].fail_with = NVMLError_GpuIsLost
    first, _ = backend.read_gpus(1.0, slow=False)
    assert first.lost and first.error == LOST_MESSAGE


def test_rates_start_again_after_the_driver_comes_back() -> None:
    gpu = FakeGpu(pcie_tx_bytes=0)
    backend, _ = open_nvml([gpu])
    backend.read_gpus(1.0, slow=True)
    gpu.fail_with = pynvml.NVMLError_DriverNotLoaded
    assert backend.read_gpus(2.0, slow=True)[0].error is not None
    gpu.fail_with = None
    gpu.pcie_tx_bytes = 10_000  # whatever the counter says now, it is a new baseline
    (sample,) = backend.read_gpus(3.0, slow=True)
    assert sample.error is None and sample.pcie_tx_bytes_per_s is None
    gpu.pcie_tx_bytes += 1000
    assert backend.read_gpus(4.0, slow=True)[0].pcie_tx_bytes_per_s == 1000.0


# -- fallbacks for older drivers and bindings ------------------------------------------------------


def test_temperature_v_falls_back_to_temperature() -> None:
    backend, fake = open_nvml([FakeGpu(temperature=66)], missing={"nvmlDeviceGetTemperatureV"})
    for t in range(3):
        assert backend.read_gpus(float(t), slow=False)[0].temperature_gpu_c == 66.0
    assert fake.calls["nvmlDeviceGetTemperatureV"] == 1
    assert fake.calls["nvmlDeviceGetTemperature"] == 3


def test_temperature_v_is_preferred() -> None:
    backend, fake = open_nvml([FakeGpu(temperature=66)])
    assert backend.read_gpus(1.0, slow=False)[0].temperature_gpu_c == 66.0
    assert fake.calls["nvmlDeviceGetTemperature"] == 0


def test_memory_info_v2_falls_back_to_v1() -> None:
    backend, fake = open_nvml(1, missing={"nvmlDeviceGetMemoryInfo_v2"})
    for t in range(3):
        (s,) = backend.read_gpus(float(t), slow=False)
        assert s.memory_reserved_bytes is None
        assert s.memory_used_bytes == 10 * GiB + 512 * MiB  # v1 "used" includes reserved
        assert s.memory_total_bytes == 80 * GiB
    versions = [k.get("version") for k in fake.kwargs_of("nvmlDeviceGetMemoryInfo")]
    assert versions.count(pynvml.nvmlMemory_v2) == 1  # tried once, at open
    assert versions.count(None) == 4


def test_memory_info_v2_falls_back_when_the_binding_has_no_version_keyword() -> None:
    fake = make_fake_nvml(1)
    v1 = fake.nvmlDeviceGetMemoryInfo

    def old_binding(handle):  # nvidia-ml-py before the version= keyword
        return v1(handle)

    fake.nvmlDeviceGetMemoryInfo = old_binding
    backend = NvmlBackend(fake)
    backend.open()
    (s,) = backend.read_gpus(1.0, slow=False)
    assert s.memory_reserved_bytes is None
    assert s.memory_used_bytes == 10 * GiB + 512 * MiB


@pytest.mark.parametrize("how", ["missing", "absent"])
def test_clocks_event_reasons_fall_back_to_throttle_reasons(how: str) -> None:
    gpu = FakeGpu(throttle_reasons=0x8, unsupported_fields={269, 270, 271, 75})
    backend, fake = open_nvml([gpu], **{how: {"nvmlDeviceGetCurrentClocksEventReasons"}})
    # No duration counters: the bit counts from its second reading in a row.
    expected = [set(), {"hw_slowdown"}, {"hw_slowdown"}]
    for t in range(3):
        assert backend.read_gpus(float(t), slow=False)[0].throttle_reasons == expected[t]
    assert fake.calls["nvmlDeviceGetCurrentClocksEventReasons"] == (1 if how == "missing" else 0)
    assert fake.calls["nvmlDeviceGetCurrentClocksThrottleReasons"] == 3


def test_processes_utilization_info_falls_back_to_process_utilization() -> None:
    gpu = FakeGpu(
        compute_processes=[FakeProcess(10)],
        process_utilization=[FakeProcUtil(10, 1_000, 35)],
    )
    backend, fake = open_nvml([gpu], missing={"nvmlDeviceGetProcessesUtilizationInfo"})
    assert backend.read_processes(1.0)[0].sm_pct == 35.0
    backend.read_processes(2.0)
    assert fake.calls["nvmlDeviceGetProcessesUtilizationInfo"] == 1
    assert fake.calls["nvmlDeviceGetProcessUtilization"] == 2
