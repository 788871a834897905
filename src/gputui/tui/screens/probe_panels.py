"""The probe screen's panels: what fits in GPU memory, progress bars, the results table and
live telemetry. Each is handed what to show (attributes down); none reads the app or a backend.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Static
from textual.widgets.selection_list import SelectionType

from gputui.core.format import NA as NO_VALUE
from gputui.core.format import fmt_mhz, fmt_size, fmt_temp, fmt_watts, sanitize
from gputui.core.model import GpuSample, NodeInfo, Snapshot, describe_throttle
from gputui.probe.verdict import NA, Judged
from gputui.specs import fit
from gputui.tui.screens.probe_state import DeviceRun, device_label, human_test_name
from gputui.tui.widgets.check_list import CheckList

CPU_VERDICT = "CPU run — no spec"
PROGRESS_WIDTH = 24
VERDICT_STYLE = {"OK": "bold green", "WARN": "bold yellow", "LOW": "bold red"}
RESULT_COLUMNS = ("GPU", "Test", "Measured", "Spec", "%", "Verdict", "How measured and judged")

MemoryPairs = dict[int, tuple[float, float]]
"""GPU index -> (total, free) bytes."""


def progress_bar(fraction: float, width: int = PROGRESS_WIDTH) -> str:
    filled = round(max(0.0, min(fraction, 1.0)) * width)
    return "█" * filled + "░" * (width - filled)


def fmt_value(value: float | None) -> str:
    if value is None:
        return NO_VALUE
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def fmt_params(params_b: float) -> str:
    """Billions of parameters: ``1.2 B``, ``35 B``, ``285 B``, ``1.4 T``."""
    if params_b >= 1000:
        return f"{params_b / 1000:.1f} T"
    if params_b >= 10:
        return f"{params_b:.0f} B"
    return f"{params_b:.1f} B"


# -- what fits -------------------------------------------------------------------------------------


def memory_pairs(node: NodeInfo, snapshot: Snapshot | None) -> MemoryPairs:
    """GPU index -> (total, free) bytes, from the latest reading (or the static total)."""
    out: MemoryPairs = {}
    for info in node.gpus:
        sample = snapshot.sample(info.index) if snapshot is not None else None
        total = info.memory_total_bytes
        free = sample.memory_free_bytes if sample is not None else None
        if total is None:
            continue
        out[info.index] = (float(total), float(free if free is not None else total))
    return out


def fits_text(gpus: MemoryPairs, index: int | None) -> Text:
    """The "What fits" panel: the highlighted GPU and the whole node, with assumptions."""
    text = Text()
    pair = gpus.get(index) if index is not None else None
    if pair is None:
        text.append("What fits\n", style="bold")
        text.append("no GPU memory to size models against", style="dim")
        return text
    total, free = pair
    text.append(f"What fits — GPU {index}\n", style="bold")
    text.append(f"{fmt_size(total)}, {fmt_size(free)} free\n", style="dim")
    node_rows = fit.node_fits(list(gpus.values()))
    text.append(f"{'params':<15}{'GPU':>6}{'free':>7}{'node':>7}{'free':>7}\n", style="bold")
    for row, node_row in zip(fit.fits(total, free), node_rows, strict=True):
        text.append(f"{row.label:<15}")
        text.append(f"{fmt_params(row.total_b):>6}{fmt_params(row.free_b):>7}", style="bold")
        text.append(f"{fmt_params(node_row.total_b):>7}{fmt_params(node_row.free_b):>7}\n")
    text.append(f"node = {len(gpus)} GPUs\n", style="dim")
    for line in (*fit.ASSUMPTIONS, fit.NODE_ASSUMPTION):
        text.append(f"· {line}\n", style="dim")
    return text


class ProbeFits(Static):
    """What fits in the memory of one GPU and of the node."""

    def show(self, node: NodeInfo, snapshot: Snapshot | None, gpu: int | None) -> None:
        self.update(fits_text(memory_pairs(node, snapshot), gpu))


# -- progress --------------------------------------------------------------------------------------


def progress_lines(runs: Mapping[int | None, DeviceRun]) -> list[Text]:
    """One line per device: a bar, the share done, and the test running (or how it ended: done,
    cancelled, or failed with why, the bar red and as far as it got)."""
    lines = []
    for gpu, run in runs.items():
        line = Text(f"{device_label(gpu):<6} ")
        style = "red" if run.failed else "green" if run.done else "cyan"
        line.append(progress_bar(run.progress), style=style)
        line.append(f" {run.progress:>4.0%}  ")
        if run.failed:
            line.append("failed", style="bold red")
            line.append(f": {sanitize(run.error or 'no result')}", style="red")
        elif run.done:
            state = "cancelled" if run.cancelled else f"done ({len(run.finished)} tests)"
            line.append(state, style="yellow" if run.cancelled else "green")
        elif run.test:
            line.append(f"{human_test_name(run.test)} {run.fraction:.0%}")
            if run.text:
                line.append(f" — {sanitize(run.text)}", style="dim")
        else:
            line.append("starting …", style="dim")
        lines.append(line)
    return lines


class ProbeProgress(Static):
    """A determinate text bar per device (no animation)."""

    def show(self, runs: Mapping[int | None, DeviceRun]) -> None:
        lines = progress_lines(runs)
        self.update(Text("\n").join(lines) if lines else Text("no probe run yet", style="dim"))


# -- results ---------------------------------------------------------------------------------------


def verdict_text(j: Judged) -> str:
    if j.gpu is None:
        return CPU_VERDICT
    return "—" if j.verdict == NA else j.verdict


def test_text(j: Judged) -> str:
    """The test in words; a P2P copy names its destination GPU."""
    name = human_test_name(j.test)
    return f"{name} → GPU {j.peer}" if j.peer is not None else name


class ProbeResults(DataTable[str | Text]):
    """Measured against spec, one row per result, with the verdict and how it was measured and
    judged (the worker's method, then the spec, expected share with its source and thresholds)."""

    def on_mount(self) -> None:
        self.add_columns(*RESULT_COLUMNS)

    def show(self, judged: Iterable[Judged]) -> None:
        self.clear()
        for j in judged:
            pct = j.pct_of_spec
            self.add_row(
                j.label,
                test_text(j),
                Text(f"{fmt_value(j.value)} {j.unit}", justify="right"),
                Text(fmt_value(j.spec) if j.spec else "—", justify="right"),
                Text(f"{pct:.0f}%" if pct is not None else "—", justify="right"),
                Text(verdict_text(j), style=VERDICT_STYLE.get(j.verdict, "dim")),
                sanitize(j.how),
            )


# -- telemetry -------------------------------------------------------------------------------------


def telemetry_text(sample: GpuSample | None) -> str:
    """SM clock, power, temperature and throttle reasons of one reading, in one line."""
    if sample is None:
        return "waiting for a reading"
    if sample.lost:
        return "LOST — fell off the bus"
    limit = f" / {fmt_watts(sample.power_limit_w)}" if sample.power_limit_w else ""
    throttle = describe_throttle(sample.throttle_reasons) or "none"
    return (
        f"SM {fmt_mhz(sample.clock_sm_mhz)}  power {fmt_watts(sample.power_w)}{limit}  "
        f"{fmt_temp(sample.temperature_gpu_c)}  throttle: {throttle}"
    )


class ProbeTelemetry(Static):
    """Live telemetry lines of the GPUs in the run."""

    def show(self, lines: list[str]) -> None:
        self.update(Text("\n".join(lines), style="dim") if lines else "")


class ProbeList(CheckList[SelectionType]):
    """A picker (GPUs, tests) with ``[x]`` / ``[ ]`` boxes, whose keys the footer shows: space
    checks, tab moves on."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "select", "Check", id="probe.toggle"),
        Binding("tab", "app.focus_next", "Next", id="probe.next"),
    ]
