"""The DCGM metrics the exporter publishes: each value defined once, by its key in
:mod:`gputui.core.metric_names`, read off a GPU in gputui's unit (bytes, MHz, %, J, bytes/s);
names, units and labels come from that table, per vocabulary.

``legacy`` (the default) publishes dcgm-exporter's names up to 4.8, so DCGM Grafana dashboards
and alerts work unchanged: memory in whole MiB, power in W, energy in mJ, clocks in MHz,
utilization in %, labels ``gpu``, ``UUID``, ``pci_bus_id``, ``device``, ``modelName``,
``Hostname``. ``4.7`` publishes the names DCGM 4.7 gives the fields (what dcgm-exporter 4.9
writes) in base units, labelled ``hostname`` and ``DCGM_FI_SYSTEM_DRIVER_VERSION`` instead of
``Hostname``. ``both`` publishes both. Every label value the exporter writes goes through
:func:`label_value` (sanitised, bounded). No Prometheus library is needed to read this module.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from gputui.core.format import sanitize
from gputui.core.frozen import frozen
from gputui.core.metric_names import (
    DCGM_BY_KEY,
    DCGM_NAMES,
    DCGM_VOCABULARIES,
    DRIVER_LABEL,
    HOSTNAME_LABEL,
    DcgmField,
    DcgmNames,
    Unit,
    Vocabulary,
    from_base,
)
from gputui.core.model import GpuInfo, GpuSample

MIB = 1024 * 1024
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9400
DEFAULT_TOP_PROCESSES = 10
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_GPU_LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName")
DCGM_LABELS = (*_GPU_LABELS, HOSTNAME_LABEL["dcgm"])
"""The labels of a legacy DCGM series (and of ``gputui_gpu_lost`` in every mode)."""
MAX_LABEL_CHARS = 128
"""Characters a label value keeps (a name from outside can be megabytes long)."""


def label_value(text: str) -> str:
    """``text`` as a label value: its first :data:`MAX_LABEL_CHARS` characters, with control
    characters (newlines included), bidi controls and the like replaced by ``?``
    (:func:`gputui.core.format.sanitize`). Names of processes, containers, pods and Slurm jobs come
    from users; ``curl /metrics`` in a terminal must not run their escape sequences."""
    return sanitize(text[:MAX_LABEL_CHARS])


@frozen
class GpuReading:
    """What a GPU's DCGM values are read from: its sample, what the node says of it, and the
    last XID the exporter saw on it (0: none)."""

    sample: GpuSample
    info: GpuInfo | None
    last_xid: int = 0


Read = Callable[[GpuReading], "float | None"]
"""A value in gputui's unit (:func:`~gputui.core.metric_names.to_base`), None: not reported."""

_UNIT_TEXT: dict[Unit, str] = {
    "percent": "in %",
    "ratio": "a ratio, 0 to 1",
    "mib": "in MiB",
    "bytes": "in bytes",
    "mhz": "in MHz",
    "hz": "in Hz",
    "mj": "in mJ",
    "j": "in J",
    "watts": "in W",
    "celsius": "in C",
    "bytes_per_s": "in B/s",
    "dcgm_mb_per_s": "in MiB/s as DCGM computes it: KiB/s / 1000",
}
"""How a HELP line names a unit (a unit not listed goes unnamed: counts, flags, P-states)."""


@frozen
class DcgmValue:
    """One DCGM field as the exporter reads it."""

    field: DcgmField
    what: str
    """The HELP line without its unit."""
    read: Read
    counter: bool = False
    """A counter, published under its exact name (DCGM style: no ``_total`` appended)."""

    def help(self, vocabulary: Vocabulary) -> str:
        unit = _UNIT_TEXT.get(self.field.unit(vocabulary))
        return f"{self.what} ({unit})." if unit else f"{self.what}."

    def published(self, vocabulary: Vocabulary, value: float) -> float:
        """``value`` (gputui's unit) in ``vocabulary``'s unit; MiB are whole, as DCGM's are."""
        unit = self.field.unit(vocabulary)
        converted = from_base(unit, value)
        return float(math.floor(converted)) if unit == "mib" else converted


def _num(value: float | None) -> float | None:
    return None if value is None else float(value)


def _flag(value: bool | None) -> float | None:
    return None if value is None else float(bool(value))


def _nvlink_total(s: GpuSample) -> float | None:
    if s.nvlink_rx_bytes_per_s is None or s.nvlink_tx_bytes_per_s is None:
        return None
    return s.nvlink_rx_bytes_per_s + s.nvlink_tx_bytes_per_s


