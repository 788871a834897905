"""The environment of one process (key e, as in nvitop): ``NAME=value``, one a line, in the order
the process has them; or, when it cannot be read, whose process it is and why.

The read (:mod:`gputui.host.environ`) runs in a thread worker (a process stuck in the kernel can
hold up a read of its ``/proc`` files). The values may hold secrets: they are drawn on this
screen and nowhere else (no notification, no log, no file), and dropped when it closes.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Label, Static

from gputui.core.command_text import command_text
from gputui.core.format import sanitize
from gputui.core.model import ProcessSample
from gputui.host.environ import Environ, EnvironReader
from gputui.tui.widgets.footer import KeyFooter


def no_reader(process: ProcessSample) -> Environ:
    """Where the dashboard was given no way to read environments."""
    return Environ(process.pid, problem="gputui cannot read environments here")


def environ_text(environ: Environ) -> Text:
    """What the screen shows for what was read."""
    if environ.problem is not None:
        return Text(environ.problem)
    if not environ.variables:
        return Text(
            f"PID {environ.pid} has an empty environment (a kernel thread or a zombie has none)"
        )
    width = min(max(len(name) for name, _ in environ.variables), 32)
    text = Text()
    for name, value in environ.variables:
        text.append(sanitize(name).ljust(width), style="bold")
        text.append(" = ")
        text.append(sanitize(value) + "\n")
    if environ.cut:
        text.append("… (more than 1 MiB: the rest was not read)", style="italic")
    text.rstrip()
    return text


class EnvironScreen(Screen[None]):
    """One process's environment; esc, q or e closes it."""

    DEFAULT_CSS = """
    EnvironScreen #environ-body {
        padding: 1 2;
    }
    EnvironScreen #environ-title {
        text-style: bold;
    }
    EnvironScreen #environ-command {
        color: $text-muted;
        margin-bottom: 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,e", "close", "Close", id="environ.close"),
    ]

    def __init__(self, process: ProcessSample, reader: EnvironReader) -> None:
        super().__init__(id="environ")
        self.process = process
        self.reader = reader
        self.environ: Environ | None = None
        """What was read (None: not yet)."""
        self.body = Static(Text("reading…"), id="environ-text")

    def compose(self) -> ComposeResult:
        proc = self.process
        who = sanitize(proc.user or "unknown user")
        command = command_text(proc.command, proc.name, None, width=200)
        with VerticalScroll(id="environ-body"):
            yield Label(
                f"Environment of PID {proc.pid} · {who} · GPU {proc.gpu_index}",
                id="environ-title",
                markup=False,
            )
            yield Label(command, id="environ-command", markup=False)
            yield self.body
        yield KeyFooter()

    def on_mount(self) -> None:
        self._read()

    @work(thread=True, exclusive=True, group="environ", exit_on_error=False)
    def _read(self) -> None:
        environ = self.reader(self.process)
        self.app.call_from_thread(self._show, environ)

    def _show(self, environ: Environ) -> None:
        self.environ = environ
        if self.is_attached:
            self.body.update(environ_text(environ))

    def action_close(self) -> None:
        self.environ = None
        self.dismiss(None)


__all__ = ["EnvironScreen", "environ_text", "no_reader"]
