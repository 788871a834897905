"""Alerts that reach people: each new health finding, sent by ``--notify`` and ``--webhook``.

:meth:`AlertDispatcher.on_snapshot` is a sampler listener: on the sampling thread it only
chooses the findings (:class:`~gputui.health.alert_gate.AlertGate`) and queues their JSON. Each
sender has a worker thread of its own and a bounded queue, so a receiver that hangs delays
neither the readings nor the other sender; a full queue drops its oldest alert (counted).

A send that fails is reported once per sender and kind of failure (``report(text)``: stderr for
``export`` and ``record``, a notification in the dashboard), never as a traceback, and the mode
goes on. :meth:`AlertDispatcher.close` lets the queues drain for a bounded time, then stops.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence

from gputui.core.alert_message import alert_payload, encode_payload
from gputui.core.frozen import frozen
from gputui.core.model import Snapshot
from gputui.engine.alert_send import Sender, SendFailed
from gputui.health.alert_gate import AlertGate
from gputui.settings.model import AlertSettings

log = logging.getLogger(__name__)

QUEUE_CAPACITY = 100
"""Alerts waiting per sender; past it the oldest is dropped."""
CLOSE_WAIT_S = 5.0
"""How long closing waits for the queues to drain (a try in progress included)."""
STOP_WAIT_S = 0.5
"""Then, how long a stopped worker is waited for (a command is killed, a backoff cut short)."""

Report = Callable[[str], object]


class Reporter:
    """Says each kind of problem once. ``target`` may be replaced (the dashboard's notification
    while it runs, stderr once its terminal is given back)."""

    def __init__(self, target: Report) -> None:
        self.target = target
        self._said: set[str] = set()
        self._lock = threading.Lock()

    def once(self, kind: str, text: str) -> None:
        with self._lock:
            if kind in self._said:
                return
            self._said.add(kind)
        try:
            self.target(text)
        except Exception:  # a closed stream or app: the problem is still counted
            log.debug("alert problem not shown: %s", text)


@frozen
class AlertCounts:
    """What became of the alerts of one sender."""

    name: str
    sent: int = 0
    failed: int = 0
    dropped: int = 0
    """Dropped from a full queue."""
    unsent: int = 0
    """Still queued (or in progress) when closing gave up."""

    @property
    def lost(self) -> int:
        return self.failed + self.dropped + self.unsent

    def describe(self) -> str:
        parts = [f"{self.sent} sent"]
        parts += [f"{self.failed} failed"] if self.failed else []
        parts += [f"{self.dropped} dropped (queue full)"] if self.dropped else []
        parts += [f"{self.unsent} not sent before exit"] if self.unsent else []
        return f"{self.name}: {', '.join(parts)}"


class _Worker:
    """One sender's queue and thread."""

    def __init__(
        self, sender: Sender, reporter: Reporter, stop: threading.Event, capacity: int
    ) -> None:
        self.sender = sender
        self._reporter = reporter
        self._stop = stop
        self._capacity = max(capacity, 1)
        self._items: deque[bytes] = deque()
        self._cv = threading.Condition()
        self._finishing = False
        self._busy = False
        self.sent = self.failed = self.dropped = 0
        self._thread = threading.Thread(target=self._run, name="gputui-alerts", daemon=True)
        self._thread.start()

    def put(self, body: bytes) -> None:
        with self._cv:
            full = len(self._items) >= self._capacity
            if full:
                self._items.popleft()
                self.dropped += 1
            self._items.append(body)
            self._cv.notify()
        if full:
            self._reporter.once(
                f"{self.sender.name}:full",
                f"gputui: alerts by {self.sender.name} cannot keep up: dropping the oldest "
                f"(more than {self._capacity} waiting)",
            )

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._items and not self._finishing:
                    self._cv.wait()
                if not self._items or self._stop.is_set():
                    return
                body = self._items.popleft()
                self._busy = True
            try:
                self._send(body)
            finally:
                with self._cv:
                    self._busy = False

    def _send(self, body: bytes) -> None:
        try:
            self.sender.send(body)
        except SendFailed as exc:
            if self._stop.is_set():
                with self._cv:
                    self._items.appendleft(body)  # counted as not sent, not as failed
                return
            self.failed += 1
            self._reporter.once(
                f"{self.sender.name}:{exc.kind}",
                f"gputui: alert by {self.sender.name} failed: {exc.detail} "
                "(later failures like it are not shown)",
            )
        except Exception as exc:  # a bug in a sender must not end the worker or print a trace
            self.failed += 1
            log.debug("alert sender failed", exc_info=True)
            self._reporter.once(
                f"{self.sender.name}:internal",
                f"gputui: alert by {self.sender.name} failed: internal error {type(exc).__name__}",
            )
        else:
            self.sent += 1

    def finish(self) -> None:
        """Send what is queued, then end."""
        with self._cv:
            self._finishing = True
            self._cv.notify_all()

    def join(self, timeout: float) -> None:
        self._thread.join(max(timeout, 0.0))

    def counts(self) -> AlertCounts:
        with self._cv:
            unsent = len(self._items) + (1 if self._busy and self._thread.is_alive() else 0)
        return AlertCounts(self.sender.name, self.sent, self.failed, self.dropped, unsent)


