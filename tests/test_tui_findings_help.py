"""The findings screen and the help laid out for their width: continuation lines indented under
their first line, a number never split from its unit, the help's keys in a compact table first
and its units said once."""

from __future__ import annotations

import pytest

from gputui.core.model import Finding
from gputui.tui.app import GpuTuiApp
from gputui.tui.screens.findings import HINT_INDENT, finding_prompt
from gputui.tui.screens.help import PANELS_HELP, HelpScreen

pytestmark = pytest.mark.usefixtures("tui_env")

T0 = 1_700_000_000.0
HOT = Finding(
    "throttle",
    "fail",
    "GPU 5: clocks held down: HW thermal slowdown, SW thermal slowdown at 91 °C for 12 s, "
    "memory at 96 °C",
    "Check the cooling (fans, airflow, inlet temperature) and the power supply; a GPU that keeps "
    "slowing down at 91 °C under normal cooling needs service",
    5,
    "throttle:5",
    T0,
    T0 + 59,
    True,
)


def screen_text(app: GpuTuiApp) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


@pytest.mark.parametrize("width", [60, 70, 80, 100])
def test_a_finding_wraps_under_its_message_and_keeps_units(width: int) -> None:
    lines = finding_prompt(HOT, width).plain.splitlines()
    assert lines[0].startswith("✖ fail  GPU 5   clocks held down")
    assert all(len(line) <= width - 1 for line in lines)
    assert all(line.startswith(" " * HINT_INDENT) for line in lines[1:])  # under the message
    hint = next(i for i, line in enumerate(lines) if line.strip().startswith("→"))
    assert all(line.startswith(" " * (HINT_INDENT + 2)) for line in lines[hint + 1 :])
    text = "\n".join(lines)
    assert text.count("91 °C") == 2 and "96 °C" in text and "12 s" in text
    assert "since " in text and any("since 22:13:20" in line for line in lines)


async def test_the_findings_screen_at_80x24_indents_every_continuation(sim_sampler) -> None:
    from gputui.tui.screens.findings import FindingsScreen

    app = GpuTuiApp(sim_sampler("dgx-h100", polls=2), start_sampler=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = FindingsScreen()
        await app.push_screen(screen)
        screen._set_findings([HOT])
        await pilot.pause()
        lines = screen_text(app).splitlines()[1:-1]
    body = [line for line in lines if line.strip()]
    assert body[0].startswith(" ✖ fail  GPU 5   clocks held down")
    for line in body[1:]:
        assert line.startswith(" " * (HINT_INDENT + 1)), line  # under the message, past the GPU


async def test_help_starts_with_a_compact_key_table(sim_sampler) -> None:
    app = GpuTuiApp(sim_sampler("dgx-h100", polls=2), start_sampler=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        lines = [line.strip(" │") for line in screen_text(app).splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith("gputui — keys"))
    table = lines[start + 2 : start + 7]
    assert table[0].split()[:2] == ["s", "Sort"] and len(table[0].split()) >= 4  # side by side
    assert all(len(line.split()) >= 4 for line in table)
    rows = next(i for i, line in enumerate(lines[start + 2 :]) if not line.strip())
    assert rows <= 18  # the table is short: it fits the first screen at 80x24


async def test_help_lines_go_on_under_their_first_and_units_are_said_once(sim_sampler) -> None:
    app = GpuTuiApp(sim_sampler("dgx-h100", polls=2), start_sampler=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        shown = str(app.screen.query_one("#help-text").render())
        plain = app.screen.help_text.plain
    parts = shown.split("What each part shows", 1)[1].splitlines()
    for title, _ in PANELS_HELP:
        at = parts.index(title)
        body = parts[at + 1 : parts.index("", at)]
        assert body and all(line.startswith("  ") for line in body)  # indented under the title
        assert all(len(line) <= 72 for line in body)
    units = dict(PANELS_HELP)["Units"]
    assert "79.6G for 79.6 GiB" in units and "everything else writes GiB" in units
    assert plain.count("79.6G") == 1  # said once
    assert "XGMI" in plain and "xGMI" not in plain
