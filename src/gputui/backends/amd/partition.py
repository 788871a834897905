"""Compute partitions of MI300-class GPUs (SPX, DPX, TPX, QPX, CPX).

In a mode other than SPX one physical GPU is several processor handles whose addresses differ only
by PCI function, which carries the partition number (``0000:0c:00.0`` to ``0000:0c:00.7`` in CPX).
Partition 0, the *primary*, is the only one backed by the PCIe device: it alone reports the
device-wide readings (socket power, energy, temperatures, PCIe, RAS, XGMI) and the partition modes,
while the *secondary* partitions answer N/A or NOT_SUPPORTED there, and before ROCm 6.4.1 repeated
the primary's values (AMD SMI's "GPU partitioning" guide). So the mode of every partition is read
from the primary of its physical GPU (grouped by domain:bus:device, as that guide says to), a
secondary is asked nothing device-wide (:data:`~gputui.backends.amd.calls.DEVICE_WIDE`; nothing
at all but its identity and processes on an amdsmi that mirrors the primary), and every partition
stays its own GPU, known by its whole PCI address.
"""

from __future__ import annotations

import re
from collections.abc import Container, Sequence
from dataclasses import replace

from gputui.backends.amd.calls import DEVICE_WIDE, PARTITION_READINGS, AmdCalls
from gputui.backends.amd.values import get, nonnegative, text
from gputui.core import pci
from gputui.core.frozen import frozen
from gputui.core.model import GpuInfo

_PARTITIONS = {"SPX": 1, "DPX": 2, "TPX": 3, "QPX": 4, "CPX": None}
"""Compute partition modes and how many partitions each makes; CPX makes one per XCC (8 on an
MI300X, 6 on an MI300A), known here only from the handles listed."""
_MEMORY_MODES = frozenset(f"NPS{n}" for n in (1, 2, 4, 8))
_FIRST_OWN_NODES = (6, 4, 1)
"""The ROCm version since which each partition has a DRM node of its own (before, every
partition read the primary's): AMD SMI's "GPU partitioning" guide and its 6.4.1 changelog."""
_COMPUTE = "amdsmi_get_gpu_compute_partition"
_MEMORY = "amdsmi_get_gpu_memory_partition"


@frozen
class Partition:
    """Which compute partition of its physical GPU one processor handle is."""

    mode: str | None = None
    """``SPX`` ... ``CPX``; None when the GPU cannot be partitioned or does not say."""
    memory_mode: str | None = None
    """``NPS1`` ... ``NPS8``; None when unknown."""
    index: int | None = None
    """The partition number, 0 for the primary; None when the GPU is not partitioned."""
    count: int | None = None
    """How many partitions the physical GPU has in this mode; None when unknown."""
    mirrored: bool = False
    """A secondary that answers what only a primary knows (its partition mode): an amdsmi from
    before ROCm 6.4.1, where every partition read the primary's DRM node, so none of its
    readings are its own (AMD SMI's "GPU partitioning" guide)."""

    @property
    def secondary(self) -> bool:
        """A partition other than the primary: the device-wide readings are not its own."""
        return self.index is not None and self.index > 0

    def refused(self) -> frozenset[str]:
        """The amdsmi functions whose answers are not this partition's own."""
        if not self.secondary:
            return frozenset()
        return DEVICE_WIDE | PARTITION_READINGS if self.mirrored else DEVICE_WIDE

    def label(self) -> str:
        """What the GPU's name gets, e.g. `` (CPX/NPS4 partition 3/8)``; '' when not partitioned."""
        if self.index is None:
            return ""
        modes = "/".join(m for m in (self.mode, self.memory_mode) if m)
        of = f"/{self.count}" if self.count else ""
        return f" ({modes + ' ' if modes else ''}partition {self.index}{of})"


