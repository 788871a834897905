"""A Line-API widget that repaints only the cells that changed.

Textual re-sends the whole region of a widget that refreshes. A :class:`LineWidget` instead keeps
the lines it drew last time, compares each new line cell by cell, and refreshes only the changed
spans (``refresh(Region(x, y, width, 1))``). Paired with
:class:`gputui.tui.span_compositor.SpanCompositor`, which crops those spans on the left as
well as the right, a GPU panel whose utilization went from 97% to 96% sends a few cells, not the
panel.

Subclasses describe their content as plain data, independent of colours: a line is a list of
``(text, component_class)`` pieces (see :class:`LineBuilder`). Colours come from the widget's
component classes, so the app's ``.tcss`` (and the theme variables it uses) decides what ``ok``,
``warn`` and ``bad`` look like.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.css.query import NoMatches
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from gputui.core.format import cell_width, clip, one_cell_each

if TYPE_CHECKING:
    from textual.color import Color
    from textual.css.styles import RenderStyles
    from textual.filter import LineFilter

Piece = tuple[str, str]
"""``(text, component class)``; the class may be ``""`` for the widget's own style."""
Line = list[Piece]

# Component classes shared by every LineWidget; the .tcss maps them onto theme colours.
LABEL = "meter--label"
VALUE = "meter--value"
DIM = "meter--dim"
OK = "meter--ok"
WARN = "meter--warn"
BAD = "meter--bad"
ACCENT = "meter--accent"
FAST = "meter--fast"
"""A fast path (NVLink, XGMI) on the topology screen."""
SLOW = "meter--slow"
"""A slow path (SYS: across CPU sockets) on the topology screen."""
TITLE = "meter--title"
FRAME = "meter--frame"
FRAME_SELECTED = "meter--frame-selected"
SELECTED = "meter--selected"
LOST = "meter--lost"
BAR_UTIL = "meter--bar-util"
BAR_MEM = "meter--bar-mem"
BAR_POWER = "meter--bar-power"
BAR_CPU = "meter--bar-cpu"
PLOT_UTIL = "meter--plot-util"
PLOT_MEM = "meter--plot-mem"
PLOT_CPU = "meter--plot-cpu"
PLOT_POWER = "meter--plot-power"
PLOT_TEMP = "meter--plot-temp"
PAUSED = "meter--paused"
ALARM = "meter--alarm"
"""Something is wrong right now (the driver is not answering): bold, reversed, in red."""
MATCH = "meter--match"
"""The text a filter matched (underlined), and the same on the highlighted row."""
MATCH_SELECTED = "meter--match-selected"
TAGGED = "meter--tagged"
"""A row tagged for a signal to several processes at once."""

COMPONENT_CLASSES: frozenset[str] = frozenset(
    {
        LABEL,
        VALUE,
        DIM,
        OK,
        WARN,
        BAD,
        ALARM,
        ACCENT,
        FAST,
        SLOW,
        TITLE,
        FRAME,
        FRAME_SELECTED,
        SELECTED,
        LOST,
        BAR_UTIL,
        BAR_MEM,
        BAR_POWER,
        BAR_CPU,
        PLOT_UTIL,
        PLOT_MEM,
        PLOT_CPU,
        PLOT_POWER,
        PLOT_TEMP,
        PAUSED,
        MATCH,
        MATCH_SELECTED,
        TAGGED,
    }
)

# One character per piece class, so a line's styles compare as a string (classes a subclass
# styles itself get theirs on first use).
_CODES: dict[str, str] = {name: chr(0x41 + i) for i, name in enumerate(sorted(COMPONENT_CLASSES))}
_CODES[""] = " "


def _code(cls: str) -> str:
    code = _CODES.get(cls)
    if code is None:
        code = _CODES[cls] = chr(0x100 + len(_CODES))
    return code


_CELLS: dict[str, int] = {}
_CELLS_MAX = 8192


def cells(text: str) -> int:
    """Terminal cells of ``text``: :func:`gputui.core.format.cell_width`, with a fast path for the
    characters panels and charts are drawn with, and remembered (a panel draws the same pieces
    tick after tick)."""
    width = _CELLS.get(text)
    if width is None:
        width = len(text) if one_cell_each(text) else cell_width(text)
        if len(_CELLS) >= _CELLS_MAX:
            _CELLS.clear()
        _CELLS[text] = width
    return width


MERGE_GAP = 4
"""Changed runs closer than this many cells are sent as one span (a cursor move and a new style
cost about as much as a few unchanged cells)."""


def line_width(line: Line) -> int:
    """Terminal cells of ``line`` (a CJK character takes two)."""
    return sum(cells(text) for text, _ in line)


