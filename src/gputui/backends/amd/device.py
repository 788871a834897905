"""Per-GPU readings: the fast tier on every read (activity, memory, power, energy, temperatures,
fan, clocks, PCIe link, throttle reasons) and the slow tier when asked (ECC, bad pages, XGMI,
and PCIe throughput when enabled)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gputui.backends.amd.calls import AmdCalls
from gputui.backends.amd.links import LinkRateKey, read_xgmi
from gputui.backends.amd.sensors import clock_info, temperature
from gputui.backends.amd.throttle import ThrottleTracker
from gputui.backends.amd.values import (
    MIB,
    counter,
    get,
    nonnegative,
    num,
    pcie_gen,
    pct,
    positive,
    to_int,
    watts_from_uw,
)
from gputui.backends.common import CounterRates
from gputui.core.model import GpuInfo, GpuSample

_MAX_FAN_SPEED = 255  # amdsmi_interface.AMDSMI_MAX_FAN_SPEED: fan speed is 0..255, not %
_PAGE_STATUS_PENDING = 1  # AMDSMI_MEM_PAGE_STATUS_PENDING
# current_socket_power on MI300+, average_socket_power on older GPUs.
_POWER_KEYS = ("current_socket_power", "average_socket_power", "socket_power")


class DeviceReader:
    """Reads GPUs in both tiers and keeps what the readings need between ticks: the memory
    totals from the static tier, throttle residency counters and XGMI counter baselines.

    ``pcie_throughput`` adds ``amdsmi_get_gpu_pci_throughput`` to the slow tier (it blocks about
    one second per GPU).
    """

    def __init__(
        self, calls: AmdCalls, gpus: Sequence[GpuInfo], *, pcie_throughput: bool = False
    ) -> None:
        self._calls = calls
        self._memory_total = {info.index: info.memory_total_bytes for info in gpus}
        self._pcie_throughput = pcie_throughput
        self._throttle = ThrottleTracker()
        self._link_rates: CounterRates[LinkRateKey] = CounterRates()

    def forget_gpu(self, index: int) -> None:
        """Drop the deltas of a lost GPU so a returning GPU does not report a bogus rate."""
        self._throttle.forget(index)
        self._link_rates.forget_where(lambda key: key[0] == index)

    def read(self, i: int, now: float, slow: bool) -> GpuSample:
        """One reading of GPU ``i``: the fast tier, plus the slow tier when ``slow``.

        Raises :class:`~gputui.backends.amd.calls.GpuGone` when the GPU is gone."""
        calls = self._calls
        fields: dict[str, Any] = {}

        activity = calls.call(i, "activity", "amdsmi_get_gpu_activity")
        fields["utilization_gpu_pct"] = pct(get(activity, "gfx_activity"))
        fields["utilization_memory_pct"] = pct(get(activity, "umc_activity"))

        fields.update(self._memory(i))

        power = calls.call(i, "power_info", "amdsmi_get_power_info")
        # Take the first answered value, preferring a non-zero one (a board may answer 0 for the
        # field it lacks).
        candidates = [num(get(power, key)) for key in _POWER_KEYS]
        answered = [float(c) for c in candidates if c is not None and c >= 0]
        fields["power_w"] = next((c for c in answered if c > 0), answered[0] if answered else None)
        cap = calls.call(i, "power_cap_info", "amdsmi_get_power_cap_info")
        fields["power_limit_w"] = watts_from_uw(get(cap, "power_cap"))

        energy = calls.call(i, "energy_count", "amdsmi_get_energy_count")
        accumulator = counter(get(energy, "energy_accumulator"))
        resolution = num(get(energy, "counter_resolution"))
        if accumulator is not None and resolution is not None and resolution > 0:
            fields["energy_j"] = accumulator * resolution / 1e6  # µJ -> J

        edge = temperature(calls, i, "EDGE", "CURRENT")
        hotspot = temperature(calls, i, "HOTSPOT", "CURRENT")
        # MI300-class GPUs have no EDGE sensor: the junction (hotspot) is their GPU temperature.
        fields["temperature_gpu_c"] = edge if edge is not None else hotspot
        fields["temperature_hotspot_c"] = hotspot
        fields["temperature_memory_c"] = temperature(calls, i, "VRAM", "CURRENT")

        fan = num(calls.call(i, "fan_speed:0", "amdsmi_get_gpu_fan_speed", 0))
        if fan is not None and 0 <= fan <= _MAX_FAN_SPEED:
            fields["fan_pct"] = fan * 100.0 / _MAX_FAN_SPEED

        gfx_clock = nonnegative(get(clock_info(calls, i, "GFX"), "clk"))
        fields["clock_sm_mhz"] = gfx_clock
        fields["clock_graphics_mhz"] = gfx_clock
        fields["clock_memory_mhz"] = nonnegative(get(clock_info(calls, i, "MEM"), "clk"))

        pcie_metric = get(calls.call(i, "pcie_info", "amdsmi_get_pcie_info"), "pcie_metric")
        fields["pcie_gen"] = pcie_gen(get(pcie_metric, "pcie_speed"))
        fields["pcie_width"] = positive(get(pcie_metric, "pcie_width"))

        metrics = calls.call(i, "gpu_metrics", "amdsmi_get_gpu_metrics_info")
        fields["throttle_reasons"] = self._throttle.reasons(i, metrics)

        if slow:
            fields.update(self._slow_fields(i, now))
        fields["unanswered"] = self._unanswered(i, fields)
        return GpuSample(index=i, timestamp=now, **fields)

    def _unanswered(self, i: int, fields: dict[str, Any]) -> tuple[tuple[str, str], ...]:
        """Utilization and memory where their calls failed with an error this time (not "not
        supported"), with AMD-SMI's words (see ``GpuSample.unanswered``)."""
        found = []
        for reading, value, keys in (
            ("utilization", "utilization_gpu_pct", ("activity",)),
            ("memory", "memory_used_bytes", ("memory_usage_vram", "vram_usage")),
        ):
            errors = (self._calls.failure(i, key) for key in keys)
            error = next((e for e in errors if e is not None), None)
            if fields.get(value) is None and error is not None:
                found.append((reading, error))
        return tuple(found)

    def _memory(self, i: int) -> dict[str, int | None]:
        calls = self._calls
        total = self._memory_total.get(i)
        vram = calls.enum("AmdSmiMemoryType", "VRAM")
        used = counter(calls.call(i, "memory_usage_vram", "amdsmi_get_gpu_memory_usage", vram))
        if used is None:  # MB-granular fallback
            usage = calls.call(i, "vram_usage", "amdsmi_get_gpu_vram_usage")
            used_mb = to_int(get(usage, "vram_used"))
            total_mb = positive(get(usage, "vram_total"))
            used = used_mb * MIB if used_mb is not None and used_mb >= 0 else None
            total = total if total is not None else (total_mb * MIB if total_mb else None)
        if used is None:
            return {"memory_used_bytes": None, "memory_free_bytes": None}
        free = max(total - used, 0) if total is not None else None
        return {"memory_used_bytes": used, "memory_free_bytes": free}

    def _slow_fields(self, i: int, now: float) -> dict[str, Any]:
        calls = self._calls
        fields: dict[str, Any] = {}
        # AMD keeps one set of RAS counters. The kernel counts them since the driver loaded, but on
        # some ASICs (persistent EDC harvesting) they survive a warm reset, so they are neither
        # NVML's "volatile" nor its lifetime "aggregate" exactly. We report them as aggregate only
        # and leave volatile None rather than claim a reset-on-reload meaning we cannot promise.
        # Deferred errors (poisoned data, handled later) are not added to either count.
        ecc = calls.call(i, "ecc_total", "amdsmi_get_gpu_total_ecc_count")
        fields["ecc_aggregate_corrected"] = counter(get(ecc, "correctable_count"))
        fields["ecc_aggregate_uncorrected"] = counter(get(ecc, "uncorrectable_count"))

        pages = calls.call(i, "bad_pages", "amdsmi_get_gpu_bad_page_info")
        if isinstance(pages, Sequence) and not isinstance(pages, str):
            fields["retired_pages_pending"] = any(
                get(page, "status") == _PAGE_STATUS_PENDING for page in pages
            )

        fields.update(read_xgmi(calls, self._link_rates, i, now))

        if self._pcie_throughput:
            # Blocks ~1 s. 'sent'/'received' are packet counts over that second; amd-smi itself
            # multiplies them by max_pkt_sz to get bytes.
            pci = calls.call(i, "pci_throughput", "amdsmi_get_gpu_pci_throughput")
            size = positive(get(pci, "max_pkt_sz"))
            sent = counter(get(pci, "sent"))
            received = counter(get(pci, "received"))
            if size is not None and sent is not None and received is not None:
                fields["pcie_tx_bytes_per_s"] = float(sent * size)
                fields["pcie_rx_bytes_per_s"] = float(received * size)
        return fields
