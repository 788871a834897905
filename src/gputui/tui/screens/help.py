"""The help screen: every key (as currently bound, so remapped keys show) in a compact table first,
then what each part of the dashboard shows, with the units once. Laid out for the width it has:
lines that go on are indented under their first, and a number stays with its unit
(:mod:`gputui.core.wrap`)."""

from __future__ import annotations

import math
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from gputui.core.wrap import wrap_text
from gputui.tui.widgets.footer import KeyFooter, why_disabled

PANELS_HELP: tuple[tuple[str, str], ...] = (
    (
        "Title bar",
        "host name, backend, driver and CUDA/ROCm version, GPU count, the reading interval and the "
        "time of the last reading; PAUSED while the display is paused; ● REC while recording; "
        "in a replay, REPLAY with the position, the recording's length, the speed and ▶ playing "
        "or paused.",
    ),
    (
        "GPU panels",
        "index and name; bars for GPU utilization, memory used/total and power draw/limit, with a "
        "history plot (newest on the right); temperatures (GPU, hotspot and memory when known), "
        "fan, SM/memory clocks and P-state; PCIe generation×width (shown as current/max and "
        "highlighted when trained below max) with RX/TX rates; NVLink (XGMI on AMD) RX/TX when "
        "known; "
        "uncorrected ECC errors (volatile/aggregate, highlighted when above 0); active throttle "
        "reasons in words (trouble ones highlighted and marked '!'); a GPU in MIG mode lists its "
        "instances (memory used/total each) where its utilization would be, since the driver "
        "reports none in MIG mode; an AMD GPU without an edge sensor shows its junction "
        "temperature once, as the hotspot. A GPU that "
        "stopped answering shows 'LOST — fell off the bus'. 'n/a' means the driver does not "
        "report that value. Small terminals show one compact row per GPU; big ones add charts "
        "of utilization, memory, power and temperature under the bars (0 to 100 %, to the "
        "power limit, to the slowdown temperature; each column the mean of a few seconds, "
        "'now' on the right), growing with the terminal; one or two GPUs get a roomy view with "
        "every field and the same charts. Click a panel to select its GPU.",
    ),
    (
        "Health",
        "each GPU panel's frame shows a badge: '✔ ok', '▲ warn' or '✖ fail', the worst of that "
        "GPU's active findings; the title bar sums up the node ('✔ healthy', '▲ 2 warnings', "
        "'✖ 1 failure', node-wide findings included). While something is wrong, a line under "
        "the host strip names it. A warning or failure that comes up later also shows a short "
        "notice, once (what the first reading finds is in the title bar and that line). "
        "Press h for every finding with its hint; findings that have cleared stay listed until "
        "acknowledged there (a: the selected one, A: all cleared ones).",
    ),
    (
        "Topology",
        "press t: the GPU x GPU matrix as nvidia-smi topo -m writes it (X itself, NV# bonded "
        "NVLinks, XGMI on AMD, PIX/PXB PCIe switches, PHB host bridge, NODE same NUMA node, SYS "
        "across sockets; fast paths in green) with CPU affinity and NUMA node and a legend; per "
        "GPU the PCIe link now/max (highlighted when trained below max), P2P read/write to its "
        "peers, links up and NVLink/XGMI traffic with its history; then every link: state (DOWN "
        "highlighted), version and speed, remote end, TX/RX with a small history, replay, "
        "recovery and CRC error counters. 0-9 show one GPU (its peers and links), a all; "
        "t, q or Esc closes it.",
    ),
    (
        "Probe",
        "press p (not in a replay or with --readonly): pick GPUs (busy ones, with processes or "
        "more than 1 GiB in use, are listed unchecked) and tests, then Start or enter. Each GPU"
        " is measured in a child process (python -m gputui.probe): memory copy/triad, "
        "host<->device over the PCIe link it negotiated, matmul TFLOPS per precision. The table"
        " shows measured, spec, % of spec and a verdict (OK at 90% or more of the fraction a "
        "healthy GPU reaches, WARN 80-90%, LOW below, or 10% below its siblings), with "
        "telemetry during the run and a short summary. 'What fits' sizes models for inference "
        "and Adam training from the highlighted GPU's and the node's memory. Without a GPU (the"
        " demo) it runs on the CPU, with no spec comparison. Esc cancels a running probe and "
        "closes the screen.",
    ),
    (
        "Record and replay",
        "R starts recording every reading to gputui-HOST-DATE-TIME.jsonl.gz in the current "
        "directory and R again stops it (not in a replay or with --readonly). gputui --replay "
        "FILE opens the dashboard on a recording: space plays or pauses the replay (instead of "
        "pausing the display), ← → seek 10 s, shift+← shift+→ or [ ] a minute, home/end jump to"
        " the start or the end, < > (or , .) halve or double the speed (×0.25 to ×64). After a "
        "seek the history plots start empty and rebuild as the replay plays. At the end of the "
        "recording the replay pauses; space plays it again from the start. Signals are "
        "disabled.",
    ),
    (
        "Units",
        "memory sizes are binary: the panels, the process table and the host strip write 79.6G "
        "for 79.6 GiB (2^30 bytes; M and T likewise), everything else writes GiB. Rates are "
        "decimal, as PCIe and NVLink are specified: 25.1GB/s. Temperatures in °C, power in W.",
    ),
    (
        "Host strip",
        "CPU use (with a per-core summary when it fits), RAM used/total, swap, load average and "
        "uptime.",
    ),
    (
        "Processes",
        "GPU processes: GPU, PID, user, type (C compute, G graphics), GPU memory, SM %, CPU %, "
        "host RSS, running time and command, grouped by GPU (g: not grouped; the GPU's index is "
        "bright on its first row) and sorted by the column whose header has the arrow within "
        "each; f (or F5) shows them as a tree, each under its parent, and processes that share "
        "a parent that uses no GPU (the ranks torchrun started) under a row for it. The header's "
        "right end says how they are arranged, how many are tagged and where the cursor is (12 "
        "of 2,000). A long command is shortened in the middle, keeping the script or program "
        "whole and what tells processes apart (--local-rank=3, --port 8001), its end cut when "
        "even that does not fit; ← → scroll the commands sideways (then shown whole), ^ and $ "
        "go to the start and to the end of the selected one; enter shows it whole. / filters: "
        "what it matched is highlighted, and a match in a part of the command that would be "
        "cut, or in a job, pod or name no column shows, is brought into view. Space tags a "
        "process (● in the margin; on a tree's parent row, all of its processes; U untags "
        "them all) and k signals every tagged one after the same confirmation; without tags, the "
        "one under the cursor (also from its details). A signalled process says so at once and "
        "the process list is read again; one that has exited says exited. e shows a process's "
        "environment (your own processes only, unless root). JOB / POD (when the table has "
        "room): the Slurm job, Kubernetes pod or container a process runs in. A process in a "
        "MIG instance shows it after its GPU: 3·g7 is GPU instance 7 of GPU 3. The sorted-by "
        "column stays in view in a narrow table. Click a header to sort by it; ↑ ↓, page "
        "up/down, home and end move through thousands of rows. Where space tags, Z pauses.",
    ),
)

