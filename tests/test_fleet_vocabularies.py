"""The fleet view reads every exporter's vocabulary (dcgm-exporter's legacy names, the DCGM 4.7
names of dcgm-exporter 4.9, AMD's Device Metrics Exporter) in one set of units, and judges health
from each where it has the signal. Answers built here, as Prometheus returns them to the values
query (a few labels per series)."""

from __future__ import annotations

import pytest
from tests.fakes.prometheus_answers import instance, recorded_source

from gputui.core.metric_names import DCGM_FIELDS, MIB, from_base, to_base
from gputui.fleet import promql
from gputui.fleet.build import build_fleet
from gputui.fleet.client import Sample
from gputui.fleet.model import FleetNode

AT = 1_800_000_000.0
UP = [Sample({"instance": "n1:9400", "job": "gpu"}, 1)]


def series(name: str, value: float, gpu: str = "0", **labels: str) -> Sample:
    """One GPU series; ``gpu_id`` in ``labels`` stands for AMD's GPU label instead of ``gpu``."""
    where = {"gpu_id": labels.pop("gpu_id")} if "gpu_id" in labels else {"gpu": gpu}
    return Sample({"__name__": name, "instance": "n1:9400", **where, **labels}, value)


def node(*values: Sample, last_seen: list[Sample] | None = None) -> FleetNode:
    answers = {"values": list(values), "up": UP, "last_seen": last_seen or []}
    return build_fleet(answers, url="http://p:9090", time=AT).nodes[0]


# -- units -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("unit", "written", "shown"),
    [
        ("ratio", 0.73, 73.0),
        ("mib", 1.0, float(MIB)),
        ("hz", 1.98e9, 1980.0),
        ("mj", 2500.0, 2.5),
        ("uj", 4.8e14, 4.8e8),
        ("dcgm_mb_per_s", 1.0, 1024.0 * 1000.0),
        ("percent", 73.0, 73.0),
    ],
)
def test_each_unit_reads_in_gputuis_and_writes_back(
    unit: str, written: float, shown: float
) -> None:
    assert to_base(unit, written) == pytest.approx(shown)  # type: ignore[arg-type]
    assert from_base(unit, shown) == pytest.approx(written)  # type: ignore[arg-type]


def test_dcgm_47_names_read_as_the_legacy_ones_in_gputuis_units() -> None:
    legacy = node(
        series("DCGM_FI_DEV_GPU_UTIL", 73),
        series("DCGM_FI_DEV_FB_USED", 40960),
        series("DCGM_FI_DEV_FB_FREE", 40000),
        series("DCGM_FI_DEV_SM_CLOCK", 1980),
        series("DCGM_FI_DEV_POWER_USAGE", 612.5),
        series("DCGM_FI_DEV_GPU_TEMP", 67),
    )
    current = node(
        series("DCGM_FI_DEV_GPU_UTIL_RATIO", 0.73),
        series("DCGM_FI_DEV_FB_USED_BYTES", 40960 * MIB),
        series("DCGM_FI_DEV_FB_FREE_BYTES", 40000 * MIB),
        series("DCGM_FI_DEV_SM_CLOCK_HERTZ", 1.98e9),
        series("DCGM_FI_DEV_BOARD_POWER_WATTS", 612.5),
        series("DCGM_FI_DEV_GPU_TEMP_CELSIUS", 67),
    )
    a, b = legacy.gpus[0], current.gpus[0]
    assert b.util_pct == pytest.approx(73.0) and b.clock_sm_mhz == pytest.approx(1980.0)
    assert (a.memory_used_bytes, a.memory_total_bytes) == (
        b.memory_used_bytes,
        b.memory_total_bytes,
    )
    assert (a.power_w, a.temperature_c) == (b.power_w, b.temperature_c) == (612.5, 67)
    assert (legacy.naming, current.naming) == (("dcgm",), ("dcgm-4.7",))
    assert legacy.source == current.source == "dcgm"


def test_a_node_publishing_both_namings_is_read_once_in_the_exact_unit() -> None:
    both = node(
        series("DCGM_FI_DEV_FB_USED", 40960),  # whole MiB: the legacy unit rounds
        series("DCGM_FI_DEV_FB_USED_BYTES", 40960 * MIB + 123_456),
        series("DCGM_FI_DEV_GPU_UTIL", 50),
        series("DCGM_FI_DEV_GPU_UTIL_RATIO", 0.5),
        series("DCGM_FI_DEV_FB_USED", 100, gpu="1"),
        series("DCGM_FI_DEV_FB_USED_BYTES", 100 * MIB, gpu="1"),
    )
    assert both.gpu_count == 2 and both.naming == ("dcgm", "dcgm-4.7")
    assert both.gpus[0].memory_used_bytes == 40960 * MIB + 123_456
    assert both.memory_used_bytes == 40960 * MIB + 123_456 + 100 * MIB  # not twice


