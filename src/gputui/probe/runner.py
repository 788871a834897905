"""The probe runner (parent side): one worker child per GPU, JSON lines in, results out.

No torch here. :class:`ProbeRunner` starts ``python -m gputui.probe --device cuda:N`` children
(``python`` is this interpreter or the user's ``--python PATH``, with gputui put on PYTHONPATH),
runs the compute and memory tests of all GPUs in parallel and the PCIe / P2P tests one GPU at a
time (links may share a switch), forwards every message to ``on_event(gpu, msg)``, samples
telemetry every 0.5 s while it runs and attaches per-test medians to each result. ``cancel()``
sends SIGTERM, then SIGKILL after 3 s; no child outlives :meth:`ProbeRunner.run`.

GPU numbers are NVML indices. Children get ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` and no
``CUDA_VISIBLE_DEVICES``, so ``cuda:N`` is the N-th GPU in PCI bus order, which is NVML's order
on NVIDIA; the runner maps by PCI bus id. (ROCm ignores CUDA_DEVICE_ORDER; its order is usually
the same as AMD-SMI's, and the worker's hello names the device it opened.)
"""

from __future__ import annotations

import collections
import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gputui.probe import protocol
from gputui.probe.protocol import TEST_IDS
from gputui.probe.verdict import Telemetry, summarize_samples

SERIAL_TESTS = frozenset({"h2d", "d2h", "p2p"})
"""Run one GPU at a time (PCIe switches and NVLink are shared)."""
QUICK_TESTS: tuple[str, ...] = TEST_IDS
TERM_GRACE_S = 3.0
TELEMETRY_INTERVAL_S = 0.5
STDERR_TAIL = 20
BUSY_MEMORY_BYTES = 1 << 30
BUSY_MEMORY_FRACTION = 0.05
NO_TORCH = "no_torch"

EventCallback = Callable[["int | None", dict[str, Any]], None]


@dataclass(frozen=True, slots=True)
class Target:
    """One device to probe: an NVML GPU (``gpu`` set) or the CPU (``gpu`` None)."""

    gpu: int | None
    device: str  # "cuda:N" or "cpu"
    label: str  # "GPU 3" / "CPU"


@dataclass
class GpuRun:
    """What one device's children reported."""

    target: Target
    hello: dict[str, Any] | None = None
    results: list[dict[str, Any]] = field(default_factory=list)
    telemetry: list[Telemetry | None] = field(default_factory=list)  # one per result
    skipped: list[dict[str, Any]] = field(default_factory=list)
    retries: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    error_kind: str | None = None  # NO_TORCH, "crash", "cancelled", "start"
    cancelled: bool = False
    returncodes: list[int] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.errors and not self.cancelled


@dataclass
class _Child:
    target: Target
    proc: subprocess.Popen
    done: bool = False
    stderr: collections.deque = field(default_factory=lambda: collections.deque(maxlen=STDERR_TAIL))
    bad_lines: int = 0
    reader: threading.Thread | None = None
    err_reader: threading.Thread | None = None


def gputui_pythonpath() -> str:
    """The folder that holds the ``gputui`` package (what a foreign Python needs to import it)."""
    import gputui

    return str(Path(gputui.__file__).resolve().parent.parent)


def child_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    path = gputui_pythonpath()
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = path if not old else path + os.pathsep + old
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def cuda_index_map(node: Any) -> dict[int, int]:
    """NVML index -> ``cuda:N`` in PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID)."""
    gpus = list(node.gpus)
    if all(g.pci_bus_id for g in gpus):
        order = sorted(gpus, key=lambda g: g.pci_bus_id.lower())
    else:
        order = sorted(gpus, key=lambda g: g.index)
    return {g.index: i for i, g in enumerate(order)}


