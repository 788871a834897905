"""A list of checkboxes that read without colour: ``[x] memory copy`` / ``[ ] FP8 matmul``.

Textual's :class:`~textual.widgets.SelectionList` draws every box as the same ``▐X▌`` and tells
checked from unchecked by colour alone, which NO_COLOR, a monochrome terminal or a colour-blind
reader loses. This list draws the state in the text; the colours and the clicks stay Textual's.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual.widgets import OptionList, SelectionList
from textual.widgets.option_list import OptionDoesNotExist
from textual.widgets.selection_list import SelectionType

CHECKED = "x"
UNCHECKED = " "


def box(checked: bool) -> str:
    """``[x]`` or ``[ ]``."""
    return f"[{CHECKED if checked else UNCHECKED}]"


class CheckList(SelectionList[SelectionType]):
    """A :class:`~textual.widgets.SelectionList` whose boxes are ``[x]`` and ``[ ]``."""

    def render_line(self, y: int) -> Strip:
        # The prompt as an OptionList draws it, then the box in place of Textual's ▐X▌ (the
        # same width, so clicks and the gutter still line up).
        line = OptionList.render_line(self, y)
        index = self.scroll_offset.y + y
        try:
            selection = self.get_option_at_index(index)
        except OptionDoesNotExist:
            return line
        checked = selection.value in self.selected
        component = "selection-list--button-selected" if checked else "selection-list--button"
        if self.highlighted == index:
            component += "-highlighted"
        underlying = next(iter(line)).style or self.rich_style
        meta = Style(meta={"option": index})
        mark = Style(color=self.get_component_rich_style(component).color, bold=True)
        if not checked:
            mark = Style()
        return Strip(
            [
                Segment("[", underlying + meta),
                Segment(CHECKED if checked else UNCHECKED, underlying + mark + meta),
                Segment("] ", underlying + meta),
                *line,
            ]
        )


__all__ = ["CHECKED", "UNCHECKED", "CheckList", "box"]
