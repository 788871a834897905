"""``gputui check``: a few seconds, no load on the GPU, a verdict and an exit code.

Steps, each a function so tests can drive them: :func:`build_config` (options and environment to a
:class:`~gputui.health.HealthConfig`), :func:`take_readings` (two readings one second apart, so
rates and the slow tier are real, with the kernel log's XIDs fed in as events), then
:func:`gputui.health.verdict.evaluate` and the report (``--json``: ``docs/check-json.md``).

Exit codes: 0 healthy (only ok / info findings), 1 warnings, 2 a failure, no usable GPU or driver,
or a bad argument. ``--strict`` counts warnings as failures (verdict ``failed``, exit 2).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TextIO

from gputui.backends.base import OpenProgress
from gputui.commands.common import REAL, Common, KernelLogReader, Seams, UsageError
from gputui.commands.output import emit, error
from gputui.commands.session_open import open_or_report
from gputui.core.codec import to_json
from gputui.core.exitcodes import EXIT_FAILED
from gputui.core.frozen import frozen
from gputui.core.model import Finding, GpuEvent, Snapshot
from gputui.core.selection import Selection, select_gpus
from gputui.engine.opening import COLD_OPEN_ALLOWANCE_S, DEFAULT_TIMEOUT_S, exit_now, open_deadline
from gputui.engine.sampler import Sampler
from gputui.engine.session import BackendSpec, Session
from gputui.health import HealthConfig, HealthMonitor, torch_cuda_version
from gputui.health.check_output import check_output
from gputui.health.config import DEFAULT_XID_WINDOW_HOURS
from gputui.health.verdict import CheckResult, evaluate
from gputui.views.report import render_check

MAX_READING_WAIT_S = 5.0
"""How long one reading may take before the driver counts as not responding."""

READINGS = 2
READING_GAP_S = 1.0
SCHEDULER_WAIT_S = 3.0
"""How long the last reading waits for the schedulers' first answer (their allocations), at
most; past it the check goes on without them."""
"""Two readings this far apart: rates (PCIe, NVLink) and the slow tier (ECC, remapped rows) are
real numbers, and the whole check stays near one second."""

NODE_AGE_S = 30.0
"""A node is checked as if it had been up this long: a real one has been up a while before a job
lands on it, and a simulated one is moved on as far (:meth:`Backend.advance`), so the ``faulty``
scenario's GPU 3 has already fallen off the bus."""


@frozen
class CheckOptions:
    """``gputui check``'s options (:func:`gputui.commands.parsers.check.add_parser` says
    what each does)."""

    spec: BackendSpec
    seed: int = 0
    expect_gpus: int | None = None
    gpus: str | None = None
    strict: bool = False
    require_idle: bool = False
    ignore: frozenset[str] = frozenset()
    as_json: bool = False
    probe: bool = False
    timeout: float | None = DEFAULT_TIMEOUT_S
    """The whole check (without ``--probe``'s runs) ends within this (None: no limit)."""
    xid_window_hours: float | None = DEFAULT_XID_WINDOW_HOURS
    list_rules: bool = False
    quiet: bool = False
    """Print only the verdict line (the report's first)."""


def options(args: argparse.Namespace, common: Common) -> CheckOptions:
    if args.list_rules:  # nothing else is looked at
        return CheckOptions(BackendSpec("auto"), list_rules=True)
    if args.quiet and args.json:
        raise UsageError("--quiet prints the verdict line of the text report; not with --json")
    return CheckOptions(
        common.spec(),
        seed=common.seed,
        expect_gpus=common.settings.health.expect_gpus,
        gpus=args.gpus,
        strict=args.strict,
        require_idle=args.require_idle,
        ignore=_ignored_rules(args.ignore) | common.settings.health.ignore,
        as_json=args.json,
        probe=args.probe,
        timeout=args.timeout,
        xid_window_hours=common.settings.health.xid_window_hours or None,
        quiet=args.quiet,
    )


