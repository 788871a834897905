"""The minutes around an incident: a ring of recent readings and, when a ``fail`` finding begins,
one recording of the readings from ``before`` seconds before it to ``after`` seconds after.

:class:`IncidentWatcher` is a sampler listener. On the polling thread it only encodes the reading
(the line a recording holds), keeps it in a ring bounded by time (the before-window), count and
bytes, and hands lines to a writer thread through a queue bounded in bytes: a slow or hung disk
costs readings in the incident file (counted, said once), never a late refresh.

What starts an incident (:class:`Onsets`): a finding of severity ``fail`` that was not active as a
failure at the previous reading, told by its ``key``. A condition (GPU lost, link down, throttle,
not responding, row remap failure...) counts again once it was not failing for at least one
reading (cleared, or milder). An event finding (XID, ECC or GPU-lost event) stays listed while
the session runs, so it counts again when a new event of the same key arrives (its ``last_seen``
moves on); the same event seen in several readings is one occurrence. What is already failing at
the first reading is the baseline, not an incident: nothing before it was seen, and a restarted
exporter would otherwise write the same file at every start.

Joining: a trigger while an incident is open (before its after-window ends) joins it and moves
the end to its own time plus ``after``, up to :data:`MAX_SPAN_AFTERS` after-windows past the
first trigger; a trigger after the end starts a new file (whose before-window may repeat the end
of the last one).

Files: ``HOST_YYYYmmddTHHMMSSZ_RULE-gpuN.jsonl.gz`` (UTC, the first trigger's reading), only
``[A-Za-z0-9.-]`` in the host and ``[a-z0-9-]`` in the rule, ``_2``, ``_3``... when taken;
created exclusively, never through a link. After each file the directory is pruned to
``max_files`` and ``max_bytes``, oldest first, among the regular files whose names this module
writes (:data:`INCIDENT_NAME`); the newest is kept.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import math
import os
import re
import stat
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from gputui.core.files import os_reason
from gputui.core.frozen import frozen
from gputui.core.model import Finding, NodeInfo, Snapshot
from gputui.core.record import Recorder, snapshot_line
from gputui.health.rollup import finding_key, sorted_findings
from gputui.health.rules import EVENT_RULES
from gputui.settings.model import IncidentSettings

log = logging.getLogger(__name__)

_DEFAULTS = IncidentSettings()
DEFAULT_BEFORE_S = _DEFAULTS.before
DEFAULT_AFTER_S = _DEFAULTS.after
DEFAULT_MAX_FILES = _DEFAULTS.max_files
DEFAULT_MAX_BYTES = _DEFAULTS.max_bytes
RING_READINGS = 3600
"""Readings the ring holds at most (an hour at one a second)."""
RING_BYTES = 64 << 20
"""Encoded bytes the ring holds at most (about 2,000 readings of a DGX H100, ~33 kB each)."""
PENDING_BYTES = 64 << 20
"""Bytes waiting for the writer at most; beyond, readings are left out of the incident file."""
MAX_SPAN_AFTERS = 10
"""An incident extended by later triggers ends at most this many after-windows past its first."""
CLOSE_WAIT_S = 10.0
"""How long :meth:`IncidentWatcher.close` waits for the writer to finish the last file."""
_EPS = 1e-6
_MAX_COUNTER = 1000

INCIDENT_NAME = re.compile(
    r"^[A-Za-z0-9.-]{1,64}_(?P<stamp>\d{8}T\d{6}Z)_[a-z0-9-]{1,48}"
    r"(?:_(?P<n>\d{1,4}))?\.jsonl\.gz$"
)
"""The names incident files get; only files named so are ever pruned."""


# -- names ----------------------------------------------------------------------------------------


def _safe(text: str, allowed: str, limit: int, fallback: str) -> str:
    """``text`` with every run of characters outside ``allowed`` as one ``-``, no ``..``, no
    leading or trailing ``.`` / ``-``, at most ``limit`` characters."""
    out = re.sub(rf"[^{allowed}]+", "-", text)
    out = re.sub(r"\.{2,}", ".", out).strip(".-")[:limit].strip(".-")
    return out or fallback


def incident_name(hostname: str, when: float, finding: Finding, counter: int = 1) -> str:
    """``dgx-h100-07_20261127T045812Z_xid-gpu5.jsonl.gz`` (``_N`` before the suffix from 2 on).
    Whatever the hostname and rule hold, the name is one path component of safe characters."""
    host = _safe(hostname, "A-Za-z0-9.-", 64, "host")
    rule = _safe(finding.rule.lower().replace("_", "-"), "a-z0-9-", 40, "finding")
    where = "node" if finding.gpu_index is None else f"gpu{finding.gpu_index}"
    safe_when = when if math.isfinite(when) and 0 <= when < 1e11 else 0.0
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(safe_when))
    suffix = f"_{counter}" if counter > 1 else ""
    return f"{host}_{stamp}_{rule}-{where}{suffix}.jsonl.gz"


# -- what starts an incident ----------------------------------------------------------------------


class Onsets:
    """Tells, reading by reading, which ``fail`` findings begin (see the module docstring)."""

    def __init__(self) -> None:
        self._failing: dict[str, float | None] | None = None
        """Key -> last_seen (event findings) or None, of the failing findings last time."""

    def take(self, findings: Iterable[Finding]) -> list[Finding]:
        """The findings of this reading that begin a failure, most telling first (none at the
        first reading: the baseline)."""
        previous = self._failing
        current: dict[str, float | None] = {}
        new: list[Finding] = []
        for finding in findings:
            if not finding.active or finding.severity != "fail":
                continue
            key = finding_key(finding)
            mark = finding.last_seen if finding.rule in EVENT_RULES else None
            current[key] = mark
            if previous is None:
                continue
            if key not in previous:
                new.append(finding)
            elif mark is not None and (seen := previous[key]) is not None and mark > seen:
                new.append(finding)  # a new event of the same key
        self._failing = current
        return sorted_findings(new)


# -- the ring -------------------------------------------------------------------------------------


class ReadingRing:
    """The encoded readings of the last ``window_s`` seconds (by their timestamps), at most
    ``max_readings`` of them and ``max_bytes`` in all (the newest always stays)."""

    def __init__(self, window_s: float, max_readings: int, max_bytes: int) -> None:
        self.window_s = window_s
        self.max_readings = max(1, max_readings)
        self.max_bytes = max_bytes
        self._items: deque[tuple[float, str]] = deque()
        self._bytes = 0

    def add(self, timestamp: float, line: str) -> None:
        if self._items and timestamp < self._items[-1][0]:
            self.clear()  # the clock went back: what is held is no longer "before"
        self._items.append((timestamp, line))
        self._bytes += len(line)
        cutoff = timestamp - self.window_s - _EPS
        items = self._items
        while len(items) > 1 and (
            items[0][0] < cutoff or len(items) > self.max_readings or self._bytes > self.max_bytes
        ):
            self._bytes -= len(items.popleft()[1])

    def clear(self) -> None:
        self._items.clear()
        self._bytes = 0

    def lines(self) -> list[str]:
        return [line for _, line in self._items]

    def timestamps(self) -> list[float]:
        return [t for t, _ in self._items]

    @property
    def newest(self) -> float | None:
        return self._items[-1][0] if self._items else None

    @property
    def bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)


# -- incidents and their writer -------------------------------------------------------------------


@frozen
class IncidentPolicy:
    """The windows and bounds (the ``[incidents]`` settings and the options)."""

    before_s: float = DEFAULT_BEFORE_S
    after_s: float = DEFAULT_AFTER_S
    max_files: int = DEFAULT_MAX_FILES
    max_bytes: int = DEFAULT_MAX_BYTES
    ring_readings: int = RING_READINGS
    ring_bytes: int = RING_BYTES
    pending_bytes: int = PENDING_BYTES

    @classmethod
    def of(cls, settings: IncidentSettings) -> IncidentPolicy:
        return cls(settings.before, settings.after, settings.max_files, settings.max_bytes)


@dataclass(eq=False)
class Incident:
    """One incident file: its triggers, its window and, once written, its path."""

    node: NodeInfo
    at: float
    """The first trigger's reading."""
    end: float
    """Readings up to this time belong to it."""
    limit: float
    """How far later triggers may move :attr:`end`."""
    triggers: list[Finding]
    path: str | None = None
    readings: int = 0
    """Readings written to the file."""
    dropped: int = 0
    """Readings left out: the writer was too far behind."""
    error: str | None = None
    """Why the file could not be written (what was written before stays, and replays)."""
    done: bool = False

    @property
    def trigger(self) -> Finding:
        return self.triggers[0]


