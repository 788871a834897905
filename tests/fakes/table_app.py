"""A one-widget app around the process table, for tests that drive the table alone."""

from __future__ import annotations

from textual.app import App, ComposeResult

from gputui.core.model import ProcessSample
from gputui.tui.widgets.process_table import ProcessTable


class TableApp(App[None]):
    """The process table, focused, recording the processes Enter selects."""

    def __init__(self) -> None:
        super().__init__()
        self.selected: list[ProcessSample] = []

    def compose(self) -> ComposeResult:
        yield ProcessTable()

    def on_mount(self) -> None:
        self.query_one(ProcessTable).focus()

    def on_process_table_selected(self, event: ProcessTable.Selected) -> None:
        self.selected.append(event.process)


def pids(table: ProcessTable) -> list[int]:
    """PIDs in display order."""
    return [int(key.split(":")[0]) for key in table.row_keys]
