"""Every fact in its place at every size: what a GPU panel keeps when it is short of room (the
temperature of a failing GPU, MIG, NVLink rates beside a degraded PCIe link), MIG instances
instead of an empty utilization, AMD's words and sensors."""

from __future__ import annotations

import dataclasses

import pytest
from tests.factories import GIB, info, sample
from tests.fakes.clock import FakeClock

from gputui.backends.sim import SimBackend
from gputui.core.model import GpuInfo, GpuSample, LinkSample, MigDeviceInfo, MigSample, Severity
from gputui.engine.sampler import Sampler
from gputui.engine.session import sampler_for
from gputui.tui.app import GpuTuiApp
from gputui.tui.widgets.gpu_panel import GpuPanel

pytestmark = pytest.mark.usefixtures("tui_env")


def panel_lines(
    gpu: GpuInfo,
    reading: GpuSample,
    width: int,
    height: int,
    *,
    health: Severity | None = None,
    form: str = "auto",
) -> list[str]:
    """What a GPU panel ``width`` × ``height`` draws for one reading (no app needed)."""
    panel = GpuPanel(gpu)
    panel.sample = reading
    panel.health = health
    panel.form = form
    return ["".join(text for text, _ in line) for line in panel.build_lines(width, height)]


def hot_gpu() -> tuple[GpuInfo, GpuSample]:
    """GPU 5 in thermal slowdown: 91 °C against an 89 °C slowdown, its memory over its limit."""
    gpu = info(5, temperature_memory_limit_c=95.0)
    reading = sample(
        5,
        temperature_gpu_c=91.0,
        temperature_memory_c=96.0,
        power_w=320.0,
        throttle_reasons=frozenset({"hw_thermal", "sw_thermal"}),
    )
    return gpu, reading


def mig_gpu() -> tuple[GpuInfo, GpuSample]:
    """An H100 in MIG mode: two 3g.40gb and one 1g.10gb instance; no GPU utilization (NVML
    reports none in MIG mode)."""
    nvml = "NVIDIA H100 80GB HBM3 MIG "
    slices = tuple(
        MigDeviceInfo(0, gi, 0, f"MIG-{gi}", nvml + name, total * GIB, sms)
        for gi, name, total, sms in (
            (1, "3g.40gb", 40, 60),
            (2, "3g.40gb", 40, 60),
            (7, "1g.10gb", 10, 16),
        )
    )
    gpu = info(0, mig_enabled=True, mig_devices=slices, memory_total_bytes=80 * GIB)
    reading = sample(
        0,
        utilization_gpu_pct=None,
        memory_used_bytes=40 * GIB,
        memory_free_bytes=40 * GIB,
        power_w=300.0,
        mig_devices=(
            MigSample("MIG-1", 5 * GIB, 40 * GIB),
            MigSample("MIG-2", 25 * GIB, 40 * GIB),
            MigSample("MIG-7", int(9.5 * GIB), 10 * GIB),
        ),
    )
    return gpu, reading


def mi300x() -> tuple[GpuInfo, GpuSample]:
    """An MI300X: no edge sensor, so its GPU temperature is the junction's (with its limit)."""
    gpu = info(
        0,
        name="AMD Instinct MI300X",
        vendor="amd",
        temperature_slowdown_c=100.0,
        temperature_hotspot_limit_c=100.0,
        temperature_memory_limit_c=95.0,
    )
    reading = sample(
        0,
        temperature_gpu_c=67.0,
        temperature_hotspot_c=67.0,
        temperature_memory_c=57.0,
        power_w=217.0,
        power_limit_w=750.0,
        nvlink_rx_bytes_per_s=51.8e9,
        nvlink_tx_bytes_per_s=52.0e9,
    )
    return gpu, reading


# -- 80 columns: what a compact row keeps ---------------------------------------------------------


def test_a_hot_failing_gpu_keeps_its_temperature_and_the_badge_word_gives_way() -> None:
    gpu, reading = hot_gpu()
    (row,) = panel_lines(gpu, reading, 80, 1, health="fail")
    assert "91°C!" in row  # marked, so it reads without colour too
    assert "✖" in row and "fail" not in row  # the badge's symbol stays, its word went first
    assert "HW thermal!" in row and "(h)" in row  # the other faults, counted where cut