def _ignored_rules(values: list[str]) -> frozenset[str]:
    from gputui.health.verdict import all_rules

    rules = all_rules()
    ids = {r.strip() for v in values for r in v.split(",") if r.strip()}
    unknown = sorted(ids - rules.keys())
    if unknown:
        raise UsageError(
            f"--ignore: unknown rule {', '.join(unknown)} (valid: {', '.join(sorted(rules))})"
        )
    return frozenset(ids)


def build_config(
    *,
    expect_gpus: int | None,
    selection: Selection,
    ignore: Iterable[str] = (),
    require_idle: bool = False,
    xid_window_hours: float | None = DEFAULT_XID_WINDOW_HOURS,
) -> HealthConfig:
    """The health configuration of a check."""
    return HealthConfig(
        expect_gpus=expect_gpus,
        gpus=selection.indices,
        ignore=frozenset(ignore),
        require_idle=require_idle,
        torch_cuda_version=torch_cuda_version(),
        xid_window_hours=xid_window_hours,
        straggler_seconds=0.0,  # its readings are its whole window: a straggler lags in all
    )


def take_readings(
    sampler: Sampler,
    *,
    readings: int = READINGS,
    gap_s: float = READING_GAP_S,
    sleep: Callable[[float], None] = time.sleep,
    schedulers_wait_s: float = SCHEDULER_WAIT_S,
) -> Snapshot:
    """``readings`` polls ``gap_s`` apart, each waiting at most ``sampler.deadline`` for the
    driver; the last snapshot carries the findings of them all. A reading the driver did not
    answer ends the series (it is the verdict). The last waits up to ``schedulers_wait_s`` for
    the schedulers' first answer (their allocations; asked in the background since the
    first), and judges allocated GPUs over these readings alone."""
    sampler.allocation_meter.idle_after_s = 0.0  # its readings are its whole window
    snapshot = sampler.poll(deadline=sampler.deadline)
    for i in range(readings - 1):
        if snapshot.stall is not None:
            break
        sleep(gap_s)
        if i == readings - 2:
            sampler.wait_for_schedulers(schedulers_wait_s)
        snapshot = sampler.poll(deadline=sampler.deadline)
    return snapshot


def replay_readings(session: Session) -> Snapshot:
    """Every reading of a replayed recording, in order, through the session's sampler (so its
    health monitor judges each); the last snapshot."""
    playback = session.playback
    assert playback is not None
    playback.set_paused(True)
    snapshot: Snapshot | None = None
    for timestamp in playback.timestamps():
        playback.seek(timestamp)
        snapshot = session.sampler.poll()
    assert snapshot is not None  # a recording without readings does not open
    return snapshot


def run(options: CheckOptions, seams: Seams = REAL) -> int:
    """Open the backend, read twice, judge, print; returns the exit code.

    The whole check (without ``--probe``'s runs) ends within ``options.timeout``: a driver that
    does not answer a reading gives the "not responding" verdict (exit 2), and one that hangs
    even earlier (opening the library) is cut off by a watchdog that prints that verdict and
    ends the process. ``--probe`` then runs the quick probe on the judged GPUs and adds its
    verdicts as findings (rule ``probe``)."""
    if options.list_rules:
        return run_list_rules()
    spec = options.spec
    started = time.monotonic()
    # A total deadline for live readings (a replay never waits on a driver).
    limit = None if spec.replayed else options.timeout
    progress = OpenProgress()
    guard = (
        Watchdog(
            limit,
            spec,
            as_json=options.as_json,
            quiet=options.quiet,
            out=seams.out,
            progress=progress,
        )
        if limit is not None
        else contextlib.nullcontext()
    )
    with guard:
        if spec.replayed:
            return run_replay_check(options, seams)
        deadline = MAX_READING_WAIT_S if limit is None else min(MAX_READING_WAIT_S, limit / 2)
        return _run_live(options, seams, started=started, deadline=deadline, progress=progress)


