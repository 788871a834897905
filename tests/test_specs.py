"""The GPU spec table, its lookup (the name-matching traps), scaling, estimates and "what fits"."""

from __future__ import annotations

import re

import pytest

from gputui import cli
from gputui.specs import (
    PEAK_FIELDS,
    GpuSpec,
    estimate,
    load_specs,
    lookup,
    normalize_arch,
    scaled_peaks,
)
from gputui.specs.fit import (
    ASSUMPTIONS,
    FIT_CASES,
    INFERENCE_OVERHEAD,
    NODE_ASSUMPTION,
    fits,
    max_params_b,
    node_fits,
)

GIB = 1024**3


def model_of(name: str, **kw) -> str:
    match = lookup(name, **kw)
    assert match is not None, name
    return match.spec.model


# -- the data file ------------------------------------------------------------------------------


def test_every_row_loads_with_sane_values() -> None:
    specs = load_specs()
    assert len(specs) >= 45
    assert load_specs() is specs  # cached
    for s in specs:
        assert isinstance(s, GpuSpec)
        assert s.vendor in ("NVIDIA", "AMD"), s.model
        assert s.model and s.architecture and s.cc_or_gfx, s.model
        assert s.source.strip(), s.model
        assert s.memory_bw_gbs is not None and s.memory_bw_gbs > 0, s.model
        assert s.memory_gb is not None and 0 < s.memory_gb <= 400, s.model
        assert s.fp32_tflops is None or s.fp32_tflops > 0, s.model
        if s.fp16_tflops is not None and s.fp32_tflops is not None:
            assert s.fp16_tflops >= s.fp32_tflops, s.model
        if s.fp8_tflops is not None and s.bf16_tflops is not None:
            assert s.fp8_tflops >= s.bf16_tflops, s.model
        assert s.sm_count is None or 0 < s.sm_count <= 400, s.model
        assert s.pcie_gen in (3, 4, 5), s.model
        assert s.tdp_w is not None and 50 <= s.tdp_w <= 1500, s.model
        assert s.cc_or_gfx == normalize_arch(s.cc_or_gfx), s.model
        for value in (getattr(s, f) for f in PEAK_FIELDS):
            assert value is None or value > 0, s.model


def test_every_reported_name_finds_its_own_row() -> None:
    for s in load_specs():
        for name in s.names:
            match = lookup(name, sm_count=s.sm_count)
            assert match is not None and match.how == "exact", name
            assert match.spec == s, (name, match.spec.model)


def test_blank_cells_are_none() -> None:
    p100 = lookup("Tesla P100-PCIE-16GB")
    assert p100 is not None
    assert p100.spec.fp16_tflops is None and p100.spec.tf32_tflops is None
    assert lookup("NVIDIA B200").spec.boost_clock_mhz is None  # type: ignore[union-attr]


# -- the name-matching traps --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "model", "bf16"),
    [
        ("NVIDIA L4", "L4", 121),
        ("NVIDIA L40", "L40", 181.05),
        ("NVIDIA L40S", "L40S", 362.05),
        ("NVIDIA A10", "A10", 125),
        ("NVIDIA A10G", "A10G (AWS)", 70),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB", 312),
        ("NVIDIA H200", "H200 SXM 141GB", 989.5),
        ("NVIDIA H200 NVL", "H200 NVL 141GB", 835.5),
        ("NVIDIA H100 80GB HBM3", "H100 SXM5 80GB", 989.5),
        ("NVIDIA H100 PCIe", "H100 PCIe 80GB", 756),
    ],
)
def test_prefix_traps_match_the_right_sku(name: str, model: str, bf16: float) -> None:
    match = lookup(name)
    assert match is not None
    assert (match.spec.model, match.how, match.scale) == (model, "exact", 1.0)
    assert match.spec.bf16_tflops == bf16


def test_h100_80gb_hbm3_is_the_sxm_part() -> None:
    spec = lookup("NVIDIA H100 80GB HBM3").spec  # type: ignore[union-attr]
    assert spec.form_factor == "SXM"
    assert (spec.sm_count, spec.memory_bw_gbs, spec.tdp_w) == (132, 3350, 700)


