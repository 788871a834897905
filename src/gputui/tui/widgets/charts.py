"""History charts with a scale and a time axis, drawn as line pieces (one style per run).

A chart is a title row (name and current value), plot rows of block characters (eighth-cell
steps, one column per time bucket) with the scale on the left, and a time axis row::

    Power W          544W
    700▕
       ▕▃▄▄▄▃▃▄▄▄▄▃▄▄▄▄▄▄
       ▕██████████████████
      0▕██████████████████
        -3m     -90s   now

Columns are *time buckets* aligned to the clock (a bucket of 10 s holds the readings from
12:00:00 to 12:00:09), each showing the mean of its readings; the newest column is the bucket
being filled. So between two buckets only the newest column changes, and the whole chart moves
left once a bucket: a chart costs a few cells a tick, not a repaint of every column, and a narrow
chart still covers minutes. A bucket without readings is a blank column (never drawn as 0).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

from gputui.core.format import cell_width
from gputui.core.frozen import frozen
from gputui.tui.widgets.history_plot import column_plot
from gputui.tui.widgets.line_widget import FRAME, LABEL, VALUE, Line, LineBuilder

NICE_BUCKETS_S: tuple[float, ...] = (1, 2, 3, 5, 10, 15, 20, 30, 60, 120, 300, 600)
TARGET_WINDOW_S = 120.0
"""A chart covers at least this long when its bucket size allows (two minutes)."""
CHART_MIN_WIDTH = 16
MIN_PLOT_ROWS = 3
CHART_GAP = 2
"""Cells between charts side by side."""


@frozen(slots=False)
class Chart:
    """One chart: what it plots and how it is labelled."""

    metric: str
    title: str
    short: str
    """The title when the long one does not fit."""
    value: str
    """The current value, shown at the right of the title."""
    cls: str
    lo: float
    hi: float
    top: str
    """Scale label at the top (``hi``, without the unit: the title has it)."""
    bottom: str = "0"


Fetch = Callable[[Sequence[str], int], tuple[list[list[float]], float]]
"""``fetch(metrics, columns) -> (one series per metric, each ``columns`` long; seconds a column
covers)``."""


# -- time buckets ----------------------------------------------------------------------------------


def sample_interval(timestamps: Sequence[float]) -> float:
    """Seconds between readings (the smallest recent step; 1 s when unknown)."""
    steps = [b - a for a, b in itertools.pairwise(timestamps) if b > a]
    return min(steps) if steps else 1.0


def bucket_seconds(columns: int, interval: float, window_s: float = TARGET_WINDOW_S) -> float:
    """The smallest "nice" bucket, at least one reading long, that lets ``columns`` buckets
    cover ``window_s``."""
    want = max(interval, window_s / max(columns, 1))
    for size in NICE_BUCKETS_S:
        if size >= want - 1e-9:
            return size
    return NICE_BUCKETS_S[-1]


def bucket_columns(timestamps: Sequence[float], columns: int, bucket_s: float) -> list[int]:
    """The column of each timestamp, newest first (the newest bucket, the one of the last
    timestamp, is the last column), up to the first that falls left of the chart."""
    if not timestamps or columns <= 0:
        return []
    floor = math.floor
    newest = floor(timestamps[-1] / bucket_s)
    out: list[int] = []
    for stamp in reversed(timestamps):
        col = columns - 1 - (newest - floor(stamp / bucket_s))
        if col < 0:
            break
        out.append(col)
    return out


def bucket_means(cols: Sequence[int], values: Sequence[float], columns: int) -> list[float]:
    """Mean of ``values`` (lined up with the end of the timestamps ``cols`` came from) per
    column; NaN where a column has no known value."""
    sums = [0.0] * columns
    counts = [0] * columns
    for col, value in zip(cols, reversed(values), strict=False):
        if value == value:  # not NaN
            sums[col] += value
            counts[col] += 1
    return [sums[c] / n if n else math.nan for c, n in enumerate(counts)]


def bucketed(
    timestamps: Sequence[float], values: Sequence[float], columns: int, bucket_s: float
) -> list[float]:
    """Mean of ``values`` per clock-aligned bucket, the newest bucket (the one of the last
    timestamp) in the last column; NaN where a bucket has no known value. ``values`` line up
    with the end of ``timestamps``."""
    if columns <= 0:
        return []
    return bucket_means(bucket_columns(timestamps, columns, bucket_s), values, columns)


def fmt_ago(seconds: float) -> str:
    """``-45s``, ``-2m``, ``-2m30s``, ``-1h``, ``-1h30m``: a time axis label."""
    s = round(seconds)
    if s < 60:
        return f"-{s}s"
    if s < 3600:
        return f"-{s // 60}m" + (f"{s % 60}s" if s % 60 else "")
    hours, minutes = divmod(s // 60, 60)
    return f"-{hours}h" + (f"{minutes:02d}m" if minutes else "")


TICK_STEPS_S: tuple[float, ...] = (5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200)
TICK_SPACING = 10
"""Columns at least between two time labels."""
MAX_TICKS = 6


def time_axis(width: int, bucket_s: float) -> str:
    """Labels under ``width`` plot columns of ``bucket_s`` each: ``now`` under the newest
    column, then round times ago (``-30s``, ``-1m``, ...) centred under their columns."""
    if width <= 0:
        return ""
    cells = [" "] * width

    def put(text: str, start: int) -> None:
        start = max(0, min(start, width - len(text)))
        if all(c == " " for c in cells[max(start - 1, 0) : start + len(text) + 1]):
            cells[start : start + len(text)] = list(text)

    put("now", width - 3)
    want = max(TICK_SPACING, width / MAX_TICKS) * bucket_s
    step = next((t for t in TICK_STEPS_S if t >= want), TICK_STEPS_S[-1])
    ago = step
    while True:
        col = width - 1 - round(ago / bucket_s)
        if col < 0:
            break
        label = fmt_ago(ago)
        put(label, col - len(label) // 2)
        ago += step
    return "".join(cells)


# -- drawing ---------------------------------------------------------------------------------------


def chart_block(
    chart: Chart,
    values: Sequence[float],
    width: int,
    height: int,
    bucket_s: float,
    axis_w: int = 0,
) -> list[Line]:
    """``height`` lines ``width`` cells wide: title, plot rows with the scale (``axis_w`` cells
    of labels, at least as wide as they need), time axis (from 4 lines)."""
    if width <= 0 or height <= 0:
        return []
    title = chart.title
    if cell_width(title) + 1 + cell_width(chart.value) > width:
        title = chart.short
    head = LineBuilder().add(title, LABEL)
    head.pad(width - cell_width(chart.value)).add(chart.value, VALUE)
    lines: list[Line] = [head.line(width)]
    axis_w = max(axis_w, len(chart.top), len(chart.bottom))
    plot_w = width - axis_w - 1
    rows = height - 2 if height >= 4 else height - 1
    if rows <= 0 or plot_w <= 0:
        return lines
    for r, row in enumerate(column_plot(values, plot_w, rows, chart.lo, chart.hi)):
        label = chart.top if r == 0 else chart.bottom if r == rows - 1 else ""
        b = LineBuilder().add(label.rjust(axis_w), LABEL).add("▕", FRAME).add(row, chart.cls)
        lines.append(b.line(width))
    if height >= 4:
        lines.append([(" " * (axis_w + 1), ""), (time_axis(plot_w, bucket_s), LABEL)])
    return lines


def chart_grid(count: int, width: int, rows: int) -> tuple[int, int] | None:
    """How ``count`` charts share ``width`` × ``rows`` cells: ``(across, down)`` giving the
    widest plots that are still :data:`MIN_PLOT_ROWS` tall; None when nothing fits."""
    best: tuple[int, int] | None = None
    best_w = 0
    for across in range(count, 0, -1):
        down = math.ceil(count / across)
        w = (width - CHART_GAP * (across - 1)) // across
        h = rows // down
        if w < CHART_MIN_WIDTH or h - 2 < MIN_PLOT_ROWS:
            continue
        if w > best_w:
            best, best_w = (across, down), w
    return best


def chart_area(charts: Sequence[Chart], width: int, rows: int, fetch: Fetch) -> list[Line]:
    """Charts laid out in ``width`` × ``rows`` (as many as fit: the first ones first)."""
    shown = list(charts)
    grid = None
    while shown:
        grid = chart_grid(len(shown), width, rows)
        if grid is not None:
            break
        shown = shown[: len(shown) - (2 if len(shown) > 2 else 1)]
    if not shown or grid is None:
        return []
    across, down = grid
    w = (width - CHART_GAP * (across - 1)) // across
    h = rows // down
    axis_w = max(max(len(c.top), len(c.bottom)) for c in shown)
    series, bucket_s = fetch([c.metric for c in shown], max(w - axis_w - 1, 1))
    blocks = [
        chart_block(c, values, w, h, bucket_s, axis_w)
        for c, values in zip(shown, series, strict=True)
    ]
    lines: list[Line] = []
    for band in range(down):
        row_blocks = blocks[band * across : (band + 1) * across]
        for y in range(h):
            line: Line = []
            for i, block in enumerate(row_blocks):
                if i:
                    line.append((" " * CHART_GAP, ""))
                # A block's lines are w cells wide already.
                line.extend(block[y] if y < len(block) else [(" " * w, "")])
            lines.append(line)
    return lines


def history_fetch(
    timestamps: Callable[[int], list[float]],
    series: Callable[[str, int], list[float]],
    capacity: int,
    window_s: float = TARGET_WINDOW_S,
) -> Fetch:
    """A :data:`Fetch` over a history: ``timestamps(last)`` and ``series(metric, last)``, in
    buckets that let the columns cover ``window_s`` (0: one reading a column). The charts of one
    area share a bucket size, so their time axes agree."""

    def fetch(metrics: Sequence[str], columns: int) -> tuple[list[list[float]], float]:
        interval = sample_interval(timestamps(8))
        size = bucket_seconds(columns, interval, window_s)
        if size < 1.5 * interval:
            # A reading a column (the newest on the right): clock-aligned buckets as short as
            # the interval would leave a gap wherever a reading came a little late.
            out = []
            for metric in metrics:
                values = series(metric, columns)
                out.append([math.nan] * (columns - len(values)) + values)
            return out, interval
        need = min(capacity, math.ceil((columns + 1) * size / interval) + 2)
        stamps = timestamps(need)
        cols = bucket_columns(stamps, columns, size)  # shared by every metric
        out = [bucket_means(cols, series(m, len(cols)), columns) for m in metrics]
        return out, size

    return fetch


def nice_ceiling(value: float) -> float:
    """The smallest round number (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10^k) at least ``value``: a
    scale's top."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    exponent = math.floor(math.log10(value))
    for step in (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0):
        top = step * 10.0**exponent
        if top >= value * (1 - 1e-9):
            return top
    return 10.0 ** (exponent + 1)


__all__ = [
    "Chart",
    "bucket_columns",
    "bucket_means",
    "bucket_seconds",
    "bucketed",
    "chart_area",
    "chart_block",
    "chart_grid",
    "fmt_ago",
    "history_fetch",
    "nice_ceiling",
    "sample_interval",
    "time_axis",
]
