"""``gputui fleet``: the GPUs a Prometheus server holds.

Its command line: the parser, the options and their defaults. Imported with every command line
(``gputui --help`` lists every command); the command's implementation,
:mod:`gputui.commands.fleet`, is imported only when it runs."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from gputui.commands import args as arg

if TYPE_CHECKING:
    from gputui.commands.args import SubParsers

DEFAULT_INTERVAL_S = 5.0
DEFAULT_TIMEOUT_S = 10.0
"""The longest one refresh may take, all its queries together."""


def add_parser(commands: SubParsers) -> None:
    fleet = commands.add_parser(
        "fleet",
        help="every GPU node and GPU that Prometheus holds (dcgm-exporter or gputui export)",
        description="Show every GPU node and GPU that a Prometheus server holds (scraped from "
        "dcgm-exporter or `gputui export`), live; with --json once, exit 0 all ok / 1 a node "
        "warns or went silent / 2 a node fails or Prometheus cannot be reached. Credentials: "
        "GPUTUI_PROMETHEUS_TOKEN (bearer) or GPUTUI_PROMETHEUS_USER and "
        "GPUTUI_PROMETHEUS_PASSWORD (basic).",
    )
    fleet.add_argument(
        "--prometheus", required=True, metavar="URL", help="e.g. http://prometheus:9090"
    )
    fleet.add_argument(
        "--match",
        metavar="SELECTOR",
        help="a label selector applied to every query, e.g. '{job=\"gpu\"}'",
    )
    fleet.add_argument(
        "--node", metavar="REGEX", help="only nodes whose hostname or instance matches REGEX"
    )
    fleet.add_argument(
        "--interval",
        dest="fleet_interval",
        type=arg.interval,
        default=DEFAULT_INTERVAL_S,
        metavar="SECONDS",
        help="refresh period of the view (default: 5)",
    )
    fleet.add_argument(
        "--timeout",
        dest="fleet_timeout",
        type=arg.timeout,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help="the longest one refresh may take, all its queries together (default: 10)",
    )
    fleet.add_argument("--json", action="store_true", help="one JSON object, then exit")
    fleet.add_argument(
        "--light", action="store_true", default=argparse.SUPPRESS, help="light colour theme"
    )


__all__ = ["DEFAULT_INTERVAL_S", "DEFAULT_TIMEOUT_S", "add_parser"]
