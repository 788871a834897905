"""The settings in the dashboard: a [keymap] entry rebinds a key, the theme and its data colours
(WCAG contrast of every bar, chart and health colour against what it is drawn on, in every
theme), read-only mode, and config problems shown as notifications."""

from __future__ import annotations

import pytest
from textual.binding import Binding
from textual.color import Color

from gputui.settings import Settings, load_settings
from gputui.settings.keys import KEYMAP
from gputui.settings.model import Problem
from gputui.tui.app import GpuTuiApp
from gputui.tui.screens.confirm_signal import ConfirmSignalScreen
from gputui.tui.screens.dashboard import DashboardScreen
from gputui.tui.screens.environ import EnvironScreen
from gputui.tui.screens.findings import FindingsScreen
from gputui.tui.screens.help import HelpScreen, key_rows
from gputui.tui.screens.probe import ProbeScreen
from gputui.tui.screens.probe_panels import ProbeList
from gputui.tui.screens.process_detail import ProcessDetailScreen
from gputui.tui.screens.topology import TopologyScreen
from gputui.tui.themes import (
    DATA_COLOURS,
    MIN_CONTRAST,
    contrast_ratio,
    data_backgrounds,
    relative_luminance,
)
from gputui.tui.widgets.line_widget import (
    BAD,
    BAR_CPU,
    BAR_MEM,
    BAR_POWER,
    BAR_UTIL,
    LOST,
    OK,
    PLOT_CPU,
    PLOT_MEM,
    PLOT_POWER,
    PLOT_TEMP,
    PLOT_UTIL,
    WARN,
)
from gputui.tui.widgets.process_table import ProcessTable

pytestmark = pytest.mark.usefixtures("tui_env")

DATA_CLASSES = (
    BAR_UTIL,
    BAR_MEM,
    BAR_POWER,
    BAR_CPU,
    PLOT_UTIL,
    PLOT_MEM,
    PLOT_CPU,
    PLOT_POWER,
    PLOT_TEMP,
    OK,
    WARN,
    BAD,
    LOST,
)


# -- keymap ----------------------------------------------------------------------------------------


