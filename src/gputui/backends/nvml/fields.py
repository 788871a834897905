"""NVML field values: many readings in one ``nvmlDeviceGetFieldValues`` call.

A field is asked by (field id, scopeId); the scope is 0 for device-wide fields and the link id
(or :data:`ALL_LINKS`) for the NVLink counters. Entries that never answer are remembered per
field, and per link for the per-link scopes.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from gputui.backends.nvml.calls import GpuLost, NvmlCalls, NvmlGpu

# Field ids (ABI-stable numbers from nvml.h; named here so importing this module needs no pynvml).
FI_ECC_SBE_VOL = 3
FI_ECC_DBE_VOL = 4
FI_ECC_SBE_AGG = 5
FI_ECC_DBE_AGG = 6
FI_RETIRED_PENDING = 31
FI_NVLINK_CRC_FLIT_TOTAL = 38  # error counts summed over the links
FI_NVLINK_CRC_DATA_TOTAL = 45
FI_NVLINK_REPLAY_TOTAL = 52
FI_NVLINK_RECOVERY_TOTAL = 59
FI_MEMORY_TEMP = 82
FI_TOTAL_ENERGY = 83  # mJ
FI_NVLINK_SPEED_COMMON = 90  # common speed of the active links, in MB/s (26562 on H100)
FI_NVLINK_DATA_TX = 138  # cumulative KiB
FI_NVLINK_DATA_RX = 139
FI_REMAPPED_COR = 142
FI_REMAPPED_UNC = 143
FI_REMAPPED_PENDING = 144
FI_REMAPPED_FAILURE = 145
FI_NVLINK_STATE = 165  # scopeId = link id
FI_POWER_AVERAGE = 185  # mW, scopeId 0 = the GPU (what nvmlDeviceGetPowerUsage answers)
FI_POWER_CURRENT_LIMIT = 190  # mW (the enforced limit)
FI_PCIE_TX_BYTES = 197  # cumulative bytes
FI_PCIE_RX_BYTES = 198

ALL_LINKS = 0xFFFFFFFF  # field-value scopeId meaning "sum over every NVLink"

FieldKey = tuple[int, int]
"""(field id, scopeId)."""

FAST_FIELDS: tuple[FieldKey, ...] = (
    (FI_POWER_AVERAGE, 0),
    (FI_POWER_CURRENT_LIMIT, 0),
    (FI_TOTAL_ENERGY, 0),
    (FI_MEMORY_TEMP, 0),
)
"""Read with every reading, in the same call as the slow ones when both are due."""
ECC_FIELDS: tuple[FieldKey, ...] = (
    (FI_ECC_SBE_VOL, 0),
    (FI_ECC_DBE_VOL, 0),
    (FI_ECC_SBE_AGG, 0),
    (FI_ECC_DBE_AGG, 0),
)
REMAP_FIELDS: tuple[FieldKey, ...] = (
    (FI_REMAPPED_COR, 0),
    (FI_REMAPPED_UNC, 0),
    (FI_REMAPPED_PENDING, 0),
    (FI_REMAPPED_FAILURE, 0),
)
LINK_ERROR_TOTALS: tuple[FieldKey, ...] = (
    (FI_NVLINK_REPLAY_TOTAL, 0),
    (FI_NVLINK_RECOVERY_TOTAL, 0),
    (FI_NVLINK_CRC_FLIT_TOTAL, 0),
    (FI_NVLINK_CRC_DATA_TOTAL, 0),
)
SLOW_FIELDS: tuple[FieldKey, ...] = (
    (FI_PCIE_TX_BYTES, 0),
    (FI_PCIE_RX_BYTES, 0),
    (FI_NVLINK_DATA_TX, ALL_LINKS),
    (FI_NVLINK_DATA_RX, ALL_LINKS),
    *ECC_FIELDS,
    (FI_RETIRED_PENDING, 0),
    *REMAP_FIELDS,
)
"""The slow tier's device-wide fields; per-link fields come from :func:`link_fields`."""
_PER_LINK_FIELDS = frozenset({FI_NVLINK_DATA_TX, FI_NVLINK_DATA_RX, FI_NVLINK_STATE})

# nvmlFieldValue_t.valueType -> the member of its value union; only dVal is a double.
_VALUE_MEMBERS = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")
_RET_SUCCESS = 0
_RET_GPU_IS_LOST = 15
# INVALID_ARGUMENT, NOT_SUPPORTED, NO_PERMISSION, FUNCTION_NOT_FOUND: this field never answers.
_RET_UNSUPPORTED = frozenset({2, 3, 4, 13})


def link_fields(links: Sequence[int]) -> tuple[FieldKey, ...]:
    """Per-link state and traffic counters of ``links`` (scopeId = link id)."""
    return tuple(
        (field_id, link)
        for link in links
        for field_id in (FI_NVLINK_STATE, FI_NVLINK_DATA_TX, FI_NVLINK_DATA_RX)
    )


