"""``gputui check``: a few seconds, no load on the GPU, a verdict and an exit code.

Steps, each a function so tests can drive them: :func:`build_config` (options and environment to a
:class:`~gputui.health.HealthConfig`), :func:`take_readings` (two readings one second apart, so
rates and the slow tier are real, with the kernel log's XIDs fed in as events), :func:`evaluate`
(findings of the judged GPUs to a :class:`CheckResult`), then :func:`render_report` or
:meth:`CheckResult.to_dict` (``--json``, documented in ``docs/check-json.md``).

Exit codes: 0 healthy (only ok / info findings), 1 warnings, 2 a failure, no usable GPU or driver,
or a bad argument. ``--strict`` counts warnings as failures (verdict ``failed``, exit 2).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gputui.format import fmt_bytes_pair, fmt_pct, short_gpu_name
from gputui.model import SCHEMA_VERSION, SEVERITY_ORDER, Finding, GpuEvent, NodeInfo, Snapshot

EXIT_HEALTHY = 0
EXIT_WARNINGS = 1
EXIT_FAILED = 2

READINGS = 2
READING_GAP_S = 1.0
"""Two readings this far apart: rates (PCIe, NVLink) and the slow tier (ECC, remapped rows) are
real numbers, and the whole check stays near one second."""

SIM_NODE_AGE_S = 30.0
"""A simulated node is checked as if it had been up this long (a real node has been up a while
before a job lands on it), so the ``faulty`` scenario's GPU 3 has already fallen off the bus."""

CHECK_RULES: dict[str, str] = {
    "visible_devices": "fail: CUDA_VISIBLE_DEVICES names a GPU this node does not list",
    "probe": "warn (--probe): a probe result LOW against spec or the node's other GPUs, "
    "or the probe failed",
}
"""Rules of the check itself (on top of the health module's), accepted by ``--ignore`` too."""

CUDA_ORDER_NOTE = (
    "GPU numbers are NVML indices; CUDA numbers devices fastest-first unless "
    "CUDA_DEVICE_ORDER=PCI_BUS_ID, so CUDA's device 0 may be another GPU (UUIDs are exact)"
)
NO_GPU_VALUES = frozenset({"", "-1", "NoDevFiles", "none"})

KernelLogReader = Callable[[], "list[str] | None"]


def all_rules() -> dict[str, str]:
    """Rule id -> one-line description, for ``--ignore`` and ``--list-rules``."""
    from gputui.health import RULES

    rules = {rule_id: entry[1] for rule_id, entry in RULES.items()}
    rules.update(CHECK_RULES)
    return dict(sorted(rules.items()))


# -- choosing the GPUs ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Selection:
    """Which GPUs are judged, and why."""

    indices: frozenset[int] | None
    """None: every GPU of the node."""
    source: str
    """``all``, ``--gpus`` or ``CUDA_VISIBLE_DEVICES``."""
    unknown: tuple[str, ...] = ()
    """Entries naming no GPU of this node (only from CUDA_VISIBLE_DEVICES; --gpus rejects them)."""
    notes: tuple[str, ...] = ()


def split_gpu_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _match(token: str, node: NodeInfo) -> int | None:
    """An NVML index, a GPU UUID or a MIG UUID (or a unique prefix of one, as CUDA accepts)."""
    if token.isdigit():
        index = int(token)
        return index if node.gpu(index) is not None else None
    hits = set()
    for info in node.gpus:
        if info.uuid.startswith(token):
            hits.add(info.index)
        for mig in info.mig_devices:
            if mig.uuid.startswith(token):
                hits.add(info.index)
    return hits.pop() if len(hits) == 1 else None