Report = Callable[[str], None]
Written = Callable[[Incident], None]


@dataclass(eq=False)
class _Job:
    incident: Incident
    lines: list[str]
    close: bool = False
    size: int = 0


@dataclass
class _Queue:
    """Jobs for the writer, bounded in bytes (the caller never waits for the disk)."""

    limit: int
    jobs: deque[_Job] = field(default_factory=deque)
    size: int = 0
    busy: bool = False
    """The writer is doing a job taken off :attr:`jobs`."""
    cv: threading.Condition = field(default_factory=threading.Condition)


class IncidentWatcher:
    """A sampler listener that writes an incident file in ``directory`` around each incident.

    ``on_written(incident)`` and ``on_problem(text)`` are called on the writer thread (the first
    problem of each kind only). :meth:`close` ends an incident still open (with the readings it
    has) and waits a bounded time for the file."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        policy: IncidentPolicy | None = None,
        *,
        on_written: Written | None = None,
        on_problem: Report | None = None,
    ) -> None:
        self.directory = os.fspath(directory)
        self.policy = policy if policy is not None else IncidentPolicy()
        self.on_written = on_written
        self.on_problem = on_problem
        p = self.policy
        self.ring = ReadingRing(p.before_s, p.ring_readings, p.ring_bytes)
        self.onsets = Onsets()
        self.incidents: list[Incident] = []
        """Every incident begun, in order."""
        self.removed: list[str] = []
        """Names of older incident files pruned to keep the directory's bounds."""
        self._lock = threading.Lock()
        self._current: Incident | None = None
        self._queue = _Queue(p.pending_bytes)
        self._thread: threading.Thread | None = None
        self._closed = False
        self._said: set[str] = set()

    # -- the polling thread ----------------------------------------------------------------------

    def observe(self, snapshot: Snapshot, line: str | None = None) -> None:
        """Take one reading (``line``: its :func:`snapshot_line`, when already encoded)."""
        if line is None:
            line = snapshot_line(snapshot)
        t = snapshot.timestamp
        with self._lock:
            if self._closed:
                return
            current = self._current
            newest = self.ring.newest
            went_back = newest is not None and t < newest
            self.ring.add(t, line)
            onsets = self.onsets.take(snapshot.findings)
            if current is not None and (went_back or t > current.end + _EPS):
                self._finish(current)
                current = None
            if current is not None:
                self._send(_Job(current, [line]))
                if onsets:
                    current.triggers += onsets
                    current.end = min(max(current.end, t + self.policy.after_s), current.limit)
            elif onsets:
                after = self.policy.after_s
                current = Incident(
                    node=snapshot.node,
                    at=t,
                    end=t + after,
                    limit=t + MAX_SPAN_AFTERS * after,
                    triggers=list(onsets),
                )
                self.incidents.append(current)
                self._send(_Job(current, self.ring.lines()))
            self._current = current

    __call__ = observe  # usable as ``sampler.add_listener(watcher)``

    def _finish(self, incident: Incident) -> None:
        self._send(_Job(incident, [], close=True))
        self._current = None

    def _send(self, job: _Job) -> None:
        job.size = sum(len(line) for line in job.lines)
        queue = self._queue
        with queue.cv:
            if job.lines and queue.size + job.size > queue.limit:
                job.incident.dropped += len(job.lines)  # the disk is behind: never wait for it
                return
            queue.jobs.append(job)
            queue.size += job.size
            queue.cv.notify()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="gputui-incidents", daemon=True)
            self._thread.start()

    # -- the end ---------------------------------------------------------------------------------

    def close(self, timeout: float = CLOSE_WAIT_S) -> bool:
        """End the open incident and wait up to ``timeout`` s for the writer; False when it has
        not finished (a hung disk: the file is left as far as it got)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                if self._current is not None:
                    self._finish(self._current)
        return self.wait(timeout)

    def wait(self, timeout: float = CLOSE_WAIT_S) -> bool:
        """Wait until the writer has done every job sent so far; False after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        queue = self._queue
        with queue.cv:
            while queue.jobs or queue.busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                queue.cv.wait(left)
        return True

    @property
    def written(self) -> list[Incident]:
        """The incidents whose files are complete."""
        return [i for i in self.incidents if i.done and i.error is None and i.path is not None]

    @property
    def failed(self) -> list[Incident]:
        return [i for i in self.incidents if i.error is not None]

    # -- the writer thread -----------------------------------------------------------------------

    def _run(self) -> None:
        recorders: dict[int, Recorder] = {}
        queue = self._queue
        while True:
            with queue.cv:
                while not queue.jobs:
                    queue.cv.wait()
                job = queue.jobs.popleft()
                queue.busy = True
            try:
                self._do(job, recorders)
            except Exception:  # a bug must not end the writer: later incidents still get files
                log.exception("writing an incident file failed")
                job.incident.error = job.incident.error or "internal error (see the log)"
            finally:
                with queue.cv:
                    queue.size -= job.size
                    queue.busy = False
                    queue.cv.notify_all()

    def _do(self, job: _Job, recorders: dict[int, Recorder]) -> None:
        incident = job.incident
        if incident.error is not None:
            return
        key = id(incident)
        try:
            recorder = recorders.get(key)
            if recorder is None and not job.close:
                recorder = recorders[key] = self._create(incident, job.lines)
            if recorder is not None:
                for line in job.lines:
                    recorder.write_line(line)
                incident.readings = recorder.count
            if job.close:
                recorders.pop(key, None)
                if recorder is None:
                    incident.error = "the disk was behind: every reading was left out"
                    return
                recorder.close()
                incident.done = True
                self._written(incident)
        except (OSError, ValueError) as exc:  # what was written stays: it replays up to there
            incident.error = os_reason(exc) if isinstance(exc, OSError) else str(exc)
            stale = recorders.pop(key, None)
            if stale is not None:
                with contextlib.suppress(OSError):
                    stale.close()
            self._say("write", f"cannot write incident files in {self.directory}: {incident.error}")

    def _create(self, incident: Incident, lines: Sequence[str]) -> Recorder:
        """The incident's file under a free name (created exclusively, never through a link)."""
        os.makedirs(self.directory, exist_ok=True)
        first = _timestamp_of(lines[0]) if lines else None
        started = incident.at if first is None else first
        node, trigger = incident.node, incident.trigger
        for n in range(1, _MAX_COUNTER + 1):
            path = os.path.join(
                self.directory, incident_name(node.hostname, incident.at, trigger, n)
            )
            if os.path.lexists(path):
                continue
            try:
                recorder = Recorder(path, node=node, started=started)
            except OSError as exc:
                if exc.errno == errno.EEXIST:
                    continue  # taken meanwhile (or a link put there): the next name
                raise
            incident.path = path
            return recorder
        raise OSError(errno.EEXIST, f"no free name after {_MAX_COUNTER} tries", self.directory)

    def _written(self, incident: Incident) -> None:
        if incident.dropped:
            self._say(
                "slow",
                f"the disk is behind: {incident.dropped} readings left out of {incident.path}",
            )
        assert incident.path is not None
        try:
            self.removed += prune(
                self.directory,
                self.policy.max_files,
                self.policy.max_bytes,
                keep=os.path.basename(incident.path),
            )
        except OSError as exc:
            self._say("prune", f"cannot tidy {self.directory}: {os_reason(exc)}")
        if self.on_written is not None:
            try:
                self.on_written(incident)
            except Exception:  # the file is written; saying so failed (a closed stderr)
                log.exception("reporting an incident file failed")

    def _say(self, kind: str, text: str) -> None:
        if kind in self._said:
            return
        self._said.add(kind)
        if self.on_problem is not None:
            self.on_problem(text)