def test_h20_is_its_own_row_not_an_h200() -> None:
    match = lookup("NVIDIA H20", sm_count=78, clock_mhz=1980, compute_capability="9.0")
    assert match is not None and (match.spec.model, match.how, match.scale) == ("H20", "exact", 1.0)
    s = match.spec
    assert (s.memory_gb, s.memory_type, s.memory_bw_gbs) == (96, "HBM3", 4000)
    peaks = (s.fp32_tflops, s.tf32_tflops, s.bf16_tflops, s.fp16_tflops, s.fp8_tflops)
    assert peaks == (44, 74, 148, 148, 296)
    assert (s.tdp_w, s.sm_count, s.cc_or_gfx, s.pcie_gen, s.link_gbs) == (400, 78, "9.0", 5, 900)
    assert s.architecture.startswith("Hopper") and "https://" in s.source
    # The H20-3e (HBM3e, other memory) is not the 96 GB row; an H20 is never an H200.
    assert lookup("NVIDIA H20-3e") is None
    assert model_of("NVIDIA H20 MIG 1g.12gb", sm_count=78) == "H20"


# Every H100 / H200 / H20 name string in the reference (and the China variants that must not
# match an H100 row), with MIG-style suffixes checking the longest-pattern lookup.
H100_FAMILY = [
    ("NVIDIA H100 80GB HBM3", "H100 SXM5 80GB"),
    ("NVIDIA H100", "H100 SXM5 80GB"),
    ("NVIDIA H100 PCIe", "H100 PCIe 80GB"),
    ("NVIDIA H100 NVL", "H100 NVL 94GB"),
    ("NVIDIA H200", "H200 SXM 141GB"),
    ("NVIDIA H200 NVL", "H200 NVL 141GB"),
    ("NVIDIA H20", "H20"),
]


@pytest.mark.parametrize(("name", "model"), H100_FAMILY)
def test_h100_h200_h20_names(name: str, model: str) -> None:
    match = lookup(name)
    assert match is not None and (match.spec.model, match.how) == (model, "exact"), name
    assert model_of(name.lower()) == model
    mig = lookup(f"{name} MIG 1g.10gb")
    assert mig is not None and (mig.spec.model, mig.how) == (model, "pattern"), name


def test_plain_h100_is_the_sxm_row_and_china_variants_match_no_h100() -> None:
    assert lookup("NVIDIA H100").spec == lookup("NVIDIA H100 80GB HBM3").spec  # type: ignore[union-attr]
    for name in ("NVIDIA H800", "NVIDIA H800 PCIe", "NVIDIA H800 NVL", "NVIDIA H20-3e"):
        assert lookup(name) is None, name


def test_rtx_5090_peaks_are_dense_fp32_accumulate() -> None:
    s = lookup("NVIDIA GeForce RTX 5090").spec  # type: ignore[union-attr]
    # FP8 419, not 838 (the FP16-accumulate rate): the same rule as its FP16/BF16 209.5.
    assert (s.fp8_tflops, s.fp16_tflops, s.bf16_tflops, s.tf32_tflops) == (419, 209.5, 209.5, 104.8)
    assert s.int8_tops == 838  # INT8 accumulates in INT32: full rate
    assert s.fp8_tflops == 2 * s.bf16_tflops  # type: ignore[operator]
    # The per-SM rates of CC 12.0 follow the same rule (and reproduce the 5090's row).
    rates = {"sm_count": 170, "clock_mhz": 2407, "compute_capability": "12.0"}
    again = estimate("NVIDIA GeForce RTX 50x0", **rates)  # type: ignore[arg-type]
    assert again is not None and again.spec.fp8_tflops == pytest.approx(419, abs=0.1)
    assert again.spec.bf16_tflops == pytest.approx(209.5, abs=0.1)


def test_gh200_memory_is_the_hbm_not_the_number_in_the_name() -> None:
    for name in ("NVIDIA GH200 480GB", "NVIDIA GH200 120GB"):
        spec = lookup(name).spec  # type: ignore[union-attr]
        assert spec.memory_gb == 96
        assert spec.memory_type == "HBM3"


def test_case_and_whitespace_do_not_matter() -> None:
    assert model_of("  nvidia   l40s ") == "L40S"
    assert (
        model_of("AMD Radeon Pro W7900") == model_of("amd radeon PRO w7900") == "Radeon PRO W7900"
    )
    assert lookup("") is None and lookup("   ") is None


def test_longest_pattern_wins_on_word_boundaries() -> None:
    mig = lookup("NVIDIA L40S MIG-like suffix")
    assert mig is not None and mig.how == "pattern" and mig.spec.model == "L40S"
    # A pattern never matches inside a longer word: "NVIDIA L4" is not in "NVIDIA L40G".
    assert lookup("NVIDIA L40G") is None
    assert lookup("NVIDIA A10M") is None


def test_excluded_variants_are_not_the_base_card() -> None:
    assert lookup("NVIDIA GeForce RTX 4090 D") is None
    assert lookup("NVIDIA GeForce RTX 4090 Laptop GPU") is None
    assert lookup("NVIDIA GeForce RTX 3090 Ti") is None
    assert model_of("NVIDIA GeForce RTX 4090") == "GeForce RTX 4090"


