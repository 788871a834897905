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
    _add_specs_parser(commands)
    _add_probe_parser(commands)
    _add_record_parsers(parser, commands, snapshot=snapshot, check=check, topo=topo)
    return parser


def _add_export_parser(commands) -> None:
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


def _add_specs_parser(commands) -> None:
    """``gputui specs [NAME]``: the spec table or one row (see :mod:`gputui.specs`)."""
    specs = commands.add_parser(
        "specs",
        help="print the GPU spec table, or one GPU's spec row, and exit",
        description="Print the built-in GPU spec table (dense peaks; FP16/BF16/FP8 with FP32 "
        "accumulate), or with NAME the row that name matches, as a driver reports it "
        "(e.g. 'NVIDIA H100 80GB HBM3'). Exit 2 when NAME matches no row.",
    )
    specs.add_argument(
        "name", nargs="?", metavar="NAME", help="a GPU name as NVML/AMD-SMI report it"
    )


def run_specs(name: str | None) -> int:
    """``gputui specs``: the compact table; ``gputui specs NAME``: one row in full."""
    from gputui.specs import all_names, load_specs, lookup, scaled_peaks

    def num(value: float | None, fmt: str = "{:g}") -> str:
        return "-" if value is None else fmt.format(value)

    if name is None:
        head = ("model", "arch", "SMs/CUs", "mem GB", "BW GB/s", "BF16 TF", "FP8 TF", "TDP W")
        rows = [
            (
                s.model,
                s.cc_or_gfx,
                num(s.sm_count),
                num(s.memory_gb),
                num(s.memory_bw_gbs),
                num(s.bf16_tflops),
                num(s.fp8_tflops),
                num(s.tdp_w),
            )
            for s in load_specs()
        ]
        widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head))]
        for r in (head, *rows):
            cells = [r[0].ljust(widths[0]), r[1].ljust(widths[1])]
            cells += [c.rjust(w) for c, w in zip(r[2:], widths[2:], strict=True)]
            print("  ".join(cells).rstrip())
        print(
            "Dense peaks (no sparsity); BF16/FP8 with FP32 accumulate. "
            "`gputui specs NAME`: one row."
        )
        return EXIT_OK
    match = lookup(name)
    if match is None:
        import difflib

        close = difflib.get_close_matches(name.strip(), all_names(), n=5, cutoff=0.5)
        print(f"gputui: no spec for {name!r}", file=sys.stderr)
        if close:
            print("Close names: " + ", ".join(repr(c) for c in close), file=sys.stderr)
        print("`gputui specs` lists every row.", file=sys.stderr)
        return EXIT_USAGE
    s = match.spec
    peaks = scaled_peaks(match)
    unit = s.unit_name
    lines = [
        ("model", f"{s.vendor} {s.model}" + (f" ({s.form_factor})" if s.form_factor else "")),
        ("matched", f"{match.how}: {match.note} (scale {match.scale:g})"),
        ("names", " | ".join(s.names) or "-"),
        ("architecture", f"{s.architecture} ({s.cc_or_gfx})"),
        (unit, num(s.sm_count)),
        ("boost clock", num(s.boost_clock_mhz, "{:g} MHz")),
        ("memory", num(s.memory_gb, "{:g} GB") + (f" {s.memory_type}" if s.memory_type else "")),
        ("bandwidth", num(s.memory_bw_gbs, "{:g} GB/s")),
        ("FP32", num(peaks["fp32_tflops"], "{:.4g} TFLOPS") + " (non-tensor)"),
        ("TF32", num(peaks["tf32_tflops"], "{:.4g} TFLOPS")),
        ("FP16", num(peaks["fp16_tflops"], "{:.4g} TFLOPS")),
        ("BF16", num(peaks["bf16_tflops"], "{:.4g} TFLOPS")),
        ("FP8", num(peaks["fp8_tflops"], "{:.4g} TFLOPS")),
        ("INT8", num(peaks["int8_tops"], "{:.4g} TOPS")),
        ("TDP", num(s.tdp_w, "{:g} W")),
        ("NVLink/XGMI", num(s.link_gbs, "{:g} GB/s")),
        ("PCIe", num(s.pcie_gen, "gen {:g}")),
        ("source", s.source or "-"),
    ]
    if s.notes:
        lines.append(("notes", s.notes))
    width = max(len(k) for k, _ in lines)
    for key, value in lines:
        print(f"{key.ljust(width)}  {value}")
    print("Peaks are dense (no sparsity); FP16/BF16/FP8/INT8 with FP32 accumulate.")
    return EXIT_OK


