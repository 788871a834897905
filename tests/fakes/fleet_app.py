"""A fleet app over recorded Prometheus answers, and the steps the fleet screen tests take."""

from __future__ import annotations

from tests.fakes.prometheus_answers import Recorded, recorded_source
from textual.pilot import Pilot

from gputui.tui.fleet.app import FleetApp
from gputui.tui.fleet.screens import NodeScreen


def fleet_app(**kwargs: object) -> tuple[FleetApp, Recorded]:
    source, transport = recorded_source()
    return FleetApp(source, interval=5.0, start_poller=False, **kwargs), transport  # type: ignore[arg-type]


async def refresh(app: FleetApp, pilot: Pilot[None]) -> None:
    app.poll_now()
    await pilot.pause()


async def open_node(app: FleetApp, pilot: Pilot[None], text: str) -> NodeScreen:
    await pilot.press("slash", *text, "enter", "enter")
    await refresh(app, pilot)  # the poller would fetch the node's history now
    screen = app.screen
    assert isinstance(screen, NodeScreen)
    return screen
