"""The simulated nodes' wiring (static tier) and per-link readings (slow tier).

``build_topology(plan)`` gives the :class:`Topology` that ``NodeInfo.topology`` carries:

- ``dgx-h100``, ``faulty``, ``mig`` and ``crowded``: a DGX H100. Every GPU has 18 NVLink4 links
  to the four NVSwitch chips (5 + 4 + 4 + 5 links), so ``topo -m`` shows NV18 between every pair.
  Each GPU sits behind its own PCIe switch: GPUs 0-3 hang off CPU socket 0 (NUMA 0), 4-7 off
  socket 1 (NUMA 1), so a pair is ``NODE`` within a socket and ``SYS`` across. P2P read/write
  works for every pair (over NVLink). In ``faulty``, NVLink 7 of GPU 1 is down.
- ``a100-pcie``: two PCIe A100s without NVLink, one per CPU socket: the one pair is ``SYS`` and
  P2P is not supported across the sockets (what NVML reports on such hosts).
- ``rtx4090``: one GPU, so no pairs and no links; one locality entry.
- ``mi300x``: a full XGMI mesh; every GPU has 7 XGMI links, one to each peer (hops 1, KFD link
  weight 15, P2P accessible). GPUs 0-3 on NUMA 0, 4-7 on NUMA 1.

:class:`LinkReader` splits a GPU's aggregate NVLink / XGMI traffic (the ``nvlink_*`` fields) over
its up links, with a few percent of smooth, deterministic per-link imbalance; the per-link rates sum
to the aggregate up to rounding. A down link reads ``up=False``, no rates and nonzero error
counters.
"""

from __future__ import annotations

from gputui.backends.sim.noise import key, smooth8
from gputui.backends.sim.plan import Plan
from gputui.core.frozen import frozen
from gputui.core.model import GpuLocality, GpuPath, LinkInfo, LinkSample, Topology

NVLINK4_SPEED_GBPS = 212.5
"""One NVLink4 link, per direction: 2 lanes x 106.25 Gb/s (PAM4); ``nvidia-smi nvlink -s`` prints
it as 26.562 GB/s. 18 links give H100 SXM its 450 GB/s per direction (900 GB/s total)."""
XGMI_MI300X_SPEED_GBPS = 512.0
"""One MI300X XGMI link, per direction: 16 lanes x 32 Gb/s = 64 GB/s; 7 links give the 896 GB/s
(bidirectional) of AMD's spec sheet."""
XGMI_WEIGHT = 15
"""KFD io-link weight of a one-hop XGMI peer (``amd-smi topology``)."""

DGX_NVSWITCH_BUS = (
    "00000000:05:00.0",
    "00000000:06:00.0",
    "00000000:07:00.0",
    "00000000:08:00.0",
)
"""PCI bus ids of the four NVSwitch chips of the simulated DGX H100."""
_DGX_SWITCH_OF_LINK = (0,) * 5 + (1,) * 4 + (2,) * 4 + (3,) * 5
"""Which NVSwitch each of a GPU's 18 NVLinks goes to."""
DGX_AFFINITY = ("0-55,112-167", "56-111,168-223")
"""CPU lists of the two NUMA nodes of 2x Xeon Platinum 8480C (224 threads)."""
A100_AFFINITY = ("0-15,32-47", "16-31,48-63")
"""2x EPYC 7313 (64 threads, NPS1)."""
RTX_AFFINITY = "0-31"
"""Ryzen 9 7950X (32 threads)."""
MI300X_AFFINITY = ("0-95,192-287", "96-191,288-383")
"""2x EPYC 9654 (384 threads, NPS1)."""

FAULTY_LINK = (1, 7)
"""(GPU, link) of the NVLink that is down in the ``faulty`` scenario."""
FAULTY_LINK_ERRORS = (17, 3, 9)
"""Replay, recovery and CRC error counters of the down link."""
_LINK_NOISE = 0.04
"""Per-link imbalance: each link carries its share of the aggregate times 1 +- this."""


@frozen
class _GpuLinks:
    """What the slow tier needs to read one GPU's links."""

    noise_key: int
    links: tuple[tuple[int, int, int, LinkSample | None], ...]
    """Per link: its id, the two noise channels whose mean sets its imbalance, and the constant
    sample of a down link (None for an up link)."""


