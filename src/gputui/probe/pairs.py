"""The link budget of one GPU pair, from the node's wiring: what the probe's P2P copy between
them is compared with.

A GPU's spec-sheet NVLink / XGMI figure is its total over all links, which only one kind of node
gives a single pair. So the budget comes from ``NodeInfo.topology`` (:class:`~gputui.core.model.
LinkInfo` per link, :class:`~gputui.core.model.GpuPath` per pair):

* through NVSwitch (links whose remote is a ``switch``): a copy from ``a`` to ``b`` can use
  min(links of a, links of b) links;
* direct links (remote ``gpu``): the links between the two;
* neither, but a PCIe path: the slower of the two GPUs' PCIe links (peer copies over PCIe).

A link's ``speed_gbps`` is its signalling rate per direction. The payload it carries is less on
NVLink 4 and 5 (PAM4 with forward error correction): NVIDIA rates an NVLink 4 link at 25 GB/s of
payload per direction (18 links: H100's 450 GB/s, "900 GB/s" both ways) while it signals
212.5 Gb/s = 26.5625 GB/s, so the payload is 25 / 26.5625 = 94.1% of the signalling rate. For
NVLink 3 and older and for XGMI the vendors publish the signalling rate as the link's bandwidth
(A100: 25 GB/s per link and direction; MI300X: 64 GB/s), so no payload share is taken off. The
probe's expected fraction (:mod:`gputui.specs.expected`, ``p2p``) is then a share of the payload.

Pure functions; no torch.
"""

from __future__ import annotations

from collections.abc import Sequence

from gputui.core.frozen import frozen
from gputui.core.model import LinkInfo, NodeInfo
from gputui.probe.verdict import PCIE_LANE_GBS, pcie_spec_gbs

NVLINK4_SIGNAL_GBS = 26.5625
"""One NVLink 4 link per direction: 2 lanes x 106.25 Gb/s = 212.5 Gb/s."""
NVLINK4_PAYLOAD_GBS = 25.0
"""What NVIDIA rates that link at per direction (18 links = 450 GB/s on H100 SXM)."""
NVLINK_PAYLOAD_SHARE = NVLINK4_PAYLOAD_GBS / NVLINK4_SIGNAL_GBS
"""Payload / signalling on NVLink 4 and 5 (0.941)."""


@frozen
class PairSpec:
    """A pair's budget per direction (None: not known) and how it was found, in words."""

    gbs: float | None
    source: str
    metric: str = "p2p"
    """Which expectation applies: ``p2p`` over NVLink / XGMI, ``pcie`` over PCIe."""


def payload_share(links: Sequence[LinkInfo]) -> tuple[float, str]:
    """Share of the signalling rate that is payload, and why (see the module doc)."""
    nvlink = [link for link in links if link.kind == "nvlink"]
    if nvlink:
        versions = {link.version for link in nvlink}
        speeds = {link.speed_gbps for link in nvlink}
        pam4 = all(v is not None and v >= 4 for v in versions) or (
            versions == {None} and all(s is not None and s % 212.5 == 0 for s in speeds)
        )
        if pam4:
            return NVLINK_PAYLOAD_SHARE, (
                f"x {NVLINK4_PAYLOAD_GBS:g}/{NVLINK4_SIGNAL_GBS:g} payload per signalled GB/s "
                "(NVLink 4/5)"
            )
        return 1.0, "(the rate NVIDIA publishes for this NVLink generation)"
    return 1.0, "(the rate the vendor publishes per link; no payload figure)"


def _speed(links: Sequence[LinkInfo]) -> float | None:
    speeds = [link.speed_gbps for link in links if link.speed_gbps]
    return min(speeds) / 8 if speeds else None


def _name(links: Sequence[LinkInfo]) -> str:
    kinds = {link.kind for link in links}
    return "XGMI" if kinds == {"xgmi"} else "NVLink" if kinds == {"nvlink"} else "link"


def pair_spec(node: NodeInfo | None, a: int, b: int) -> PairSpec:
    """The budget per direction of copies from GPU ``a`` to GPU ``b`` (NVML indices)."""
    topology = node.topology if node is not None else None
    if topology is None:
        return PairSpec(None, "the node's wiring is not known (no topology): no pair budget")
    links_a, links_b = topology.links_of(a), topology.links_of(b)
    direct_ab = [x for x in links_a if x.remote_type == "gpu" and x.remote_gpu_index == b]
    direct_ba = [x for x in links_b if x.remote_type == "gpu" and x.remote_gpu_index == a]
    direct = direct_ab or direct_ba
    n_direct = min(len(direct_ab), len(direct_ba)) if direct_ab and direct_ba else len(direct)
    switch_a = [x for x in links_a if x.remote_type == "switch"]
    switch_b = [x for x in links_b if x.remote_type == "switch"]
    n_switch = min(len(switch_a), len(switch_b))
    used = [*direct[:n_direct], *switch_a, *switch_b]
    per_link = _speed(used)
    if n_direct or n_switch:
        if per_link is None:
            return PairSpec(None, f"{_name(used)} link speed not reported: no pair budget")
        share, why = payload_share(used)
        n = n_direct + n_switch
        value = n * per_link * share
        parts = []
        if n_switch:
            parts.append(f"NVSwitch: min({len(switch_a)}, {len(switch_b)}) links")
        if n_direct:
            parts.append(f"{n_direct} direct {_name(direct)} link{'s' if n_direct != 1 else ''}")
        return PairSpec(
            value,
            f"{' + '.join(parts)} x {per_link:.4g} GB/s signalling {why} = {value:.4g} GB/s "
            f"per direction, GPU {a} to GPU {b}",
        )
    path = topology.path(a, b)
    if path is None:
        return PairSpec(None, f"no link or path between GPU {a} and GPU {b} in the node's wiring")
    pcie = _pcie_budget(node, a, b)
    if pcie is None:
        return PairSpec(None, "peer copy over PCIe, PCIe link unknown: no pair budget")
    gbs, gen, width = pcie
    level = f" via {path.pcie_level}" if path.pcie_level else ""
    return PairSpec(
        gbs,
        f"no NVLink/XGMI between GPU {a} and GPU {b}: peer copy over PCIe{level}, the slower "
        f"link gen{gen} x{width} ({PCIE_LANE_GBS[gen]:g} GB/s/lane) = {gbs:.4g} GB/s",
        metric="pcie",
    )


def _pcie_budget(node: NodeInfo | None, a: int, b: int) -> tuple[float, int, int] | None:
    best: tuple[float, int, int] | None = None
    for index in (a, b):
        info = node.gpu(index) if node is not None else None
        if info is None or info.pcie_max_gen is None or info.pcie_max_width is None:
            return None
        gbs = pcie_spec_gbs(info.pcie_max_gen, info.pcie_max_width)
        if gbs is None:
            return None
        if best is None or gbs < best[0]:
            best = (gbs, info.pcie_max_gen, info.pcie_max_width)
    return best
