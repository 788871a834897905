"""The HTTP GET under the fleet's Prometheus client, on the standard library's ``urllib`` (which
honours the usual ``https_proxy`` / ``no_proxy`` variables), with limits a server cannot stretch:

- Time: the queries of one refresh share one :class:`Budget`, whose deadline every read from the
  socket keeps to (its timeout is set to the time left before each read, headers included), so a
  server that sends its answer a byte at a time cannot hold a refresh past ``--timeout``.
- Size: the same budget holds the bytes the refresh's answers may take together
  (:data:`MAX_ANSWER_BYTES`); reading stops at the cap (:class:`AnswerTooLarge`).
- Redirects are followed only to the same scheme, host and port, so the ``Authorization`` header
  (the token or password of :func:`~gputui.fleet.client.auth_from_env`) never goes to another
  server and an ``https`` URL is never downgraded; any other redirect raises
  :class:`RedirectRefused`, naming where it pointed.

Name resolution (``getaddrinfo``) is the one step no socket timeout reaches.
"""

from __future__ import annotations

import http.client
import io
import socket
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from http.client import HTTPMessage
from typing import IO, Any

from gputui.core.format import sanitize

MAX_ANSWER_BYTES = 32 * 1024 * 1024
"""What the answers of one refresh may take together: 100 nodes of 8 GPUs answer in 1.5 MB, so
this holds about 2,000 such nodes (a larger fleet is split with ``--match``). Decoded, answers
take a few times their size in memory, so the cap bounds that too."""
READ_BYTES = 256 * 1024
"""Bytes asked for by each read of an answer."""
DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_SHOWN = 200
"""Characters of a redirect's target shown in a message."""


class Budget:
    """What the queries of one refresh may spend together: time until a deadline (on
    ``time.monotonic``) and bytes of answers. Shared by the threads of a batch."""

    def __init__(self, seconds: float, max_bytes: int = MAX_ANSWER_BYTES) -> None:
        self.seconds = seconds
        self.max_bytes = max_bytes
        self.deadline = time.monotonic() + seconds
        self._bytes_left = max_bytes
        self._lock = threading.Lock()

    def time_left(self) -> float:
        """Seconds left; TimeoutError once there are none."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no answer within {self.seconds:g} s")
        return left

    def take(self, size: int) -> None:
        """Count ``size`` bytes read; AnswerTooLarge once the answers pass the cap."""
        with self._lock:
            self._bytes_left -= size
            if self._bytes_left < 0:
                raise AnswerTooLarge(self.max_bytes)


class AnswerTooLarge(Exception):
    """The answers of one refresh went past their budget's bytes."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(f"answers larger than {max_bytes >> 20} MiB together")
        self.max_bytes = max_bytes


# -- redirects -------------------------------------------------------------------------------------


class RedirectRefused(Exception):
    """The server redirected to another server (scheme, host or port), or somewhere unusable."""

    def __init__(self, code: int, location: str) -> None:
        shown = sanitize(location)
        if len(shown) > MAX_SHOWN:
            shown = shown[:MAX_SHOWN] + "…"
        super().__init__(
            f"redirected (HTTP {code}) to {shown}: not followed, only redirects within the same "
            "scheme, host and port are (if that is the server, give its URL as --prometheus)"
        )
        self.code = code
        self.location = location


def origin(url: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of an http(s) URL, the port filled in; None for anything else
    (another scheme, no host, a bad port, credentials in the URL)."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname or parts.username is not None:
        return None
    return scheme, parts.hostname, port or DEFAULT_PORTS[scheme]


class SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only within the origin of the request (same scheme, host and port).
    The body of a redirect is not read (urllib would read all of it)."""

    def http_error_302(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: HTTPMessage,
    ) -> Any:
        location = headers.get("location") or headers.get("uri")
        if location is not None:  # checked here too, before urllib refuses odd schemes its way
            _check(req, fp, code, urllib.parse.urljoin(req.full_url, location.strip()))
        return super().http_error_302(req, fp, code, msg, headers)

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        _check(req, fp, code, newurl)  # the URL as urllib will open it
        fp.close()
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _check(req: urllib.request.Request, fp: IO[bytes], code: int, target: str) -> None:
    here = origin(req.full_url)
    if here is None or origin(target) != here:
        fp.close()
        raise RedirectRefused(code, target)


# -- reading within the deadline -------------------------------------------------------------------


class _DeadlineReader(io.RawIOBase):
    """A socket's reads, each one waiting at most until the budget's deadline."""

    def __init__(self, sock: socket.socket, budget: Budget) -> None:
        super().__init__()
        self._sock = sock
        self._io = sock.makefile("rb", buffering=0)  # keeps the socket open while it is read
        self._budget = budget

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        self._sock.settimeout(self._budget.time_left())
        return self._io.readinto(buffer)

    def close(self) -> None:
        if not self.closed:
            self._io.close()
        super().close()


def _response_class(budget: Budget) -> type[http.client.HTTPResponse]:
    class Response(http.client.HTTPResponse):
        """http.client's response (status line, headers, body), read within the deadline."""

        def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
            super().__init__(sock, *args, **kwargs)
            self.fp.close()
            self.fp = io.BufferedReader(_DeadlineReader(sock, budget))

    return Response


class _DeadlineHandler(urllib.request.HTTPHandler, urllib.request.HTTPSHandler):
    """Opens http and https connections whose responses keep to the budget's deadline (it
    takes the place of both of urllib's handlers)."""

    def __init__(self, budget: Budget) -> None:
        super().__init__()
        self._response_class = _response_class(budget)

    def _connection(self, base: type[http.client.HTTPConnection]) -> _Connect:
        def connect(host: str, /, **kwargs: Any) -> http.client.HTTPConnection:
            connection = base(host, **kwargs)
            connection.response_class = self._response_class
            return connection

        return connect

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(self._connection(http.client.HTTPConnection), req)

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(self._connection(http.client.HTTPSConnection), req)


_Connect = Callable[..., http.client.HTTPConnection]


def urllib_transport(url: str, headers: Mapping[str, str], budget: Budget) -> bytearray:
    """The real HTTP GET, within ``budget`` (TimeoutError, AnswerTooLarge). The body grows in
    place, without a copy of all its pieces at the end."""
    opener = urllib.request.build_opener(SameOriginRedirects(), _DeadlineHandler(budget))
    request = urllib.request.Request(url, headers=dict(headers), method="GET")
    body = bytearray()
    with opener.open(request, timeout=budget.time_left()) as response:
        while chunk := response.read(READ_BYTES):
            budget.take(len(chunk))
            body += chunk
    return body


__all__ = [
    "MAX_ANSWER_BYTES",
    "AnswerTooLarge",
    "Budget",
    "RedirectRefused",
    "SameOriginRedirects",
    "origin",
    "urllib_transport",
]
