"""The metric names GPU exporters publish, and their units: one table for the exporter and the
fleet view.

Three vocabularies besides gputui's own ``gputui_*`` series:

- ``dcgm``: dcgm-exporter up to 4.8 (and ``gputui export`` by default). Memory in MiB, clocks in
  MHz, utilisation in %, energy in mJ, NVLink throughput in "MB/s" (KiB/s divided by 1000, as DCGM
  computes it). Labels ``gpu``, ``UUID``, ``pci_bus_id``, ``device``, ``modelName``,
  ``Hostname`` (``hostname`` from 4.8.3) and the driver label ``DCGM_FI_DRIVER_VERSION``.
- ``dcgm-4.7``: dcgm-exporter 4.9, which publishes the names DCGM 4.7 gives the fields it
  deprecates, in base units: bytes, Hz, a 0-1 ratio, J, bytes per second. Labels as above, with
  ``hostname`` and ``DCGM_FI_SYSTEM_DRIVER_VERSION``.
- ``amd-dme``: AMD's Device Metrics Exporter (``gpu_*``): VRAM in MB (MiB: amd-smi's unit),
  energy in µJ, clocks in MHz with a ``clock_type`` label, utilisation in %. Labels ``gpu_id``,
  ``hostname``, ``card_model``, ``serial_number``, ``gpu_uuid`` (when enabled), ``driver_version``.

Sources: DCGM's ``dcgm_fields.h`` keeps each renamed field's old name as a deprecated alias with
the same field id (the ``DCGM_DEPRECATED`` block: ``DCGM_FI_DEV_GPU_TEMP`` ->
``DCGM_FI_DEV_GPU_TEMP_CELSIUS``, ``DCGM_FI_DEV_XID_ERRORS`` -> ``DCGM_FI_DEV_XID_ERROR``, ...);
NVIDIA's DCGM 4.7 field reference adds the base-unit fields (``DCGM_FI_DEV_SM_CLOCK_HERTZ``,
``DCGM_FI_DEV_FB_USED_BYTES``, ``DCGM_FI_DEV_GPU_UTIL_RATIO``,
``DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL``, ``DCGM_FI_DEV_NVLINK_THROUGHPUT_BYTES_PER_SECOND``);
the dcgm-exporter 4.9.0 release notes list the 23 renamed defaults, the 11 unit changes, the
driver label's new name and ``DCGM_FI_DEV_FB_CAPACITY_BYTES``. AMD's names and units are those of
ROCm/device-metrics-exporter's ``docs/configuration/metricslist.md`` and its metric definitions
(``pkg/amdgpu/gpuagent/gpuagent_gpu_metrics.go``).
"""

from __future__ import annotations

from typing import Literal

from gputui.core.frozen import frozen

Unit = Literal[
    "percent",
    "ratio",
    "mib",
    "bytes",
    "mhz",
    "hz",
    "mj",
    "j",
    "uj",
    "watts",
    "celsius",
    "count",
    "flag",
    "dcgm_mb_per_s",
    "bytes_per_s",
    "pstate",
    "pcie",
]
"""How a published value is written. :func:`to_base` brings each to the unit gputui shows."""

Vocabulary = Literal["dcgm", "dcgm-4.7", "amd-dme"]
DCGM_VOCABULARIES: tuple[Vocabulary, ...] = ("dcgm", "dcgm-4.7")

DcgmNames = Literal["legacy", "4.7", "both"]
"""Which DCGM names ``gputui export`` publishes (``--dcgm-names``, ``export.dcgm_names``)."""
DCGM_NAMES: dict[DcgmNames, tuple[Vocabulary, ...]] = {
    "legacy": ("dcgm",),
    "4.7": ("dcgm-4.7",),
    "both": ("dcgm", "dcgm-4.7"),
}
"""Each choice and the vocabularies it publishes, the first being the default."""

MIB = 1024 * 1024

