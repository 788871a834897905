"""Ask before signalling a process. A signal takes a deliberate second step, which neither a habit
key nor a double tap gives: an upper-case T (terminate), K (kill) or I (interrupt), or a move to
that button (tab, ← →) and enter. Cancel is the default button, so enter and esc cancel.
Lower-case t, k and i choose nothing (k opened the dialog, t is Topology elsewhere): they say
which key would. Keys that arrive within :data:`TYPE_AHEAD_S` of the dialog opening were typed
before it could be read (key repeat, a double tap): they neither choose a signal nor move to
another button.

Given several processes (tagged on the dashboard), it lists every one of them, one a line, and
the signal chosen goes to each."""

from __future__ import annotations

import signal
from collections.abc import Sequence
from time import monotonic
from typing import ClassVar, TypeVar

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from gputui.core.command_text import command_text
from gputui.core.format import NA, cell_width, clip, fmt_bytes, fmt_size, sanitize
from gputui.core.model import ProcessSample
from gputui.tui.widgets.footer import KeyFooter

TYPE_AHEAD_S = 0.3
"""Keys this soon after the dialog opens choose no signal (only esc, and enter on Cancel, act)."""

_BUTTON_SIGNALS: dict[str, signal.Signals] = {
    "signal-int": signal.SIGINT,
    "signal-term": signal.SIGTERM,
    "signal-kill": signal.SIGKILL,
}

_KEYS: tuple[tuple[tuple[str, str], ...], ...] = (
    (("T", "terminate (SIGTERM)"), ("K", "kill (SIGKILL)"), ("I", "interrupt (SIGINT)")),
    (("esc", "cancel"), ("tab ← →", "pick a button"), ("enter", "press it")),
)
"""The legend, line by line: upper-case letters send a signal, lower-case ones do not."""


def keys_text() -> Text:
    text = Text("Keys (upper-case letters; lower-case ones send nothing):")
    for line in _KEYS:
        text.append("\n")
        for key, words in line:
            text.append(f"  {key} ", style="bold")
            text.append(words)
    return text


LIST_WIDTH = 64
"""Cells of one process's line in the list of several (the dialog's width less its frame)."""


def process_line(process: ProcessSample, width: int = LIST_WIDTH) -> str:
    """One process of several: PID, user, GPU, its GPU memory and as much command as fits."""
    user = clip(sanitize(process.user or NA), 10)
    head = f"{process.pid:>8}  {user:<10}  GPU {process.gpu_index:<2} "
    head += f"{fmt_bytes(process.gpu_memory_bytes):>6}  "
    room = max(width - cell_width(head), 8)
    return head + command_text(process.command, process.name, process.container_id, width=room)


_NUDGES = {
    "t": "T (upper-case) terminates",
    "k": "K (upper-case) kills",
    "i": "I (upper-case) interrupts",
}


Choice = TypeVar("Choice")


class GuardedDialog(ModalScreen[Choice | None]):
    """A confirmation dialog that opens on its Cancel button (:attr:`CANCEL_ID`) and ignores the
    keys typed before it could be read (within :data:`TYPE_AHEAD_S` of opening): a key typed
    ahead chooses nothing; esc and enter, on Cancel then, still cancel."""

    CANCEL_ID = "cancel"
    _opened_at = 0.0
    """When the dialog mounted (monotonic); no key reaches it before."""

    def on_mount(self) -> None:
        self._opened_at = monotonic()
        self.query_one(f"#{self.CANCEL_ID}", Button).focus()

    def typed_ahead(self) -> bool:
        """A key now was typed before the dialog could be read."""
        return monotonic() - self._opened_at < TYPE_AHEAD_S

    def on_key(self, event: events.Key) -> None:
        # Runs before any binding: keys typed ahead move to no other button.
        if self.typed_ahead() and event.key not in ("escape", "enter"):
            event.stop()
            event.prevent_default()


