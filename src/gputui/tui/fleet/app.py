"""``gputui fleet``: every GPU node Prometheus knows about, live, in the terminal.

Data flow as in the node dashboard: one polling thread (:class:`~gputui.fleet.poller.FleetPoller`)
sends one batch of queries per refresh and posts the result (:class:`RefreshDone`, replaceable);
:meth:`FleetApp.on_refresh_done` hands it to the screens inside ``batch_update``. The UI thread
never waits on the network. When a refresh fails, the last good data stays on screen under a
banner that says which URL failed and why, and the poller keeps trying every interval. Data that
is stale (the last refresh failed, or none has answered for longer than a refresh can take) says
how old it is: in the banner, the SEEN column and a node's title, checked every second.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import App
from textual.binding import Binding, BindingType
from textual.screen import Screen

from gputui.core.format import fmt_clock, fmt_interval, sanitize
from gputui.fleet.client import PrometheusError
from gputui.fleet.health import fmt_age
from gputui.fleet.model import Fleet
from gputui.fleet.poller import FleetPoller, PollResult
from gputui.fleet.source import FleetSource
from gputui.tui.fleet.messages import OpenNode, RefreshDone
from gputui.tui.fleet.screens import FleetScreen, NodeScreen

AGE_CHECK_S = 1.0
"""How often the age of the data on screen is checked."""


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
        self.failure: str | None = None
        """Why the last refresh failed (None: it answered)."""
        self.error: str | None = None
        """The banner on every screen (None: none)."""
        self.refreshes = 0
        """Results handled so far (tests wait on it)."""
        if theme is not None:
            self.theme = theme
        self.fleet_screen = FleetScreen(source.url, interval)

    def get_default_screen(self) -> Screen[None]:
        return self.fleet_screen

    def on_mount(self) -> None:
        self.set_interval(AGE_CHECK_S, self.check_age)
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
                self.failure = None
                self.fleet_screen.update_fleet(result.fleet)
            else:
                self.failure = self._failure(result.error)
            for screen in self.screen_stack:
                if isinstance(screen, NodeScreen):
                    self._show_node(screen, result)
            self.check_age()

    def _show_node(self, screen: NodeScreen, result: PollResult) -> None:
        if result.fleet is not None:
            screen.update_fleet(result.fleet)
        if result.instance == screen.instance:
            error = None
            if result.history_error is not None:
                error = sanitize(str(result.history_error))
            screen.update_history(result.history, error)

    # -- the age of the data -----------------------------------------------------------------------

    @property
    def max_age(self) -> float:
        """The oldest data can be while refreshes answer: an interval after a refresh that took
        the whole timeout, and another interval of margin."""
        return 2 * self.interval + self.source.client.timeout

    def data_age(self) -> float | None:
        """Seconds since the query of the data on screen (None: no data yet), on the source's
        clock."""
        return None if self.fleet is None else max(self.source.clock() - self.fleet.time, 0.0)

    def check_age(self) -> None:
        """Marks the data stale when the last refresh failed or none has answered for longer than
        :attr:`max_age`: every screen shows its age; the banner says why."""
        age = self.data_age()
        stale = self.failure is not None or (age is not None and age > self.max_age)
        shown = age if stale else None
        self.error = self._banner(shown) if stale else None
        with self.batch_update():
            for screen in self.screen_stack:
                if isinstance(screen, (FleetScreen, NodeScreen)):
                    screen.show_age(shown)
                    screen.show_error(self.error)

    def _failure(self, error: BaseException | None) -> str:
        text = sanitize(str(error)) if error is not None else "no answer"
        if error is not None and not isinstance(error, PrometheusError):  # a bug, not the network
            text = f"{type(error).__name__}: {text}"
        return text

    def _banner(self, age: float | None) -> str:
        if self.failure is not None:
            head = f"⚠ {self.failure} · retrying every {fmt_interval(self.interval)}"
        else:
            head = f"⚠ no new answer from Prometheus at {sanitize(self.source.url)}"
        if self.fleet is None:
            return head
        old = fmt_age(age)
        old = "" if old == "now" else f" ({old} old)"
        return f"{head} · showing data from {fmt_clock(self.fleet.time)}{old}"

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
