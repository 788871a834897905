"""``gputui snapshot``: one reading, printed.

Its command line: the parser, the options and their defaults. Imported with every command line
(``gputui --help`` lists every command); the command's implementation,
:mod:`gputui.commands.snapshot`, is imported only when it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gputui.commands import args as arg

if TYPE_CHECKING:
    from gputui.commands.args import SubParsers


def add_parser(commands: SubParsers) -> None:
    snapshot = commands.add_parser(
        "snapshot", help="print one reading and exit", description="Print one reading and exit."
    )
    arg.add_common(snapshot, suppress=True)
    snapshot.add_argument(
        "--json", action="store_true", help="JSON (schema: docs/snapshot-schema.md)"
    )
    arg.add_replay(snapshot, suppress=True)
    snapshot.add_argument(
        "--at",
        type=arg.parsed("gputui.commands.snapshot", "parse_at"),
        metavar="TIME",
        help="with --replay: the reading at TIME: seconds from the start (90, 1m30s), a clock "
        "time on the recording's first day (14:05:00) or an ISO timestamp (default: the last)",
    )
    arg.add_price(snapshot, suppress=True)


__all__ = ["add_parser"]