def _run_export(args: argparse.Namespace, spec: str, parser: argparse.ArgumentParser) -> int:
    try:
        from gputui import export
    except ModuleNotFoundError as exc:
        if exc.name != "prometheus_client":
            raise
        print(
            "gputui: export needs prometheus-client: pip install 'gputui[export]'", file=sys.stderr
        )
        return EXIT_USAGE
    try:
        listen = export.parse_listen(args.listen)
    except ValueError as exc:
        parser.error(str(exc))
    return export.run_export(spec, seed=args.seed, listen=listen, interval=args.interval)


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
    try:
        code = _dispatch(args, parser)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler, not at exit
        return code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `gputui topo | head`: the reader left, which is not an error
        _silence_stdout()
        return EXIT_OK


def _dispatch(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Run the chosen command (no backend is opened for the ones that need none)."""
    if args.command == "check" and args.list_rules:
        from gputui.check import list_rules

        print(list_rules())
        return EXIT_OK
    if args.command == "specs":
        return run_specs(args.name)
    if args.command == "probe":
        return run_probe(args, parser)
    spec = _replay_spec(args, parser, _backend_spec(args, parser))
    if args.command == "record":
        return run_record(args, spec, parser)
    if args.command == "snapshot" and spec.startswith("replay:"):
        return run_replay_snapshot(spec, at=args.at, as_json=args.json)
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
            probe=args.probe,
        )
    if args.command == "snapshot":
        return run_snapshot(spec, seed=args.seed, as_json=args.json)
    if args.command == "topo":
        return run_topo(spec, seed=args.seed, as_json=args.json)
    if args.command == "export":
        return _run_export(args, spec, parser)
    return run_tui(
        spec,
        seed=args.seed,
        interval=args.interval,
        readonly=args.readonly,
        light=args.light,
    )


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
    reading; on failure print why and return None. A ``replay:PATH`` spec gets a replay sampler
    (replay clock, recorded findings; see :func:`gputui.backends.replay.replay_sampler`)."""
    from gputui.backends import NoBackend, open_backend
    from gputui.sampler import Sampler

    if spec.startswith("replay:"):
        return _open_replay_sampler(spec, interval=interval)

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


# -- recording and replay (gputui record, --replay; see gputui.record) -----------------------------


def _add_record_parsers(
    parser: argparse.ArgumentParser,
    commands,
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
    record.add_argument("file", metavar="FILE", help="where to write, e.g. node.jsonl.gz")
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


def _at_time(text: str) -> tuple[str, object, str]:
    """``--at``: ("offset", seconds), ("clock", (h, m, s)) or ("iso", datetime), checked now and
    resolved against the recording later (:func:`resolve_at`)."""
    import datetime as dt
    import re

    from gputui.record import parse_duration

    match = re.fullmatch(r"\s*(\d{1,2}):(\d{2})(?::(\d{2}(?:\.\d+)?))?\s*", text)
    if match:
        h, m, sec = int(match.group(1)), int(match.group(2)), float(match.group(3) or 0)
        if h > 23 or m > 59 or sec >= 60:
            raise argparse.ArgumentTypeError(f"{text!r} is not a clock time (HH:MM:SS)")
        return ("clock", (h, m, sec), text)
    try:
        return ("offset", parse_duration(text), text)
    except ValueError:
        pass
    try:
        return ("iso", dt.datetime.fromisoformat(text.strip()), text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time: give seconds from the start (90, 1m30s), a clock time "
            "(14:05:00) or an ISO timestamp (2024-05-01T14:05:00)"
        ) from None


def resolve_at(at: tuple[str, object, str], start: float, end: float) -> float:
    """The recorded timestamp ``--at`` names; ValueError when it lies outside the recording."""
    import datetime as dt

    kind, value, text = at
    if kind == "offset":
        ts = start + float(value)  # type: ignore[arg-type]
    elif kind == "clock":
        h, m, sec = value  # type: ignore[misc]
        day = dt.datetime.fromtimestamp(start).replace(hour=0, minute=0, second=0, microsecond=0)
        ts = (day + dt.timedelta(hours=h, minutes=m, seconds=sec)).timestamp()
        if ts < start - 0.5:  # a recording across midnight: the time on the next day
            ts = (day + dt.timedelta(days=1, hours=h, minutes=m, seconds=sec)).timestamp()
    else:
        ts = value.timestamp()  # type: ignore[attr-defined]  (naive: local time)
    if not start - 0.5 <= ts <= end + 0.5:
        from gputui.format import fmt_duration

        raise ValueError(
            f"--at {text}: not in the recording, which runs from {_fmt_time(start)} to "
            f"{_fmt_time(end)} ({fmt_duration(end - start)})"
        )
    return min(max(ts, start), end)


def _fmt_time(ts: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ts).isoformat(sep=" ", timespec="seconds")


def _replay_spec(args: argparse.Namespace, parser: argparse.ArgumentParser, spec: str) -> str:
    """``--replay FILE`` as the backend spec ``replay:FILE``."""
    replay = getattr(args, "replay", None)
    if getattr(args, "at", None) is not None and replay is None and not spec.startswith("replay:"):
        parser.error("--at needs --replay FILE")
    if replay is None:
        return spec
    if args.demo or args.backend != "auto":
        parser.error("--replay cannot be combined with --demo or --backend")
    return "replay:" + replay


def _open_replay_sampler(spec: str, *, interval: float):
    from gputui.backends.base import BackendUnavailable
    from gputui.backends.replay import ReplayBackend, replay_sampler

    backend = ReplayBackend(spec.partition(":")[2])
    try:
        node = backend.open()
    except BackendUnavailable as exc:
        print(f"gputui: cannot replay: {exc}", file=sys.stderr)
        return None
    return replay_sampler(backend, node, interval=interval)


def run_replay_snapshot(spec: str, *, at, as_json: bool) -> int:
    """``gputui snapshot --replay FILE [--at TIME]``: the recorded reading at TIME."""
    from gputui.record import RecordingError

    sampler = _open_replay_sampler(spec, interval=1.0)
    if sampler is None:
        return EXIT_USAGE
    backend = sampler.backend
    try:
        backend.set_paused(True)
        try:
            ts = backend.end if at is None else resolve_at(at, backend.start, backend.end)
        except ValueError as exc:
            print(f"gputui snapshot: {exc}", file=sys.stderr)
            return EXIT_USAGE
        backend.seek(ts)
        try:
            snapshot = sampler.poll()
        except RecordingError as exc:
            print(f"gputui: cannot replay: {exc}", file=sys.stderr)
            return EXIT_USAGE
    finally:
        sampler.close()
    if as_json:
        print(snapshot.to_json(indent=2))
    else:
        from gputui.report import render_snapshot

        print(render_snapshot(snapshot))
    return EXIT_OK


def run_record(args: argparse.Namespace, spec: str, parser: argparse.ArgumentParser) -> int:
    """``gputui record FILE``: readings with findings and events until --duration or Ctrl-C.
    Exit 0 when done (Ctrl-C included), 2 when the backend or FILE cannot be used, 1 when
    writing failed part-way (what was written is still a readable recording)."""
    import threading

    from gputui.record import Recorder, fmt_size

    if spec.startswith("replay:"):
        parser.error("record reads GPUs (or --demo); it cannot record a replay")
    path = args.file
    if os.path.exists(path) and os.path.getsize(path) > 0 and not args.force:
        print(f"gputui record: {path} exists (use --force to overwrite it)", file=sys.stderr)
        return EXIT_USAGE
    sampler = _open_sampler(spec, seed=args.seed, interval=args.interval)
    if sampler is None:
        return EXIT_NO_GPU
    try:
        recorder = Recorder(path, node=sampler.node)
    except OSError as exc:
        sampler.close()
        print(f"gputui record: cannot write {path}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    failed: list[BaseException] = []
    done = threading.Event()

    def write(snapshot) -> None:
        try:
            recorder.write(snapshot)
        except (OSError, ValueError) as exc:  # a full disk: stop, keep what was written
            failed.append(exc)
            done.set()

    sampler.add_listener(write)
    node = sampler.node
    until = f" for {args.duration:g} s" if args.duration else " until Ctrl-C"
    print(
        f"gputui: recording {node.hostname} ({len(node.gpus)} GPUs, {sampler.backend.name}) "
        f"every {args.interval:g} s to {path}{until}",
        file=sys.stderr,
        flush=True,
    )
    deadline = None if args.duration is None else time.monotonic() + args.duration
    try:
        sampler.start(lambda snapshot: None)
        while not done.is_set():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            done.wait(0.5 if left is None else min(left, 0.5))
    except KeyboardInterrupt:
        pass
    finally:
        sampler.close()
        recorder.close()
    size = os.path.getsize(path)
    print(f"Recorded {recorder.count} readings ({fmt_size(size)}, {size} bytes) to {path}")
    if failed:
        print(f"gputui record: writing {path} failed: {failed[0]}", file=sys.stderr)
        return 1
    return EXIT_OK


# -- gputui probe (see gputui.probe.runner) -------------------------------------------------------


def _add_probe_parser(commands) -> None:
    """``gputui probe``: measured bandwidth and matmul TFLOPS against the spec sheet."""
    probe = commands.add_parser(
        "probe",
        help="measure memory bandwidth, PCIe and matmul TFLOPS against the spec, and exit",
        description="Run the probe worker (PyTorch) on each GPU: memory copy / triad, host <-> "
        "device, GPU <-> GPU, FP32 / TF32 / FP16 / BF16 / FP8 matmul; compare with the spec "
        "sheet and the node's other GPUs. Exit 0 all OK/WARN, 1 any LOW, 2 could not run. "
        "With --demo / a simulated node the CPU is probed instead (no real GPU to run on).",
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


def run_probe(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``gputui probe``: progress on stderr, the table and summary (or JSON) on stdout."""
    from gputui.probe.protocol import TEST_IDS
    from gputui.probe.runner import EXIT_CANNOT, SIM_NOTE, probe_node, progress_printer

    tests = None
    if args.tests:
        tests = [t.strip() for t in args.tests.split(",") if t.strip()]
        bad = [t for t in tests if t not in TEST_IDS]
        if bad:
            parser.error(f"--tests: unknown {', '.join(bad)} (valid: {', '.join(TEST_IDS)})")
    if args.python and not (os.path.isfile(args.python) and os.access(args.python, os.X_OK)):
        print(f"gputui probe: --python {args.python}: not an executable file", file=sys.stderr)
        return EXIT_CANNOT
    spec = _backend_spec(args, parser)
    notes: list[str] = []
    sampler = node = snapshot = None
    indices = None
    if not args.cpu:
        from gputui.backends import NoBackend, open_backend
        from gputui.sampler import Sampler

        try:
            backend, opened = open_backend(spec, seed=args.seed)
        except NoBackend as exc:
            if spec != "auto":
                print(no_backend_message(exc.reasons, spec), file=sys.stderr)
                return EXIT_CANNOT
            notes.append("no usable GPU backend: probing the CPU")
        else:
            if opened.backend.startswith("sim"):
                backend.close()
                notes.append(SIM_NOTE)
            else:
                node = opened
                sampler = Sampler(backend, interval=0.5, slow_interval=0.5, node=node)
    try:
        if node is not None:
            from gputui.check import select_gpus

            try:
                selection = select_gpus(node, ",".join(args.gpu) if args.gpu else None)
            except ValueError as exc:
                print(f"gputui probe: {exc}".replace("--gpus", "--gpu"), file=sys.stderr)
                return EXIT_CANNOT
            notes += list(selection.notes)
            indices = None if selection.indices is None else sorted(selection.indices)
            snapshot = sampler.poll()
        for note in notes:
            print(f"gputui probe: {note}", file=sys.stderr)
        report = probe_node(
            node=node,
            snapshot=snapshot,
            gpus=indices,
            tests=tests,
            force=args.force,
            python=args.python,
            long=args.long,
            sampler=sampler,
            on_event=None if args.json else progress_printer(sys.stderr),
        )
    finally:
        if sampler is not None:
            sampler.close()
    report.notes = notes + report.notes
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
        return report.exit_code
    for line in report.refused + report.errors:
        print(f"gputui probe: {line}", file=sys.stderr)
    if report.judged:
        from gputui.probe.runner import render_table

        print(render_table(report.judged))
        print()
        for line in report.summary():
            print(line)
    for note in notes:
        if note == SIM_NOTE:
            print("Note: " + note)
    return report.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
