"""Metric names, units and labels shared by the exporter and the fleet view.

Names, units, types and labels (``gpu``, ``UUID``, ``pci_bus_id``, ``device``, ``modelName``,
``Hostname``) follow NVIDIA's DCGM exporter for what DCGM has, so DCGM Grafana dashboards and
alerts work unchanged: memory in MiB, power in W, energy in mJ, clocks in MHz, utilization in %.
Every label value the exporter writes goes through :func:`label_value` (sanitised, bounded).
No Prometheus library is needed to read this module.
"""

from __future__ import annotations

from collections.abc import Callable

from gputui.core.format import sanitize
from gputui.core.model import GpuInfo, GpuSample

MIB = 1024 * 1024
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9400
DEFAULT_TOP_PROCESSES = 10
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

DCGM_LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname")
MAX_LABEL_CHARS = 128
"""Characters a label value keeps (a name from outside can be megabytes long)."""


def label_value(text: str) -> str:
    """``text`` as a label value: its first :data:`MAX_LABEL_CHARS` characters, with control
    characters (newlines included), bidi controls and the like replaced by ``?``
    (:func:`gputui.core.format.sanitize`). Names of processes, containers, pods and Slurm jobs come
    from users; ``curl /metrics`` in a terminal must not run their escape sequences."""
    return sanitize(text[:MAX_LABEL_CHARS])


SampleValue = Callable[[GpuSample], "float | None"]
"""How one metric's value is read off a GPU sample (None: not reported)."""