def test_mi250x_and_mi250_told_apart_by_cu_count() -> None:
    for name in ("AMD Instinct MI250X / MI250", "AMD Instinct MI250X", "AMD Instinct MI250X/MI250"):
        x = lookup(name, sm_count=110)
        plain = lookup(name, sm_count=104)
        assert x is not None and plain is not None
        assert x.spec.model.startswith("Instinct MI250X (per GCD")
        assert plain.spec.model.startswith("Instinct MI250 (per GCD")
        assert (x.scale, plain.scale) == (1.0, 1.0)
        assert (x.spec.bf16_tflops, plain.spec.bf16_tflops) == (191.5, 181.0)
    # Without a CU count: the per-GCD MI250X (what one torch device is), never the whole OAM.
    assert model_of("AMD Instinct MI250X").startswith("Instinct MI250X (per GCD")


def test_mi300x_virtual_function_is_an_mi300x() -> None:
    assert model_of("AMD Instinct MI300X VF") == "Instinct MI300X"


# -- MIG slices and partitions ------------------------------------------------------------------


def test_mig_slice_scales_compute_by_sm_share() -> None:
    match = lookup("NVIDIA H100 80GB HBM3 MIG 1g.10gb", sm_count=16)
    assert match is not None and match.how == "pattern"
    assert match.spec.model == "H100 SXM5 80GB"
    assert match.scale == pytest.approx(16 / 132)
    assert "16 of 132 SMs" in match.note and "MIG" in match.note
    peaks = scaled_peaks(match)
    assert peaks["bf16_tflops"] == pytest.approx(989.5 * 16 / 132)
    assert peaks["fp8_tflops"] == pytest.approx(1979 * 16 / 132)
    assert peaks["memory_bw_gbs"] == 3350  # not scaled
    assert match.spec.memory_gb == 80


def test_exact_name_with_fewer_sms_is_scaled_too() -> None:
    match = lookup("NVIDIA H100 80GB HBM3", sm_count=16)
    assert match is not None and match.how == "exact"
    assert match.scale == pytest.approx(16 / 132)


def test_amd_cpx_partition_scales_by_cu_share() -> None:
    match = lookup("AMD Instinct MI300X", sm_count=38)
    assert match is not None and match.scale == pytest.approx(38 / 304)
    assert "partition" in match.note and "CUs" in match.note
    assert scaled_peaks(match)["bf16_tflops"] == pytest.approx(1307.4 / 8)


def test_whole_gpu_is_not_scaled() -> None:
    match = lookup("NVIDIA H100 80GB HBM3", sm_count=132)
    assert match is not None and match.scale == 1.0
    assert scaled_peaks(match)["bf16_tflops"] == 989.5
    assert scaled_peaks(match)["tf32_tflops"] == 494.5


# -- estimates for unknown SKUs -----------------------------------------------------------------


def test_unknown_sku_is_estimated_from_sms_clock_and_arch() -> None:
    match = lookup("NVIDIA Future GPU", sm_count=132, clock_mhz=1830, compute_capability="sm_90")
    assert match is not None and match.how == "estimated"
    assert "estimated" in match.note and match.spec.source == "estimated"
    # 132 SMs x 1830 MHz x 4096 FLOP/clk = the H100 SXM's dense BF16 sheet value.
    assert match.spec.bf16_tflops == pytest.approx(989.5, rel=0.001)
    assert match.spec.fp8_tflops == pytest.approx(2 * 989.5, rel=0.001)
    assert match.spec.memory_gb is None and match.spec.memory_bw_gbs is None


def test_estimate_for_amd_gfx_target_and_geforce() -> None:
    amd = lookup("AMD Instinct MI3xx", sm_count=304, clock_mhz=2100, compute_capability="gfx942")
    assert amd is not None and amd.how == "estimated"
    assert amd.spec.bf16_tflops == pytest.approx(1307.4, rel=0.001)
    assert amd.spec.vendor == "AMD"
    geforce = estimate(
        "NVIDIA GeForce RTX 4080", sm_count=76, clock_mhz=2505, compute_capability="8.9"
    )
    assert geforce is not None
    assert geforce.spec.bf16_tflops == pytest.approx(76 * 2505e6 * 512 / 1e12, abs=0.1)


def test_unknown_sku_without_enough_facts_is_none() -> None:
    assert lookup("NVIDIA Future GPU") is None
    assert lookup("NVIDIA Future GPU", sm_count=100, clock_mhz=1500) is None
    assert (
        lookup("NVIDIA Future GPU", sm_count=100, clock_mhz=1500, compute_capability="1.0") is None
    )


