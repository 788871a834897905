"""gputui's rendering next to Textual's own, so that a Textual upgrade that changes styling or its
private compositor fails here instead of drawing wrong.

* Every :class:`LineWidget` subclass, mounted in the real apps, draws the same cells in the same
  styles through its fast path (``LineWidget.render_lines``, which skips Textual's StylesCache,
  with styles it blends by hand from the screen's :class:`MeterPalette`) as Textual draws the
  same pieces itself: each piece in the style Textual gives a component class of the widget
  (``DOMNode.rich_style`` of a component node under it, carrying the palette's rules), through
  ``Widget.render_lines`` and its StylesCache. At several sizes, focused and not, in a dark and a
  light theme, and with CSS padding and a border (which the fast path must leave to Textual).
* The span compositor falls back to Textual's own updates when the private API it builds on is
  not what it was written for: at install time, and on the first partial update that fails.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import re
from collections.abc import Iterator
from typing import ClassVar

import pytest
from rich.segment import Segment
from rich.style import Style
from textual.dom import DOMNode
from textual.drivers.headless_driver import HeadlessDriver
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

import gputui.tui
from gputui.tui.app import GpuTuiApp
from gputui.tui.messages import SnapshotReady
from gputui.tui.widgets.line_widget import LineWidget, MeterPalette

pytestmark = pytest.mark.usefixtures("tui_env")

Cells = list[list[tuple[str, Style | None]]]


def cells(strips: list[Strip]) -> Cells:
    """Each line as (character, style) pairs: segment boundaries do not count, styles do."""
    return [[(ch, style) for text, style, _ in strip for ch in text] for strip in strips]


def crops(widget: Widget) -> Iterator[Region]:
    width, height = widget.outer_size  # the fast path's size: it has no border or padding
    yield Region(0, 0, width, height)
    if width > 6 and height > 2:
        yield Region(3, 1, width - 5, height - 2)  # what a partial repaint asks for


# The LineWidget subclasses each test below compares (a new subclass goes into one of them).
ON_THE_DASHBOARD = {"TitleBar", "HostStrip", "GpuPanel", "ProcessTable"}
ON_OTHER_SCREENS = {"FindingsStrip", "LinesView", "ProcessChart"}
IN_THE_FLEET_VIEW = {"KeyedTable", "NodeCharts"}


class TextualStyles:
    """The style Textual gives a component class of ``widget``, had the widget declared the
    palette's component classes itself: a component node attached under the widget, carrying
    the palette's rules for that class, and Textual's ``rich_style`` of it."""

    def __init__(self, widget: LineWidget) -> None:
        self.widget = widget
        palettes = widget.screen.query(MeterPalette)
        self.palette = palettes.first() if palettes else None
        self.cache: dict[str, Style] = {}

    def __call__(self, cls: str) -> Style:
        style = self.cache.get(cls)
        if style is None:
            palette = self.palette
            if type(self.widget).class_style is not LineWidget.class_style:
                # It styles its pieces itself (the fleet's tables, DataTable's way: held to
                # DataTable's drawing in test_fleet_table.py); here the rest of the path counts.
                style = self.widget.class_style(cls)
            elif not cls or palette is None or cls not in palette.COMPONENT_CLASSES:
                style = self.widget.rich_style
            else:
                node = DOMNode(classes=cls)
                node._attach(self.widget)
                node._css_styles.merge(palette.get_component_styles(cls).base)
                style = node.rich_style
            self.cache[cls] = style
        return style


def textual_render_lines(widget: LineWidget, crop: Region) -> list[Strip]:
    """Textual's own drawing of the widget's current pieces: Textual's styles for them, through
    ``Widget.render_lines`` (StylesCache: padding, borders, the app's line filters)."""
    style = TextualStyles(widget)
    width = widget.size.width

    def render_line(y: int) -> Strip:
        pieces = widget._pieces[y] if y < len(widget._pieces) else []
        return Strip([Segment(text, style(cls)) for text, cls in pieces], width)

    widget._styles_cache.clear()  # lines it kept from another drawing
    widget.render_line = render_line  # type: ignore[method-assign]
    try:
        return Widget.render_lines(widget, crop)
    finally:
        del widget.render_line
        widget._styles_cache.clear()


def assert_paths_agree(widget: LineWidget, *, fast: bool = True) -> str:
    """The fast path draws what Textual would draw (and is taken when ``fast``)."""
    assert widget.outer_size.area, f"{type(widget).__name__} has no size"
    assert widget._draws_whole_box() is fast, type(widget).__name__
    for crop in crops(widget):
        ours = cells(widget.render_lines(crop))
        textual = cells(textual_render_lines(widget, crop))
        for y, (a, b) in enumerate(zip(ours, textual, strict=True)):
            assert a == b, f"{type(widget).__name__} line {crop.y + y}, crop {crop}"
        assert len(ours) == len(textual) == crop.height
    return type(widget).__name__


def all_line_widgets(app: object) -> list[LineWidget]:
    """The screen's line widgets on show (the findings strip hides without findings)."""
    widgets = [w for w in app.screen.query(LineWidget) if w.size.area]  # type: ignore[attr-defined]
    assert widgets
    return widgets


def compare_screen(app: object) -> set[str]:
    return {assert_paths_agree(widget) for widget in all_line_widgets(app)}


async def show(app: GpuTuiApp, pilot, sampler) -> None:
    snapshot = sampler.poll()
    sampler.clock.now += 1.0
    app.post_message(SnapshotReady(snapshot))
    await pilot.pause()


@pytest.mark.parametrize(
    ("size", "theme", "no_color"),
    [
        ((80, 24), "textual-dark", False),
        ((120, 40), "textual-dark", False),
        ((200, 60), "textual-dark", False),
        ((120, 40), "textual-light", False),
        ((200, 60), "textual-light", False),
        ((120, 40), "textual-dark", True),  # NO_COLOR: the app's Monochrome line filter
    ],
)
async def test_dashboard_widgets_draw_as_textual_would(
    sim_sampler, size, theme, no_color, monkeypatch: pytest.MonkeyPatch
) -> None:
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    sampler = sim_sampler("dgx-h100", polls=60)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=size) as pilot:
        app.theme = theme
        await show(app, pilot, sampler)
        table = app.dashboard.process_table
        assert table.has_focus
        assert compare_screen(app) == ON_THE_DASHBOARD
        await pilot.press("down", "2")  # a cursor further down, one GPU selected
        await show(app, pilot, sampler)
        app.screen.set_focus(None)
        await pilot.pause()
        assert not table.has_focus
        assert compare_screen(app) == ON_THE_DASHBOARD
        # Tagged rows, a tree's branches and filter matches (their own classes), focused or not.
        await pilot.press("a")
        table.focus()
        table.toggle_tag()
        table.tree_view = True
        table.text_filter = "rank"
        await pilot.press("end")  # a rank under torchrun's row
        classes = {cls for line in table.line_pieces for _, cls in line}
        assert {"meter--tagged", "meter--match", "meter--match-selected"} <= classes
        assert compare_screen(app) == ON_THE_DASHBOARD
        app.screen.set_focus(None)
        await pilot.pause()
        assert compare_screen(app) == ON_THE_DASHBOARD


