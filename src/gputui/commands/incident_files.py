"""``--incidents DIR`` of ``record`` and ``export``: the options, the messages and the watcher
(:mod:`gputui.engine.incidents`) attached to a session's sampler.

A directory that cannot be made or written gives one line and the command carries on without
incident files; a file that fails later gives one line too (once), and the command carries on."""

from __future__ import annotations

import argparse
import os

from gputui.commands.common import UsageError
from gputui.commands.output import emit, error
from gputui.core.frozen import frozen
from gputui.engine.incidents import Incident, IncidentPolicy, IncidentWatcher, usable_directory
from gputui.health.rollup import where
from gputui.settings.model import Settings


@frozen
class IncidentOptions:
    directory: str
    policy: IncidentPolicy


def incident_options(args: argparse.Namespace, settings: Settings) -> IncidentOptions | None:
    """``--incidents DIR`` with the windows and bounds of ``settings`` (``--before`` and
    ``--after`` are already in them); None without ``--incidents``. :class:`UsageError` for a
    window given without a directory."""
    directory = getattr(args, "incidents", None)
    if directory is None:
        for flag in ("before", "after"):
            if getattr(args, flag, None) is not None:
                raise UsageError(f"--{flag} needs --incidents DIR")
        return None
    if not directory.strip():
        raise UsageError("--incidents needs a directory")
    return IncidentOptions(os.path.expanduser(directory), IncidentPolicy.of(settings.incidents))


def unusable(options: IncidentOptions) -> str | None:
    """Why incident files cannot go in the directory (made here when missing), or None."""
    return usable_directory(options.directory)


def refused(prog: str, options: IncidentOptions, why: str, carry_on: str) -> None:
    """The one line for a directory that cannot be used; ``carry_on`` says what goes on."""
    error(f"{prog}: cannot write incident files in {options.directory}: {why}{carry_on}")


def watcher(prog: str, options: IncidentOptions, carry_on: str) -> IncidentWatcher:
    """A watcher that says each incident file it writes, and its first problem of each kind."""

    def written(incident: Incident) -> None:
        more = len(incident.triggers) - 1
        joined = f" and {more} more" if more > 0 else ""
        error(
            f"{prog}: incident ({where(incident.trigger)}): {incident.trigger.message}{joined}; "
            f"{incident.readings} readings in {incident.path}"
        )

    def problem(text: str) -> None:
        error(f"{prog}: {text}{carry_on}")

    return IncidentWatcher(
        options.directory, options.policy, on_written=written, on_problem=problem
    )


def finish(prog: str, watching: IncidentWatcher) -> bool:
    """Close ``watching`` (an incident still open is written with what it has) and say what was
    written; False when an incident file could not be written (or not finished in time)."""
    finished = watching.close()
    written, failed = watching.written, watching.failed
    files = f"{len(written)} incident file{'s' if len(written) != 1 else ''}"
    emit(f"Wrote {files} to {watching.directory}")
    if watching.removed:
        n = len(watching.removed)
        files = f"{n} older incident file{'s' if n != 1 else ''}"
        error(f"{prog}: removed {files} (incidents.max_files, incidents.max_bytes)")
    if not finished:
        error(
            f"{prog}: the last incident file was not finished in time (the disk is not answering)"
        )
    return finished and not failed


__all__ = [
    "IncidentOptions",
    "finish",
    "incident_options",
    "refused",
    "unusable",
    "watcher",
]
