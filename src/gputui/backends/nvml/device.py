"""Per-GPU readings: the fast tier on every read (utilization, memory, power, temperatures,
clocks, throttle reasons, MIG memory) and the slow tier when asked (ECC, retired pages and
remapped rows, PCIe and NVLink rates, per-link readings)."""

from __future__ import annotations

from typing import Any

from gputui.backends.nvml.calls import MigSlice, NvmlCalls, NvmlGpu
from gputui.backends.nvml.fields import (
    ALL_LINKS,
    ECC_FIELDS,
    FAST_FIELDS,
    FI_ECC_DBE_AGG,
    FI_ECC_DBE_VOL,
    FI_ECC_SBE_AGG,
    FI_ECC_SBE_VOL,
    FI_MEMORY_TEMP,
    FI_NVLINK_DATA_RX,
    FI_NVLINK_DATA_TX,
    FI_PCIE_RX_BYTES,
    FI_PCIE_TX_BYTES,
    FI_POWER_AVERAGE,
    FI_POWER_CURRENT_LIMIT,
    FI_RETIRED_PENDING,
    FI_TOTAL_ENERGY,
    LINK_ERROR_TOTALS,
    REMAP_FIELDS,
    SLOW_FIELDS,
    FieldKey,
    field_key,
    link_fields,
    read_fields,
    supported,
)
from gputui.backends.nvml.links import link_samples
from gputui.backends.nvml.memory import read_memory
from gputui.backends.nvml.slowdown import SLOWDOWN_FIELDS
from gputui.backends.nvml.values import KIB, clock_types, to_bool, to_float, to_int, watts
from gputui.core.model import GpuSample, MigSample

# Clock-event (throttle) bits. 0x200 and 0x400 exist only in the deprecated "Throttle" family of
# constants, so they are decoded by value.
THROTTLE_BITS: tuple[tuple[int, str], ...] = (
    (0x001, "gpu_idle"),
    (0x002, "applications_clocks"),
    (0x004, "sw_power_cap"),
    (0x008, "hw_slowdown"),
    (0x010, "sync_boost"),
    (0x020, "sw_thermal"),
    (0x040, "hw_thermal"),
    (0x080, "hw_power_brake"),
    (0x100, "display_clocks"),
    (0x200, "board_limit"),
    (0x400, "reliability"),
)
_THROTTLE_CALLS = (
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetCurrentClocksThrottleReasons",
)
_TEMPERATURE_CALLS = ("nvmlDeviceGetTemperatureV", "nvmlDeviceGetTemperature")


def decode_throttle_reasons(mask: int) -> frozenset[str]:
    """NVML clock-event bitmask -> canonical names from
    :data:`gputui.core.model.THROTTLE_REASONS`."""
    return frozenset(name for bit, name in THROTTLE_BITS if mask & bit)