def fit(line: Line, width: int) -> Line:
    """Crop or pad a line to exactly ``width`` cells."""
    return fit_with_text(line, width)[0]


def fit_with_text(line: Line, width: int) -> tuple[Line, str]:
    """:func:`fit`, and the fitted line's text. Lines of one-cell characters (nearly all) are
    measured and cut by length, without a width lookup per piece."""
    text = "".join(t for t, _ in line)
    if not one_cell_each(text):
        fitted = _fit_cells(line, width)
        return fitted, "".join(t for t, _ in fitted)
    if len(text) > width:
        out: Line = []
        used = 0
        for piece in line:
            if used >= width:
                break
            if piece[0]:
                if len(piece[0]) > width - used:
                    piece = (piece[0][: width - used], piece[1])
                out.append(piece)
                used += len(piece[0])
        return out, text[:width]
    out = [piece for piece in line if piece[0]]
    if len(text) < width:
        pad = " " * (width - len(text))
        out.append((pad, ""))
        text += pad
    return out, text


def _fit_cells(line: Line, width: int) -> Line:
    """:func:`fit` for lines with wide (or zero-width) characters: measured piece by piece."""
    out: Line = []
    used = 0
    for text, cls in line:
        if used >= width:
            break
        w = cells(text)
        if used + w > width:
            text = clip(text, width - used)
            w = cells(text)
        if text:
            out.append((text, cls))
            used += w
    if used < width:
        out.append((" " * (width - used), ""))
    return out


class LineBuilder:
    """Builds one line from pieces, keeping track of its width."""

    __slots__ = ("pieces", "width")

    def __init__(self) -> None:
        self.pieces: Line = []
        self.width = 0

    def add(self, text: str, cls: str = "") -> LineBuilder:
        if text:
            self.pieces.append((text, cls))
            width = _CELLS.get(text)
            self.width += cells(text) if width is None else width
        return self

    def extend(self, pieces: Iterable[Piece]) -> LineBuilder:
        for text, cls in pieces:
            self.add(text, cls)
        return self

    def pad(self, width: int, cls: str = "") -> LineBuilder:
        if self.width < width:
            self.add(" " * (width - self.width), cls)
        return self

    def line(self, width: int | None = None) -> Line:
        return self.pieces if width is None else fit(self.pieces, width)


CHUNK = 16
"""Cells compared at once by :func:`changed_spans` (a string compare in C) before it looks
cell by cell inside a chunk that differs."""


def changed_spans(
    old_text: str, old_codes: str, new_text: str, new_codes: str, gap: int = MERGE_GAP
) -> list[tuple[int, int]]:
    """``[(start, end), ...]`` cell ranges where two lines differ, runs closer than ``gap``
    merged."""
    spans: list[tuple[int, int]] = []
    common = min(len(old_text), len(new_text))
    length = max(len(old_text), len(new_text))
    start = -1
    last = -1
    for base in range(0, length, CHUNK):
        end = base + CHUNK
        if (
            end <= common
            and old_text[base:end] == new_text[base:end]
            and old_codes[base:end] == new_codes[base:end]
        ):
            continue
        for x in range(base, min(end, length)):
            if x < common and old_text[x] == new_text[x] and old_codes[x] == new_codes[x]:
                continue
            if start >= 0 and x - last > gap:
                spans.append((start, last + 1))
                start = x
            elif start < 0:
                start = x
            last = x
    if start >= 0:
        spans.append((start, last + 1))
    return spans