def test_the_badge_word_gives_way_before_the_power_and_a_readable_fault_before_both() -> None:
    ecc = sample(
        2,
        power_w=421.0,
        ecc_volatile_uncorrected=1,
        ecc_aggregate_uncorrected=1,
        remapped_rows_pending=True,
    )
    (row,) = panel_lines(info(2), ecc, 80, 1, health="fail")
    assert row.rstrip().endswith("421/700W  60°C ✖ ECC! reset!")  # "fail" went, power stayed
    link = sample(1, power_w=402.0, links=(LinkSample(0, up=True), LinkSample(7, up=False)))
    (row,) = panel_lines(info(1), link, 80, 1, health="fail")
    assert "60°C ✖ fail 1 link down!" in row and "402/700W" not in row  # words over a number


def test_a_mig_gpu_says_mig_in_its_compact_row() -> None:
    gpu, reading = mig_gpu()
    (row,) = panel_lines(gpu, reading, 80, 1)
    assert row.startswith("0 H100    MIG 2×3g.40gb")
    assert "n/a" not in row  # no empty utilization bar


# -- MIG: the instances instead of an empty utilization -------------------------------------------


def test_a_framed_mig_panel_lists_its_instances_where_utilization_was() -> None:
    gpu, reading = mig_gpu()
    lines = panel_lines(gpu, reading, 100, 6)
    first = lines[1]
    assert first.startswith("│ MIG g1 5.00/40.0G  g2 25.0/40.0G  g7 9.50/10.0G")
    assert not any("n/a" in line for line in lines[1:3])
    assert "MIG 2×3g.40gb 1×1g.10gb" in lines[-1]  # the profiles, in the bottom edge


def test_mig_charts_show_one_row_per_instance_and_no_empty_utilization_chart() -> None:
    gpu, reading = mig_gpu()
    lines = panel_lines(gpu, reading, 100, 14, form="charts")
    text = "\n".join(lines)
    rows = [line for line in lines if line.startswith(("│ g1 ", "│ g2 ", "│ g7 "))]
    assert [row.split()[1:3] for row in rows] == [
        ["g1", "3g.40gb"],
        ["g2", "3g.40gb"],
        ["g7", "1g.10gb"],
    ]
    assert "5.00/40.0G" in rows[0] and "9.50/10.0G" in rows[2] and "▕" in rows[0]
    assert "GPU utilization %" not in text and "GPU %" not in text
    assert "Memory used %" in text and "Power W" in text


def test_many_mig_instances_share_rows_so_the_charts_keep_their_height() -> None:
    nvml = "NVIDIA H100 80GB HBM3 MIG 1g.10gb"
    slices = tuple(MigDeviceInfo(0, 7 + i, 0, f"MIG-{i}", nvml, 10 * GIB) for i in range(7))
    gpu = info(0, mig_enabled=True, mig_devices=slices, memory_total_bytes=80 * GIB)
    reading = sample(
        0,
        utilization_gpu_pct=None,
        mig_devices=tuple(MigSample(f"MIG-{i}", i * GIB, 10 * GIB) for i in range(7)),
    )
    lines = panel_lines(gpu, reading, 100, 11, form="charts")
    rows = [line for line in lines if line.startswith("│ g")]
    assert len(rows) == 2  # seven instances in two rows, side by side
    assert all(f"g{7 + i} " in "".join(rows) for i in range(7))
    assert any("Memory used %" in line for line in lines)  # and a chart still fits


def test_a_roomy_mig_panel_has_instance_rows_with_memory_bars() -> None:
    gpu, reading = mig_gpu()
    lines = panel_lines(gpu, reading, 120, 24)
    text = "\n".join(lines)
    rows = [line for line in lines if line.startswith("│ MIG") and " GI " in line]
    assert len(rows) == 3 and all("▕" in row for row in rows)
    assert "MIG       2×3g.40gb 1×1g.10gb  (no GPU utilization)" in text
    assert "GPU utilization %" not in text