def read_sample(calls: NvmlCalls, gpu: NvmlGpu, now: float, slow: bool) -> GpuSample:
    """One reading of ``gpu``: the fast tier, plus the slow tier when ``slow``.

    Calls are kept few (each is an ioctl under the driver lock other tools share): one batched
    ``nvmlDeviceGetFieldValues`` carries power, the power limit, energy and memory temperature
    (and, on the slow tier, ECC, retired pages, remapped rows, PCIe and NVLink counters and the
    per-link state); the fast tier adds utilization, memory, temperature, two clocks and the
    clock-event reasons. What changes slowly (P-state, encoder and decoder, the PCIe link, the
    graphics clock, fans) is read on the slow tier only; the sampler carries it between."""
    nvml, h = calls.nvml, gpu.handle

    def q(key: str, fn: str, *args: Any) -> Any:
        return calls.query(gpu, key, fn, *args)

    wanted = FAST_FIELDS + SLOWDOWN_FIELDS
    if slow:
        wanted += SLOW_FIELDS
        if gpu.nvlinks:
            wanted += link_fields(gpu.nvlinks) + LINK_ERROR_TOTALS
    fields = read_fields(calls, gpu, wanted)
    util = q("utilization", "nvmlDeviceGetUtilizationRates", h)
    memory = read_memory(calls, gpu, h, "")
    energy_mj = _field_or_call(
        calls, gpu, fields, FI_TOTAL_ENERGY, "energy", "nvmlDeviceGetTotalEnergyConsumption"
    )
    power_mw = _field_or_call(
        calls, gpu, fields, FI_POWER_AVERAGE, "power", "nvmlDeviceGetPowerUsage"
    )
    limit_mw = _field_or_call(
        calls, gpu, fields, FI_POWER_CURRENT_LIMIT, "power_limit", "nvmlDeviceGetEnforcedPowerLimit"
    )
    memory_temp = fields.get((FI_MEMORY_TEMP, 0))
    temperature_sensor = getattr(nvml, "NVML_TEMPERATURE_GPU", 0)
    kinds = clock_types(nvml)
    reasons = to_int(calls.first(gpu, "throttle", _THROTTLE_CALLS, h))
    temperature = calls.first(gpu, "temperature", _TEMPERATURE_CALLS, h, temperature_sensor)
    values: dict[str, Any] = {
        "utilization_gpu_pct": to_float(util.gpu) if util is not None else None,
        "utilization_memory_pct": to_float(util.memory) if util is not None else None,
        "memory_used_bytes": memory.used if memory else None,
        "memory_free_bytes": memory.free if memory else None,
        "memory_reserved_bytes": memory.reserved if memory else None,
        "power_w": watts(power_mw),
        "power_limit_w": watts(limit_mw),
        "energy_j": float(energy_mj) / 1000 if energy_mj is not None else None,
        "temperature_gpu_c": to_float(temperature),
        # nvidia-ml-py has no hotspot (junction) sensor or field: hotspot stays None.
        # A board without a memory sensor reads 0 rather than failing.
        "temperature_memory_c": float(memory_temp) if memory_temp else None,
        "clock_sm_mhz": to_int(q("clock_sm", "nvmlDeviceGetClockInfo", h, kinds["sm"])),
        "clock_memory_mhz": to_int(q("clock_memory", "nvmlDeviceGetClockInfo", h, kinds["memory"])),
        "throttle_reasons": (
            gpu.slowdowns.confirm(decode_throttle_reasons(reasons), fields)
            if reasons is not None
            else None
        ),
        "mig_devices": tuple(_mig_sample(calls, gpu, mig) for mig in gpu.migs),
    }
    if slow:
        pstate = to_int(q("pstate", "nvmlDeviceGetPerformanceState", h))
        encoder = q("encoder", "nvmlDeviceGetEncoderUtilization", h)
        decoder = q("decoder", "nvmlDeviceGetDecoderUtilization", h)
        values.update(
            clock_graphics_mhz=to_int(
                q("clock_graphics", "nvmlDeviceGetClockInfo", h, kinds["graphics"])
            ),
            pstate=pstate if pstate is not None and 0 <= pstate <= 15 else None,  # 32: unknown
            **_pcie_link(calls, gpu),
            encoder_pct=to_float(encoder[0]) if encoder else None,
            decoder_pct=to_float(decoder[0]) if decoder else None,
            fan_pct=_fan(calls, gpu),
        )
        values.update(_slow_values(calls, gpu, now, fields))
        values["links"] = link_samples(calls, gpu, now, fields)
    values["unanswered"] = _unanswered(gpu, values)
    return GpuSample(index=gpu.index, timestamp=now, **values)


