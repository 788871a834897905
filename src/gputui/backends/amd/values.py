"""amdsmi answers -> the model's types.

amdsmi answers with dicts whose values may be "N/A" (a string where a number was expected) or an
all-ones "not supported" sentinel; these helpers turn each into a number, a string or None, so
no untyped value reaches a model object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# "Not supported" sentinels: the wrapper maps only some of them to "N/A" (power_info only 0xFFFF).
_SENTINELS = frozenset({0xFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF})
UINT64_MAX = 0xFFFFFFFFFFFFFFFF
MIB = 1 << 20
_PCIE_GEN_BY_GTS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}

# gfx target -> architecture. Exact names first, then prefixes (longest first).
_ARCH_EXACT = {
    "gfx906": "GCN5.1",
    "gfx908": "CDNA",
    "gfx90a": "CDNA2",
}
_ARCH_PREFIX = (
    ("gfx115", "RDNA3.5"),
    ("gfx110", "RDNA3"),
    ("gfx103", "RDNA2"),
    ("gfx101", "RDNA"),
    ("gfx12", "RDNA4"),
    ("gfx95", "CDNA4"),
    ("gfx94", "CDNA3"),
    ("gfx90", "GCN5"),
)


def num(value: Any) -> int | float | None:
    """A number, or None for "N/A", strings, bools and the all-ones "unsupported" sentinels."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int) and value in _SENTINELS:
        return None
    return value


def counter(value: Any) -> int | None:
    """A cumulative counter: only "N/A" and UINT64_MAX mean missing (0xFFFF is a valid count)."""
    if isinstance(value, bool) or not isinstance(value, int) or value == UINT64_MAX:
        return None
    return value if value >= 0 else None


def to_int(value: Any) -> int | None:
    number = num(value)
    return None if number is None else int(number)


def positive(value: Any) -> int | None:
    number = to_int(value)
    return number if number is not None and number > 0 else None


def nonnegative(value: Any) -> int | None:
    number = to_int(value)
    return number if number is not None and number >= 0 else None


def pct(value: Any) -> float | None:
    number = num(value)
    return float(number) if number is not None and 0 <= number <= 100 else None


def watts_from_uw(value: Any) -> float | None:
    number = num(value)
    return None if number is None or number <= 0 else number / 1e6


def text(value: Any) -> str | None:
    """A string, stripped; None for non-strings, "" and "N/A"."""
    if not isinstance(value, str):
        return None
    value = value.strip()
    return None if not value or value.upper() == "N/A" else value


def get(mapping: Any, key: str) -> Any:
    """``mapping[key]`` when the answer is a mapping that has it, else None."""
    return mapping.get(key) if isinstance(mapping, Mapping) else None


def is_hex_id(name: str) -> bool:
    return name.lower().startswith("0x")


def pcie_gen(speed: Any) -> int | None:
    """PCIe generation from a transfer rate: MT/s (16000) or, below 100, GT/s (16)."""
    number = num(speed)
    if number is None or number <= 0:
        return None
    if number >= 1000:
        gts = number / 1000
    elif number < 100:
        gts = float(number)
    else:
        return None
    for rate, gen in _PCIE_GEN_BY_GTS.items():
        if abs(gts - rate) <= rate * 0.05:
            return gen
    return None


def gfx_target(value: Any) -> str | None:
    """``target_graphics_version`` ("gfx942"), None when unsupported ("gfxffffffffffffffff")."""
    name = text(value)
    if name is None or not name.lower().startswith("gfx"):
        return None
    digits = name[3:].lower()
    if not digits or set(digits) == {"f"} or set(digits) == {"0"}:
        return None
    return name.lower()


def architecture_from_gfx(gfx: str | None) -> str | None:
    """Architecture family from a gfx target ("gfx942" -> "CDNA3"); None when unknown."""
    if not gfx:
        return None
    if gfx in _ARCH_EXACT:
        return _ARCH_EXACT[gfx]
    for prefix, arch in _ARCH_PREFIX:
        if gfx.startswith(prefix):
            return arch
    return None