def select_gpus(
    node: NodeInfo, gpus: str | None, environ: Mapping[str, str] | None = None
) -> Selection:
    """``--gpus`` wins; else ``CUDA_VISIBLE_DEVICES``; else every GPU. Raises ValueError when
    ``--gpus`` names a GPU this node does not have."""
    env = os.environ if environ is None else environ
    if gpus is not None:
        tokens = split_gpu_list(gpus)
        chosen = {t: _match(t, node) for t in tokens}
        bad = [t for t, i in chosen.items() if i is None]
        if bad or not tokens:
            have = ", ".join(str(g.index) for g in node.gpus) or "none"
            raise ValueError(
                f"--gpus {gpus}: no such GPU {', '.join(bad) or '(empty list)'} "
                f"(this node has GPUs {have}; indices or GPU-/MIG- UUIDs)"
            )
        return Selection(frozenset(i for i in chosen.values() if i is not None), "--gpus")
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return Selection(None, "all")
    if visible.strip() in NO_GPU_VALUES:
        return Selection(
            None,
            "all",
            notes=(f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU; judging all GPUs",),
        )
    indices: set[int] = set()
    unknown: list[str] = []
    notes: list[str] = []
    for token in split_gpu_list(visible):
        if not (token.isdigit() or token.startswith(("GPU-", "MIG-"))):
            notes.append(
                f"CUDA_VISIBLE_DEVICES: {token!r} is not a device; CUDA ignores it and after"
            )
            break  # CUDA stops at the first entry it cannot parse
        index = _match(token, node)
        if index is None:
            unknown.append(token)
        else:
            indices.add(index)
    if any(t.isdigit() for t in split_gpu_list(visible)) and (
        env.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID"
    ):
        notes.append(CUDA_ORDER_NOTE)
    return Selection(frozenset(indices), "CUDA_VISIBLE_DEVICES", tuple(unknown), tuple(notes))


# -- configuration and readings -------------------------------------------------------------------


def build_config(
    *,
    expect_gpus: int | None,
    selection: Selection,
    ignore: Iterable[str] = (),
    pre_job: bool = True,
):
    """The health configuration of a check (``pre_job=True``)."""
    from gputui import health

    return health.HealthConfig(
        expect_gpus=expect_gpus,
        gpus=selection.indices,
        ignore=frozenset(ignore),
        pre_job=pre_job,
        torch_cuda_version=health.torch_cuda_version(),
    )


def take_readings(
    sampler: Any,
    *,
    readings: int = READINGS,
    gap_s: float = READING_GAP_S,
    sleep: Callable[[float], None] = time.sleep,
) -> Snapshot:
    """``readings`` polls ``gap_s`` apart; the last snapshot carries the findings of them all."""
    snapshot = sampler.poll()
    for _ in range(readings - 1):
        sleep(gap_s)
        snapshot = sampler.poll()
    return snapshot


# -- the result -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GpuStatus:
    index: int
    name: str
    uuid: str
    status: str  # ok | warn | fail
    summary: str = ""


@dataclass(frozen=True, slots=True)
class CheckResult:
    hostname: str
    backend: str
    checked_gpus: tuple[int, ...]
    selection_source: str
    findings: tuple[Finding, ...]
    gpus: tuple[GpuStatus, ...]
    not_checked: tuple[str, ...]
    notes: tuple[str, ...]
    duration_s: float
    strict: bool = False
    node_gpu_count: int = 0
    kernel_events: tuple[GpuEvent, ...] = field(default=())

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    @property
    def verdict(self) -> str:
        if self.count("fail") or (self.strict and self.count("warn")):
            return "failed"
        return "warnings" if self.count("warn") else "healthy"

    @property
    def exit_code(self) -> int:
        return {"healthy": EXIT_HEALTHY, "warnings": EXIT_WARNINGS, "failed": EXIT_FAILED}[
            self.verdict
        ]

    def headline(self) -> str:
        verdict = self.verdict
        if verdict == "failed":
            n = self.count("fail") + (self.count("warn") if self.strict else 0)
            word = f"FAILED ({n})"
        elif verdict == "warnings":
            word = f"WARNINGS ({self.count('warn')})"
        else:
            word = "HEALTHY"
        n_gpus = len(self.checked_gpus)
        parts = [word, self.hostname, self.backend, f"{n_gpus} GPU{'s' if n_gpus != 1 else ''}"]
        line = " · ".join(parts)
        worst = [f for f in self.findings if SEVERITY_ORDER[f.severity] >= SEVERITY_ORDER["warn"]]
        if worst:  # the first line alone makes a useful drain reason
            line += f" · {_where(worst[0])}{worst[0].message}"[:200]
        return line

    def to_dict(self) -> dict[str, Any]:
        from gputui.model import to_jsonable

        return {
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "strict": self.strict,
            "hostname": self.hostname,
            "backend": self.backend,
            "checked_gpus": list(self.checked_gpus),
            "findings": [to_jsonable(f) for f in self.findings],
            "gpus": [
                {"index": g.index, "name": g.name, "uuid": g.uuid, "status": g.status}
                for g in self.gpus
            ],
            "not_checked": list(self.not_checked),
            "notes": list(self.notes),
            "duration_s": round(self.duration_s, 3),
            "schema_version": SCHEMA_VERSION,
        }


def _where(finding: Finding) -> str:
    """``GPU n: `` unless the message already names the GPU."""
    if finding.gpu_index is None or f"GPU {finding.gpu_index}" in finding.message:
        return ""
    return f"GPU {finding.gpu_index}: "


def evaluate(
    snapshot: Snapshot,
    selection: Selection,
    *,
    ignore: Iterable[str] = (),
    strict: bool = False,
    not_checked: Sequence[str] = (),
    duration_s: float = 0.0,
    kernel_events: Sequence[GpuEvent] = (),
) -> CheckResult:
    """The findings on the judged GPUs (node-wide ones always count), sorted worst first."""
    from gputui import health

    ignored = frozenset(ignore)
    node = snapshot.node
    judged = sorted(
        g.index for g in node.gpus if selection.indices is None or g.index in selection.indices
    )
    findings = [
        f
        for f in snapshot.findings
        if f.rule not in ignored and (f.gpu_index is None or f.gpu_index in judged)
    ]
    if "visible_devices" not in ignored:
        findings += [
            Finding(
                rule="visible_devices",
                severity="fail",
                message=f"CUDA_VISIBLE_DEVICES names {token}, which this node does not list",
                hint="the GPU may have fallen off the bus (check `nvidia-smi -L` and the kernel "
                "log), or the variable is stale",
                key=f"visible_devices:{token}",
                first_seen=snapshot.timestamp,
                last_seen=snapshot.timestamp,
            )
            for token in selection.unknown
        ]
    findings.sort(key=health.finding_sort_key)
    statuses = []
    for index in judged:
        info = node.gpu(index)
        assert info is not None
        severity = health.gpu_severity(findings, index)
        status = {"fail": "fail", "warn": "warn"}.get(severity, "ok")
        statuses.append(
            GpuStatus(index, info.name, info.uuid, status, _gpu_summary(snapshot, index))
        )
    return CheckResult(
        hostname=node.hostname,
        backend=node.backend,
        checked_gpus=tuple(judged),
        selection_source=selection.source,
        findings=tuple(findings),
        gpus=tuple(statuses),
        not_checked=tuple(not_checked),
        notes=selection.notes,
        duration_s=duration_s,
        strict=strict,
        node_gpu_count=len(node.gpus),
        kernel_events=tuple(kernel_events),
    )


def _gpu_summary(snapshot: Snapshot, index: int) -> str:
    sample = snapshot.sample(index)
    if sample is None:
        return "not read"
    if sample.lost:
        return sample.error or "lost"
    procs = snapshot.processes_on(index)
    users = sorted({p.user for p in procs if p.user})
    parts = [
        f"{fmt_pct(sample.utilization_gpu_pct)} busy",
        fmt_bytes_pair(sample.memory_used_bytes, sample.memory_total_bytes),
        f"{len(procs)} process{'es' if len(procs) != 1 else ''}"
        + (f" ({', '.join(users)})" if users else ""),
    ]
    return " · ".join(parts)


# -- the report -----------------------------------------------------------------------------------


def render_report(result: CheckResult) -> str:
    from gputui.report import render_findings

    lines = [result.headline(), "", *render_findings(result.findings)]
    lines += ["", "GPUs:"]
    width = max((len(short_gpu_name(g.name)) for g in result.gpus), default=0)
    for g in result.gpus:
        lines.append(
            f"  GPU {g.index:<2} {short_gpu_name(g.name):<{width}}  {g.status:<4}  {g.summary}"
        )
    if not result.gpus:
        lines.append("  none")
    lines += ["", _judged_line(result)]
    lines += [f"Note: {note}" for note in result.notes]
    if result.not_checked:
        lines.append("Not checked:")
        lines += [f"  - {item}" for item in result.not_checked]
    policy = "warnings fail (--strict)" if result.strict else "exit 0 healthy, 1 warnings, 2 failed"
    lines.append(f"Took {result.duration_s:.1f} s, no load put on the GPUs; {policy}.")
    return "\n".join(line.rstrip() for line in lines)


def _judged_line(result: CheckResult) -> str:
    gpus = ", ".join(str(i) for i in result.checked_gpus) or "none"
    if result.selection_source == "all":
        return f"Judged: GPUs {gpus} (all {result.node_gpu_count} of the node)."
    return (
        f"Judged: GPUs {gpus} (from {result.selection_source}; "
        f"the node has {result.node_gpu_count})."
    )


# -- the whole check ------------------------------------------------------------------------------


def run_check(
    spec: str,
    *,
    seed: int = 0,
    expect_gpus: int | None = None,
    gpus: str | None = None,
    strict: bool = False,
    ignore: Iterable[str] = (),
    as_json: bool = False,
    kernel_log: KernelLogReader | bool | None = True,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    environ: Mapping[str, str] | None = None,
    out: Any = None,
    probe: bool = False,
    probe_options: Mapping[str, Any] | None = None,
) -> int:
    """Open the backend, read twice, judge, print; returns the exit code.

    ``probe``: then run the quick probe on the judged GPUs and add its verdicts as findings
    (rule ``probe``); ``probe_options`` go to :func:`gputui.probe.runner.probe_node`.

    ``kernel_log``: True reads the kernel log (not for a simulated node), a callable reads it
    that way, None / False skips it. ``clock`` / ``sleep`` let tests run it instantly."""
    from gputui.backends import NoBackend, open_backend
    from gputui.cli import no_backend_message
    from gputui.health import HealthMonitor
    from gputui.sampler import Sampler

    out = out or sys.stdout
    started = time.monotonic()
    ignore = frozenset(ignore)
    if spec.startswith("replay:"):
        return run_replay_check(
            spec.partition(":")[2],
            expect_gpus=expect_gpus,
            gpus=gpus,
            strict=strict,
            ignore=ignore,
            as_json=as_json,
            out=out,
        )
    try:
        backend, node = open_backend(spec, seed=seed)
    except NoBackend as exc:
        print(no_backend_message(exc.reasons, spec), file=sys.stderr)
        return EXIT_FAILED
    try:
        try:
            selection = select_gpus(node, gpus, environ)
        except ValueError as exc:
            print(f"gputui check: {exc}", file=sys.stderr)
            return EXIT_FAILED
        simulated = node.backend.startswith("sim")
        if simulated:
            _age_simulated_node(backend, clock() - SIM_NODE_AGE_S)
        not_checked: list[str] = []
        events: list[GpuEvent] = []
        reader = _kernel_log_reader(kernel_log, simulated)
        if reader is None:
            if simulated and kernel_log is True:
                not_checked.append("kernel log: not read for a simulated node")
            else:
                not_checked.append("kernel log: not read (XIDs from before this check)")
        else:
            from gputui.xid import boot_time, kernel_log_xids

            lines = reader()
            if lines is None:
                not_checked.append(
                    "kernel log not readable (XIDs from before gputui started are not checked); "
                    "run as root or set kernel.dmesg_restrict=0"
                )
            else:
                # Stamped from the boot time, so each XID keeps the time it happened.
                events = list(kernel_log_xids(node, lines, boot_time=boot_time()))
        config = build_config(expect_gpus=expect_gpus, selection=selection, ignore=ignore)
        if config.torch_cuda_version is None:
            not_checked.append(
                "driver vs torch CUDA build: no CUDA build of torch in this Python environment"
            )
        monitor = HealthMonitor(config)
        monitor.add_events(events)  # judged with the first reading
        sampler = Sampler(
            backend,
            interval=READING_GAP_S,
            slow_interval=READING_GAP_S,
            clock=clock,
            node=node,
            health=monitor,
        )
        snapshot = take_readings(sampler, sleep=sleep)
        if probe and "probe" not in ignore:
            extra = probe_findings(
                snapshot, selection, sampler, simulated, not_checked, probe_options or {}
            )
            snapshot = replace(snapshot, findings=(*snapshot.findings, *extra))
    finally:
        backend.close()
    result = evaluate(
        snapshot,
        selection,
        ignore=ignore,
        strict=strict,
        not_checked=not_checked,
        duration_s=time.monotonic() - started,
        kernel_events=events,
    )
    return _emit(result, as_json=as_json, out=out)


def probe_findings(
    snapshot: Snapshot,
    selection: Selection,
    sampler: Any,
    simulated: bool,
    not_checked: list[str],
    options: Mapping[str, Any],
) -> list[Finding]:
    """``--probe``: the quick probe on the judged GPUs; LOW results and errors become warnings."""
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
    report = probe_node(node=node, snapshot=snapshot, gpus=judged, sampler=sampler, **options)
    now = snapshot.timestamp
    if report.refused:
        not_checked.append("probe: not run, " + " ".join(report.refused))
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
                )
            )
    return out