KEY_NAMES = {
    "question_mark": "?",
    "slash": "/",
    "plus": "+",
    "minus": "-",
    "equals_sign": "=",
    "space": "space",
    "escape": "esc",
    "enter": "enter",
    "left": "←",
    "right": "→",
    "shift+left": "shift+←",
    "shift+right": "shift+→",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "less_than_sign": "<",
    "greater_than_sign": ">",
    "comma": ",",
    "full_stop": ".",
    "circumflex_accent": "^",
    "dollar_sign": "$",
}

KEYS_IN_HELP = ("gpu.", "clear", "replay.", "quit.", "untag", "process_table.command_")
"""Binding ids (prefixes) the help lists though the footer does not show them."""

HELP_DESCRIPTIONS = {
    "replay.play": "Play/pause the replay",
    "replay.back": "Replay: back 10 s",
    "replay.forward": "Replay: forward 10 s",
    "replay.back_long": "Replay: back 1 min",
    "replay.forward_long": "Replay: forward 1 min",
    "replay.start": "Replay: go to the start",
    "replay.end": "Replay: go to the end",
    "replay.slower": "Replay: half the speed",
    "replay.faster": "Replay: double the speed",
    "record": "Start/stop recording to a file",
    "probe": "Run the probe",
    "tag": "Tag / untag the process (k then signals every tagged one)",
    "signal": "Signal the tagged processes, or else the selected one",
    "untag": "Untag every process",
    "environ": "The selected process's environment",
    "process_table.group": "Group the processes by GPU, or not",
    "process_table.tree": "The processes as a tree (parents above their children), or not",
    "process_table.command_left": "Scroll the commands left",
    "process_table.command_right": "Scroll the commands right (shown whole)",
    "process_table.command_start": "The commands from their start",
    "process_table.command_end": "Scroll to the end of the selected command",
}
"""Longer words than the footer's, by binding id."""


def _key_text(keys: str) -> str:
    return " ".join(KEY_NAMES.get(k.strip(), k.strip()) for k in keys.split(","))


