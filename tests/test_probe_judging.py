"""How probe results are judged: GPU pairs by their own wiring (NVSwitch, direct links, PCIe),
PCIe against the link's maximum, expected fractions per family with their sources (and the
README's table of them), and the judgement text every result carries."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gputui.core.codec import encode
from gputui.core.model import GpuInfo, GpuPath, LinkInfo, NodeInfo, Snapshot, Topology
from gputui.probe import pairs as P
from gputui.probe import runner as R
from gputui.probe import verdict as V
from gputui.probe.output import result_output
from gputui.probe.protocol import Result
from gputui.probe.report import finish_judging, judge_result, render_table
from gputui.specs import load_specs
from gputui.specs.expected import (
    DEFAULT_EXPECTED,
    EXPECTED,
    FAMILY_LABELS,
    FORM_EXPECTED,
    FORM_LABELS,
    METRICS,
    MODEL_EXPECTED,
    Expected,
    expected_for,
    family_of,
    form_of,
)

ROOT = Path(__file__).resolve().parents[1]


def _gpu(i: int, name: str = "NVIDIA H100 80GB HBM3", vendor: str = "nvidia") -> GpuInfo:
    return GpuInfo(
        index=i,
        name=name,
        uuid=f"GPU-{i}",
        vendor=vendor,  # type: ignore[arg-type]
        pci_bus_id=f"0000:{0x18 + i:02x}:00.0",
        sm_clock_max_mhz=1980,
        power_default_limit_w=700,
        pcie_max_gen=5,
        pcie_max_width=16,
    )


def _nvswitch(n: int = 2, links: int = 18, speed: float = 212.5, version: int = 4) -> Topology:
    return Topology(
        paths=tuple(GpuPath(a, b, pcie_level="SYS") for a in range(n) for b in range(a + 1, n)),
        links=tuple(
            LinkInfo(i, k, "nvlink", version, speed, remote_type="switch")
            for i in range(n)
            for k in range(links)
        ),
    )


H100_NODE = NodeInfo("n", "nvml", (_gpu(0), _gpu(1)), topology=_nvswitch())


def _p2p(value: float, peer: int) -> Result:
    return Result("p2p", value, "GB/s", "copy", {"peer": peer})


# -- pair budgets ------------------------------------------------------------------------------


def test_nvswitch_pair_is_min_links_times_payload_rate() -> None:
    spec = P.pair_spec(H100_NODE, 0, 1)
    assert spec.gbs == pytest.approx(450.0)  # 18 x 26.5625 GB/s x 25/26.5625
    assert "NVSwitch: min(18, 18) links" in spec.source and "25/26.5625" in spec.source
    assert pytest.approx(0.941, abs=1e-3) == P.NVLINK_PAYLOAD_SHARE
    # One GPU with fewer switch links limits the pair.
    topo = _nvswitch()
    fewer = Topology(
        topo.paths, tuple(x for x in topo.links if not (x.gpu_index == 1 and x.link >= 12))
    )
    node = NodeInfo("n", "nvml", H100_NODE.gpus, topology=fewer)
    assert P.pair_spec(node, 0, 1).gbs == pytest.approx(12 * 25.0)
    # NVLink 3 (A100): the published per-link rate is the signalling rate.
    a100 = NodeInfo("n", "nvml", H100_NODE.gpus, topology=_nvswitch(links=12, speed=200, version=3))
    assert P.pair_spec(a100, 0, 1).gbs == pytest.approx(300.0)


def test_direct_links_count_only_the_links_between_the_two() -> None:
    """A full XGMI mesh (MI300X): one 64 GB/s link per pair, not the GPU's 448 GB/s total."""
    n = 4
    links = tuple(
        LinkInfo(i, k, "xgmi", None, 512.0, remote_type="gpu", remote_gpu_index=peer)
        for i in range(n)
        for k, peer in enumerate(p for p in range(n) if p != i)
    )
    paths = tuple(
        GpuPath(a, b, link_type="xgmi", hops=1) for a in range(n) for b in range(a + 1, n)
    )
    gpus = tuple(_gpu(i, "AMD Instinct MI300X", "amd") for i in range(n))
    node = NodeInfo("n", "amdsmi", gpus, topology=Topology(paths, links))
    spec = P.pair_spec(node, 0, 3)
    assert spec.gbs == pytest.approx(64.0) and "1 direct XGMI link" in spec.source
    judged = judge_result(0, "GPU 0", _p2p(55.0, 3), node)
    assert judged.spec == pytest.approx(64.0) and judged.verdict == V.OK  # 86% of 64 vs 80%