async def test_other_screens_draw_as_textual_would(sim_sampler) -> None:
    from gputui.core.model import Finding
    from gputui.tui.app import GpuTuiApp

    class OneFinding:  # a findings strip, as on a faulty node
        def update(self, snapshot: object, history: object) -> tuple[Finding, ...]:
            return (Finding("throttle", "warn", "HW thermal slowdown active", "cooling", 5),)

        def acknowledge(self, key: str | None = None) -> int:
            return 0

    sampler = sim_sampler("faulty", polls=0)
    sampler.health = OneFinding()
    for _ in range(5):
        sampler.poll()
        sampler.clock.now += 1.0
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(app, pilot, app.sampler)
        compared = compare_screen(app)  # with the findings strip
        await pilot.press("t")  # topology
        await pilot.pause()
        compared |= compare_screen(app)
        await pilot.press("escape", "enter")  # the process under the cursor, in detail
        await pilot.pause()
        assert type(app.screen).__name__ == "ProcessDetailScreen"
        compared |= compare_screen(app)
        assert compared - ON_THE_DASHBOARD == ON_OTHER_SCREENS


async def test_fleet_widgets_draw_as_textual_would() -> None:
    from tests.fakes.fleet_app import fleet_app, open_node, refresh

    app, _ = fleet_app()
    async with app.run_test(size=(140, 40)) as pilot:
        await refresh(app, pilot)
        await pilot.press("down")
        compared = compare_screen(app)
        await pilot.press("slash")  # the table loses the focus
        compared |= compare_screen(app)
        await pilot.press("escape")
        await open_node(app, pilot, "a100-node")
        assert compare_screen(app) | compared == IN_THE_FLEET_VIEW