def build_topology(plan: Plan) -> Topology:
    """The wiring of ``plan``'s node (see the module docstring)."""
    s = plan.scenario
    bus = [g.pci_bus_id for g in plan.gpus]
    n = len(bus)
    if s in ("dgx-h100", "faulty", "mig", "crowded"):
        numa = [0 if i < 4 else 1 for i in range(n)]
        paths = tuple(
            GpuPath(
                a,
                b,
                pcie_level="NODE" if numa[a] == numa[b] else "SYS",
                p2p_read=True,
                p2p_write=True,
            )
            for a in range(n)
            for b in range(a + 1, n)
        )
        links = tuple(
            LinkInfo(
                gpu_index=i,
                link=k,
                kind="nvlink",
                version=4,
                speed_gbps=NVLINK4_SPEED_GBPS,
                remote_type="switch",
                remote_pci_bus_id=DGX_NVSWITCH_BUS[sw],
            )
            for i in range(n)
            for k, sw in enumerate(_DGX_SWITCH_OF_LINK)
        )
        return Topology(paths, links, _locality(numa, DGX_AFFINITY))
    if s == "a100-pcie":
        numa = list(range(n))  # one GPU per socket
        paths = tuple(
            GpuPath(a, b, pcie_level="SYS", p2p_read=False, p2p_write=False)
            for a in range(n)
            for b in range(a + 1, n)
        )
        return Topology(paths, (), _locality(numa, A100_AFFINITY))
    if s == "mi300x":
        numa = [0 if i < 4 else 1 for i in range(n)]
        paths = tuple(
            GpuPath(
                a, b, link_type="xgmi", hops=1, weight=XGMI_WEIGHT, p2p_read=True, p2p_write=True
            )
            for a in range(n)
            for b in range(a + 1, n)
        )
        links = tuple(
            LinkInfo(
                gpu_index=i,
                link=k,
                kind="xgmi",
                speed_gbps=XGMI_MI300X_SPEED_GBPS,
                remote_type="gpu",
                remote_gpu_index=peer,
                remote_pci_bus_id=bus[peer],
            )
            for i in range(n)
            for k, peer in enumerate(p for p in range(n) if p != i)
        )
        return Topology(paths, links, _locality(numa, MI300X_AFFINITY))
    # a single workstation GPU (rtx4090), or any single-socket node: no pairs, no links
    return Topology((), (), tuple(GpuLocality(i, RTX_AFFINITY, 0) for i in range(n)))


def _locality(numa: list[int], affinity: tuple[str, ...]) -> tuple[GpuLocality, ...]:
    return tuple(GpuLocality(i, affinity[node], node) for i, node in enumerate(numa))


class LinkReader:
    """Per-link slow-tier readings of every GPU of a node, from its topology and aggregates."""

    __slots__ = ("_gpus",)

    def __init__(self, plan: Plan, topology: Topology) -> None:
        down = {FAULTY_LINK} if plan.scenario == "faulty" else set()
        replay, recovery, crc = FAULTY_LINK_ERRORS
        self._gpus: list[_GpuLinks] = []
        for g in plan.gpus:
            ids = [link.link for link in topology.links if link.gpu_index == g.index]
            links = []
            for j, k in enumerate(ids):
                # distinct channel pairs {p, p + d} (d = 1, 2, 3) for up to 24 links, from one
                # smooth8 call per GPU: each link gets its own wiggle at a fraction of the cost
                p = j % 8
                q = (p + 1 + (j // 8) % 3) % 8
                dead = None
                if (g.index, k) in down:
                    dead = LinkSample(k, False, None, None, replay, recovery, crc)
                links.append((k, p, q, dead))
            self._gpus.append(_GpuLinks(key(plan.seed, g.index, 0x11A0), tuple(links)))

    def read(
        self, gpu_index: int, t: float, rx: float | None, tx: float | None
    ) -> tuple[LinkSample, ...]:
        """The links of one GPU at elapsed time ``t``; ``rx``/``tx`` are its aggregate rates."""
        gl = self._gpus[gpu_index]
        if not gl.links:
            return ()
        nz = smooth8(gl.noise_key, t)
        half = 0.5 * _LINK_NOISE
        weights = [0.0 if dead else 1.0 + half * (nz[p] + nz[q]) for _, p, q, dead in gl.links]
        total = sum(weights)
        rx_per = rx / total if rx is not None and total else None
        tx_per = tx / total if tx is not None and total else None
        out = []
        for (k, _, _, dead), w in zip(gl.links, weights, strict=True):
            if dead is not None:
                out.append(dead)
                continue
            out.append(
                LinkSample(
                    k,
                    True,
                    None if rx_per is None else float(round(rx_per * w)),
                    None if tx_per is None else float(round(tx_per * w)),
                    0,
                    0,
                    0,
                )
            )
        return tuple(out)
