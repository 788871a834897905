"""XGMI and topology: GPU pairs (link type, hops, weight, P2P), each GPU's XGMI links and their
peers, CPU locality (read once, at open), and the per-link state and rates of the slow tier."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gputui.backends.amd.calls import AmdCalls
from gputui.backends.amd.values import counter, get, nonnegative, positive, text, to_int
from gputui.backends.common import CounterRates
from gputui.core import pci
from gputui.core.model import GpuInfo, GpuLocality, GpuPath, LinkInfo, LinkSample, Topology

# XGMI link counters are "KB"; amdsmi does not say 1000 or 1024. We read KiB (as amd-smi users do).
_XGMI_UNIT_BYTES = 1024
_LINK_TYPE_PCIE = 1  # AMDSMI_LINK_TYPE_PCIE (7.x); other types (XGMI = 2) count as XGMI traffic
_LINK_TYPE_XGMI = 2  # AMDSMI_LINK_TYPE_XGMI (7.x) / AMDSMI_IOLINK_TYPE_XGMI (6.x): same value
# amdsmi_topo_get_link_type's "type": 1 and 2 mean the same in 6.x and 7.x; 0 does not (INTERNAL in
# 7.x, UNDEFINED in 6.x), so it and anything else is reported as unknown (None).
_PATH_LINK_TYPES = {_LINK_TYPE_PCIE: "pcie", _LINK_TYPE_XGMI: "xgmi"}
# amdsmi_get_gpu_xgmi_link_status letters: U up, D down. X (disabled: not wired or turned off, not
# a fault) and "N/A" give None, so an unused link never reads as a failed one.
_LINK_UP = {"U": True, "D": False}

# Link widths an XGMI link can have; older amdsmi fills a link's max_bandwidth with its width.
_LANE_COUNTS = frozenset({1, 2, 4, 8, 16, 32})
_MAX_LANES = 32

LinkRateKey = tuple[int, int | None, str]
"""(GPU index, link index or None for the sum over links, "read" or "write")."""

XgmiEntries = list[tuple[int, Mapping[str, Any]]]


# -- discovery (static tier) ----------------------------------------------------------------------


def read_topology(
    calls: AmdCalls, gpus: Sequence[GpuInfo], backing: Sequence[str | None] = ()
) -> Topology:
    """GPU pairs, XGMI links and CPU locality. Whatever the library (or sysfs) cannot say is
    None or left out. ``backing``: per GPU, the address of another PCI function whose sysfs
    files describe it when its own address has none (a secondary compute partition's primary)."""
    count = len(calls.handles)
    bus_ids = [gpus[i].pci_bus_id if i < len(gpus) else None for i in range(count)]
    others = [backing[i] if i < len(backing) else None for i in range(count)]
    numa = [_numa_node(calls, i, bus_ids[i], others[i]) for i in range(count)]
    locality = tuple(
        GpuLocality(
            gpu_index=i,
            cpu_affinity=pci.local_cpulist(bus_ids[i]) or pci.local_cpulist(others[i]),
            numa_node=numa[i],
        )
        for i in range(count)
    )
    paths = tuple(_path(calls, a, b, numa) for a in range(count) for b in range(a + 1, count))
    local: dict[str, int] = {}
    for info in gpus:
        name = pci.canonical_pci_bus_id(info.pci_bus_id)
        if name is not None:
            local.setdefault(name, info.index)
    links = tuple(link for i in range(count) for link in _static_links(calls, i, local))
    return Topology(paths=paths, links=links, locality=locality)


def _numa_node(calls: AmdCalls, i: int, bus_id: str | None, backing: str | None) -> int | None:
    """The PCI device's NUMA node from sysfs (what ``nvidia-smi topo -m`` shows for NVIDIA), at
    the GPU's own address, else at its backing PCI function's; amdsmi's answer (read from the
    same file by the library) where sysfs cannot be read."""
    for address in (bus_id, backing):
        node = pci.numa_node(address)
        if node is not None:
            return node
    try:
        node = to_int(calls.call(i, "numa_node", "amdsmi_topo_get_numa_node_number"))
    except Exception:
        return None
    return node if node is not None and node >= 0 else None


def _path(calls: AmdCalls, a: int, b: int, numa: Sequence[int | None]) -> GpuPath:
    # PCIe level: amdsmi names no common PCIe ancestor, so PIX/PXB/PHB/NODE cannot be told
    # apart. Only GPUs on different NUMA nodes are known to cross the inter-node fabric: SYS.
    level = "SYS" if None not in (numa[a], numa[b]) and numa[a] != numa[b] else None
    try:
        peer = calls.handles[b]
        kind = calls.call(a, f"link_type:{b}", "amdsmi_topo_get_link_type", peer)
        weight = calls.call(a, f"link_weight:{b}", "amdsmi_topo_get_link_weight", peer)
        p2p = calls.call(a, f"p2p:{b}", "amdsmi_is_P2P_accessible", peer)
    except Exception:  # a GPU lost during start-up: its samples say so
        return GpuPath(a=a, b=b, pcie_level=level)
    link_type = to_int(get(kind, "type"))
    accessible = p2p if isinstance(p2p, bool) else None
    return GpuPath(
        a=a,
        b=b,
        pcie_level=level,
        link_type=_PATH_LINK_TYPES.get(link_type) if link_type is not None else None,
        hops=nonnegative(get(kind, "hops")),
        weight=nonnegative(weight),
        p2p_read=accessible,
        p2p_write=accessible,
    )


def _static_links(calls: AmdCalls, i: int, local: Mapping[str, int]) -> list[LinkInfo]:
    """XGMI links of GPU ``i`` from link metrics; the peer is matched to a local GPU by BDF."""
    try:
        entries = xgmi_entries(calls.call(i, "link_metrics", "amdsmi_get_link_metrics"))
    except Exception:
        return []
    result = []
    lanes = _xgmi_lanes(calls, i) if entries else None
    for n, entry in entries or ():
        remote_bdf = _remote_bdf(entry.get("bdf"))
        remote = local.get(pci.canonical_pci_bus_id(remote_bdf) or "")
        if remote == i:
            remote = None
        result.append(
            LinkInfo(
                gpu_index=i,
                link=n,
                kind="xgmi",
                version=None,  # amdsmi reports no XGMI version
                speed_gbps=xgmi_link_gbps(entry.get("bit_rate"), entry.get("max_bandwidth"), lanes),
                remote_type="gpu" if remote is not None else None,
                remote_gpu_index=remote,
                remote_pci_bus_id=remote_bdf,
            )
        )
    return result


def _xgmi_lanes(calls: AmdCalls, i: int) -> int | None:
    """Lanes per XGMI link (``amdsmi_get_xgmi_info``'s ``xgmi_lanes``: 16 on MI300X)."""
    try:
        info = calls.call(i, "xgmi_info", "amdsmi_get_xgmi_info")
    except Exception:
        return None
    lanes = positive(get(info, "xgmi_lanes"))
    return lanes if lanes is not None and lanes <= _MAX_LANES else None


def xgmi_link_gbps(bit_rate: Any, max_bandwidth: Any, lanes: int | None) -> float | None:
    """Speed of one whole XGMI link in Gb/s per direction.

    ``bit_rate`` is per lane ("current link speed in Gb/s", amdsmi.h; the gpu_metrics
    ``xgmi_link_speed``): the link is its lanes times that, e.g. MI300X 16 x 32 Gb/s = 512 Gb/s
    (64 GB/s). Without the lane count, ``max_bandwidth`` serves: amdsmi 7 documents it as the
    link's bandwidth in Gb/s, while older versions fill it with the link width (16).
    """
    rate = positive(bit_rate)
    if rate is not None and lanes is not None:
        return float(rate * lanes)
    bandwidth = positive(max_bandwidth)
    if bandwidth is None:
        return None
    if rate is None:  # only a bandwidth well above any lane count is one
        return float(bandwidth) if bandwidth > _MAX_LANES else None
    if bandwidth in _LANE_COUNTS and bandwidth <= rate:  # a width, not a bandwidth
        return float(rate * bandwidth)
    return float(bandwidth) if bandwidth >= rate else None


def xgmi_entries(metrics: Any) -> XgmiEntries | None:
    """(link index, entry) for the XGMI links of an ``amdsmi_get_link_metrics`` answer; None when
    it has no link list. The wrapper always returns 8 entries (unused ones hold stale data), so the
    list is cut to ``num_links``; entries typed PCIe are left out."""
    links = get(metrics, "links")
    if not isinstance(links, Sequence) or isinstance(links, str):
        return None
    count = to_int(get(metrics, "num_links"))
    if count is not None:
        links = links[: max(count, 0)]
    return [
        (n, link)
        for n, link in enumerate(links)
        if isinstance(link, Mapping) and link.get("link_type") != _LINK_TYPE_PCIE
    ]


def _remote_bdf(value: Any) -> str | None:
    """A link's peer address; the all-zero BDF is what an unset entry holds, so it is None."""
    name = pci.canonical_pci_bus_id(value)
    if name is None or name == "0000:00:00.0":
        return None
    return text(value)


# -- readings (slow tier) -------------------------------------------------------------------------


def read_xgmi(
    calls: AmdCalls, rates: CounterRates[LinkRateKey], i: int, now: float
) -> dict[str, Any]:
    """Aggregate XGMI rates and per-link readings from one link-metrics read."""
    metrics = calls.call(i, "link_metrics", "amdsmi_get_link_metrics")
    entries = xgmi_entries(metrics)
    rx, tx = _total_rates(rates, i, now, entries)
    status = calls.call(i, "xgmi_link_status", "amdsmi_get_gpu_xgmi_link_status")
    pending = any(
        answer is None and not calls.is_unsupported(i, key)
        for answer, key in ((metrics, "link_metrics"), (status, "xgmi_link_status"))
    )
    return {
        "nvlink_rx_bytes_per_s": rx,
        "nvlink_tx_bytes_per_s": tx,
        "links": _link_samples(rates, i, now, entries, status, pending),
    }


def _total_rates(
    rates: CounterRates[LinkRateKey], i: int, now: float, entries: XgmiEntries | None
) -> tuple[float | None, float | None]:
    """XGMI rx/tx bytes/s from the per-link read/write counters summed over the links."""
    read = write = 0
    seen = False
    for _n, link in entries or ():
        r, w = counter(link.get("read")), counter(link.get("write"))
        if r is None or w is None:
            continue
        read, write, seen = read + r, write + w, True
    if not seen:
        rates.forget((i, None, "read"))
        rates.forget((i, None, "write"))
        return None, None
    return _byte_rates(rates, i, None, read, write, now)


def _byte_rates(
    rates: CounterRates[LinkRateKey], i: int, link: int | None, read: int, write: int, now: float
) -> tuple[float | None, float | None]:
    """(rx, tx) bytes/s from the cumulative read (received) and write (sent) KB counters; a
    reset of either counter means no rate for both."""
    rx = rates.rate((i, link, "read"), read, now)
    tx = rates.rate((i, link, "write"), write, now)
    if rx is None or tx is None:
        return None, None
    return rx * _XGMI_UNIT_BYTES, tx * _XGMI_UNIT_BYTES


def _link_samples(
    rates: CounterRates[LinkRateKey],
    i: int,
    now: float,
    entries: XgmiEntries | None,
    status: Any,
    pending: bool,
) -> tuple[LinkSample, ...] | None:
    """Per-link state and rates. ``()`` when the GPU has no XGMI links (or amdsmi cannot say,
    for good); None when a call failed only for now (the sampler keeps the last reading)."""
    letters = _status_letters(status)
    if entries is None:  # no counters this time: no rate across the gap
        rates.forget_where(lambda key: key[0] == i and key[1] is not None)
    if not entries and not letters:
        return None if pending else ()
    by_index = dict(entries or ())
    indexes = sorted(by_index) if by_index else range(len(letters or ()))
    counted: set[int] = set()
    samples = []
    for n in indexes:
        entry = by_index.get(n)
        read, write = counter(get(entry, "read")), counter(get(entry, "write"))
        rx = tx = None
        if read is not None and write is not None:
            counted.add(n)
            rx, tx = _byte_rates(rates, i, n, read, write, now)
        letter = letters[n] if letters is not None and n < len(letters) else None
        samples.append(
            # amdsmi has no per-link error counters (replay / recovery / CRC): they stay None.
            LinkSample(
                link=n,
                up=_LINK_UP.get(letter) if isinstance(letter, str) else None,
                rx_bytes_per_s=rx,
                tx_bytes_per_s=tx,
            )
        )
    if entries is not None:  # a link without counters this time starts again from scratch
        rates.forget_where(lambda key: key[0] == i and key[1] is not None and key[1] not in counted)
    return tuple(samples)


def _status_letters(status: Any) -> list[Any] | None:
    """The per-link status letters, cut to ``total_links``; None when there is no list."""
    letters = get(status, "status")
    if not isinstance(letters, Sequence) or isinstance(letters, str):
        return None
    total = to_int(get(status, "total_links"))
    return list(letters[: max(total, 0)] if total is not None else letters)
