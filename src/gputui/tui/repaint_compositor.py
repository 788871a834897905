"""A compositor that repaints the screen where a removed widget was, however it was removed.

Textual 8.2's compositor keeps a map of every widget's place. :meth:`Compositor.reflow` (a new
layout) compares the new map with the old one and marks every place that changed as dirty, so the
next update repaints it. But the map is also rebuilt lazily, whenever something asks where a
widget is after the map was invalidated (``Compositor.full_map``, reached through
``Widget.region``), and that rebuild marks nothing. A widget removed in between (a notification's
toast when it expires) then vanishes from the map without a trace: the next reflow finds no
change, and the terminal keeps showing the removed widget's cells until something else happens
to repaint them. On the dashboard, where the panels repaint only the cells that change, that was
pieces of old toasts over the panels for half a minute.

:class:`RepaintCompositor` marks what the lazy rebuild moved or dropped, as ``reflow`` does. It
builds on Textual's private ``textual._compositor`` (pinned exactly in pyproject.toml):
:func:`install` leaves a screen with the stock compositor when the attributes it uses differ, and
a rebuild that fails its way is done the stock way.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from textual._compositor import Compositor

if TYPE_CHECKING:
    from textual._compositor import CompositorMap

log = logging.getLogger(__name__)

_ATTRIBUTES = ("_full_map", "_full_map_invalidated", "_dirty_regions", "root", "size")


class RepaintCompositor(Compositor):
    """Textual's compositor; a lazy rebuild of the widget map marks what it moved as dirty."""

    @property
    def full_map(self) -> CompositorMap:
        try:
            rebuilding = self.root is not None and self._full_map_invalidated
            old = self._full_map
        except AttributeError:  # pragma: no cover - guarded by private_api_problem
            return super().full_map
        new = super().full_map
        if rebuilding and new is not old:
            try:
                self._mark_changes(old, new)
            except Exception as error:  # pragma: no cover - Textual's geometry changed shape
                _warn_once(f"a lazy layout could not be marked for repainting ({error!r})")
        return new

    def _mark_changes(self, old: CompositorMap, new: CompositorMap) -> None:
        """Dirty every place a widget left or took, clipped as ``reflow`` clips it."""
        screen = self.size.region
        dirty = self._dirty_regions
        if screen in dirty:
            return
        for _widget, geometry in old.items() ^ new.items():
            region = geometry.clip.intersection(geometry.region)
            if region:
                dirty.add(region)


_WARNED: list[str] = []


def _warn_once(what: str) -> None:
    if not _WARNED:
        log.warning("removed widgets may leave cells behind until the next repaint: %s", what)
    _WARNED.append(what)


def private_api_problem(screen: object) -> str | None:
    """Why the private Textual API this module builds on differs from what it was written for
    (None: it matches)."""
    if type(getattr(screen, "_compositor", None)) is not Compositor:
        return "the screen's compositor is not textual._compositor.Compositor"
    if not isinstance(getattr(Compositor, "full_map", None), property):
        return "Compositor.full_map is not a property"
    probe = Compositor()
    missing = [name for name in _ATTRIBUTES if not hasattr(probe, name)]
    if missing:
        return f"Compositor has no {', '.join(missing)}"
    return None


def install(screen: object) -> bool:
    """Give ``screen`` a RepaintCompositor before its first layout; False (and no change) when it
    has been laid out already, has another compositor, or Textual's internals differ."""
    compositor = getattr(screen, "_compositor", None)
    if getattr(compositor, "root", None) is not None:
        return False  # laid out: its map is in use
    problem = private_api_problem(screen)
    if problem is not None:
        if type(compositor) is Compositor:
            log.debug("screens keep the stock compositor: %s", problem)
        return False
    screen._compositor = RepaintCompositor()  # type: ignore[attr-defined]
    return True


__all__ = ["RepaintCompositor", "install", "private_api_problem"]