def test_pcie_pair_and_unknown_wiring() -> None:
    topo = Topology(paths=(GpuPath(0, 1, pcie_level="PIX"),))
    node = NodeInfo("n", "nvml", H100_NODE.gpus, topology=topo)
    spec = P.pair_spec(node, 0, 1)
    assert spec.metric == "pcie" and spec.gbs == pytest.approx(63.0, rel=1e-3)
    assert "over PCIe via PIX" in spec.source
    bare = NodeInfo("n", "nvml", H100_NODE.gpus)  # topology None: right after a deferred open
    judged = judge_result(0, "GPU 0", _p2p(100.0, 1), bare)
    assert judged.spec is None and judged.verdict == V.NA
    assert "not judged" in judged.judgement and "wiring is not known" in judged.judgement
    unknown_peer = judge_result(0, "GPU 0", Result("p2p", 100.0, "GB/s", "copy", {}), H100_NODE)
    assert unknown_peer.verdict == V.NA and "destination GPU is not known" in unknown_peer.judgement


def test_pairs_are_compared_only_with_pairs_wired_alike() -> None:
    """GPUs 0-1 share NVSwitch, GPU 2 reaches them over PCIe: the PCIe pair is not LOW for being
    slower than the NVLink pair, and a pair with unknown wiring is compared with none."""
    topo = _nvswitch()
    topo = Topology(
        (*topo.paths, GpuPath(0, 2, pcie_level="PXB"), GpuPath(1, 2, pcie_level="PXB")),
        topo.links,
    )
    node = NodeInfo("n", "nvml", (_gpu(0), _gpu(1), _gpu(2)), topology=topo)
    judged = [
        judge_result(0, "GPU 0", _p2p(390.0, 1), node),
        judge_result(1, "GPU 1", _p2p(385.0, 0), node),
        judge_result(2, "GPU 2", _p2p(52.0, 0), node),
    ]
    finish_judging(judged, node)
    assert [j.verdict for j in judged] == [V.OK, V.OK, V.OK]
    assert judged[2].spec == pytest.approx(63.0, rel=1e-3) and judged[2].sibling_gap is None
    slow = [
        judge_result(0, "GPU 0", _p2p(390.0, 1), node),
        judge_result(1, "GPU 1", _p2p(300.0, 0), node),
    ]
    finish_judging(slow, node)
    assert slow[1].verdict == V.LOW and "below the node's best GPU" in slow[1].judgement
    assert V.describe(slow[1]).startswith("P2P copy to GPU 0 23% below its siblings")


def test_the_probe_takes_the_wiring_from_the_snapshot() -> None:
    """A deferred open leaves NodeInfo.topology None until the first reading: the node comes
    from the snapshot the probe is given."""
    bare = NodeInfo("n", "nvml", H100_NODE.gpus)
    snap = Snapshot(0.0, H100_NODE, (), ())
    assert R.node_of(bare, snap).topology is not None
    assert R.node_of(H100_NODE, Snapshot(0.0, bare, (), ())).topology is not None
    assert R.node_of(bare, None) is bare


# -- PCIe host copies --------------------------------------------------------------------------


def test_pcie_is_judged_against_the_links_maximum_not_its_trained_width() -> None:
    """A link that trained to x8 makes the copy slow; judging it against x8 would hide that."""
    tel = V.Telemetry(samples=3, pcie_gen=5, pcie_width=8)
    judged = judge_result(0, "GPU 0", Result("h2d", 27.0, "GB/s", "copy", {}), H100_NODE, tel)
    assert judged.spec == pytest.approx(63.0, rel=1e-3) and "link's maximum" in judged.spec_source
    assert judged.verdict == V.LOW
    assert "PCIe link at gen5 x8 during the test (it should train to gen5 x16)" in judged.reasons


# -- the judgement in words --------------------------------------------------------------------


def test_every_result_says_how_it_was_measured_and_judged() -> None:
    res = Result("matmul_bf16", 700.0, "TFLOPS", "torch.mm BF16 …; median of 20 batches", {})
    judged = judge_result(0, "GPU 0", res, H100_NODE)
    text = judged.judgement
    assert "spec 989.5 TFLOPS" in text and "H100 SXM5 80GB" in text
    assert "expected 72% of spec for H100 SXM5 80GB" in text
    assert "measured: gputui's probe on an H100 SXM5" in text and "580.159.04" in text
    assert "= 712.4 TFLOPS" in text and "OK >= 641.2" in text and "WARN >= 570" in text
    assert "LOW below" in text
    assert judged.how.startswith("torch.mm BF16") and "; judged: spec 989" in judged.how
    assert encode(result_output(judged))["judgement"] == text
    assert "judged: spec 989" in render_table([judged])
    assert "how measured and judged" in render_table([judged]).splitlines()[0]
    cpu = judge_result(None, "CPU", res, None)
    assert cpu.verdict == V.NA and cpu.judgement == "not judged: CPU run, no spec to compare with"


