"""Command palette (ctrl+p) entries for gputui: show one GPU, show all, pause, interval presets,
refresh, health findings, topology, help, light/dark theme, quit."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

from gputui.format import fmt_interval

if TYPE_CHECKING:
    from gputui.tui.app import GpuTuiApp

Command = tuple[str, str, Callable[[], object]]


def gputui_commands(app: GpuTuiApp) -> Iterator[Command]:
    """``(title, help, callback)`` for every gputui command, in palette order."""
    from gputui.tui.app import INTERVAL_PRESETS

    node = app.dashboard.node
    for info in node.gpus:
        yield (
            f"Show GPU {info.index} only",
            f"{info.name}: highlight its panel and list only its processes",
            partial(app.action_select_gpu, info.index),
        )
    yield ("Show all GPUs", "List the processes of every GPU", partial(app.action_select_gpu, None))
    if app.paused:
        yield ("Resume display", "Show new readings again", app.action_toggle_pause)
    else:
        yield (
            "Pause display",
            "Freeze the screen; readings are still collected for the history plots",
            app.action_toggle_pause,
        )
    for seconds in INTERVAL_PRESETS:
        yield (
            f"Interval {fmt_interval(seconds)}",
            f"Read the GPUs every {fmt_interval(seconds)}",
            partial(app.change_interval, seconds),
        )
    yield ("Refresh now", "Take a reading now", app.action_refresh_now)
    yield (
        "Show health findings",
        "Every health finding with its hint; acknowledge cleared ones",
        app.action_health,
    )
    yield (
        "Show topology",
        "GPU interconnect matrix, PCIe and P2P per GPU, NVLink/XGMI link state and traffic",
        app.action_topology,
    )
    yield ("Help", "Every key, and what each panel shows", app.action_help)
    yield (
        "Toggle light/dark theme",
        "Switch between a light and a dark theme",
        app.action_toggle_dark,
    )
    yield ("Quit gputui", "Leave gputui", app.action_quit)


class GpuCommands(Provider):
    """gputui's own commands for the command palette."""

    def _commands(self) -> list[Command]:
        return list(gputui_commands(self.app))  # type: ignore[arg-type]

    async def discover(self) -> Hits:
        for title, help_text, callback in self._commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)


__all__ = ["GpuCommands", "gputui_commands"]
