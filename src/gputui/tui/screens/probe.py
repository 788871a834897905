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

The screen is given everything it uses: the node, the latest reading (and every later one through
:meth:`ProbeScreen.update_snapshot`) and a session factory. It never runs the probe itself: it
talks to a :class:`~gputui.tui.screens.probe_session.ProbeSession` (start, cancel) and receives
the worker's protocol messages as :class:`~gputui.tui.screens.probe_session.ProbeEvent` Textual
messages, folded into a :class:`~gputui.tui.screens.probe_state.ProbeRunState`. On the simulated
backend (or with no GPU) it probes the CPU, labelled CPU, with no spec comparison. Esc cancels a
running probe (the children are terminated) and closes the screen.

Spec, expected fraction, verdict and the sibling rule come from :mod:`gputui.probe.verdict`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Protocol

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, Footer, SelectionList, Static
from textual.widgets.selection_list import Selection

from gputui.format import sanitize, short_gpu_name
from gputui.model import NodeInfo, Snapshot
from gputui.probe.protocol import TEST_IDS, Done, Result
from gputui.tui.screens.probe_panels import (
    CPU_VERDICT,
    ProbeFits,
    ProbeProgress,
    ProbeResults,
    ProbeTelemetry,
    fits_text,
    memory_pairs,
    progress_lines,
    telemetry_text,
)
from gputui.tui.screens.probe_session import (
    ProbeEvent,
    ProbeSession,
    SubprocessProbeSession,
)
from gputui.tui.screens.probe_state import (
    CPU_LABEL,
    TEST_NAMES,
    DeviceRun,
    ProbeRunState,
    ResultRow,
)

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
IDLE_SUMMARY = "Pick GPUs and tests, then Start (enter). Esc closes; Esc during a run cancels it."


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


class SessionFactory(Protocol):
    """Makes the session that runs a probe for the screen (tests pass fakes)."""

    def __call__(self, screen: ProbeScreen, /) -> ProbeSession: ...


def default_session(screen: ProbeScreen) -> ProbeSession:
    """Worker child processes, on the CPU when the screen is in CPU mode."""
    return SubprocessProbeSession(screen, cpu=screen.cpu)


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
        self.session_factory: SessionFactory = session_factory or default_session
        self.session: ProbeSession | None = None
        self.state = ProbeRunState(node)
        self.summary_text = ""
        self.fits_gpu: int | None = node.gpus[0].index if node.gpus else None
        self.busy = {info.index for info in node.gpus if is_busy(info.index, snapshot)}

    @property
    def runs(self) -> dict[int | None, DeviceRun]:
        return self.state.runs

    @property
    def results(self) -> list[ResultRow]:
        return self.state.results

    @property
    def running(self) -> bool:
        return self.state.running

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
                    *(Selection(TEST_NAMES.get(t, t), t, t in QUICK_TESTS, id=t) for t in TEST_IDS),
                    id="probe-tests",
                )
                tests.border_title = "Tests"
                yield tests
                yield Button("Start (enter)", id="probe-start", variant="primary", compact=True)
            with VerticalScroll(id="probe-fits"):
                fits = fits_text(memory_pairs(self.node, self.snapshot), self.fits_gpu)
                yield ProbeFits(fits, id="probe-fits-text")
        yield ProbeProgress("", id="probe-progress")
        yield ProbeResults(id="probe-results", cursor_type="row", zebra_stripes=True)
        yield ProbeTelemetry("", id="probe-telemetry")
        yield Static(IDLE_SUMMARY, id="probe-summary")
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
        gpus = self.query_one("#probe-gpus", SelectionList)
        if self.cpu:
            gpus.disabled = True
            gpus.border_subtitle = "simulated: the probe runs on the CPU"
        self.query_one("#probe-tests", SelectionList).focus()
        self._show_progress()
        self._show_telemetry()

    # -- data in -----------------------------------------------------------------------------------

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """A new reading: telemetry for the GPUs in the run, fits from free memory."""
        self.snapshot = snapshot
        self.state.observe(snapshot)
        if not self.is_mounted:
            return
        self._show_telemetry()
        self._show_fits()

    def on_selection_list_selection_highlighted(
        self, event: SelectionList.SelectionHighlighted[int]
    ) -> None:
        if event.selection_list.id != "probe-gpus":
            return
        value = event.selection.value
        if isinstance(value, int) and value != self.fits_gpu:
            self.fits_gpu = value
            self._show_fits()

    def on_probe_event(self, event: ProbeEvent) -> None:
        if event.gpu_index not in self.state.runs:
            return
        self.state.apply(event.gpu_index, event.msg)
        match event.msg:
            case Result():
                self._show_results()
            case Done() if not self.running:
                self.summary_text = self.state.summary()
                if self.is_mounted:
                    self.query_one("#probe-summary", Static).update(self.summary_text)
        self._show_progress()

    # -- what the panels show ----------------------------------------------------------------------

    def telemetry_lines(self) -> list[str]:
        """One line per GPU in the run (or checked in the picker before a run)."""
        if self.cpu:
            return ["telemetry: none on the CPU"]
        gpus = [g for g in self.runs if g is not None] or self._checked_gpus()
        lines = []
        for gpu in gpus:
            sample = self.snapshot.sample(gpu) if self.snapshot is not None else None
            lines.append(f"GPU {gpu:<2} {telemetry_text(sample)}")
        return lines

    def progress_lines(self) -> list[Text]:
        return progress_lines(self.runs)

    def _show_fits(self) -> None:
        self.query_one("#probe-fits-text", ProbeFits).show(self.node, self.snapshot, self.fits_gpu)

    def _show_telemetry(self) -> None:
        self.query_one("#probe-telemetry", ProbeTelemetry).show(self.telemetry_lines())

    def _show_progress(self) -> None:
        if self.is_mounted:
            self.query_one("#probe-progress", ProbeProgress).show(self.runs)

    def _show_results(self) -> None:
        if self.is_mounted:
            self.query_one("#probe-results", ProbeResults).show(self.state.judged())

    def _checked_gpus(self) -> list[int]:
        try:
            return sorted(self.query_one("#probe-gpus", SelectionList).selected)
        except Exception:
            return []

    def _checked_tests(self) -> list[str]:
        chosen = set(self.query_one("#probe-tests", SelectionList).selected)
        return [t for t in TEST_IDS if t in chosen]

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
        self.state.begin(targets, tests, self.snapshot)
        self.summary_text = ""
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
    "SessionFactory",
    "SubprocessProbeSession",
    "cpu_mode",
    "is_busy",
]
