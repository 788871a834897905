"""A compositor that sends only the dirty cells of a partially refreshed line, with few escapes.

Textual 8.2's ``ChopsUpdate.render_segments`` crops a dirty span on the right but not on the left
(its own source says ``TODO: crop to x extents``): a widget that refreshes ``Region(50, y, 3, 1)``
still re-sends cells 0–53 of its line. It also writes every segment as
``ESC[<attributes;fg;bg>m text ESC[0m``, so a one-digit change costs ~30–50 bytes of escapes.

:class:`SpanCompositor` renders the same update (the same cells, the same colours) cropped on both
sides and writes only what changes between consecutive pieces: the cells of one style are written
together wherever they are on the screen (a style is set once per update, not once per piece;
an update is written at once, inside the terminal's synchronized update where it has one, so the
order of its cells does not show), with the shortest cursor move between them (to the cell,
to the column, or forward along the line); a colour change sends just the new foreground, an
attribute change a combined reset-and-set. A one-digit change then costs a few bytes.
:class:`~gputui.tui.widgets.line_widget.LineWidget` panels rely on it to repaint a few cells per
changed value instead of whole lines.

It is installed per screen (``DashboardScreen``, ``TopologyScreen``), not patched into Textual
globally. It builds on Textual's private ``textual._compositor`` (pinned exactly in
pyproject.toml), so it checks that API twice: :func:`install` leaves a screen with the stock
compositor if the classes or attributes it uses have changed shape, and the first partial update
that fails anyway (an attribute gone, a constructor that takes other arguments) is drawn by
Textual's own code, logged once, and the screen's compositor becomes the stock one for good.
Either way the screen draws the same cells, only with more bytes.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterable, Mapping, Sequence

from rich.cells import cell_len
from rich.color import ColorSystem
from rich.console import COLOR_SYSTEMS, Console
from rich.segment import Segment
from rich.style import Style
from textual._compositor import ChopsUpdate, Compositor
from textual.strip import SGR_STYLES, Strip

from gputui.core.format import one_cell_each
from gputui.tui.repaint_compositor import RepaintCompositor

log = logging.getLogger(__name__)

# The terminal's rendition as (attributes, foreground, background) SGR parameter strings.
_State = tuple[str, str, str]
_DEFAULT: _State = ("", "", "")
_UNKNOWN: _State = ("?", "?", "?")


class SpanChopsUpdate(ChopsUpdate):
    """A ChopsUpdate whose terminal output covers exactly the dirty spans, with minimal SGR."""

    def __init__(
        self,
        chops: Sequence[Mapping[int, Strip | None]],
        spans: list[tuple[int, int, int]],
        chop_ends: list[list[int]],
        compositor: SpanCompositor | None = None,
    ) -> None:
        super().__init__(chops, spans, chop_ends)
        self.compositor = compositor
        """Told when this update could not be drawn our way (it goes back to the stock one)."""

    def render_segments(self, console: Console) -> str:
        try:
            return self._render_spans(console)
        except Exception as error:
            if self.compositor is not None:
                self.compositor.give_up(error)
            else:
                _warn_once(f"a partial update failed ({error!r})")
            return super().render_segments(console)

    def _render_spans(self, console: Console) -> str:
        color_system = COLOR_SYSTEMS.get(console.color_system or "", ColorSystem.TRUECOLOR)
        # The dirty cells as pieces of one style, grouped by the style's SGR state (in the order
        # the states first appear), in screen order within a group: each style is set once, and
        # the cursor moves between a group's pieces are short ones along a line where they can.
        groups: dict[_State, list[tuple[int, int, int, str]]] = {}
        links: list[tuple[int, int, Style, str]] = []
        chops = self.chops
        chop_ends = self.chop_ends
        state_of = _sgr_state
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
                for text, style, _ in segments:
                    if not text:
                        continue
                    next_x = x + (len(text) if text.isascii() else cell_len(text))
                    if style is not None and style.link:
                        links.append((y, x, style, text))
                    else:
                        key = state_of(style, color_system)
                        pieces = groups.get(key)
                        if pieces is None:
                            pieces = groups[key] = []
                        pieces.append((y, x, next_x, text))
                    x = next_x
        out: list[str] = []
        append = out.append
        state = _UNKNOWN  # whatever the terminal was left in: the first style is set in full
        cursor_y = cursor_x = -1  # unknown: the first move is absolute
        for new, pieces in groups.items():
            pieces.sort()
            for y, x, next_x, text in pieces:
                if y != cursor_y or x != cursor_x:
                    append(_move(cursor_y, cursor_x, y, x))
                if new is not state:
                    append(_transition(state, new))
                    state = new
                append(text)
                cursor_y = y
                cursor_x = next_x
        for y, x, style, text in links:
            # Hyperlinks: Textual's own rendering, from a clean state.
            append(f"\x1b[{y + 1};{x + 1}H")
            if state != _DEFAULT:
                append("\x1b[0m")
            append(Strip.render_style(style, text, color_system))
            state = _DEFAULT
        if state != _DEFAULT:
            append("\x1b[0m")
        return "".join(out)


def _move(from_y: int, from_x: int, y: int, x: int) -> str:
    """The shortest cursor move from (``from_x``, ``from_y``) to (``x``, ``y``), 0-based: on the
    same line, to the column (CHA) or forward (CUF) when the cursor is left of it; else to the
    cell (CUP). A line's last cell leaves the cursor there with a wrap pending, so ``from_x`` is
    then the width: only an absolute move follows."""
    if y == from_y:
        column = f"\x1b[{x + 1}G"
        if x > from_x:
            forward = f"\x1b[{x - from_x}C" if x - from_x > 1 else "\x1b[C"
            if len(forward) < len(column):
                return forward
        return column
    return f"\x1b[{y + 1};{x + 1}H"


def _crop(strip: Strip, start: int, end: int) -> Iterable[Segment]:
    """The segments of cells ``start``..``end`` of ``strip``. Cut by string index while every
    character up to ``end`` is one cell wide (no Strip is built: a Strip costs seven caches; the
    segments past ``end`` are not looked at); else :meth:`Strip.crop`."""
    out: list[Segment] = []
    x = 0
    for segment in strip:
        if x >= end:
            break
        text = segment.text
        if not (text.isascii() or one_cell_each(text)):
            return strip.crop(start, end)
        next_x = x + len(text)
        if next_x > start:
            if x < start or next_x > end:
                text = text[max(start - x, 0) : end - x]
                segment = Segment(text, segment.style, segment.control)
            out.append(segment)
        x = next_x
    return out


_STATE_CACHE: dict[tuple[Style, ColorSystem], _State] = {}
_ATTRIBUTES = (
    "bold", "dim", "italic", "underline", "blink", "blink2", "reverse", "conceal", "strike",
    "underline2", "frame", "encircle", "overline",
)  # fmt: skip
"""Rich's text attributes in the order of their SGR codes (:data:`textual.strip.SGR_STYLES`)."""


