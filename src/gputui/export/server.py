"""``/metrics`` over HTTP: the listen address, the WSGI app and the server thread."""

from __future__ import annotations

import gzip
import ipaddress
import socket
import threading
from socketserver import ThreadingMixIn
from typing import TYPE_CHECKING, NamedTuple
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry

from gputui.export.collector import render
from gputui.export.dcgm import CONTENT_TYPE, DEFAULT_HOST

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment


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


# -- the server ------------------------------------------------------------------------------------


class _Handler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # no access log on stderr
        pass


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Server6(_Server):
    address_family = socket.AF_INET6


def metrics_app(registry: CollectorRegistry) -> WSGIApplication:
    """A WSGI app: ``/metrics`` (gzip when asked for), ``/`` a pointer to it, else 404."""

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> list[bytes]:
        path = environ.get("PATH_INFO", "/")
        method = environ.get("REQUEST_METHOD", "GET")
        if method not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed", [("Allow", "GET, HEAD")])
            return [b""]
        if path == "/metrics":
            body = render(registry)
            headers = [("Content-Type", CONTENT_TYPE)]
            if "gzip" in environ.get("HTTP_ACCEPT_ENCODING", ""):
                body = gzip.compress(body, compresslevel=1)
                headers.append(("Content-Encoding", "gzip"))
        elif path == "/":
            body = b"gputui exporter: metrics at /metrics\n"
            headers = [("Content-Type", "text/plain; charset=utf-8")]
        else:
            start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"not found: try /metrics\n"]
        headers.append(("Content-Length", str(len(body))))
        start_response("200 OK", headers)
        return [b"" if method == "HEAD" else body]

    return app


class MetricsServer:
    """``/metrics`` over HTTP on its own thread. Binds in the constructor (raises OSError)."""

    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        server_class = _Server6 if family == socket.AF_INET6 else _Server
        self._server = make_server(
            host, port, metrics_app(registry), server_class=server_class, handler_class=_Handler
        )
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="gputui-export", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(2.0)
            self._thread = None
        self._server.server_close()
