"""The probe screen (key ``p``): is each GPU performing like its spec sheet says?

Top to bottom:

* the pickers: GPUs (idle ones checked; a busy GPU, one with processes or more than 1 GiB in
  use, is listed unchecked with "busy — needs --force on the CLI") and tests (the quick set
  checked), a Start button (or ``enter``), and beside them the "What fits" panel for the
  highlighted GPU and for the whole node (:mod:`gputui.specs.fit`), with its assumptions;
* live progress: one determinate text bar per GPU (no animation);
* the results table: GPU, test, measured, spec, % of spec, verdict, how it was measured;
* live telemetry per GPU in the run (SM clock, power, temperature, throttle reasons), fed by
  :meth:`ProbeScreen.update_snapshot`;
* a plain-language summary when every GPU is done.

The screen never runs the probe itself: it talks to a :class:`ProbeSession` (start, cancel) and
receives the worker's protocol messages as :class:`ProbeEvent` Textual messages. The default
:class:`SubprocessProbeSession` is a thin adapter over :class:`gputui.probe.runner.ProbeRunner`,
run in a Textual thread worker so nothing blocks the UI thread. On the simulated backend (or with
no GPU) it probes the CPU, labelled CPU, with no spec comparison. Esc cancels a running probe
(the children are terminated) and closes the screen.

Spec, expected fraction, verdict and the sibling rule come from :mod:`gputui.probe.verdict`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Button, DataTable, Footer, SelectionList, Static
from textual.widgets.selection_list import Selection

from gputui.format import NA as NO_VALUE
from gputui.format import fmt_bytes, fmt_mhz, fmt_temp, fmt_watts, sanitize, short_gpu_name
from gputui.model import GpuSample, NodeInfo, Snapshot, describe_throttle
from gputui.probe import protocol
from gputui.probe.runner import ProbeRunner, Target, cuda_index_map, spec_for
from gputui.probe.verdict import (
    LOW,
    NA,
    WARN,
    Judged,
    apply_node_relative,
    describe,
    expected_fraction,
    family,
    judge,
    spec_value,
)
from gputui.specs import fit

if TYPE_CHECKING:
    from gputui.tui.app import GpuTuiApp

BUSY_BYTES = 1 << 30
"""A GPU with more memory than this in use (or any process) is busy."""
BUSY_TEXT = "busy — needs --force on the CLI"
QUICK_TESTS: tuple[str, ...] = (
    "memory_copy",
    "memory_triad",
    "h2d",
    "d2h",
    "matmul_tf32",
    "matmul_bf16",
)
"""Checked by default: the tests that finish in the quick mode's time budget."""
TEST_NAMES: dict[str, str] = {
    "memory_copy": "memory copy",
    "memory_triad": "memory triad",
    "h2d": "host → device",
    "d2h": "device → host",
    "p2p": "P2P GPU ↔ GPU",
    "matmul_fp32": "FP32 matmul",
    "matmul_tf32": "TF32 matmul",
    "matmul_fp16": "FP16 matmul",
    "matmul_bf16": "BF16 matmul",
    "matmul_fp8": "FP8 matmul",
}
CPU_SIZE_SCALE = 0.01
CPU_LABEL = "CPU"
CPU_VERDICT = "CPU — no spec"
PROGRESS_WIDTH = 24

# -- helpers ---------------------------------------------------------------------------------------


def is_busy(index: int, snapshot: Snapshot | None) -> bool:
    """Processes on the GPU, or more than 1 GiB of its memory in use."""
    if snapshot is None:
        return False
    if snapshot.processes_on(index):
        return True
    sample = snapshot.sample(index)
    used = sample.memory_used_bytes if sample is not None else None
    return used is not None and used > BUSY_BYTES


def cpu_mode(node: NodeInfo) -> bool:
    """The probe runs on the CPU: the simulated backend, or no GPU."""
    return not node.gpus or node.backend.startswith("sim")


# -- the session -----------------------------------------------------------------------------------