def _sgr_state(style: Style | None, color_system: ColorSystem) -> _State:
    """The SGR parameters Textual would write for ``style``, split into attributes, fg, bg."""
    if style is None:
        return _DEFAULT
    key = (style, color_system)
    state = _STATE_CACHE.get(key)
    if state is None:
        if len(_STATE_CACHE) > 4096:
            _STATE_CACHE.clear()
        attrs = ";".join(
            code for name, code in zip(_ATTRIBUTES, SGR_STYLES, strict=True) if getattr(style, name)
        )
        color, bgcolor = style.color, style.bgcolor
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


class SpanCompositor(RepaintCompositor):
    """Textual's compositor, with partial updates cropped to their spans on both sides (and the
    screen repainted where a removed widget was: :class:`RepaintCompositor`).

    It adds no state to the stock compositor, so :meth:`give_up` can turn it back into one."""

    def render_partial_update(self) -> ChopsUpdate | None:
        update = super().render_partial_update()
        if update is None or type(update) is not ChopsUpdate:
            return update
        try:
            return SpanChopsUpdate(update.chops, update.spans, update.chop_ends, self)
        except Exception as error:
            self.give_up(error)
            return update

    def give_up(self, error: BaseException) -> None:
        """Textual's internals are not what this class was written for: log it once and be the
        stock compositor from now on (same object, same layout, Textual's own updates)."""
        _warn_once(f"a partial update failed ({error!r})")
        self.__class__ = Compositor  # type: ignore[assignment]


_WARNED: list[str] = []


def _warn_once(what: str) -> None:
    if not _WARNED:
        log.warning("the span compositor is off, Textual draws every update itself: %s", what)
    _WARNED.append(what)


def private_api_problem(screen: object) -> str | None:
    """Why the private Textual API this module builds on differs from what it was written for
    (None: it matches)."""
    if type(getattr(screen, "_compositor", None)) is not Compositor:
        return "the screen's compositor is not textual._compositor.Compositor"
    if not callable(getattr(Compositor, "render_partial_update", None)):
        return "Compositor.render_partial_update is gone"
    if not callable(getattr(ChopsUpdate, "render_segments", None)):
        return "ChopsUpdate.render_segments is gone"
    try:
        parameters = list(inspect.signature(ChopsUpdate.__init__).parameters)
    except (TypeError, ValueError):
        parameters = []
    if parameters != ["self", "chops", "spans", "chop_ends"]:
        return f"ChopsUpdate() takes {parameters[1:]}, not chops, spans, chop_ends"
    try:
        probe = ChopsUpdate([], [], [])
        SpanCompositor()
    except Exception as error:
        return f"cannot build a compositor or an update ({error!r})"
    missing = [name for name in ("chops", "spans", "chop_ends") if not hasattr(probe, name)]
    if missing:
        return f"ChopsUpdate has no {', '.join(missing)}"
    return None


def install(screen: object) -> bool:
    """Give ``screen`` a SpanCompositor; False (logged once, and no change: the stock compositor
    stays) if Textual's internals differ."""
    problem = private_api_problem(screen)
    if problem is not None:
        _warn_once(problem)
        return False
    screen._compositor = SpanCompositor()  # type: ignore[attr-defined]
    return True


__all__ = ["SpanChopsUpdate", "SpanCompositor", "install", "private_api_problem"]