def run_check(spec: BackendSpec | str, **keywords: Any) -> int:
    """:func:`run` with the options and the seams as keywords, for scripts and tests:
    ``run_check("sim:faulty", gpus="0", as_json=True, sleep=lambda s: None)``."""
    seams = {f.name: keywords.pop(f.name) for f in dataclasses.fields(Seams) if f.name in keywords}
    if "ignore" in keywords:
        keywords["ignore"] = frozenset(keywords["ignore"])
    if isinstance(spec, str):
        spec = BackendSpec.parse(spec)
    return run(CheckOptions(spec, **keywords), Seams(**seams))


def _run_live(
    options: CheckOptions,
    seams: Seams,
    *,
    started: float,
    deadline: float,
    progress: OpenProgress | None = None,
) -> int:
    spec, ignore = options.spec, options.ignore
    session = open_or_report(
        spec,
        seed=options.seed,
        interval=READING_GAP_S,
        slow_interval=READING_GAP_S,
        clock=seams.clock,
        judge="none",
        deadline=deadline,
        progress=progress,
        open_timeout=None,  # the watchdog ends the whole check
    )
    if session is None:
        return EXIT_FAILED
    with session:
        node = session.node
        try:
            selection = select_gpus(node, options.gpus, seams.environ)
        except ValueError as exc:
            error(f"gputui check: {exc}")
            return EXIT_FAILED
        session.backend.advance(NODE_AGE_S)
        not_checked: list[str] = []
        events = _kernel_log_events(session, seams.kernel_log, not_checked)
        config = build_config(
            expect_gpus=options.expect_gpus,
            selection=selection,
            ignore=ignore,
            require_idle=options.require_idle,
            xid_window_hours=options.xid_window_hours,
        )
        if config.torch_cuda_version is None:
            not_checked.append(
                "driver vs torch CUDA build: no CUDA build of torch in this Python environment"
            )
        monitor = HealthMonitor(config)
        monitor.add_events(events)  # judged with the first reading
        session.sampler.health = monitor
        snapshot = take_readings(session.sampler, sleep=seams.sleep)
        if options.probe and "probe" not in ignore and snapshot.stall is None:
            extra = probe_findings(
                snapshot, selection, session.sampler, spec.simulated, not_checked
            )
            snapshot = dataclasses.replace(snapshot, findings=(*snapshot.findings, *extra))
    result = evaluate(
        snapshot,
        selection,
        ignore=ignore,
        strict=options.strict,
        not_checked=not_checked,
        duration_s=time.monotonic() - started,
        kernel_events=events,
    )
    return _emit(result, as_json=options.as_json, out=seams.out, quiet=options.quiet)