def busy_reason(snapshot: Any, index: int, own_pids: Sequence[int] = ()) -> str | None:
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
    used = getattr(sample, "memory_used_bytes", None)
    total = getattr(info, "memory_total_bytes", None)
    if used is not None and (
        used > BUSY_MEMORY_BYTES or (total and used > BUSY_MEMORY_FRACTION * total)
    ):
        share = f" ({100 * used / total:.0f}%)" if total else ""
        parts.append(f"{used / (1 << 30):.1f} GiB memory in use{share}")
    if not parts:
        return None
    return f"GPU {index} is busy: " + "; ".join(parts) + ". Use --force to probe it anyway."


class ProbeRunner:
    """Runs the probe worker for each target and gathers what they report.

    ``command``: the argv prefix that starts a worker (default ``[python, "-m", "gputui.probe"]``);
    tests pass a fake worker here. ``sampler``: anything with ``poll() -> Snapshot`` (telemetry);
    ``readings``: a callable returning the latest Snapshot instead (e.g. the TUI's)."""

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
        sampler: Any = None,
        readings: Callable[[], Any] | None = None,
        telemetry_interval: float = TELEMETRY_INTERVAL_S,
        env: Mapping[str, str] | None = None,
        serial_tests: frozenset[str] = SERIAL_TESTS,
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
        self.telemetry_interval = telemetry_interval
        self.env = child_env(env)
        self.serial_tests = serial_tests
        self.runs: dict[int | None, GpuRun] = {t.gpu: GpuRun(t) for t in self.targets}
        self._queue: queue.Queue = queue.Queue()
        self._children: list[_Child] = []
        self._lock = threading.Lock()
        self._cancel = threading.Event()
        self._stop_telemetry = threading.Event()
        self._samples: dict[int, list[tuple[float, Any]]] = collections.defaultdict(list)

    # -- public -----------------------------------------------------------------------------------

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def phases(self) -> list[list[tuple[Target, list[str]]]]:
        """Parallel phase (all targets, compute + memory), then one serial phase per target."""
        parallel = [t for t in self.tests if t not in self.serial_tests]
        serial = [t for t in self.tests if t in self.serial_tests]
        if len(self.targets) <= 1:
            return [[(t, list(self.tests))] for t in self.targets]
        out: list[list[tuple[Target, list[str]]]] = []
        if parallel:
            out.append([(t, parallel) for t in self.targets])
        if serial:
            out += [[(t, serial)] for t in self.targets if t.gpu is not None]
        return out

    def run(self) -> dict[int | None, GpuRun]:
        """Run every phase to the end (or until cancelled); returns the runs by GPU."""
        started = time.monotonic()
        telemetry = None
        if self.sampler is not None or self.readings is not None:
            telemetry = threading.Thread(target=self._telemetry_loop, daemon=True)
            telemetry.start()
        try:
            for phase in self.phases():
                if self._cancel.is_set():
                    break
                self._run_phase(phase)
                if any(r.error_kind == NO_TORCH for r in self.runs.values()):
                    break  # the same Python will fail the same way for every later phase
        finally:
            self._kill_all()
            self._stop_telemetry.set()
            if telemetry is not None:
                telemetry.join(timeout=2.0)
        for run in self.runs.values():
            run.seconds = time.monotonic() - started
            run.telemetry = [self._telemetry_for(run.target, r) for r in run.results]
            if self._cancel.is_set():
                run.cancelled = True
        return self.runs

    def cancel(self) -> None:
        """Stop every child: SIGTERM now, SIGKILL after 3 s (from :meth:`run`'s thread)."""
        self._cancel.set()
        with self._lock:
            children = list(self._children)
        for child in children:
            _signal(child.proc, signal.SIGTERM)
        self._queue.put(None)  # wake the loop

    # -- children ---------------------------------------------------------------------------------

    def _argv(self, target: Target, tests: list[str]) -> list[str]:
        argv = [*self.command, "--device", target.device, "--tests", ",".join(tests)]
        argv.append("--long" if self.long else "--quick")
        if self.size_scale is not None:
            argv += ["--size-scale", f"{self.size_scale:g}"]
        if self.seconds_per_test is not None:
            argv += ["--seconds-per-test", f"{self.seconds_per_test:g}"]
        return argv

    def _start(self, target: Target, tests: list[str]) -> _Child | None:
        run = self.runs[target.gpu]
        try:
            proc = subprocess.Popen(
                self._argv(target, tests),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.env,
                start_new_session=True,
            )
        except OSError as exc:
            run.errors.append(f"{target.label}: cannot start {self.command[0]}: {exc}")
            run.error_kind = "start"
            return None
        child = _Child(target, proc)
        child.reader = threading.Thread(target=self._read_stdout, args=(child,), daemon=True)
        child.err_reader = threading.Thread(target=self._read_stderr, args=(child,), daemon=True)
        child.reader.start()
        child.err_reader.start()
        with self._lock:
            self._children.append(child)
        if self._cancel.is_set():
            _signal(proc, signal.SIGTERM)
        return child

    def _read_stdout(self, child: _Child) -> None:
        assert child.proc.stdout is not None
        for raw in child.proc.stdout:
            if not raw.strip():
                continue
            try:
                msg = protocol.decode(raw)
            except protocol.ProtocolError as exc:
                text = raw.decode("utf-8", "replace").strip()[:200]
                self._queue.put((child, {"type": "_bad", "message": f"{exc}: {text!r}"}))
                continue
            self._queue.put((child, msg))
        self._queue.put((child, {"type": "_eof"}))

    def _read_stderr(self, child: _Child) -> None:
        assert child.proc.stderr is not None
        for raw in child.proc.stderr:
            text = raw.decode("utf-8", "replace").rstrip()
            if text:
                child.stderr.append(text)

    def _run_phase(self, phase: list[tuple[Target, list[str]]]) -> None:
        live = [c for c in (self._start(t, tests) for t, tests in phase) if c is not None]
        open_streams = len(live)
        kill_at: float | None = None
        while open_streams:
            if self._cancel.is_set() and kill_at is None:
                kill_at = time.monotonic() + TERM_GRACE_S
            timeout = 0.2 if kill_at is None else max(0.0, min(0.2, kill_at - time.monotonic()))
            if kill_at is not None and time.monotonic() >= kill_at:
                for c in live:
                    _signal(c.proc, signal.SIGKILL)
                kill_at = time.monotonic() + 10.0  # give the readers time to see EOF
            try:
                item = self._queue.get(timeout=timeout)
            except queue.Empty:
                continue
            if item is None:
                continue
            child, msg = item
            if msg["type"] == "_eof":
                open_streams -= 1
                self._finish(child)
                continue
            self._handle(child, msg)

    def _handle(self, child: _Child, msg: dict[str, Any]) -> None:
        run = self.runs[child.target.gpu]
        kind = msg["type"]
        msg = dict(msg)
        if kind == "_bad":
            child.bad_lines += 1
            if child.bad_lines == 1:
                run.errors.append(
                    f"{child.target.label}: the probe worker wrote a line that is not a probe "
                    f"message ({msg['message']})"
                )
                run.error_kind = run.error_kind or "crash"
            return
        msg["received"] = time.time()
        if kind == "hello":
            run.hello = msg if run.hello is None else run.hello
        elif kind == "result":
            run.results.append(msg)
        elif kind == "skipped":
            run.skipped.append(msg)
        elif kind == "retry":
            run.retries.append(msg)
        elif kind == "error":
            if msg["message"] == protocol.CANCELLED:
                run.cancelled = True
            else:
                test = f" ({msg['test']})" if msg.get("test") else ""
                run.errors.append(f"{child.target.label}{test}: {msg['message']}")
                if msg.get("test") is None:
                    run.error_kind = run.error_kind or "device"
        elif kind == "done":
            child.done = True
            run.cancelled = run.cancelled or bool(msg.get("cancelled"))
        if self.on_event is not None:
            with contextlib.suppress(Exception):  # a failing listener must not stop the run
                self.on_event(child.target.gpu, msg)

    def _finish(self, child: _Child) -> None:
        try:
            code = child.proc.wait(timeout=TERM_GRACE_S)
        except subprocess.TimeoutExpired:
            _signal(child.proc, signal.SIGKILL)
            code = child.proc.wait()
        if child.err_reader is not None:
            child.err_reader.join(timeout=1.0)
        run = self.runs[child.target.gpu]
        run.returncodes.append(code)
        if child.done or self._cancel.is_set():
            return
        tail = "\n".join(child.stderr)
        if "No module named 'torch'" in tail or "No module named torch" in tail:
            run.error_kind = NO_TORCH
            run.errors.append(
                f"{child.target.label}: torch is not installed in {self.python}; "
                f"pip install 'torch==2.13.0' or pass --python"
            )
            msg = {"type": "error", "test": None, "message": run.errors[-1]}
        else:
            run.error_kind = run.error_kind if run.error_kind == "crash" else "crash"
            last = "; ".join(list(child.stderr)[-5:]) or "(no output on stderr)"
            run.errors.append(
                f"{child.target.label}: the probe worker exited with status {code} before it "
                f"finished: {last}"
            )
            msg = {"type": "error", "test": None, "message": run.errors[-1]}
        if self.on_event is not None:
            with contextlib.suppress(Exception):
                self.on_event(child.target.gpu, msg)

    def _kill_all(self) -> None:
        with self._lock:
            children = list(self._children)
        for child in children:
            if child.proc.poll() is None:
                _signal(child.proc, signal.SIGTERM)
        deadline = time.monotonic() + TERM_GRACE_S
        for child in children:
            try:
                child.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal(child.proc, signal.SIGKILL)
                child.proc.wait()
            for stream in (child.proc.stdout, child.proc.stderr):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()

    # -- telemetry --------------------------------------------------------------------------------

    def _telemetry_loop(self) -> None:
        gpus = {t.gpu for t in self.targets if t.gpu is not None}
        while not self._stop_telemetry.is_set():
            try:
                snapshot = self.readings() if self.readings else self.sampler.poll()
            except Exception:  # telemetry is a bonus; the probe goes on without it
                snapshot = None
            now = time.time()
            if snapshot is not None:
                for sample in snapshot.gpus:
                    if sample.index in gpus:
                        self._samples[sample.index].append((now, sample))
            self._stop_telemetry.wait(self.telemetry_interval)

    def add_sample(self, when: float, sample: Any) -> None:
        """Record a reading taken at ``when`` (time.time()), for callers that sample themselves."""
        self._samples[sample.index].append((when, sample))

    def _telemetry_for(self, target: Target, result: dict[str, Any]) -> Telemetry | None:
        if target.gpu is None:
            return None
        end = float(result.get("received", time.time()))
        start = end - float(result.get("seconds", 0.0)) - 0.1
        samples = [s for when, s in self._samples.get(target.gpu, []) if start <= when <= end]
        if not samples:
            return None
        return summarize_samples(samples)


