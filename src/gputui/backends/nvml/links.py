"""NVLink and topology: the links of each GPU and their peers, PCIe paths and P2P support per GPU
pair, CPU affinity and NUMA node per GPU (read once, at open: NVLink discovery is slow on some
systems), and the per-link state, traffic and error counters of the slow tier."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Sequence
from typing import Any

from gputui.backends.nvml.calls import GpuLost, NvmlCalls, NvmlGpu
from gputui.backends.nvml.fields import (
    FI_NVLINK_DATA_RX,
    FI_NVLINK_DATA_TX,
    FI_NVLINK_SPEED_COMMON,
    FI_NVLINK_STATE,
    LINK_ERROR_TOTALS,
    FieldKey,
    field_key,
    read_fields,
    supported,
)
from gputui.backends.nvml.values import KIB, optional_text, to_int
from gputui.core import pci
from gputui.core.model import GpuLocality, GpuPath, LinkInfo, LinkSample, Topology
from gputui.core.pci import canonical_pci_bus_id

log = logging.getLogger(__name__)

# ABI-stable numbers from nvml.h.
NVLINK_MAX_LINKS = 18  # used only when the binding lacks NVML_NVLINK_MAX_LINKS (36 in newer ones)
NVLINK_ERROR_DL_REPLAY = 0
NVLINK_ERROR_DL_RECOVERY = 1
NVLINK_ERROR_DL_CRC_FLIT = 2
NVLINK_ERROR_DL_CRC_DATA = 3
_ERROR_COUNTERS = (
    NVLINK_ERROR_DL_REPLAY,
    NVLINK_ERROR_DL_RECOVERY,
    NVLINK_ERROR_DL_CRC_FLIT,
    NVLINK_ERROR_DL_CRC_DATA,
)
# nvmlNvlinkVersion_t -> the NVLink generation users name (H100: NVLink 4). NVML answers
# nvmlDeviceGetNvLinkVersion with this enum, not the number: 1.0 = 1, 2.0 = 2, 2.2 = 3,
# 3.0 = 4, 3.1 = 5, 4.0 = 6, 5.0 = 7, 6.0 = 8 (0 is INVALID).
NVLINK_VERSIONS = {1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 6: 4, 7: 5, 8: 6}
# nvmlNvLinkDeviceType_t: 0 GPU, 1 IBM NPU (the CPU side of a POWER9 link), 2 NVSwitch.
NVLINK_REMOTE_TYPES = {0: "gpu", 1: "cpu", 2: "switch"}
# nvmlGpuP2PCapsIndex_t. The binding's NVML_P2P_CAPS_INDEX_READ is the tuple ``(0,)`` (a trailing
# comma in nvidia-ml-py), so the plain numbers are used.
P2P_CAPS_INDEX_READ = 0
P2P_CAPS_INDEX_WRITE = 1
P2P_STATUS_OK = 0
# nvmlGpuTopologyLevel_t -> the code ``nvidia-smi topo -m`` prints. INTERNAL (two GPUs on one
# board, behind its own PCIe switch) is shown as the one-switch case.
TOPOLOGY_LEVELS = {0: "PIX", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
AFFINITY_WORD_BITS = 64  # nvmlDeviceGetCpuAffinity fills an array of unsigned long (64-bit Linux)


# -- discovery (static tier) ----------------------------------------------------------------------


def read_topology(calls: NvmlCalls, gpus: Sequence[NvmlGpu]) -> Topology | None:
    """PCIe paths and P2P support per GPU pair, NVLink links per GPU, CPU locality per GPU.

    Whatever a GPU cannot answer is None or left out; a GPU lost on the way is marked lost and
    left out; None only if the binding misbehaves outright. Sets each GPU's ``nvlinks``.
    """
    try:
        usable = [gpu for gpu in gpus if not gpu.lost and gpu.handle is not None]
        buses: dict[str, int] = {}
        for gpu in usable:
            bus = canonical_pci_bus_id(gpu.info.pci_bus_id if gpu.info is not None else None)
            if bus is not None:
                buses[bus] = gpu.index
        links: list[LinkInfo] = []
        locality: list[GpuLocality] = []
        for gpu in usable:
            try:
                found = _discover_links(calls, gpu, buses)
                place = _locality(calls, gpu)
            except GpuLost:
                gpu.mark_lost()
                continue
            gpu.nvlinks = tuple(link.link for link in found)
            gpu.links_with_remote = frozenset(
                link.link for link in found if link.remote_pci_bus_id is not None
            )
            links.extend(found)
            locality.append(place)
        paths: list[GpuPath] = []
        for i, a in enumerate(usable):
            for b in usable[i + 1 :]:
                if a.lost or b.lost:
                    continue
                with contextlib.suppress(GpuLost):  # either end: the next read tells which
                    paths.append(_path(calls, a, b))
        return Topology(paths=tuple(paths), links=tuple(links), locality=tuple(locality))
    except Exception:  # a binding bug must not stop the dashboard from opening
        log.warning("NVML topology discovery failed", exc_info=True)
        return None


def _discover_links(calls: NvmlCalls, gpu: NvmlGpu, buses: dict[str, int]) -> list[LinkInfo]:
    """Links 0.. until the driver says there are no more (consumer and PCIe boards: none)."""
    h = gpu.handle
    max_links = int(getattr(calls.nvml, "NVML_NVLINK_MAX_LINKS", NVLINK_MAX_LINKS))
    found: list[LinkInfo] = []
    speed: float | None = None
    for link in range(max_links):
        key = f"nvlink{link}:"
        state = calls.query(gpu, key + "state", "nvmlDeviceGetNvLinkState", h, link)
        if state is None:
            if calls.is_unsupported(gpu, key + "state"):
                break  # NotSupported / InvalidArgument: no link with this id, nor above
            continue  # a transient error: skip this link
        if not found:  # one field for every active link; asked only where links exist
            # The common speed of the active links, per link and per direction, in MB/s: the
            # signalling rate nvidia-smi prints ("26.562 GB/s" per H100 NVLink 4 link, i.e.
            # 212.5 Gb/s), which is what is reported. The payload rate is lower (25 GB/s =
            # 200 Gb/s per direction on H100) and NVML does not report it.
            mbps = read_fields(calls, gpu, ((FI_NVLINK_SPEED_COMMON, 0),)).get(
                (FI_NVLINK_SPEED_COMMON, 0)
            )
            speed = mbps * 8 / 1000 if mbps else None  # MB/s -> Gb/s
        if state:
            gpu.links_seen_up.add(link)
        pci = calls.query(gpu, key + "remote_pci", "nvmlDeviceGetNvLinkRemotePciInfo", h, link)
        remote_bus = _remote_bus(pci)
        peer = buses.get(canonical_pci_bus_id(remote_bus) or "") if remote_bus else None
        kind = to_int(
            calls.query(gpu, key + "remote_type", "nvmlDeviceGetNvLinkRemoteDeviceType", h, link)
        )
        if remote_bus is None and not state:
            remote_type = None  # an inactive link with no remote end: its type means nothing
        elif kind is None:
            remote_type = "gpu" if peer is not None else None
        else:
            remote_type = NVLINK_REMOTE_TYPES.get(kind)
            if remote_type != "gpu":
                peer = None
        found.append(
            LinkInfo(
                gpu_index=gpu.index,
                link=link,
                kind="nvlink",
                version=nvlink_version(
                    calls.query(gpu, key + "version", "nvmlDeviceGetNvLinkVersion", h, link)
                ),
                speed_gbps=speed,
                remote_type=remote_type,
                remote_gpu_index=peer,
                remote_pci_bus_id=remote_bus,
            )
        )
    return found


def _remote_bus(remote: Any) -> str | None:
    """The remote end's bus id; None when not answered or all zeros (what an inactive link with
    nothing at its far end reports)."""
    bus = optional_text(remote.busId) if remote is not None and remote.busId else None
    address = pci.parse_pci_bus_id(bus)
    if address is None or (address.domain, address.bus, address.device) == (0, 0, 0):
        return None
    return bus


def nvlink_version(value: Any) -> int | None:
    """The NVLink generation (4 on H100) from NVML's nvmlNvlinkVersion_t answer; None for
    INVALID or a value this table does not know."""
    number = to_int(value)
    return NVLINK_VERSIONS.get(number) if number is not None else None


def _locality(calls: NvmlCalls, gpu: NvmlGpu) -> GpuLocality:
    """CPU and NUMA affinity as ``nvidia-smi topo -m`` shows them: the NUMA node is the PCI
    device's (sysfs ``numa_node``), not ``nvmlDeviceGetNumaNodeId`` (the "GPU NUMA ID": the node
    of the GPU's own memory on coherent systems such as Grace Hopper). The CPU list is NVML's,
    else sysfs ``local_cpulist``."""
    words = max(16, -(-(os.cpu_count() or 1) // AFFINITY_WORD_BITS))  # at least 1024 CPUs
    mask = calls.query(gpu, "cpu_affinity", "nvmlDeviceGetCpuAffinity", gpu.handle, words)
    bus_id = gpu.info.pci_bus_id if gpu.info is not None else None
    cpus = format_cpu_list(mask) if mask is not None else None
    return GpuLocality(
        gpu_index=gpu.index,
        cpu_affinity=cpus if cpus is not None else pci.local_cpulist(bus_id),
        numa_node=pci.numa_node(bus_id),
    )


def _path(calls: NvmlCalls, a: NvmlGpu, b: NvmlGpu) -> GpuPath:
    ha, hb = a.handle, b.handle
    level = to_int(
        calls.query(a, f"topology{b.index}", "nvmlDeviceGetTopologyCommonAncestor", ha, hb)
    )
    p2p = {
        index: calls.query(a, f"p2p{index}:{b.index}", "nvmlDeviceGetP2PStatus", ha, hb, index)
        for index in (P2P_CAPS_INDEX_READ, P2P_CAPS_INDEX_WRITE)
    }
    return GpuPath(
        a=a.index,
        b=b.index,
        pcie_level=TOPOLOGY_LEVELS.get(level) if level is not None else None,
        p2p_read=_p2p(p2p[P2P_CAPS_INDEX_READ]),
        p2p_write=_p2p(p2p[P2P_CAPS_INDEX_WRITE]),
    )


def _p2p(status: Any) -> bool | None:
    return None if status is None else status == P2P_STATUS_OK


def format_cpu_list(mask: Sequence[int] | Any, bits: int = AFFINITY_WORD_BITS) -> str | None:
    """CPU bitmask words (word 0 holds CPUs 0..bits-1) -> ``taskset`` list ``0-55,112-167``;
    None for an empty mask."""
    cpus = [
        word_index * bits + bit
        for word_index, word in enumerate(mask)
        for bit in range(bits)
        if int(word) >> bit & 1
    ]
    if not cpus:
        return None
    ranges: list[str] = []
    start = prev = cpus[0]
    for cpu in [*cpus[1:], None]:
        if cpu is not None and cpu == prev + 1:
            prev = cpu
            continue
        ranges.append(str(start) if start == prev else f"{start}-{prev}")
        if cpu is not None:
            start = prev = cpu
    return ",".join(ranges)


# -- per-link readings (slow tier) ----------------------------------------------------------------


def link_states(
    calls: NvmlCalls, gpu: NvmlGpu, fields: dict[FieldKey, int | float]
) -> dict[int, bool | None]:
    """Link id -> up (None when the state could not be read this time): from the batched
    per-link state field, or one call per link where the driver lacks it."""
    states: dict[int, bool | None] = {}
    for link in gpu.nvlinks:
        if not calls.is_unsupported(gpu, field_key(FI_NVLINK_STATE, link)):
            value = fields.get((FI_NVLINK_STATE, link))
            states[link] = None if value is None else bool(value)
            continue
        state = calls.query(
            gpu, f"nvlink{link}:state", "nvmlDeviceGetNvLinkState", gpu.handle, link
        )
        states[link] = None if state is None else bool(state)
    return states


def _error_counters(
    calls: NvmlCalls, gpu: NvmlGpu, fields: dict[FieldKey, int | float]
) -> dict[int, dict[int, int | None]]:
    """Link id -> error counter -> count. The per-link counters (four calls per link: 72 on an
    H100) are read again only when the totals over all links moved since the last read, or
    every time where the driver has no totals."""
    totals = tuple(fields.get(key) for key in LINK_ERROR_TOTALS)
    have_totals = supported(calls, gpu, LINK_ERROR_TOTALS) and None not in totals
    if have_totals and gpu.link_error_totals == totals and gpu.link_errors:
        return gpu.link_errors
    errors = {
        link: {
            counter: to_int(
                calls.query(
                    gpu,
                    f"nvlink{link}:error{counter}",
                    "nvmlDeviceGetNvLinkErrorCounter",
                    gpu.handle,
                    link,
                    counter,
                )
            )
            for counter in _ERROR_COUNTERS
        }
        for link in gpu.nvlinks
    }
    gpu.link_errors = errors
    gpu.link_error_totals = totals if have_totals else None
    return errors


def _judge_state(gpu: NvmlGpu, link: int, active: bool | None) -> tuple[bool | None, bool]:
    """(up, unused) of a link from NVML's active / inactive answer.

    NVML says "inactive" both for a link that went down and for one that was never connected:
    all 18 links of an H100 in a one-GPU VM carved out of an HGX board, or on an HGX partition
    without the NVSwitch fabric, answer inactive with no remote end. An inactive link is down
    only if it was active earlier while gputui watched, or it has a remote end and the fabric
    (where the GPU has one) finished its set-up, or the GPU sits in a set-up NVSwitch fabric
    whose other links trained (every link of such a board is wired); otherwise it is "not in
    use" (up None)."""
    if active is None:
        return None, False
    if active:
        gpu.links_seen_up.add(link)
        return True, False
    fabric = gpu.info.fabric_state if gpu.info is not None else None
    expected = (
        link in gpu.links_seen_up
        or (link in gpu.links_with_remote and fabric in (None, "not_supported", "completed"))
        or (fabric == "completed" and bool(gpu.links_seen_up))
    )
    return (False, False) if expected else (None, True)


