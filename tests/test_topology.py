"""The connection matrix and ``gputui topo``: notation, legend, link rows, text and JSON, end to
end on the simulated nodes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gputui import cli
from gputui.backends import NoBackend
from gputui.core.codec import encode
from gputui.core.model import (
    GpuInfo,
    GpuLocality,
    GpuPath,
    GpuSample,
    LinkInfo,
    LinkSample,
    NodeInfo,
    Snapshot,
    Topology,
)
from gputui.core.topology import (
    LEGEND,
    Cell,
    LinkRow,
    Matrix,
    build_matrix,
    legend_for,
    level_code,
    link_kind_text,
    link_rows,
    render_text,
)
from gputui.core.topology_output import topology_output

T = 1_700_000_000.0


def gpu(index: int, vendor: str = "nvidia", **kw: Any) -> GpuInfo:
    return GpuInfo(
        index=index,
        name="GPU",
        uuid=f"GPU-{index}",
        vendor=vendor,  # type: ignore[arg-type]
        pcie_max_gen=5,
        pcie_max_width=16,
        **kw,
    )


def node(n: int, topology: Topology | None, vendor: str = "nvidia") -> NodeInfo:
    gpus = tuple(gpu(i, vendor) for i in range(n))
    return NodeInfo(hostname="h", backend="test", gpus=gpus, topology=topology)


def switch_links(g: int, n: int = 18) -> tuple[LinkInfo, ...]:
    return tuple(
        LinkInfo(
            gpu_index=g,
            link=i,
            kind="nvlink",
            version=4,
            speed_gbps=200.0,
            remote_type="switch",
            remote_pci_bus_id=f"0000:0{i % 4 + 5}:00.0",
        )
        for i in range(n)
    )


def pcie_node() -> NodeInfo:
    paths = (
        GpuPath(0, 1, pcie_level="PIX", p2p_read=True, p2p_write=True),
        GpuPath(0, 2, pcie_level="NODE", p2p_read=True, p2p_write=False),
        GpuPath(1, 2, pcie_level="SYS", p2p_read=False, p2p_write=False),
    )
    locality = (
        GpuLocality(0, "0-15", 0),
        GpuLocality(1, "0-15", 0),
        GpuLocality(2, "16-31", 1),
    )
    return node(3, Topology(paths=paths, locality=locality))


# -- notation ----------------------------------------------------------------------------------


def test_level_to_code() -> None:
    assert [level_code(v) for v in (10, 20, 30, 40, 50)] == ["PIX", "PXB", "PHB", "NODE", "SYS"]
    assert level_code(0) == "PIX"  # two GPUs on one board (K80) read as PIX in nvidia-smi
    assert level_code(35) == "?" and level_code(None) == "?"


def test_direct_nvlinks_count_per_pair() -> None:
    links = (
        *(LinkInfo(0, i, "nvlink", remote_type="gpu", remote_gpu_index=1) for i in range(4)),
        *(LinkInfo(1, i, "nvlink", remote_type="gpu", remote_gpu_index=0) for i in range(4)),
        *(LinkInfo(1, 4 + i, "nvlink", remote_type="gpu", remote_gpu_index=2) for i in range(2)),
        # GPU 2 could not read its remote ends: GPU 1's side still counts
        *(LinkInfo(2, i, "nvlink", remote_type=None) for i in range(2)),
    )
    paths = (GpuPath(0, 1, pcie_level="SYS"), GpuPath(0, 2, pcie_level="PHB"), GpuPath(1, 2))
    m = build_matrix(node(3, Topology(paths=paths, links=links)))
    assert m.cell(0, 1) == Cell("NV4", "nvlink", "4 bonded NVLinks (direct); PCIe SYS")
    assert m.cell(1, 2).code == "NV2"
    assert m.cell(0, 2) == Cell("PHB", "pcie", "PCIe through a PCIe host bridge (the CPU)")
    assert m.codes() == ["X", "PHB", "NV4", "NV2"]


def test_nvswitch_count_is_the_smaller_side() -> None:
    links = switch_links(0) + switch_links(1) + switch_links(2, n=12)
    paths = (GpuPath(0, 1, pcie_level="NODE"), GpuPath(0, 2, pcie_level="SYS"), GpuPath(1, 2))
    m = build_matrix(node(3, Topology(paths=paths, links=links)))
    assert m.cell(0, 1).code == "NV18"  # NVLink takes precedence over the PCIe level
    assert m.cell(0, 1).detail == "18 bonded NVLinks (via NVSwitch); PCIe NODE"
    assert m.cell(0, 2).code == m.cell(1, 2).code == "NV12"


def test_matrix_is_symmetric_with_x_on_the_diagonal() -> None:
    m = build_matrix(pcie_node())
    assert m.gpus == (0, 1, 2)
    for a in m.gpus:
        assert m.cell(a, a) == Cell("X", "self", "the GPU itself")
        for b in m.gpus:
            assert m.cell(a, b) == m.cell(b, a)
    assert isinstance(m, Matrix)


def test_pcie_only_node() -> None:
    m = build_matrix(pcie_node())
    assert (m.cell(0, 1).code, m.cell(0, 2).code, m.cell(2, 1).code) == ("PIX", "NODE", "SYS")
    assert {m.cell(a, b).kind for a in m.gpus for b in m.gpus if a != b} == {"pcie"}
    assert m.cell(1, 2).detail == "PCIe across NUMA nodes (SMP interconnect)"
    assert m.codes() == ["X", "SYS", "NODE", "PIX"]


def test_no_topology_is_unknown_except_the_diagonal() -> None:
    m = build_matrix(node(2, None))
    assert m.cell(0, 0).code == "X" and m.cell(0, 1) == Cell("?", "unknown", m.cell(0, 1).detail)
    # a pair the backend did not report is unknown too
    assert build_matrix(node(2, Topology())).cell(1, 0).code == "?"


def test_amd_xgmi_codes_with_hops_and_weight() -> None:
    paths = (
        GpuPath(0, 1, link_type="xgmi", hops=1, weight=15),
        GpuPath(0, 2, link_type="xgmi", hops=2, weight=30),
        GpuPath(1, 2, link_type="pcie", hops=3, weight=40),
    )
    m = build_matrix(node(3, Topology(paths=paths), vendor="amd"))
    assert m.cell(1, 0) == Cell("XGMI", "xgmi", "XGMI, 1 hop, weight 15")
    assert m.cell(0, 2) == Cell("XGMI2h", "xgmi", "XGMI, 2 hops, weight 30")
    assert m.cell(2, 1) == Cell("PCIE", "pcie", "PCIe, 3 hops, weight 40")
    assert m.codes() == ["X", "XGMI", "XGMI2h", "PCIE"]
    assert [code for code, _ in legend_for(m)] == ["X", "XGMI", "XGMI#h", "PCIE"]


def test_legend_lists_only_present_codes_in_nvidia_smi_words() -> None:
    legend = dict(LEGEND)
    assert legend["NV#"] == "Connection traversing a bonded set of # NVLinks"
    assert legend["PIX"] == "Connection traversing at most a single PCIe bridge"
    assert legend["X"] == "Self"
    assert [c for c, _ in legend_for(build_matrix(pcie_node()))] == ["X", "SYS", "NODE", "PIX"]
    switched = node(2, Topology(links=switch_links(0) + switch_links(1)))
    assert [c for c, _ in legend_for(build_matrix(switched))] == ["X", "NV#"]


# -- links -------------------------------------------------------------------------------------


def test_link_rows_join_state_and_rates_by_link_number() -> None:
    links = (
        LinkInfo(0, 0, "nvlink", 4, 200.0, "gpu", 3),
        LinkInfo(0, 1, "nvlink", 4, 200.0, "switch", None, "0000:05:00.0"),
        LinkInfo(0, 2, "nvlink", 4, 200.0, "cpu"),
        LinkInfo(1, 0, "nvlink", 4, 200.0, "gpu", 0),
    )
    n = node(2, Topology(links=links))
    readings = (
        LinkSample(1, up=False, replay_errors=5, recovery_errors=1, crc_errors=2),
        LinkSample(0, up=True, rx_bytes_per_s=1e9, tx_bytes_per_s=2e9, replay_errors=0),
    )
    sample = GpuSample(index=0, timestamp=T, links=readings)
    rows = link_rows(n, sample)
    assert [r.link for r in rows] == [0, 1, 2]
    assert rows[0] == LinkRow(0, 0, "nvlink", True, 4, 200.0, "GPU 3", 1e9, 2e9, 0, None, None)
    assert rows[1].up is False and rows[1].remote == "NVSwitch 0000:05:00.0"
    assert (rows[1].replay_errors, rows[1].recovery_errors, rows[1].crc_errors) == (5, 1, 2)
    assert rows[2].remote == "CPU" and rows[2].up is None  # not in this reading
    # not read: state unknown; no sample: the links of every GPU (or the one asked for)
    unread = link_rows(n, GpuSample(index=0, timestamp=T, links=None))
    assert [r.up for r in unread] == [None, None, None]
    assert len(link_rows(n, None)) == 4 and len(link_rows(n, None, gpu_index=1)) == 1
    assert link_rows(node(1, None), GpuSample(index=0, timestamp=T, links=())) == []


# -- text and JSON -----------------------------------------------------------------------------


def dgx_like() -> tuple[NodeInfo, Snapshot]:
    n = 4
    paths = tuple(
        GpuPath(
            a, b, pcie_level="NODE" if a // 2 == b // 2 else "SYS", p2p_read=True, p2p_write=True
        )
        for a in range(n)
        for b in range(a + 1, n)
    )
    locality = tuple(GpuLocality(g, "0-55" if g < 2 else "56-111", g // 2) for g in range(n))
    links = tuple(x for g in range(n) for x in switch_links(g))
    info = node(n, Topology(paths=paths, links=links, locality=locality))
    samples = []
    for g in range(n):
        readings = tuple(
            LinkSample(i, up=not (g == 1 and i == 7), rx_bytes_per_s=1e9, tx_bytes_per_s=1e9)
            for i in range(18)
        )
        slow = dict(pcie_gen=3, pcie_width=8) if g == 3 else dict(pcie_gen=5, pcie_width=16)
        samples.append(GpuSample(index=g, timestamp=T, links=readings, **slow))
    return info, Snapshot(timestamp=T, node=info, gpus=tuple(samples))


def test_render_text_layout() -> None:
    info, snapshot = dgx_like()
    text = render_text(info, snapshot)
    lines = text.splitlines()
    header = next(line for line in lines if line.lstrip().startswith("GPU0"))
    assert header.split() == ["GPU0", "GPU1", "GPU2", "GPU3", "CPU", "Affinity", "NUMA", "Affinity"]
    row1 = lines[lines.index(header) + 2].split()
    assert row1 == ["GPU1", "NV18", "X", "NV18", "NV18", "0-55", "0"]
    assert "Legend:" in text and "NV# = Connection traversing a bonded set of # NVLinks" in text
    assert "PIX" not in text.split("Legend:")[1].split("PCIe link")[0]  # only codes present
    assert "GPU3  Gen3 x8 / max Gen5 x16  (below max)" in text
    assert "GPU0  Gen5 x16 / max Gen5 x16\n" in text
    assert "P2P read/write: OK between all pairs" in text
    assert "GPU0  18/18 up" in text and "GPU1  17/18 up — link 7 DOWN" in text


def test_render_text_pcie_only_with_mixed_p2p() -> None:
    text = render_text(pcie_node())
    assert "GPU2  NODE  SYS   X     16-31" in text
    assert "P2P read/write (OK both" in text and "RO" in text and "NS" in text
    assert "links:" not in text  # no NVLink / XGMI section
    assert "GPU0  n/a / max Gen5 x16" in text  # no reading: current unknown


def test_single_gpu_says_so_with_its_affinity() -> None:
    text = render_text(node(1, Topology(locality=(GpuLocality(0, "0-31", 0),))))
    assert "1 GPU: no GPU-to-GPU paths to show" in text
    assert "GPU0  0-31" in text and "Legend:" not in text


def test_no_topology_says_so_plainly() -> None:
    text = render_text(node(2, None))
    assert "Topology not discovered by the test backend" in text
    assert "PCIe link (current / max):" in text


def test_json_shape() -> None:
    info, snapshot = dgx_like()
    data = json.loads(json.dumps(encode(topology_output(info, snapshot))))
    assert data["gpus"] == [0, 1, 2, 3] and data["discovered"] is True
    assert data["matrix"][0] == ["X", "NV18", "NV18", "NV18"]
    assert {e["code"] for e in data["legend"]} == {"X", "NV#"}
    pair = data["pairs"][0]
    assert (pair["a"], pair["b"], pair["code"], pair["pcie_level"]) == (0, 1, "NV18", "NODE")
    assert pair["p2p_read"] is True and pair["kind"] == "nvlink"
    assert data["locality"][2] == {"gpu": 2, "cpu_affinity": "56-111", "numa_node": 1}
    assert data["pcie"][3]["below_max"] is True and data["pcie"][0]["below_max"] is False
    down = [x for x in data["links"] if x["state"] == "down"]
    assert [(x["gpu"], x["link"]) for x in down] == [(1, 7)]
    assert len(data["links"]) == 4 * 18 and data["links"][0]["rx_bytes_per_s"] == 1e9
    assert encode(topology_output(node(2, None)))["matrix"] == [["X", "?"], ["?", "X"]]


def test_link_kind_text_is_per_link_gb_per_s_for_both_vendors() -> None:
    assert link_kind_text("nvlink", 4, 212.496) == "NVLink 4, 26.6 GB/s per link each way"
    assert link_kind_text("nvlink", 4, 200.0) == "NVLink 4, 25 GB/s per link each way"
    assert link_kind_text("xgmi", None, 512.0) == "XGMI, 64 GB/s per link each way"
    assert link_kind_text("nvlink", 3, None) == "NVLink 3"


def test_render_text_names_the_link_generation_and_per_link_speed() -> None:
    info, snapshot = dgx_like()
    text = render_text(info, snapshot)
    assert "GPU0  18/18 up  (NVLink 4, 25 GB/s per link each way)" in text
    xgmi = tuple(
        LinkInfo(g, k, "xgmi", None, 512.0, "gpu", 1 - g) for g in range(2) for k in range(2)
    )
    paths = (GpuPath(0, 1, link_type="xgmi", hops=1, weight=15),)
    amd = node(2, Topology(paths=paths, links=xgmi), vendor="amd")
    assert "GPU1  2 links (state not read)  (XGMI, 64 GB/s per link each way)" in render_text(amd)


def test_json_links_carry_the_decoded_version_and_per_link_speed() -> None:
    info, snapshot = dgx_like()
    link = encode(topology_output(info, snapshot))["links"][0]
    assert (link["version"], link["speed_gbps"]) == (4, 200.0)
    assert link["speed_bytes_per_s"] == 25e9  # one link, one direction


def test_pcie_names_the_gpus_own_maximum_when_the_host_limits_it() -> None:
    gpus = (
        GpuInfo(0, "GPU", "GPU-0", "nvidia", pcie_max_gen=4, pcie_max_width=16, pcie_gpu_max_gen=5),
        GpuInfo(1, "GPU", "GPU-1", "nvidia", pcie_max_gen=5, pcie_max_width=16, pcie_gpu_max_gen=5),
    )
    n = NodeInfo(hostname="h", backend="test", gpus=gpus, topology=Topology())
    samples = tuple(GpuSample(index=i, timestamp=T, pcie_gen=4 + i, pcie_width=16) for i in (0, 1))
    text = render_text(n, Snapshot(timestamp=T, node=n, gpus=samples))
    assert "GPU0  Gen4 x16 / max Gen4 x16 (the GPU supports Gen5)\n" in text  # not below max
    assert "GPU1  Gen5 x16 / max Gen5 x16\n" in text
    pcie = encode(topology_output(n, Snapshot(timestamp=T, node=n, gpus=samples)))["pcie"]
    assert [(p["max_gen"], p["gpu_max_gen"], p["below_max"]) for p in pcie] == [
        (4, 5, False),
        (5, 5, False),
    ]


# -- gputui topo -------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["topo"], ["topo", "--json"]])
def test_topo_without_a_gpu_exits_2(monkeypatch, capsys, argv) -> None:
    def refuse(spec: str = "auto", *, seed: int = 0, **_options: object):
        raise NoBackend([("NVML", "libnvidia-ml.so.1 not found (no NVIDIA driver)")])

    monkeypatch.setattr("gputui.backends.open_backend", refuse)
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and "no usable GPU" in err and "gputui --demo" in err


@pytest.mark.parametrize(
    "argv", [["topo", "--backend", "sim:dgx-h100"], ["--demo", "topo"], ["topo", "--demo"]]
)
def test_topo_on_the_dgx_h100_demo(capsys, argv) -> None:
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert out.count("NV18") == 8 * 7 and "NUMA Affinity" in out
    assert "GPU0  18/18 up" in out
    assert "GPU0  18/18 up  (NVLink 4, 26.6 GB/s per link each way)" in out


def test_topo_json_on_the_demo_nodes_reads_per_link_speeds_alike(capsys) -> None:
    speeds = {}
    for scenario in ("dgx-h100", "mi300x"):
        assert cli.main(["topo", "--json", "--backend", f"sim:{scenario}"]) == 0
        links = json.loads(capsys.readouterr().out)["links"]
        speeds[scenario] = {(x["kind"], x["version"], x["speed_bytes_per_s"]) for x in links}
    assert speeds["dgx-h100"] == {("nvlink", 4, 212.5e9 / 8)}  # 26.56 GB/s per link
    assert speeds["mi300x"] == {("xgmi", None, 64e9)}


def test_topo_json_on_the_faulty_node_shows_the_down_link(capsys) -> None:
    assert cli.main(["topo", "--json", "--backend", "sim:faulty"]) == 0
    data = json.loads(capsys.readouterr().out)
    down = [(x["gpu"], x["link"]) for x in data["links"] if x["state"] == "down"]
    assert down == [(1, 7)]
    assert next(p for p in data["pcie"] if p["gpu"] == 6)["below_max"] is True


@pytest.mark.parametrize(
    ("scenario", "expect"),
    [
        ("a100-pcie", ["GPU0  X     SYS", "SYS = Connection traversing PCIe as well as the SMP"]),
        ("rtx4090", ["1 GPU: no GPU-to-GPU paths to show"]),
        ("mi300x", ["GPU0  X     XGMI", "XGMI = ", "XGMI links:"]),
    ],
)
def test_topo_on_other_sim_nodes(capsys, scenario, expect) -> None:
    assert cli.main(["topo", "--backend", f"sim:{scenario}"]) == 0
    out = capsys.readouterr().out
    for text in expect:
        assert text in out
    if scenario == "mi300x":
        assert build_matrix_codes(scenario) == {"X", "XGMI"}


def build_matrix_codes(scenario: str) -> set[str]:
    from gputui.backends import open_backend

    backend, info = open_backend(f"sim:{scenario}")
    try:
        return set(build_matrix(info).codes())
    finally:
        backend.close()
