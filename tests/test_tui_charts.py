"""History charts: time buckets, scales, time axes, layouts, and what a tick repaints."""

from __future__ import annotations

import math

import pytest

from gputui.tui.app import GpuTuiApp
from gputui.tui.messages import SnapshotReady
from gputui.tui.widgets.charts import (
    Chart,
    bucket_seconds,
    bucketed,
    chart_area,
    chart_block,
    chart_grid,
    fmt_ago,
    nice_ceiling,
    sample_interval,
    time_axis,
)
from gputui.tui.widgets.line_widget import PLOT_UTIL, changed_spans

pytestmark = pytest.mark.usefixtures("tui_env")

T0 = 1_700_000_000.0
UTIL = Chart("util", "GPU utilization %", "GPU %", "50%", PLOT_UTIL, 0.0, 100.0, "100")


def plain(line: list[tuple[str, str]]) -> str:
    return "".join(text for text, _ in line)


def test_buckets_are_clock_aligned_means_with_gaps_left_blank() -> None:
    stamps = [T0 + i for i in range(25)]  # T0 is a multiple of 10
    values = [float(i) for i in range(25)]
    values[12] = math.nan  # an unknown reading is left out of its bucket's mean
    out = bucketed(stamps, values, 4, 10.0)
    assert math.isnan(out[0])  # before the first reading: no data, not 0
    assert out[1] == pytest.approx(4.5)  # 0..9
    assert out[2] == pytest.approx(sum(v for v in range(10, 20) if v != 12) / 9)
    assert out[3] == pytest.approx(22.0)  # 20..24, the bucket being filled, on the right
    assert all(math.isnan(v) for v in bucketed([], [], 3, 10.0))


def test_bucket_size_covers_two_minutes_at_least_one_reading_each() -> None:
    assert bucket_seconds(18, 1.0) == 10  # 18 columns: 3 minutes
    assert bucket_seconds(53, 1.0) == 3
    assert bucket_seconds(190, 1.0) == 1
    assert bucket_seconds(190, 2.0) == 2  # never shorter than the interval
    assert bucket_seconds(100, 1.0, window_s=0) == 1
    assert sample_interval([T0, T0 + 0.5, T0 + 1.0]) == 0.5
    assert sample_interval([T0]) == 1.0


def test_time_axis_labels_round_times_ago_and_now() -> None:
    axis = time_axis(18, 10.0)
    assert axis.endswith("now") and "-2m" in axis and len(axis) == 18
    axis = time_axis(53, 3.0)
    assert axis.startswith("-2m30s") and axis.endswith("now")
    # Each label is centred under its column: -1m is 20 columns of 3 s left of "now".
    assert axis.index("-1m ") + 1 == 53 - 1 - 20
    assert time_axis(4, 10.0) == " now"
    assert (fmt_ago(45), fmt_ago(120), fmt_ago(150), fmt_ago(5400)) == (
        "-45s",
        "-2m",
        "-2m30s",
        "-1h30m",
    )


def test_nice_ceiling() -> None:
    assert [nice_ceiling(x) for x in (0.7, 1, 1.2, 2.6, 275, 3.3e9)] == [
        0.8,
        1,
        1.5,
        3,
        300,
        4e9,
    ]
    assert nice_ceiling(0) == 1 and nice_ceiling(math.nan) == 1


def test_chart_block_has_title_scale_plot_and_time_axis() -> None:
    values = [math.nan] * 10 + [50.0] * 8
    lines = [plain(line) for line in chart_block(UTIL, values, 22, 7, 10.0)]
    assert len(lines) == 7 and all(len(line) == 22 for line in lines)
    assert lines[0].startswith("GPU utilization %") and lines[0].endswith("50%")
    assert lines[1].startswith("100▕") and lines[5].startswith("  0▕")
    # 50 % of five rows: the bottom two rows full, half of the middle one, the top two empty.
    assert lines[1][4:].strip() == "" and lines[2][4:].strip() == ""
    assert lines[3][4:].strip() == "▄" * 8 and lines[5][4:].strip() == "█" * 8
    assert lines[3][4:14] == " " * 10  # no data before the first reading: blank, not 0
    assert lines[6].endswith("now") and "-2m" in lines[6]
    narrow = [plain(line) for line in chart_block(UTIL, values, 18, 4, 10.0)]
    assert narrow[0].startswith("GPU %")  # the short title when the long one does not fit


def test_chart_grid_prefers_the_widest_plots_that_stay_tall_enough() -> None:
    assert chart_grid(4, 95, 7) == (4, 1)  # 200x60, eight GPUs: four in a row
    assert chart_grid(4, 116, 18) == (2, 2)  # one GPU at 120x40: two by two
    assert chart_grid(4, 196, 38) == (1, 4)  # one GPU, very big terminal: stacked
    assert chart_grid(4, 50, 4) is None
    lines = chart_area([UTIL] * 4, 95, 7, lambda metrics, cols: ([[50.0] * cols] * 4, 10.0))
    assert len(lines) == 7 and plain(lines[0]).count("GPU utilization %") == 4
    # Too small for four: the first two.
    lines = chart_area([UTIL] * 4, 40, 6, lambda metrics, cols: ([[50.0] * cols] * 2, 10.0))
    assert plain(lines[0]).count("GPU %") == 2


async def test_panels_at_200x60_have_four_charts_each(sim_sampler) -> None:
    sampler = sim_sampler("dgx-h100", polls=200)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        assert app.dashboard.layout_choice.mode == "charts"
        for panel in app.dashboard.panels.values():
            text = "\n".join(panel.plain_lines)
            for title in ("GPU utilization %", "Memory used %", "Power W", "Temperature °C"):
                assert title in text
            assert "100▕" in text and "700▕" in text and "now" in text and "-2m" in text


async def test_a_tick_inside_a_bucket_repaints_only_the_newest_column(sim_sampler) -> None:
    """The charts' columns are clock-aligned buckets: until a bucket fills, a new reading
    changes only the newest column of each chart (and the numbers), never the whole chart."""
    sampler = sim_sampler("dgx-h100", polls=121)  # the next reading is 1 s into a bucket
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        panel = app.dashboard.panels[0]
        chart_rows = [
            i for i, line in enumerate(panel.plain_lines) if "▕" in line and "│ GPU" not in line
        ]
        before = panel.plain_lines
        app.post_message(SnapshotReady(sampler.poll()))
        sampler.clock.now += 1.0  # type: ignore[attr-defined]
        await pilot.pause()
        after = panel.plain_lines
        w = (panel.size.width - 4 - 2 * 3) // 4  # four charts in the panel's inner width
        newest = {2 + i * (w + 2) + w - 1 for i in range(4)}
        changed = set()
        for row in chart_rows:
            for start, end in changed_spans(before[row], " " * 200, after[row], " " * 200, 0):
                changed.update(range(start, end))
        assert changed and changed <= newest