class AlertDispatcher:
    """Chooses the alerts of each reading and hands them to the senders' workers.

    ``senders``: default, those ``settings`` names (:func:`senders_for`)."""

    def __init__(
        self,
        settings: AlertSettings,
        *,
        report: Report,
        senders: Sequence[Sender] | None = None,
        capacity: int = QUEUE_CAPACITY,
    ) -> None:
        self.gate = AlertGate(settings.min_severity, settings.rate_limit_minutes * 60.0)
        self.reporter = Reporter(report)
        self.stop = threading.Event()
        """Set when closing stops waiting: a sender gives up what it is doing."""
        chosen = senders if senders is not None else senders_for(settings, self.stop)
        self._workers = [_Worker(s, self.reporter, self.stop, capacity) for s in chosen]
        self._broken = False

    @property
    def senders(self) -> list[Sender]:
        return [worker.sender for worker in self._workers]

    def on_snapshot(self, snapshot: Snapshot) -> None:
        """The sampler's listener: choose and queue, never wait on a receiver."""
        if self._broken:
            return
        try:
            for finding in self.gate.take(snapshot.findings, snapshot.timestamp):
                payload = alert_payload(
                    finding, host=snapshot.node.hostname, now=snapshot.timestamp
                )
                body = encode_payload(payload)
                for worker in self._workers:
                    worker.put(body)
        except Exception as exc:  # never a traceback over the dashboard, never a lost reading
            self._broken = True
            log.debug("alerts stopped", exc_info=True)
            self.reporter.once(
                "internal", f"gputui: alerts stopped: internal error {type(exc).__name__}: {exc}"
            )

    def close(self, timeout: float = CLOSE_WAIT_S) -> list[AlertCounts]:
        """Let the queues drain for up to ``timeout`` seconds, then stop the senders; what
        became of each sender's alerts."""
        for worker in self._workers:
            worker.finish()
        deadline = time.monotonic() + timeout
        for worker in self._workers:
            worker.join(deadline - time.monotonic())
        self.stop.set()
        deadline = time.monotonic() + STOP_WAIT_S
        for worker in self._workers:
            worker.join(deadline - time.monotonic())
        return [worker.counts() for worker in self._workers]


def senders_for(settings: AlertSettings, stop: threading.Event) -> list[Sender]:
    """The senders ``settings`` names: the command, then the webhook."""
    from gputui.engine.notify_command import NotifyCommand
    from gputui.engine.webhook import Webhook

    senders: list[Sender] = []
    if settings.notify is not None:
        senders.append(NotifyCommand(settings.notify, stop=stop))
    if settings.webhook is not None:
        senders.append(Webhook(settings.webhook, stop=stop))
    return senders


__all__ = [
    "CLOSE_WAIT_S",
    "QUEUE_CAPACITY",
    "AlertCounts",
    "AlertDispatcher",
    "Reporter",
    "senders_for",
]