def _unanswered(gpu: NvmlGpu, values: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """Utilization and memory where their call failed with an error this time (not "not
    supported"), with NVML's words (see ``GpuSample.unanswered``)."""
    failed = gpu.failures
    found = []
    for reading, value, keys in (
        ("utilization", "utilization_gpu_pct", ("utilization",)),
        ("memory", "memory_used_bytes", ("memory_v2", "memory_v1")),
    ):
        error = next((failed[k] for k in keys if k in failed), None)
        if values[value] is None and error is not None:
            found.append((reading, error))
    return tuple(found)


def _pcie_link(calls: NvmlCalls, gpu: NvmlGpu) -> dict[str, int | None]:
    """The trained PCIe generation and width; not asked where the host link is NVLink-C2C
    (GH200, GB200: the PCIe queries answer a placeholder Gen1 x1)."""
    if gpu.info is not None and gpu.info.host_link == "nvlink-c2c":
        return {"pcie_gen": None, "pcie_width": None}
    h = gpu.handle
    return {
        "pcie_gen": to_int(calls.query(gpu, "pcie_gen", "nvmlDeviceGetCurrPcieLinkGeneration", h)),
        "pcie_width": to_int(calls.query(gpu, "pcie_width", "nvmlDeviceGetCurrPcieLinkWidth", h)),
    }


def _field_or_call(
    calls: NvmlCalls,
    gpu: NvmlGpu,
    fields: dict[FieldKey, int | float],
    field_id: int,
    key: str,
    fn: str,
) -> int | float | None:
    """A field's value, or the equivalent call's where the driver has not got the field."""
    value = fields.get((field_id, 0))
    if value is None and calls.is_unsupported(gpu, field_key(field_id, 0)):
        answer = calls.query(gpu, key, fn, gpu.handle)
        return to_float(answer) if answer is not None else None
    return value


def _slow_values(
    calls: NvmlCalls, gpu: NvmlGpu, now: float, fields: dict[FieldKey, int | float]
) -> dict[str, Any]:
    nvml, h = calls.nvml, gpu.handle
    values: dict[str, Any] = {}
    if supported(calls, gpu, ECC_FIELDS):
        for name, field_id in (
            ("ecc_volatile_corrected", FI_ECC_SBE_VOL),
            ("ecc_volatile_uncorrected", FI_ECC_DBE_VOL),
            ("ecc_aggregate_corrected", FI_ECC_SBE_AGG),
            ("ecc_aggregate_uncorrected", FI_ECC_DBE_AGG),
        ):
            value = fields.get((field_id, 0))
            values[name] = int(value) if value is not None else None
    else:
        corrected = getattr(nvml, "NVML_MEMORY_ERROR_TYPE_CORRECTED", 0)
        uncorrected = getattr(nvml, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1)
        volatile = getattr(nvml, "NVML_VOLATILE_ECC", 0)
        aggregate = getattr(nvml, "NVML_AGGREGATE_ECC", 1)
        values.update(
            {
                name: to_int(
                    calls.query(gpu, name, "nvmlDeviceGetTotalEccErrors", h, kind, counter)
                )
                for name, kind, counter in (
                    ("ecc_volatile_corrected", corrected, volatile),
                    ("ecc_volatile_uncorrected", uncorrected, volatile),
                    ("ecc_aggregate_corrected", corrected, aggregate),
                    ("ecc_aggregate_uncorrected", uncorrected, aggregate),
                )
            }
        )
    pending = _field_or_call(
        calls,
        gpu,
        fields,
        FI_RETIRED_PENDING,
        "retired_pending",
        "nvmlDeviceGetRetiredPagesPendingStatus",
    )
    values["retired_pages_pending"] = to_bool(pending)
    if supported(calls, gpu, REMAP_FIELDS):
        row_values = [fields.get(key) for key in REMAP_FIELDS]
        rows: Any = None if any(v is None for v in row_values) else row_values
    else:
        rows = calls.query(gpu, "remapped_rows", "nvmlDeviceGetRemappedRows", h)
    if rows is not None:
        corr, unc, rows_pending, failure = rows
        values.update(
            remapped_rows_correctable=int(corr),
            remapped_rows_uncorrectable=int(unc),
            remapped_rows_pending=bool(rows_pending),
            remapped_rows_failure=bool(failure),
        )
    values.update(_pcie_rates(calls, gpu, now, fields))
    for direction, field_id in (("tx", FI_NVLINK_DATA_TX), ("rx", FI_NVLINK_DATA_RX)):
        rate = gpu.rates.rate(f"nvlink_{direction}", fields.get((field_id, ALL_LINKS)), now)
        values[f"nvlink_{direction}_bytes_per_s"] = rate * KIB if rate is not None else None
    return values


def _pcie_rates(
    calls: NvmlCalls, gpu: NvmlGpu, now: float, fields: dict[FieldKey, int | float]
) -> dict[str, float | None]:
    """PCIe bytes/s from the cumulative counters; the 20 ms-blocking throughput call only
    when the driver has no counters."""
    values: dict[str, float | None] = {}
    counters = {"tx": FI_PCIE_TX_BYTES, "rx": FI_PCIE_RX_BYTES}
    throughput = {
        "tx": getattr(calls.nvml, "NVML_PCIE_UTIL_TX_BYTES", 0),
        "rx": getattr(calls.nvml, "NVML_PCIE_UTIL_RX_BYTES", 1),
    }
    for direction, field_id in counters.items():
        rate: float | None
        if not calls.is_unsupported(gpu, field_key(field_id, 0)):
            rate = gpu.rates.rate(f"pcie_{direction}", fields.get((field_id, 0)), now)
        else:
            kbs = calls.query(
                gpu,
                f"pcie_throughput_{direction}",
                "nvmlDeviceGetPcieThroughput",
                gpu.handle,
                throughput[direction],
            )
            rate = float(kbs) * KIB if kbs is not None else None
        values[f"pcie_{direction}_bytes_per_s"] = rate
    return values


def _fan(calls: NvmlCalls, gpu: NvmlGpu) -> float | None:
    """Average over the fans; None on fanless boards."""
    count = gpu.info.fan_count if gpu.info else None
    if count == 0:
        return None
    speeds = [
        float(speed)
        for fan in range(count or 0)
        if (speed := calls.query(gpu, f"fan{fan}", "nvmlDeviceGetFanSpeed_v2", gpu.handle, fan))
        is not None
    ]
    if not speeds:
        speed = calls.query(gpu, "fan", "nvmlDeviceGetFanSpeed", gpu.handle)
        speeds = [float(speed)] if speed is not None else []
    return sum(speeds) / len(speeds) if speeds else None


def _mig_sample(calls: NvmlCalls, gpu: NvmlGpu, mig: MigSlice) -> MigSample:
    memory = read_memory(calls, gpu, mig.handle, mig.key)
    return MigSample(
        uuid=mig.info.uuid,
        memory_used_bytes=memory.used if memory else None,
        memory_total_bytes=memory.total if memory else mig.info.memory_total_bytes,
    )
