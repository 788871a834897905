"""``gputui config``: the effective settings.

Its command line: the parser, the options and their defaults. Imported with every command line
(``gputui --help`` lists every command); the command's implementation,
:mod:`gputui.commands.config`, is imported only when it runs."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gputui.commands.args import SubParsers


def add_parser(commands: SubParsers) -> None:
    config = commands.add_parser(
        "config",
        help="print the effective settings and where each came from; --init writes a config file",
        description="Print every setting's effective value and where it came from: the default, "
        "the config file ($XDG_CONFIG_HOME/gputui/config.toml, or GPUTUI_CONFIG, or --config), "
        "an environment variable or the command line (they win in that order).",
    )
    config.add_argument("--json", action="store_true", help="one JSON object")
    config.add_argument(
        "--init",
        action="store_true",
        help="write a commented config file with every default and print its path",
    )
    config.add_argument("--force", action="store_true", help="with --init: overwrite the file")
    config.add_argument(
        "--config", metavar="FILE", default=argparse.SUPPRESS, help="the config file to use"
    )


__all__ = ["add_parser"]