async def test_padding_and_borders_are_left_to_textual(sim_sampler) -> None:
    """No gputui widget has CSS padding or a border today; one that gets them is drawn by
    Textual's own path, which puts them around the content."""
    sampler = sim_sampler("dgx-h100", polls=10)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(app, pilot, sampler)
        widgets = all_line_widgets(app)
        for widget in widgets:
            widget.styles.padding = (0, 1)
        await pilot.pause()
        for widget in widgets:
            assert_paths_agree(widget, fast=False)
        for widget in widgets:
            widget.styles.padding = 0
            widget.styles.border = ("round", "red")
            widget.border_title = "title"
        await pilot.pause()
        for widget in widgets:
            assert_paths_agree(widget, fast=False)


def line_widget_classes() -> set[type[LineWidget]]:
    for module in pkgutil.walk_packages(gputui.tui.__path__, "gputui.tui."):
        importlib.import_module(module.name)
    found: set[type[LineWidget]] = set()
    todo = [LineWidget]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith("gputui.") and sub not in found:
                found.add(sub)
                todo.append(sub)
    return found


def test_every_line_widget_is_compared() -> None:
    """A new LineWidget needs a place in the tests above (bases such as VirtualTable are
    compared through their subclasses)."""
    classes = line_widget_classes()
    leaves = {
        cls.__name__ for cls in classes if not any(issubclass(o, cls) for o in classes - {cls})
    }
    assert leaves == ON_THE_DASHBOARD | ON_OTHER_SCREENS | IN_THE_FLEET_VIEW


# -- the span compositor's fallback ---------------------------------------------------------------


class RecordingDriver(HeadlessDriver):
    """A headless driver that keeps what the app writes to the terminal."""

    written: ClassVar[list[str]] = []

    @property
    def is_headless(self) -> bool:
        return False  # the app renders updates and writes them

    def write(self, data: str) -> None:
        RecordingDriver.written.append(data)


def recording_app(sim_sampler) -> tuple[GpuTuiApp, object]:
    sampler = sim_sampler("dgx-h100", polls=30)
    app = GpuTuiApp(sampler, start_sampler=False)
    app.driver_class = RecordingDriver
    RecordingDriver.written = []
    return app, sampler


@pytest.fixture
def span_warnings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from gputui.tui import span_compositor

    warned: list[str] = []
    monkeypatch.setattr(span_compositor, "_WARNED", warned)
    return warned


async def test_the_span_compositor_is_used_while_textual_matches(
    sim_sampler, span_warnings
) -> None:
    from gputui.tui.span_compositor import SpanCompositor

    app, sampler = recording_app(sim_sampler)
    async with app.run_test(headless=False, size=(120, 40)) as pilot:
        await show(app, pilot, sampler)
        assert type(app.dashboard._compositor) is SpanCompositor
        RecordingDriver.written.clear()
        await show(app, pilot, sampler)
        assert RecordingDriver.written  # a partial update, written our way
    assert span_warnings == []


async def test_a_different_private_api_at_install_keeps_the_stock_compositor(
    sim_sampler, span_warnings, monkeypatch: pytest.MonkeyPatch, caplog
) -> None:
    """A Textual whose ChopsUpdate takes another argument: logged once, Textual draws."""
    from textual._compositor import ChopsUpdate, Compositor

    from gputui.tui.span_compositor import SpanCompositor

    original = ChopsUpdate.__init__

    def grown(self, chops, spans, chop_ends, cursor=None) -> None:
        original(self, chops, spans, chop_ends)

    monkeypatch.setattr(ChopsUpdate, "__init__", grown)
    app, sampler = recording_app(sim_sampler)
    with caplog.at_level(logging.WARNING, logger="gputui.tui.span_compositor"):
        async with app.run_test(headless=False, size=(120, 40)) as pilot:
            await show(app, pilot, sampler)
            assert type(app.dashboard._compositor) is Compositor
            await pilot.press("t")  # a second screen that would install it
            await pilot.pause()
            assert not isinstance(app.screen._compositor, SpanCompositor)
            written = re.sub(r"\x1b\[[0-9;]*m", "", "".join(RecordingDriver.written))
            assert "NVIDIA H100" in written and "NV18" in written  # both screens drawn
            RecordingDriver.written.clear()
            await show(app, pilot, sampler)
            assert RecordingDriver.written  # and their updates
    assert span_warnings and "cursor" in span_warnings[0]
    assert len([r for r in caplog.records if "span compositor" in r.getMessage()]) == 1