def test_mig_slices_sum_in_bytes_under_the_new_names() -> None:
    sliced = node(
        series("DCGM_FI_DEV_FB_USED_BYTES", 10 * 2**30, GPU_I_ID="1"),
        series("DCGM_FI_DEV_FB_USED_BYTES", 5 * 2**30, GPU_I_ID="2"),
        series("DCGM_FI_DEV_GPU_UTIL_RATIO", 0.25, GPU_I_ID="1"),
        series("DCGM_FI_DEV_GPU_UTIL_RATIO", 0.75, GPU_I_ID="2"),
    )
    gpu = sliced.gpus[0]
    assert gpu.memory_used_bytes == 15 * 2**30 and gpu.util_pct == pytest.approx(75.0)


def test_identity_and_driver_under_each_exporters_labels() -> None:
    seen = [
        Sample(
            {
                "instance": "n1:9400",
                "job": "gpu",
                "gpu": "0",
                "UUID": "GPU-1",
                "modelName": "NVIDIA H200",
                "hostname": "h200-01",
                "DCGM_FI_SYSTEM_DRIVER_VERSION": "580.95.05",
            },
            AT - 1,
        )
    ]
    nv = node(series("DCGM_FI_DEV_FB_USED_BYTES", MIB), last_seen=seen)
    assert (nv.hostname, nv.driver_version, nv.gpus[0].uuid) == ("h200-01", "580.95.05", "GPU-1")
    amd_seen = [
        Sample(
            {
                "instance": "n1:9400",
                "job": "gpu",
                "gpu_id": "0",
                "gpu_uuid": "5fff74a1",
                "card_model": "AMD Instinct MI300X OAM",
                "hostname": "mi300x-03",
                "driver_version": "6.12.12",
                "serial_number": "692251001124",
            },
            AT - 1,
        )
    ]
    amd = node(series("gpu_total_vram", 196592, gpu_id="0"), last_seen=amd_seen)
    assert (amd.hostname, amd.driver_version) == ("mi300x-03", "6.12.12")
    assert (amd.gpus[0].uuid, amd.gpus[0].name) == ("5fff74a1", "AMD Instinct MI300X OAM")
    assert amd.gpus[0].memory_total_bytes == 196592 * MIB


# -- AMD -------------------------------------------------------------------------------------------


def amd(name: str, value: float, gpu: str = "0", **labels: str) -> Sample:
    return series(name, value, gpu_id=gpu, **labels)


def test_amd_gpus_in_gputuis_units() -> None:
    mi = node(
        amd("gpu_gfx_activity", 87),
        amd("gpu_used_vram", 150112),
        amd("gpu_total_vram", 196592),
        amd("gpu_clock", 2100, clock_type="system"),
        amd("gpu_clock", 1300, clock_type="memory"),
        amd("gpu_clock", 1800, clock_type="soc"),  # not the SM clock
        amd("gpu_package_power", 698),
        amd("gpu_junction_temperature", 78),
        amd("gpu_memory_temperature", 66),
        amd("gpu_health", 1),
    )
    gpu = mi.gpus[0]
    assert (mi.source, mi.naming, mi.health) == ("amd", ("amd-dme",), "ok")
    assert gpu.util_pct == 87 and gpu.memory_used_bytes == 150112 * MIB
    assert (gpu.clock_sm_mhz, gpu.clock_memory_mhz) == (2100, 1300)
    assert gpu.power_w == 698  # the socket power when gpu_power_usage is not published
    assert gpu.temperature_c == gpu.temperature_hotspot_c == 78  # no edge sensor on MI300


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        (amd("gpu_health", 0), "the AMD exporter reports the GPU unhealthy"),
        (amd("gpu_ecc_uncorrect_total", 2), "2 uncorrectable ECC errors"),
        (amd("gpu_afid_errors", 30, severity="fatal"), "fatal RAS event (AFID 30)"),
    ],
)
def test_amd_health_signals_fail_the_gpu(extra: Sample, reason: str) -> None:
    failing = node(amd("gpu_gfx_activity", 10), amd("gpu_health", 1), extra)
    assert failing.health == "fail" and failing.reasons == (f"GPU 0: {reason}",)


