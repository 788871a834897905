"""``gputui pick``: free GPUs for ``CUDA_VISIBLE_DEVICES``.

Its command line: the parser, the options and their defaults. Imported with every command line
(``gputui --help`` lists every command); the command's implementation, :mod:`gputui.commands.pick`,
is imported only when it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gputui.commands import args as arg

if TYPE_CHECKING:
    from gputui.commands.args import SubParsers

DEFAULT_POLL_S = 5.0
"""One reading every 5 s: a driver round a few milliseconds long, 12 a minute, while a job that
waits minutes for GPUs starts at most 5 s late."""
MIN_POLL_S = 1.0
MAX_POLL_S = 3600.0


def add_parser(commands: SubParsers) -> None:
    pick = commands.add_parser(
        "pick",
        help="print free GPUs to put in CUDA_VISIBLE_DEVICES (exit 0 found, 1 fewer, 2 no GPU)",
        description="Read the GPUs for --window seconds and print the N free, healthy GPUs "
        "closest to each other (NVLink, one PCIe switch ... first). Free: utilization at most "
        "--max-util in every reading, at most 1 GiB in use (or --min-free). The numbers are "
        "NVML indices, CUDA's with CUDA_DEVICE_ORDER=PCI_BUS_ID (--format env sets it). Exit 0 "
        "found N; 1 fewer qualify (printed; why the others do not on stderr), with --wait when "
        "the time ran out; 2 no GPU; 130 Ctrl-C, 143 SIGTERM.",
    )
    arg.add_common(pick, suppress=True)
    add = pick.add_argument
    add("-n", "--count", type=arg.gpu_count, default=1, metavar="N", help="GPUs (default: 1)")
    add(
        "--min-free",
        type=arg.parsed("gputui.commands.pick", "parse_size"),
        metavar="SIZE",
        help="at least this much memory free (40G, 40GiB, 40GB, 512M; a bare number is GiB), "
        "even beside another process (default: at most 1 GiB in use)",
    )
    add(
        "--max-util",
        type=arg.between(0, 100),
        default=10.0,
        metavar="PCT",
        help="highest utilization in any reading (default: 10; 100 skips the test)",
    )
    add(
        "--idle-for",
        type=arg.duration,
        metavar="DURATION",
        help="every process on the GPU has run this long (5m); idleness itself is judged over "
        "--window only (pick cannot see before it started)",
    )
    add(
        "--format",
        dest="pick_format",
        choices=("indices", "uuids", "env"),
        default="indices",
        help="2,3 | GPU-UUIDs | export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=2,3",
    )
    add("--gpus", metavar="LIST", help="pick among these (default: CUDA_VISIBLE_DEVICES, or all)")
    add(
        "--window",
        dest="pick_window",
        type=arg.between(0, 60),
        default=2.0,
        metavar="SECONDS",
        help="read the GPUs this long, every 0.5 s (default: 2)",
    )
    add(
        "--wait",
        type=arg.duration,
        metavar="DURATION",
        help="while fewer qualify, keep reading until N do (30m, 90s, 1h); exit 1 when the time "
        "runs out",
    )
    add(
        "--poll",
        type=arg.between(MIN_POLL_S, MAX_POLL_S),
        metavar="SECONDS",
        help=f"with --wait: read the GPUs this often (default: {DEFAULT_POLL_S:g}); a whole "
        "--window is read only when a reading shows N free",
    )
    add("--strict", action="store_true", help="GPUs with health warnings do not qualify either")
    add("-v", "--verbose", action="store_true", help="say why each GPU was picked or not")


__all__ = ["DEFAULT_POLL_S", "MAX_POLL_S", "MIN_POLL_S", "add_parser"]
