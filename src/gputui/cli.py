"""Command line: parse the arguments and hand them to the sub-command in :mod:`gputui.commands`.

``gputui`` (the dashboard), ``snapshot``, ``check``, ``topo``, ``export``, ``fleet``, ``record``,
``probe``, ``specs``, ``pick``, ``config``. Right after parsing, the run's
:class:`~gputui.settings.Settings` are built once (config file, environment, options) and passed
on. Exit codes live in :mod:`gputui.exitcodes`. Everything a user can get wrong
ends in a one-paragraph message, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from gputui import __version__
from gputui.backends.spec import SPEC_HELP, BackendSpec
from gputui.commands import config as config_command
from gputui.commands.output import error, silence_stdout
from gputui.exitcodes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from gputui.opening import ends_cleanly
from gputui.settings.command_line import settings_for
from gputui.settings.model import Settings

if TYPE_CHECKING:
    SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0.1 <= value <= 3600:
        raise argparse.ArgumentTypeError("interval must be between 0.1 and 3600 seconds")
    return value


def _timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 1 <= value <= 3600:
        raise argparse.ArgumentTypeError("the timeout must be between 1 and 3600 seconds")
    return value


def _xid_window(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of hours") from None
    if not 0 <= value <= 24 * 366:
        raise argparse.ArgumentTypeError("the XID window must be between 0 and 8784 hours")
    return value  # 0: no window


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
        default=None,
        metavar="SECONDS",
        help="refresh interval of the fast tier (default: 1)",
    )
    parser.add_argument(
        "--readonly",
        action="store_true",
        help="look only: no signals to processes (k), no probe (p, it loads the GPUs), "
        "no recording to a file (R)",
    )
    look = parser.add_mutually_exclusive_group()
    look.add_argument("--light", action="store_true", help="light colour theme")
    look.add_argument("--theme", metavar="NAME", help="colour theme (default: textual-dark)")
    parser.add_argument(
        "--config", metavar="FILE", help="settings file (default: ~/.config/gputui/config.toml)"
    )
    _add_price(parser, suppress=False)
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
        "--timeout",
        type=_timeout,
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
        type=_xid_window,
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
        "--list-rules", action="store_true", help="print the rule ids and what each checks"
    )
    _add_export_parser(commands)
    _add_fleet_parser(commands)
    _add_specs_parser(commands)
    _add_probe_parser(commands)
    _add_pick_parser(commands)
    _add_record_parsers(parser, commands, snapshot=snapshot, check=check, topo=topo)
    config_command.add_parser(commands)
    for name in ("snapshot", "export", "record"):
        _add_price(commands.choices[name], suppress=True)
    return parser


def _add_price(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """``--gpu-hour-price``, before or after the sub-command (dashboard, snapshot, export,
    record)."""
    parser.add_argument(
        "--gpu-hour-price",
        type=_parsed("gputui.usage", "parse_price"),
        default=argparse.SUPPRESS if suppress else None,
        metavar="PRICE",
        help="what one GPU-hour costs: idle GPUs are shown and exported with their cost per "
        "hour (default: GPUTUI_GPU_HOUR_PRICE, else none)",
    )


def _add_pick_parser(commands: SubParsers) -> None:
    """``gputui pick``: free GPUs for ``CUDA_VISIBLE_DEVICES`` (see :mod:`gputui.commands.pick`)."""
    pick = commands.add_parser(
        "pick",
        help="print free GPUs to put in CUDA_VISIBLE_DEVICES (exit 0 found, 1 fewer, 2 no GPU)",
        description="Read the GPUs for --window seconds and print the N free, healthy GPUs "
        "closest to each other (NVLink, one PCIe switch ... first). Free: utilization at most "
        "--max-util in every reading, at most 1 GiB in use (or --min-free). The numbers are "
        "NVML indices, CUDA's with CUDA_DEVICE_ORDER=PCI_BUS_ID (--format env sets it). Exit 0 "
        "found N; 1 fewer qualify (printed; why the others do not on stderr); 2 no GPU.",
    )
    _add_common(pick, suppress=True)
    add = pick.add_argument
    add("-n", "--count", type=_gpu_count, default=1, metavar="N", help="GPUs (default: 1)")
    add(
        "--min-free",
        type=_parsed("gputui.commands.pick", "parse_size"),
        metavar="SIZE",
        help="at least this much memory free (40G, 40GiB, 40GB, 512M; a bare number is GiB), "
        "even beside another process (default: at most 1 GiB in use)",
    )
    add(
        "--max-util",
        type=_between(0, 100),
        default=10.0,
        metavar="PCT",
        help="highest utilization in any reading (default: 10; 100 skips the test)",
    )
    add(
        "--idle-for",
        type=_duration,
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
        type=_between(0, 60),
        default=2.0,
        metavar="SECONDS",
        help="read the GPUs this long, every 0.5 s (default: 2)",
    )
    add("--strict", action="store_true", help="GPUs with health warnings do not qualify either")
    add("-v", "--verbose", action="store_true", help="say why each GPU was picked or not")


def _parsed(module: str, name: str) -> Callable[[str], Any]:
    """An argument type from ``module.name`` (imported when used): ValueError -> usage error."""

    def convert(text: str) -> Any:
        try:
            return getattr(importlib.import_module(module), name)(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


def _between(lo: float, hi: float) -> Callable[[str], float]:
    def convert(text: str) -> float:
        try:
            value = float(text.rstrip("%"))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"give a number between {lo:g} and {hi:g}")
        return value

    return convert


def _add_export_parser(commands: SubParsers) -> None:
    """``gputui export``: Prometheus metrics (see :mod:`gputui.export`)."""
    export = commands.add_parser(
        "export",
        help="serve Prometheus metrics (DCGM-compatible names) on /metrics",
        description="Serve the readings and health findings as Prometheus metrics on "
        "http://ADDR/metrics, with DCGM exporter names and labels. Needs "
        "pip install 'gputui[export]'.",
    )
    _add_common(export, suppress=True)
    export.add_argument(
        "--listen",
        default="127.0.0.1:9400",
        metavar="ADDR",
        help="HOST:PORT, [IPv6]:PORT, :PORT or PORT (default: 127.0.0.1:9400); "
        "an address beyond loopback exposes process names and users to the network",
    )
    export.add_argument(
        "--interval",
        type=_interval,
        default=argparse.SUPPRESS,
        metavar="SECONDS",
        help="how often the GPUs are read (default: 1); scrapes show the latest reading",
    )


def _add_fleet_parser(commands: SubParsers) -> None:
    """``gputui fleet``: every GPU node from Prometheus (see :mod:`gputui.fleet`)."""
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
        type=_interval,
        default=5.0,
        metavar="SECONDS",
        help="refresh period of the view (default: 5)",
    )
    fleet.add_argument(
        "--timeout",
        dest="fleet_timeout",
        type=_timeout,
        default=10.0,
        metavar="SECONDS",
        help="the longest one refresh may take, all its queries together (default: 10)",
    )
    fleet.add_argument("--json", action="store_true", help="one JSON object, then exit")
    fleet.add_argument(
        "--light", action="store_true", default=argparse.SUPPRESS, help="light colour theme"
    )


def _add_specs_parser(commands: SubParsers) -> None:
    """``gputui specs [NAME]``: the spec table or one row (see :mod:`gputui.specs`)."""
    specs = commands.add_parser(
        "specs",
        help="print the GPU spec table, or one GPU's spec row, and exit",
        description="Print the built-in GPU spec table (dense peaks; FP16/BF16/FP8 with FP32 "
        "accumulate), or with NAME the row that name matches, as a driver reports it "
        "(e.g. 'NVIDIA H100 80GB HBM3'). Exit 2 when NAME matches no row.",
    )
    specs.add_argument(
        "name",
        nargs="?",
        metavar="NAME",
        help="a GPU name as NVML/AMD-SMI report it, or a model name from `gputui specs`",
    )


def _add_probe_parser(commands: SubParsers) -> None:
    """``gputui probe``: measured bandwidth and matmul TFLOPS against the spec sheet."""
    probe = commands.add_parser(
        "probe",
        help="measure memory bandwidth, PCIe and matmul TFLOPS against the spec, and exit",
        description="Run the probe worker (PyTorch) on each GPU: memory copy / triad, host <-> "
        "device, GPU <-> GPU, FP32 / TF32 / FP16 / BF16 / FP8 matmul; compare with the spec "
        "sheet and the node's other GPUs. Exit 0 all OK/WARN, 1 any LOW, 2 could not run. "
        "Without a usable GPU (or with --demo / a recording) it exits 2; --cpu probes the CPU "
        "instead.",
    )
    _add_common(probe, suppress=True)
    probe.add_argument(
        "--gpu",
        action="append",
        default=[],
        metavar="N[,N]",
        help="probe these GPUs (NVML index or UUID; repeatable; default: CUDA_VISIBLE_DEVICES "
        "when set, else all)",
    )
    probe.add_argument("--tests", metavar="LIST", help="comma-separated subset of the tests")
    probe.add_argument("--json", action="store_true", help="one JSON object instead of text")
    probe.add_argument("--long", action="store_true", help="60 s sustained BF16 matmul")
    probe.add_argument(
        "--force", action="store_true", help="probe GPUs that have processes or memory in use"
    )
    probe.add_argument(
        "--python", metavar="PATH", help="run the worker with this Python (your torch build)"
    )
    probe.add_argument("--cpu", action="store_true", help="probe the CPU (no GPU needed)")


def _gpu_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of GPUs") from None
    if value < 0:
        raise argparse.ArgumentTypeError("the number of GPUs cannot be negative")
    return value


def _add_record_parsers(
    parser: argparse.ArgumentParser,
    commands: SubParsers,
    *,
    snapshot: argparse.ArgumentParser,
    check: argparse.ArgumentParser,
    topo: argparse.ArgumentParser,
) -> None:
    """``gputui record FILE`` and ``--replay FILE`` (top level, snapshot, check, topo)."""
    replay_help = "play back a recording made by `gputui record` instead of reading GPUs"
    parser.add_argument("--replay", metavar="FILE", default=None, help=replay_help)
    for sub in (snapshot, check, topo):
        sub.add_argument("--replay", metavar="FILE", default=argparse.SUPPRESS, help=replay_help)
    snapshot.add_argument(
        "--at",
        type=_at_time,
        metavar="TIME",
        help="with --replay: the reading at TIME: seconds from the start (90, 1m30s), a clock "
        "time on the recording's first day (14:05:00) or an ISO timestamp (default: the last)",
    )
    record = commands.add_parser(
        "record",
        help="record readings (with health findings and events) to a file for --replay",
        description="Record readings, with their health findings and events, as JSON lines "
        "(gzip-compressed when FILE ends in .gz, e.g. node.jsonl.gz) until --duration or "
        "Ctrl-C. Play back with `gputui --replay FILE`. See docs/recording.md.",
    )
    _add_common(record, suppress=True)
    record.add_argument(
        "file",
        nargs="?",
        metavar="FILE",
        help="where to write, e.g. node.jsonl.gz; a bare name goes in the record_dir setting's "
        "directory (default: gputui-HOST-DATE-TIME.jsonl.gz there)",
    )
    record.add_argument(
        "--interval",
        type=_interval,
        default=argparse.SUPPRESS,
        metavar="SECONDS",
        help="seconds between readings (default: 1)",
    )
    record.add_argument(
        "--duration",
        type=_duration,
        metavar="DURATION",
        help="stop after this long: 30s, 10m, 1h, 1h30m or seconds (default: until Ctrl-C)",
    )
    record.add_argument("--force", action="store_true", help="overwrite FILE if it exists")


def _duration(text: str) -> float:
    from gputui.record import parse_duration

    try:
        value = parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError("the duration must be more than 0 seconds")
    return value


def _at_time(text: str) -> Any:
    """``--at``: checked now, resolved against the recording by the snapshot command."""
    from gputui.commands.snapshot import parse_at

    try:
        return parse_at(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _ignored_rules(values: list[str], parser: argparse.ArgumentParser) -> frozenset[str]:
    from gputui.health.verdict import all_rules

    rules = all_rules()
    ids = {r.strip() for v in values for r in v.split(",") if r.strip()}
    unknown = sorted(ids - rules.keys())
    if unknown:
        parser.error(
            f"--ignore: unknown rule {', '.join(unknown)} (valid: {', '.join(sorted(rules))})"
        )
    return frozenset(ids)


def _test_list(text: str | None, parser: argparse.ArgumentParser) -> list[str] | None:
    if not text:
        return None
    from gputui.probe.protocol import TEST_IDS

    tests = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in tests if t not in TEST_IDS]
    if bad:
        parser.error(f"--tests: unknown {', '.join(bad)} (valid: {', '.join(TEST_IDS)})")
    return tests


def backend_spec(args: argparse.Namespace, parser: argparse.ArgumentParser) -> BackendSpec:
    """``--backend``, ``--demo`` and ``--replay`` as one spec (argument errors exit 2)."""
    try:
        spec = BackendSpec.parse(args.backend)
    except ValueError as exc:
        parser.error(str(exc))
    if args.demo:
        if spec.kind not in ("auto", "sim"):
            parser.error("--demo cannot be combined with --backend " + args.backend)
        spec = spec if spec.simulated else BackendSpec.sim()
    replay = getattr(args, "replay", None)
    if getattr(args, "at", None) is not None and replay is None and not spec.replayed:
        parser.error("--at needs --replay FILE")
    if replay is not None:
        if args.demo or spec.kind != "auto":
            parser.error("--replay cannot be combined with --demo or --backend")
        spec = BackendSpec.replay(replay)
    return spec


@ends_cleanly  # Ctrl-C: exit 130; a driver call left hanging: a hard exit
def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = settings_for(args, parser)
        code = _dispatch(args, parser, settings)
    except BrokenPipeError:  # `gputui topo | head`: the reader left, which is not an error
        silence_stdout()
        return EXIT_OK
    except Exception as exc:  # a bug: never exit 1, which `check` uses for "warnings"
        return _internal_error(args.command, exc)
    try:
        sys.stdout.flush()  # a closed pipe or a full disk shows here, not at exit
    except BrokenPipeError:
        silence_stdout()
    except OSError as exc:
        silence_stdout()
        error(f"gputui: writing the output failed: {exc.strerror or exc}")
        return EXIT_FAILED
    return code


def _internal_error(command: str | None, exc: Exception) -> int:
    """One paragraph instead of a traceback (``GPUTUI_DEBUG=1`` prints it), exit 2: a prolog that
    drains on 2 must not let a job through because gputui itself failed."""
    import os
    import traceback

    if os.environ.get("GPUTUI_DEBUG"):
        traceback.print_exc()
    where = f"gputui {command}" if command else "gputui"
    error(
        f"{where}: internal error: {type(exc).__name__}: {exc}\n"
        "This is a bug in gputui; run again with GPUTUI_DEBUG=1 for the traceback and report it."
    )
    return EXIT_FAILED


def _dispatch(args: argparse.Namespace, parser: argparse.ArgumentParser, settings: Settings) -> int:
    """Run the chosen command (no backend is opened for the ones that need none)."""
    command = args.command
    if command == "config":
        return config_command.run(settings, as_json=args.json, init=args.init, force=args.force)
    if command == "check" and args.list_rules:
        from gputui.commands.check import run_list_rules

        return run_list_rules()
    if command == "specs":
        from gputui.commands import specs

        return specs.run(args.name)
    if command == "fleet":
        from gputui.commands import fleet

        return fleet.run(
            args.prometheus,
            match=args.match,
            node=args.node,
            interval=args.fleet_interval,
            timeout=args.fleet_timeout,
            as_json=args.json,
            light=args.light,
        )
    spec = backend_spec(args, parser)
    if command == "pick":
        from gputui.commands import pick

        return pick.run(spec, seed=args.seed, **pick.options(args))
    if command == "probe":
        from gputui.commands import probe

        return probe.run(
            spec,
            seed=args.seed,
            gpus=args.gpu,
            tests=_test_list(args.tests, parser),
            as_json=args.json,
            long=args.long,
            force=args.force,
            python=args.python,
            cpu=args.cpu,
        )
    if command == "record":
        if spec.replayed:
            parser.error("record reads GPUs (or --demo); it cannot record a replay")
        from gputui.commands import record

        return record.run(
            spec,
            args.file,
            seed=args.seed,
            interval=settings.interval,
            duration=args.duration,
            force=args.force,
            settings=settings,
        )
    if command == "check":
        from gputui.commands.check import run_check

        return run_check(
            spec,
            seed=args.seed,
            expect_gpus=settings.health.expect_gpus,
            gpus=args.gpus,
            strict=args.strict,
            require_idle=args.require_idle,
            ignore=_ignored_rules(args.ignore, parser) | settings.health.ignore,
            as_json=args.json,
            probe=args.probe,
            timeout=args.timeout,
            xid_window_hours=settings.health.xid_window_hours or None,
        )
    if command == "snapshot":
        from gputui.commands import snapshot

        return snapshot.run(spec, seed=args.seed, as_json=args.json, at=args.at, settings=settings)
    if command == "topo":
        from gputui.commands import topo

        return topo.run(spec, seed=args.seed, as_json=args.json)
    if command == "export":
        return _run_export(args, spec, parser, settings)
    from gputui.commands import dashboard

    return dashboard.run(spec, seed=args.seed, settings=settings)


def _run_export(
    args: argparse.Namespace,
    spec: BackendSpec,
    parser: argparse.ArgumentParser,
    settings: Settings,
) -> int:
    try:
        from gputui.commands import export
        from gputui.export.server import parse_listen
    except ModuleNotFoundError as exc:
        if exc.name != "prometheus_client":
            raise
        error("gputui: export needs prometheus-client: pip install 'gputui[export]'")
        return EXIT_USAGE
    try:
        listen = parse_listen(args.listen)
    except ValueError as exc:
        parser.error(str(exc))
    return export.run(
        spec, seed=args.seed, listen=listen, interval=settings.interval, settings=settings
    )
