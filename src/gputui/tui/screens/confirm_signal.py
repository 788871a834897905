"""Ask before signalling a process: Interrupt, Terminate (the default), Kill or Cancel."""

from __future__ import annotations

import signal
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from gputui.format import NA, command_text, fmt_bytes, sanitize
from gputui.model import ProcessSample

_BUTTON_SIGNALS: dict[str, signal.Signals] = {
    "signal-int": signal.SIGINT,
    "signal-term": signal.SIGTERM,
    "signal-kill": signal.SIGKILL,
}


class ConfirmSignalScreen(ModalScreen[signal.Signals | None]):
    """Dismisses with the chosen signal, or None when cancelled."""

    DEFAULT_CSS = """
    ConfirmSignalScreen {
        align: center middle;
    }
    ConfirmSignalScreen > #confirm-dialog {
        width: 72;
        max-width: 100%;
        height: auto;
        border: thick $warning 60%;
        background: $surface;
        padding: 1 2;
    }
    ConfirmSignalScreen #confirm-title {
        text-style: bold;
        margin-bottom: 1;
    }
    ConfirmSignalScreen #confirm-details {
        margin-bottom: 1;
    }
    ConfirmSignalScreen #confirm-buttons {
        height: auto;
        align-horizontal: center;
    }
    ConfirmSignalScreen #confirm-buttons Button {
        margin: 0 1;
        min-width: 12;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("i", "send('SIGINT')", "Interrupt", id="confirm_signal.interrupt"),
        Binding("t", "send('SIGTERM')", "Terminate", id="confirm_signal.terminate"),
        Binding("k", "send('SIGKILL')", "Kill", id="confirm_signal.kill"),
        Binding("escape", "cancel", "Cancel", id="confirm_signal.cancel"),
    ]

    def __init__(
        self,
        process: ProcessSample,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.process = process

    def compose(self) -> ComposeResult:
        proc = self.process
        details = Text()
        for label, value in (
            ("PID", str(proc.pid)),
            ("User", sanitize(proc.user or NA)),
            ("GPU", f"{proc.gpu_index}  ({fmt_bytes(proc.gpu_memory_bytes)} GPU memory)"),
            ("Command", command_text(proc.command, proc.name, proc.container_id)),
        ):
            details.append(f"{label:<9}", style="bold")
            details.append(f"{value}\n")
        details.rstrip()
        with Vertical(id="confirm-dialog"):
            yield Label(f"Send a signal to PID {proc.pid}?", id="confirm-title")
            yield Static(details, id="confirm-details")
            with Horizontal(id="confirm-buttons"):
                yield Button("Interrupt (i)", id="signal-int")
                yield Button("Terminate (t)", id="signal-term", variant="warning")
                yield Button("Kill (k)", id="signal-kill", variant="error")
                yield Button("Cancel (esc)", id="signal-cancel")

    def on_mount(self) -> None:
        self.query_one("#signal-term", Button).focus()

    @on(Button.Pressed)
    def _button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(_BUTTON_SIGNALS.get(event.button.id or ""))

    def action_send(self, name: str) -> None:
        self.dismiss(signal.Signals[name])

    def action_cancel(self) -> None:
        self.dismiss(None)


__all__ = ["ConfirmSignalScreen"]
