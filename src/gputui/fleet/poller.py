"""The fleet view's one polling thread: a refresh every interval, never two at once.

The thread waits on an event with the interval as its timeout, so :meth:`FleetPoller.refresh_now`
(key ``r``, opening a node) wakes it at once, and wake-ups that arrive during a slow refresh merge
into one. It is a daemon thread, like the threads of its queries: quitting never waits for an
answer from a Prometheus that does not reply (and a refresh ends within its timeout anyway).
Results go to one callback, which the TUI turns into a message (``App.post_message`` is
thread-safe).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from gputui.core.frozen import frozen
from gputui.fleet.model import Fleet
from gputui.fleet.source import FleetSource, NodeHistory


@frozen
class PollResult:
    fleet: Fleet | None
    error: BaseException | None
    instance: str | None = None
    """The node whose history was asked for (None: no node open)."""
    history: NodeHistory | None = None
    history_error: BaseException | None = None


class FleetPoller:
    def __init__(
        self, source: FleetSource, interval: float, on_result: Callable[[PollResult], None]
    ) -> None:
        self.source = source
        self.interval = interval
        self.on_result = on_result
        self._node: str | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="gputui-fleet", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def refresh_now(self) -> None:
        self._wake.set()

    def set_node(self, instance: str | None) -> None:
        """Also fetch this node's history with each refresh (None: no node open)."""
        self._node = instance

    def poll(self) -> PollResult:
        """One refresh (and the open node's history), on the calling thread."""
        instance = self._node
        try:
            fleet, error = self.source.refresh(), None
        except Exception as exc:  # a PrometheusError, or a bug: shown, and tried again
            fleet, error = None, exc
        history, history_error = None, None
        if instance is not None and error is None:
            try:
                history = self.source.history(instance)
            except Exception as exc:
                history_error = exc
        return PollResult(fleet, error, instance, history, history_error)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            result = self.poll()
            if self._stop.is_set():
                return
            self.on_result(result)
            self._wake.wait(self.interval)


__all__ = ["FleetPoller", "PollResult"]