def link_samples(
    calls: NvmlCalls,
    gpu: NvmlGpu,
    now: float,
    fields: dict[FieldKey, int | float],
) -> tuple[LinkSample, ...]:
    """Per-link state, TX/RX bytes/s from the cumulative per-link KiB counters and the error
    counters; () for a GPU without NVLink."""
    states = link_states(calls, gpu, fields)
    errors_by_link = _error_counters(calls, gpu, fields) if states else {}
    samples = []
    for link, active in states.items():
        up, unused = _judge_state(gpu, link, active)
        rates: dict[str, float | None] = {}
        for direction, field_id in (("tx", FI_NVLINK_DATA_TX), ("rx", FI_NVLINK_DATA_RX)):
            # A link that is down counts nothing: None, and the baseline waits for it.
            kib = fields.get((field_id, link)) if up else None
            rate = gpu.rates.rate(f"nvlink{link}_{direction}", kib, now)
            rates[direction] = rate * KIB if rate is not None else None
        errors = errors_by_link.get(link, {})
        crc_flit = errors.get(NVLINK_ERROR_DL_CRC_FLIT)
        crc_data = errors.get(NVLINK_ERROR_DL_CRC_DATA)
        samples.append(
            LinkSample(
                link=link,
                up=up,
                unused=unused,
                rx_bytes_per_s=rates["rx"],
                tx_bytes_per_s=rates["tx"],
                replay_errors=errors.get(NVLINK_ERROR_DL_REPLAY),
                recovery_errors=errors.get(NVLINK_ERROR_DL_RECOVERY),
                crc_errors=None if crc_flit is None else crc_flit + (crc_data or 0),
            )
        )
    return tuple(samples)
