"""The fleet's KeyedTable draws what Textual's DataTable, which it replaced, drew for the same rows:
every cell's character, colours and attributes, focused or not, with the cursor on any row,
sorted either way, in a dark and a light theme. (DataTable's styles also carry per-cell
metadata, which only splits runs of equal style; it is left out of the comparison.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rich.style import Style
from rich.text import Text
from tests.fakes.prometheus_answers import recorded_source
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import DataTable

from gputui.fleet.model import Fleet
from gputui.tui.fleet.table import KeyedTable, theme_styles
from gputui.tui.fleet.widgets import gpu_columns, gpu_search_text, node_columns, node_search_text
from gputui.tui.widgets.virtual_table import ARROW_DOWN, ARROW_UP

pytestmark = pytest.mark.usefixtures("tui_env")

WIDTH, HEIGHT = 150, 20


def fleet() -> Fleet:
    source, _ = recorded_source()
    return source.refresh()


def node_table() -> KeyedTable[Any]:
    return KeyedTable(
        node_columns(lambda: fleet_now, lambda: False),
        key=lambda n: n.instance,
        search=node_search_text,
        default_sort="health",
    )


def gpu_table() -> KeyedTable[Any]:
    return KeyedTable(gpu_columns(), key=lambda g: str(g.index), search=gpu_search_text,
                      default_sort="gpu")  # fmt: skip


fleet_now = 0.0


class Side(App[None]):
    """The table, and a DataTable at the same place in the DOM (a screen's child), same size."""

    CSS = f"""
    KeyedTable, DataTable {{ width: {WIDTH}; max-width: {WIDTH}; }}
    KeyedTable {{ height: {HEIGHT}; }}
    DataTable {{ dock: bottom; scrollbar-size-horizontal: 0; }}
    """

    def __init__(self, table: KeyedTable[Any]) -> None:
        super().__init__()
        self.table = table
        self.data: DataTable[Text] = DataTable(cursor_type="row", zebra_stripes=False)

    def compose(self) -> ComposeResult:
        yield self.table
        yield self.data


def fill(app: Side) -> None:
    """The DataTable shows the KeyedTable's rows, header, sort arrow and cursor as the old
    KeyedTable set them up."""
    table, data = app.table, app.data
    styles = theme_styles(app.get_css_variables())
    data.clear(columns=True)
    for spec in table.all_columns:
        arrow = ""
        if spec.key == table.sort_column:
            arrow = ARROW_DOWN if table.sort_reverse else ARROW_UP
        justify = "right" if spec.numeric else "left"
        data.add_column(Text(f"{spec.title} {arrow or ' '}", justify=justify), key=spec.key)
    for item, key in zip(table.visible_items, table.row_keys, strict=True):
        data.add_row(
            *(
                Text(
                    spec.render(item),
                    style=styles.get(spec.style(item) if spec.style else "", Style()),
                    justify="right" if spec.numeric else "left",
                    no_wrap=True,
                )
                for spec in table.all_columns
            ),
            key=key,
        )
    data.move_cursor(row=table.cursor_row)


def cells(strips: list[Strip]) -> list[list[tuple[str, Style | None]]]:
    """(character, style) per cell; DataTable's per-cell metadata left out."""
    return [
        [(ch, style and style.clear_meta_and_links()) for text, style, _ in strip for ch in text]
        for strip in strips
    ]


async def compare(app: Side, pilot: Any, focused: bool) -> None:
    """Each drawn with the focus (one after the other), or neither."""
    table, data = app.table, app.data
    fill(app)
    if focused:
        table.focus()
    else:
        app.set_focus(None)
    await pilot.pause()
    assert table.has_focus is focused
    rows = table.row_count + 1
    region = Region(0, 0, WIDTH, rows)
    ours = cells(table.render_lines(region))
    if focused:
        data.focus()
        await pilot.pause()
    theirs = cells(data.render_lines(region))
    assert data.size.height == rows
    for y, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert a == b, f"line {y}"
    # Below the rows: what is under the table (the screen), as it was under the DataTable.
    under = table.render_lines(Region(0, rows, WIDTH, 1))[0]
    assert {style.bgcolor for _, style, _ in under if style} == {
        app.screen.background_colors[1].rich_color
    }


Steps = list[Callable[[KeyedTable[Any]], None]]


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light"])
@pytest.mark.parametrize("which", ["nodes", "gpus"])
async def test_the_table_draws_as_datatable_did(theme: str, which: str) -> None:
    global fleet_now
    data = fleet()
    fleet_now = data.time
    table = node_table() if which == "nodes" else gpu_table()
    app = Side(table)
    async with app.run_test(size=(WIDTH + 2, HEIGHT + 12)) as pilot:
        app.theme = theme
        items = data.nodes if which == "nodes" else max(data.nodes, key=lambda n: len(n.gpus)).gpus
        table.set_items(items)
        await pilot.pause()
        assert table.row_count > 2
        for focused in (True, False):
            await compare(app, pilot, focused)
        table.focus()
        await pilot.press("down", "down")
        table.sort_by(table.all_columns[0].key)
        await compare(app, pilot, True)
        table.sort_by(table.all_columns[0].key, not table.sort_reverse)
        await compare(app, pilot, False)


# -- keys, clicks and scrolling (the process table's, now the fleet's too) -----------------------


async def test_keys_clicks_and_scrolling_on_a_fleet_longer_than_the_screen() -> None:
    from tests.fakes.fleet_app import refresh
    from tests.fakes.prometheus_answers import synthetic_source

    from gputui.tui.fleet.app import FleetApp
    from gputui.tui.fleet.screens import NodeScreen

    source, _ = synthetic_source(60, 2)
    app = FleetApp(source, interval=5.0, start_poller=False)
    async with app.run_test(size=(80, 30)) as pilot:
        await refresh(app, pilot)
        table = app.fleet_screen.nodes
        page = table.size.height - 1
        assert table.has_focus and table.row_count == 60 and page < 60
        assert table.plain_lines[1].endswith("┃")  # a scroll bar: more rows than fit
        await pilot.press("end")
        assert (table.cursor_row, table.top_row) == (59, 60 - page)
        await pilot.press("home", "pagedown")
        assert table.cursor_row == page - 1
        await pilot.press("ctrl+end")
        assert table.cursor_row == 59
        await pilot.press("ctrl+home", "down")
        assert table.cursor_row == 1

        await pilot.click(table, offset=(table.header_x("host"), 0))
        assert (table.sort_column, table.sort_reverse) == ("host", False)
        await pilot.click(table, offset=(table.header_x("host"), 0))
        assert (table.sort_column, table.sort_reverse) == ("host", True)
        hosts = [n.hostname for n in table.visible_items]
        assert hosts == sorted(hosts, key=str.lower, reverse=True)

        # Sideways: the columns are wider than 80 cells.
        x = table.header_x("util")
        await pilot.press("right", "right", "right")
        assert table.header_x("util") == x - 3
        await pilot.press("left")
        assert table.header_x("util") == x - 2

        # A click moves the cursor; a click on the cursor's row opens the node.
        await pilot.click(table, offset=(5, 3))
        row = table.top_row + 2
        assert table.cursor_row == row
        chosen = table.visible_items[row]
        await pilot.click(table, offset=(5, 3))
        await refresh(app, pilot)
        assert isinstance(app.screen, NodeScreen) and app.screen.instance == chosen.instance


async def test_an_empty_table_says_why() -> None:
    from tests.fakes.fleet_app import fleet_app, refresh

    app, _ = fleet_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await refresh(app, pilot)
        table = app.fleet_screen.nodes
        await pilot.press("slash", *"zzz")
        assert table.row_count == 0 and table.selected is None
        assert table.plain_lines[1].strip() == "nothing matches 'zzz'"
        await pilot.press("escape")
        table.set_items(())
        await pilot.pause()
        assert table.plain_lines[1].strip().startswith("no GPU nodes")