def supported(calls: NvmlCalls, gpu: NvmlGpu, keys: Sequence[FieldKey]) -> bool:
    """Whether every field of ``keys`` may still answer (none is known to be unsupported)."""
    return not any(calls.is_unsupported(gpu, field_key(*key)) for key in keys)


def field_key(field_id: int, scope: int) -> str:
    """The call key of a field: per field for the device-wide and all-links scopes, per link
    for the per-link NVLink counters (link 0 is scopeId 0 too)."""
    if field_id in _PER_LINK_FIELDS and scope != ALL_LINKS:
        return f"field{field_id}:link{scope}"
    return f"field{field_id}"


def read_fields(
    calls: NvmlCalls, gpu: NvmlGpu, wanted: Sequence[FieldKey]
) -> dict[FieldKey, int | float]:
    """Batch-read field values in one call, keyed by (field id, scopeId); a field that did not
    answer this time is absent."""
    request = [f for f in wanted if not calls.is_unsupported(gpu, field_key(*f))]
    if not request:
        return {}
    entries = calls.query(gpu, "field_values", "nvmlDeviceGetFieldValues", gpu.handle, request)
    if entries is None:
        return {}
    values: dict[FieldKey, int | float] = {}
    for (field_id, scope), (ret, value) in zip(request, _decode(entries), strict=False):
        if ret == _RET_SUCCESS and value is _UNFILLED:
            continue  # answered "success" without a value: not an answer (see _UNFILLED)
        if ret == _RET_SUCCESS and value is not None:
            values[(field_id, scope)] = value
        elif ret == _RET_GPU_IS_LOST:
            raise GpuLost
        elif ret in _RET_UNSUPPORTED:
            calls.mark_unsupported(gpu, field_key(field_id, scope))
    return values


_UNFILLED: float = float("nan")
"""The value of an entry left as the caller zeroed it: SUCCESS (0), value type double (0) and
value 0. No field gputui asks for is a double, and a real H100 on driver 580.159.04 answered the
HW-thermal and power-brake slowdown fields (270, 271) exactly so while their SW-thermal sibling
(269) answered as an unsigned counter (tests/data/real/): reading it as 0 would make those
counters look present and never growing."""

Decoded = tuple[int, "int | float | None"]
"""(nvmlReturn, value) of one entry; value None for a value type this module does not know."""

# The value union's members by nvmlValueType_t, as native struct formats read from its start.
_VALUE_FORMATS = tuple(struct.Struct("@" + code) for code in "dILQqiH")
_RECORDS: dict[type, tuple[struct.Struct, ...]] = {}


def _decode(entries: Any) -> Iterator[Decoded]:
    """The entries of an ``nvmlFieldValue_t`` array. A ctypes array (what nvidia-ml-py returns)
    is unpacked from its bytes in one pass: reading each member through the binding's attribute
    wrappers costs several times the NVML call itself on an 8-GPU node."""
    if not isinstance(entries, ctypes.Array):
        yield from _decode_attributes(entries)
        return
    record = _record_struct(entries._type_)
    for value_type, ret, raw in record.iter_unpack(bytes(entries)):
        value: int | float | None = None
        if value_type == 0 and ret == _RET_SUCCESS and raw == bytes(8):
            value = _UNFILLED
        elif 0 <= value_type < len(_VALUE_FORMATS):
            value = _VALUE_FORMATS[value_type].unpack_from(raw)[0]
        yield ret, value


def _record_struct(entry_type: Any) -> struct.Struct:
    """``valueType``, ``nvmlReturn`` and the 8-byte value of one entry, at the offsets the
    binding's structure declares."""
    cached = _RECORDS.get(entry_type)
    if cached is None:
        members = sorted(
            (getattr(entry_type, name).offset, code, size)
            for name, code, size in (
                ("valueType", "I", 4),
                ("nvmlReturn", "I", 4),
                ("value", "8s", 8),
            )
        )
        layout, at = "=", 0
        for offset, code, size in members:
            layout += f"{offset - at}x{code}"
            at = offset + size
        layout += f"{ctypes.sizeof(entry_type) - at}x"
        cached = _RECORDS[entry_type] = (struct.Struct(layout),)
    return cached[0]


def _decode_attributes(entries: Iterable[Any]) -> Iterator[Decoded]:
    for entry in entries:
        value_type = entry.valueType
        value: int | float | None = None
        if 0 <= value_type < len(_VALUE_MEMBERS):
            member = _VALUE_MEMBERS[value_type]
            raw = getattr(entry.value, member)
            value = float(raw) if member == "dVal" else int(raw)
            if value_type == 0 and entry.nvmlReturn == _RET_SUCCESS and raw == 0:
                value = _UNFILLED
        yield entry.nvmlReturn, value