def _link_sum(s: GpuSample, attr: str) -> float | None:
    values = [getattr(link, attr) for link in s.links or ()]
    known = [v for v in values if v is not None]
    return float(sum(known)) if known else None


def _xid(r: GpuReading) -> float | None:
    """DCGM's XID field exists on NVIDIA GPUs only."""
    return float(r.last_xid) if r.info is None or r.info.vendor == "nvidia" else None


def _v(key: str, what: str, read: Read, *, counter: bool = False) -> DcgmValue:
    return DcgmValue(DCGM_BY_KEY[key], what, read, counter)


DCGM_VALUES: tuple[DcgmValue, ...] = (
    _v("util", "GPU utilization", lambda r: _num(r.sample.utilization_gpu_pct)),
    _v("memory_util", "Memory utilization", lambda r: _num(r.sample.utilization_memory_pct)),
    _v("encoder_util", "Encoder utilization", lambda r: _num(r.sample.encoder_pct)),
    _v("decoder_util", "Decoder utilization", lambda r: _num(r.sample.decoder_pct)),
    _v("fb_free", "Framebuffer memory free", lambda r: _num(r.sample.memory_free_bytes)),
    _v("fb_used", "Framebuffer memory used", lambda r: _num(r.sample.memory_used_bytes)),
    _v(
        "fb_reserved",
        "Framebuffer memory reserved",
        lambda r: _num(r.sample.memory_reserved_bytes),
    ),
    _v("fb_total", "Framebuffer memory total", lambda r: _num(r.sample.memory_total_bytes)),
    _v("power", "Power draw", lambda r: _num(r.sample.power_w)),
    _v("power_limit", "Current power limit", lambda r: _num(r.sample.power_limit_w)),
    _v("temp_gpu", "GPU temperature", lambda r: _num(r.sample.temperature_gpu_c)),
    _v("temp_memory", "Memory temperature", lambda r: _num(r.sample.temperature_memory_c)),
    _v("fan", "Fan speed", lambda r: _num(r.sample.fan_pct)),
    _v("clock_sm", "SM clock frequency", lambda r: _num(r.sample.clock_sm_mhz)),
    _v("clock_memory", "Memory clock frequency", lambda r: _num(r.sample.clock_memory_mhz)),
    _v(
        "pstate",
        "Performance state (P-State) 0-15, 0 = highest",
        lambda r: _num(r.sample.pstate),
    ),
    _v("pcie_gen", "PCIe current link generation", lambda r: _num(r.sample.pcie_gen)),
    _v("pcie_width", "PCIe current link width", lambda r: _num(r.sample.pcie_width)),
    _v(
        "pcie_tx",
        "The rate of data transmitted over PCIe",
        lambda r: _num(r.sample.pcie_tx_bytes_per_s),
    ),
    _v(
        "pcie_rx",
        "The rate of data received over PCIe",
        lambda r: _num(r.sample.pcie_rx_bytes_per_s),
    ),
    _v(
        "nvlink_tx",
        "The rate of data transmitted over NVLink",
        lambda r: _num(r.sample.nvlink_tx_bytes_per_s),
    ),
    _v(
        "nvlink_rx",
        "The rate of data received over NVLink",
        lambda r: _num(r.sample.nvlink_rx_bytes_per_s),
    ),
    _v(
        "nvlink_total",
        "NVLink throughput, TX + RX, all links",
        lambda r: _nvlink_total(r.sample),
    ),
    _v(
        "retired_pending",
        "Pages pending retirement (1 = yes; reset needed)",
        lambda r: _flag(r.sample.retired_pages_pending),
    ),
    _v(
        "row_remap_failure",
        "Whether remapping of rows has failed",
        lambda r: _flag(r.sample.remapped_rows_failure),
    ),
    _v(
        "row_remap_pending",
        "Whether remapping of rows is pending (reset needed)",
        lambda r: _flag(r.sample.remapped_rows_pending),
    ),
    _v(
        "pcie_max_gen",
        "PCIe max link generation",
        lambda r: None if r.info is None else _num(r.info.pcie_max_gen),
    ),
    _v(
        "pcie_max_width",
        "PCIe max link width",
        lambda r: None if r.info is None else _num(r.info.pcie_max_width),
    ),
    _v(
        "xid",
        "Value of the last XID error encountered (0: none since the exporter started)",
        _xid,
    ),
    _v(
        "energy",
        "Total energy consumption since the driver was loaded",
        lambda r: _num(r.sample.energy_j),
        counter=True,
    ),
    _v(
        "ecc_sbe_volatile",
        "Total number of single-bit volatile ECC errors",
        lambda r: _num(r.sample.ecc_volatile_corrected),
        counter=True,
    ),
    _v(
        "ecc_dbe_volatile",
        "Total number of double-bit volatile ECC errors",
        lambda r: _num(r.sample.ecc_volatile_uncorrected),
        counter=True,
    ),
    _v(
        "ecc_sbe_aggregate",
        "Total number of single-bit persistent ECC errors",
        lambda r: _num(r.sample.ecc_aggregate_corrected),
        counter=True,
    ),
    _v(
        "ecc_dbe_aggregate",
        "Total number of double-bit persistent ECC errors",
        lambda r: _num(r.sample.ecc_aggregate_uncorrected),
        counter=True,
    ),
    _v(
        "remapped_correctable",
        "Number of remapped rows for correctable errors",
        lambda r: _num(r.sample.remapped_rows_correctable),
        counter=True,
    ),
    _v(
        "remapped_uncorrectable",
        "Number of remapped rows for uncorrectable errors",
        lambda r: _num(r.sample.remapped_rows_uncorrectable),
        counter=True,
    ),
    _v(
        "nvlink_replay_errors",
        "NVLink replay errors, all links",
        lambda r: _link_sum(r.sample, "replay_errors"),
        counter=True,
    ),
    _v(
        "nvlink_recovery_errors",
        "NVLink recovery errors, all links",
        lambda r: _link_sum(r.sample, "recovery_errors"),
        counter=True,
    ),
)
"""Every DCGM value the exporter publishes, in the order of its families on the page."""