async def test_a_keymap_entry_rebinds_a_dashboard_key(sim_sampler, tmp_path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[keymap]\nhealth = "x"\n"interval.up" = "u"\ntopology.gpu.3 = "f3"\n')
    settings = load_settings(config=str(config))
    assert settings.problems == ()
    assert settings.keymap_dict == {"health": "x", "interval.up": "u", "topology.gpu.3": "f3"}
    app = GpuTuiApp(sim_sampler("dgx-h100", polls=2), start_sampler=False, settings=settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("h")  # the old key does nothing now
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        await pilot.press("x")
        await pilot.pause()
        assert isinstance(app.screen, FindingsScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        before = app.sampler.interval
        await pilot.press("plus")
        await pilot.pause()
        assert app.sampler.interval == before
        await pilot.press("u")
        await pilot.pause()
        assert app.sampler.interval > before
        # the help shows the keys as bound now
        rows = dict((description, keys) for keys, description in key_rows(app.dashboard))
        assert "x" in rows.values() and "h" not in rows.values()


def test_the_keymap_ids_are_the_dashboards_bindings() -> None:
    """Every id the [keymap] table accepts (and the default file and the README list) is a
    binding of the dashboard, with those default keys, and every binding is listed."""
    owners = (
        GpuTuiApp,
        DashboardScreen,
        ProcessTable,
        ConfirmSignalScreen,
        ProcessDetailScreen,
        FindingsScreen,
        TopologyScreen,
        ProbeScreen,
        ProbeList,
        HelpScreen,
        EnvironScreen,
    )
    bindings = {
        b.id: b.key for owner in owners for b in owner.BINDINGS if isinstance(b, Binding) and b.id
    }
    assert {binding: keys for binding, (keys, _) in KEYMAP.items()} == bindings


# -- themes and contrast ---------------------------------------------------------------------------


def test_the_contrast_formula() -> None:
    white, black = Color(255, 255, 255), Color(0, 0, 0)
    assert relative_luminance(white) == pytest.approx(1.0)
    assert relative_luminance(black) == 0.0
    assert contrast_ratio(white, black) == pytest.approx(21.0)
    assert contrast_ratio(Color(0x77, 0x77, 0x77), white) == pytest.approx(4.48, abs=0.01)
    # textual-light's power sparkline as it was drawn before: $warning 70% over #E0E0E0
    old = Color.parse("#E0E0E0") + Color.parse("#FEA62B").with_alpha(0.7)
    assert contrast_ratio(old, Color.parse("#E0E0E0")) < 1.4


async def test_every_data_colour_stands_3_to_1_in_every_theme(sim_sampler) -> None:
    """Bars, charts and the health colours against each background they are drawn on (the
    screen, the host strip, the title bar / findings panel), for every theme the app offers;
    ANSI themes take the terminal's colours and are left out."""
    app = GpuTuiApp(sim_sampler("dgx-h100", polls=1), start_sampler=False)
    async with app.run_test(size=(80, 24)) as pilot:
        names = sorted(n for n, t in app.available_themes.items() if not t.ansi)
        assert {"textual-dark", "textual-light", "gputui-high-contrast"} <= set(names)
        worst: dict[str, float] = {}
        for name in names:
            app.theme = name
            await pilot.pause()
            variables = app.get_css_variables()
            grounds = data_backgrounds(variables)
            for variable in DATA_COLOURS:
                colour = Color.parse(variables[variable])
                ratio = min(contrast_ratio(colour, g) for g in grounds)
                assert ratio >= MIN_CONTRAST, f"{name}: {variable} {colour.hex} is {ratio:.2f}:1"
                worst[name] = min(worst.get(name, 99.0), ratio)
        print({name: round(ratio, 2) for name, ratio in worst.items()})


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light", "gputui-high-contrast"])
async def test_the_drawn_bars_and_charts_take_the_theme_colours(sim_sampler, theme) -> None:
    """What the GPU panels and the host strip draw (their styles, over their own background)."""
    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False, settings=Settings(theme=theme))
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        assert app.theme == theme
        for widget in (app.dashboard.panels[0], app.dashboard.host_strip):
            background = widget.background_colors[1]
            for cls in DATA_CLASSES:
                style = widget._style(cls)
                assert style.color is not None and style.color.triplet is not None, cls
                fg = Color(*style.color.triplet)
                bg = Color(*style.bgcolor.triplet) if style.bgcolor else background
                ratio = contrast_ratio(fg, bg)
                assert ratio >= MIN_CONTRAST, f"{theme} {type(widget).__name__} {cls}: {ratio:.2f}"
        light = app.current_theme.dark is False
        assert light == (theme == "textual-light")


async def test_theme_from_settings_and_an_unknown_one(sim_sampler) -> None:
    settings = Settings(theme="no-such-theme", sources=(("theme", "env GPUTUI_THEME"),))
    app = GpuTuiApp(sim_sampler("dgx-h100", polls=1), start_sampler=False, settings=settings)
    assert app.theme == "textual-dark"
    assert app.theme_problem is not None
    assert "'no-such-theme' (from env GPUTUI_THEME) is not a theme" in app.theme_problem
    assert "gputui-high-contrast" in app.theme_problem  # the themes there are
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert any("no-such-theme" in n.message for n in app._notifications)
        # the palette's theme picker lists gputui's own themes beside Textual's
        assert "gputui-high-contrast" in app.available_themes
        app.action_toggle_dark()  # the light / dark toggle still works from any theme
        await pilot.pause()
        assert app.theme == "textual-light"


async def test_settings_readonly_record_dir_and_problems_reach_the_app(sim_sampler, tmp_path):
    problem = Problem("gputui: config.toml, line 2: unknown key intervall; ignored", "file", "x")
    settings = Settings(readonly=True, record_dir=str(tmp_path), problems=(problem,))
    app = GpuTuiApp(sim_sampler("dgx-h100", polls=1), start_sampler=False, settings=settings)
    assert app.readonly and app.record_dir == tmp_path
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert any("unknown key intervall" in n.message for n in app._notifications)
    # explicit arguments still win over the settings
    app = GpuTuiApp(sim_sampler("dgx-h100"), start_sampler=False, record_dir="x", settings=settings)
    assert str(app.record_dir) == "x"
