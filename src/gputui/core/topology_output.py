"""``gputui topo --json``: the connection matrix as dataclasses the codec writes
(``docs/topo-schema.md``): matrix codes (rows in ``gpus`` order), every pair with its detail and
P2P support, the legend of the codes present, CPU locality, PCIe and per-link state. The field
order of each class is the order of the keys in the output."""

from __future__ import annotations

from gputui.core.frozen import frozen
from gputui.core.model import GpuPath, NodeInfo, Snapshot
from gputui.core.topology import (
    LinkRow,
    all_link_rows,
    build_matrix,
    legend_for,
    link_bytes_per_s,
    locality_text,
    pcie_text,
)


@frozen
class TopoPair:
    """One pair of GPUs (``a < b`` in ``gpus`` order): its matrix cell and the path the backend
    reported (None where it reported none)."""

    a: int
    b: int
    code: str
    kind: str
    detail: str
    pcie_level: str | None
    link_type: str | None
    hops: int | None
    weight: int | None
    p2p_read: bool | None
    p2p_write: bool | None


@frozen
class TopoLegend:
    code: str
    meaning: str


@frozen
class TopoLocality:
    gpu: int
    cpu_affinity: str | None
    numa_node: int | None


@frozen
class TopoPcie:
    gpu: int
    gen: int | None
    width: int | None
    max_gen: int | None
    max_width: int | None
    gpu_max_gen: int | None
    below_max: bool


@frozen
class TopoLink:
    gpu: int
    link: int
    kind: str
    state: str | None
    version: int | None
    speed_gbps: float | None
    speed_bytes_per_s: float | None
    remote: str
    rx_bytes_per_s: float | None
    tx_bytes_per_s: float | None
    replay_errors: int | None
    recovery_errors: int | None
    crc_errors: int | None


@frozen
class TopologyOutput:
    """The ``gputui topo --json`` object."""

    hostname: str
    backend: str
    timestamp: float | None
    discovered: bool
    gpus: tuple[int, ...]
    matrix: tuple[tuple[str, ...], ...]
    pairs: tuple[TopoPair, ...]
    legend: tuple[TopoLegend, ...]
    locality: tuple[TopoLocality, ...]
    pcie: tuple[TopoPcie, ...]
    links: tuple[TopoLink, ...]


def _link(r: LinkRow) -> TopoLink:
    state = "up" if r.up else ("down" if r.up is False else ("unused" if r.unused else None))
    return TopoLink(
        gpu=r.gpu_index,
        link=r.link,
        kind=r.kind,
        state=state,
        version=r.version,
        speed_gbps=r.speed_gbps,
        speed_bytes_per_s=link_bytes_per_s(r.speed_gbps),
        remote=r.remote,
        rx_bytes_per_s=r.rx_bytes_per_s,
        tx_bytes_per_s=r.tx_bytes_per_s,
        replay_errors=r.replay_errors,
        recovery_errors=r.recovery_errors,
        crc_errors=r.crc_errors,
    )


def topology_output(node: NodeInfo, snapshot: Snapshot | None = None) -> TopologyOutput:
    """The wiring of ``node``, with the link and PCIe state of ``snapshot`` (None: unknown)."""
    matrix = build_matrix(node)
    gpus = matrix.gpus
    topo = node.topology
    pairs = []
    for i, a in enumerate(gpus):
        for b in gpus[i + 1 :]:
            cell = matrix.cell(a, b)
            path = (topo.path(a, b) if topo is not None else None) or GpuPath(a, b)
            pairs.append(
                TopoPair(
                    a=a,
                    b=b,
                    code=cell.code,
                    kind=cell.kind,
                    detail=cell.detail,
                    pcie_level=path.pcie_level,
                    link_type=path.link_type,
                    hops=path.hops,
                    weight=path.weight,
                    p2p_read=path.p2p_read,
                    p2p_write=path.p2p_write,
                )
            )
    locality = []
    pcie = []
    for g in sorted(node.gpus, key=lambda g: g.index):
        cpus, numa = locality_text(node, g.index)
        locality.append(
            TopoLocality(
                gpu=g.index,
                cpu_affinity=None if cpus == "N/A" else cpus,
                numa_node=None if numa == "N/A" else int(numa),
            )
        )
        sample = snapshot.sample(g.index) if snapshot is not None else None
        pcie.append(
            TopoPcie(
                gpu=g.index,
                gen=sample.pcie_gen if sample else None,
                width=sample.pcie_width if sample else None,
                max_gen=g.pcie_max_gen,
                max_width=g.pcie_max_width,
                gpu_max_gen=g.pcie_gpu_max_gen,
                below_max=pcie_text(g, sample)[1],
            )
        )
    return TopologyOutput(
        hostname=node.hostname,
        backend=node.backend,
        timestamp=snapshot.timestamp if snapshot is not None else None,
        discovered=topo is not None,
        gpus=gpus,
        matrix=tuple(tuple(matrix.cell(a, b).code for b in gpus) for a in gpus),
        pairs=tuple(pairs),
        legend=tuple(TopoLegend(code, meaning) for code, meaning in legend_for(matrix)),
        locality=tuple(locality),
        pcie=tuple(pcie),
        links=tuple(_link(r) for r in all_link_rows(node, snapshot)),
    )


__all__ = [
    "TopoLegend",
    "TopoLink",
    "TopoLocality",
    "TopoPair",
    "TopoPcie",
    "TopologyOutput",
    "topology_output",
]