_TO_BASE: dict[Unit, float] = {
    "percent": 1.0,
    "ratio": 100.0,  # -> percent
    "mib": float(MIB),  # -> bytes
    "bytes": 1.0,
    "mhz": 1.0,
    "hz": 1e-6,  # -> MHz
    "mj": 1e-3,  # -> J
    "j": 1.0,
    "uj": 1e-6,  # -> J
    "watts": 1.0,
    "celsius": 1.0,
    "count": 1.0,
    "flag": 1.0,
    "dcgm_mb_per_s": 1000.0 * 1024.0,  # KiB/s / 1000 -> bytes/s
    "bytes_per_s": 1.0,
    "pstate": 1.0,
    "pcie": 1.0,
}


def to_base(unit: Unit, value: float) -> float:
    """``value`` written in ``unit`` in the unit gputui shows: percent for utilisation (a 0.73
    ratio is 73.0), bytes for memory (MiB and MB too), MHz for clocks (Hz too), J for energy
    (mJ, µJ), bytes per second for throughput; everything else as it is."""
    return value * _TO_BASE[unit]


_PER_BASE: dict[Unit, float] = {"hz": 1e6, "mj": 1e3, "uj": 1e6}
"""Units a whole number of which make one of gputui's: :func:`from_base` multiplies by that
number rather than dividing by its inexact float inverse (``j / 1e-3`` is not always
``j * 1000``, the millijoules the exporter has always published)."""


def from_base(unit: Unit, value: float) -> float:
    """The inverse of :func:`to_base`: a value in gputui's unit written in ``unit``."""
    per = _PER_BASE.get(unit)
    return value * per if per is not None else value / _TO_BASE[unit]


@frozen
class DcgmField:
    """One DCGM field under both of its exporter names."""

    key: str
    """What it measures, the same across vocabularies (``util``, ``fb_used``, ``clock_sm``)."""
    legacy: str
    legacy_unit: Unit
    current: str
    """Its DCGM 4.7 name (what dcgm-exporter 4.9 publishes); the legacy name when unchanged."""
    current_unit: Unit

    def name(self, vocabulary: Vocabulary) -> str:
        return self.current if vocabulary == "dcgm-4.7" else self.legacy

    def unit(self, vocabulary: Vocabulary) -> Unit:
        return self.current_unit if vocabulary == "dcgm-4.7" else self.legacy_unit

    @property
    def renamed(self) -> bool:
        return self.current != self.legacy


def _f(key: str, legacy: str, unit: Unit, current: str | None = None, new_unit: Unit | None = None
       ) -> DcgmField:  # fmt: skip
    return DcgmField(
        key,
        f"DCGM_FI_{legacy}",
        unit,
        f"DCGM_FI_{current or legacy}",
        new_unit or unit,
    )


