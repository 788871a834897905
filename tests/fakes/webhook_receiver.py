"""A real HTTP receiver for webhook tests: ``http.server`` on 127.0.0.1 (a port from the kernel)
in a thread, recording every request and answering as told.

``answers``: the status of each request in turn (then 200); an answer ``"hang"`` holds the
request until :meth:`Receiver.release` (or the receiver closes); ``(307, "/other")`` redirects.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = int | str | tuple[int, str]


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class Receiver:
    """Started by :func:`receiver`; ``url`` is ``http://127.0.0.1:PORT``."""

    def __init__(self, answers: list[Answer] | None = None) -> None:
        self.answers = list(answers or [])
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._released = threading.Event()
        self._got = threading.Condition(self._lock)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                answer = receiver._record(
                    Request("POST", self.path, dict(self.headers.items()), body)
                )
                if answer == "hang":
                    receiver._released.wait(30)
                    answer = 200
                if isinstance(answer, tuple):
                    code, location = answer
                    self.send_response(code)
                    self.send_header("Location", location)
                else:
                    self.send_response(int(answer))
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _record(self, request: Request) -> Answer:
        with self._got:
            self.requests.append(request)
            self._got.notify_all()
            return self.answers.pop(0) if self.answers else 200

    def bodies(self) -> list[Any]:
        with self._lock:
            return [r.json for r in self.requests]

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Request]:
        """The requests once there are ``count`` (or what came within ``timeout``)."""
        end = time.monotonic() + timeout
        with self._got:
            while len(self.requests) < count and time.monotonic() < end:
                self._got.wait(max(end - time.monotonic(), 0.01))
            return list(self.requests)

    def wait_until(self, done: Callable[[list[Request]], bool], timeout: float = 10.0) -> bool:
        """Whether ``done(requests so far)`` came true within ``timeout``."""
        end = time.monotonic() + timeout
        with self._got:
            while not done(list(self.requests)):
                if time.monotonic() >= end:
                    return False
                self._got.wait(max(end - time.monotonic(), 0.01))
            return True

    def release(self) -> None:
        self._released.set()

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._released.set()
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def receiver(answers: list[Answer] | None = None) -> Iterator[Receiver]:
    running = Receiver(answers)
    running.start()
    try:
        yield running
    finally:
        running.close()


def free_port() -> int:
    """A port nothing listens on now (for a child process's ``--listen``)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


__all__ = ["Receiver", "Request", "free_port", "receiver"]