_TIMESTAMP = re.compile(r'^\{"type":"snapshot","timestamp":(-?[0-9][0-9.eE+-]*)[,}]')


def _timestamp_of(line: str) -> float | None:
    match = _TIMESTAMP.match(line)
    return float(match.group(1)) if match else None


# -- the directory's bounds -----------------------------------------------------------------------


def prune(directory: str, max_files: int, max_bytes: int, *, keep: str = "") -> list[str]:
    """Remove the oldest incident files in ``directory`` until at most ``max_files`` of them
    hold at most ``max_bytes``; ``keep`` (a name) stays whatever. Only regular files named as
    :data:`INCIDENT_NAME` says are counted or removed (never a link, a directory or another
    file). Returns the names removed."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        ours: list[tuple[str, int, str, int]] = []
        for name in os.listdir(fd):
            match = INCIDENT_NAME.match(name)
            if match is None:
                continue
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISREG(st.st_mode):
                ours.append((match.group("stamp"), int(match.group("n") or 1), name, st.st_size))
        ours.sort()
        count, total = len(ours), sum(size for *_, size in ours)
        removed: list[str] = []
        for _, _, name, size in ours:
            if count <= max_files and total <= max_bytes:
                break
            if name == keep:
                continue
            try:
                os.unlink(name, dir_fd=fd)
            except FileNotFoundError:
                pass
            else:
                removed.append(name)
            count, total = count - 1, total - size
        return removed
    finally:
        os.close(fd)


def usable_directory(directory: str) -> str | None:
    """Make ``directory`` if needed; None when incident files can be written there, else why
    not (for one clear message)."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        return os_reason(exc)
    if not os.path.isdir(directory):
        return "not a directory"
    if not os.access(directory, os.W_OK | os.X_OK):
        return os.strerror(errno.EACCES)
    return None


__all__ = [
    "DEFAULT_AFTER_S",
    "DEFAULT_BEFORE_S",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_FILES",
    "INCIDENT_NAME",
    "MAX_SPAN_AFTERS",
    "Incident",
    "IncidentPolicy",
    "IncidentWatcher",
    "Onsets",
    "ReadingRing",
    "incident_name",
    "prune",
    "usable_directory",
]
