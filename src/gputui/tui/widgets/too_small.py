"""The one line the dashboard shows in a terminal too small for it: the size it needs first, then
the size it has, then (room permitting) what is short and why, ``needs 60×15 · now 50×12 · 10
more columns, 3 more rows · too small for gputui``."""

from __future__ import annotations

from textual.widgets import Static

TOO_SMALL_WORDS = "too small for gputui"


def too_small_text(width: int, height: int, min_width: int, min_height: int) -> str:
    """The message for a ``width`` × ``height`` terminal, in at most ``width`` cells (the needed
    size is the last part to give way)."""
    short = []
    if width < min_width:
        n = min_width - width
        short.append(f"{n} more column{'s' if n != 1 else ''}")
    if height < min_height:
        n = min_height - height
        short.append(f"{n} more row{'s' if n != 1 else ''}")
    parts = [f"needs {min_width}×{min_height}", f"now {width}×{height}"]
    if short:
        parts.append(", ".join(short))
    parts.append(TOO_SMALL_WORDS)
    for drop in ((), (2,), (2, 3), (1, 2, 3)):
        text = " · ".join(p for i, p in enumerate(parts) if i not in drop)
        if len(text) <= width:
            return text
    return parts[0][:width]


class TooSmall(Static):
    """:func:`too_small_text` for the terminal's size (set on each resize with :meth:`show`)."""

    def __init__(self, min_width: int, min_height: int, *, id: str | None = None) -> None:
        super().__init__(TOO_SMALL_WORDS, id=id, markup=False)
        self.min_width = min_width
        self.min_height = min_height
        self.text = TOO_SMALL_WORDS

    def show(self, width: int, height: int) -> None:
        text = too_small_text(width, height, self.min_width, self.min_height)
        if text != self.text:
            self.text = text
            self.update(text)


__all__ = ["TOO_SMALL_WORDS", "TooSmall", "too_small_text"]
