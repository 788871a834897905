"""``gputui topo``: the GPU connection matrix.

Its command line: the parser, the options and their defaults. Imported with every command line
(``gputui --help`` lists every command); the command's implementation, :mod:`gputui.commands.topo`,
is imported only when it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gputui.commands import args as arg

if TYPE_CHECKING:
    from gputui.commands.args import SubParsers


def add_parser(commands: SubParsers) -> None:
    topo = commands.add_parser(
        "topo",
        help="print the GPU connection matrix (NVLink / XGMI / PCIe) and link state, and exit",
        description="Print the GPU x GPU connection matrix in the notation of `nvidia-smi topo -m` "
        "(NVLink / XGMI / PCIe), CPU and NUMA affinity, PCIe link, P2P support and the state of "
        "every NVLink / XGMI link, and exit.",
    )
    arg.add_common(topo, suppress=True)
    topo.add_argument("--json", action="store_true", help="JSON instead of text")
    arg.add_replay(topo, suppress=True)


__all__ = ["add_parser"]