class MeterPalette(Widget):
    """Holds the ``meter--*`` component classes once for every LineWidget on its screen.

    Textual re-applies CSS to each component class of each widget whenever the DOM is restyled
    (mount, class changes, theme changes); 20 classes on 10 widgets cost ~70 ms of start-up.
    One hidden palette per screen costs a tenth of that. Style it in the .tcss as
    ``MeterPalette > .meter--ok { color: $text-success; }``.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = set(COMPONENT_CLASSES)
    DEFAULT_CSS = """
    MeterPalette {
        display: none;
    }
    """


class LineWidget(Widget):
    """Base class: subclasses implement :meth:`build_lines` and call :meth:`rebuild` when their
    data changes. Colours come from the screen's :class:`MeterPalette` (none without one)."""

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        # Set before Widget.__init__, which may already call notify_style_update().
        self._style_cache: dict[str, Style] = {}
        self._background: Color | None = None
        self._filters: tuple[LineFilter, ...] = ()
        self._palette: Widget | None = None
        self._strips: list[Strip | None] = []
        super().__init__(name=name, id=id, classes=classes)
        self._texts: list[str] = []
        self._codes: list[str] = []
        self._pieces: list[Line] = []
        self._raw: list[tuple[Piece, ...]] = []
        self._built_size: tuple[int, int] | None = None
        self.spans_refreshed = 0
        """How many partial spans this widget asked to repaint (for tests and benchmarks)."""

    # -- for subclasses ----------------------------------------------------------------------------

    def build_lines(self, width: int, height: int) -> Sequence[Line]:
        """The widget's content at this size: at most ``height`` lines of pieces."""
        raise NotImplementedError

    def rebuild(self) -> None:
        """Rebuild the content and repaint only what changed. Cheap to call when nothing did."""
        if not self.is_mounted:
            return
        width, height = self.size
        if width <= 0 or height <= 0:
            self._built_size = None
            return
        if self._built_size != (width, height):
            # New geometry: Textual repaints the whole widget anyway.
            self._set_content(width, height)
            self.refresh()
            return
        old_texts, old_codes = self._texts, self._codes
        self._set_content(width, height)
        regions: list[Region] = []
        for y, (new_text, new_code) in enumerate(zip(self._texts, self._codes, strict=True)):
            old_text = old_texts[y] if y < len(old_texts) else ""
            old_code = old_codes[y] if y < len(old_codes) else ""
            if old_text == new_text and old_code == new_code:
                continue
            if not (one_cell_each(old_text) and one_cell_each(new_text)):
                # A wide character makes text positions differ from cells: repaint the line.
                regions.append(Region(0, y, width, 1))
                continue
            for start, end in changed_spans(old_text, old_code, new_text, new_code):
                regions.append(Region(start, y, end - start, 1))
        if regions:
            self.spans_refreshed += len(regions)
            self.refresh(*regions)

    @property
    def plain_lines(self) -> list[str]:
        """The text of each line as last built (handy in tests)."""
        return list(self._texts)

    @property
    def line_pieces(self) -> list[Line]:
        """The ``(text, class)`` pieces of each line as last built (handy in tests)."""
        return [list(line) for line in self._pieces]

    # -- internals ---------------------------------------------------------------------------------

    def _set_content(self, width: int, height: int) -> None:
        lines = list(self.build_lines(width, height))[:height]
        while len(lines) < height:
            lines.append([])
        # A line built exactly as last time (most lines of a panel, tick after tick) keeps its
        # fitted pieces, text, style codes and rendered strip.
        same_size = self._built_size == (width, height)
        old_raw, old_pieces, old_texts, old_codes = (
            self._raw,
            self._pieces,
            self._texts,
            self._codes,
        )
        old_strips = self._strips
        raw: list[tuple[Piece, ...]] = []
        pieces: list[Line] = []
        texts: list[str] = []
        codes: list[str] = []
        strips: list[Strip | None] = []
        for y, line in enumerate(lines):
            key = tuple(line)
            raw.append(key)
            if same_size and y < len(old_raw) and old_raw[y] == key:
                pieces.append(old_pieces[y])
                texts.append(old_texts[y])
                codes.append(old_codes[y])
                strips.append(old_strips[y] if y < len(old_strips) else None)
                continue
            fitted, text = fit_with_text(line, width)
            pieces.append(fitted)
            texts.append(text)
            codes.append("".join(_code(cls) * len(text) for text, cls in fitted))
            strips.append(None)
        self._raw = raw
        self._pieces = pieces
        self._texts = texts
        self._codes = codes
        self._strips = strips
        self._built_size = (width, height)

    def _find_palette(self) -> Widget | None:
        if self._palette is None or not self._palette.is_attached:
            try:
                self._palette = self.screen.query_one(MeterPalette)
            except (NoMatches, Exception):
                self._palette = None
        return self._palette

    def class_style(self, cls: str) -> Style:
        """The style of pieces of class ``cls``, before the app's line filters: the widget's own
        style with the palette's component style blended over its background ("" and classes
        the palette lacks: the widget's style). Subclasses that style their pieces themselves
        override this; the result is cached per class until the styles or the theme change."""
        style = self.rich_style
        palette = self._find_palette() if cls else None
        if palette is not None and cls in palette.COMPONENT_CLASSES:
            background = self.background_colors[1]
            style = style + component_style(palette.get_component_styles(cls), background)
        return style

    def _style(self, cls: str) -> Style:
        style = self._style_cache.get(cls)
        if style is None:
            style = self.class_style(cls)
            # The app's line filters (ANSI colours to the theme's, dim blending) act on each
            # segment's style alone: applied here once per class, not to every repainted line.
            for line_filter in self._filters:
                style = (
                    line_filter.apply([Segment(" ", style)], self._filter_background())[0].style
                    or Style()
                )
            self._style_cache[cls] = style
        return style

    def _filter_background(self) -> Color:
        background = self._background
        if background is None:
            background = self._background = self.background_colors[1]
        return background

    def _check_filters(self) -> None:
        """Restyle when the app's line filters changed (the styles have them applied)."""
        filters = tuple(self.get_line_filters())
        if filters != self._filters:
            self._filters = filters
            self._style_cache.clear()
            self._strips = [None] * len(self._strips)

    def render_line(self, y: int) -> Strip:
        self._check_filters()
        width, height = self.size
        if self._built_size != (width, height):
            self._set_content(width, height)
        if y >= len(self._strips):
            return Strip.blank(width, self._style(""))
        strip = self._strips[y]
        if strip is None:
            style = self._style
            strip = Strip(
                [Segment(text, style(cls)) for text, cls in _merge(self._pieces[y])], width
            )
            self._strips[y] = strip
        return strip

    def render_lines(self, crop: Region) -> list[Strip]:
        """The lines of ``crop``, straight from :meth:`render_line` when the widget draws its
        whole box itself (no border, padding, outline, tint or transparency: every LineWidget
        in gputui's CSS). Textual's general path re-wraps each line of each repaint in a new
        Strip, walks the style rules and crops again (up to a third more CPU per dashboard
        refresh: docs/architecture.md). The app's line filters are already in the styles (see
        :meth:`_style`). tests/test_tui_render_paths.py holds this path to Textual's own."""
        if not self._draws_whole_box():
            return super().render_lines(crop)
        self._check_filters()
        width, height = self.size
        if self._built_size != (width, height):
            self._set_content(width, height)
        cached = self._strips
        strips = [
            (cached[y] or self.render_line(y)) if y < len(cached) else self.render_line(y)
            for y in crop.line_range
        ]
        x1, x2 = crop.column_span
        if (x1, x2) != (0, width):
            strips = [strip.crop(x1, x2) for strip in strips]
        return strips

    def _draws_whole_box(self) -> bool:
        """No border, outline, padding, tint, text opacity, hatch or opacity: the widget's lines
        are its box. Asked on every render (inline styles change without a style update)."""
        styles = self.styles
        return (
            not any(edge for edge, _ in styles.border)
            and not any(edge for edge, _ in styles.outline)
            and not any(styles.padding)
            and styles.tint.a == 0
            and styles.text_opacity == 1.0
            and not (styles.has_rule("hatch") and styles.hatch != "none")
            and self.border_title is None
            and self.border_subtitle is None
            and self.opacity == 1.0
        )

    def notify_style_update(self) -> None:
        # Colours changed (theme, CSS): keep the content, re-style it on the next render.
        super().notify_style_update()
        self._style_cache.clear()
        self._background = None
        self._strips = [None] * len(self._strips)

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)

    def _theme_changed(self, _theme: object) -> None:
        self._style_cache.clear()
        self._background = None
        self._strips = [None] * len(self._strips)
        self.refresh()

    def on_resize(self) -> None:
        self.rebuild()