def _mib(value: float | None) -> float | None:
    return None if value is None else float(int(value) // MIB)


def _flag(value: bool | None) -> float | None:
    return None if value is None else float(bool(value))


def _nvlink_total(s: GpuSample) -> float | None:
    if s.nvlink_rx_bytes_per_s is None or s.nvlink_tx_bytes_per_s is None:
        return None
    return (s.nvlink_rx_bytes_per_s + s.nvlink_tx_bytes_per_s) / 1024 / 1000


def _link_sum(s: GpuSample, attr: str) -> float | None:
    values = [getattr(link, attr) for link in s.links or ()]
    known = [v for v in values if v is not None]
    return float(sum(known)) if known else None


def _num(value: float | None) -> float | None:
    return None if value is None else float(value)


DCGM_GAUGES: tuple[tuple[str, str, SampleValue], ...] = (
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", lambda s: _num(s.utilization_gpu_pct)),
    (
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        "Memory utilization (in %).",
        lambda s: _num(s.utilization_memory_pct),
    ),
    ("DCGM_FI_DEV_ENC_UTIL", "Encoder utilization (in %).", lambda s: _num(s.encoder_pct)),
    ("DCGM_FI_DEV_DEC_UTIL", "Decoder utilization (in %).", lambda s: _num(s.decoder_pct)),
    (
        "DCGM_FI_DEV_FB_FREE",
        "Framebuffer memory free (in MiB).",
        lambda s: _mib(s.memory_free_bytes),
    ),
    (
        "DCGM_FI_DEV_FB_USED",
        "Framebuffer memory used (in MiB).",
        lambda s: _mib(s.memory_used_bytes),
    ),
    (
        "DCGM_FI_DEV_FB_RESERVED",
        "Framebuffer memory reserved (in MiB).",
        lambda s: _mib(s.memory_reserved_bytes),
    ),
    (
        "DCGM_FI_DEV_FB_TOTAL",
        "Framebuffer memory total (in MiB).",
        lambda s: _mib(s.memory_total_bytes),
    ),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", lambda s: _num(s.power_w)),
    (
        "DCGM_FI_DEV_POWER_MGMT_LIMIT",
        "Current power limit (in W).",
        lambda s: _num(s.power_limit_w),
    ),
    ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", lambda s: _num(s.temperature_gpu_c)),
    (
        "DCGM_FI_DEV_MEMORY_TEMP",
        "Memory temperature (in C).",
        lambda s: _num(s.temperature_memory_c),
    ),
    ("DCGM_FI_DEV_FAN_SPEED", "Fan speed (in %).", lambda s: _num(s.fan_pct)),
    ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", lambda s: _num(s.clock_sm_mhz)),
    (
        "DCGM_FI_DEV_MEM_CLOCK",
        "Memory clock frequency (in MHz).",
        lambda s: _num(s.clock_memory_mhz),
    ),
    (
        "DCGM_FI_DEV_PSTATE",
        "Performance state (P-State) 0-15, 0 = highest.",
        lambda s: _num(s.pstate),
    ),
    ("DCGM_FI_DEV_PCIE_LINK_GEN", "PCIe current link generation.", lambda s: _num(s.pcie_gen)),
    ("DCGM_FI_DEV_PCIE_LINK_WIDTH", "PCIe current link width.", lambda s: _num(s.pcie_width)),
    (
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "The rate of data transmitted over PCIe (in B/s).",
        lambda s: _num(s.pcie_tx_bytes_per_s),
    ),
    (
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        "The rate of data received over PCIe (in B/s).",
        lambda s: _num(s.pcie_rx_bytes_per_s),
    ),
    (
        "DCGM_FI_PROF_NVLINK_TX_BYTES",
        "The rate of data transmitted over NVLink (in B/s).",
        lambda s: _num(s.nvlink_tx_bytes_per_s),
    ),
    (
        "DCGM_FI_PROF_NVLINK_RX_BYTES",
        "The rate of data received over NVLink (in B/s).",
        lambda s: _num(s.nvlink_rx_bytes_per_s),
    ),
    (
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "NVLink throughput, TX + RX, all links (in MiB/s as DCGM computes it: KiB/s / 1000).",
        _nvlink_total,
    ),
    (
        "DCGM_FI_DEV_RETIRED_PENDING",
        "Pages pending retirement (1 = yes; reset needed).",
        lambda s: _flag(s.retired_pages_pending),
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "Whether remapping of rows has failed.",
        lambda s: _flag(s.remapped_rows_failure),
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_PENDING",
        "Whether remapping of rows is pending (reset needed).",
        lambda s: _flag(s.remapped_rows_pending),
    ),
)
"""DCGM gauges read from a GpuSample: (name, help, sample -> value or None)."""

DCGM_COUNTERS: tuple[tuple[str, str, SampleValue], ...] = (
    (
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "Total energy consumption since the driver was loaded (in mJ).",
        lambda s: None if s.energy_j is None else s.energy_j * 1000.0,
    ),
    (
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "Total number of single-bit volatile ECC errors.",
        lambda s: _num(s.ecc_volatile_corrected),
    ),
    (
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "Total number of double-bit volatile ECC errors.",
        lambda s: _num(s.ecc_volatile_uncorrected),
    ),
    (
        "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
        "Total number of single-bit persistent ECC errors.",
        lambda s: _num(s.ecc_aggregate_corrected),
    ),
    (
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
        "Total number of double-bit persistent ECC errors.",
        lambda s: _num(s.ecc_aggregate_uncorrected),
    ),
    (
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "Number of remapped rows for correctable errors.",
        lambda s: _num(s.remapped_rows_correctable),
    ),
    (
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "Number of remapped rows for uncorrectable errors.",
        lambda s: _num(s.remapped_rows_uncorrectable),
    ),
    (
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
        "NVLink replay errors, all links.",
        lambda s: _link_sum(s, "replay_errors"),
    ),
    (
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
        "NVLink recovery errors, all links.",
        lambda s: _link_sum(s, "recovery_errors"),
    ),
)
"""DCGM counters: exported under DCGM's exact name, without a ``_total`` suffix."""

DCGM_XID = "DCGM_FI_DEV_XID_ERRORS"
BARE_COUNTERS = frozenset(name for name, _h, _f in DCGM_COUNTERS)


def dcgm_labels(info: GpuInfo | None, index: int, hostname: str) -> dict[str, str]:
    vendor = info.vendor if info is not None else "nvidia"
    return {
        "gpu": str(index),
        "UUID": info.uuid if info is not None else "",
        "pci_bus_id": (info.pci_bus_id or "") if info is not None else "",
        "device": f"{'nvidia' if vendor == 'nvidia' else 'card'}{index}",
        "modelName": info.name if info is not None else "",
        "Hostname": hostname,
    }
