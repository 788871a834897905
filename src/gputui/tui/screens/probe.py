"""The probe screen (key ``p``): is each GPU performing like its spec sheet says?

Top to bottom:

* the pickers, boxes that read ``[x]`` / ``[ ]`` without colour, focus on the GPUs: GPUs (idle
  ones checked; a busy GPU, one with processes or more than 1 GiB in use, is listed unchecked
  with "busy — needs --force on the CLI", and starting a probe on one asks first, as the command
  refuses it without ``--force``; a GPU that fell off the bus or that the driver cannot read is
  listed but cannot be picked, with the reason, exactly as ``gputui probe`` refuses it) and tests
  (the quick set checked), a Start button (or ``enter``), and beside them the "What fits" panel
  for the highlighted GPU and for the whole node (:mod:`gputui.specs.fit`), with its
  assumptions;
* live progress: one determinate text bar per GPU (no animation); a run that failed keeps its
  bar where it stopped, in red, with "failed" and why;
* the results table: GPU, test, measured, spec, % of spec, verdict, how it was measured and
  judged (the same judgement as the command's);
* live telemetry per GPU in the run (SM clock, power, temperature, throttle reasons), fed by
  :meth:`ProbeScreen.update_snapshot`;
* a plain-language summary when every GPU is done: a failed run says why and what to do (a
  torch without CUDA: ``gputui probe --python PATH`` with one that has it), and each skipped test
  gets a line with its reason.

The screen is given everything it uses: the node, the latest reading (and every later one through
:meth:`ProbeScreen.update_snapshot`) and a session factory. It never runs the probe itself: it
talks to a :class:`~gputui.tui.screens.probe_session.ProbeSession` (start, cancel) and receives
the worker's protocol messages as :class:`~gputui.tui.screens.probe_session.ProbeEvent` Textual
messages, folded into a :class:`~gputui.tui.screens.probe_state.ProbeRunState`. The node is
taken from the latest reading (the wiring that judges GPU pairs arrives with the first one).

On a simulated node (or with no GPU) the screen runs a CPU run and says so plainly: the title
reads "CPU run", the GPU picker is disabled, the results are labelled CPU with no spec and the
summary starts "CPU run". ``gputui probe`` refuses a simulated node unless given ``--cpu``,
because a script reading its exit code or JSON could take a CPU number for a GPU's; here a
person starts the run by hand and every place it shows says CPU, which is the screen's
equivalent of ``--cpu`` and keeps the demo's probe screen usable. Esc cancels a running probe
(the children are terminated) and closes the screen.

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
from textual.widgets import Button, Static
from textual.widgets.selection_list import Selection

from gputui.core.format import sanitize, short_gpu_name
from gputui.core.model import NodeInfo, Snapshot
from gputui.probe.protocol import TEST_IDS, Done, Result
from gputui.probe.runner import busy_reason, node_of, unusable_label, unusable_reason
from gputui.tui.screens.confirm_probe import ConfirmProbeScreen, ProbeChoice
from gputui.tui.screens.probe_panels import (
    CPU_VERDICT,
    ProbeFits,
    ProbeList,
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
    CPU_RUN_TEXT,
    TEST_NAMES,
    DeviceRun,
    ProbeRunState,
    ResultRow,
)
from gputui.tui.widgets.check_list import CheckList
from gputui.tui.widgets.footer import KeyFooter

NARROW_BELOW = 100
"""Below this width the probe screen stacks "what fits" under the pickers and scrolls."""
BUSY_TEXT = "busy — needs --force on the CLI"
BUSY_SHORT = "busy (--force)"
"""The busy mark in a very narrow terminal."""
SHORT_LABELS_BELOW = 78
"""Below this width a GPU's line with the whole busy mark does not fit beside the tests."""
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
    """Processes on the GPU, or more than 1 GiB of its memory in use: the command's rule
    (:func:`gputui.probe.runner.busy_reason`)."""
    return snapshot is not None and busy_reason(snapshot, index) is not None


def unusable_gpus(node: NodeInfo, snapshot: Snapshot | None) -> dict[int, str]:
    """GPU index -> why it cannot be probed (lost, not answering), by the command's rule
    (:func:`gputui.probe.runner.unusable_label`)."""
    if snapshot is None:
        return {}
    return {info.index: why for info in node.gpus if (why := unusable_label(snapshot, info.index))}


def cpu_mode(node: NodeInfo) -> bool:
    """The probe runs on the CPU: a simulated node (no real GPU), or no GPU at all."""
    return not node.gpus or node.simulated


class SessionFactory(Protocol):
    """Makes the session that runs a probe for the screen (tests pass fakes)."""

    def __call__(self, screen: ProbeScreen, /) -> ProbeSession: ...


def default_session(screen: ProbeScreen) -> ProbeSession:
    """Worker child processes, on the CPU when the screen is in CPU mode."""
    return SubprocessProbeSession(screen, cpu=screen.cpu)


