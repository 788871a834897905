"""The fleet view's two screens: every node (:class:`FleetScreen`) and one node's GPUs with their
history (:class:`NodeScreen`). Each receives what it shows through ``update_*`` calls from the app
and asks for anything else by posting a message; neither touches the network."""

from __future__ import annotations

import time
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from gputui.core.format import sanitize
from gputui.fleet.model import Fleet, FleetGpu, FleetNode
from gputui.fleet.source import NodeHistory
from gputui.tui.fleet.messages import OpenNode
from gputui.tui.fleet.table import KeyedTable
from gputui.tui.fleet.widgets import (
    NodeCharts,
    fleet_title,
    gpu_columns,
    gpu_search_text,
    node_columns,
    node_search_text,
    node_title,
)
from gputui.tui.widgets.line_widget import MeterPalette

MAX_REASON_LINES = 3


class TextLine(Static):
    """A Static that repaints only when its text changes (an update re-sends its whole region,
    and most refreshes change nothing in a title or a banner)."""

    def __init__(self, *, id: str) -> None:
        super().__init__("", id=id)
        self.text = ""

    def show(self, text: str) -> None:
        if text != self.text:
            self.text = text
            self.update(Text(text))  # Text: label values are data, never markup


class FleetScreen(Screen[None]):
    """One row per node, worst first; Enter opens a node."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter", id="fleet.filter"),
        Binding("f", "problems", "Problems only", id="fleet.problems"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="fleet.clear_filter"),
    ]

    def __init__(self, url: str, interval: float) -> None:
        super().__init__()
        self.url = url
        self.interval = interval
        self.fleet: Fleet | None = None
        self.data_age: float | None = None
        """Seconds since the fleet's query while the data is stale (None: fresh)."""
        self.problems_only = False
        self.title_line = TextLine(id="fleet-title")
        self.banner = TextLine(id="fleet-banner")
        self.banner.display = False
        self.filter_input = Input(
            placeholder="filter nodes: host, instance, model, reason", id="fleet-filter"
        )
        self.filter_input.display = False
        self.nodes: KeyedTable[FleetNode] = KeyedTable(
            node_columns(self._now, lambda: self.data_age is not None),
            key=lambda n: n.instance,
            search=node_search_text,
            default_sort="health",
            empty="no GPU nodes: no DCGM_FI_DEV_* or gputui_* series in the answer",
            narrow=(160, frozenset({"instance"})),
            id="nodes",
        )

    def compose(self) -> ComposeResult:
        yield self.title_line
        yield self.banner
        yield self.filter_input
        yield self.nodes
        yield Footer()

    def on_mount(self) -> None:
        self.title_line.show(fleet_title(self.fleet, self.url, self.interval))
        self.nodes.focus()

    def _now(self) -> float:
        if self.fleet is None:
            return time.time()
        return self.fleet.time + (self.data_age or 0.0)

    # -- data --------------------------------------------------------------------------------------

    def update_fleet(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.title_line.show(fleet_title(fleet, self.url, self.interval))
        self.nodes.set_items(fleet.nodes)

    def show_age(self, age: float | None) -> None:
        """The data is ``age`` seconds old and stale (None: fresh): ages are shown from now."""
        if age != self.data_age:
            self.data_age = age
            if self.fleet is not None:
                self.nodes.set_items(self.fleet.nodes)

    def show_error(self, text: str | None) -> None:
        if text is not None:
            self.banner.show(text)
        self.banner.display = text is not None

    # -- keys --------------------------------------------------------------------------------------

    def action_filter(self) -> None:
        self.filter_input.display = True
        self.filter_input.focus()

    def action_clear_filter(self) -> None:
        self.filter_input.value = ""
        self.filter_input.display = False
        self.nodes.focus()

    def action_problems(self) -> None:
        self.problems_only = not self.problems_only
        self.nodes.set_extra_filter(
            (lambda n: n.health != "ok") if self.problems_only else None,
            "every node is healthy (f shows them all)",
        )
        self.notify("problems only" if self.problems_only else "all nodes", timeout=2)

    @on(Input.Changed, "#fleet-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.nodes.text_filter = event.value

    @on(Input.Submitted, "#fleet-filter")
    def _filter_done(self) -> None:
        if not self.filter_input.value:
            self.filter_input.display = False
        self.nodes.focus()

    @on(KeyedTable.Selected, "#nodes")
    def _open(self, event: KeyedTable.Selected) -> None:
        self.post_message(OpenNode(event.item.instance))


class NodeScreen(Screen[None]):
    """One node: its GPUs (the node dashboard's fields, as far as the metrics carry them), why it
    is not healthy, and history charts from one range query per metric."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,backspace", "close", "Back", id="node.close"),
    ]

    def __init__(self, instance: str, fleet: Fleet | None) -> None:
        super().__init__()
        self.instance = instance
        self.fleet = fleet
        self.node: FleetNode | None = None
        self.data_age: float | None = None
        """As :attr:`FleetScreen.data_age`."""
        self.history: NodeHistory | None = None
        self.history_error: str | None = None
        self.title_line = TextLine(id="node-title")
        self.banner = TextLine(id="node-banner")
        self.banner.display = False
        self.reasons = TextLine(id="node-reasons")
        self.gpus: KeyedTable[FleetGpu] = KeyedTable(
            gpu_columns(),
            key=lambda g: str(g.index),
            search=gpu_search_text,
            default_sort="gpu",
            empty="no GPU metrics from this node",
            narrow=(150, frozenset({"sm_clock", "mem_clock"})),
            id="node-gpus",
        )
        self.charts = NodeCharts(id="node-charts")

    def compose(self) -> ComposeResult:
        yield MeterPalette()
        yield self.title_line
        yield self.banner
        yield self.reasons
        yield self.gpus
        yield self.charts
        yield Footer()

    def on_mount(self) -> None:
        if self.fleet is not None:
            self.update_fleet(self.fleet)
        else:
            self.title_line.show(node_title(None, self.instance, None))
        self.gpus.focus()

    def update_fleet(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.node = node = fleet.node(self.instance)
        self._show_title()
        reasons = list(node.reasons) if node is not None else []
        lines = [f"• {sanitize(r)}" for r in reasons[:MAX_REASON_LINES]]
        if len(reasons) > MAX_REASON_LINES:
            lines.append(f"  … and {len(reasons) - MAX_REASON_LINES} more")
        self.reasons.show("\n".join(lines))
        self.reasons.display = bool(lines)
        gpus = node.gpus if node is not None else ()
        self.gpus.set_items(gpus)
        self.charts.show(gpus, self.history, self.history_error)

    def show_age(self, age: float | None) -> None:
        """As :meth:`FleetScreen.show_age`."""
        if age != self.data_age:
            self.data_age = age
            self._show_title()

    def _show_title(self) -> None:
        if self.fleet is None:
            return
        now = self.fleet.time + (self.data_age or 0.0)
        stale = self.data_age is not None
        self.title_line.show(node_title(self.node, self.instance, now, stale))

    def update_history(self, history: NodeHistory | None, error: str | None) -> None:
        if history is not None or error is not None:
            self.history, self.history_error = history, error
        gpus = self.node.gpus if self.node is not None else ()
        self.charts.show(gpus, self.history, self.history_error)

    def show_error(self, text: str | None) -> None:
        if text is not None:
            self.banner.show(text)
        self.banner.display = text is not None

    def action_close(self) -> None:
        self.dismiss(None)


__all__ = ["FleetScreen", "NodeScreen"]