@pytest.mark.parametrize(
    ("text", "arch"),
    [
        ("9.0", "9.0"),
        ("sm_90", "9.0"),
        ("90", "9.0"),
        ("100", "10.0"),
        ("gfx942:sramecc+:xnack-", "gfx942"),
    ],
)
def test_normalize_arch(text: str, arch: str) -> None:
    assert normalize_arch(text) == arch


# -- what fits ----------------------------------------------------------------------------------


def test_fit_formula() -> None:
    rows = {r.label: r for r in fits(80 * GIB, 40 * GIB)}
    assert list(rows) == [label for label, _, _ in FIT_CASES]
    fp16 = rows["FP16 inference"]
    assert fp16.bytes_per_param == 2 and fp16.overhead == INFERENCE_OVERHEAD == 0.2
    assert fp16.total_b == pytest.approx(80 * GIB / (2 * 1.2) / 1e9)
    assert fp16.total_b == pytest.approx(35.79, abs=0.01)
    assert fp16.free_b == pytest.approx(fp16.total_b / 2)
    # 80 GB (decimal) at FP16 with 20% overhead: the familiar "about 33B".
    assert fits(80e9, 80e9)[0].total_b == pytest.approx(33.33, abs=0.01)
    assert rows["FP8 inference"].total_b == pytest.approx(2 * fp16.total_b)
    assert rows["INT8 inference"].total_b == rows["FP8 inference"].total_b
    assert rows["INT4 inference"].total_b == pytest.approx(4 * fp16.total_b)
    train = rows["training (Adam)"]
    assert train.bytes_per_param == 16
    assert train.total_b == pytest.approx(80 * GIB / (16 * 1.2) / 1e9)
    assert train.bytes_per_param_with_overhead == pytest.approx(19.2)


def test_fit_edge_cases_and_node() -> None:
    assert all(r.total_b == 0 and r.free_b == 0 for r in fits(0, -1))
    assert max_params_b(1e9, 1.0, 0.0) == 1.0
    node = node_fits([(80 * GIB, 70 * GIB)] * 8)
    one = fits(80 * GIB, 70 * GIB)
    for n, o in zip(node, one, strict=True):
        assert n.total_b == pytest.approx(8 * o.total_b)
        assert n.free_b == pytest.approx(8 * o.free_b)
    assert node_fits([]) == fits(0, 0)
    assert "sharded" in NODE_ASSUMPTION
    assert any("16 bytes" in a for a in ASSUMPTIONS) and any("20%" in a for a in ASSUMPTIONS)


# -- gputui specs -------------------------------------------------------------------------------


