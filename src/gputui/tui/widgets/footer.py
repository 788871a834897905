"""A footer that shows only the keys that fit, each whole, the most useful first.

Textual's footer lists every binding and lets the ones that do not fit run under the command
palette key (cut mid-word, a stray character at the right edge). :class:`KeyFooter` picks, for
the width it has, the bindings that fit whole, by :data:`FOOTER_RANK` (quit and help always:
help lists every key, and the palette runs every action), and keeps them in Textual's order.

It shows the keys of the screen in front (a dialog's, the help's), and says why a key does
nothing where it does nothing: a binding its namespace disables (``check_action`` returns None)
and explains (``why_disabled(action)`` returns why, e.g. "replay") is drawn dim, together with
the others disabled for the same reason: ``k p R off: replay``.

It is one line of text, not a widget per key: when the focus moves (and the bindings with it) it
redraws that line instead of mounting a dozen widgets, which costs a tenth of a second in a big
terminal. A click on a key presses it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget

from gputui.core.frozen import frozen

UNAVAILABLE = "unavailable"
"""The rank id of the keys that do nothing here, shown together with why."""

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
    UNAVAILABLE: 4,
    "process_detail.signal": 1,
    "process_detail.environ": 2,
    "probe.toggle": 1,
    "probe.next": 2,
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


@frozen(slots=False)
class FooterKey:
    """One entry of the footer: a binding, or the keys that do nothing here and why."""

    key: str
    """What a click presses."""
    label: str
    """The key (or keys) as shown."""
    description: str
    enabled: bool = True
    rank_id: str = ""

    @property
    def text(self) -> str:
        return f"{self.label} {self.description}"


def why_disabled(node: object, action: str) -> str | None:
    """Why ``node`` disables ``action``, where it says (its ``why_disabled``); else None."""
    explain: Callable[[str], str | None] | None = getattr(node, "why_disabled", None)
    return explain(action) if callable(explain) else None


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
        self._shown: list[FooterKey] = []
        self._palette: Binding | None = None
        self._spans: list[tuple[int, int, str]] = []
        """``(start, end, key)`` of each key drawn, for clicks."""
        self._signature: tuple[object, ...] | None = None

    # -- choosing ----------------------------------------------------------------------------------

    def _candidates(self) -> tuple[list[FooterKey], Binding | None]:
        """Keys to show (one per action, the first, in Textual's order; the unavailable ones
        together, by reason, at the end), and the palette's binding."""
        out: list[FooterKey] = []
        off: dict[str, list[Binding]] = {}
        seen: set[str] = set()
        palette: Binding | None = None
        app = self.app
        for node, binding, enabled, _tooltip in self.screen.active_bindings.values():
            if binding.key == app.COMMAND_PALETTE_BINDING and app.ENABLE_COMMAND_PALETTE:
                palette = binding
            elif binding.show and binding.action not in seen:
                seen.add(binding.action)
                reason = None if enabled else why_disabled(node, binding.action)
                if reason is not None:
                    off.setdefault(reason, []).append(binding)
                    continue
                out.append(
                    FooterKey(
                        binding.key,
                        app.get_key_display(binding),
                        binding.description,
                        enabled,
                        binding.id or "",
                    )
                )
        for reason, bindings in off.items():
            label = " ".join(app.get_key_display(b) for b in bindings)
            out.append(FooterKey(bindings[0].key, label, f"off: {reason}", False, UNAVAILABLE))
        return out, palette

    def _key_width(self, key: FooterKey) -> int:
        """``k Text`` and a cell after it."""
        return cell_len(key.label) + 1 + cell_len(key.description) + 1

    def _palette_width(self, binding: Binding) -> int:
        return cell_len(self.app.get_key_display(binding)) + 1 + cell_len(binding.description) + 1

    def choose(self, width: int) -> list[FooterKey]:
        """The keys that fit whole in ``width`` cells beside the palette key: by rank, then in
        order; shown in order."""
        keys, palette = self._candidates()
        room = width - 1 - (self._palette_width(palette) + 1 if palette is not None else 0)
        ranked = sorted(
            range(len(keys)),
            key=lambda i: (FOOTER_RANK.get(keys[i].rank_id, DEFAULT_RANK), i),
        )
        chosen: set[int] = set()
        used = 0
        for i in ranked:
            w = self._key_width(keys[i])
            if used + w <= room:
                chosen.add(i)
                used += w
        return [k for i, k in enumerate(keys) if i in chosen]

    @property
    def shown_keys(self) -> list[str]:
        """``key description`` of each key shown (tests, help)."""
        return [key.text for key in self._shown]

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
        signature = (width, tuple(shown), palette.key if palette else None)
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
        for key in self._shown:
            start = line.cell_len
            dim = disabled if not key.enabled else None
            line.append(key.label, key_style + dim if dim else key_style)
            line.append(f" {key.description}", text_style + dim if dim else text_style)
            spans.append((start, line.cell_len, key.key))
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


__all__ = ["DEFAULT_RANK", "FOOTER_RANK", "UNAVAILABLE", "FooterKey", "KeyFooter", "why_disabled"]
