"""Clock slowdowns judged over time on real drivers: a HW-slowdown bit seen once during a clock
change is no fault; one whose duration counter grows, or that stays set without counters, is."""

from __future__ import annotations

import json
import types
from collections.abc import Callable
from pathlib import Path

import pynvml
from tests.fakes.checks import check_json, findings_of
from tests.fakes.fake_pynvml import FakeGpu, make_fake_nvml

from gputui.backends.nvml.calls import NvmlCalls, NvmlGpu
from gputui.backends.nvml.fields import read_fields
from gputui.backends.nvml.slowdown import SlowdownTracker

HW_SLOWDOWN = 0x8
HW_THERMAL = 0x40
SW_THERMAL = 0x20
POWER_BRAKE = 0x80
NO_COUNTERS = {269, 270, 271, 75}


def between_readings(action: Callable[[], None]) -> Callable[[float], None]:
    """A ``sleep`` for the check that does ``action`` between its two readings."""

    def sleep(_seconds: float) -> None:
        action()

    return sleep


def test_one_hw_slowdown_sample_during_a_clock_change_does_not_fail_the_node() -> None:
    gpu = FakeGpu(throttle_reasons=HW_SLOWDOWN)  # counters present, not growing

    def clock_change_over() -> None:
        gpu.throttle_reasons = 0

    code, doc = check_json(make_fake_nvml([gpu]), sleep=between_readings(clock_change_over))
    assert findings_of(doc, "throttle") == []
    assert code == 0


def test_a_set_bit_whose_counter_does_not_grow_is_not_a_slowdown() -> None:
    code, doc = check_json(make_fake_nvml([FakeGpu(throttle_reasons=HW_SLOWDOWN)]))
    assert findings_of(doc, "throttle") == [] and code == 0


def test_a_sustained_hw_thermal_slowdown_still_fails() -> None:
    gpu = FakeGpu(throttle_reasons=HW_SLOWDOWN | HW_THERMAL, temperature=92)

    def a_second_of_slowdown() -> None:
        gpu.slowdown_ns[270] += 1_000_000_000

    code, doc = check_json(make_fake_nvml([gpu]), sleep=between_readings(a_second_of_slowdown))
    (finding,) = findings_of(doc, "throttle")
    assert finding["severity"] == "fail"
    assert "HW thermal slowdown" in finding["message"] and "HW slowdown" in finding["message"]
    assert code == 2


def test_a_power_brake_between_readings_counts_even_if_the_bit_has_cleared() -> None:
    gpu = FakeGpu(throttle_reasons=0)

    def brake_asserted_and_released() -> None:
        gpu.slowdown_ns[271] += 300_000_000

    code, doc = check_json(
        make_fake_nvml([gpu]), sleep=between_readings(brake_asserted_and_released)
    )
    (finding,) = findings_of(doc, "throttle")
    assert "power brake" in finding["message"] and code == 2


def test_without_counters_one_sample_of_the_bit_is_not_enough() -> None:
    gpu = FakeGpu(throttle_reasons=HW_SLOWDOWN, unsupported_fields=NO_COUNTERS)

    def clock_change_over() -> None:
        gpu.throttle_reasons = 0

    code, doc = check_json(make_fake_nvml([gpu]), sleep=between_readings(clock_change_over))
    assert findings_of(doc, "throttle") == [] and code == 0


def test_without_counters_the_bit_on_two_readings_in_a_row_fails() -> None:
    gpu = FakeGpu(throttle_reasons=HW_SLOWDOWN, unsupported_fields=NO_COUNTERS)
    code, doc = check_json(make_fake_nvml([gpu]))
    (finding,) = findings_of(doc, "throttle")
    assert finding["severity"] == "fail" and code == 2


def test_older_drivers_time_thermal_slowdowns_with_the_perf_policy_counter() -> None:
    gpu = FakeGpu(throttle_reasons=SW_THERMAL, unsupported_fields={269, 270, 271})

    def thermal_policy_active() -> None:
        gpu.slowdown_ns[75] += 500_000_000

    code, doc = check_json(make_fake_nvml([gpu]), sleep=between_readings(thermal_policy_active))
    (finding,) = findings_of(doc, "throttle")
    assert finding["severity"] == "warn" and "SW thermal" in finding["message"]
    assert code == 1


def test_tracker_tolerates_a_counter_that_ticks_coarser_than_the_readings() -> None:
    tracker = SlowdownTracker()
    bits = frozenset({"hw_thermal"})
    assert tracker.confirm(bits, {(270, 0): 0}) == frozenset()
    assert tracker.confirm(bits, {(270, 0): 5e8}) == bits  # grew
    assert tracker.confirm(bits, {(270, 0): 5e8}) == bits  # no tick this time, bit still set
    assert tracker.confirm(bits, {(270, 0): 5e8}) == frozenset()  # two quiet intervals: over
    assert tracker.confirm(frozenset({"gpu_idle"}), {}) == {"gpu_idle"}  # not trouble: as read


REAL_RUN2 = Path(__file__).parent / "data" / "real" / "h100-sxm5-580.159.04" / "run2"


def test_the_real_h100s_unfilled_slowdown_fields_are_read_as_no_answer() -> None:
    """Driver 580.159.04 answered 269 and 75 as unsigned counters, but 270 and 271 with SUCCESS,
    value type double and 0 (the caller's zeroed entry): those entries, as the driver returned
    them, read as no answer, the others as counters."""
    answered = json.loads((REAL_RUN2 / "extra_load.json").read_text())["fields"]
    ids = (269, 270, 271, 75)
    entries = (pynvml.c_nvmlFieldValue_t * len(ids))()
    for entry, field_id in zip(entries, ids, strict=True):
        real = answered[str(field_id)]
        entry.fieldId, entry.nvmlReturn, entry.valueType = field_id, real["ret"], real["type"]
        entry.value.ullVal = real["ull"]
    driver = types.SimpleNamespace(
        NVMLError=pynvml.NVMLError, nvmlDeviceGetFieldValues=lambda handle, request: entries
    )
    values = read_fields(NvmlCalls(driver), NvmlGpu(index=0), [(f, 0) for f in ids])
    assert values == {(269, 0): 0, (75, 0): 0}


def test_unfilled_counters_do_not_hide_a_sustained_hw_thermal_slowdown() -> None:
    # As on the real H100: 270/271 unfilled, so HW thermal is timed by the thermal policy
    # counter (75) and the power brake by its bit on two readings in a row.
    gpu = FakeGpu(throttle_reasons=HW_SLOWDOWN | HW_THERMAL, unfilled_fields={270, 271})

    def a_second_of_slowdown() -> None:
        gpu.slowdown_ns[75] += 1_000_000_000

    code, doc = check_json(make_fake_nvml([gpu]), sleep=between_readings(a_second_of_slowdown))
    (finding,) = findings_of(doc, "throttle")
    assert "HW thermal slowdown" in finding["message"] and code == 2


def test_unfilled_power_brake_counter_falls_back_to_two_readings_of_the_bit() -> None:
    gpu = FakeGpu(throttle_reasons=POWER_BRAKE, unfilled_fields={270, 271})
    code, doc = check_json(make_fake_nvml([gpu]))
    (finding,) = findings_of(doc, "throttle")
    assert "power brake" in finding["message"] and code == 2
