"""The HTTP GET under the fleet's Prometheus client, on the standard library's ``urllib`` (which
honours the usual ``https_proxy`` / ``no_proxy`` variables).

Redirects are followed only to the same scheme, host and port, so the ``Authorization`` header
(the token or password of :func:`~gputui.fleet.client.auth_from_env`) never goes to another
server and an ``https`` URL is never downgraded; any other redirect raises
:class:`RedirectRefused`, naming where it pointed.
"""

from __future__ import annotations

import urllib.parse
import urllib.request
from collections.abc import Mapping
from http.client import HTTPMessage
from typing import IO, Any

from gputui.format import sanitize

MAX_ANSWER_BYTES = 256 * 1024 * 1024
"""A larger answer is refused rather than read into memory."""
DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_SHOWN = 200
"""Characters of a redirect's target shown in a message."""


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


def urllib_transport(url: str, headers: Mapping[str, str], timeout: float) -> bytes:
    """The real HTTP GET; at most :data:`MAX_ANSWER_BYTES` + 1 bytes of the answer are read."""
    opener = urllib.request.build_opener(SameOriginRedirects())
    request = urllib.request.Request(url, headers=dict(headers), method="GET")
    with opener.open(request, timeout=timeout) as response:
        body: bytes = response.read(MAX_ANSWER_BYTES + 1)
    return body


__all__ = [
    "MAX_ANSWER_BYTES",
    "RedirectRefused",
    "SameOriginRedirects",
    "origin",
    "urllib_transport",
]