def key_rows(screen: Screen[None]) -> list[tuple[str, str]]:
    """``(keys, description)`` for gputui's bindings active on ``screen`` (remapped keys show as
    remapped), one row per action; widget plumbing such as cursor keys is left out."""
    rows: dict[str, tuple[list[str], str]] = {}
    digits: list[str] = []
    # Ctrl+C (a priority binding, so first among them) goes after q on the Quit row.
    bindings = sorted(
        screen.active_bindings.items(),
        key=lambda item: (item[1].binding.id or "").startswith("quit."),
    )
    for key, active in bindings:
        binding = active.binding
        if binding.action.startswith("select_gpu(") and key.isdigit():
            digits.append(key)
            continue
        if not (binding.show or (binding.id or "").startswith(KEYS_IN_HELP)):
            continue
        description = HELP_DESCRIPTIONS.get(binding.id or "") or (
            binding.description or binding.action.replace("_", " ")
        )
        reason = None if active.enabled else why_disabled(active.node, binding.action)
        if reason is not None:
            description += f" (off: {reason})"
        keys, _ = rows.setdefault(binding.action, ([], description))
        keys.append(_key_text(key))
    out = []
    if digits:
        out.append(
            (f"{min(digits)}–{max(digits)}", "Show one GPU (panel highlighted, table filtered)")
        )
    for _, (keys, description) in rows.items():
        out.append((" ".join(dict.fromkeys(keys)), description))
    out.append(("enter", "Process details (on a table row)"))
    out.append(
        (
            "ctrl+p",
            "Command palette: GPU, pause, interval, record, replay, health, topology, probe, "
            "theme, help, quit",
        )
    )
    out.append(("mouse", "Click a GPU panel to select it, a column header to sort"))
    return out


HELP_WIDTH = 90
"""The help box's width at most (``HelpScreen #help-body`` in the .tcss)."""
HELP_CHROME = 8
"""Cells of the box that are not text: its border, padding and scrollbar."""
KEY_GAP = 3


def key_table(rows: list[tuple[str, str]], width: int) -> Text:
    """The keys as a table of ``key  what`` cells side by side (read down the columns), as many
    columns as make the table shortest; a key whose words are longer than a cell gets a line of
    its own after the table, wrapped under its words."""
    key_w = max((len(keys) for keys, _ in rows), default=0)

    def layout(cols: int) -> tuple[int, list[tuple[str, str]], list[tuple[str, str]]]:
        room = (width - KEY_GAP * (cols - 1)) // cols - key_w - 1
        short = [(k, d) for k, d in rows if len(d) <= room]
        long = [(k, d) for k, d in rows if len(d) > room]
        lines = math.ceil(len(short) / cols) + sum(
            len(wrap_text(d, width - key_w - 1)) for _, d in long
        )
        return lines, short, long

    _, short, long = min((layout(cols) for cols in range(1, 6)), key=lambda t: t[0])
    text = Text()
    if short:
        cell_w = key_w + 1 + max(len(d) for _, d in short)
        cols = max(1, (width + KEY_GAP) // (cell_w + KEY_GAP))
        lines = math.ceil(len(short) / cols)
        for y in range(lines):
            for x in range(cols):
                i = x * lines + y
                if i >= len(short):
                    break
                keys, words = short[i]
                if x:
                    text.append(" " * KEY_GAP)
                text.append(f"{keys:<{key_w}} ", style="bold")
                last = x == cols - 1 or (x + 1) * lines + y >= len(short)
                text.append(words if last else f"{words:<{cell_w - key_w - 1}}")
            text.append("\n")
    for keys, words in long:
        text.append(f"{keys:<{key_w}} ", style="bold")
        indent = " " * (key_w + 1)
        text.append("\n".join(wrap_text(words, width, first=indent, indent=indent))[key_w + 1 :])
        text.append("\n")
    return text


def help_text(rows: list[tuple[str, str]], width: int) -> Text:
    """The whole help laid out in ``width`` cells: the key table, then each part of the screen
    with its body indented under its title."""
    text = Text()
    text.append("gputui — keys\n\n", style="bold")
    text.append_text(key_table(rows, width))
    text.append("\nWhat each part shows\n\n", style="bold")
    for title, body in PANELS_HELP:
        text.append(f"{title}\n", style="bold")
        text.append("\n".join(wrap_text(body, width, first="  ", indent="  ")) + "\n\n")
    text.append("Esc, q or ? closes this help.", style="italic")
    return text


class HelpScreen(ModalScreen[None]):
    """Keys and panel descriptions. Esc, q or ? closes it."""

    CSS_PATH = "help.tcss"  # read when the screen first opens, not before the first frame
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "close", "Close", id="help.close"),
    ]

    def __init__(self, dashboard: Screen[None]) -> None:
        super().__init__(id="help")
        self.dashboard = dashboard
        self.help_text = Text()
        """Every key and part as one line each (what the help says, before it is laid out)."""
        self._rows: list[tuple[str, str]] = []
        self._width = 0

    def compose(self) -> ComposeResult:
        self._rows = key_rows(self.dashboard)
        self.help_text = help_text(self._rows, 10_000)
        with VerticalScroll(id="help-body"):
            yield Static(self._laid_out(), id="help-text")
        yield KeyFooter()  # the help's keys, not the dashboard's under it

    def _laid_out(self) -> Text:
        self._width = max(min(self.app.size.width, HELP_WIDTH) - HELP_CHROME, 20)
        return help_text(self._rows, self._width)

    def on_resize(self) -> None:
        if self.is_mounted and max(min(self.app.size.width, HELP_WIDTH) - HELP_CHROME, 20) != (
            self._width
        ):
            self.query_one("#help-text", Static).update(self._laid_out())

    def action_close(self) -> None:
        self.dismiss(None)


__all__ = ["HelpScreen", "help_text", "key_rows", "key_table"]
