"""Themes: gputui's own (a high-contrast one), and the data colours every theme gets.

Bars, charts and the health colours are CSS variables (``$gputui-bar-util`` ...) that the app
derives from the current theme (:func:`data_colours`): the theme's colour for that meaning, blended
as the dashboard shows it, then moved toward white (on a dark background) or black (on a light
one) until it stands at least :data:`MIN_CONTRAST` : 1 (WCAG relative luminance) against every
background data is drawn on. A theme may set any of them itself (``Theme.variables``). ANSI
themes keep the terminal's own colours: what they look like is the terminal's to say.
"""

from __future__ import annotations

from collections.abc import Iterable

from textual.color import Color
from textual.theme import Theme

MIN_CONTRAST = 3.0
"""WCAG 2.x's minimum for graphical objects and large text."""

DATA_COLOURS: dict[str, tuple[str, float]] = {
    "gputui-bar-util": ("success", 1.0),
    "gputui-bar-mem": ("primary", 1.0),
    "gputui-bar-power": ("warning", 0.8),
    "gputui-bar-cpu": ("secondary", 1.0),
    "gputui-plot-util": ("success", 0.8),
    "gputui-plot-mem": ("primary", 0.8),
    "gputui-plot-cpu": ("secondary", 0.8),
    "gputui-plot-power": ("warning", 0.7),
    "gputui-plot-temp": ("error", 0.6),
    "gputui-ok": ("text-success", 1.0),
    "gputui-warn": ("text-warning", 1.0),
    "gputui-bad": ("text-error", 1.0),
}
"""Variable -> (the theme colour it starts from, its opacity over the background)."""

HIGH_CONTRAST = Theme(
    name="gputui-high-contrast",
    primary="#5FD7FF",
    secondary="#D7AFFF",
    accent="#FFFF00",
    warning="#FFAF00",
    error="#FF5F5F",
    success="#5FFF87",
    foreground="#FFFFFF",
    background="#000000",
    surface="#000000",
    panel="#262626",
    dark=True,
    variables={
        "gputui-bar-util": "#5FFF87",
        "gputui-bar-mem": "#5FD7FF",
        "gputui-bar-power": "#FFAF00",
        "gputui-bar-cpu": "#D7AFFF",
        "gputui-plot-util": "#5FFF87",
        "gputui-plot-mem": "#5FD7FF",
        "gputui-plot-cpu": "#D7AFFF",
        "gputui-plot-power": "#FFAF00",
        "gputui-plot-temp": "#FF8787",
        "gputui-ok": "#5FFF87",
        "gputui-warn": "#FFFF00",
        "gputui-bad": "#FF5F5F",
        "text-muted": "#C6C6C6",
        "text-disabled": "#A8A8A8",
    },
)
THEMES = (HIGH_CONTRAST,)
"""Registered by the dashboard beside Textual's own."""

_WHITE = Color(255, 255, 255)
_BLACK = Color(0, 0, 0)


def relative_luminance(colour: Color) -> float:
    """WCAG 2.x relative luminance of an opaque colour, 0 (black) to 1 (white)."""

    def linear(channel: int) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = colour.rgb
    return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)


def contrast_ratio(a: Color, b: Color) -> float:
    """WCAG contrast ratio of two opaque colours, 1 to 21."""
    la, lb = relative_luminance(a), relative_luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def data_backgrounds(variables: dict[str, str]) -> list[Color]:
    """What data is drawn on: the screen (GPU panels), the host strip ($boost over it) and the
    title bar and findings ($panel)."""
    background = Color.parse(variables["background"])
    return [
        background,
        background + Color.parse(variables["boost"]),
        background + Color.parse(variables["panel"]),
    ]


def readable(colour: Color, backgrounds: Iterable[Color], minimum: float = MIN_CONTRAST) -> Color:
    """``colour``, or the least step of it toward white or black (away from the backgrounds)
    that stands ``minimum`` : 1 against each of them."""
    grounds = list(backgrounds)
    dark = relative_luminance(grounds[0]) < 0.18  # where white and black contrast alike
    pole = _WHITE if dark else _BLACK
    for step in range(21):
        candidate = colour.blend(pole, step / 20)
        if min(contrast_ratio(candidate, g) for g in grounds) >= minimum:
            return candidate
    return pole


def data_colours(theme: Theme) -> dict[str, str]:
    """The ``$gputui-*`` data colour variables for ``theme`` (see the module's docstring)."""
    system = theme.to_color_system().generate()
    if theme.ansi:
        return {name: system[base] for name, (base, _) in DATA_COLOURS.items()}
    backgrounds = data_backgrounds({**system, **theme.variables})
    out: dict[str, str] = {}
    for name, (base, opacity) in DATA_COLOURS.items():
        colour = backgrounds[0] + Color.parse(system[base]).multiply_alpha(opacity)
        out[name] = readable(colour, backgrounds).hex
    return out


__all__ = [
    "DATA_COLOURS",
    "HIGH_CONTRAST",
    "MIN_CONTRAST",
    "THEMES",
    "contrast_ratio",
    "data_backgrounds",
    "data_colours",
    "readable",
    "relative_luminance",
]