DCGM_FIELDS: tuple[DcgmField, ...] = (
    # utilisation: % -> 0-1 ratio
    _f("util", "DEV_GPU_UTIL", "percent", "DEV_GPU_UTIL_RATIO", "ratio"),
    _f("memory_util", "DEV_MEM_COPY_UTIL", "percent", "DEV_MEMORY_UTIL_RATIO", "ratio"),
    _f("encoder_util", "DEV_ENC_UTIL", "percent", "DEV_ENC_UTIL_RATIO", "ratio"),
    _f("decoder_util", "DEV_DEC_UTIL", "percent", "DEV_DEC_UTIL_RATIO", "ratio"),
    # framebuffer: MiB -> bytes (4.9 collects the capacity in bytes by default)
    _f("fb_free", "DEV_FB_FREE", "mib", "DEV_FB_FREE_BYTES", "bytes"),
    _f("fb_used", "DEV_FB_USED", "mib", "DEV_FB_USED_BYTES", "bytes"),
    _f("fb_reserved", "DEV_FB_RESERVED", "mib", "DEV_FB_RESERVED_BYTES", "bytes"),
    _f("fb_total", "DEV_FB_TOTAL", "mib", "DEV_FB_CAPACITY_BYTES", "bytes"),
    # power (W in both)
    _f("power", "DEV_POWER_USAGE", "watts", "DEV_BOARD_POWER_WATTS"),
    _f("power_limit", "DEV_POWER_MGMT_LIMIT", "watts", "DEV_BOARD_POWER_LIMIT_ENFORCED_WATTS"),
    # temperatures (°C in both)
    _f("temp_gpu", "DEV_GPU_TEMP", "celsius", "DEV_GPU_TEMP_CELSIUS"),
    _f("temp_memory", "DEV_MEMORY_TEMP", "celsius", "DEV_MEMORY_TEMP_CELSIUS"),
    _f("temp_slowdown", "DEV_SLOWDOWN_TEMP", "celsius", "DEV_GPU_TEMP_SLOWDOWN_CELSIUS"),
    _f("temp_memory_max", "DEV_MEM_MAX_OP_TEMP", "celsius", "DEV_MEMORY_MAX_OP_TEMP_CELSIUS"),
    _f("fan", "DEV_FAN_SPEED", "percent"),
    # clocks: MHz -> Hz
    _f("clock_sm", "DEV_SM_CLOCK", "mhz", "DEV_SM_CLOCK_HERTZ", "hz"),
    _f("clock_memory", "DEV_MEM_CLOCK", "mhz", "DEV_MEMORY_CLOCK_HERTZ", "hz"),
    _f("pstate", "DEV_PSTATE", "pstate", "DEV_GPU_PSTATE"),
    # PCIe and NVLink
    _f("pcie_gen", "DEV_PCIE_LINK_GEN", "pcie"),
    _f("pcie_width", "DEV_PCIE_LINK_WIDTH", "pcie"),
    _f("pcie_max_gen", "DEV_PCIE_MAX_LINK_GEN", "pcie"),
    _f("pcie_max_width", "DEV_PCIE_MAX_LINK_WIDTH", "pcie"),
    _f("pcie_tx", "PROF_PCIE_TX_BYTES", "bytes_per_s"),
    _f("pcie_rx", "PROF_PCIE_RX_BYTES", "bytes_per_s"),
    _f("nvlink_tx", "PROF_NVLINK_TX_BYTES", "bytes_per_s"),
    _f("nvlink_rx", "PROF_NVLINK_RX_BYTES", "bytes_per_s"),
    _f(
        "nvlink_total",
        "DEV_NVLINK_BANDWIDTH_TOTAL",
        "dcgm_mb_per_s",
        "DEV_NVLINK_THROUGHPUT_BYTES_PER_SECOND",
        "bytes_per_s",
    ),
    # memory health
    _f("retired_pending", "DEV_RETIRED_PENDING", "flag", "DEV_PAGE_RETIRED_PENDING"),
    _f("row_remap_failure", "DEV_ROW_REMAP_FAILURE", "flag", "DEV_ROW_REMAP_FAILED"),
    _f("row_remap_pending", "DEV_ROW_REMAP_PENDING", "flag"),
    _f("xid", "DEV_XID_ERRORS", "count", "DEV_XID_ERROR"),
    # counters
    _f("energy", "DEV_TOTAL_ENERGY_CONSUMPTION", "mj", "DEV_GPU_ENERGY_JOULES_TOTAL", "j"),
    _f("ecc_sbe_volatile", "DEV_ECC_SBE_VOL_TOTAL", "count"),
    _f("ecc_dbe_volatile", "DEV_ECC_DBE_VOL_TOTAL", "count"),
    _f("ecc_sbe_aggregate", "DEV_ECC_SBE_AGG_TOTAL", "count"),
    _f("ecc_dbe_aggregate", "DEV_ECC_DBE_AGG_TOTAL", "count"),
    _f(
        "remapped_correctable",
        "DEV_CORRECTABLE_REMAPPED_ROWS",
        "count",
        "DEV_ROW_REMAP_CORRECTABLE_TOTAL",
    ),
    _f(
        "remapped_uncorrectable",
        "DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "count",
        "DEV_ROW_REMAP_UNCORRECTABLE_TOTAL",
    ),
    _f(
        "nvlink_replay_errors",
        "DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
        "count",
        "DEV_NVLINK_REPLAY_ERROR_TOTAL",
    ),
    _f(
        "nvlink_recovery_errors",
        "DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
        "count",
        "DEV_NVLINK_RECOVERY_ERROR_TOTAL",
    ),
)
"""Every DCGM field gputui exports or the fleet view reads, under both names."""

DCGM_BY_KEY: dict[str, DcgmField] = {f.key: f for f in DCGM_FIELDS}
DCGM_BY_NAME: dict[str, DcgmField] = {
    **{f.legacy: f for f in DCGM_FIELDS},
    **{f.current: f for f in DCGM_FIELDS},
}

