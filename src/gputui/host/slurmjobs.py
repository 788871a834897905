"""Slurm job names and users, looked up with ``scontrol show job -o ID`` off the polling thread.

The cgroup gives a process's job id (:mod:`gputui.host.attribution`); the name and user need the
controller, which can be slow or down. :class:`SlurmJobs` answers from its cache at once and
queues an unknown job for one background worker thread, which runs one ``scontrol`` at a time
with a timeout. Until it has answered, :meth:`SlurmJobs.lookup` returns None and only the id is
shown. A lookup that failed (timeout, unknown job, ``scontrol`` error) is tried again after
:data:`RETRY_S`. Without ``scontrol`` on ``PATH`` nothing is started at all. An ``scontrol``
still running when the jobs are closed, or when gputui exits, is killed with anything it started
(:mod:`gputui.host.children`): a prolog run must not leave one behind.
"""

from __future__ import annotations

import queue
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable

from gputui.core.frozen import frozen
from gputui.core.model import MAX_NAME_CHARS
from gputui.host import children

TIMEOUT_S = 5.0
"""How long one ``scontrol`` may take."""
RETRY_S = 300.0
"""A failed lookup is asked again after this long."""
MAX_JOBS = 4096
"""Jobs remembered before the cache starts over."""

_NAME = re.compile(r"(?:^|\s)JobName=(.*?)(?=\s+\w+=|\s*$)")
_USER = re.compile(r"(?:^|\s)UserId=([^\s(]+)(?:\((\d+)\))?")
_AUTO = "auto"


@frozen
class SlurmJob:
    """What ``scontrol`` says about a job (None: not said)."""

    job_id: str
    name: str | None = None
    user: str | None = None
    uid: int | None = None
    """The user's id (``UserId=alice(1000)``), to tell the job's processes from others'."""

    def owned_by(self, uid: int | None, user: str | None) -> bool | None:
        """Whether a process of ``uid`` (``user``) may be this job's: its user id (else name) is
        the job's; None when either side does not say."""
        if uid is not None and self.uid is not None:
            return uid == self.uid
        if user is not None and self.user is not None:
            return user == self.user
        return None


def parse_show_job(job_id: str, text: str) -> SlurmJob | None:
    """The name and user in ``scontrol show job -o`` output; None when it names neither."""
    for line in text.splitlines():
        if f"JobId={job_id}" not in line:
            continue
        name = _NAME.search(line)
        user = _USER.search(line)
        job_name = name.group(1).strip()[:MAX_NAME_CHARS] if name else None
        job_user = user.group(1)[:MAX_NAME_CHARS] if user else None
        uid = int(user.group(2)) if user and user.group(2) else None
        if job_name or job_user:
            return SlurmJob(job_id, job_name or None, job_user or None, uid)
    return None


class SlurmJobs:
    """Job id -> :class:`SlurmJob`, from a cache that a background worker fills.

    ``scontrol``: the binary (default: found on ``PATH`` at the first lookup; None: never look
    up). ``clock`` drives the retry of failed lookups (tests pass a fake)."""

    def __init__(
        self,
        scontrol: str | None = _AUTO,
        *,
        timeout_s: float = TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._scontrol = scontrol
        self.timeout_s = timeout_s
        self._clock = clock
        self._lock = threading.Lock()
        self._found: dict[str, SlurmJob] = {}
        self._failed: dict[str, float] = {}
        self._pending: set[str] = set()
        self._queue: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._asking: subprocess.Popen[str] | None = None
        self._closed = False
        self.lookups = 0
        """``scontrol`` runs so far."""

    @property
    def available(self) -> bool:
        """Whether job names can be looked up (``scontrol`` is installed)."""
        if self._scontrol == _AUTO:
            self._scontrol = shutil.which("scontrol")
        return self._scontrol is not None

    def lookup(self, job_id: str) -> SlurmJob | None:
        """What is known about ``job_id`` now; never waits. An unknown job is queued for the
        worker, and a later call returns its answer."""
        with self._lock:
            found = self._found.get(job_id)
            if found is not None or job_id in self._pending:
                return found
            failed_at = self._failed.get(job_id)
            if failed_at is not None and self._clock() - failed_at < RETRY_S:
                return None
        if not self.available:
            return None
        with self._lock:
            if job_id in self._pending:
                return None
            self._pending.add(job_id)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._work, name="gputui-slurm-jobs", daemon=True
                )
                self._thread.start()
        self._queue.put(job_id)
        return None

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no lookup is pending (tests); False on timeout."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                if not self._pending:
                    return True
            time.sleep(0.01)
        return False

    def _work(self) -> None:
        while True:
            job_id = self._queue.get()
            job = self._ask(job_id)
            with self._lock:
                self._pending.discard(job_id)
                if len(self._found) + len(self._failed) >= MAX_JOBS:
                    self._found.clear()
                    self._failed.clear()
                if job is None:
                    self._failed[job_id] = self._clock()
                else:
                    self._failed.pop(job_id, None)
                    self._found[job_id] = job

    def _ask(self, job_id: str) -> SlurmJob | None:
        scontrol = self._scontrol
        if not scontrol or scontrol == _AUTO or not job_id.isdigit():
            return None
        with self._lock:
            if self._closed:
                return None
            self.lookups += 1
            try:
                proc = self._asking = children.start([scontrol, "show", "job", "-o", job_id])
            except OSError:
                return None
        try:
            answer = children.output(proc, self.timeout_s)
        finally:
            with self._lock:
                self._asking = None
        if answer is None or answer[0] != 0:
            return None
        return parse_show_job(job_id, answer[1])

    def close(self) -> None:
        """Ask no more, and kill an ``scontrol`` still running (and what it started)."""
        with self._lock:
            self._closed = True
            proc = self._asking
        if proc is not None:
            children.stop(proc)


__all__ = ["RETRY_S", "TIMEOUT_S", "SlurmJob", "SlurmJobs", "parse_show_job"]