class ProbeScreen(Screen[None]):
    """Pick GPUs and tests, run the probe, see measured vs spec with a verdict."""

    CSS_PATH = "probe.tcss"  # read when the screen first opens, not before the first frame
    HORIZONTAL_BREAKPOINTS = [  # noqa: RUF012  (typed by Screen; annotating it here trips mypy)
        (0, "-narrow"),
        (NARROW_BELOW, "-wide"),
    ]
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
        node = node_of(node, snapshot)
        self.node = node
        self.snapshot = snapshot
        self.cpu = cpu_mode(node)
        self.session_factory: SessionFactory = session_factory or default_session
        self.session: ProbeSession | None = None
        self.state = ProbeRunState(node)
        self.summary_text = ""
        self.fits_gpu: int | None = node.gpus[0].index if node.gpus else None
        self.busy = {info.index for info in node.gpus if is_busy(info.index, snapshot)}
        self._labels_short: bool | None = None
        self.unusable = unusable_gpus(node, snapshot)
        """GPU index -> why it cannot be probed; listed, never selectable."""

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
        title = f"Probe — {sanitize(self.node.hostname)}"
        if self.cpu:
            title += f" — {CPU_RUN_TEXT}"
        yield Static(title, id="probe-title", markup=False)
        # Wide: pickers and "what fits" side by side over the results. Narrow (-narrow, see
        # gputui.tcss): the pickers side by side with Start under the tests, "what fits" below
        # them, and the whole body scrolls.
        with Vertical(id="probe-body"):
            with Horizontal(id="probe-top"):
                gpus = ProbeList[int](*self._gpu_selections(), id="probe-gpus")
                gpus.border_title = "GPUs"
                yield gpus
                with Vertical(id="probe-tests-box"):
                    tests = ProbeList[str](
                        *(
                            Selection(TEST_NAMES.get(t, t), t, t in QUICK_TESTS, id=t)
                            for t in TEST_IDS
                        ),
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
        yield KeyFooter()

    def _gpu_label(self, index: int, name: str) -> Text:
        label = Text(f"{index:<2} {short_gpu_name(sanitize(name))[:8]:<8}")
        if index in self.unusable:
            label.append(f" {self.unusable[index]}", style="red")
        elif index in self.busy:
            label.append(f" {BUSY_SHORT if self._short_labels else BUSY_TEXT}", style="yellow")
        return label

    @property
    def _short_labels(self) -> bool:
        """Very narrow: the GPU list shares the width with the tests, so "busy" says less."""
        return self.app.size.width < SHORT_LABELS_BELOW

    def on_resize(self) -> None:
        short = self._short_labels
        if short == self._labels_short or not self.is_mounted:
            return
        self._labels_short = short
        gpus = self.query_one("#probe-gpus", CheckList)
        for info in self.node.gpus:
            if info.index in self.busy:
                gpus.replace_option_prompt(str(info.index), self._gpu_label(info.index, info.name))

    def _gpu_selections(self) -> list[Selection[int]]:
        out = []
        for info in self.node.gpus:
            refused = info.index in self.unusable
            checked = not refused and info.index not in self.busy and not self.cpu
            out.append(
                Selection(
                    self._gpu_label(info.index, info.name),
                    info.index,
                    checked,
                    id=str(info.index),
                    disabled=refused,
                )
            )
        return out

    def _refresh_unusable(self) -> None:
        """A GPU that got lost (or came back) since the screen opened: relist it."""
        now = unusable_gpus(self.node, self.snapshot)
        if now == self.unusable:
            return
        changed = set(now) ^ set(self.unusable) | {i for i in now if self.unusable.get(i) != now[i]}
        self.unusable = now
        if not self.is_mounted:
            return
        gpus = self.query_one("#probe-gpus", CheckList)
        for index in sorted(changed):
            info = self.node.gpu(index)
            if info is None:
                continue
            option_id = str(index)
            if index in now:
                gpus.deselect(index)
            gpus.replace_option_prompt(option_id, self._gpu_label(index, info.name))
            if index in now:
                gpus.disable_option(option_id)
            else:
                gpus.enable_option(option_id)

    def on_mount(self) -> None:
        gpus = self.query_one("#probe-gpus", CheckList)
        if self.cpu:
            gpus.disabled = True
            gpus.border_subtitle = "simulated: a CPU run instead"
        elif self.unusable:
            gpus.border_subtitle = f"{len(self.unusable)} cannot be probed"
        # The GPUs first: what to probe, then how (the tests are preset to the quick set).
        (self.query_one("#probe-tests", CheckList) if self.cpu else gpus).focus()
        self._show_progress()
        self._show_telemetry()

    # -- data in -----------------------------------------------------------------------------------

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """A new reading: the node as of now, lost GPUs relisted, telemetry for the GPUs in the
        run, fits from free memory."""
        self.node = node_of(self.node, snapshot)
        self.snapshot = snapshot
        self.state.observe(snapshot)
        self._refresh_unusable()
        if not self.is_mounted:
            return
        self._show_telemetry()
        self._show_fits()

    def on_selection_list_selection_highlighted(
        self, event: CheckList.SelectionHighlighted[int]
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
            return sorted(self.query_one("#probe-gpus", CheckList).selected)
        except Exception:
            return []

    def _checked_tests(self) -> list[str]:
        chosen = set(self.query_one("#probe-tests", CheckList).selected)
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
        snapshot = self.snapshot
        if not self.cpu and snapshot is not None:  # the command's refusal, never a worker on it
            refused = {g: why for g in gpus if (why := unusable_reason(snapshot, g))}
            if refused:
                self.notify(" ".join(refused.values()), severity="error", timeout=8)
                gpus = [g for g in gpus if g not in refused]
        if not self.cpu and not gpus:
            self.notify("pick at least one GPU", severity="warning", timeout=3)
            return
        busy = [g for g in gpus if g in self.busy]
        if busy and snapshot is not None:
            # The command refuses a busy GPU without --force: here, ask.
            reasons = [busy_reason(snapshot, g) or f"GPU {g} is busy." for g in busy]
            idle = [g for g in gpus if g not in self.busy]

            def chosen(choice: ProbeChoice | None) -> None:
                if choice is not None:
                    self.start(gpus if choice == "all" else idle, tests)

            self.app.push_screen(ConfirmProbeScreen(reasons, idle), chosen)
            return
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
                + (
                    f"{CPU_LABEL} (CPU run: no real GPU on a simulated node)"
                    if self.cpu
                    else f"GPU {', '.join(str(g) for g in gpus)}"
                )
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
    "unusable_gpus",
]
