"""A compositor that sends only the dirty cells of a partially refreshed line, with few escapes.

Textual 8.2's ``ChopsUpdate.render_segments`` crops a dirty span on the right but not on the left
(its own source says ``TODO: crop to x extents``): a widget that refreshes ``Region(50, y, 3, 1)``
still re-sends cells 0–53 of its line. It also writes every segment as
``ESC[<attributes;fg;bg>m text ESC[0m``, so a one-digit change costs ~30–50 bytes of escapes.

:class:`SpanCompositor` renders the same update (the same cells, the same colours) cropped on both
sides and writes only what changes between consecutive segments: nothing when the style is the
same (cursor moves do not change the terminal's attributes), just the new foreground when only
that differs, a combined reset-and-set when attributes differ. A one-digit change then costs about
ten bytes. :class:`~gputui.tui.widgets.line_widget.LineWidget` panels rely on it to repaint a few
cells per changed value instead of whole lines.

It is installed per screen (``DashboardScreen``), not patched into Textual globally, and
:func:`install` leaves a screen alone if the private API it builds on has changed shape.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.color import ColorSystem
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from textual._compositor import ChopsUpdate, Compositor
from textual.strip import SGR_STYLES, Strip

from gputui.format import one_cell_each

# The terminal's rendition as (attributes, foreground, background) SGR parameter strings.
_State = tuple[str, str, str]
_DEFAULT: _State = ("", "", "")
_UNKNOWN: _State = ("?", "?", "?")


class SpanChopsUpdate(ChopsUpdate):
    """A ChopsUpdate whose terminal output covers exactly the dirty spans, with minimal SGR."""

    def render_segments(self, console: Console) -> str:
        color_system = console._color_system or ColorSystem.TRUECOLOR
        out: list[str] = []
        append = out.append
        state = _UNKNOWN  # whatever the terminal was left in: the first style is set in full
        chops = self.chops
        chop_ends = self.chop_ends
        for y, x1, x2 in self.spans:
            line = chops[y]
            ends = chop_ends[y]
            for end, (x, strip) in zip(ends, line.items(), strict=False):
                if strip is None or x >= x2 or end <= x1:
                    continue
                segments: Iterable[Segment] = strip
                if x < x1 or end > x2:
                    start = max(x, x1)
                    segments = _crop(strip, start - x, min(end, x2) - x)
                    x = start
                append(f"\x1b[{y + 1};{x + 1}H")
                for text, style, _ in segments:
                    if not text:
                        continue
                    if style is not None and style._link:
                        # Hyperlinks: Textual's own rendering, from a clean state.
                        if state != _DEFAULT:
                            append("\x1b[0m")
                        append(Strip.render_style(style, text, color_system))
                        state = _DEFAULT
                        continue
                    new = _sgr_state(style, color_system)
                    if new != state:
                        append(_transition(state, new))
                        state = new
                    append(text)
        if state != _DEFAULT:
            append("\x1b[0m")
        return "".join(out)


def _crop(strip: Strip, start: int, end: int) -> Iterable[Segment]:
    """The segments of cells ``start``..``end`` of ``strip``. Cut by string index when every
    character is one cell wide (no Strip is built: a Strip costs seven caches); else
    :meth:`Strip.crop`."""
    segments = strip._segments
    if not all(one_cell_each(segment.text) for segment in segments):
        return strip.crop(start, end)
    out: list[Segment] = []
    x = 0
    for segment in segments:
        text = segment.text
        next_x = x + len(text)
        if next_x > start and x < end:
            if x < start or next_x > end:
                text = text[max(start - x, 0) : end - x]
                segment = Segment(text, segment.style, segment.control)
            out.append(segment)
        elif x >= end:
            break
        x = next_x
    return out


_STATE_CACHE: dict[tuple[Style, ColorSystem], _State] = {}


def _sgr_state(style: Style | None, color_system: ColorSystem) -> _State:
    """The SGR parameters Textual would write for ``style``, split into attributes, fg, bg."""
    if style is None:
        return _DEFAULT
    key = (style, color_system)
    state = _STATE_CACHE.get(key)
    if state is None:
        if len(_STATE_CACHE) > 4096:
            _STATE_CACHE.clear()
        attributes = style._attributes & style._set_attributes
        attrs = ";".join(
            SGR_STYLES[bit] for bit in range(attributes.bit_length()) if attributes & (1 << bit)
        )
        color, bgcolor = style._color, style._bgcolor
        fg = ";".join(color.downgrade(color_system).get_ansi_codes()) if color else ""
        bg = ";".join(bgcolor.downgrade(color_system).get_ansi_codes(False)) if bgcolor else ""
        state = _STATE_CACHE[key] = (attrs, fg, bg)
    return state


def _transition(old: _State, new: _State) -> str:
    """The shortest SGR sequence that takes the terminal from ``old`` to ``new``."""
    if old[0] == new[0] and old is not _UNKNOWN:
        codes = []
        if old[1] != new[1]:
            codes.append(new[1] or "39")
        if old[2] != new[2]:
            codes.append(new[2] or "49")
        return f"\x1b[{';'.join(codes)}m" if codes else ""
    params = ";".join(p for p in new if p)
    return f"\x1b[0;{params}m" if params else "\x1b[0m"


class SpanCompositor(Compositor):
    """Textual's compositor, with partial updates cropped to their spans on both sides."""

    def render_partial_update(self) -> ChopsUpdate | None:
        update = super().render_partial_update()
        if update is None or type(update) is not ChopsUpdate:
            return update
        return SpanChopsUpdate(update.chops, update.spans, update.chop_ends)


def install(screen: object) -> bool:
    """Give ``screen`` a SpanCompositor; False (and no change) if Textual's internals differ."""
    current = getattr(screen, "_compositor", None)
    if type(current) is not Compositor or not hasattr(ChopsUpdate, "render_segments"):
        return False
    screen._compositor = SpanCompositor()  # type: ignore[attr-defined]
    return True


__all__ = ["SpanChopsUpdate", "SpanCompositor", "install"]
