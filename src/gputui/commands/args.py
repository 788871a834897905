"""Argument types and the options several commands share, for the parsers the commands add.

A type raises ``argparse.ArgumentTypeError``: argparse prints the usage line and the message and
exits 2. Options given before or after a sub-command (``gputui --demo snapshot`` and ``gputui
snapshot --demo``) are added to the sub-command's parser with ``suppress=True``: an omitted one
does not overwrite the value given before the sub-command.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from gputui.backends.spec import SPEC_HELP

if TYPE_CHECKING:
    SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]

T = TypeVar("T")

REPLAY_HELP = "play back a recording made by `gputui record` instead of reading GPUs"


def interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0.1 <= value <= 3600:
        raise argparse.ArgumentTypeError("interval must be between 0.1 and 3600 seconds")
    return value


def timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 1 <= value <= 3600:
        raise argparse.ArgumentTypeError("the timeout must be between 1 and 3600 seconds")
    return value


def gpu_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of GPUs") from None
    if value < 0:
        raise argparse.ArgumentTypeError("the number of GPUs cannot be negative")
    return value


def duration(text: str) -> float:
    from gputui.core.record import parse_duration

    try:
        value = parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError("the duration must be more than 0 seconds")
    return value


def window(text: str) -> float:
    """A window around an incident: a duration from 1 s to 1 h."""
    value = duration(text)
    if not 1 <= value <= 3600:
        raise argparse.ArgumentTypeError("give a window from 1s to 1h")
    return value


def between(lo: float, hi: float) -> Callable[[str], float]:
    """A number from ``lo`` to ``hi`` (a trailing ``%`` is allowed)."""

    def convert(text: str) -> float:
        try:
            value = float(text.rstrip("%"))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"give a number between {lo:g} and {hi:g}")
        return value

    return convert


def checked(parse: Callable[[str], T]) -> Callable[[str], T]:
    """An argument type from ``parse``: its ValueError is the usage error."""

    def convert(text: str) -> T:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


def parsed(module: str, name: str) -> Callable[[str], Any]:
    """An argument type from ``module.name``, imported only when the option is given."""
    return checked(lambda text: getattr(importlib.import_module(module), name)(text))


def add_common(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """``--backend``, ``--demo`` and ``--seed``: which GPUs to read."""

    def default(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    parser.add_argument(
        "--backend",
        metavar="NAME",
        default=default("auto"),
        help=f"{SPEC_HELP} (default: auto: NVML, then AMD-SMI)",
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        default=default(False),
        help="use the simulated node (same as --backend sim:dgx-h100)",
    )
    parser.add_argument(
        "--seed", type=int, default=default(0), help="seed of the simulated node (default: 0)"
    )


def add_price(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """``--gpu-hour-price`` (the dashboard, snapshot, export, record)."""
    parser.add_argument(
        "--gpu-hour-price",
        type=parsed("gputui.core.usage", "parse_price"),
        default=argparse.SUPPRESS if suppress else None,
        metavar="PRICE",
        help="what one GPU-hour costs: idle GPUs are shown and exported with their cost per "
        "hour (default: GPUTUI_GPU_HOUR_PRICE, else none)",
    )


def add_alerts(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """``--notify``, ``--webhook`` and ``--alert-severity`` (the dashboard, export, record)."""
    default = argparse.SUPPRESS if suppress else None
    parser.add_argument(
        "--notify",
        type=parsed("gputui.core.notify_command", "check_command"),
        default=default,
        metavar="CMD",
        help="run CMD (split into words as a shell would, run without one) for each new health "
        "finding, with the finding as JSON on its stdin (default: alerts.notify in the config "
        "file, else none)",
    )
    parser.add_argument(
        "--webhook",
        type=parsed("gputui.core.webhook_url", "check_webhook_url"),
        default=default,
        metavar="URL",
        help="POST each new health finding as JSON (with a Slack-style text field) to this "
        "http(s) URL; it shows on the process list, so a secret one is better given as "
        "GPUTUI_WEBHOOK or alerts.webhook in the config file",
    )
    parser.add_argument(
        "--alert-severity",
        choices=("info", "warn", "fail"),
        default=default,
        help="the least severe finding --notify and --webhook send (default: warn)",
    )


def add_replay(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """``--replay FILE`` (the dashboard, snapshot, check, topo)."""
    parser.add_argument(
        "--replay",
        metavar="FILE",
        default=argparse.SUPPRESS if suppress else None,
        help=REPLAY_HELP,
    )


def add_incidents(parser: argparse.ArgumentParser, what: str) -> None:
    """``--incidents DIR``, ``--before`` and ``--after`` (record, export): ``what`` carries on
    ("the recording", "the export")."""
    group = parser.add_argument_group(
        "incidents",
        "when a failure begins (an XID, a lost GPU, a link down...), write the readings from "
        f"--before to --after it as a recording in DIR, while {what} goes on",
    )
    group.add_argument(
        "--incidents",
        metavar="DIR",
        default=None,
        help="where incident files go (made if missing; at most incidents.max_files and "
        "incidents.max_bytes of them, the oldest removed first)",
    )
    group.add_argument(
        "--before",
        type=window,
        default=None,
        metavar="DURATION",
        help="readings kept from before the failure: 30s, 2m... (default: incidents.before in "
        "the config file, else 60s)",
    )
    group.add_argument(
        "--after",
        type=window,
        default=None,
        metavar="DURATION",
        help="readings written after it; a failure within that time joins the same file and "
        "moves its end (default: incidents.after, else 30s)",
    )


def add_interval(parser: argparse.ArgumentParser, text: str) -> None:
    """``--interval`` after a sub-command's name: it overrides the one given before."""
    parser.add_argument(
        "--interval", type=interval, default=argparse.SUPPRESS, metavar="SECONDS", help=text
    )


__all__ = [
    "REPLAY_HELP",
    "add_alerts",
    "add_common",
    "add_incidents",
    "add_interval",
    "add_price",
    "add_replay",
    "between",
    "checked",
    "duration",
    "gpu_count",
    "interval",
    "parsed",
    "timeout",
    "window",
]