class Watchdog:
    """Ends the process with the "not responding" verdict (exit 2) if the check is still running
    after ``timeout`` seconds: a driver call that hangs while the library opens cannot be
    interrupted, and a prolog must not hang with it.

    A slow open that keeps making progress is a cold driver, not a hung one (without persistence
    mode each GPU takes 1-3 s to initialise on first open): while ``progress`` shows GPUs being
    opened, the deadline moves out by :data:`COLD_OPEN_ALLOWANCE_S` a GPU, and the readings
    after the open get the whole ``timeout`` again (:func:`gputui.engine.opening.open_deadline`)."""

    def __init__(
        self,
        timeout: float,
        spec: BackendSpec,
        *,
        as_json: bool,
        out: TextIO | None,
        progress: OpenProgress | None = None,
        quiet: bool = False,
    ) -> None:
        self.timeout = timeout
        self.spec = spec
        self.as_json = as_json
        self.quiet = quiet
        self.out = out
        self.progress = progress
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._timer = self._arm(timeout)
        self._done = False

    def _arm(self, seconds: float) -> threading.Timer:
        timer = threading.Timer(max(seconds, 0.01), self._check)
        timer.daemon = True
        return timer

    def __enter__(self) -> Watchdog:
        self.started = time.monotonic()
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._done = True
            self._timer.cancel()

    def deadline(self) -> float:
        """The monotonic time after which the check counts as not responding."""
        return open_deadline(self.started, self.timeout, self.progress)

    def _check(self) -> None:
        with self._lock:
            if self._done:
                return
            left = self.deadline() - time.monotonic()
            if left > 0:
                self._timer = self._arm(left)
                self._timer.start()
                return
        self._fire()

    def _fire(self) -> None:
        finding = Finding(
            rule="not_responding",
            severity="fail",
            message="the GPU library did not answer within "
            f"{time.monotonic() - self.started:.0f} s (a driver call hangs)",
            hint="check nvidia-smi / amd-smi (they may hang too) and the kernel log (dmesg); "
            "drain the node, then reset the GPU or reboot",
            key="not_responding:timeout",
            action="reboot",
        )
        result = CheckResult(
            hostname=socket.gethostname(),
            backend=str(self.spec),
            checked_gpus=(),
            selection_source="all",
            findings=(finding,),
            gpus=(),
            not_checked=("everything after the library stopped answering",),
            notes=(),
            duration_s=self.timeout,
        )
        try:
            _emit(result, as_json=self.as_json, out=self.out, quiet=self.quiet)
        finally:
            exit_now(EXIT_FAILED)


def _kernel_log_events(
    session: Session, kernel_log: KernelLogReader | bool | None, not_checked: list[str]
) -> list[GpuEvent]:
    """XIDs the kernel logged since boot (stamped with the time each happened), and the driver
    loads and GPU re-enumerations that make older ones history."""
    simulated = session.spec.simulated
    reader = _kernel_log_reader(kernel_log, simulated)
    if reader is None:
        if simulated and kernel_log is True:
            not_checked.append("kernel log: not read for a simulated node")
        else:
            not_checked.append("kernel log: not read (XIDs from before this check)")
        return []
    from gputui.core.xid import boot_time, kernel_log_events

    lines = reader()
    if lines is None:
        not_checked.append(
            "kernel log not readable (XIDs from before gputui started are not checked); "
            "run as root or set kernel.dmesg_restrict=0"
        )
        return []
    return kernel_log_events(session.node, lines, boot_time=boot_time())


def probe_findings(
    snapshot: Snapshot,
    selection: Selection,
    sampler: Sampler,
    simulated: bool,
    not_checked: list[str],
    options: Mapping[str, Any] | None = None,
) -> list[Finding]:
    """``--probe``: the quick probe on the judged GPUs; LOW results and errors become warnings.
    ``options`` go to :func:`gputui.probe.runner.probe_node`."""
    from gputui.probe.runner import probe_node
    from gputui.probe.verdict import LOW, describe

    if simulated:
        not_checked.append("probe: a simulated node's GPUs cannot be probed (no real GPU)")
        return []
    node = snapshot.node
    judged = sorted(
        g.index for g in node.gpus if selection.indices is None or g.index in selection.indices
    )
    if not judged:
        return []
    report = probe_node(
        node=node, snapshot=snapshot, gpus=judged, sampler=sampler, **(options or {})
    )
    now = snapshot.timestamp
    if report.refused:
        not_checked.append("probe: not run on every GPU, " + " ".join(report.refused))
        if not report.runs:
            return []
    if report.no_torch:
        not_checked.append("probe: " + report.errors[0].split(": ", 1)[-1])
        return []
    out: list[Finding] = []
    for j in report.judged:
        if j.verdict != LOW:
            continue
        out.append(
            Finding(
                rule="probe",
                severity="warn",
                message=f"{j.label}: {describe(j)} ({j.value:.4g} {j.unit})",
                hint="re-run `gputui probe --gpu N` on the idle GPU; check cooling, power limit "
                "and clocks (`gputui probe --long` exposes throttling)",
                gpu_index=j.gpu,
                key=f"probe:{j.gpu}:{j.test}",
                first_seen=now,
                last_seen=now,
                action="watch",
            )
        )
    for gpu, run in report.runs.items():
        for err in run.errors:
            out.append(
                Finding(
                    rule="probe",
                    severity="warn",
                    message=f"probe failed: {err}",
                    hint="run `gputui probe` for the details",
                    gpu_index=gpu,
                    key=f"probe:{gpu}:error:{len(out)}",
                    first_seen=now,
                    last_seen=now,
                    action="watch",
                )
            )
    return out


