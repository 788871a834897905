"""Per-GPU readings: the fast tier on every read (utilization, memory, power, temperatures,
clocks, throttle reasons, MIG memory) and the slow tier when asked (ECC, retired pages and
remapped rows, PCIe and NVLink rates, per-link readings)."""

from __future__ import annotations

from typing import Any

from gputui.backends.nvml.calls import MigSlice, NvmlCalls, NvmlGpu
from gputui.backends.nvml.fields import (
    ALL_LINKS,
    FAST_FIELDS,
    FI_MEMORY_TEMP,
    FI_NVLINK_DATA_RX,
    FI_NVLINK_DATA_TX,
    FI_PCIE_RX_BYTES,
    FI_PCIE_TX_BYTES,
    FI_TOTAL_ENERGY,
    SLOW_FIELDS,
    FieldKey,
    field_key,
    read_fields,
)
from gputui.backends.nvml.links import link_samples, link_states, per_link_fields
from gputui.backends.nvml.memory import read_memory
from gputui.backends.nvml.values import KIB, clock_types, to_bool, to_float, to_int, watts
from gputui.model import GpuSample, MigSample

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
    """NVML clock-event bitmask -> canonical names from :data:`gputui.model.THROTTLE_REASONS`."""
    return frozenset(name for bit, name in THROTTLE_BITS if mask & bit)


def read_sample(calls: NvmlCalls, gpu: NvmlGpu, now: float, slow: bool) -> GpuSample:
    """One reading of ``gpu``: the fast tier, plus the slow tier when ``slow``."""
    nvml, h = calls.nvml, gpu.handle

    def q(key: str, fn: str, *args: Any) -> Any:
        return calls.query(gpu, key, fn, *args)

    states = link_states(calls, gpu) if slow else {}
    wanted = FAST_FIELDS + (SLOW_FIELDS + per_link_fields(states) if slow else ())
    fields = read_fields(calls, gpu, wanted)
    util = q("utilization", "nvmlDeviceGetUtilizationRates", h)
    memory = read_memory(calls, gpu, h, "")
    energy_mj = fields.get((FI_TOTAL_ENERGY, 0))
    if energy_mj is None:
        energy_mj = to_float(q("energy", "nvmlDeviceGetTotalEnergyConsumption", h))
    memory_temp = fields.get((FI_MEMORY_TEMP, 0))
    temperature_sensor = getattr(nvml, "NVML_TEMPERATURE_GPU", 0)
    clocks = {
        kind: to_int(q(f"clock_{kind}", "nvmlDeviceGetClockInfo", h, clock))
        for kind, clock in clock_types(nvml).items()
    }
    pstate = to_int(q("pstate", "nvmlDeviceGetPerformanceState", h))
    encoder = q("encoder", "nvmlDeviceGetEncoderUtilization", h)
    decoder = q("decoder", "nvmlDeviceGetDecoderUtilization", h)
    reasons = to_int(calls.first(gpu, "throttle", _THROTTLE_CALLS, h))
    temperature = calls.first(gpu, "temperature", _TEMPERATURE_CALLS, h, temperature_sensor)
    values: dict[str, Any] = {
        "utilization_gpu_pct": to_float(util.gpu) if util is not None else None,
        "utilization_memory_pct": to_float(util.memory) if util is not None else None,
        "memory_used_bytes": memory.used if memory else None,
        "memory_free_bytes": memory.free if memory else None,
        "memory_reserved_bytes": memory.reserved if memory else None,
        "power_w": watts(q("power", "nvmlDeviceGetPowerUsage", h)),
        "power_limit_w": watts(q("power_limit", "nvmlDeviceGetEnforcedPowerLimit", h)),
        "energy_j": energy_mj / 1000 if energy_mj is not None else None,
        "temperature_gpu_c": to_float(temperature),
        # nvidia-ml-py has no hotspot (junction) sensor or field: hotspot stays None.
        # A board without a memory sensor reads 0 rather than failing.
        "temperature_memory_c": float(memory_temp) if memory_temp else None,
        "fan_pct": _fan(calls, gpu),
        "clock_sm_mhz": clocks["sm"],
        "clock_memory_mhz": clocks["memory"],
        "clock_graphics_mhz": clocks["graphics"],
        "pstate": pstate if pstate is not None and 0 <= pstate <= 15 else None,  # 32: unknown
        "pcie_gen": to_int(q("pcie_gen", "nvmlDeviceGetCurrPcieLinkGeneration", h)),
        "pcie_width": to_int(q("pcie_width", "nvmlDeviceGetCurrPcieLinkWidth", h)),
        "encoder_pct": to_float(encoder[0]) if encoder else None,
        "decoder_pct": to_float(decoder[0]) if decoder else None,
        "throttle_reasons": decode_throttle_reasons(reasons) if reasons is not None else None,
        "mig_devices": tuple(_mig_sample(calls, gpu, mig) for mig in gpu.migs),
    }
    if slow:
        values.update(_slow_values(calls, gpu, now, fields))
        values["links"] = link_samples(calls, gpu, now, states, fields)
    return GpuSample(index=gpu.index, timestamp=now, **values)


def _slow_values(
    calls: NvmlCalls, gpu: NvmlGpu, now: float, fields: dict[FieldKey, int | float]
) -> dict[str, Any]:
    nvml, h = calls.nvml, gpu.handle
    corrected = getattr(nvml, "NVML_MEMORY_ERROR_TYPE_CORRECTED", 0)
    uncorrected = getattr(nvml, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1)
    volatile = getattr(nvml, "NVML_VOLATILE_ECC", 0)
    aggregate = getattr(nvml, "NVML_AGGREGATE_ECC", 1)
    values: dict[str, Any] = {
        name: to_int(calls.query(gpu, name, "nvmlDeviceGetTotalEccErrors", h, kind, counter))
        for name, kind, counter in (
            ("ecc_volatile_corrected", corrected, volatile),
            ("ecc_volatile_uncorrected", uncorrected, volatile),
            ("ecc_aggregate_corrected", corrected, aggregate),
            ("ecc_aggregate_uncorrected", uncorrected, aggregate),
        )
    }
    pending = calls.query(gpu, "retired_pending", "nvmlDeviceGetRetiredPagesPendingStatus", h)
    values["retired_pages_pending"] = to_bool(pending)
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