def _signal(proc: subprocess.Popen, sig: int) -> None:
    """Signal the child's process group (it runs in its own session), else the child."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError, OSError):
        with contextlib.suppress(ProcessLookupError, OSError):
            proc.send_signal(sig)


# -- judging and the command line (``gputui probe``, ``gputui check --probe``) --------------------

EXIT_OK, EXIT_LOW, EXIT_CANNOT = 0, 1, 2
CPU_SIZE_SCALE = 0.02
SIM_NOTE = (
    "the simulated node's GPUs cannot be probed (there is no real GPU to run torch on); "
    "running the probe on the CPU instead"
)


def spec_for(info: Any) -> tuple[Any, dict[str, float | None] | None]:
    """(SpecMatch or None, scaled peaks or None) for a GpuInfo."""
    from gputui.specs import lookup, scaled_peaks

    match = lookup(
        info.name,
        sm_count=info.sm_count,
        clock_mhz=info.sm_clock_max_mhz,
        compute_capability=info.compute_capability,
    )
    return match, (scaled_peaks(match) if match is not None else None)


def judge_runs(runs: Mapping[int | None, GpuRun], node: Any = None) -> list[Any]:
    """Every result of every run as a :class:`~gputui.probe.verdict.Judged`, verdicts filled."""
    from gputui.probe import verdict as V

    judged: list[V.Judged] = []
    limits: dict[int, tuple[float | None, float | None]] = {}
    for gpu, run in runs.items():
        info = node.gpu(gpu) if (node is not None and gpu is not None) else None
        match, peaks = spec_for(info) if info is not None else (None, None)
        fam = V.family(match.spec.architecture) if match is not None else "default"
        if info is not None:
            limits[gpu] = (info.sm_clock_max_mhz, info.power_default_limit_w)  # type: ignore[index]
        tels = run.telemetry or [None] * len(run.results)
        for res, tel in zip(run.results, tels, strict=False):
            j = V.Judged(
                gpu=gpu,
                label=run.target.label,
                test=res["test"],
                value=float(res["value"]),
                unit=res["unit"],
                method=res.get("method", ""),
                telemetry=tel,
                peer=(res.get("details") or {}).get("peer"),
            )
            if info is not None:
                gen = (tel.pcie_gen if tel else None) or info.pcie_max_gen
                width = (tel.pcie_width if tel else None) or info.pcie_max_width
                link = match.spec.link_gbs if match is not None else None
                j.spec, j.spec_source = V.spec_value(
                    j.test, peaks, pcie_gen=gen, pcie_width=width, link_gbs=link
                )
                if j.spec and match is not None:
                    j.spec_source += f" of {match.spec.model} ({match.how})"
                j.expected = V.expected_fraction(fam, j.test) if j.spec else None
                V.judge(
                    j,
                    sm_clock_max_mhz=info.sm_clock_max_mhz,
                    power_default_limit_w=info.power_default_limit_w,
                )
            else:
                j.spec_source = "CPU run: no spec comparison" if gpu is None else "no spec"
            judged.append(j)
    V.apply_node_relative(judged, limits)
    return judged


def _fmt(value: float | None, fmt: str = "{:.4g}") -> str:
    return "-" if value is None else fmt.format(value)


def render_table(judged: Sequence[Any]) -> str:
    head = ("GPU", "test", "measured", "spec", "% spec", "expected", "verdict", "how measured")
    rows = [
        (
            j.label,
            j.test + (f"->{j.peer}" if j.peer is not None else ""),
            f"{j.value:.4g} {j.unit}",
            "-" if j.spec is None else f"{j.spec:.4g} {j.unit}",
            _fmt(j.pct_of_spec, "{:.0f}%"),
            _fmt(None if j.expected is None else 100 * j.expected, "{:.0f}%"),
            j.verdict,
            j.method,
        )
        for j in judged
    ]
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head) - 1)]
    lines = []
    for r in (head, *rows):
        cells = [c.ljust(w) for c, w in zip(r[:-1], widths, strict=False)]
        lines.append("  ".join([*cells, r[-1]]).rstrip())
    return "\n".join(lines)


@dataclass
class ProbeReport:
    """The outcome of ``gputui probe`` / ``check --probe``."""

    mode: str  # "gpu" | "cpu"
    judged: list[Any] = field(default_factory=list)
    runs: dict[int | None, GpuRun] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    specs: dict[int, dict[str, Any]] = field(default_factory=dict)
    no_torch: bool = False
    cancelled: bool = False

    @property
    def exit_code(self) -> int:
        from gputui.probe.verdict import LOW

        if self.refused or self.errors or self.no_torch or (self.cancelled and not self.judged):
            return EXIT_CANNOT
        return EXIT_LOW if any(j.verdict == LOW for j in self.judged) else EXIT_OK

    def summary(self) -> list[str]:
        from gputui.probe.verdict import summary_lines

        return summary_lines(self.judged)

    def to_dict(self) -> dict[str, Any]:
        from gputui.probe.verdict import EXPECTED_SOURCE, worst

        return {
            "mode": self.mode,
            "verdict": worst(self.judged),
            "exit_code": self.exit_code,
            "results": [j.to_dict() for j in self.judged],
            "gpus": {
                str(k): {
                    "label": r.target.label,
                    "device": r.target.device,
                    "device_name": (r.hello or {}).get("device_name"),
                    "torch_version": (r.hello or {}).get("torch_version"),
                    "skipped": [{"test": s["test"], "reason": s["reason"]} for s in r.skipped],
                    "retries": [
                        {"test": s["test"], "reason": s["reason"], "size": s["size"]}
                        for s in r.retries
                    ],
                    "errors": list(r.errors),
                    "cancelled": r.cancelled,
                    "spec": self.specs.get(k) if isinstance(k, int) else None,
                }
                for k, r in self.runs.items()
            },
            "summary": self.summary(),
            "notes": list(self.notes),
            "refused": list(self.refused),
            "errors": list(self.errors),
            "expected_source": EXPECTED_SOURCE,
        }


def _spec_info(info: Any) -> dict[str, Any] | None:
    match, _ = spec_for(info)
    if match is None:
        return None
    return {
        "model": match.spec.model,
        "how": match.how,
        "scale": match.scale,
        "note": match.note,
        "source": match.spec.source,
    }


def probe_node(
    *,
    node: Any = None,
    snapshot: Any = None,
    gpus: Sequence[int] | None = None,
    tests: Sequence[str] | None = None,
    force: bool = False,
    python: str | None = None,
    command: Sequence[str] | None = None,
    long: bool = False,
    sampler: Any = None,
    on_event: EventCallback | None = None,
    size_scale: float | None = None,
    seconds_per_test: float | None = None,
    runner_hook: Callable[[ProbeRunner], None] | None = None,
) -> ProbeReport:
    """Probe ``gpus`` of ``node`` (NVML indices; all when None), or the CPU when ``node`` is None.

    ``snapshot``: a reading for the safety check (busy GPUs are refused unless ``force``)."""
    report = ProbeReport(mode="gpu" if node is not None else "cpu")
    if node is None:
        targets = [Target(None, "cpu", "CPU")]
        if size_scale is None:
            size_scale = CPU_SIZE_SCALE
    else:
        indices = sorted(gpus) if gpus is not None else [g.index for g in node.gpus]
        cuda = cuda_index_map(node)
        if snapshot is not None and not force:
            own = (os.getpid(),)
            for i in indices:
                why = busy_reason(snapshot, i, own)
                if why:
                    report.refused.append(why)
            if report.refused:
                return report
        targets = [Target(i, f"cuda:{cuda[i]}", f"GPU {i}") for i in indices]
        for i in indices:
            info = node.gpu(i)
            if info is not None:
                report.specs[i] = _spec_info(info)  # type: ignore[assignment]
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
    report.judged = judge_runs(runs, node)
    return report


def progress_printer(stream: Any) -> EventCallback:
    """``on_event`` that writes one line per hello / result / retry / skip / error."""

    def show(gpu: int | None, msg: dict[str, Any]) -> None:
        who = "CPU" if gpu is None else f"GPU {gpu}"
        kind = msg["type"]
        if kind == "hello":
            text = f"{msg['device_name']} (torch {msg['torch_version']})"
        elif kind == "result":
            text = f"{msg['test']}: {msg['value']:.4g} {msg['unit']}"
        elif kind == "retry":
            text = f"{msg['test']}: {msg['reason']}, retrying smaller {msg.get('text', '')}"
        elif kind == "skipped":
            text = f"{msg['test']}: skipped ({msg['reason']})"
        elif kind == "error":
            text = f"error{' in ' + msg['test'] if msg.get('test') else ''}: {msg['message']}"
        else:
            return
        print(f"[{who}] {text}", file=stream, flush=True)

    return show
