"""The probe runner (parent side): one worker child per GPU, protocol messages in, results out.

No torch here. :class:`ProbeRunner` starts ``python -m gputui.probe --device cuda:N`` children
(``python`` is this interpreter or the user's ``--python PATH``, with gputui put on PYTHONPATH),
runs the compute and memory tests of all GPUs in parallel and the PCIe / P2P tests one GPU at a
time (links may share a switch), forwards every message to ``on_event(gpu, msg)``, samples
telemetry every 0.1 s while it runs (a 1 s test gets about ten readings, so a clock drop shows)
and attaches per-test medians to each result. ``cancel()``
sends SIGTERM, then SIGKILL after 3 s; no child outlives :meth:`ProbeRunner.run`.
:func:`probe_node` wraps it for the command line: the safety checks (lost and unanswering GPUs
refused, busy ones unless forced), targets, verdicts.

GPU numbers are NVML indices. Which runtime device a worker opens is planned by
:mod:`gputui.probe.devices`: on NVIDIA the children see exactly the probed GPUs, by UUID in
``CUDA_VISIBLE_DEVICES``, so ``cuda:N`` is the N-th target even when a lost GPU has vanished from
the runtime (a MIG slice's worker sees that slice alone, as ``cuda:0``). Every worker's
``hello`` names the device it opened; one that opened another GPU is
stopped and its results are dropped (an error for that GPU), and a P2P result's destination is
mapped back to an NVML index by UUID / PCI bus id.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from gputui.core.model import GpuSample, NodeInfo, Snapshot
from gputui.probe.children import (
    BadLine,
    EndOfStream,
    EventQueue,
    WorkerProcess,
    child_env,
    gputui_pythonpath,
)
from gputui.probe.devices import (
    MISMATCH,
    UNKNOWN,
    DevicePlan,
    cuda_index_map,
    identity_check,
    partition_reason,
    peer_index,
    plan_devices,
)
from gputui.probe.output import spec_summary
from gputui.probe.protocol import (
    TEST_IDS,
    Done,
    Error,
    Hello,
    ProbeMessage,
    Progress,
    Result,
    Retry,
    Skipped,
)
from gputui.probe.report import (
    EXIT_CANNOT,
    EXIT_LOW,
    EXIT_OK,
    ProbeReport,
    judge_runs,
    progress_printer,
    render_table,
)
from gputui.probe.runs import NO_TORCH, EventCallback, GpuRun, Measurement, Target
from gputui.probe.specref import spec_for
from gputui.probe.telemetry import (
    TELEMETRY_INTERVAL_S,
    ReadingFn,
    TelemetryRecorder,
    TelemetrySource,
)
from gputui.probe.verdict import Telemetry

SERIAL_TESTS = frozenset({"h2d", "d2h", "p2p"})
"""Run one GPU at a time (PCIe switches and NVLink are shared)."""
QUICK_TESTS: tuple[str, ...] = TEST_IDS
TERM_GRACE_S = 3.0
BUSY_MEMORY_BYTES = 1 << 30
BUSY_MEMORY_FRACTION = 0.05
CPU_SIZE_SCALE = 0.02
SIM_NOTE = (
    "a simulated node's GPUs cannot be probed: there is no real GPU to run torch on. "
    "`gputui probe --cpu` probes this machine's CPU instead"
)
REPLAY_NOTE = (
    "a recording's GPUs cannot be probed: the probe measures GPUs live, on this machine. "
    "`gputui probe --cpu` probes this machine's CPU instead"
)

Phase = list[tuple[Target, list[str]]]
"""Workers that run at the same time: each target with the tests its worker runs."""


def busy_reason(snapshot: Snapshot, index: int, own_pids: Sequence[int] = ()) -> str | None:
    """Why a GPU should not be probed now (other processes, memory in use), or None."""
    procs = [p for p in snapshot.processes_on(index) if p.pid not in own_pids]
    parts: list[str] = []
    if procs:
        who = ", ".join(
            f"PID {p.pid}" + (f" ({p.user})" if p.user else "") + (f" {p.name}" if p.name else "")
            for p in procs[:5]
        )
        more = f" and {len(procs) - 5} more" if len(procs) > 5 else ""
        parts.append(f"processes running: {who}{more}")
    sample = snapshot.sample(index)
    info = snapshot.node.gpu(index)
    used = sample.memory_used_bytes if sample is not None else None
    total = info.memory_total_bytes if info is not None else None
    if used is not None and (
        used > BUSY_MEMORY_BYTES or (total and used > BUSY_MEMORY_FRACTION * total)
    ):
        share = f" ({100 * used / total:.0f}%)" if total else ""
        parts.append(f"{used / (1 << 30):.1f} GiB memory in use{share}")
    if not parts:
        return None
    return f"GPU {index} is busy: " + "; ".join(parts) + ". Use --force to probe it anyway."


def unusable_label(snapshot: Snapshot, index: int) -> str | None:
    """In a few words, why a GPU cannot be probed at all: its latest sample says it fell off the
    bus (``lost``) or the driver did not answer (``error``), or it is one compute partition of
    a partitioned GPU (:func:`~gputui.probe.devices.partition_reason`); None when none."""
    info = snapshot.node.gpu(index)
    if info is not None and partition_reason(info):
        return f"{(info.compute_partition or '').strip().upper()} partition: cannot be checked"
    sample = snapshot.sample(index)
    if sample is None:
        return None
    if sample.lost:
        return "lost: fell off the bus"
    if sample.error:
        return "not answering: the driver cannot read it"
    return None


def unusable_reason(snapshot: Snapshot, index: int) -> str | None:
    """Why a GPU cannot be probed at all, ``--force`` or not (:func:`unusable_label`, with the
    driver's words and what to do), or None. The command and the probe screen both use it."""
    info = snapshot.node.gpu(index)
    partitioned = partition_reason(info) if info is not None else None
    if partitioned:
        return partitioned
    label = unusable_label(snapshot, index)
    if label is None:
        return None
    sample = snapshot.sample(index)
    detail = f" ({sample.error})" if sample is not None and sample.error else ""
    if sample is not None and sample.lost:
        why = f"GPU {index} is lost: it fell off the bus{detail}"
    else:
        why = f"GPU {index} is not answering: the driver could not read it{detail}"
    return why + ". It cannot be probed (not even with --force); see `gputui check`."


class ProbeRunner:
    """Runs the probe worker for each target and gathers what they report.

    ``command``: the argv prefix that starts a worker (default ``[python, "-m", "gputui.probe"]``);
    tests pass a fake worker here. ``sampler``: a :class:`TelemetrySource` polled for telemetry;
    ``readings``: a callable returning the latest Snapshot instead (e.g. the TUI's). ``plan``:
    the device visibility of the children (:func:`gputui.probe.devices.plan_devices`; without it
    every GPU is visible); ``node``: to map P2P destinations to NVML indices."""

    def __init__(
        self,
        targets: Sequence[Target],
        *,
        tests: Sequence[str] | None = None,
        python: str | None = None,
        command: Sequence[str] | None = None,
        long: bool = False,
        size_scale: float | None = None,
        seconds_per_test: float | None = None,
        on_event: EventCallback | None = None,
        sampler: TelemetrySource | None = None,
        readings: ReadingFn | None = None,
        telemetry_interval: float = TELEMETRY_INTERVAL_S,
        env: Mapping[str, str] | None = None,
        serial_tests: frozenset[str] = SERIAL_TESTS,
        plan: DevicePlan | None = None,
        node: NodeInfo | None = None,
    ) -> None:
        self.targets = list(targets)
        self.tests = list(tests) if tests else list(QUICK_TESTS)
        self.python = python or sys.executable
        self.command = list(command) if command else [self.python, "-m", "gputui.probe"]
        self.long = long
        self.size_scale = size_scale
        self.seconds_per_test = seconds_per_test
        self.on_event = on_event
        self.sampler = sampler
        self.readings = readings
        self.plan = plan
        self.node = node
        self.base_env = env
        self.env = child_env(env, plan.visible if plan is not None else None)
        self.serial_tests = serial_tests
        self.runs: dict[int | None, GpuRun] = {t.gpu: GpuRun(t) for t in self.targets}
        self.telemetry = TelemetryRecorder(
            [t.gpu for t in self.targets if t.gpu is not None], interval=telemetry_interval
        )
        self._queue: EventQueue = queue.Queue()
        self._children: list[WorkerProcess] = []
        self._lock = threading.Lock()
        self._cancel = threading.Event()

    # -- public -----------------------------------------------------------------------------------

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def phases(self) -> list[Phase]:
        """Parallel phase (all targets, compute + memory), then one serial phase per target."""
        parallel = [t for t in self.tests if t not in self.serial_tests]
        serial = [t for t in self.tests if t in self.serial_tests]
        if len(self.targets) <= 1:
            return [[(t, list(self.tests))] for t in self.targets]
        out: list[Phase] = []
        if parallel:
            out.append([(t, parallel) for t in self.targets])
        if serial:
            out += [[(t, serial)] for t in self.targets if t.gpu is not None]
        return out

    def run(self) -> dict[int | None, GpuRun]:
        """Run every phase to the end (or until cancelled); returns the runs by GPU."""
        started = time.monotonic()
        self.telemetry.read = self.readings or (self.sampler.poll if self.sampler else None)
        self.telemetry.start()
        try:
            for phase in self.phases():
                if self._cancel.is_set():
                    break
                self._run_phase(phase)
                if any(r.error_kind == NO_TORCH for r in self.runs.values()):
                    break  # the same Python will fail the same way for every later phase
        finally:
            self._kill_all()
            self.telemetry.stop()
        for run in self.runs.values():
            run.seconds = time.monotonic() - started
            for measured in run.measurements:
                measured.telemetry = self._telemetry_for(run.target, measured)
            if self._cancel.is_set():
                run.cancelled = True
        return self.runs

    def cancel(self) -> None:
        """Stop every child: SIGTERM now, SIGKILL after 3 s (from :meth:`run`'s thread)."""
        self._cancel.set()
        with self._lock:
            children = list(self._children)
        for child in children:
            child.signal(signal.SIGTERM)
        self._queue.put(None)  # wake the loop

    def add_sample(self, when: float, sample: GpuSample) -> None:
        """Record a reading taken at ``when`` (time.time()), for callers that sample themselves."""
        self.telemetry.add(when, sample)

    # -- children ---------------------------------------------------------------------------------

    def _argv(self, target: Target, tests: list[str]) -> list[str]:
        argv = [*self.command, "--device", target.device, "--tests", ",".join(tests)]
        argv.append("--long" if self.long else "--quick")
        if target.pci_bus_id:  # CPU binding (NUMA-local pinned buffers), and the device to open
            argv += ["--pci-bus-id", target.pci_bus_id]
        if self.plan is not None and not self.plan.pinned and "p2p" in tests:
            others = [t.pci_bus_id for t in self.targets if t != target and t.pci_bus_id]
            argv += ["--p2p-peers", ",".join(others)]  # P2P only to other probed GPUs
        if self.size_scale is not None:
            argv += ["--size-scale", f"{self.size_scale:g}"]
        if self.seconds_per_test is not None:
            argv += ["--seconds-per-test", f"{self.seconds_per_test:g}"]
        return argv

    def _start(self, target: Target, tests: list[str]) -> WorkerProcess | None:
        if self.runs[target.gpu].error_kind == "identity":
            return None  # it opened another GPU once: a later phase would too
        try:
            env = self.env
            if self.plan is not None and target.gpu in self.plan.own:
                env = child_env(self.base_env, self.plan.visible_for(target))
            child = WorkerProcess.start(target, self._argv(target, tests), env, self._queue)
        except OSError as exc:
            run = self.runs[target.gpu]
            run.errors.append(f"{target.label}: cannot start {self.command[0]}: {exc}")
            run.error_kind = "start"
            return None
        with self._lock:
            self._children.append(child)
        if self._cancel.is_set():
            child.signal(signal.SIGTERM)
        return child

    def _run_phase(self, phase: Phase) -> None:
        live = [c for c in (self._start(t, tests) for t, tests in phase) if c is not None]
        open_streams = len(live)
        kill_at: float | None = None
        while open_streams:
            if self._cancel.is_set() and kill_at is None:
                kill_at = time.monotonic() + TERM_GRACE_S
            timeout = 0.2 if kill_at is None else max(0.0, min(0.2, kill_at - time.monotonic()))
            if kill_at is not None and time.monotonic() >= kill_at:
                for c in live:
                    c.signal(signal.SIGKILL)
                kill_at = time.monotonic() + 10.0  # give the readers time to see EOF
            try:
                item = self._queue.get(timeout=timeout)
            except queue.Empty:
                continue
            if item is None:
                continue
            child, event = item
            match event:
                case EndOfStream():
                    open_streams -= 1
                    self._finish(child)
                case BadLine(reason=reason):
                    self._bad_line(child, reason)
                case _:
                    self._handle(child, event)

    def _bad_line(self, child: WorkerProcess, reason: str) -> None:
        child.bad_lines += 1
        if child.bad_lines == 1:
            run = self.runs[child.target.gpu]
            run.errors.append(
                f"{child.target.label}: the probe worker wrote a line that is not a probe "
                f"message ({reason})"
            )
            run.error_kind = run.error_kind or "crash"

    def _handle(self, child: WorkerProcess, msg: ProbeMessage) -> None:
        run = self.runs[child.target.gpu]
        if child.rejected:
            return  # it opened another GPU: nothing it says is about its target
        match msg:
            case Hello():
                if not self._accept(child, run, msg):
                    return
                run.hello = run.hello or msg
            case Result(test="p2p"):
                msg = self._with_peer(msg)
                run.measurements.append(Measurement(msg, received=time.time()))
            case Result():
                run.measurements.append(Measurement(msg, received=time.time()))
            case Skipped():
                run.skipped.append(msg)
            case Retry():
                run.retries.append(msg)
            case Error(test=test, message=message):
                if msg.cancelled:
                    run.cancelled = True
                else:
                    run.errors.append(
                        f"{child.target.label}{f' ({test})' if test else ''}: {message}"
                    )
                    if test is None:
                        run.error_kind = run.error_kind or "device"
            case Done(cancelled=cancelled):
                child.done = True
                run.cancelled = run.cancelled or cancelled
            case Progress():
                pass
        self._tell(child.target.gpu, msg)

    def _accept(self, child: WorkerProcess, run: GpuRun, hello: Hello) -> bool:
        """Check the hello names the target's GPU; stop the child and say so when it does not."""
        status, why = identity_check(child.target, hello)
        if status == UNKNOWN and why not in run.notes:
            run.notes.append(why)
        if status != MISMATCH:
            return True
        child.rejected = True
        child.signal(signal.SIGTERM)
        run.errors.append(why)
        run.error_kind = "identity"
        self._tell(child.target.gpu, Error(None, why))
        return False

    def _with_peer(self, result: Result) -> Result:
        """A P2P result with ``details["peer"]``: its destination's NVML index (or None)."""
        peer = peer_index(result.details, self.node, self.plan)
        return dataclasses.replace(result, details={**result.details, "peer": peer})

    def _tell(self, gpu: int | None, msg: ProbeMessage) -> None:
        if self.on_event is not None:
            with contextlib.suppress(Exception):  # a failing listener must not stop the run
                self.on_event(gpu, msg)

    def _finish(self, child: WorkerProcess) -> None:
        """The child closed stdout: reap it; an exit without ``done`` is an error."""
        code = child.reap(TERM_GRACE_S)
        child.finish_reading()
        run = self.runs[child.target.gpu]
        run.returncodes.append(code)
        if child.done or child.rejected or self._cancel.is_set():
            return
        tail = child.stderr_tail
        label = child.target.label
        if any(
            "No module named 'torch'" in line or "No module named torch" in line for line in tail
        ):
            run.error_kind = NO_TORCH
            run.errors.append(
                f"{label}: torch is not installed in {self.python}; "
                f"pip install 'torch==2.13.0' or pass --python"
            )
        else:
            run.error_kind = "crash"
            last = "; ".join(tail[-5:]) or "(no output on stderr)"
            run.errors.append(
                f"{label}: the probe worker exited with status {code} before it finished: {last}"
            )
        self._tell(child.target.gpu, Error(None, run.errors[-1]))

    def _kill_all(self) -> None:
        with self._lock:
            children = list(self._children)
        for child in children:
            child.signal(signal.SIGTERM)
        deadline = time.monotonic() + TERM_GRACE_S
        for child in children:
            child.reap(deadline - time.monotonic())
            child.close_streams()

    # -- telemetry --------------------------------------------------------------------------------

    def _telemetry_for(self, target: Target, measured: Measurement) -> Telemetry | None:
        if target.gpu is None:
            return None
        return self.telemetry.for_test(target.gpu, measured.received, measured.result.seconds)


# -- the command line (``gputui probe``, ``gputui check --probe``) ---------------------------------


def probe_node(
    *,
    node: NodeInfo | None = None,
    snapshot: Snapshot | None = None,
    gpus: Sequence[int] | None = None,
    tests: Sequence[str] | None = None,
    force: bool = False,
    python: str | None = None,
    command: Sequence[str] | None = None,
    long: bool = False,
    sampler: TelemetrySource | None = None,
    on_event: EventCallback | None = None,
    size_scale: float | None = None,
    seconds_per_test: float | None = None,
    runner_hook: Callable[[ProbeRunner], None] | None = None,
) -> ProbeReport:
    """Probe ``gpus`` of ``node`` (NVML indices; all when None), or the CPU when ``node`` is None.

    ``snapshot``: a reading for the safety checks, and the node as of that reading (its wiring,
    which a deferred open fills in only at the first reading, judges the P2P pairs). A GPU whose
    sample says lost or error is refused even with ``force`` (the others are still probed; the
    exit code is 2); busy GPUs refuse the whole run unless ``force``. Every refusal is a line in
    ``report.refused``. The workers see only the probed GPUs (:func:`plan_devices`)."""
    report = ProbeReport(mode="gpu" if node is not None else "cpu")
    plan: DevicePlan | None = None
    if node is None:
        targets = [Target(None, "cpu", "CPU")]
        if size_scale is None:
            size_scale = CPU_SIZE_SCALE
    else:
        node = node_of(node, snapshot)
        indices = sorted(gpus) if gpus is not None else [g.index for g in node.gpus]
        split = {
            i: why for i in indices if (info := node.gpu(i)) and (why := partition_reason(info))
        }
        report.refused = list(split.values())
        indices = [i for i in indices if i not in split]
        if snapshot is not None:
            unusable = {i: why for i in indices if (why := unusable_reason(snapshot, i))}
            report.refused += list(unusable.values())
            indices = [i for i in indices if i not in unusable]
            if not force:
                own = (os.getpid(),)
                busy = [why for i in indices if (why := busy_reason(snapshot, i, own))]
                if busy:
                    report.refused += busy
                    return report
        if not indices:
            return report
        plan = plan_devices(node, indices)
        targets = list(plan.targets)
        for i in indices:
            info = node.gpu(i)
            if info is not None:
                report.specs[i] = spec_summary(info)
    runner = ProbeRunner(
        targets,
        tests=tests,
        python=python,
        command=command,
        long=long,
        size_scale=size_scale,
        seconds_per_test=seconds_per_test,
        on_event=on_event,
        sampler=sampler if node is not None else None,
        plan=plan,
        node=node,
    )
    if runner_hook is not None:
        runner_hook(runner)
    try:
        runs = runner.run()
    except KeyboardInterrupt:
        runner.cancel()
        runs = runner.runs
        report.cancelled = True
    report.runs = dict(runs)
    report.cancelled = report.cancelled or runner.cancelled
    for run in runs.values():
        if run.error_kind == NO_TORCH:
            report.no_torch = True
        report.errors += [e for e in run.errors if e not in report.errors]
        report.notes += [n for n in run.notes if n not in report.notes]
    report.judged = judge_runs(runs, node)
    return report


def node_of(node: NodeInfo, snapshot: Snapshot | None) -> NodeInfo:
    """The node as of ``snapshot`` (the sampler fills in the wiring after a deferred open), unless
    that reading knows less of the wiring than ``node`` does."""
    if snapshot is None:
        return node
    if snapshot.node.topology is not None or node.topology is None:
        return snapshot.node
    return node


__all__ = [
    "EXIT_CANNOT",
    "EXIT_LOW",
    "EXIT_OK",
    "REPLAY_NOTE",
    "SIM_NOTE",
    "EventCallback",
    "GpuRun",
    "Measurement",
    "ProbeReport",
    "ProbeRunner",
    "Target",
    "busy_reason",
    "child_env",
    "cuda_index_map",
    "gputui_pythonpath",
    "judge_runs",
    "node_of",
    "plan_devices",
    "probe_node",
    "progress_printer",
    "render_table",
    "spec_for",
    "unusable_label",
    "unusable_reason",
]
