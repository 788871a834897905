"""What a terminal shows after the app's writes: a grid of characters that follows the cursor
moves and text Textual writes (colours and modes are dropped). Enough to see whether cells a
removed widget covered were ever repainted."""

from __future__ import annotations

import re

from rich.cells import cell_len

_CONTROL = re.compile(
    r"\x1b\[([?0-9;:]*)([A-Za-z@])"  # CSI: cursor moves, SGR, modes
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC
    r"|\x1b[()][0-9A-B]|\x1b."  # character sets, two-byte escapes
)


class TerminalScreen:
    """``feed`` it what the app writes; ``lines`` is what the user sees."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.cells = [[" "] * width for _ in range(height)]
        self.x = self.y = 0

    def feed(self, data: str) -> None:
        pos = 0
        for match in _CONTROL.finditer(data):
            self._text(data[pos : match.start()])
            pos = match.end()
            final, params = match.group(2), match.group(1) or ""
            if final == "H":  # cursor position, 1-based: ESC [ row ; col H
                row, _, col = params.partition(";")
                self.y = int(row or 1) - 1
                self.x = int(col or 1) - 1
            elif final == "G":  # to a column of this line
                self.x = int(params or 1) - 1
            elif final == "C":  # forward
                self.x += int(params or 1)
            elif final == "J" and params in ("", "2"):
                self.cells = [[" "] * self.width for _ in range(self.height)]
        self._text(data[pos:])

    def _text(self, text: str) -> None:
        for ch in text:
            if ch == "\r":
                self.x = 0
            elif ch == "\n":
                self.y += 1
            elif ch >= " ":
                width = cell_len(ch)
                if 0 <= self.y < self.height and 0 <= self.x < self.width:
                    self.cells[self.y][self.x] = ch
                    if width == 2 and self.x + 1 < self.width:
                        self.cells[self.y][self.x + 1] = ""
                self.x += width

    @property
    def lines(self) -> list[str]:
        return ["".join(row) for row in self.cells]


__all__ = ["TerminalScreen"]