def test_cli_specs_table(capsys) -> None:
    assert cli.main(["specs"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["model", "arch", "SMs/CUs"]
    assert len(lines) == len(load_specs()) + 2
    assert any(line.startswith("H100 SXM5 80GB") and "989.5" in line for line in lines)


def test_cli_specs_one_row(capsys) -> None:
    assert cli.main(["specs", "NVIDIA H100 80GB HBM3"]) == 0
    out = capsys.readouterr().out
    assert "H100 SXM5 80GB" in out
    assert "exact" in out and "scale 1" in out
    assert "989.5 TFLOPS" in out and "3350 GB/s" in out
    assert "source" in out and "nvidia.com" in out


def test_cli_specs_accepts_every_model_name_it_prints(capsys) -> None:
    assert cli.main(["specs"]) == 0
    lines = capsys.readouterr().out.splitlines()[1:-1]
    models = [re.split(r" {2,}", line)[0] for line in lines]
    assert models == [s.model for s in load_specs()]
    for spec, model in zip(load_specs(), models, strict=True):
        for typed in (model, model.upper(), model.lower(), f"{spec.vendor} {model}"):
            assert cli.main(["specs", typed]) == 0, typed
            out = capsys.readouterr().out
            assert out.startswith(f"model         {spec.vendor} {spec.model}"), typed


@pytest.mark.parametrize(
    ("typed", "model"),
    [
        ("H100 SXM", "H100 SXM5 80GB"),
        ("h100 sxm", "H100 SXM5 80GB"),
        ("H100 NVL", "H100 NVL 94GB"),
        ("NVIDIA H100 SXM5 80GB", "H100 SXM5 80GB"),
        ("nvidia h100 pcie 80gb", "H100 PCIe 80GB"),
        ("AMD Instinct MI250X (whole OAM, 2 GCDs)", "Instinct MI250X (whole OAM, 2 GCDs)"),
        ("mi300x", "Instinct MI300X"),
        ("b200", "B200 (HGX/DGX)"),
        ("NVIDIA H100", "H100 SXM5 80GB"),
        ("NVIDIA H100 80GB HBM3", "H100 SXM5 80GB"),
    ],
)
def test_cli_specs_accepts_model_names_and_driver_names(typed: str, model: str, capsys) -> None:
    assert cli.main(["specs", typed]) == 0, typed
    head = capsys.readouterr().out.splitlines()[0]
    assert f" {model} (" in head, head


def test_cli_specs_ambiguous_model_name_lists_the_rows(capsys) -> None:
    assert cli.main(["specs", "h100"]) == 2
    err = capsys.readouterr().err
    assert "matches 3 rows" in err
    for model in ("H100 PCIe 80GB", "H100 SXM5 80GB", "H100 NVL 94GB"):
        assert model in err


def test_cli_specs_unknown_name(capsys) -> None:
    assert cli.main(["specs", "NVIDIA H10"]) == 2
    err = capsys.readouterr().err
    assert "no spec for 'NVIDIA H10'" in err
    assert "NVIDIA H200" in err  # a close name


# -- host links that are not PCIe ---------------------------------------------------------------


def test_grace_hopper_has_its_nvlink_c2c_host_link(capsys) -> None:
    """GH200: NVLink-C2C 900 GB/s CPU<->GPU both ways (GH200 datasheet), 450 per direction; the
    host link data names only models of the spec table."""
    from gputui.specs.hostlinks import host_link_for, load_host_links

    assert set(load_host_links()) <= {s.model for s in load_specs()}
    for name in ("NVIDIA GH200 480GB", "NVIDIA GH200 144G HBM3e"):
        match = lookup(name)
        assert match is not None
        link = host_link_for(match.spec.model)
        assert link is not None and link.link == "nvlink-c2c" and link.gbs_per_direction == 450
    assert (
        host_link_for("H100 SXM5 80GB") is None
        and host_link_for("GB200 (per Blackwell GPU)") is None
    )
    assert cli.main(["specs", "NVIDIA GH200 480GB"]) == 0
    assert "nvlink-c2c 450 GB/s per direction" in capsys.readouterr().out


# -- names as a person types them ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "model"),
    [
        ("rtx4090", "GeForce RTX 4090"),
        ("RTX4090", "GeForce RTX 4090"),
        ("geforce-rtx-4090", "GeForce RTX 4090"),
        ("nvidia_geforce_rtx_4090", "GeForce RTX 4090"),
        ("A100-SXM4 80GB", "A100 SXM4 80GB"),
        ("7900xtx", "Radeon RX 7900 XTX"),
    ],
)
def test_cli_specs_finds_names_as_people_type_them(typed: str, model: str, capsys) -> None:
    assert cli.main(["specs", typed]) == 0, typed
    head = capsys.readouterr().out.splitlines()[0]
    assert f" {model} (" in head, head


def test_a100_80gb_lists_both_of_its_rows_and_fails(capsys) -> None:
    """Two rows are an A100 80GB (SXM4 and PCIe): both listed, with what tells them apart, and
    the command fails rather than pick one."""
    assert cli.main(["specs", "A100 80GB"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert lines[0] == (
        "gputui: 'A100 80GB' matches 2 rows of the spec table; give more of the name, one of:"
    )
    assert lines[1].split("  ")[1] == "A100 SXM4 80GB" and "SXM" in lines[1]
    assert lines[2].split("  ")[1] == "A100 PCIe 80GB" and "PCIe" in lines[2]
    assert "108 SMs · 80 GB HBM2e" in lines[1]
    for chosen in ("A100 SXM4 80GB", "a100 pcie 80gb"):  # each of them named finds its row
        assert cli.main(["specs", chosen]) == 0


def test_typed_names_compare_as_whole_words() -> None:
    from gputui.specs.query import search, words

    assert words("NVIDIA GeForce RTX4090-D") == ("rtx", "4090", "d")
    assert words("AMD Instinct MI300X", brands=True) == ("amd", "instinct", "mi", "300", "x")
    assert [s.model for s in search("H10")] == []  # not H100
    assert [s.model for s in search("rtx 4090 laptop")] == []  # a word the row lacks
    assert [s.model for s in search("h100 nvl")] == ["H100 NVL 94GB"]
    assert len(search("h100")) == 3 and search("") == search("---") == []
    # A row named exactly so wins over those that only contain the name.
    for typed, model in (
        ("L40", "L40"),
        ("a10", "A10"),
        ("t4", "Tesla T4"),
        ("mi300", "Instinct MI300X"),
    ):
        assert [s.model for s in search(typed)] == [model], typed
