"""Command palette (ctrl+p) entries for gputui: show one GPU, show all, pause, interval presets,
refresh, start/stop recording (live, not --readonly) or the replay controls (replay), health
findings, topology, the probe (live, not --readonly), help, light/dark theme, quit."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

from gputui.core.format import fmt_interval
from gputui.engine.sampler import INTERVAL_PRESETS

if TYPE_CHECKING:
    from gputui.tui.app import GpuTuiApp

Command = tuple[str, str, Callable[[], object]]


def gputui_commands(app: GpuTuiApp) -> Iterator[Command]:
    """``(title, help, callback)`` for every gputui command, in palette order."""
    node = app.dashboard.node
    for info in node.gpus:
        yield (
            f"Show GPU {info.index} only",
            f"{info.name}: highlight its panel and list only its processes",
            partial(app.action_select_gpu, info.index),
        )
    yield ("Show all GPUs", "List the processes of every GPU", partial(app.action_select_gpu, None))
    replay = app.replay
    if replay is not None:
        yield from _replay_commands(app)
    elif app.paused:
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
    if not app.readonly:  # neither in a replay nor with --readonly
        if app.recording is None:
            yield (
                "Start recording",
                f"Write every reading to a new file in {app.record_dir}",
                app.action_toggle_record,
            )
        else:
            yield ("Stop recording", f"Close {app.recording.path}", app.action_toggle_record)
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
    if not app.readonly:
        yield (
            "Run the probe",
            "Measure memory bandwidth, PCIe and matmul TFLOPS against the spec sheet; what fits",
            app.action_probe,
        )
    yield ("Help", "Every key, and what each panel shows", app.action_help)
    yield (
        "Toggle light/dark theme",
        "Switch between a light and a dark theme",
        app.action_toggle_dark,
    )
    yield ("Quit gputui", "Leave gputui", app.action_quit)


def _replay_commands(app: GpuTuiApp) -> Iterator[Command]:
    from gputui.tui.replay import SEEK_LONG_S, SEEK_SHORT_S

    replay = app.replay
    if replay is None:
        return
    playing = not replay.paused
    yield (
        "Pause replay" if playing else "Play replay",
        "Stop the recording's clock" if playing else "Run the recording's clock again",
        app.action_replay_play,
    )
    for seconds, words in (
        (-SEEK_SHORT_S, "back 10 s"),
        (SEEK_SHORT_S, "forward 10 s"),
        (-SEEK_LONG_S, "back 1 min"),
        (SEEK_LONG_S, "forward 1 min"),
    ):
        yield (
            f"Replay {words}",
            "Seek; the history plots rebuild as the replay plays",
            partial(app.action_replay_seek, seconds),
        )
    yield ("Replay from the start", "Seek to the first reading", app.action_replay_start)
    yield ("Replay: go to the end", "Seek to the last reading", app.action_replay_end)
    yield ("Replay slower", "Half the replay speed", partial(app.action_replay_speed, 0.5))
    yield ("Replay faster", "Double the replay speed", partial(app.action_replay_speed, 2))


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