def read_partitions(calls: AmdCalls, rocm_version: str | None = None) -> list[Partition]:
    """The :class:`Partition` of every handle (read once, at open). A GPU whose partition calls
    fail or are missing is taken as not partitioned. ``rocm_version`` tells whether secondaries
    mirror their primary (before 6.4.1); when unknown, a secondary that answers its partition
    mode, which only a primary knows, is taken to."""
    mirrors = _mirrors(rocm_version)
    count = len(calls.handles)
    bus_ids = [_ask(calls, i, "bdf", "amdsmi_get_gpu_device_bdf") for i in range(count)]
    numbers = [_partition_number(calls, i, bus_ids[i]) for i in range(count)]
    modes = [
        _valid(_ask(calls, i, "compute_partition", _COMPUTE), _PARTITIONS) for i in range(count)
    ]
    groups: dict[object, list[int]] = {}
    for i, bus_id in enumerate(bus_ids):
        key = pci.pci_device_key(bus_id)
        groups.setdefault(key if key is not None else i, []).append(i)
    result = [Partition()] * count
    for members in groups.values():
        members.sort(key=lambda m: numbers[m][0] != 0)  # the primary, which knows the modes, first
        mode = next((modes[m] for m in members if modes[m] is not None), None)
        memory = _memory_mode(calls, members)
        size = _PARTITIONS.get(mode) if mode is not None else None
        if mode == "CPX":
            size = max(len(members), *((numbers[m][0] or 0) + 1 for m in members))
        for i in members:
            number, told = numbers[i]
            # A secondary whose primary is not visible (a container given one partition) still
            # counts as a partition when the driver itself gave its number.
            if mode == "SPX" or number is None or (mode is None and not (told and number)):
                result[i] = Partition(mode=mode, memory_mode=memory)
                continue
            result[i] = Partition(
                mode=mode,
                memory_mode=memory,
                index=number,
                count=size,
                mirrored=number > 0 and (mirrors if mirrors is not None else modes[i] is not None),
            )
    return result


def with_partition(info: GpuInfo, partition: Partition) -> GpuInfo:
    """``info`` with its partition mode and, for a partition, its number in the name."""
    return replace(
        info,
        name=info.name + partition.label(),
        compute_partition=partition.mode,
        compute_partition_index=partition.index,
    )


def backing_bus_ids(gpus: Sequence[GpuInfo], partitions: Sequence[Partition]) -> list[str | None]:
    """Per GPU, the address of the PCI function whose sysfs files describe it: its own, and for a
    secondary partition also its primary's (a secondary is not a PCI function of its own)."""
    primaries: dict[tuple[int, int, int], str] = {}
    for info, part in zip(gpus, partitions, strict=False):
        key = pci.pci_device_key(info.pci_bus_id)
        if key is not None and info.pci_bus_id and not part.secondary:
            primaries.setdefault(key, info.pci_bus_id)
    result: list[str | None] = []
    for info, part in zip(gpus, partitions, strict=False):
        key = pci.pci_device_key(info.pci_bus_id)
        result.append(primaries.get(key) if part.secondary and key is not None else None)
    return result


# -- reading ------------------------------------------------------------------------------------


def _ask(calls: AmdCalls, i: int, key: str, fn_name: str) -> str | None:
    try:
        return text(calls.call(i, key, fn_name))
    except Exception:  # a GPU lost during open: its samples say so
        return None


def _partition_number(calls: AmdCalls, i: int, bus_id: str | None) -> tuple[int | None, bool]:
    """(partition number, whether the driver said it): ``current_partition_id`` from the KFD
    info, else the PCI function of the address (where amdsmi puts it in a partitioned mode)."""
    try:
        told = nonnegative(
            get(calls.call(i, "kfd_info", "amdsmi_get_gpu_kfd_info"), "current_partition_id")
        )
    except Exception:
        told = None
    if told is not None:
        return told, True
    address = pci.parse_pci_bus_id(bus_id)
    return (address.function if address is not None else None), False


def _memory_mode(calls: AmdCalls, members: Sequence[int]) -> str | None:
    """The memory partition mode of one physical GPU: the first valid answer, primary first."""
    for i in members:
        mode = _valid(_ask(calls, i, "memory_partition", _MEMORY), _MEMORY_MODES)
        if mode is not None:
            return mode
    return None


def _valid(answer: str | None, known: Container[str]) -> str | None:
    return answer.upper() if answer is not None and answer.upper() in known else None


def _mirrors(rocm_version: str | None) -> bool | None:
    """Whether this ROCm's secondaries repeat their primary's readings; None when unknown."""
    parts = re.findall(r"\d+", rocm_version or "")[:3]
    if not parts:
        return None
    return tuple(int(p) for p in parts) < _FIRST_OWN_NODES
