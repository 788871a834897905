"""``gputui record``: readings to a file.

Its command line: the parser, the options and their defaults. Imported with every command line
(``gputui --help`` lists every command); the command's implementation,
:mod:`gputui.commands.record`, is imported only when it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gputui.commands import args as arg

if TYPE_CHECKING:
    from gputui.commands.args import SubParsers


def add_parser(commands: SubParsers) -> None:
    record = commands.add_parser(
        "record",
        help="record readings (with health findings and events) to a file for --replay",
        description="Record readings, with their health findings and events, as JSON lines "
        "(gzip-compressed when FILE ends in .gz, e.g. node.jsonl.gz) until --duration or "
        "Ctrl-C. Play back with `gputui --replay FILE`. See docs/recording.md.",
    )
    arg.add_common(record, suppress=True)
    record.add_argument(
        "file",
        nargs="?",
        metavar="FILE",
        help="where to write, e.g. node.jsonl.gz; a bare name goes in the record_dir setting's "
        "directory (default: gputui-HOST-DATE-TIME.jsonl.gz there; with --incidents: none, "
        "only the incident files)",
    )
    arg.add_interval(record, "seconds between readings (default: 1)")
    record.add_argument(
        "--duration",
        type=arg.duration,
        metavar="DURATION",
        help="stop after this long: 30s, 10m, 1h, 1h30m or seconds (default: until Ctrl-C)",
    )
    record.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    arg.add_price(record, suppress=True)
    arg.add_incidents(record, "the recording")
    arg.add_alerts(record, suppress=True)


__all__ = ["add_parser"]
