"""Command line: ``gputui`` (the dashboard), ``gputui snapshot`` (one reading, text or JSON),
``gputui check`` (health verdict for a prolog, a fresh instance or CI; see :mod:`gputui.check`),
``gputui topo`` (the GPU connection matrix, links and CPU affinity; see :mod:`gputui.topology`).

Exit codes: 0 success; 2 no usable GPU backend, a bad argument or no terminal; 130 interrupted.
``check``: 0 healthy, 1 warnings, 2 failed (or no usable GPU).
Everything a user can get wrong ends in a one-paragraph message, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence

from gputui import __version__

EXIT_OK = 0
EXIT_NO_GPU = 2
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

SNAPSHOT_SETTLE_S = 0.5
"""``snapshot`` reads twice this far apart, so rates (PCIe, NVLink, CPU %) are real numbers."""


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0.1 <= value <= 3600:
        raise argparse.ArgumentTypeError("interval must be between 0.1 and 3600 seconds")
    return value


def _add_common(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """Options accepted both before and after a sub-command (``gputui --demo snapshot`` and
    ``gputui snapshot --demo``). Sub-parsers use SUPPRESS defaults so they do not overwrite a
    value given before the sub-command."""

    def default(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    parser.add_argument(
        "--backend",
        metavar="NAME",
        default=default("auto"),
        help="auto (NVML, then AMD-SMI), nvml, amd, or sim[:SCENARIO] (default: auto)",
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gputui",
        description="Live terminal dashboard for NVIDIA and AMD GPUs.",
        epilog="Try `gputui --demo` to see a simulated 8-GPU node.",
    )
    parser.add_argument("--version", action="version", version=f"gputui {__version__}")
    _add_common(parser, suppress=False)
    parser.add_argument(
        "--interval",
        type=_interval,
        default=1.0,
        metavar="SECONDS",
        help="refresh interval of the fast tier (default: 1)",
    )
    parser.add_argument(
        "--readonly", action="store_true", help="no actions that change anything (no kill)"
    )
    parser.add_argument("--light", action="store_true", help="light colour theme")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    snapshot = commands.add_parser(
        "snapshot", help="print one reading and exit", description="Print one reading and exit."
    )
    _add_common(snapshot, suppress=True)
    snapshot.add_argument(
        "--json", action="store_true", help="JSON (schema: docs/snapshot-schema.md)"
    )
    topo = commands.add_parser(
        "topo",
        help="print the GPU connection matrix (NVLink / XGMI / PCIe) and link state, and exit",
        description="Print the GPU x GPU connection matrix in the notation of `nvidia-smi topo -m` "
        "(NVLink / XGMI / PCIe), CPU and NUMA affinity, PCIe link, P2P support and the state of "
        "every NVLink / XGMI link, and exit.",
    )
    _add_common(topo, suppress=True)
    topo.add_argument("--json", action="store_true", help="JSON instead of text")
    check = commands.add_parser(
        "check",
        help="judge the node's health in a few seconds and exit 0 / 1 / 2",
        description="Judge the node's health in a few seconds, without loading the GPUs. "
        "Exit status: 0 healthy, 1 warnings, 2 failed or no usable GPU / driver.",
    )
    _add_common(check, suppress=True)
    check.add_argument(
        "--expect-gpus",
        type=_gpu_count,
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
        "--ignore",
        action="append",
        default=[],
        metavar="RULE[,RULE]",
        help="leave out a rule's findings (repeatable; see --list-rules)",
    )
    check.add_argument("--json", action="store_true", help="JSON (schema: docs/check-json.md)")
    check.add_argument(
        "--list-rules", action="store_true", help="print the rule ids and what each checks"
    )
    return parser


def _gpu_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of GPUs") from None
    if value < 0:
        raise argparse.ArgumentTypeError("the number of GPUs cannot be negative")
    return value


def _ignored_rules(values: list[str], parser: argparse.ArgumentParser) -> frozenset[str]:
    from gputui.check import all_rules

    rules = all_rules()
    ids = {r for v in values for r in v.split(",") if r.strip()}
    ids = {r.strip() for r in ids}
    unknown = sorted(ids - rules.keys())
    if unknown:
        parser.error(
            f"--ignore: unknown rule {', '.join(unknown)} (valid: {', '.join(sorted(rules))})"
        )
    return frozenset(ids)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "check" and args.list_rules:
        from gputui.check import list_rules

        print(list_rules())
        return EXIT_OK
    spec = _backend_spec(args, parser)
    try:
        if args.command == "check":
            from gputui.check import run_check

            return run_check(
                spec,
                seed=args.seed,
                expect_gpus=args.expect_gpus,
                gpus=args.gpus,
                strict=args.strict,
                ignore=_ignored_rules(args.ignore, parser),
                as_json=args.json,
            )
        if args.command == "snapshot":
            return run_snapshot(spec, seed=args.seed, as_json=args.json)
        if args.command == "topo":
            return run_topo(spec, seed=args.seed, as_json=args.json)
        return run_tui(
            spec,
            seed=args.seed,
            interval=args.interval,
            readonly=args.readonly,
            light=args.light,
        )
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `gputui topo | head`: the reader left, which is not an error
        _silence_stdout()
        return EXIT_OK


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _backend_spec(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str:
    if args.demo:
        if args.backend not in ("auto", "sim") and not args.backend.startswith("sim:"):
            parser.error("--demo cannot be combined with --backend " + args.backend)
        return args.backend if args.backend.startswith("sim:") else "sim"
    from gputui.backends import create_backend

    try:  # validate the name now so a typo is an argument error, not a "no GPU" error
        create_backend(args.backend) if args.backend != "auto" else None
    except ValueError as exc:
        parser.error(str(exc))
    except Exception as exc:  # e.g. an unknown sim scenario
        parser.error(str(exc))
    return args.backend


def _open_sampler(
    spec: str,
    *,
    seed: int,
    interval: float,
    slow_interval: float | None = None,
    pre_job: bool = False,
):
    """Open the backend and wrap it in a Sampler that evaluates the health rules after each
    reading; on failure print why and return None."""
    from gputui.backends import NoBackend, open_backend
    from gputui.sampler import Sampler

    try:
        backend, node = open_backend(spec, seed=seed)
    except NoBackend as exc:
        print(no_backend_message(exc.reasons, spec), file=sys.stderr)
        return None
    return Sampler(
        backend,
        interval=interval,
        slow_interval=slow_interval,
        node=node,
        health=_health_monitor(pre_job=pre_job),
    )


def _health_monitor(*, pre_job: bool):
    """The health rules with this machine's defaults (Slurm's GPU count, the user, torch)."""
    from gputui import health

    config = health.HealthConfig(pre_job=pre_job, torch_cuda_version=health.torch_cuda_version())
    return health.HealthMonitor(config)


def no_backend_message(reasons: list[tuple[str, str]], spec: str) -> str:
    lines = ["gputui: no usable GPU found." if spec == "auto" else f"gputui: cannot use {spec}."]
    lines += [f"  {label}: {reason}" for label, reason in reasons]
    lines.append("Run `gputui --demo` to try gputui on a simulated 8-GPU node.")
    return "\n".join(lines)


def run_snapshot(spec: str, *, seed: int, as_json: bool) -> int:
    sampler = _open_sampler(
        spec, seed=seed, interval=SNAPSHOT_SETTLE_S, slow_interval=SNAPSHOT_SETTLE_S
    )
    if sampler is None:
        return EXIT_NO_GPU
    try:
        sampler.poll()
        time.sleep(SNAPSHOT_SETTLE_S)
        snapshot = sampler.poll()
    finally:
        sampler.close()
    if as_json:
        print(snapshot.to_json(indent=2))
    else:
        from gputui.report import render_snapshot

        print(render_snapshot(snapshot))
    return EXIT_OK


def run_topo(spec: str, *, seed: int, as_json: bool) -> int:
    """One reading (the first is a slow-tier one, so link states are real), then the matrix."""
    sampler = _open_sampler(spec, seed=seed, interval=SNAPSHOT_SETTLE_S)
    if sampler is None:
        return EXIT_NO_GPU
    try:
        snapshot = sampler.poll()
    finally:
        sampler.close()
    from gputui.topology import render_text, topology_dict

    if as_json:
        print(json.dumps(topology_dict(snapshot.node, snapshot), indent=2))
    else:
        print(render_text(snapshot.node, snapshot))
    return EXIT_OK


def run_tui(spec: str, *, seed: int, interval: float, readonly: bool, light: bool) -> int:
    sampler = _open_sampler(spec, seed=seed, interval=interval)
    if sampler is None:
        return EXIT_NO_GPU
    # Textual reads keys from stdin and draws on stderr: both must be a terminal.
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        sampler.close()
        print(
            "gputui: the dashboard needs a terminal (stdin and stderr must be a TTY).\n"
            "For scripts use `gputui snapshot` (or `--json`); over SSH use `ssh -t`.",
            file=sys.stderr,
        )
        return EXIT_USAGE
    from gputui.tui.app import GpuTuiApp

    app = GpuTuiApp(sampler, readonly=readonly, theme="textual-light" if light else None)
    try:
        app.run()
    finally:
        sampler.close()
    return app.return_code or EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
