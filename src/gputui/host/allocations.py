"""The schedulers' allocations on this node, asked in the background and cached.

:class:`AllocationReader` keeps one answer per scheduler. A worker thread asks each source every
:data:`REFRESH_S` (Slurm: ``squeue`` and ``scontrol``, each with a timeout, their output bounded;
the kubelet: its checkpoint file, read again only when it changed); :meth:`AllocationReader.reading`
answers from the cache at once and never waits, so the polling thread never does. A scheduler
that does not answer keeps its last answer for :data:`STALE_AFTER_S` (``stale``, saying why), then
goes silent (``unreachable``): its allocations are left out rather than guessed.

Which sources (:func:`reader_for`): the kubelet's checkpoint where the file exists (or
``GPUTUI_KUBELET_CHECKPOINT`` names one: then on any backend, a simulated one included), and Slurm
where ``scontrol`` and ``squeue`` are installed and this is a Slurm node (``SLURM_CONF`` or
``SLURMD_NODENAME`` set, a ``slurm.conf`` in its usual places, or ``slurmd`` running), on a node
with real GPUs. Helpers still running when the reader is closed are killed
(:mod:`gputui.host.children`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from gputui.core.allocation import Grant, Scheduler, SchedulerReading, SchedulerStatus
from gputui.core.frozen import frozen
from gputui.host import children
from gputui.host.attribution import AttributionReader
from gputui.host.kubealloc import (
    CHECKPOINT,
    DEFAULT_KUBELET_ROOT,
    CheckpointError,
    read_checkpoint,
)
from gputui.host.kubealloc import (
    grants_of as pod_grants,
)
from gputui.host.slurmalloc import grants_of as job_grants
from gputui.host.slurmalloc import listed_jobs, node_name, parse_jobs

REFRESH_S = 15.0
"""How often each scheduler is asked."""
STALE_AFTER_S = 120.0
"""How long an answer is used after the scheduler stopped answering."""
TIMEOUT_S = 10.0
"""How long one ``scontrol`` or ``squeue`` may take."""
MAX_OUTPUT_CHARS = 64 << 20
"""The most of ``scontrol show job -d -o`` read (about 64,000 jobs' lines)."""
CHECKPOINT_ENV = "GPUTUI_KUBELET_CHECKPOINT"
SLURM_CONF_PLACES = (
    "/etc/slurm/slurm.conf",
    "/etc/slurm-llnl/slurm.conf",
    "/run/slurm/conf/slurm.conf",
)


@frozen
class Answer:
    """One source's answer: its grants, or None when it did not answer (``message`` says why)."""

    grants: tuple[Grant, ...] | None
    message: str = ""
    node: str | None = None


class Source(Protocol):
    scheduler: Scheduler

    def ask(self) -> Answer: ...

    def close(self) -> None: ...


class SlurmSource:
    """The GPUs each job holds on this node: ``squeue`` (the job ids here), then ``scontrol show
    job -d -o`` (their detail), see :mod:`gputui.host.slurmalloc`."""

    scheduler: Scheduler = "slurm"

    def __init__(
        self,
        scontrol: str,
        squeue: str,
        node: str,
        *,
        timeout_s: float = TIMEOUT_S,
        max_chars: int = MAX_OUTPUT_CHARS,
    ) -> None:
        self.scontrol, self.squeue, self.node = scontrol, squeue, node
        self.timeout_s, self.max_chars = timeout_s, max_chars
        self._lock = threading.Lock()
        self._running: subprocess.Popen[str] | None = None
        self._closed = False

    def ask(self) -> Answer:
        states = "RUNNING,SUSPENDED,COMPLETING"
        listed = self._run(
            [
                self.squeue,
                "--noheader",
                f"--nodelist={self.node}",
                f"--states={states}",
                "--format=%A",
            ]
        )
        if isinstance(listed, str):
            return Answer(None, listed, self.node)
        shown = self._run([self.scontrol, "show", "job", "-d", "-o"])
        if isinstance(shown, str):
            return Answer(None, shown, self.node)
        parsed = parse_jobs(shown[1], self.node, listed_jobs(listed[1]))
        jobs = len(parsed.jobs)
        message = f"{jobs} job{'s' if jobs != 1 else ''} with GPUs on node {self.node}"
        if parsed.rejected:
            message += (
                f"; {parsed.rejected} job line(s) left out as ambiguous (a job's name or path "
                "imitates scontrol's fields)"
            )
        return Answer(job_grants(parsed.jobs), message, self.node)

    def _run(self, argv: list[str]) -> tuple[int, str] | str:
        """(status, stdout) of a helper that succeeded, else why not."""
        tool = os.path.basename(argv[0])
        with self._lock:
            if self._closed:
                return "closed"
            try:
                proc = self._running = children.start(argv)
            except OSError as exc:
                return f"{tool} could not be started ({exc.strerror or exc})"
        try:
            answer = children.bounded_output(proc, self.timeout_s, self.max_chars)
        finally:
            with self._lock:
                self._running = None
        if answer is None:
            return f"{tool} did not answer within {self.timeout_s:g} s (or wrote too much)"
        status, out, err = answer
        if status != 0:
            why = " ".join(err.split())[:300] or f"exit status {status}"
            return f"{tool} failed: {why}"
        return status, out

    def close(self) -> None:
        with self._lock:
            self._closed = True
            proc = self._running
        if proc is not None:
            children.stop(proc)


class KubeletSource:
    """The kubelet's device-plugin checkpoint (:mod:`gputui.host.kubealloc`), read again when it
    changes; pod names from the kubelet's pod directories where this node shows them."""

    scheduler: Scheduler = "kubernetes"

    def __init__(self, path: str, kubelet_root: str | None = None) -> None:
        self.path = path
        root = kubelet_root or os.path.dirname(os.path.dirname(os.path.abspath(path)))
        self._pods = AttributionReader(kubelet_root=root)
        self._stamp: tuple[int, int, int] | None = None
        self._answer: Answer | None = None

    def ask(self) -> Answer:
        try:
            st = os.stat(self.path)
        except OSError as exc:
            return Answer(None, f"no device-plugin checkpoint at {self.path} ({exc.strerror})")
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if stamp == self._stamp and self._answer is not None:
            return self._answer
        try:
            entries = read_checkpoint(self.path)
        except CheckpointError as exc:
            return Answer(None, str(exc))
        pods = {e.pod_uid: self._pods.pod_name(e.pod_uid) for e in entries}
        grants = pod_grants(entries, pods)
        count = len({e.pod_uid for e in entries})
        self._stamp = stamp
        self._answer = Answer(grants, f"{count} pod{'s' if count != 1 else ''} with GPUs")
        return self._answer

    def close(self) -> None:
        pass


@dataclass(slots=True)
class _Kept:
    status: SchedulerStatus
    grants: tuple[Grant, ...] = ()


class AllocationReader:
    """Each source's latest answer, kept fresh by a background worker (see the module doc)."""

    def __init__(
        self,
        sources: list[Source],
        *,
        refresh_s: float = REFRESH_S,
        stale_after_s: float = STALE_AFTER_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.sources = list(sources)
        self.refresh_s = refresh_s
        self.stale_after_s = stale_after_s
        self._clock = clock
        self._lock = threading.Lock()
        self._kept = {
            s.scheduler: _Kept(SchedulerStatus(s.scheduler, "waiting", "asked"))
            for s in self.sources
        }
        self._rounds = 0
        self._answered = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def reading(self) -> SchedulerReading:
        """What the schedulers said last; never waits (the first call starts the worker)."""
        self._start()
        with self._lock:
            kept = list(self._kept.values())
        return SchedulerReading(
            statuses=tuple(k.status for k in kept),
            grants=tuple(g for k in kept for g in k.grants),
        )

    def wait_answered(self, timeout: float) -> bool:
        """Wait until every source has been asked once (one-shot commands); False on timeout."""
        self._start()
        end = time.monotonic() + timeout
        with self._answered:
            while self._rounds == 0:
                left = end - time.monotonic()
                if left <= 0 or self._stop.is_set():
                    return False
                self._answered.wait(left)
        return True

    def refresh_now(self) -> None:
        """Ask again without waiting for the next round (tests)."""
        self._wake.set()

    def _start(self) -> None:
        with self._lock:
            if self._thread is not None or self._stop.is_set():
                return
            self._thread = threading.Thread(
                target=self._work, name="gputui-allocations", daemon=True
            )
            self._thread.start()

    def _work(self) -> None:
        while not self._stop.is_set():
            for source in self.sources:
                if self._stop.is_set():
                    return
                try:
                    answer = source.ask()
                except Exception as exc:  # a source's bug must not end the worker
                    answer = Answer(None, f"error: {exc}")
                self._keep(source.scheduler, answer)
            with self._answered:
                self._rounds += 1
                self._answered.notify_all()
            self._wake.wait(self.refresh_s)
            self._wake.clear()

    def _keep(self, scheduler: Scheduler, answer: Answer) -> None:
        now = self._clock()
        with self._lock:
            kept = self._kept[scheduler]
            if answer.grants is not None:
                status = SchedulerStatus(scheduler, "ok", answer.message, now, answer.node)
                self._kept[scheduler] = _Kept(status, answer.grants)
                return
            last = kept.status.answered_at
            if (
                last is not None
                and now - last <= self.stale_after_s
                and kept.status.state in ("ok", "stale")
            ):
                status = SchedulerStatus(scheduler, "stale", answer.message, last, answer.node)
                self._kept[scheduler] = _Kept(status, kept.grants)
            else:
                status = SchedulerStatus(
                    scheduler, "unreachable", answer.message, last, answer.node
                )
                self._kept[scheduler] = _Kept(status, ())

    def close(self) -> None:
        """Stop asking; kill a helper still running."""
        self._stop.set()
        self._wake.set()
        for source in self.sources:
            source.close()


def _slurm_node(environ: Mapping[str, str], proc_root: str) -> bool:
    """Whether this looks like a Slurm node (not merely a machine with Slurm's client)."""
    if environ.get("SLURM_CONF") or environ.get("SLURMD_NODENAME"):
        return True
    if any(os.path.exists(p) for p in SLURM_CONF_PLACES):
        return True
    try:
        pids = [p for p in os.listdir(proc_root) if p.isdigit()]
    except OSError:
        return False
    for pid in pids:
        try:
            with open(
                os.path.join(proc_root, pid, "comm"), encoding="utf-8", errors="replace"
            ) as f:
                if f.read(64).strip() == "slurmd":
                    return True
        except OSError:
            continue
    return False


def reader_for(
    environ: Mapping[str, str] | None = None,
    *,
    real_gpus: bool,
    proc_root: str = "/proc",
    which: Callable[[str], str | None] = shutil.which,
) -> AllocationReader | None:
    """The reader of the schedulers this node has (see the module doc); None when it has
    none."""
    env = os.environ if environ is None else environ
    sources: list[Source] = []
    named = env.get(CHECKPOINT_ENV, "").strip()
    if named:
        sources.append(KubeletSource(named))
    elif real_gpus:
        default = os.path.join(DEFAULT_KUBELET_ROOT, CHECKPOINT)
        if os.path.exists(default):
            sources.append(KubeletSource(default, DEFAULT_KUBELET_ROOT))
    if real_gpus:
        scontrol, squeue = which("scontrol"), which("squeue")
        if scontrol and squeue and _slurm_node(env, proc_root):
            sources.append(SlurmSource(scontrol, squeue, node_name(env)))
    return AllocationReader(sources) if sources else None


__all__ = [
    "CHECKPOINT_ENV",
    "REFRESH_S",
    "STALE_AFTER_S",
    "TIMEOUT_S",
    "AllocationReader",
    "Answer",
    "KubeletSource",
    "SlurmSource",
    "Source",
    "reader_for",
]
