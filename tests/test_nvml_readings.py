"""The fast and slow tiers of a reading (gputui.backends.nvml.device): values and units, clock
slowdown reasons, PCIe and NVLink rates from counter deltas, and the calls a reading costs."""

from __future__ import annotations

import pynvml
import pytest
from tests.factories import open_nvml
from tests.fakes.fake_pynvml import (
    FakeGpu,
    FakeProcess,
    GiB,
    MiB,
    nvswitch_links,
)

from gputui.backends.nvml import (
    decode_throttle_reasons,
)
from gputui.core.model import SLOW_SAMPLE_FIELDS, THROTTLE_REASONS

pytestmark = pytest.mark.usefixtures("nvml_backends")


# -- fast and slow tiers --------------------------------------------------------------------------


def test_fast_tier_values_and_units() -> None:
    gpu = FakeGpu(
        fan_speeds=[30, 50],
        power_mw=351_500,
        enforced_power_limit_mw=600_000,
        energy_mj=5_000_250,
        temperature=61,
        memory_temperature=70,
        pstate=2,
        encoder=12,
        decoder=7,
        throttle_reasons=0x4 | 0x40,
        util_gpu=97,
        util_memory=40,
    )
    backend, _ = open_nvml([gpu])
    (s,) = backend.read_gpus(123.0, slow=False)
    assert (s.index, s.timestamp, s.lost, s.error) == (0, 123.0, False, None)
    assert (s.utilization_gpu_pct, s.utilization_memory_pct) == (97.0, 40.0)
    assert s.memory_used_bytes == 10 * GiB
    assert s.memory_reserved_bytes == 512 * MiB
    assert s.memory_free_bytes == 80 * GiB - 10 * GiB - 512 * MiB
    assert s.memory_total_bytes == 80 * GiB
    assert s.power_w == 351.5
    assert s.power_limit_w == 600.0
    assert s.energy_j == pytest.approx(5000.25)
    assert s.temperature_gpu_c == 61.0
    assert s.temperature_memory_c == 70.0
    assert s.temperature_hotspot_c is None
    assert (s.clock_sm_mhz, s.clock_memory_mhz) == (1755, 2619)
    # The HW thermal bit counts once its duration counter grows (none yet at a first reading).
    assert s.throttle_reasons == {"sw_power_cap"}
    gpu.slowdown_ns[270] += 800_000_000
    # What changes slowly is read on the slow tier (the sampler carries it between).
    (s,) = backend.read_gpus(124.0, slow=True)
    assert s.throttle_reasons == {"sw_power_cap", "hw_thermal"}
    assert s.fan_pct == 40.0
    assert s.clock_graphics_mhz == 1755
    assert s.pstate == 2
    assert (s.pcie_gen, s.pcie_width) == (4, 16)
    assert (s.encoder_pct, s.decoder_pct) == (12.0, 7.0)


def test_fast_read_leaves_slow_fields_none_and_makes_no_slow_calls() -> None:
    gpu = FakeGpu(ecc_errors={(0, 0): 3}, retired_pages_pending=1, remapped_rows=(2, 1, 0, 0))
    backend, fake = open_nvml([gpu])
    (fast,) = backend.read_gpus(1.0, slow=False)
    for name in SLOW_SAMPLE_FIELDS:
        assert getattr(fast, name) is None, name
    for call in (
        "nvmlDeviceGetTotalEccErrors",
        "nvmlDeviceGetRetiredPagesPendingStatus",
        "nvmlDeviceGetRemappedRows",
        "nvmlDeviceGetPcieThroughput",
    ):
        assert fake.calls[call] == 0, call
    requested = [fid for fid, _ in fake.args_of("nvmlDeviceGetFieldValues")[-1][1]]
    assert 197 not in requested and 138 not in requested

    (slow,) = backend.read_gpus(2.0, slow=True)
    assert slow.ecc_volatile_corrected == 3
    assert slow.ecc_volatile_uncorrected == 0
    assert slow.ecc_aggregate_corrected == 0
    assert slow.retired_pages_pending is True
    assert (slow.remapped_rows_correctable, slow.remapped_rows_uncorrectable) == (2, 1)
    assert (slow.remapped_rows_pending, slow.remapped_rows_failure) == (False, False)
    assert slow.power_w == 350.0  # the fast tier is read as well


def test_pstate_unknown_is_none() -> None:
    backend, _ = open_nvml([FakeGpu(pstate=32)])
    assert backend.read_gpus(1.0, slow=False)[0].pstate is None


def test_fanless_board_makes_no_fan_calls() -> None:
    backend, fake = open_nvml([FakeGpu(fan_speeds=[])])
    assert backend.read_gpus(1.0, slow=False)[0].fan_pct is None
    assert fake.calls["nvmlDeviceGetFanSpeed_v2"] == 0
    assert fake.calls["nvmlDeviceGetFanSpeed"] == 0


def test_fan_falls_back_to_single_fan_call_when_count_unknown() -> None:
    backend, fake = open_nvml([FakeGpu(fan_speeds=[44], unsupported={"nvmlDeviceGetNumFans"})])
    assert backend.read_gpus(1.0, slow=True)[0].fan_pct == 44.0  # fans: slow tier
    assert fake.calls["nvmlDeviceGetFanSpeed"] == 1


