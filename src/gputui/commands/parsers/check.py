"""``gputui check``: the node's health verdict.

Its command line: the parser, the options and their defaults. Imported with every command line
(``gputui --help`` lists every command); the command's implementation,
:mod:`gputui.commands.check`, is imported only when it runs."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from gputui.commands import args as arg

if TYPE_CHECKING:
    from gputui.commands.args import SubParsers


def add_parser(commands: SubParsers) -> None:
    check = commands.add_parser(
        "check",
        help="judge the node's health in a few seconds and exit 0 / 1 / 2",
        description="Judge the node's health in a few seconds, without loading the GPUs. "
        "Exit status: 0 healthy, 1 warnings, 2 failed or no usable GPU / driver.",
    )
    arg.add_common(check, suppress=True)
    check.add_argument(
        "--expect-gpus",
        type=arg.gpu_count,
        metavar="N",
        help="fail when fewer GPUs are present (default: the count Slurm allocated, if any)",
    )
    check.add_argument(
        "--gpus",
        metavar="LIST",
        help="judge only these GPUs: NVML indices or UUIDs, e.g. 0,1 "
        "(default: CUDA_VISIBLE_DEVICES when set, else all)",
    )
    check.add_argument("--strict", action="store_true", help="warnings fail too (exit 2)")
    check.add_argument(
        "--timeout",
        type=arg.timeout,
        default=20.0,
        metavar="SECONDS",
        help="give the 'not responding' verdict (exit 2) when the GPU library has not answered "
        "by then (default: 20; --probe runs are not counted)",
    )
    check.add_argument(
        "--require-idle",
        action="store_true",
        help="the GPUs must be free (a Slurm prolog): any process on them, of any user (root "
        "included), or GPU memory in use fails the check (by default other users' processes "
        "are reported as information)",
    )
    check.add_argument(
        "--xid-window",
        type=xid_window,
        default=None,
        metavar="HOURS",
        help="XIDs in the kernel log older than this are history, reported as information "
        "(default: 24; 0: no window). Those before a driver reload or the GPU's re-enumeration "
        "always are",
    )
    check.add_argument(
        "--probe",
        action="store_true",
        help="also run the quick probe (~20 s, loads the GPUs) and add its verdicts",
    )
    check.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="RULE[,RULE]",
        help="leave out a rule's findings (repeatable; see --list-rules)",
    )
    check.add_argument("--json", action="store_true", help="JSON (schema: docs/check-json.md)")
    check.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print only the verdict line (verdict, host, backend, GPUs, the worst finding)",
    )
    check.add_argument(
        "--list-rules", action="store_true", help="print the rule ids and what each checks"
    )
    arg.add_replay(check, suppress=True)


def xid_window(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of hours") from None
    if not 0 <= value <= 24 * 366:
        raise argparse.ArgumentTypeError("the XID window must be between 0 and 8784 hours")
    return value  # 0: no window (the settings keep 0 apart from "not given")


__all__ = ["add_parser", "xid_window"]