class ConfirmSignalScreen(GuardedDialog[signal.Signals]):
    """Dismisses with the chosen signal, or None when cancelled."""

    DEFAULT_CSS = """
    ConfirmSignalScreen {
        align: center middle;
    }
    ConfirmSignalScreen > #confirm-dialog {
        width: 72;
        max-width: 100%;
        height: auto;
        max-height: 100%;
        overflow-y: auto;
        border: thick $warning 60%;
        background: $surface;
        padding: 1 2;
    }
    ConfirmSignalScreen #confirm-title {
        text-style: bold;
        margin-bottom: 1;
    }
    ConfirmSignalScreen #confirm-details, ConfirmSignalScreen #confirm-keys {
        margin-bottom: 1;
    }
    ConfirmSignalScreen #confirm-buttons {
        height: auto;
        align-horizontal: center;
        overflow-x: auto;
    }
    ConfirmSignalScreen #confirm-buttons Button {
        margin: 0 1;
        min-width: 12;
    }
    """

    CANCEL_ID = "signal-cancel"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("T", "send('SIGTERM')", "Terminate", id="confirm_signal.terminate"),
        Binding("K", "send('SIGKILL')", "Kill", id="confirm_signal.kill"),
        Binding("I", "send('SIGINT')", "Interrupt", id="confirm_signal.interrupt"),
        Binding("escape", "cancel", "Cancel", id="confirm_signal.cancel"),
        Binding("left", "app.focus_previous", "Previous button", show=False),
        Binding("right", "app.focus_next", "Next button", show=False),
        Binding("t", "nudge('t')", show=False),
        Binding("k", "nudge('k')", show=False),
        Binding("i", "nudge('i')", show=False),
    ]

    def __init__(
        self,
        process: ProcessSample | Sequence[ProcessSample],
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """``process``: the one to signal, or several (each gets the signal chosen)."""
        super().__init__(name=name, id=id, classes=classes)
        self.processes = (process,) if isinstance(process, ProcessSample) else tuple(process)
        if not self.processes:
            raise ValueError("no process to signal")
        self.process = self.processes[0]

    def _details(self) -> tuple[str, Text]:
        """The dialog's title and what it says about the process (or each process)."""
        if len(self.processes) > 1:
            details = Text(f"{'PID':>8}  {'USER':<10}  GPU    {'MEM':>6}  COMMAND\n", "bold")
            details.append("\n".join(process_line(p) for p in self.processes))
            return f"Send a signal to these {len(self.processes)} processes?", details
        proc = self.process
        details = Text()
        for label, value in (
            ("PID", str(proc.pid)),
            ("User", sanitize(proc.user or NA)),
            ("GPU", f"{proc.gpu_index}  ({fmt_size(proc.gpu_memory_bytes)} GPU memory)"),
            ("Command", command_text(proc.command, proc.name, proc.container_id)),
        ):
            details.append(f"{label:<9}", style="bold")
            details.append(f"{value}\n")
        details.rstrip()
        return f"Send a signal to PID {proc.pid}?", details

    def compose(self) -> ComposeResult:
        title, details = self._details()
        with Vertical(id="confirm-dialog"):
            yield Label(title, id="confirm-title", markup=False)
            yield Static(details, id="confirm-details")
            yield Static(keys_text(), id="confirm-keys")
            with Horizontal(id="confirm-buttons"):  # the default first, Kill last
                yield Button("Cancel (Esc)", id="signal-cancel", variant="primary")
                yield Button("Interrupt (I)", id="signal-int")
                yield Button("Terminate (T)", id="signal-term", variant="warning")
                yield Button("Kill (K)", id="signal-kill", variant="error")
        yield KeyFooter()  # the dialog's keys, not the dashboard's under it

    @on(Button.Pressed)
    def _button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        sig = _BUTTON_SIGNALS.get(event.button.id or "")
        if sig is None:
            self.dismiss(None)
        else:
            self._choose(sig)

    def action_send(self, name: str) -> None:
        self._choose(signal.Signals[name])

    def _choose(self, sig: signal.Signals) -> None:
        if not self.typed_ahead():
            self.dismiss(sig)

    def action_nudge(self, key: str) -> None:
        """Lower-case t, k, i: no signal, only which key would send one."""
        self.notify(f"{_NUDGES[key]}; esc cancels", title="no signal sent", timeout=3)

    def action_cancel(self) -> None:
        self.dismiss(None)


__all__ = ["TYPE_AHEAD_S", "ConfirmSignalScreen"]