def test_an_assumed_fraction_says_so_and_a_missing_one_is_not_judged() -> None:
    h200 = NodeInfo("n", "nvml", (_gpu(0, "NVIDIA H200"),))
    res = Result("matmul_fp32", 50.0, "TFLOPS", "m", {})
    fp32 = judge_result(0, "GPU 0", res, h200)
    assert "(assumed, no measurement behind it: " in fp32.judgement
    assert fp32.expected_assumed is True and encode(result_output(fp32))["expected_assumed"] is True
    mi300 = NodeInfo("n", "amdsmi", (_gpu(0, "AMD Instinct MI300X", "amd"),))
    bf16 = judge_result(0, "GPU 0", Result("matmul_bf16", 600.0, "TFLOPS", "m", {}), mi300)
    assert bf16.expected == 0.45 and bf16.verdict == V.OK  # untuned: 46% of 1307 is healthy
    assert bf16.expected_assumed is False and "(measured: MAMF MI300X" in bf16.judgement
    tf32 = judge_result(0, "GPU 0", Result("matmul_tf32", 300.0, "TFLOPS", "m", {}), mi300)
    assert tf32.expected == 0.45 and "assumed, no measurement" in tf32.judgement
    none = Expected(None, "not judged: nothing published")
    assert V.verdict_for(300.0, 653.7, none.fraction) == V.NA
    assert V.explain(tf32, none).endswith("; not judged: nothing published")


# -- the expectations table --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arch", "cc", "family"),
    [
        ("Hopper (GH100)", "9.0", "hopper"),
        ("Ampere (GA100)", "8.0", "ampere"),
        ("Ampere (GA102)", "8.6", "ampere-ga10x"),  # A10 / A40 / 3090: not A100's numbers
        ("Blackwell (GB202)", "12.0", "default"),  # RTX 5090: not B200's numbers
        ("Blackwell (GB100/B200 dual-die)", "10.0", "blackwell"),
        ("unknown (9.0)", "9.0", "hopper"),  # an estimated spec still finds its family
        ("CDNA3", "gfx942", "cdna3"),
        ("Ada Lovelace (AD102)", "8.9", "ada"),
        ("Turing (TU102)", "7.5", "default"),
    ],
)
def test_families_by_compute_capability(arch: str, cc: str, family: str) -> None:
    assert family_of(arch, cc) == family
    assert family_of(arch) == family  # the name alone says the same


def test_every_expectation_names_its_evidence() -> None:
    tables = [*EXPECTED.values(), *FORM_EXPECTED.values(), *MODEL_EXPECTED.values()]
    assert set(EXPECTED) <= set(FAMILY_LABELS) and set(FORM_EXPECTED) == set(FORM_LABELS)
    assert {m for m in MODEL_EXPECTED} <= {s.model for s in load_specs()}
    for table in tables:
        for metric, exp in table.items():
            assert metric in METRICS and exp.source
            assert exp.fraction is None or 0.3 <= exp.fraction <= 0.95
    assert set(DEFAULT_EXPECTED) == set(METRICS)


def _docs_table() -> dict[str, list[str]]:
    text = (ROOT / "docs" / "probe.md").read_text(encoding="utf-8")
    section = text[text.index("## Expected share of spec") : text.index("### Sources")]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 1 + len(METRICS) and not cells[0].startswith(("boards", "---")):
            rows[cells[0]] = cells[1:]
    return rows


def _scopes() -> dict[str, tuple[str, str, str]]:
    """Every row the docs must show: label -> (family, form factor, model)."""
    out = {label: (fam, "", "") for fam, label in FAMILY_LABELS.items()}
    out.update({label: (fam, form, "") for (fam, form), label in FORM_LABELS.items()})
    for model in MODEL_EXPECTED:
        (spec,) = [s for s in load_specs() if s.model == model]
        out[model] = (
            family_of(spec.architecture, spec.cc_or_gfx),
            form_of(spec.form_factor),
            model,
        )
    return out


def test_the_docs_list_the_expected_fractions_the_code_uses() -> None:
    """docs/probe.md holds the table of expected shares (per model, board form factor and
    family, ``*`` for an assumed one): it says what the code does."""
    rows = _docs_table()
    scopes = _scopes()
    assert set(rows) == set(scopes)
    for label, (fam, form, model) in scopes.items():
        for metric, cell in zip(METRICS, rows[label], strict=True):
            exp = expected_for(fam, metric, form=form, model=model)
            if exp.fraction is None:
                want = "—"  # not judged
            else:
                want = f"{100 * exp.fraction:.0f}%" + ("" if exp.measured else "*")
            assert re.sub(r"\s+", "", cell) == want, (label, metric)


def test_a_copy_without_peer_access_is_not_judged_as_a_link() -> None:
    res = Result("p2p", 20.0, "GB/s", "copy", {"peer": 1, "peer_access": False})
    judged = judge_result(0, "GPU 0", res, H100_NODE)
    assert judged.spec is None and judged.verdict == V.NA
    assert "no peer access between GPU 0 and GPU 1" in judged.judgement
    assert "through host memory" in judged.judgement
