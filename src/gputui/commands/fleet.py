"""``gputui fleet --prometheus URL``: every GPU node and GPU that Prometheus holds, live in the
terminal, or once as JSON (``--json``).

Reads dcgm-exporter's metrics and ``gputui export``'s (see :mod:`gputui.fleet`). Needs no local
GPU and opens no backend. Exit status of ``--json``: 0 every node ok, 1 a node warns or has gone
silent, 2 a node fails, Prometheus cannot be reached (the message names the URL and why), or no
GPU node is found.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import TYPE_CHECKING

from gputui.commands.common import Common
from gputui.commands.output import emit, error
from gputui.commands.parsers.fleet import DEFAULT_INTERVAL_S, DEFAULT_TIMEOUT_S
from gputui.core.exitcodes import EXIT_FAILED, EXIT_HEALTHY, EXIT_OK, EXIT_USAGE, EXIT_WARNINGS
from gputui.core.frozen import frozen
from gputui.settings.model import LIGHT_THEME

if TYPE_CHECKING:  # gputui.fleet (HTTP, PromQL) is imported when the command runs
    from gputui.fleet.model import Fleet
    from gputui.fleet.source import FleetSource


def exit_code(fleet: Fleet) -> int:
    """2 when a node fails (or none is found), 1 when one warns or is silent, else 0."""
    if not fleet.nodes:
        return EXIT_FAILED
    health = fleet.health
    if health == "fail":
        return EXIT_FAILED
    return EXIT_WARNINGS if health in ("warn", "unknown") else EXIT_HEALTHY


def make_source(
    prometheus: str,
    *,
    match: str | None = None,
    node: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> FleetSource:
    """The source the options describe; ValueError with the user's message when one is wrong."""
    from gputui.fleet.client import PrometheusClient, auth_from_env
    from gputui.fleet.promql import parse_match
    from gputui.fleet.source import FleetSource

    matchers = parse_match(match)
    if node is not None:
        try:
            re.compile(node)
        except re.error as exc:
            raise ValueError(f"--node {node!r}: not a regular expression ({exc})") from None
    client = PrometheusClient(prometheus, authorization=auth_from_env(), timeout=timeout)
    return FleetSource(client, match=matchers, node_filter=node)


@frozen
class FleetOptions:
    prometheus: str
    match: str | None = None
    node: str | None = None
    interval: float = DEFAULT_INTERVAL_S
    timeout: float = DEFAULT_TIMEOUT_S
    as_json: bool = False
    light: bool = False


def options(args: argparse.Namespace, common: Common) -> FleetOptions:
    """No backend: ``--backend`` and the like before ``fleet`` are not looked at."""
    return FleetOptions(
        args.prometheus,
        match=args.match,
        node=args.node,
        interval=args.fleet_interval,
        timeout=args.fleet_timeout,
        as_json=args.json,
        light=common.settings.theme == LIGHT_THEME,
    )


def run(options: FleetOptions) -> int:
    try:
        source = make_source(
            options.prometheus, match=options.match, node=options.node, timeout=options.timeout
        )
    except ValueError as exc:
        error(f"gputui fleet: {exc}")
        return EXIT_USAGE
    if options.as_json:
        return _run_json(source)
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        error(
            "gputui fleet: the fleet view needs a terminal (stdin and stderr must be a TTY).\n"
            "For scripts use `gputui fleet --prometheus URL --json`."
        )
        return EXIT_USAGE
    if os.environ.get("TERM", "").strip().lower() == "dumb":
        error("gputui fleet: TERM=dumb cannot draw the fleet view; use --json")
        return EXIT_USAGE
    from gputui.tui.fleet.app import FleetApp

    theme = "textual-light" if options.light else None
    app = FleetApp(source, interval=options.interval, theme=theme)
    app.run()
    return app.return_code or EXIT_OK


def _run_json(source: FleetSource) -> int:
    from gputui.core.codec import to_json
    from gputui.fleet.client import PrometheusError
    from gputui.fleet.output import fleet_output

    try:
        fleet = source.refresh()
    except PrometheusError as exc:
        error(f"gputui fleet: {exc}")
        return EXIT_FAILED
    emit(to_json(fleet_output(fleet), indent=2, nan_as_null=True))
    if not fleet.nodes:
        where = f" matching {{{source.match}}}" if source.match else ""
        only = f" and --node {source.node_filter.pattern!r}" if source.node_filter else ""
        error(
            f"gputui fleet: no GPU node found at {source.url}: no DCGM_FI_DEV_* or gputui_* "
            f"series{where}{only}"
        )
    return exit_code(fleet)


__all__ = [
    "DEFAULT_INTERVAL_S",
    "FleetOptions",
    "exit_code",
    "make_source",
    "options",
    "run",
]
