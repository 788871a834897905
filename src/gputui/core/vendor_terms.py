"""The words each vendor uses for the same thing, spelled one way everywhere gputui shows them.

NVIDIA and AMD measure and name things differently: a view that writes "SM%" over AMD's GFX
engine busy time, or spells AMD's GPU link three ways, tells the user something untrue. Every
view takes these words from here.
"""

from __future__ import annotations

from collections.abc import Iterable

from gputui.core.model import Vendor

LINK_NAMES: dict[str, tuple[str, str]] = {"nvidia": ("NVLink", "NVL"), "amd": ("XGMI", "XGMI")}
"""Vendor -> (long, short) name of the GPU-to-GPU link: NVLink, or AMD's XGMI (Infinity
Fabric), always upper-case as ``amd-smi`` and ``rocm-smi`` write it."""
BUSY_TITLES: dict[str, str] = {"nvidia": "SM%", "amd": "GFX%"}
"""Vendor -> the title of a process's utilization column: NVML's per-process SM utilization,
AMD's GFX engine busy time per process (not a compute-unit occupancy)."""
MIXED_BUSY_TITLE = "GPU%"
"""The same column on a node with GPUs of both vendors (each row holds its own vendor's
measure, so the title claims neither)."""


def link_name(vendor: Vendor | str, *, short: bool = False) -> str:
    """``NVLink`` / ``NVL`` on NVIDIA, ``XGMI`` on AMD."""
    long, brief = LINK_NAMES.get(vendor, LINK_NAMES["nvidia"])
    return brief if short else long


def clock_label(vendor: Vendor | str) -> str:
    """The main clock's domain: ``SM`` on NVIDIA, ``GFX`` on AMD."""
    return "GFX" if vendor == "amd" else "SM"


def busy_title(vendors: Iterable[Vendor | str]) -> str:
    """The per-process utilization column's title for a node with GPUs of ``vendors``: ``SM%``,
    ``GFX%``, or ``GPU%`` on a mixed node (``SM%`` when there is no GPU)."""
    found = set(vendors)
    if len(found) > 1:
        return MIXED_BUSY_TITLE
    return BUSY_TITLES.get(found.pop() if found else "nvidia", MIXED_BUSY_TITLE)


__all__ = [
    "BUSY_TITLES",
    "LINK_NAMES",
    "MIXED_BUSY_TITLE",
    "busy_title",
    "clock_label",
    "link_name",
]
