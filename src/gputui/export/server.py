"""``/metrics`` over HTTP: the listen address, the responses (also as a WSGI app) and the server.

The server is one thread with a selector, not a thread per connection: a client that connects and
sends nothing (or trickles its request a byte at a time) costs a socket, never a thread, and is
cut off after :data:`REQUEST_TIMEOUT_S` in all, however it sends. At most
:data:`MAX_CONNECTIONS` are open at once; beyond that the oldest one that has not finished sending
its request is closed to make room, so a scrape still gets through while idle sockets pile up.
Each response closes its connection (``Connection: close``), as scrapes come seconds apart.
"""

from __future__ import annotations

import contextlib
import gzip
import ipaddress
import logging
import re
import selectors
import socket
import threading
import time
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import unquote, urlsplit

from prometheus_client import CollectorRegistry

from gputui.export.collector import render
from gputui.export.dcgm import CONTENT_TYPE, DEFAULT_HOST

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger(__name__)


class Listen(NamedTuple):
    host: str
    port: int

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"


def parse_listen(text: str) -> Listen:
    """``HOST:PORT``, ``[IPv6]:PORT``, ``:PORT`` or ``PORT`` (host: 127.0.0.1). ValueError with a
    message naming the problem; the host must resolve."""
    text = text.strip()
    if not text:
        raise ValueError("--listen: empty address (expected HOST:PORT, e.g. 127.0.0.1:9400)")
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket or not rest.startswith(":"):
            raise ValueError(f"--listen {text!r}: expected [IPv6]:PORT, e.g. [::1]:9400")
        port_text = rest[1:]
        if not host:
            raise ValueError(f"--listen {text!r}: empty host between the brackets")
    elif text.isdigit():
        host, port_text = DEFAULT_HOST, text
    else:
        if text.count(":") > 1:
            raise ValueError(f"--listen {text!r}: put an IPv6 address in brackets, e.g. [::1]:9400")
        host, colon, port_text = text.rpartition(":")
        if not colon:
            raise ValueError(f"--listen {text!r}: no port (expected HOST:PORT, e.g. {text}:9400)")
        host = host or DEFAULT_HOST
    if not port_text.isdigit():
        raise ValueError(f"--listen {text!r}: port {port_text!r} is not a number")
    port = int(port_text)
    if not 1 <= port <= 65535:
        raise ValueError(f"--listen {text!r}: port {port} is out of range (1-65535)")
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ValueError(f"--listen {text!r}: cannot resolve host {host!r} ({reason})") from None
    return Listen(host, port)