DCGM_VALUE_BY_KEY: dict[str, DcgmValue] = {v.field.key: v for v in DCGM_VALUES}


@frozen
class DcgmSeries:
    """One DCGM family as a ``--dcgm-names`` choice publishes it."""

    value: DcgmValue
    vocabulary: Vocabulary
    """Whose name, unit and HELP line it has."""
    labels: tuple[Vocabulary, ...]
    """Whose labels its series carry: two where both vocabularies spell the name alike."""

    @property
    def name(self) -> str:
        return self.value.field.name(self.vocabulary)

    @property
    def help(self) -> str:
        return self.value.help(self.vocabulary)

    def published(self, reading: GpuReading) -> float | None:
        """The value on ``reading``'s GPU in this family's unit; None: not reported."""
        value = self.value.read(reading)
        return None if value is None else self.value.published(self.vocabulary, value)


def dcgm_series(names: DcgmNames) -> tuple[DcgmSeries, ...]:
    """The DCGM families ``names`` publishes. A name both vocabularies share (its unit is the
    same: ``DCGM_FI_DEV_FAN_SPEED``, the ECC counts) is one family whose series carry both label
    sets, not two series of one GPU under one name."""
    by_name: dict[str, DcgmSeries] = {}
    for vocabulary in DCGM_NAMES[names]:
        for value in DCGM_VALUES:
            name = value.field.name(vocabulary)
            known = by_name.get(name)
            if known is None:
                by_name[name] = DcgmSeries(value, vocabulary, (vocabulary,))
            else:
                by_name[name] = replace(known, labels=(*known.labels, vocabulary))
    return tuple(by_name.values())


BARE_COUNTERS = frozenset(
    value.field.name(vocabulary)
    for value in DCGM_VALUES
    if value.counter
    for vocabulary in DCGM_VOCABULARIES
)
"""Every DCGM counter name, in every vocabulary: written without ``_total``."""


def dcgm_labels(
    info: GpuInfo | None,
    index: int,
    hostname: str,
    vocabularies: tuple[Vocabulary, ...] = ("dcgm",),
    driver_version: str | None = None,
) -> dict[str, str]:
    """The labels of a GPU's DCGM series in ``vocabularies`` (all of their labels, in order):
    ``Hostname`` for ``dcgm``; ``hostname`` and the driver version for ``dcgm-4.7``."""
    vendor = info.vendor if info is not None else "nvidia"
    labels = {
        "gpu": str(index),
        "UUID": info.uuid if info is not None else "",
        "pci_bus_id": (info.pci_bus_id or "") if info is not None else "",
        "device": f"{'nvidia' if vendor == 'nvidia' else 'card'}{index}",
        "modelName": info.name if info is not None else "",
    }
    for vocabulary in vocabularies:
        labels[HOSTNAME_LABEL[vocabulary]] = hostname
        if vocabulary == "dcgm-4.7":
            labels[DRIVER_LABEL[vocabulary]] = driver_version or ""
    return labels
