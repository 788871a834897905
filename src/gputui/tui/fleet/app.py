"""``gputui fleet``: every GPU node Prometheus knows about, live, in the terminal.

Data flow as in the node dashboard: one polling thread (:class:`~gputui.fleet.poller.FleetPoller`)
sends one batch of queries per refresh and posts the result (:class:`RefreshDone`, replaceable);
:meth:`FleetApp.on_refresh_done` hands it to the screens inside ``batch_update``. The UI thread
never waits on the network. When a refresh fails, the last good data stays on screen under a
banner that says which URL failed and why, and the poller keeps trying every interval.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import App
from textual.binding import Binding, BindingType
from textual.screen import Screen

from gputui.fleet.client import PrometheusError
from gputui.fleet.model import Fleet
from gputui.fleet.poller import FleetPoller, PollResult
from gputui.fleet.source import FleetSource
from gputui.format import fmt_clock, fmt_interval, sanitize
from gputui.tui.fleet.messages import OpenNode, RefreshDone
from gputui.tui.fleet.screens import FleetScreen, NodeScreen


class FleetApp(App[None]):
    # Next to the dashboard's stylesheet, where the package data (tui/*.tcss) includes it.
    CSS_PATH = str(Path(__file__).parent.parent / "fleet.tcss")
    TITLE = "gputui fleet"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", id="quit"),
        Binding("r", "refresh_now", "Refresh", id="refresh"),
    ]

    def __init__(
        self,
        source: FleetSource,
        *,
        interval: float = 5.0,
        theme: str | None = None,
        start_poller: bool = True,
    ) -> None:
        """``start_poller=False``: nothing is fetched unless a test posts :class:`RefreshDone`
        (or calls :meth:`poll_now`)."""
        super().__init__()
        self.source = source
        self.interval = interval
        self.start_poller = start_poller
        self.poller = FleetPoller(source, interval, self._post_result)
        self.fleet: Fleet | None = None
        self.error: str | None = None
        self.refreshes = 0
        """Results handled so far (tests wait on it)."""
        if theme is not None:
            self.theme = theme
        self.fleet_screen = FleetScreen(source.url, interval)

    def get_default_screen(self) -> Screen[None]:
        return self.fleet_screen

    def on_mount(self) -> None:
        if self.start_poller:
            self.poller.start()

    def on_unmount(self) -> None:
        self.poller.stop()

    def _post_result(self, result: PollResult) -> None:
        self.post_message(RefreshDone(result))  # from the polling thread

    def poll_now(self) -> None:
        """One refresh on the calling thread, posted like the poller's (for tests and scripts)."""
        self._post_result(self.poller.poll())

    # -- results -----------------------------------------------------------------------------------

    def on_refresh_done(self, message: RefreshDone) -> None:
        result = message.result
        self.refreshes += 1
        with self.batch_update():
            if result.fleet is not None:
                self.fleet = result.fleet
                self.error = None
                self.fleet_screen.update_fleet(result.fleet)
            else:
                self.error = self._banner(result.error)
            self.fleet_screen.show_error(self.error)
            for screen in self.screen_stack:
                if isinstance(screen, NodeScreen):
                    self._show_node(screen, result)

    def _show_node(self, screen: NodeScreen, result: PollResult) -> None:
        if result.fleet is not None:
            screen.update_fleet(result.fleet)
        screen.show_error(self.error)
        if result.instance == screen.instance:
            error = None
            if result.history_error is not None:
                error = sanitize(str(result.history_error))
            screen.update_history(result.history, error)

    def _banner(self, error: BaseException | None) -> str:
        text = sanitize(str(error)) if error is not None else "no answer"
        if error is not None and not isinstance(error, PrometheusError):  # a bug, not the network
            text = f"{type(error).__name__}: {text}"
        since = f" · showing data from {fmt_clock(self.fleet.time)}" if self.fleet else ""
        return f"⚠ {text} · retrying every {fmt_interval(self.interval)}{since}"

    # -- navigation --------------------------------------------------------------------------------

    def on_open_node(self, message: OpenNode) -> None:
        screen = NodeScreen(message.instance, self.fleet)
        self.poller.set_node(message.instance)
        self.push_screen(screen, callback=self._node_closed)
        if self.error is not None:
            screen.show_error(self.error)
        if self.start_poller:
            self.poller.refresh_now()  # its history now, not at the next tick

    def _node_closed(self, _result: None) -> None:
        self.poller.set_node(None)

    def action_refresh_now(self) -> None:
        if self.start_poller:
            self.poller.refresh_now()


__all__ = ["FleetApp"]
