"""A footer that shows only the keys that fit, each whole, the most useful first.

Textual's footer lists every binding and lets the ones that do not fit run under the command
palette key (cut mid-word, a stray character at the right edge). :class:`KeyFooter` picks, for
the width it has, the bindings that fit whole, by :data:`FOOTER_RANK` (quit and help always:
help lists every key, and the palette runs every action), and keeps them in Textual's order.

It is one line of text, not a widget per key: when the focus moves (and the bindings with it) it
redraws that line instead of mounting a dozen widgets, which costs a tenth of a second in a big
terminal. A click on a key presses it.
"""

from __future__ import annotations

from typing import ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget

FOOTER_RANK: dict[str, int] = {
    # Ways out and to the rest: always shown.
    "quit": 0,
    "help": 0,
    "probe.start": 0,
    "probe.close": 0,
    "process_detail.close": 0,
    "health.close": 0,
    "topology.close": 0,
    "help.close": 0,
    "environ.close": 0,
    # What the screen is for.
    "replay.play": 1,
    "replay.back": 1,
    "replay.forward": 1,
    "filter": 2,
    "process_table.cycle_sort": 3,
    "signal": 4,
    "tag": 4,
    "process_detail.signal": 1,
    "process_detail.environ": 2,
    "process_table.tree": 9,
    "environ": 10,
    "process_table.group": 11,
    "health.ack": 2,
    "health.ack_all": 3,
    "topology.gpu.all": 3,
    "health": 5,
    "topology": 6,
    "probe": 7,
    "pause": 8,
    "gpu.all": 9,
    "process_table.reverse_sort": 10,
    "replay.slower": 11,
    "replay.faster": 11,
    "refresh": 12,
    "record": 13,
    "interval.up": 14,
    "interval.down": 14,
}
"""Which keys the footer gives up last (0: never); a binding without an id, or not listed, ranks
after these."""
DEFAULT_RANK = 20
PALETTE_EDGE = "▏"

Shown = tuple[Binding, bool]
"""A binding in the footer, and whether it is enabled."""


class KeyFooter(Widget):
    """The keys that fit whole (the others are in the help and the palette), and the palette
    key at the right."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "key-footer--key",
        "key-footer--description",
        "key-footer--disabled",
        "key-footer--palette",
    }
    DEFAULT_CSS = """
    KeyFooter {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
    }
    KeyFooter > .key-footer--key {
        color: $footer-key-foreground;
        background: $footer-key-background;
        text-style: bold;
    }
    KeyFooter > .key-footer--description {
        color: $footer-description-foreground;
        background: $footer-description-background;
    }
    KeyFooter > .key-footer--disabled {
        text-style: dim;
    }
    KeyFooter > .key-footer--palette {
        color: $foreground 20%;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: list[Shown] = []
        self._palette: Binding | None = None
        self._spans: list[tuple[int, int, str]] = []
        """``(start, end, key)`` of each key drawn, for clicks."""
        self._signature: tuple[object, ...] | None = None

    # -- choosing ----------------------------------------------------------------------------------

    def _candidates(self) -> tuple[list[Shown], Binding | None]:
        """Bindings to show (one per action, the first, in Textual's order), and the palette's."""
        out: list[Shown] = []
        seen: set[str] = set()
        palette: Binding | None = None
        app = self.app
        for _node, binding, enabled, _tooltip in self.screen.active_bindings.values():
            if binding.key == app.COMMAND_PALETTE_BINDING and app.ENABLE_COMMAND_PALETTE:
                palette = binding
            elif binding.show and binding.action not in seen:
                seen.add(binding.action)
                out.append((binding, enabled))
        return out, palette

    def _key_width(self, binding: Binding) -> int:
        """``k Text`` and a cell after it."""
        return cell_len(self.app.get_key_display(binding)) + 1 + cell_len(binding.description) + 1

    def choose(self, width: int) -> list[Shown]:
        """The bindings that fit whole in ``width`` cells beside the palette key: by rank, then
        in order; shown in Textual's order."""
        bindings, palette = self._candidates()
        room = width - 1 - (self._key_width(palette) + 1 if palette is not None else 0)
        ranked = sorted(
            range(len(bindings)),
            key=lambda i: (FOOTER_RANK.get(bindings[i][0].id or "", DEFAULT_RANK), i),
        )
        chosen: set[int] = set()
        used = 0
        for i in ranked:
            w = self._key_width(bindings[i][0])
            if used + w <= room:
                chosen.add(i)
                used += w
        return [b for i, b in enumerate(bindings) if i in chosen]

    @property
    def shown_keys(self) -> list[str]:
        """``key description`` of each key shown (tests, help)."""
        return [f"{self.app.get_key_display(b)} {b.description}" for b, _ in self._shown]

    # -- updates -----------------------------------------------------------------------------------

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._update()

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        if self.is_attached and screen is self.screen:
            self._update()

    def on_resize(self, event: events.Resize) -> None:
        self._update()

    def _update(self) -> None:
        """Choose again; repaint only when what is shown changed (the focus moves often)."""
        width = self.size.width or self.app.size.width
        shown = self.choose(width)
        _, palette = self._candidates()
        signature = (
            width,
            tuple((b.key, b.description, enabled) for b, enabled in shown),
            palette.key if palette else None,
        )
        if signature != self._signature:
            self._signature = signature
            self._shown, self._palette = shown, palette
            self.refresh()

    # -- drawing -----------------------------------------------------------------------------------

    def render(self) -> Text:
        key_style = self.get_component_rich_style("key-footer--key")
        text_style = self.get_component_rich_style("key-footer--description")
        disabled = self.get_component_rich_style("key-footer--disabled")
        line = Text(no_wrap=True, overflow="crop")
        spans: list[tuple[int, int, str]] = []
        for binding, enabled in self._shown:
            start = line.cell_len
            dim = disabled if not enabled else None
            line.append(self.app.get_key_display(binding), key_style + dim if dim else key_style)
            line.append(f" {binding.description}", text_style + dim if dim else text_style)
            spans.append((start, line.cell_len, binding.key))
            line.append(" ")
        palette = self._palette
        if palette is not None:
            label = f"{self.app.get_key_display(palette)} {palette.description} "
            width = self.size.width
            pad = width - line.cell_len - cell_len(label) - 1
            if pad >= 0:
                line.append(" " * pad)
                line.append(PALETTE_EDGE, self.get_component_rich_style("key-footer--palette"))
                start = line.cell_len
                line.append(self.app.get_key_display(palette), key_style)
                line.append(f" {palette.description} ", text_style)
                spans.append((start, line.cell_len, palette.key))
        self._spans = spans
        return line

    def on_click(self, event: events.Click) -> None:
        for start, end, key in self._spans:
            if start <= event.x < end:
                event.stop()
                self.app.simulate_key(key.split(",")[0])
                return


__all__ = ["DEFAULT_RANK", "FOOTER_RANK", "KeyFooter"]
