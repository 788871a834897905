"""PCI bus ids: one parser for every spelling the tools write, and the sysfs facts behind them.

The same device is ``00000000:1B:00.0`` to NVML (8-digit domain, upper case), ``0000:1b:00.0``
to sysfs and amdsmi, and ``1b:00.0``, ``0000:1b:00`` or ``PCI:0000:1b:00`` in kernel log lines
(no domain, no function, a prefix). :func:`parse_pci_bus_id` reads them all; matching is done on
:func:`canonical_pci_bus_id` (a whole function address) or :func:`pci_device_key` (the device,
whatever its function). Nothing here knows any vendor library.
"""

from __future__ import annotations

import re
from pathlib import Path

from gputui.core.frozen import frozen

SYSFS_PCI_DEVICES = Path("/sys/bus/pci/devices")
SYSFS_NUMA_NODES = Path("/sys/devices/system/node")

_BUS_ID = re.compile(
    r"(?:pci:)?"
    r"(?:(?P<domain>[0-9a-f]{1,8}):)?"
    r"(?P<bus>[0-9a-f]{1,2}):"
    r"(?P<device>[0-9a-f]{1,2})"
    r"(?:\.(?P<function>[0-7]))?",
    re.IGNORECASE,
)
_MAX_DEVICE = 0x1F  # five bits of device number


@frozen(slots=False)
class PciAddress:
    """A parsed bus id. ``function`` is None when the text named only the device."""

    domain: int
    bus: int
    device: int
    function: int | None = None

    @property
    def device_key(self) -> tuple[int, int, int]:
        """(domain, bus, device): the same for every function of one device."""
        return self.domain, self.bus, self.device

    def canonical(self) -> str | None:
        """``dddd:bb:dd.f`` in lower case (the sysfs name); None without a function number."""
        if self.function is None:
            return None
        return f"{self.domain:04x}:{self.bus:02x}:{self.device:02x}.{self.function:x}"


def parse_pci_bus_id(bus_id: object) -> PciAddress | None:
    """A bus id in any usual spelling -> :class:`PciAddress`; None for anything else ("N/A",
    None, garbage, a device number above 0x1f)."""
    if not isinstance(bus_id, str):
        return None
    match = _BUS_ID.fullmatch(bus_id.strip())
    if match is None:
        return None
    device = int(match["device"], 16)
    if device > _MAX_DEVICE:
        return None
    function = match["function"]
    return PciAddress(
        domain=int(match["domain"] or "0", 16),
        bus=int(match["bus"], 16),
        device=device,
        function=int(function) if function is not None else None,
    )


def canonical_pci_bus_id(bus_id: object) -> str | None:
    """The one spelling used for matching: ``00000000:1B:00.0`` -> ``0000:1b:00.0``; None when
    unparsable or when the function number is missing."""
    address = parse_pci_bus_id(bus_id)
    return address.canonical() if address is not None else None


def pci_device_key(bus_id: object) -> tuple[int, int, int] | None:
    """(domain, bus, device) of a bus id, function ignored; None when unparsable."""
    address = parse_pci_bus_id(bus_id)
    return address.device_key if address is not None else None


def _sysfs_attribute(pci_bus_id: str | None, attribute: str, root: Path | None) -> str | None:
    """The stripped text of ``<root>/<bdf>/<attribute>``; None when the bus id is odd or the
    file is absent, unreadable or empty."""
    name = canonical_pci_bus_id(pci_bus_id)
    if name is None:
        return None
    path = (SYSFS_PCI_DEVICES if root is None else root) / name / attribute
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text or None


def local_cpulist(pci_bus_id: str | None, root: Path | None = None) -> str | None:
    """The CPUs close to a PCI device, in ``taskset`` list form ("0-55,112-167"), read from
    ``/sys/bus/pci/devices/<bdf>/local_cpulist``; None when the file is absent or unreadable (not
    Linux, a container without /sys, an odd bus id)."""
    return _sysfs_attribute(pci_bus_id, "local_cpulist", root)


def numa_node(
    pci_bus_id: str | None, root: Path | None = None, nodes_root: Path | None = None
) -> int | None:
    """The NUMA node a PCI device hangs off, from ``/sys/bus/pci/devices/<bdf>/numa_node``: what
    ``nvidia-smi topo -m`` prints as "NUMA Affinity". The kernel writes -1 where firmware does
    not say (virtual machines do this); on a machine with one NUMA node every device is on it,
    as nvidia-smi shows (a real H100 VM: sysfs -1, nvidia-smi 0). None when unknown."""
    text = _sysfs_attribute(pci_bus_id, "numa_node", root)
    try:
        node = int(text) if text is not None else None
    except ValueError:
        return None
    if node is not None and node >= 0:
        return node
    if node is None:
        return None
    only = _only_numa_node(SYSFS_NUMA_NODES if nodes_root is None else nodes_root)
    return only


def _only_numa_node(nodes_root: Path) -> int | None:
    """The id of the machine's NUMA node when it has exactly one, else None."""
    try:
        ids = [
            int(entry.name[4:])
            for entry in nodes_root.iterdir()
            if entry.name.startswith("node") and entry.name[4:].isdigit()
        ]
    except OSError:
        return None
    return ids[0] if len(ids) == 1 else None


__all__ = [
    "SYSFS_PCI_DEVICES",
    "PciAddress",
    "canonical_pci_bus_id",
    "local_cpulist",
    "numa_node",
    "parse_pci_bus_id",
    "pci_device_key",
]