def is_loopback(host: str) -> bool:
    """True when every address ``host`` resolves to is a loopback address."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return False
    addresses = {str(info[4][0]) for info in infos}
    return bool(addresses) and all(
        ipaddress.ip_address(a.split("%", 1)[0]).is_loopback for a in addresses
    )


# -- responses -------------------------------------------------------------------------------------


class Response(NamedTuple):
    status: str
    """``"200 OK"``, ``"404 Not Found"``, ..."""
    headers: list[tuple[str, str]]
    body: bytes
    """Empty for HEAD (whose Content-Length still says what GET would send)."""


def respond(
    registry: CollectorRegistry, method: str, path: str, accept_encoding: str = ""
) -> Response:
    """The answer to one request: ``/metrics`` (gzip when asked for), ``/`` a pointer to it, 404
    elsewhere; GET and HEAD only (405)."""
    if method not in ("GET", "HEAD"):
        return Response(
            "405 Method Not Allowed", [("Allow", "GET, HEAD"), ("Content-Length", "0")], b""
        )
    if path == "/metrics":
        body = render(registry)
        headers = [("Content-Type", CONTENT_TYPE), ("Vary", "Accept-Encoding")]
        if "gzip" in accept_encoding:
            body = gzip.compress(body, compresslevel=1)
            headers.append(("Content-Encoding", "gzip"))
        status = "200 OK"
    elif path == "/":
        body = b"gputui exporter: metrics at /metrics\n"
        headers = [("Content-Type", "text/plain; charset=utf-8")]
        status = "200 OK"
    else:
        body = b"not found: try /metrics\n"
        headers = [("Content-Type", "text/plain; charset=utf-8")]
        status = "404 Not Found"
    headers.append(("Content-Length", str(len(body))))
    return Response(status, headers, b"" if method == "HEAD" else body)


def metrics_app(registry: CollectorRegistry) -> WSGIApplication:
    """The same answers as a WSGI app, to mount in another server."""

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> list[bytes]:
        response = respond(
            registry,
            environ.get("REQUEST_METHOD", "GET"),
            environ.get("PATH_INFO", "/"),
            environ.get("HTTP_ACCEPT_ENCODING", ""),
        )
        start_response(response.status, response.headers)
        return [response.body]

    return app


def _simple(status: str, text: str = "") -> bytes:
    body = text.encode()
    return _encode(
        Response(
            status,
            [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))],
            body,
        )
    )


def _encode(response: Response) -> bytes:
    head = [f"HTTP/1.1 {response.status}", *(f"{k}: {v}" for k, v in response.headers)]
    head += ["Connection: close", "", ""]
    return "\r\n".join(head).encode("latin-1") + response.body


# -- the server ------------------------------------------------------------------------------------

MAX_CONNECTIONS = 32
"""Connections open at once; a new one beyond this closes the oldest still sending its request."""
REQUEST_TIMEOUT_S = 5.0
"""From accepting a connection to the end of its request line and headers, however it trickles."""
RESPONSE_TIMEOUT_S = 10.0
"""To write the whole response to a client that reads slowly."""
LINGER_S = 1.0
"""After the response: wait this long for the client to close before closing (closing with
unread input would reset the connection and could lose the end of the response)."""
MAX_REQUEST_HEAD = 16 * 1024
"""Request line and headers; more is answered 431."""
_ACCEPT_BURST = 64
_ACCEPT_PAUSE_S = 0.1
_LISTEN_BACKLOG = 128
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_LINE = re.compile(r"\r?\n")
_BUSY = _simple("503 Service Unavailable", "too many connections: try again\n")

_READING, _WRITING, _LINGERING = "reading", "writing", "lingering"


class _Connection:
    __slots__ = ("deadline", "inbox", "outbox", "sock", "state")

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock = sock
        self.state = _READING
        self.deadline = deadline
        self.inbox = bytearray()
        self.outbox = memoryview(b"")


class MetricsServer:
    """``/metrics`` over HTTP on its own thread. Binds in the constructor (raises OSError)."""

    def __init__(
        self,
        registry: CollectorRegistry,
        host: str,
        port: int,
        *,
        max_connections: int | None = None,
        request_timeout: float | None = None,
        response_timeout: float | None = None,
    ) -> None:
        """Limits left out are :data:`MAX_CONNECTIONS`, :data:`REQUEST_TIMEOUT_S` and
        :data:`RESPONSE_TIMEOUT_S`."""
        family, _type, _proto, _name, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM
        )[0]
        listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(address)
            listener.listen(_LISTEN_BACKLOG)
            listener.setblocking(False)
        except OSError:
            listener.close()
            raise
        self._registry = registry
        self._listener = listener
        self._port: int = listener.getsockname()[1]
        self.max_connections = max(1, max_connections or MAX_CONNECTIONS)
        self.request_timeout = request_timeout or REQUEST_TIMEOUT_S
        self.response_timeout = response_timeout or RESPONSE_TIMEOUT_S
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(listener, selectors.EVENT_READ, None)
        self._selector.register(self._wake_r, selectors.EVENT_READ, self._wake_r)
        self._connections: dict[socket.socket, _Connection] = {}  # oldest first
        self._accept_paused_until: float | None = None
        self._stopping = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._port

    @property
    def connections(self) -> int:
        """Connections open now (from the server's thread's point of view)."""
        return len(self._connections)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._serve, name="gputui-export", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close every connection (safe to call more than once)."""
        if self._closed:
            return
        self._stopping.set()
        if self._thread is not None:
            with contextlib.suppress(OSError):
                self._wake_w.send(b"x")
            self._thread.join(5.0)
            self._thread = None
        self._closed = True
        for conn in list(self._connections.values()):
            self._close(conn)
        self._selector.close()
        self._listener.close()
        self._wake_r.close()
        self._wake_w.close()

    # -- the loop (the server's thread only) -------------------------------------------------------

    def _serve(self) -> None:
        while not self._stopping.is_set():
            now = time.monotonic()
            self._expire(now)
            try:
                events = self._selector.select(self._next_timeout(now))
            except OSError:  # the selector was closed under us: stopping
                return
            for key, mask in events:
                if self._stopping.is_set():
                    return
                if key.fileobj is self._listener:
                    self._accept()
                elif key.fileobj is self._wake_r:
                    self._drain_wake()
                else:
                    self._service(key.data, mask)

    def _next_timeout(self, now: float) -> float | None:
        due = [conn.deadline for conn in self._connections.values()]
        if self._accept_paused_until is not None:
            due.append(self._accept_paused_until)
        return max(0.0, min(due) - now) if due else None

    def _expire(self, now: float) -> None:
        for conn in list(self._connections.values()):
            if conn.deadline <= now:
                self._close(conn)  # silent, too slow, or not reading its answer
        if self._accept_paused_until is not None and self._accept_paused_until <= now:
            self._accept_paused_until = None
            self._selector.register(self._listener, selectors.EVENT_READ, None)

    def _drain_wake(self) -> None:
        with contextlib.suppress(OSError):
            while self._wake_r.recv(4096):
                pass

    def _accept(self) -> None:
        for _ in range(_ACCEPT_BURST):
            try:
                sock, _address = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of file descriptors, a connection reset in the queue
                log.warning("exporter: accept failed: %s", exc)
                if not self._evict():
                    # Nothing to make room with: stop accepting for a moment, not spin.
                    self._selector.unregister(self._listener)
                    self._accept_paused_until = time.monotonic() + _ACCEPT_PAUSE_S
                return
            sock.setblocking(False)
            if len(self._connections) >= self.max_connections and not self._evict():
                _refuse(sock)
                continue
            conn = _Connection(sock, time.monotonic() + self.request_timeout)
            self._connections[sock] = conn
            self._selector.register(sock, selectors.EVENT_READ, conn)

    def _evict(self) -> bool:
        """Close the oldest connection that is not being answered; False if there is none."""
        for conn in self._connections.values():
            if conn.state != _WRITING:
                self._close(conn)
                return True
        return False

    def _service(self, conn: _Connection, mask: int) -> None:
        try:
            if conn.state == _READING and mask & selectors.EVENT_READ:
                self._read(conn)
            elif conn.state == _WRITING and mask & selectors.EVENT_WRITE:
                self._write(conn)
            elif conn.state == _LINGERING and mask & selectors.EVENT_READ:
                self._linger(conn)
        except OSError:  # reset by the client, ...
            self._close(conn)

    def _read(self, conn: _Connection) -> None:
        data = conn.sock.recv(65536)
        if not data:
            self._close(conn)  # gone before finishing its request
            return
        inbox = conn.inbox
        inbox += data
        if inbox.startswith((b"\r", b"\n")):  # blank lines before the request line: allowed
            del inbox[: len(inbox) - len(inbox.lstrip(b"\r\n"))]
        end = _HEAD_END.search(inbox)
        if end is None:
            if len(inbox) > MAX_REQUEST_HEAD:
                self._answer(conn, _simple("431 Request Header Fields Too Large"))
            return
        self._answer(conn, self._handle(bytes(inbox[: end.start()])))

    def _handle(self, head: bytes) -> bytes:
        lines = _LINE.split(head.decode("latin-1"))
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            return _simple("400 Bad Request", "bad request line\n")
        method, target, version = parts
        if version not in ("HTTP/1.0", "HTTP/1.1"):
            return _simple("505 HTTP Version Not Supported")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon or not name or name != name.strip():
                return _simple("400 Bad Request", "bad header line\n")
            key = name.lower()
            headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
        path = urlsplit(target).path if "://" in target else target.partition("?")[0]
        try:
            response = respond(
                self._registry, method, unquote(path or "/"), headers.get("accept-encoding", "")
            )
        except Exception:  # a collector bug: this scrape fails, the exporter keeps serving
            log.exception("exporter: rendering the metrics failed")
            return _simple("500 Internal Server Error", "rendering the metrics failed\n")
        return _encode(response)

    def _answer(self, conn: _Connection, data: bytes) -> None:
        conn.state = _WRITING
        conn.inbox = bytearray()
        conn.outbox = memoryview(data)
        conn.deadline = time.monotonic() + self.response_timeout
        self._write(conn)
        if conn.state == _WRITING and conn.sock in self._connections:
            self._selector.modify(conn.sock, selectors.EVENT_WRITE, conn)

    def _write(self, conn: _Connection) -> None:
        try:
            sent = conn.sock.send(conn.outbox)
        except (BlockingIOError, InterruptedError):
            return
        conn.outbox = conn.outbox[sent:]
        if conn.outbox:
            return
        # All sent: no more from us; wait a moment for the client to close its end.
        try:
            conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            self._close(conn)
            return
        conn.state = _LINGERING
        conn.deadline = time.monotonic() + LINGER_S
        self._selector.modify(conn.sock, selectors.EVENT_READ, conn)

    def _linger(self, conn: _Connection) -> None:
        if not conn.sock.recv(65536):  # input after the request is read and dropped
            self._close(conn)  # the client has read the answer and closed

    def _close(self, conn: _Connection) -> None:
        if self._connections.pop(conn.sock, None) is None:
            return
        with contextlib.suppress(KeyError, ValueError, OSError):
            self._selector.unregister(conn.sock)
        conn.sock.close()


def _refuse(sock: socket.socket) -> None:
    """Every open connection is being answered: say so at once and close (no thread, no wait)."""
    with contextlib.suppress(OSError):
        sock.send(_BUSY)
    sock.close()