class ProbeEvent(Message):
    """One protocol message from the worker probing ``gpu_index`` (None: the CPU)."""

    def __init__(self, gpu_index: int | None, msg: dict[str, Any]) -> None:
        super().__init__()
        self.gpu_index = gpu_index
        self.msg = msg


class ProbeSession(Protocol):
    """What the screen needs from a probe run. Events arrive as :class:`ProbeEvent` s posted to
    the screen; every probed device ends with a ``done`` message (synthesised if the child
    died without one)."""

    def start(self, gpus: list[int], tests: list[str]) -> None: ...

    def cancel(self) -> None: ...


SessionFactory = Callable[["ProbeScreen"], ProbeSession]


class SubprocessProbeSession:
    """A :class:`ProbeSession` over :class:`ProbeRunner`: one worker child per GPU (one CPU child
    with a small size scale when ``cpu``), run to the end in a Textual thread worker. Every
    runner event is posted to the screen as a :class:`ProbeEvent`; each device gets exactly one
    ``done`` (the runner starts a GPU's PCIe/P2P tests in a second child, and a crashed or
    cancelled child sends none: the adapter posts it when :meth:`ProbeRunner.run` returns)."""

    def __init__(self, screen: ProbeScreen, *, cpu: bool = False, python: str | None = None):
        self.screen = screen
        self.cpu = cpu
        self.python = python
        self.runner: ProbeRunner | None = None
        self._children: dict[int | None, int] = {}
        self._hello: set[int | None] = set()
        self._done: set[int | None] = set()

    def targets(self, gpus: list[int]) -> list[Target]:
        if self.cpu:
            return [Target(None, "cpu", CPU_LABEL)]
        cuda = cuda_index_map(self.screen.node)
        return [Target(g, f"cuda:{cuda.get(g, g)}", f"GPU {g}") for g in gpus]

    def start(self, gpus: list[int], tests: list[str]) -> None:
        runner = ProbeRunner(
            self.targets(gpus),
            tests=tests,
            python=self.python,
            size_scale=CPU_SIZE_SCALE if self.cpu else None,
            on_event=self._event,
        )
        self.runner = runner
        children: dict[int | None, int] = {}
        for phase in runner.phases():
            for target, _ in phase:
                children[target.gpu] = children.get(target.gpu, 0) + 1
        self._children = children
        self._hello = set()
        self._done = set()
        self.screen.run_worker(
            lambda: self._run(runner), thread=True, group="probe", exit_on_error=False
        )

    def _post(self, gpu: int | None, msg: dict[str, Any]) -> None:
        self.screen.post_message(ProbeEvent(gpu, msg))

    def _event(self, gpu: int | None, msg: dict[str, Any]) -> None:
        """From the runner's thread: one hello and one done per device reach the screen."""
        kind = msg.get("type")
        if kind == "hello":
            if gpu in self._hello:
                return
            self._hello.add(gpu)
        elif kind == "done":
            self._children[gpu] = self._children.get(gpu, 1) - 1
            if self._children[gpu] > 0 or gpu in self._done:
                return
            self._done.add(gpu)
        self._post(gpu, msg)

    def _run(self, runner: ProbeRunner) -> None:
        """In a worker thread: run to the end, then end every device that got no done."""
        try:
            runs = runner.run()
        except Exception as exc:  # the screen must never wait forever
            runs = {}
            for target in runner.targets:
                self._post(target.gpu, {"type": "error", "test": None, "message": str(exc)})
        for target in runner.targets:
            if target.gpu in self._done:
                continue
            run = runs.get(target.gpu)
            if run is not None and run.error_kind == "start":
                for error in run.errors:
                    self._post(target.gpu, {"type": "error", "test": None, "message": error})
            self._done.add(target.gpu)
            cancelled = runner.cancelled or (run is not None and run.cancelled)
            seconds = run.seconds if run is not None else 0.0
            self._post(target.gpu, {"type": "done", "seconds": seconds, "cancelled": cancelled})

    def cancel(self) -> None:
        """SIGTERM to every child now, SIGKILL after a grace period (the runner's)."""
        if self.runner is not None:
            self.runner.cancel()