def _emit(result: CheckResult, *, as_json: bool, out: TextIO | None, quiet: bool = False) -> int:
    if quiet:
        emit(result.headline(), out)
    else:
        emit(to_json(check_output(result), indent=2) if as_json else render_check(result), out)
    return result.exit_code


def run_replay_check(options: CheckOptions, seams: Seams = REAL) -> int:
    """``gputui check --replay FILE``: every reading of a recording judged by a fresh health
    monitor; the verdict counts every finding listed at the end, cleared ones included (something
    that went wrong and recovered during the recording still fails it). Judged as a running node
    (not ``--require-idle``: a recording's own jobs are expected), without this machine's
    environment (Slurm, CUDA_VISIBLE_DEVICES, torch). Exit codes as :func:`run`; a file that
    is not a readable recording exits 2 with a message naming the line."""
    from gputui.core.format import fmt_duration
    from gputui.core.record import RecordingError

    spec, ignore = options.spec, options.ignore
    started = time.monotonic()
    session = open_or_report(
        spec, describe=lambda exc: str(exc).replace("gputui:", "gputui check:", 1), judge="none"
    )
    if session is None:
        return EXIT_FAILED
    with session:
        playback = session.playback
        assert playback is not None
        try:
            selection = select_gpus(session.node, options.gpus, {})
        except ValueError as exc:
            error(f"gputui check: {exc}")
            return EXIT_FAILED
        config = HealthConfig(
            expect_gpus=options.expect_gpus, gpus=selection.indices, ignore=ignore
        )
        session.sampler.health = HealthMonitor(config, env={})
        try:
            snapshot = replay_readings(session)
        except RecordingError as exc:
            error(f"gputui check: cannot replay: {exc}")
            return EXIT_FAILED
        note = (
            f"replayed {len(playback.timestamps())} readings of {spec.arg}, "
            f"{fmt_duration(playback.duration_s)} from "
            f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(playback.start))}"
        )
    result = evaluate(
        snapshot,
        selection,
        ignore=ignore,
        strict=options.strict,
        not_checked=(
            "kernel log: not read for a recording (the XID events it recorded are judged)",
            "driver vs torch CUDA build: not judged for a recording",
        ),
        duration_s=time.monotonic() - started,
    )
    result = dataclasses.replace(result, notes=(*result.notes, note))
    return _emit(result, as_json=options.as_json, out=seams.out, quiet=options.quiet)


def _kernel_log_reader(
    kernel_log: KernelLogReader | bool | None, simulated: bool
) -> KernelLogReader | None:
    if callable(kernel_log):
        return kernel_log
    if kernel_log is True and not simulated:
        from gputui.core.xid import read_kernel_log

        return read_kernel_log
    return None


def run_list_rules() -> int:
    from gputui.health.verdict import list_rules

    emit(list_rules())
    return 0


__all__ = [
    "COLD_OPEN_ALLOWANCE_S",
    "DEFAULT_TIMEOUT_S",
    "CheckOptions",
    "CheckResult",
    "build_config",
    "options",
    "probe_findings",
    "replay_readings",
    "run",
    "run_check",
    "run_replay_check",
    "take_readings",
]