def _emit(result: CheckResult, *, as_json: bool, out: Any) -> int:
    if as_json:
        import json

        text = json.dumps(result.to_dict(), indent=2)
    else:
        text = render_report(result)
    try:
        print(text, file=out)
        out.flush()
    except BrokenPipeError:  # `gputui check | head -1`: the verdict still goes out as the status
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return result.exit_code


def run_replay_check(
    path: str,
    *,
    expect_gpus: int | None = None,
    gpus: str | None = None,
    strict: bool = False,
    ignore: Iterable[str] = (),
    as_json: bool = False,
    out: Any = None,
) -> int:
    """``gputui check --replay FILE``: every reading of a recording judged by a fresh health
    monitor; the verdict counts every finding listed at the end, cleared ones included (something
    that went wrong and recovered during the recording still fails it). Judged as a running node
    (not a pre-job check: a recording's own jobs are expected), without this machine's
    environment (Slurm, CUDA_VISIBLE_DEVICES, torch). Exit codes as :func:`run_check`; a file that
    is not a readable recording exits 2 with a message naming the line."""
    import dataclasses

    from gputui.backends.base import BackendUnavailable
    from gputui.backends.replay import ReplayBackend
    from gputui.format import fmt_duration
    from gputui.health import HealthConfig, HealthMonitor
    from gputui.history import History
    from gputui.record import RecordingError

    out = out or sys.stdout
    started = time.monotonic()
    ignore = frozenset(ignore)
    backend = ReplayBackend(path)
    try:
        node = backend.open()
    except BackendUnavailable as exc:
        print(f"gputui check: cannot replay: {exc}", file=sys.stderr)
        return EXIT_FAILED
    try:
        selection = select_gpus(node, gpus, {})
    except ValueError as exc:
        print(f"gputui check: {exc}", file=sys.stderr)
        return EXIT_FAILED
    config = HealthConfig(
        expect_gpus=expect_gpus, gpus=selection.indices, ignore=ignore, pre_job=False
    )
    monitor = HealthMonitor(config, env={})
    history = History()
    snapshot: Snapshot | None = None
    try:
        for reading in backend.snapshots():
            history.record(reading)
            snapshot = dataclasses.replace(reading, findings=monitor.update(reading, history))
    except RecordingError as exc:
        print(f"gputui check: cannot replay: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        backend.close()
    assert snapshot is not None  # open() refuses a recording without readings
    result = evaluate(
        snapshot,
        selection,
        ignore=ignore,
        strict=strict,
        not_checked=(
            "kernel log: not read for a recording (the XID events it recorded are judged)",
            "driver vs torch CUDA build: not judged for a recording",
        ),
        duration_s=time.monotonic() - started,
    )
    note = (
        f"replayed {backend.readings} readings of {path}, "
        f"{fmt_duration(backend.duration_s)} from "
        f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(backend.start))}"
    )
    result = dataclasses.replace(result, notes=(*result.notes, note))
    return _emit(result, as_json=as_json, out=out)


def _kernel_log_reader(kernel_log: Any, simulated: bool) -> KernelLogReader | None:
    if callable(kernel_log):
        return kernel_log
    if kernel_log is True and not simulated:
        from gputui.xid import read_kernel_log

        return read_kernel_log
    return None


def _age_simulated_node(backend: Any, start_time: float) -> None:
    from gputui.backends.sim import SimBackend

    if isinstance(backend, SimBackend) and backend.start_time is None:
        backend.start_time = start_time


def list_rules() -> str:
    rules = all_rules()
    width = max(len(r) for r in rules)
    return "\n".join(f"{rule:<{width}}  {text}" for rule, text in rules.items())


__all__ = [
    "CHECK_RULES",
    "CheckResult",
    "GpuStatus",
    "Selection",
    "all_rules",
    "build_config",
    "evaluate",
    "list_rules",
    "render_report",
    "run_check",
    "run_replay_check",
    "select_gpus",
    "take_readings",
]