def default_session(screen: ProbeScreen) -> ProbeSession:
    return SubprocessProbeSession(screen, cpu=screen.cpu)


# -- state of a run --------------------------------------------------------------------------------


@dataclass
class ResultRow:
    gpu: int | None
    test: str
    value: float
    unit: str
    method: str


@dataclass
class DeviceRun:
    """What one probed device has reported so far."""

    gpu: int | None
    tests: list[str]
    device_name: str = ""
    test: str = ""
    fraction: float = 0.0
    text: str = ""
    finished: set[str] | None = None
    done: bool = False
    cancelled: bool = False
    error: str = ""
    throttles: set[str] | None = None
    min_sm_clock: int | None = None

    def __post_init__(self) -> None:
        self.finished = set() if self.finished is None else self.finished
        self.throttles = set() if self.throttles is None else self.throttles

    @property
    def progress(self) -> float:
        if self.done:
            return 1.0
        n = max(len(self.tests), 1)
        assert self.finished is not None
        current = 0.0 if self.test in self.finished else self.fraction
        return min((len(self.finished) + current) / n, 1.0)


def progress_bar(fraction: float, width: int = PROGRESS_WIDTH) -> str:
    filled = round(max(0.0, min(fraction, 1.0)) * width)
    return "█" * filled + "░" * (width - filled)


def _fmt_value(value: float | None) -> str:
    if value is None:
        return NO_VALUE
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _fmt_b(params_b: float) -> str:
    """Billions of parameters: ``1.2 B``, ``35 B``, ``285 B``, ``1.4 T``."""
    if params_b >= 1000:
        return f"{params_b / 1000:.1f} T"
    if params_b >= 10:
        return f"{params_b:.0f} B"
    return f"{params_b:.1f} B"


VERDICT_STYLE = {"OK": "bold green", "WARN": "bold yellow", "LOW": "bold red"}


