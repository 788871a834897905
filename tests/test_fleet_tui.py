"""The fleet TUI on recorded Prometheus answers (tests/data/fleet/recorded.json): Pilot tests of
sorting, filtering, opening a node, the error banner and the polling thread, and SVG snapshots.

Update the snapshots after a deliberate change with
``pytest tests/test_fleet_tui.py --snapshot-update`` and look at them before committing.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.parse

import pytest
from tests.fakes.fleet_app import fleet_app, open_node, refresh
from tests.fakes.prometheus_answers import (
    BASE,
    RECORDED,
    Recorded,
    instance,
    recorded_source,
    synthetic_answers,
)
from textual.pilot import Pilot

from gputui.fleet import promql
from gputui.fleet.client import PrometheusClient
from gputui.fleet.source import FleetSource
from gputui.tui.fleet.app import FleetApp
from gputui.tui.fleet.screens import NodeScreen

pytestmark = pytest.mark.usefixtures("tui_env")


# -- snapshots -------------------------------------------------------------------------------------


def test_fleet_screen_120x40(snap_compare) -> None:
    """Seven nodes worst first: two failing (gputui's faulty node, a DCGM node with XID 79), two
    gone silent, one warning (hot HBM), two healthy."""
    app, _ = fleet_app()

    async def run_before(pilot: Pilot[None]) -> None:
        await refresh(app, pilot)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_node_screen_120x40(snap_compare) -> None:
    """The dcgm-exporter A100 node: four GPUs (one in MIG mode, one without a memory
    temperature), why it warns, and ten minutes of history."""
    app, _ = fleet_app()

    async def run_before(pilot: Pilot[None]) -> None:
        await refresh(app, pilot)
        await open_node(app, pilot, "a100-node")

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


# -- Pilot -----------------------------------------------------------------------------------------


async def test_nodes_are_listed_worst_first_and_sort_by_any_column() -> None:
    app, transport = fleet_app()
    async with app.run_test(size=(140, 40)) as pilot:
        await refresh(app, pilot)
        assert len(transport.calls) == 5  # one batch
        table = app.fleet_screen.nodes
        healths = [n.health for n in table.visible_items]
        assert healths == ["fail"] * 3 + ["unknown"] * 2 + ["warn"] + ["ok"] * 5
        assert table.row_count == 11
        table.sort_by("host")
        await pilot.pause()
        hosts = [n.hostname for n in table.visible_items]
        assert hosts == sorted(hosts, key=str.lower)
        await pilot.press("S")
        assert [n.hostname for n in table.visible_items] == hosts[::-1]
        await pilot.press("s")  # the next column
        assert table.sort_column == "health"


async def test_filter_and_problems_only() -> None:
    app, _ = fleet_app()
    async with app.run_test(size=(140, 40)) as pilot:
        await refresh(app, pilot)
        table = app.fleet_screen.nodes
        await pilot.press("slash", *"XID 79", "enter")
        assert [n.hostname for n in table.visible_items] == ["h100-node-07"]
        await pilot.press("escape")
        assert len(table.visible_items) == 11
        await pilot.press("f")
        assert all(n.health != "ok" for n in table.visible_items)
        assert len(table.visible_items) == 6
        await pilot.press("f")
        assert len(table.visible_items) == 11


async def test_a_node_shows_its_gpus_and_history() -> None:
    app, transport = fleet_app()
    async with app.run_test(size=(140, 40)) as pilot:
        await refresh(app, pilot)
        calls = len(transport.calls)
        screen = await open_node(app, pilot, "a100-node")
        assert screen.instance == instance("a100")
        assert len(transport.calls) - calls == 5 + 4  # the batch, and one range query per chart
        assert [g.index for g in screen.gpus.visible_items] == [0, 1, 2, 3]
        assert "a100-node-01" in str(screen.title_line.render())
        lines = screen.charts.plain_lines
        assert lines[0].startswith("history last 10 min")
        assert [line.split()[:2] for line in lines[1:]] == [["GPU", str(i)] for i in range(4)]
        assert "GPU 1: memory 91 °C (≥ 90 °C)" in str(screen.reasons.render())
        await pilot.press("escape")
        assert app.screen is app.fleet_screen
        assert app.poller._node is None  # no more history queries


async def test_unreachable_prometheus_shows_a_banner_and_keeps_the_data() -> None:
    app, transport = fleet_app()
    async with app.run_test(size=(140, 40)) as pilot:
        await refresh(app, pilot)
        transport.fail = urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))
        await refresh(app, pilot)
        banner = app.fleet_screen.banner
        assert banner.display
        text = str(banner.render())
        assert f"Prometheus at {BASE}: cannot connect: Connection refused" in text
        assert "retrying every 5s" in text and "showing data from" in text
        assert len(app.fleet_screen.nodes.visible_items) == 11  # the last good answer stays
        transport.fail = None
        await refresh(app, pilot)
        assert not banner.display


async def test_an_error_before_any_answer() -> None:
    app, transport = fleet_app()
    transport.fail = urllib.error.HTTPError(BASE, 401, "Unauthorized", {}, None)  # type: ignore[arg-type]
    async with app.run_test(size=(140, 40)) as pilot:
        await refresh(app, pilot)
        assert "it needs credentials" in str(app.fleet_screen.banner.render())
        assert app.fleet is None


async def test_the_polling_thread_refreshes_on_its_interval() -> None:
    source, _transport = recorded_source()
    app = FleetApp(source, interval=0.2)
    async with app.run_test(size=(140, 40)) as pilot:
        deadline = time.monotonic() + 10
        while app.refreshes < 3 and time.monotonic() < deadline:
            await pilot.pause(0.05)
        assert app.refreshes >= 3
        assert app.fleet is not None and len(app.fleet.nodes) == 11


async def test_quitting_does_not_wait_for_a_prometheus_that_hangs() -> None:
    release = threading.Event()

    def hanging(url: str, headers: object, budget: object) -> bytes:
        release.wait(30)
        raise TimeoutError

    source = FleetSource(PrometheusClient(BASE, transport=hanging), clock=lambda: RECORDED["time"])  # type: ignore[arg-type]
    app = FleetApp(source, interval=5.0)
    started = time.monotonic()
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause(0.2)
            assert app.refreshes == 0  # still waiting, and the UI answers
            await pilot.press("q")
        assert time.monotonic() - started < 5
    finally:
        release.set()


# -- hostile labels --------------------------------------------------------------------------------

HOSTILE = "evil\x1b]0;pwned\x07\n\u202eabc\x1b[2J"


def hostile_source() -> FleetSource:
    """Three nodes whose first one carries control characters in every label the view shows:
    instance, hostname, model, driver, and the rule and severity of a failing finding."""
    at = 1_800_000_000.0
    answers = synthetic_answers(3, 2, at)
    answers["values"]["data"]["result"].append(
        {"metric": {"__name__": "gputui_health_findings", "instance": "gpu-000:9400",
                    "gpu": "0", "rule": HOSTILE, "severity": "fail"}, "value": [at, "1"]}
    )  # fmt: skip
    for item in answers["last_seen"]["data"]["result"]:
        item["metric"].update(
            {k: HOSTILE for k in ("modelName", "driver", "DCGM_FI_DRIVER_VERSION", "Hostname")
             if k in item["metric"] or k == "modelName"}
        )  # fmt: skip
    bodies = {
        key: json.dumps(answer).replace('"gpu-000:9400"', json.dumps(HOSTILE + ":9400")).encode()
        for key, answer in answers.items()
    }
    recorded = {
        "/api/v1/query?" + urllib.parse.urlencode({"query": q, "time": f"{at:.3f}"}): bodies[key]
        for key, q in promql.refresh_queries("").all().items()
    }
    return FleetSource(PrometheusClient(BASE, transport=Recorded(recorded)), clock=lambda: at)


def shown_texts(screen: object) -> list[str]:
    """Every text a fleet screen shows: its lines, banners, table cells and charts."""
    texts = []
    for name in ("title_line", "banner", "reasons"):
        widget = getattr(screen, name, None)
        if widget is not None:
            texts.append(str(widget.render()))
    for table_name in ("nodes", "gpus"):
        table = getattr(screen, table_name, None)
        if table is not None:
            texts += [table.cell_text(k, c) for k in table.row_keys for c in table.column_keys]
            texts += table.plain_lines
    charts = getattr(screen, "charts", None)
    if charts is not None:
        texts += charts.plain_lines
    return texts


async def test_no_control_character_from_a_label_reaches_the_screens() -> None:
    app = FleetApp(hostile_source(), interval=5.0, start_poller=False)
    async with app.run_test(size=(200, 40)) as pilot:
        await refresh(app, pilot)
        assert len(app.fleet_screen.nodes.visible_items) == 3
        texts = shown_texts(app.fleet_screen)
        assert any("evil?]0;pwned???abc?[2J" in t for t in texts), texts
        await pilot.press("enter")  # the failing node is first
        await refresh(app, pilot)
        screen = app.screen
        assert isinstance(screen, NodeScreen)
        texts += shown_texts(screen)
        assert sum("evil?" in t for t in texts) >= 6, texts
        for text in texts:
            assert all(line.isprintable() for line in text.split("\n")), repr(text)


# -- stale data ------------------------------------------------------------------------------------


def clocked_app() -> tuple[FleetApp, Recorded, list[float]]:
    """An app on the recorded answers whose clock the test moves (``clock[0]``)."""
    clock = [RECORDED["time"]]
    transport = Recorded(RECORDED["answers"])
    source = FleetSource(PrometheusClient(BASE, transport=transport), clock=lambda: clock[0])
    return FleetApp(source, interval=5.0, start_poller=False), transport, clock


def seen_column(app: FleetApp) -> dict[str, str]:
    """The SEEN cell of each healthy node, by hostname."""
    table = app.fleet_screen.nodes
    return {
        n.hostname: table.cell_text(n.instance, "seen")
        for n in table.visible_items
        if n.health == "ok"
    }


async def test_data_from_a_failed_refresh_shows_its_age() -> None:
    app, transport, clock = clocked_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await refresh(app, pilot)
        assert set(seen_column(app).values()) == {"now"}
        clock[0] += 125
        transport.fail = urllib.error.URLError(TimeoutError("timed out"))
        await refresh(app, pilot)
        assert set(seen_column(app).values()) == {"2m"}  # not "now": the data is 2 minutes old
        banner = str(app.fleet_screen.banner.render())
        assert "no answer within 10 s" in banner and "(2m old)" in banner
        screen = await open_node(app, pilot, "h100-node-0")
        assert "seen 2m ago" in str(screen.title_line.render())
        assert "(2m old)" in str(screen.banner.render())


async def test_data_not_refreshed_for_long_is_marked_stale() -> None:
    app, _transport, clock = clocked_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await refresh(app, pilot)
        clock[0] += 19  # a refresh may take --timeout (10 s) every interval (5 s): still fresh
        app.check_age()
        await pilot.pause()
        assert not app.fleet_screen.banner.display
        assert set(seen_column(app).values()) == {"now"}
        clock[0] += 101  # no answer for two minutes: a refresh that hangs, whatever the reason
        app.check_age()
        await pilot.pause()
        assert set(seen_column(app).values()) == {"2m"}
        banner = app.fleet_screen.banner
        assert banner.display and "(2m old)" in str(banner.render())
        assert "no new answer from Prometheus at" in str(banner.render())
