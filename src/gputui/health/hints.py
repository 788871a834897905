"""The commands a hint tells the admin to run, in the vendor's own tool: no ``nvidia-smi -r`` on
an AMD node."""

from __future__ import annotations

from gputui.core.model import GpuInfo, NodeInfo, Vendor


def vendor_of(info: GpuInfo | None, node: NodeInfo | None = None) -> Vendor:
    """The GPU's vendor; for a node-wide finding the node's (AMD when every GPU is AMD)."""
    if info is not None:
        return info.vendor
    if node is not None and node.gpus and all(g.vendor == "amd" for g in node.gpus):
        return "amd"
    return "nvidia"


def smi(vendor: Vendor) -> str:
    return "amd-smi" if vendor == "amd" else "nvidia-smi"


def reset(vendor: Vendor, index: int | None = None) -> str:
    """``nvidia-smi -r -i 3`` / ``amd-smi reset -G -g 3``."""
    if vendor == "amd":
        return "amd-smi reset -G" + (f" -g {index}" if index is not None else "")
    return "nvidia-smi -r" + (f" -i {index}" if index is not None else "")


def query(vendor: Vendor) -> str:
    """The tool's full report of a GPU."""
    return "amd-smi metric" if vendor == "amd" else "nvidia-smi -q"


def list_gpus(vendor: Vendor) -> str:
    """The GPUs the driver sees."""
    return "amd-smi list" if vendor == "amd" else "nvidia-smi -L"


def ecc_counts(vendor: Vendor, index: int) -> str:
    """A GPU's ECC error counts."""
    if vendor == "amd":
        return f"amd-smi metric --ecc -g {index}"
    return f"nvidia-smi -q -d ECC -i {index}"


def retired_pages(vendor: Vendor, index: int) -> str:
    """A GPU's retired (AMD: bad) memory pages, those pending included."""
    if vendor == "amd":
        return f"amd-smi bad-pages -g {index}"
    return f"nvidia-smi -q -d PAGE_RETIREMENT -i {index}"


def set_power_limit(vendor: Vendor, index: int, watts: float) -> str:
    if vendor == "amd":
        return f"amd-smi set -g {index} -o {watts:.0f}"
    return f"nvidia-smi -i {index} -pl {watts:.0f}"


def enable_ecc(vendor: Vendor) -> str:
    if vendor == "amd":
        return "enable RAS / ECC in the firmware (BIOS) and boot amdgpu with ras_enable=1"
    return "enable it (nvidia-smi -e 1) and reboot"


def driver_module(vendor: Vendor) -> str:
    return "amdgpu" if vendor == "amd" else "nvidia"


__all__ = [
    "driver_module",
    "ecc_counts",
    "enable_ecc",
    "list_gpus",
    "query",
    "reset",
    "retired_pages",
    "set_power_limit",
    "smi",
    "vendor_of",
]