class ProbeScreen(Screen[None]):
    """Pick GPUs and tests, run the probe, see measured vs spec with a verdict."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "start", "Start", id="probe.start", priority=True),
        Binding("escape,q,p", "close", "Close", id="probe.close"),
    ]

    def __init__(
        self,
        node: NodeInfo,
        snapshot: Snapshot | None = None,
        *,
        session_factory: SessionFactory | None = None,
    ) -> None:
        super().__init__(id="probe")
        self.node = node
        self.snapshot = snapshot
        self.cpu = cpu_mode(node)
        self.session_factory = session_factory or default_session
        self.session: ProbeSession | None = None
        self.runs: dict[int | None, DeviceRun] = {}
        self.results: list[ResultRow] = []
        self.notes: list[str] = []
        """Skips, retries and errors in words, for the summary."""
        self.summary_text = ""
        self.fits_gpu: int | None = node.gpus[0].index if node.gpus else None
        self._peaks: dict[int, dict[str, float | None] | None] = {}
        self._link_gbs: dict[int, float | None] = {}
        self._pcie: dict[int, tuple[int | None, int | None]] = {}
        self.busy = {info.index for info in node.gpus if is_busy(info.index, snapshot)}

    @property
    def gputui_app(self) -> GpuTuiApp:
        return self.app  # type: ignore[return-value]

    @property
    def running(self) -> bool:
        return bool(self.runs) and not all(run.done for run in self.runs.values())

    # -- layout ------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        where = "on the CPU (no GPU to probe: no spec comparison)" if self.cpu else ""
        title = f"Probe — {sanitize(self.node.hostname)}"
        yield Static(f"{title} {where}".rstrip(), id="probe-title", markup=False)
        with Horizontal(id="probe-top"):
            gpus = SelectionList[int](*self._gpu_selections(), id="probe-gpus")
            gpus.border_title = "GPUs"
            yield gpus
            with Vertical(id="probe-tests-box"):
                tests = SelectionList[str](
                    *(
                        Selection(TEST_NAMES.get(t, t), t, t in QUICK_TESTS, id=t)
                        for t in protocol.TEST_IDS
                    ),
                    id="probe-tests",
                )
                tests.border_title = "Tests"
                yield tests
                yield Button("Start (enter)", id="probe-start", variant="primary", compact=True)
            with VerticalScroll(id="probe-fits"):
                yield Static(self.fits_text(), id="probe-fits-text")
        yield Static("", id="probe-progress")
        table: DataTable[Any] = DataTable(id="probe-results", cursor_type="row", zebra_stripes=True)
        yield table
        yield Static("", id="probe-telemetry")
        yield Static(self._idle_summary(), id="probe-summary")
        yield Footer(compact=True)

    def _gpu_selections(self) -> list[Selection[int]]:
        out = []
        for info in self.node.gpus:
            busy = info.index in self.busy
            label = Text(f"{info.index:<2} {short_gpu_name(sanitize(info.name))[:8]:<8}")
            if busy:
                label.append(f" {BUSY_TEXT}", style="yellow")
            out.append(Selection(label, info.index, not busy and not self.cpu, id=str(info.index)))
        return out

    def on_mount(self) -> None:
        table = self.query_one("#probe-results", DataTable)
        table.add_columns("GPU", "Test", "Measured", "Spec", "%", "Verdict", "How measured")
        gpus = self.query_one("#probe-gpus", SelectionList)
        if self.cpu:
            gpus.disabled = True
            gpus.border_subtitle = "simulated: the probe runs on the CPU"
        self.query_one("#probe-tests", SelectionList).focus()
        self._show_progress()
        self._show_telemetry()

    def _idle_summary(self) -> str:
        return "Pick GPUs and tests, then Start (enter). Esc closes; Esc during a run cancels it."

    # -- what fits ---------------------------------------------------------------------------------

    def fits_text(self) -> Text:
        """The "What fits" panel: the highlighted GPU and the whole node, with assumptions."""
        text = Text()
        gpus = self._memory_pairs()
        index = self.fits_gpu
        pair = gpus.get(index) if index is not None else None
        if pair is None:
            text.append("What fits\n", style="bold")
            text.append("no GPU memory to size models against", style="dim")
            return text
        total, free = pair
        text.append(f"What fits — GPU {index}", style="bold")
        text.append(f" ({fmt_bytes(total)}, {fmt_bytes(free)} free)\n", style="dim")
        node_rows = fit.node_fits(list(gpus.values()))
        text.append(f"{'params':<15}{'GPU':>6}{'free':>7}{'node':>7}{'free':>7}\n", style="bold")
        for row, node_row in zip(fit.fits(total, free), node_rows, strict=True):
            text.append(f"{row.label:<15}")
            text.append(f"{_fmt_b(row.total_b):>6}{_fmt_b(row.free_b):>7}", style="bold")
            text.append(f"{_fmt_b(node_row.total_b):>7}{_fmt_b(node_row.free_b):>7}\n")
        text.append(f"node = {len(gpus)} GPUs\n", style="dim")
        for line in (*fit.ASSUMPTIONS, fit.NODE_ASSUMPTION):
            text.append(f"· {line}\n", style="dim")
        return text

    def _memory_pairs(self) -> dict[int, tuple[float, float]]:
        """GPU index -> (total, free) bytes, from the latest reading (or the static total)."""
        out: dict[int, tuple[float, float]] = {}
        for info in self.node.gpus:
            sample = self.snapshot.sample(info.index) if self.snapshot is not None else None
            total = info.memory_total_bytes
            free = sample.memory_free_bytes if sample is not None else None
            if total is None:
                continue
            out[info.index] = (float(total), float(free if free is not None else total))
        return out

    def on_selection_list_selection_highlighted(
        self, event: SelectionList.SelectionHighlighted[Any]
    ) -> None:
        if event.selection_list.id != "probe-gpus":
            return
        value = event.selection.value
        if isinstance(value, int) and value != self.fits_gpu:
            self.fits_gpu = value
            self.query_one("#probe-fits-text", Static).update(self.fits_text())

    # -- data in -----------------------------------------------------------------------------------

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """A new reading: telemetry for the GPUs in the run, fits from free memory."""
        self.snapshot = snapshot
        if self.running:
            for gpu, run in self.runs.items():
                sample = snapshot.sample(gpu) if gpu is not None else None
                if sample is None or sample.lost:
                    continue
                assert run.throttles is not None
                if sample.throttle_reasons:
                    run.throttles |= set(sample.throttle_reasons) - {"gpu_idle"}
                clock = sample.clock_sm_mhz
                if clock is not None and (run.min_sm_clock is None or clock < run.min_sm_clock):
                    run.min_sm_clock = clock
        if not self.is_mounted:
            return
        self._show_telemetry()
        self.query_one("#probe-fits-text", Static).update(self.fits_text())

    def telemetry_lines(self) -> list[str]:
        """One line per GPU in the run (or checked in the picker before a run)."""
        if self.cpu:
            return ["telemetry: none on the CPU"]
        gpus = [g for g in self.runs if g is not None] or self._checked_gpus()
        lines = []
        for gpu in gpus:
            sample = self.snapshot.sample(gpu) if self.snapshot is not None else None
            lines.append(f"GPU {gpu:<2} {self._telemetry(sample)}")
        return lines

    @staticmethod
    def _telemetry(sample: GpuSample | None) -> str:
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

    def _show_telemetry(self) -> None:
        lines = self.telemetry_lines()
        widget = self.query_one("#probe-telemetry", Static)
        widget.update(Text("\n".join(lines), style="dim") if lines else "")

    def _checked_gpus(self) -> list[int]:
        try:
            return sorted(self.query_one("#probe-gpus", SelectionList).selected)
        except Exception:
            return []

    def _checked_tests(self) -> list[str]:
        chosen = set(self.query_one("#probe-tests", SelectionList).selected)
        return [t for t in protocol.TEST_IDS if t in chosen]

    # -- running -----------------------------------------------------------------------------------

    def action_start(self) -> None:
        if self.running:
            self.notify("a probe is already running (Esc cancels it)", severity="warning")
            return
        tests = self._checked_tests()
        gpus = [] if self.cpu else self._checked_gpus()
        if not tests:
            self.notify("pick at least one test", severity="warning", timeout=3)
            return
        if not self.cpu and not gpus:
            self.notify("pick at least one GPU", severity="warning", timeout=3)
            return
        busy = [g for g in gpus if g in self.busy]
        if busy:
            names = ", ".join(str(g) for g in busy)
            self.notify(
                f"GPU {names} busy: results will be low and may disturb the running job",
                severity="warning",
                timeout=6,
            )
        self.start(gpus, tests)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "probe-start":
            self.action_start()

    def start(self, gpus: Sequence[int], tests: Sequence[str]) -> None:
        """Start a run (no checks: :meth:`action_start` checks the pickers)."""
        targets: list[int | None] = [None] if self.cpu else list(gpus)
        self.runs = {g: DeviceRun(g, list(tests)) for g in targets}
        self.results = []
        self.notes = []
        self.summary_text = ""
        self._peaks.clear()
        self._link_gbs.clear()
        self._pcie.clear()
        for gpu in targets:
            if gpu is None:
                continue
            info = self.node.gpu(gpu)
            match, self._peaks[gpu] = spec_for(info) if info is not None else (None, None)
            self._link_gbs[gpu] = match.spec.link_gbs if match is not None else None
            sample = self.snapshot.sample(gpu) if self.snapshot is not None else None
            if sample is not None:
                self._pcie[gpu] = (sample.pcie_gen, sample.pcie_width)
        self.session = self.session_factory(self)
        self.session.start(list(gpus), list(tests))
        if self.is_mounted:
            self._show_results()
            self._show_progress()
            self._show_telemetry()
            self.query_one("#probe-summary", Static).update(
                f"Running {len(tests)} test{'s' if len(tests) != 1 else ''} on "
                + (CPU_LABEL if self.cpu else f"GPU {', '.join(str(g) for g in gpus)}")
                + " … Esc cancels."
            )

    def cancel(self) -> None:
        if self.session is not None and self.running:
            self.session.cancel()

    def on_probe_event(self, event: ProbeEvent) -> None:
        run = self.runs.get(event.gpu_index)
        if run is None:
            return
        msg = event.msg
        kind = msg.get("type")
        who = self._label(event.gpu_index)
        if kind == "hello":
            run.device_name = str(msg.get("device_name", ""))
            if msg.get("tests"):
                run.tests = list(msg["tests"])
        elif kind == "progress":
            run.test, run.fraction, run.text = msg["test"], float(msg["fraction"]), msg["text"]
        elif kind == "result":
            assert run.finished is not None
            run.finished.add(msg["test"])
            run.test, run.fraction = msg["test"], 1.0
            self.results.append(
                ResultRow(event.gpu_index, msg["test"], msg["value"], msg["unit"], msg["method"])
            )
            self._show_results()
        elif kind == "skipped":
            assert run.finished is not None
            run.finished.add(msg["test"])
            self.notes.append(f"{who}: {TEST_NAMES.get(msg['test'], msg['test'])} skipped")
        elif kind == "retry":
            run.text = f"out of memory, retrying smaller {msg.get('text', '')}".rstrip()
        elif kind == "error":
            if msg.get("message") != protocol.CANCELLED:
                test = msg.get("test")
                what = f"{TEST_NAMES.get(test, test)} failed" if test else "error"
                self.notes.append(f"{who}: {what}: {msg['message']}")
                if test:
                    assert run.finished is not None
                    run.finished.add(test)
                else:
                    run.error = str(msg["message"])
        elif kind == "done":
            run.done = True
            run.cancelled = bool(msg.get("cancelled"))
            if not self.running:
                self.summary_text = self.summary()
                if self.is_mounted:
                    self.query_one("#probe-summary", Static).update(self.summary_text)
        self._show_progress()

    def _label(self, gpu: int | None) -> str:
        return CPU_LABEL if gpu is None else f"GPU {gpu}"

    # -- results -----------------------------------------------------------------------------------

    def judged(self) -> list[Judged]:
        """Every result judged by :mod:`gputui.probe.verdict`: spec, expected fraction, verdict,
        and on several GPUs the sibling rule (LOW below 90% of the node's best)."""
        out: list[Judged] = []
        limits: dict[int, tuple[float | None, float | None]] = {}
        for r in self.results:
            j = Judged(r.gpu, self._label(r.gpu), r.test, r.value, r.unit, r.method)
            info = self.node.gpu(r.gpu) if r.gpu is not None else None
            if r.gpu is not None and info is not None:
                gen, width = self._pcie.get(r.gpu, (None, None))
                j.spec, j.spec_source = spec_value(
                    r.test,
                    self._peaks.get(r.gpu),
                    pcie_gen=gen,
                    pcie_width=width,
                    link_gbs=self._link_gbs.get(r.gpu),
                )
                j.expected = expected_fraction(family(info.architecture), r.test)
                limits[r.gpu] = (info.sm_clock_max_mhz, info.power_default_limit_w)
                judge(
                    j,
                    sm_clock_max_mhz=info.sm_clock_max_mhz,
                    power_default_limit_w=info.power_default_limit_w,
                )
            out.append(j)
        apply_node_relative(out, limits)
        return out

    @staticmethod
    def _verdict(j: Judged) -> str:
        if j.gpu is None:
            return CPU_VERDICT
        return "—" if j.verdict == NA else j.verdict

    def _show_results(self) -> None:
        if not self.is_mounted:
            return
        table = self.query_one("#probe-results", DataTable)
        table.clear()
        for j in self.judged():
            pct = j.pct_of_spec
            table.add_row(
                j.label,
                TEST_NAMES.get(j.test, j.test),
                Text(f"{_fmt_value(j.value)} {j.unit}", justify="right"),
                Text(_fmt_value(j.spec) if j.spec else "—", justify="right"),
                Text(f"{pct:.0f}%" if pct is not None else "—", justify="right"),
                Text(self._verdict(j), style=VERDICT_STYLE.get(j.verdict, "dim")),
                sanitize(j.method),
            )

    def progress_lines(self) -> list[Text]:
        lines = []
        for gpu, run in self.runs.items():
            line = Text(f"{self._label(gpu):<6} ")
            line.append(progress_bar(run.progress), style="green" if run.done else "cyan")
            line.append(f" {run.progress:>4.0%}  ")
            if run.done:
                assert run.finished is not None
                state = "cancelled" if run.cancelled else f"done ({len(run.finished)} tests)"
                line.append(state, style="yellow" if run.cancelled else "green")
            elif run.test:
                line.append(f"{TEST_NAMES.get(run.test, run.test)} {run.fraction:.0%}")
                if run.text:
                    line.append(f" — {sanitize(run.text)}", style="dim")
            else:
                line.append("starting …", style="dim")
            lines.append(line)
        return lines

    def _show_progress(self) -> None:
        if not self.is_mounted:
            return
        lines = self.progress_lines()
        widget = self.query_one("#probe-progress", Static)
        widget.update(Text("\n").join(lines) if lines else Text("no probe run yet", style="dim"))

    def summary(self) -> str:
        """A few plain sentences: per GPU the worst results, why when telemetry tells, notes."""
        parts: list[str] = []
        by_gpu: dict[int | None, list[Judged]] = {}
        for j in self.judged():
            by_gpu.setdefault(j.gpu, []).append(j)
        for gpu, run in self.runs.items():
            who = self._label(gpu)
            rows = by_gpu.get(gpu, [])
            if run.cancelled:
                parts.append(f"{who}: cancelled after {len(rows)} results.")
                continue
            if gpu is None:
                parts.append(
                    f"{who}: {len(rows)} results measured on the CPU (no spec to compare)."
                )
                continue
            bad = sorted(
                (j for j in rows if j.verdict in (LOW, WARN)), key=lambda j: j.verdict != LOW
            )
            if not rows:
                parts.append(f"{who}: no results{f' ({run.error})' if run.error else ''}.")
            elif not bad:
                parts.append(f"{who}: all {len(rows)} results as expected.")
            else:
                words = "; ".join(f"{describe(j)} ({j.verdict})" for j in bad)
                why = self._why(run)
                parts.append(f"{who}: {words}{f'; {why}' if why else ''}.")
        parts += self.notes
        return " ".join(parts)

    def _why(self, run: DeviceRun) -> str:
        if not run.throttles:
            return ""
        info = self.node.gpu(run.gpu) if run.gpu is not None else None
        reasons = describe_throttle(frozenset(run.throttles))
        clock = run.min_sm_clock
        limit = info.sm_clock_max_mhz if info is not None else None
        if clock is not None and limit and clock < limit:
            return f"SM clock down to {clock} MHz by {reasons}"
        return f"throttled: {reasons}"

    # -- closing -----------------------------------------------------------------------------------

    def action_close(self) -> None:
        """Esc: cancel a running probe (its children are terminated), then close."""
        self.cancel()
        self.dismiss(None)

    def on_unmount(self) -> None:
        self.cancel()


__all__ = [
    "BUSY_TEXT",
    "CPU_VERDICT",
    "QUICK_TESTS",
    "ProbeEvent",
    "ProbeScreen",
    "ProbeSession",
    "SubprocessProbeSession",
    "cpu_mode",
    "is_busy",
]
