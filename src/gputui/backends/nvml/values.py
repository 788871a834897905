"""NVML answers -> the model's types. Values from the binding are untyped; they are converted
here, where they enter, so no untyped value reaches a model object."""

from __future__ import annotations

from typing import Any

KIB = 1024
MIB = 1024 * 1024


def to_int(value: Any) -> int | None:
    return int(value) if value is not None else None


def to_float(value: Any) -> float | None:
    return float(value) if value is not None else None


def to_bool(value: Any) -> bool | None:
    return bool(value) if value is not None else None


def text(value: Any) -> str:
    """A string from the binding: older nvidia-ml-py versions return bytes."""
    return value.decode() if isinstance(value, bytes) else str(value)


def optional_text(value: Any) -> str | None:
    return text(value) if value is not None else None


def watts(milliwatts: Any) -> float | None:
    return float(milliwatts) / 1000 if milliwatts is not None else None


def clock_types(nvml: Any) -> dict[str, int]:
    """The nvmlClockType_t of each clock the model reports."""
    return {
        "sm": int(getattr(nvml, "NVML_CLOCK_SM", 1)),
        "memory": int(getattr(nvml, "NVML_CLOCK_MEM", 2)),
        "graphics": int(getattr(nvml, "NVML_CLOCK_GRAPHICS", 0)),
    }
