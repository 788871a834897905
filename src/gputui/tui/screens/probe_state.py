"""The probe screen's state of a run: what each device has reported so far, folded from the
workers' protocol messages, judged against the spec and told in a few sentences.

No widgets here: :class:`ProbeRunState` is what the screen shows, kept apart from how.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gputui.core.frozen import frozen
from gputui.core.model import NodeInfo, Snapshot, describe_throttle
from gputui.probe.protocol import (
    WARMUP,
    Done,
    Error,
    Hello,
    JsonObject,
    ProbeMessage,
    Progress,
    Result,
    Retry,
    Skipped,
)
from gputui.probe.report import finish_judging, judge_result
from gputui.probe.specref import SpecRef, spec_for
from gputui.probe.verdict import LOW, WARN, Judged, describe

CPU_LABEL = "CPU"
CPU_RUN_TEXT = (
    "CPU run: the simulated node has no real GPU, so the probe measures this machine's CPU "
    "(values only, no spec comparison)"
)
"""What the screen says of a CPU run (its title; the summary and the table say "CPU run" too)."""
TEST_NAMES: dict[str, str] = {
    "memory_copy": "memory copy",
    "memory_triad": "memory triad",
    "h2d": "host → device",
    "d2h": "device → host",
    "p2p": "P2P GPU ↔ GPU",
    "matmul_fp32": "FP32 matmul",
    "matmul_tf32": "TF32 matmul",
    "matmul_fp16": "FP16 matmul",
    "matmul_bf16": "BF16 matmul",
    "matmul_fp8": "FP8 matmul",
}


def human_test_name(test: str) -> str:
    """A test id in words (``matmul_bf16`` -> ``BF16 matmul``)."""
    return TEST_NAMES.get(test, test)


def device_label(gpu: int | None) -> str:
    return CPU_LABEL if gpu is None else f"GPU {gpu}"


NO_GPU_TORCH = (
    "Its Python's torch cannot use the GPU (a CPU-only build, or one that sees no GPU): run "
    "`gputui probe --python PATH` with a Python whose torch has CUDA (or ROCm), or install "
    "such a build of torch for this one."
)
NO_TORCH = (
    "Its Python has no torch: install it (pip install torch), or run `gputui probe --python "
    "PATH` with a Python that has it."
)
OTHER_FAILURE = "`gputui probe --gpus N` on the command line shows the worker's own output."


def failure_advice(error: str) -> str:
    """What to do about a run that failed with ``error`` (the worker's or the runner's words)."""
    text = error.lower()
    if "cpu-only build" in text or "sees no gpu" in text:
        return NO_GPU_TORCH
    if "torch is not installed" in text or "no module named" in text:
        return NO_TORCH
    return OTHER_FAILURE


@frozen
class ResultRow:
    gpu: int | None
    test: str
    value: float
    unit: str
    method: str
    details: JsonObject = field(default_factory=dict)  # "peer" for P2P: the destination GPU

    @property
    def result(self) -> Result:
        return Result(self.test, self.value, self.unit, self.method, dict(self.details))


@dataclass
class DeviceRun:
    """What one probed device has reported so far."""

    gpu: int | None
    tests: list[str]
    device_name: str = ""
    test: str = ""
    fraction: float = 0.0
    text: str = ""
    finished: set[str] = field(default_factory=set)
    done: bool = False
    cancelled: bool = False
    error: str = ""
    throttles: set[str] = field(default_factory=set)
    min_sm_clock: int | None = None

    @property
    def failed(self) -> bool:
        """Ended with an error of the whole run (the worker could not start, open its device,
        or died), or without a single test done; not when cancelled."""
        return self.done and not self.cancelled and (bool(self.error) or not self.finished)

    @property
    def progress(self) -> float:
        """The share done: all of it once done, or as far as it got when it failed."""
        n = max(len(self.tests), 1)
        if self.done and not self.failed:
            return 1.0
        current = 0.0 if self.done or self.test in self.finished else self.fraction
        return min((len(self.finished) + current) / n, 1.0)


class ProbeRunState:
    """Every device of the current run, the results so far and the notes for the summary."""

    def __init__(self, node: NodeInfo) -> None:
        self.node = node
        """The node as of the latest reading (its wiring judges the P2P pairs)."""
        self.runs: dict[int | None, DeviceRun] = {}
        self.results: list[ResultRow] = []
        self.notes: list[str] = []
        """Retries and errors of single tests in words, for the summary (one a line)."""
        self.skipped: list[str] = []
        """``GPU 0 · FP8 matmul: FP8 needs …``: each test skipped, with its reason."""
        self._specs: dict[int, SpecRef] = {}

    @property
    def running(self) -> bool:
        return bool(self.runs) and not all(run.done for run in self.runs.values())

    def begin(
        self, targets: Sequence[int | None], tests: Sequence[str], snapshot: Snapshot | None
    ) -> None:
        """Forget the last run; look up the spec of every GPU in the new one."""
        if snapshot is not None:
            self.node = snapshot.node
        self.runs = {g: DeviceRun(g, list(tests)) for g in targets}
        self.results = []
        self.notes = []
        self.skipped = []
        self._specs = {}
        for gpu in targets:
            info = self.node.gpu(gpu) if gpu is not None else None
            if gpu is not None and info is not None:
                self._specs[gpu] = spec_for(info)

    def apply(self, gpu: int | None, msg: ProbeMessage) -> None:
        """Fold one message from the worker probing ``gpu`` into the run."""
        run = self.runs.get(gpu)
        if run is None:
            return
        who = device_label(gpu)
        match msg:
            case Hello(device_name=name, tests=tests):
                run.device_name = name
                if tests:
                    run.tests = list(tests)
            case Progress(test=test, fraction=fraction, text=text):
                run.test, run.fraction, run.text = test, fraction, text
            case Result(test=test, value=value, unit=unit, method=method, details=details):
                run.finished.add(test)
                run.test, run.fraction = test, 1.0
                self.results.append(ResultRow(gpu, test, value, unit, method, dict(details)))
            case Skipped(test=test, reason=reason) if test == WARMUP:
                self.notes.append(f"{who}: warm-up skipped ({reason})")
            case Skipped(test=test, reason=reason):
                run.finished.add(test)
                self.skipped.append(f"{who} · {human_test_name(test)}: {reason}")
            case Retry(text=size):
                run.text = f"out of memory, retrying smaller {size}".rstrip()
            case Error(test=test, message=message) if not msg.cancelled and test:
                self.notes.append(f"{who}: {human_test_name(test)} failed: {message}")
                run.finished.add(test)
            case Error(message=message) if not msg.cancelled:
                run.error = message  # the run failed as a whole: its summary line says so
            case Done(cancelled=cancelled):
                run.done = True
                run.cancelled = cancelled

    def observe(self, snapshot: Snapshot) -> None:
        """A reading: the node as of now; during a run, throttling and the lowest SM clock."""
        self.node = snapshot.node
        if not self.running:
            return
        for gpu, run in self.runs.items():
            sample = snapshot.sample(gpu) if gpu is not None else None
            if sample is None or sample.lost:
                continue
            if sample.throttle_reasons:
                run.throttles |= set(sample.throttle_reasons) - {"gpu_idle"}
            clock = sample.clock_sm_mhz
            if clock is not None and (run.min_sm_clock is None or clock < run.min_sm_clock):
                run.min_sm_clock = clock

    def judged(self) -> list[Judged]:
        """Every result judged as the command judges it (:func:`~gputui.probe.report.
        judge_result`): spec, expected fraction with its source, verdict, the judgement in
        words, and on several GPUs the sibling rule (LOW below 90% of the node's best)."""
        out = [
            judge_result(r.gpu, device_label(r.gpu), r.result, self.node, None, self._spec(r.gpu))
            for r in self.results
        ]
        finish_judging(out, self.node)
        return out

    def _spec(self, gpu: int | None) -> SpecRef | None:
        if gpu is None:
            return None
        if gpu not in self._specs:
            info = self.node.gpu(gpu)
            if info is None:
                return None
            self._specs[gpu] = spec_for(info)
        return self._specs[gpu]

    def summary(self) -> str:
        """A few plain sentences: per GPU the worst results, why when telemetry tells; a failed
        run, why and what to do; then each skipped test with its reason and each other note,
        one a line."""
        parts: list[str] = []
        failures: list[str] = []
        by_gpu: dict[int | None, list[Judged]] = {}
        for j in self.judged():
            by_gpu.setdefault(j.gpu, []).append(j)
        for gpu, run in self.runs.items():
            who = device_label(gpu)
            rows = by_gpu.get(gpu, [])
            if run.cancelled:
                parts.append(f"{who}: cancelled after {len(rows)} results.")
                continue
            if run.failed:
                why = run.error or "the run ended without a result"
                failures.append(f"{who} failed: {why.rstrip('.')}. {failure_advice(why)}")
                continue
            if gpu is None:
                n = len(rows)
                parts.append(
                    f"CPU run: {n} result{'s' if n != 1 else ''} measured on this machine's CPU, "
                    "not on a GPU (the simulated node has none); values only, no spec comparison."
                )
                continue
            bad = sorted(
                (j for j in rows if j.verdict in (LOW, WARN)), key=lambda j: j.verdict != LOW
            )
            if not rows:
                parts.append(f"{who}: no results.")
            elif not bad:
                parts.append(f"{who}: all {len(rows)} results as expected.")
            else:
                words = "; ".join(f"{describe(j)} ({j.verdict})" for j in bad)
                why = self._why(run)
                parts.append(f"{who}: {words}{f'; {why}' if why else ''}.")
        lines = [" ".join(parts)] if parts else []
        lines += failures
        if self.skipped:
            lines.append("Skipped:")
            lines += [f"  {line}" for line in self.skipped]
        lines += self.notes
        return "\n".join(lines)

    def _why(self, run: DeviceRun) -> str:
        if not run.throttles:
            return ""
        info = self.node.gpu(run.gpu) if run.gpu is not None else None
        reasons = describe_throttle(frozenset(run.throttles))
        clock = run.min_sm_clock
        limit = info.sm_clock_max_mhz if info is not None else None
        if clock is not None and limit and clock < limit:
            return f"SM clock down to {clock} MHz by {reasons}"
        return f"throttled: {reasons}"