def test_energy_falls_back_to_the_direct_call_when_the_field_is_unsupported() -> None:
    backend, fake = open_nvml([FakeGpu(unsupported_fields={83}, energy_mj=2_000)])
    assert backend.read_gpus(1.0, slow=False)[0].energy_j == 2.0
    assert fake.calls["nvmlDeviceGetTotalEnergyConsumption"] == 1


def test_memory_temperature_zero_means_no_sensor() -> None:
    backend, _ = open_nvml([FakeGpu(memory_temperature=0)])
    assert backend.read_gpus(1.0, slow=False)[0].temperature_memory_c is None


# -- throttle reasons -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mask", "names"),
    [
        (0x0, set()),
        (0x1, {"gpu_idle"}),
        (0x2 | 0x4, {"applications_clocks", "sw_power_cap"}),
        (0x8 | 0x10 | 0x20, {"hw_slowdown", "sync_boost", "sw_thermal"}),
        (0x40 | 0x80 | 0x100, {"hw_thermal", "hw_power_brake", "display_clocks"}),
        (0x200 | 0x400, {"board_limit", "reliability"}),
        (0x1000, set()),  # unknown bits are ignored
    ],
)
def test_throttle_decoding(mask: int, names: set[str]) -> None:
    assert decode_throttle_reasons(mask) == names


def test_throttle_names_are_canonical() -> None:
    assert decode_throttle_reasons(0x7FF) == set(THROTTLE_REASONS)
    assert decode_throttle_reasons(pynvml.nvmlClocksEventReasonSwThermalSlowdown) == {"sw_thermal"}


# -- PCIe and NVLink rates ------------------------------------------------------------------------


def test_pcie_and_nvlink_rates_from_counter_deltas() -> None:
    gpu = FakeGpu(pcie_tx_bytes=10_000, pcie_rx_bytes=0, nvlink_tx_kib=100, nvlink_rx_kib=0)
    backend, fake = open_nvml([gpu])
    (first,) = backend.read_gpus(10.0, slow=True)
    assert first.pcie_tx_bytes_per_s is None  # no baseline yet
    assert first.nvlink_tx_bytes_per_s is None
    gpu.pcie_tx_bytes += 4_000_000
    gpu.pcie_rx_bytes += 1_000_000
    gpu.nvlink_tx_kib += 4096
    gpu.nvlink_rx_kib += 2048
    backend.read_gpus(11.0, slow=False)  # a fast read in between does not disturb the baseline
    (second,) = backend.read_gpus(12.0, slow=True)
    assert second.pcie_tx_bytes_per_s == 2_000_000.0
    assert second.pcie_rx_bytes_per_s == 500_000.0
    assert second.nvlink_tx_bytes_per_s == 2048 * 1024
    assert second.nvlink_rx_bytes_per_s == 1024 * 1024
    gpu.pcie_tx_bytes = 5  # counter went backwards (wrap or driver reload)
    (third,) = backend.read_gpus(14.0, slow=True)
    assert third.pcie_tx_bytes_per_s is None
    assert third.nvlink_tx_bytes_per_s == 0.0
    scopes = {fid: scope for fid, scope in fake.args_of("nvmlDeviceGetFieldValues")[-1][1]}
    assert scopes[138] == scopes[139] == 0xFFFFFFFF
    assert fake.calls["nvmlDeviceGetPcieThroughput"] == 0


def test_pcie_falls_back_to_throughput_when_counters_are_unsupported() -> None:
    gpu = FakeGpu(unsupported_fields={197, 198}, pcie_throughput_kbs=(300, 100))
    backend, fake = open_nvml([gpu])
    backend.read_gpus(1.0, slow=False)
    assert fake.calls["nvmlDeviceGetPcieThroughput"] == 0  # blocks 20 ms: slow tier only
    (s,) = backend.read_gpus(2.0, slow=True)
    assert s.pcie_tx_bytes_per_s == 300 * 1024
    assert s.pcie_rx_bytes_per_s == 100 * 1024
    assert fake.calls["nvmlDeviceGetPcieThroughput"] == 2


def test_an_h100_costs_few_calls_per_second() -> None:
    """One second in the life of the dashboard's sampler: a fast read every second and a slow
    one every third, on an H100 with 18 NVLinks and two processes. Every call is an ioctl under
    the driver lock that every other monitoring tool shares."""
    gpu = FakeGpu(
        nvlinks=nvswitch_links(18),
        compute_processes=[FakeProcess(10), FakeProcess(11)],
    )
    backend, fake = open_nvml([gpu])
    backend.read_gpus(0.0, slow=True)
    backend.read_processes(0.0)  # the first slow tier reads the per-link error counters
    before = sum(fake.calls.values())
    for t in range(1, 31):
        slow = t % 3 == 0
        backend.read_gpus(float(t), slow=slow)
        if slow:
            backend.read_processes(float(t))
    per_second = (sum(fake.calls.values()) - before) / 30
    assert per_second <= 12, dict(fake.calls)
