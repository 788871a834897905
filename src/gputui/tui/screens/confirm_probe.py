"""Ask before probing a busy GPU. ``gputui probe`` refuses a GPU with processes or memory in use
unless given ``--force``: the probe's load slows the jobs running there, and their load makes
the results low. The screen asks the same question, in the look of the signal dialog
(:class:`~gputui.tui.screens.confirm_signal.ConfirmSignalScreen`): Cancel is the default button,
so enter and esc cancel; upper-case F (as in ``--force``) probes anyway, and I probes only the
idle GPUs picked with them. Keys typed before the dialog could be read choose nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Label, Static

from gputui.core.format import sanitize
from gputui.tui.screens.confirm_signal import ConfirmSignalScreen, GuardedDialog

ProbeChoice = Literal["all", "idle"]
"""``all``: probe every GPU picked, busy ones too; ``idle``: only the picked GPUs not busy."""

FORCE_SUFFIX = " Use --force to probe it anyway."


def _dialog_css() -> str:
    """The signal dialog's look (its frame, title, details, keys and buttons), for this one."""
    return ConfirmSignalScreen.DEFAULT_CSS.replace("ConfirmSignalScreen", "ConfirmProbeScreen")


class ConfirmProbeScreen(GuardedDialog[ProbeChoice]):
    """Dismisses with ``"all"``, ``"idle"`` or None (cancelled)."""

    DEFAULT_CSS = _dialog_css()

    CANCEL_ID = "probe-cancel"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("F", "choose('all')", "Probe anyway", id="confirm_probe.force"),
        Binding("I", "choose('idle')", "Idle GPUs only", id="confirm_probe.idle"),
        Binding("escape", "cancel", "Cancel", id="confirm_probe.cancel"),
        Binding("left", "app.focus_previous", "Previous button", show=False),
        Binding("right", "app.focus_next", "Next button", show=False),
    ]

    def __init__(self, reasons: Sequence[str], idle: Sequence[int] = ()) -> None:
        """``reasons``: why each busy GPU picked is busy (the command's words); ``idle``: the
        GPUs picked that are not busy."""
        super().__init__(id="confirm-probe")
        self.reasons = [sanitize(r).removesuffix(FORCE_SUFFIX) for r in reasons]
        self.idle = list(idle)

    def compose(self) -> ComposeResult:
        n = len(self.reasons)
        details = Text()
        for reason in self.reasons:
            details.append("• ", style="bold")
            details.append(f"{reason}\n")
        details.append(
            "The command line refuses busy GPUs without --force: the probe's load slows the "
            "jobs running there, and their load makes the results low."
        )
        keys = Text()
        for key, words in (("F", "probe anyway"), ("I", "idle GPUs only"), ("esc", "cancel")):
            if key == "I" and not self.idle:
                continue
            keys.append(f"  {key} ", style="bold")
            keys.append(words)
        with Vertical(id="confirm-dialog"):
            yield Label(
                f"Probe {n} busy GPU{'s' if n != 1 else ''}?", id="confirm-title", markup=False
            )
            yield Static(details, id="confirm-details")
            yield Static(keys, id="confirm-keys")
            with Horizontal(id="confirm-buttons"):  # the default first
                yield Button("Cancel (Esc)", id="probe-cancel", variant="primary")
                if self.idle:
                    idle = ", ".join(str(g) for g in self.idle)
                    yield Button(f"Only GPU {idle} (I)", id="probe-idle")
                yield Button("Probe anyway (F)", id="probe-force", variant="warning")

    @on(Button.Pressed)
    def _button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        choice: dict[str, ProbeChoice] = {"probe-force": "all", "probe-idle": "idle"}
        picked = choice.get(event.button.id or "")
        if picked is None:
            self.dismiss(None)
        else:
            self.action_choose(picked)

    def action_choose(self, choice: ProbeChoice) -> None:
        if choice == "idle" and not self.idle:
            return
        if not self.typed_ahead():
            self.dismiss(choice)

    def action_cancel(self) -> None:
        self.dismiss(None)


__all__ = ["ConfirmProbeScreen", "ProbeChoice"]