def rename_chop_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Textual whose ChopsUpdate calls ``chop_ends`` ``line_ends`` (its own code agrees)."""
    from textual._compositor import ChopsUpdate

    original_init = ChopsUpdate.__init__
    original_render = ChopsUpdate.render_segments

    def init(self, chops, spans, chop_ends) -> None:
        original_init(self, chops, spans, chop_ends)
        self.line_ends = self.__dict__.pop("chop_ends")

    def render_segments(self, console) -> str:
        self.chop_ends = self.line_ends
        try:
            return original_render(self, console)
        finally:
            del self.chop_ends

    monkeypatch.setattr(ChopsUpdate, "__init__", init)
    monkeypatch.setattr(ChopsUpdate, "render_segments", render_segments)


async def test_a_failing_partial_update_restores_the_stock_compositor(
    sim_sampler, span_warnings, monkeypatch: pytest.MonkeyPatch, caplog
) -> None:
    """An attribute renamed after install: the first partial update is drawn by Textual's own
    code, logged once, and the screen has the stock compositor from then on."""
    from textual._compositor import Compositor

    app, sampler = recording_app(sim_sampler)
    with caplog.at_level(logging.WARNING, logger="gputui.tui.span_compositor"):
        async with app.run_test(headless=False, size=(120, 40)) as pilot:
            await show(app, pilot, sampler)
            compositor = app.dashboard._compositor
            assert type(compositor).__name__ == "SpanCompositor"
            rename_chop_ends(monkeypatch)
            for _ in range(3):
                RecordingDriver.written.clear()
                await show(app, pilot, sampler)
                assert "".join(RecordingDriver.written).count("\x1b[") > 10  # drawn by Textual
            assert app.dashboard._compositor is compositor  # the same object, now stock
            assert type(compositor) is Compositor
    messages = [r.getMessage() for r in caplog.records if "span compositor" in r.getMessage()]
    assert len(messages) == 1 and "chop_ends" in messages[0]


async def test_a_failing_render_falls_back_for_that_update(
    sim_sampler, span_warnings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A private attribute the renderer reads is gone: Textual renders that update itself."""
    from textual._compositor import Compositor

    from gputui.tui import span_compositor

    def broken(*args: object) -> object:
        raise AttributeError("'Strip' object has no attribute '_segments'")

    app, sampler = recording_app(sim_sampler)
    async with app.run_test(headless=False, size=(120, 40)) as pilot:
        await show(app, pilot, sampler)
        monkeypatch.setattr(span_compositor, "_crop", broken)
        monkeypatch.setattr(span_compositor, "_sgr_state", broken)
        RecordingDriver.written.clear()
        await show(app, pilot, sampler)
        assert "".join(RecordingDriver.written)
        assert type(app.dashboard._compositor) is Compositor
    assert len(span_warnings) == 1 and "_segments" in span_warnings[0]


# -- what the terminal shows after a notification goes -------------------------------------------


async def test_expired_notifications_leave_no_cells_behind(sim_sampler) -> None:
    """Toasts that expire (a burst of them, as keys at the end of a replay made) are repainted
    over on every screen: the terminal shows what the screen holds, on the dashboard (whose
    panels repaint only the cells that change) and on the findings screen."""
    from tests.fakes.screen import TerminalScreen

    class ScreenDriver(HeadlessDriver):
        terminal = TerminalScreen(120, 40)

        @property
        def is_headless(self) -> bool:
            return False

        def write(self, data: str) -> None:
            ScreenDriver.terminal.feed(data)

    sampler = sim_sampler("faulty", polls=5)
    app = GpuTuiApp(sampler, start_sampler=False)
    app.driver_class = ScreenDriver
    async with app.run_test(headless=False, size=(120, 40), notifications=True) as pilot:
        await show(app, pilot, sampler)
        for key in ("", "h"):
            if key:
                await pilot.press(key)
            for i in range(12):  # more than the screen holds: the oldest are pushed off the top
                app.notify(f"notice {i} " + "x" * 40, title="replay", timeout=0.4 + i * 0.03)
                await pilot.pause(0.03)
            await pilot.pause(1.2)  # every one has expired
            await pilot.pause()
            assert not app._notifications
            shown = [strip.text for strip in app.screen._compositor.render_strips()]
            assert ScreenDriver.terminal.lines == shown
