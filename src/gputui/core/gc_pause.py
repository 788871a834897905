"""Python's cyclic garbage collector, paused while gputui starts.

A start makes a few hundred thousand objects that live for the whole run (Textual's and gputui's
modules, classes and functions, the widgets, the first readings), and the collector walks the
growing heap again and again while they are made. ``gputui`` and ``python -m gputui`` pause it
before their first import. It resumes when a command starts its work, and for the dashboard after
the first frame, with the objects made so far frozen (:func:`gc.freeze`): later collections do not
walk them again. What the start left unreachable in cycles (about 0.5 MB on the dashboard) stays.
The dashboard's first frame comes about an eighth sooner (``benchmarks/README.md``). Only a pause
made here is resumed: a program that turned the collector off keeps it off.
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Stop collecting until :func:`resume` (nothing when the collector is already off)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Freeze what exists and collect again, if :func:`pause` stopped the collector; safe to call
    any number of times."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