def component_style(styles: RenderStyles, background: Color) -> Style:
    """A component's colours over ``background`` (alpha blended), plus its text style."""
    bgcolor = None
    if styles.has_rule("background") and styles.background.a > 0:
        background = background + styles.background
        bgcolor = background.rich_color
    color = None
    if styles.has_rule("color") and styles.color.a > 0:
        fg = styles.color
        # "auto" colours ($text and friends) mean "readable on this background".
        auto = fg.auto or (styles.has_rule("auto_color") and styles.auto_color)
        if auto:
            fg = background.get_contrast_text(fg.a)
        color = (background + fg).rich_color
    return Style(color=color, bgcolor=bgcolor) + styles.text_style


def _merge(line: Line) -> Line:
    """Join neighbouring pieces of the same class (fewer segments, fewer escape codes)."""
    out: Line = []
    for text, cls in line:
        if out and out[-1][1] == cls:
            out[-1] = (out[-1][0] + text, cls)
        else:
            out.append((text, cls))
    return out


__all__ = [
    "ACCENT",
    "BAD",
    "BAR_CPU",
    "BAR_MEM",
    "BAR_POWER",
    "BAR_UTIL",
    "DIM",
    "FAST",
    "FRAME",
    "FRAME_SELECTED",
    "LABEL",
    "LOST",
    "OK",
    "PAUSED",
    "PLOT_CPU",
    "PLOT_MEM",
    "PLOT_POWER",
    "PLOT_TEMP",
    "PLOT_UTIL",
    "SELECTED",
    "SLOW",
    "TITLE",
    "VALUE",
    "WARN",
    "Line",
    "LineBuilder",
    "LineWidget",
    "MeterPalette",
    "Piece",
    "cells",
    "changed_spans",
    "component_style",
    "fit",
    "line_width",
]