# -- links: a degraded PCIe link leaves the NVLink rates in view ----------------------------------


def test_a_degraded_pcie_link_does_not_push_out_the_nvlink_rates() -> None:
    gpu = info(6)
    reading = sample(
        6,
        utilization_gpu_pct=61.0,
        pcie_gen=3,
        pcie_width=8,
        pcie_rx_bytes_per_s=790e6,
        pcie_tx_bytes_per_s=17.5e6,
        nvlink_rx_bytes_per_s=580e6,
        nvlink_tx_bytes_per_s=590e6,
    )
    lines = panel_lines(gpu, reading, 56, 6)
    links = lines[4]
    assert "PCIe 3×8" in links and "NVL ↓580MB/s ↑590MB/s" in links
    assert "PCIe 3×8/5×16" in lines[-1]  # the maximum, in the fault list of the bottom edge


# -- AMD ------------------------------------------------------------------------------------------


def test_an_mi300x_shows_its_junction_temperature_once() -> None:
    gpu, reading = mi300x()
    lines = panel_lines(gpu, reading, 60, 6)
    temps = lines[3]
    assert temps.count("67°C") == 1 and "hot 67°C" in temps and "mem 57°C" in temps
    roomy = "\n".join(panel_lines(gpu, reading, 120, 24))
    assert roomy.count("67°C") == 2  # the Temp row once, and the chart's current value
    assert "hotspot 67°C" in roomy


def test_an_mi300x_at_its_junction_limit_is_one_fault_not_two() -> None:
    gpu, reading = mi300x()
    hot = dataclasses.replace(reading, temperature_gpu_c=101.0, temperature_hotspot_c=101.0)
    bottom = panel_lines(gpu, hot, 120, 6)[-1]
    assert bottom.count("101°C") == 1


def test_amd_links_are_spelled_xgmi() -> None:
    gpu, reading = mi300x()
    text = "\n".join(panel_lines(gpu, reading, 70, 6) + panel_lines(gpu, reading, 120, 24))
    assert "XGMI ↓51.8GB/s" in text and "XGMI      ↓51.8GB/s" in text
    assert "xGMI" not in text


def test_the_ecc_badge_says_uncorrected_errors_in_words() -> None:
    gpu = info(2)
    reading = sample(2, ecc_volatile_uncorrected=3, ecc_aggregate_uncorrected=5)
    bottom = panel_lines(gpu, reading, 80, 6)[-1]
    assert "ECC 3 uncorr." in bottom and "3/5" not in bottom


# -- the dashboard at 80x24 -----------------------------------------------------------------------


def judged_sampler(scenario: str, polls: int) -> Sampler:
    """The simulated node as ``gputui --backend sim:SCENARIO`` runs it: health judged."""
    clock = FakeClock()
    backend = SimBackend(scenario, seed=0)
    sampler = sampler_for(backend, backend.open(), clock=clock)
    for _ in range(polls):
        sampler.poll()
        clock.now += 1.0
    return sampler


def screen_text(app: GpuTuiApp) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def test_faulty_node_at_80x24_keeps_temperatures_and_flags() -> None:
    app = GpuTuiApp(judged_sampler("faulty", 30), start_sampler=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        rows = {i: app.dashboard.panels[i].plain_lines[0] for i in range(8)}
    assert "°C!" in rows[5] and "HW thermal!" in rows[5]  # the thermal fault's temperature
    assert "°C" in rows[1] and "1 link down!" in rows[1]
    assert all("°C" in rows[i] for i in range(8) if i != 3)  # every GPU that answers


async def test_a_mig_node_at_80x24_says_mig_on_its_mig_gpus() -> None:
    app = GpuTuiApp(judged_sampler("mig", 5), start_sampler=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        rows = [app.dashboard.panels[i].plain_lines[0] for i in range(8)]
    assert all(row[10:].startswith("MIG ") for row in rows[:7])
    assert "n/a" not in "".join(rows)
    assert "MIG" not in rows[7]  # GPU 7 is whole
