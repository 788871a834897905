"""``--webhook URL``: each alert is POSTed as JSON (``Content-Type: application/json``).

- Tries: a connection that fails or times out, and an answer of 5xx, are tried again, up to
  :data:`TRIES` times, waiting :data:`BACKOFF_S` seconds, then twice that, and so on. A 4xx
  answer is not: the request itself is wrong (a revoked Slack hook answers 403 or 404).
- Redirects: only a 307 or 308 to the same scheme, host and port is followed (the body is
  sent again); any other is refused, so an alert (and the credentials of the URL) never goes
  to another server, and a POST never turns into a GET that would drop the alert.
- Credentials in the URL become an ``Authorization: Basic`` header (:mod:`gputui.core.webhook_url`).
- Every message shows the URL as ``scheme://host/…``; a receiver's own words are scrubbed of
  the URL's secret parts.
"""

from __future__ import annotations

import http.client
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from email.message import Message
from typing import IO

from gputui import __version__
from gputui.core.webhook_url import parse_webhook_url, redact_url, scrub
from gputui.engine.alert_send import SendFailed, clipped

TIMEOUT_S = 10.0
"""Seconds each try may wait on the receiver (connecting, and each read of its answer)."""
TRIES = 3
BACKOFF_S = 1.0
"""The wait before the second try; each later wait is twice the one before."""
MAX_ANSWER_BYTES = 64 * 1024
"""What is read of an answer (and then dropped)."""
DEFAULT_PORTS = {"http": 80, "https": 443}


class RedirectRefused(urllib.error.URLError):
    """The receiver redirected somewhere an alert is not sent."""

    def __init__(self, code: int, target: str) -> None:
        super().__init__(f"redirected (HTTP {code}) to {redact_url(target)}: not followed")
        self.code = code


def origin(url: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of an http(s) URL, the port filled in; None otherwise."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port or DEFAULT_PORTS[scheme]


class _SameOriginRepost(urllib.request.HTTPRedirectHandler):
    """Follows a 307 / 308 within the request's origin, POSTing the same body again."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: Message,
        newurl: str,
    ) -> urllib.request.Request | None:
        here = origin(req.full_url)
        if code not in (307, 308) or here is None or origin(newurl) != here:
            fp.close()
            raise RedirectRefused(code, newurl)
        return urllib.request.Request(
            newurl, data=req.data, headers=dict(req.headers), method=req.get_method()
        )


class Webhook:
    """POSTs each alert to one URL; :class:`SendFailed` when it did not arrive after its tries.
    ``sleep(seconds)`` waits between tries (default: until ``stop`` is set, at most that long)."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = TIMEOUT_S,
        tries: int = TRIES,
        backoff_s: float = BACKOFF_S,
        sleep: Callable[[float], object] | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.target = parse_webhook_url(url)
        self._secret = url
        self.name = f"--webhook {self.target.shown}"
        self.timeout = timeout
        self.tries = max(tries, 1)
        self.backoff_s = backoff_s
        self._stop = stop if stop is not None else threading.Event()
        self._sleep = sleep if sleep is not None else self._stop.wait
        self._opener = urllib.request.build_opener(_SameOriginRepost())
        self.headers = {
            "Content-Type": "application/json",
            "User-Agent": f"gputui/{__version__}",
        }
        auth = self.target.basic_auth
        if auth is not None:
            self.headers["Authorization"] = auth

    def send(self, body: bytes) -> None:
        wait = self.backoff_s
        for attempt in range(1, self.tries + 1):
            try:
                self._post(body)
                return
            except _Retry as exc:
                failure = exc
            if attempt == self.tries:
                break
            self._sleep(wait)
            wait *= 2
            if self._stop.is_set():
                raise SendFailed("stopped", "stopped: gputui was exiting")
        tries = f" ({self.tries} tries)" if self.tries > 1 else ""
        raise SendFailed(failure.kind, f"{failure.detail}{tries}")

    def _post(self, body: bytes) -> None:
        request = urllib.request.Request(
            self.target.url, data=body, headers=self.headers, method="POST"
        )
        try:
            with self._opener.open(request, timeout=self.timeout) as answer:
                answer.read(MAX_ANSWER_BYTES)
        except urllib.error.HTTPError as exc:
            code, phrase = exc.code, self._words(str(exc.reason or ""))
            exc.close()
            said = f"answered HTTP {code}" + (f" {phrase}" if phrase else "")
            if code < 400:  # urllib's own refusal of an odd redirect names its target
                said = f"answered HTTP {code}, a redirect that is not followed"
            if code >= 500:
                raise _Retry(f"HTTP {code}", said) from None
            raise SendFailed(f"HTTP {code}", said) from None
        except RedirectRefused as exc:
            raise SendFailed("redirect", str(exc.reason)) from None
        except TimeoutError:
            raise _Retry("timeout", f"no answer within {self.timeout:g} s") from None
        except urllib.error.URLError as exc:
            reason: object = exc.reason
            if isinstance(reason, TimeoutError):
                raise _Retry("timeout", f"no answer within {self.timeout:g} s") from None
            why = reason.strerror if isinstance(reason, OSError) and reason.strerror else reason
            raise _Retry("connection", f"cannot connect: {self._words(str(why))}") from None
        except (OSError, http.client.HTTPException) as exc:  # reset, closed mid-answer
            raise _Retry("connection", f"connection failed: {self._words(_name(exc))}") from None

    def _words(self, text: str) -> str:
        """The receiver's or the library's words, safe to show."""
        return clipped(scrub(text, self._secret))


class _Retry(Exception):
    """A try that failed in a way worth trying again."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


def _name(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


__all__ = ["BACKOFF_S", "TIMEOUT_S", "TRIES", "RedirectRefused", "Webhook", "origin"]