def test_amd_corrected_errors_and_non_fatal_ras_do_not_fail() -> None:
    fine = node(
        amd("gpu_gfx_activity", 10),
        amd("gpu_ecc_correct_total", 12),
        amd("gpu_afid_errors", 7, severity="non_fatal_corrected"),
        amd("gpu_violation_ppt_residency_percentage", 60),  # power capping is not a fault
    )
    assert fine.health == "ok"


def test_amd_thermal_throttling_and_hot_sensors_warn() -> None:
    throttled = node(
        amd("gpu_gfx_activity", 99),
        amd("gpu_violation_socket_thermal_residency_percentage", 25),
    )
    assert throttled.health == "warn"
    assert throttled.reasons == ("GPU 0: thermally limited 25 % of the time",)
    hot_junction = node(amd("gpu_gfx_activity", 99), amd("gpu_junction_temperature", 95))
    assert hot_junction.health == "ok"  # the hotspot runs hot by design: not held to 85 °C
    hot_edge = node(amd("gpu_gfx_activity", 99), amd("gpu_edge_temperature", 86))
    assert hot_edge.health == "warn"


# -- DCGM 4.7 health -------------------------------------------------------------------------------


def test_an_xid_under_its_dcgm_47_name_fails_the_gpu() -> None:
    failing = node(series("DCGM_FI_DEV_GPU_UTIL_RATIO", 0.1), series("DCGM_FI_DEV_XID_ERROR", 48))
    assert failing.health == "fail" and failing.gpus[0].xid == 48
    assert failing.reasons[0].startswith("GPU 0: XID 48")


@pytest.mark.parametrize("name", ["DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_ROW_REMAP_FAILED"])
def test_failed_row_remapping_fails_the_gpu_in_either_naming(name: str) -> None:
    failing = node(series("DCGM_FI_DEV_FB_USED", 1), series(name, 1))
    assert failing.health == "fail"
    assert failing.reasons == ("GPU 0: row remapping failed: the GPU needs replacing",)


def test_the_temperature_limits_under_their_dcgm_47_names() -> None:
    limited = node(
        series("DCGM_FI_DEV_GPU_TEMP_CELSIUS", 85),
        series("DCGM_FI_DEV_GPU_TEMP_SLOWDOWN_CELSIUS", 95),
    )
    assert limited.health == "ok"  # warns from 90 °C on this GPU
    hot = node(
        series("DCGM_FI_DEV_GPU_TEMP_CELSIUS", 91),
        series("DCGM_FI_DEV_GPU_TEMP_SLOWDOWN_CELSIUS", 95),
    )
    assert hot.health == "warn"


def test_every_name_the_view_reads_is_in_the_one_values_query() -> None:
    values = promql.refresh_queries().values
    for field in DCGM_FIELDS:
        if field.key in promql.FLEET_KEYS:
            assert f"|{field.legacy}|" in values or f'"{field.legacy}|' in values
            assert f"|{field.current}|" in values
    for source in promql.SOURCES["clock_sm"]:
        assert source.metric in values


# -- the recorded mixed fleet ----------------------------------------------------------------------


def test_the_recorded_mixed_fleet_in_gputuis_units() -> None:
    """Answers recorded from a real Prometheus holding a dcgm-exporter 4.9 page and an AMD DME
    page (tests/data/fleet/*.prom) beside gputui and legacy dcgm-exporter nodes."""
    fleet = recorded_source()[0].refresh()
    h200, mi300x = fleet.node(instance("h200")), fleet.node(instance("mi300x"))
    assert h200 is not None and mi300x is not None
    assert (h200.source, h200.naming, h200.health) == ("dcgm", ("dcgm-4.7",), "fail")
    assert h200.gpus[0].util_pct == pytest.approx(73.0)  # 0.73 on the wire
    assert h200.gpus[0].clock_sm_mhz == pytest.approx(1980.0)  # 1.98e9 Hz
    assert h200.gpus[1].xid == 48
    assert (mi300x.source, mi300x.naming, mi300x.health) == ("amd", ("amd-dme",), "ok")
    assert mi300x.gpus[0].memory_used_bytes == 150112 * MIB  # MB on the wire
    assert mi300x.gpus[0].clock_memory_mhz == 1300
    migrating = fleet.node(instance("migrating"))
    assert migrating is not None and migrating.naming == ("dcgm", "dcgm-4.7")
    assert migrating.gpu_count == 1
