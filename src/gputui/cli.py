"""Command line: parse the arguments and hand them to the sub-command in :mod:`gputui.commands`.

``gputui`` (the dashboard), ``snapshot``, ``check``, ``topo``, ``export``, ``fleet``, ``record``,
``probe``, ``specs``, ``pick``, ``config``. Each sub-command adds its own parser
(:mod:`gputui.commands.parsers`) and its module turns the parsed arguments into its options and
runs (:class:`gputui.commands.common.Command`); this module holds the options of the whole
command line and the table of sub-commands. A command's module is imported only when it runs:
the command line, ``--help`` and the dashboard do not load ``check``'s, ``export``'s or
``fleet``'s imports (``tests/test_startup.py``). Right after
parsing, the run's :class:`~gputui.settings.model.Settings` are built once (config file,
environment, options) and handed to the command with the common options. Exit codes live in
:mod:`gputui.core.exitcodes`. Everything a user can get wrong ends in a one-paragraph message, never
a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from gputui import __version__
from gputui.commands import args as arg
from gputui.commands.common import Command, Common, LazyCommand, Runner, UsageError
from gputui.commands.output import error, silence_stdout
from gputui.commands.parsers import (
    check,
    config,
    export,
    fleet,
    pick,
    probe,
    record,
    snapshot,
    specs,
    topo,
)
from gputui.commands.settings_from_args import settings_for
from gputui.core import gc_pause
from gputui.core.exitcodes import EXIT_FAILED, EXIT_OK
from gputui.engine.opening import ends_cleanly


def _lazy(parser: ModuleType) -> LazyCommand:
    """The command whose parser is ``gputui.commands.parsers.NAME`` and whose implementation is
    ``gputui.commands.NAME``."""
    return LazyCommand(parser.add_parser, parser.__name__.replace(".parsers.", ".", 1))


COMMANDS: dict[str, Command] = {
    "snapshot": _lazy(snapshot),
    "topo": _lazy(topo),
    "check": _lazy(check),
    "export": _lazy(export),
    "fleet": _lazy(fleet),
    "specs": _lazy(specs),
    "probe": _lazy(probe),
    "pick": _lazy(pick),
    "record": _lazy(record),
    "config": _lazy(config),
}
"""The sub-commands, in the order ``gputui --help`` lists them."""


class _Dashboard:
    """``gputui`` without a sub-command: :mod:`gputui.commands.dashboard`, imported when it runs
    (it imports the engine, which ``gputui --help`` does not need)."""

    def options(self, args: argparse.Namespace, common: Common, /) -> Any:
        from gputui.commands import dashboard

        return dashboard.options(args, common)

    def run(self, options: Any, /) -> int:
        from gputui.commands import dashboard

        return dashboard.run(options)


DEFAULT: Runner = _Dashboard()
"""What ``gputui`` runs without a sub-command."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gputui",
        description="Live terminal dashboard for NVIDIA and AMD GPUs.",
        epilog="Try `gputui --demo` to see a simulated 8-GPU node.",
    )
    parser.add_argument("--version", action="version", version=f"gputui {__version__}")
    arg.add_common(parser, suppress=False)
    parser.add_argument(
        "--interval",
        type=arg.interval,
        default=None,
        metavar="SECONDS",
        help="refresh interval of the fast tier (default: 1)",
    )
    parser.add_argument(
        "--readonly",
        action="store_true",
        help="look only: no signals to processes (k), no probe (p, it loads the GPUs), "
        "no recording to a file (R)",
    )
    look = parser.add_mutually_exclusive_group()
    look.add_argument("--light", action="store_true", help="light colour theme")
    look.add_argument("--theme", metavar="NAME", help="colour theme (default: textual-dark)")
    parser.add_argument(
        "--config", metavar="FILE", help="settings file (default: ~/.config/gputui/config.toml)"
    )
    arg.add_price(parser, suppress=False)
    arg.add_alerts(parser, suppress=False)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS.values():
        command.add_parser(commands)
    arg.add_replay(parser, suppress=False)
    return parser


@ends_cleanly  # Ctrl-C: exit 130; a driver call left hanging: a hard exit
def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = _dispatch(args, parser)
    except BrokenPipeError:  # `gputui topo | head`: the reader left, which is not an error
        silence_stdout()
        return EXIT_OK
    except Exception as exc:  # a bug: never exit 1, which `check` uses for "warnings"
        return _internal_error(args.command, exc)
    try:
        sys.stdout.flush()  # a closed pipe or a full disk shows here, not at exit
    except BrokenPipeError:
        silence_stdout()
    except OSError as exc:
        silence_stdout()
        error(f"gputui: writing the output failed: {exc.strerror or exc}")
        return EXIT_FAILED
    return code


def _internal_error(command: str | None, exc: Exception) -> int:
    """One paragraph instead of a traceback (``GPUTUI_DEBUG=1`` prints it), exit 2: a prolog that
    drains on 2 must not let a job through because gputui itself failed."""
    import os
    import traceback

    if os.environ.get("GPUTUI_DEBUG"):
        traceback.print_exc()
    where = f"gputui {command}" if command else "gputui"
    error(
        f"{where}: internal error: {type(exc).__name__}: {exc}\n"
        "This is a bug in gputui; run again with GPUTUI_DEBUG=1 for the traceback and report it."
    )
    return EXIT_FAILED


def _dispatch(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """The chosen command's options from ``args``, then the command (an option it cannot use is
    a usage error, exit 2, as argparse gives for a malformed one)."""
    command = COMMANDS[args.command] if args.command else DEFAULT
    settings = settings_for(args, parser)
    try:
        options = command.options(args, Common.from_args(args, settings))
        if command is not DEFAULT:
            gc_pause.resume()  # the start is over (the dashboard's ends with its first frame)
        return command.run(options)
    except UsageError as exc:
        parser.error(str(exc))
