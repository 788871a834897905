"""gputui terminal UI (Textual). ``GpuTuiApp`` is imported lazily, so ``import gputui.tui`` stays
cheap for code that only needs, say, :mod:`gputui.core.format`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gputui.tui.app import GpuTuiApp


def __getattr__(name: str) -> Any:
    if name == "GpuTuiApp":
        from gputui.tui.app import GpuTuiApp

        return GpuTuiApp
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["GpuTuiApp"]