ENFORCED_POWER_LIMIT_LEGACY = "DCGM_FI_DEV_ENFORCED_POWER_LIMIT"
"""dcgm-exporter's opt-in enforced limit (4.8.4); the fleet view reads it as ``power_limit`` when
``DCGM_FI_DEV_POWER_MGMT_LIMIT`` is not published."""

HOSTNAME_LABEL: dict[Vocabulary, str] = {"dcgm": "Hostname", "dcgm-4.7": "hostname"}
"""dcgm-exporter's hostname label: ``Hostname`` up to 4.8.2, ``hostname`` since (4.8.3)."""
DRIVER_LABEL: dict[Vocabulary, str] = {
    "dcgm": "DCGM_FI_DRIVER_VERSION",
    "dcgm-4.7": "DCGM_FI_SYSTEM_DRIVER_VERSION",
}
"""The driver-version label dcgm-exporter puts on every series."""


@frozen
class AmdMetric:
    """One metric of AMD's Device Metrics Exporter and what it measures in gputui's terms."""

    key: str
    name: str
    unit: Unit
    label: tuple[str, str] | None = None
    """A label that picks the series (``("clock_type", "system")``), or None."""


AMD_METRICS: tuple[AmdMetric, ...] = (
    AmdMetric("util", "gpu_gfx_activity", "percent"),
    AmdMetric("memory_util", "gpu_umc_activity", "percent"),
    AmdMetric("fb_used", "gpu_used_vram", "mib"),
    AmdMetric("fb_free", "gpu_free_vram", "mib"),
    AmdMetric("fb_total", "gpu_total_vram", "mib"),
    # MI300 publishes the socket power, MI200 the average; gpu_power_usage on both
    AmdMetric("power", "gpu_power_usage", "watts"),
    AmdMetric("power_socket", "gpu_package_power", "watts"),
    AmdMetric("power_average", "gpu_average_package_power", "watts"),
    AmdMetric("temp_hotspot", "gpu_junction_temperature", "celsius"),
    AmdMetric("temp_edge", "gpu_edge_temperature", "celsius"),
    AmdMetric("temp_memory", "gpu_memory_temperature", "celsius"),
    AmdMetric("clock_sm", "gpu_clock", "mhz", ("clock_type", "system")),
    AmdMetric("clock_memory", "gpu_clock", "mhz", ("clock_type", "memory")),
    AmdMetric("energy", "gpu_energy_consumed", "uj"),
    AmdMetric("health", "gpu_health", "flag"),
    AmdMetric("ecc_uncorrected", "gpu_ecc_uncorrect_total", "count"),
    AmdMetric("ecc_corrected", "gpu_ecc_correct_total", "count"),
    AmdMetric("ras_fatal", "gpu_afid_errors", "count", ("severity", "fatal")),
    AmdMetric("thermal_violation", "gpu_violation_socket_thermal_residency_percentage", "percent"),
    AmdMetric("hbm_violation", "gpu_violation_hbm_thermal_residency_percentage", "percent"),
    AmdMetric("hot_violation", "gpu_violation_processor_hot_residency_percentage", "percent"),
    AmdMetric("power_violation", "gpu_violation_ppt_residency_percentage", "percent"),
)
"""The AMD Device Metrics Exporter metrics the fleet view reads."""

AMD_NAMES: tuple[str, ...] = tuple(dict.fromkeys(m.name for m in AMD_METRICS))
AMD_GPU_LABEL = "gpu_id"
"""AMD's per-GPU label (dcgm-exporter and gputui write ``gpu``)."""

__all__ = [
    "AMD_GPU_LABEL",
    "AMD_METRICS",
    "AMD_NAMES",
    "DCGM_BY_KEY",
    "DCGM_BY_NAME",
    "DCGM_FIELDS",
    "DCGM_NAMES",
    "DCGM_VOCABULARIES",
    "DRIVER_LABEL",
    "ENFORCED_POWER_LIMIT_LEGACY",
    "HOSTNAME_LABEL",
    "AmdMetric",
    "DcgmField",
    "DcgmNames",
    "Unit",
    "Vocabulary",
    "from_base",
    "to_base",
]
