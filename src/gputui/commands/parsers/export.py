"""``gputui export``: Prometheus metrics on ``/metrics``.

Its command line: the parser, the options and their defaults. Imported with every command line
(``gputui --help`` lists every command); the command's implementation,
:mod:`gputui.commands.export`, is imported only when it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gputui.commands import args as arg
from gputui.core.metric_names import DCGM_NAMES

if TYPE_CHECKING:
    from gputui.commands.args import SubParsers

DEFAULT_LISTEN = "127.0.0.1:9400"


def add_parser(commands: SubParsers) -> None:
    export = commands.add_parser(
        "export",
        help="serve Prometheus metrics (DCGM-compatible names) on /metrics",
        description="Serve the readings and health findings as Prometheus metrics on "
        "http://ADDR/metrics, with DCGM exporter names and labels. Needs "
        "pip install 'gputui[export]'.",
    )
    arg.add_common(export, suppress=True)
    export.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        metavar="ADDR",
        help="HOST:PORT, [IPv6]:PORT, :PORT or PORT (default: 127.0.0.1:9400); "
        "an address beyond loopback exposes process names and users to the network",
    )
    arg.add_interval(
        export, "how often the GPUs are read (default: 1); scrapes show the latest reading"
    )
    export.add_argument(
        "--dcgm-names",
        choices=tuple(DCGM_NAMES),
        default=None,
        help="the DCGM metric names and units: legacy (dcgm-exporter up to 4.8: MiB, MHz, %%, "
        "mJ), 4.7 (DCGM 4.7's, as dcgm-exporter 4.9: bytes, Hz, 0-1, J) or both, during a "
        "migration (default: export.dcgm_names in the config file, else legacy)",
    )
    arg.add_price(export, suppress=True)
    arg.add_incidents(export, "the export")
    arg.add_alerts(export, suppress=True)


__all__ = ["DEFAULT_LISTEN", "add_parser"]
