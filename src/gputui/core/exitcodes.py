"""Exit statuses of every gputui command, in one place.

``check`` (and ``fleet``) grade: 0 healthy, 1 warnings, 2 failed. Everything else: 0 done, 2 could
not run (no usable GPU, a bad argument, no terminal). A crash is never 1, so a prolog that lets a
job through on 1 never does so because gputui broke.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_HEALTHY = 0
EXIT_WARNINGS = 1
EXIT_FAILED = 2
EXIT_NO_GPU = 2
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

__all__ = [
    "EXIT_FAILED",
    "EXIT_HEALTHY",
    "EXIT_INTERRUPTED",
    "EXIT_NO_GPU",
    "EXIT_OK",
    "EXIT_USAGE",
    "EXIT_WARNINGS",
]
