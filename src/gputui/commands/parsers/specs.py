"""``gputui specs``: the GPU spec table.

Its command line: the parser, the options and their defaults. Imported with every command line
(``gputui --help`` lists every command); the command's implementation,
:mod:`gputui.commands.specs`, is imported only when it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gputui.commands.args import SubParsers


def add_parser(commands: SubParsers) -> None:
    specs = commands.add_parser(
        "specs",
        help="print the GPU spec table, or one GPU's spec row, and exit",
        description="Print the built-in GPU spec table (dense peaks; FP16/BF16/FP8 with FP32 "
        "accumulate), or with NAME the row that name matches, as a driver reports it "
        "(e.g. 'NVIDIA H100 80GB HBM3') or as you would type it, in any case, spacing and "
        "punctuation, with or without the vendor (rtx4090, 'A100 80GB'). Exit 2 when NAME "
        "matches no row, or several (they are listed).",
    )
    specs.add_argument(
        "name",
        nargs="?",
        metavar="NAME",
        help="a GPU name as NVML/AMD-SMI report it, or a model name from `gputui specs`",
    )


__all__ = ["add_parser"]
