"""A webhook's URL: checked, its credentials taken out, and shown without its secrets.

Much of a webhook URL can be a secret: a Slack webhook's path is its key
(``https://hooks.slack.com/services/T000/B000/XXXX``), others carry a token in the query string
or a ``user:password@``. Every message that mentions the URL shows it as :func:`redact_url` does,
``scheme://host[:port]/…``, and :func:`scrub` takes the secret parts out of any other text
(an error from the HTTP library) before it is shown.

Credentials in the URL (``https://user:pass@host/…``) are not sent in the URL: they become an
``Authorization: Basic`` header (:attr:`WebhookUrl.basic_auth`), which only goes to that origin
(redirects elsewhere are not followed).
"""

from __future__ import annotations

import base64
import urllib.parse

from gputui.core.format import sanitize
from gputui.core.frozen import frozen

HIDDEN = "…"
SCHEMES = ("http", "https")
UNREADABLE = "(a URL that cannot be read)"
MIN_SCRUBBED = 3
"""Pieces shorter than this are not hunted for in other text (they would garble it)."""


@frozen
class WebhookUrl:
    """A checked http(s) URL, split into what is sent and what is shown."""

    url: str
    """The URL requests go to, without credentials."""
    shown: str
    """``scheme://host[:port]/…``: what messages show."""
    username: str | None = None
    password: str | None = None

    @property
    def basic_auth(self) -> str | None:
        """The ``Authorization`` header's value for the URL's credentials, or None."""
        if self.username is None:
            return None
        pair = f"{self.username}:{self.password or ''}".encode()
        return "Basic " + base64.b64encode(pair).decode("ascii")


def redact_url(url: str) -> str:
    """``scheme://host[:port]/…``: the URL with its path, query, fragment and credentials
    hidden; ``(a URL that cannot be read)`` when it has no scheme and host."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
        host = parts.hostname
        port = parts.port
    except ValueError:
        return UNREADABLE
    if not parts.scheme or not host:
        return UNREADABLE
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    return sanitize(f"{parts.scheme.lower()}://{netloc}/{HIDDEN}")


def parse_webhook_url(text: str) -> WebhookUrl:
    """``text`` as a webhook URL; ValueError (its message shows the URL redacted) unless it is
    an http or https URL with a host and no spaces or control characters."""
    url = text.strip()
    shown = redact_url(url)
    if not url or not url.isprintable() or any(ch.isspace() for ch in url):
        raise ValueError(f"{shown}: a webhook URL has no spaces or control characters")
    try:
        parts = urllib.parse.urlsplit(url)
        host, port = parts.hostname, parts.port
        username, password = parts.username, parts.password
    except ValueError as exc:  # a port that is no number, a bad IPv6 address
        raise ValueError(f"{shown}: not a URL ({_why(exc, url)})") from None
    if parts.scheme.lower() not in SCHEMES:
        scheme = sanitize(parts.scheme) or "none"
        raise ValueError(f"{shown}: a webhook URL is http:// or https:// (not {scheme})")
    if not host:
        raise ValueError(f"{shown}: the URL names no host")
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    sent = urllib.parse.urlunsplit((parts.scheme.lower(), netloc, parts.path, parts.query, ""))
    return WebhookUrl(
        url=sent,
        shown=shown,
        username=None if username is None else urllib.parse.unquote(username),
        password=None if password is None else urllib.parse.unquote(password),
    )


def check_webhook_url(value: object) -> str:
    """A setting's value as a webhook URL (the text, stripped); ValueError as
    :func:`parse_webhook_url`."""
    if not isinstance(value, str):
        raise ValueError("expected a URL as a string")
    parse_webhook_url(value)
    return value.strip()


def scrub(text: str, url: str) -> str:
    """``text`` with every secret part of ``url`` (the whole URL, its path, query, fragment and
    credentials, also percent-decoded) replaced by ``…``; the scheme, host and port stay."""
    pieces = {url, url.strip()}
    try:
        parts = urllib.parse.urlsplit(url.strip())
    except ValueError:
        parts = None
    if parts is not None:
        userinfo = parts.netloc.rpartition("@")[0]
        pieces |= {parts.path, parts.query, parts.fragment, userinfo}
        pieces |= set(userinfo.split(":"))
    pieces |= {urllib.parse.unquote(piece) for piece in pieces}
    for piece in sorted(pieces, key=len, reverse=True):
        if len(piece) >= MIN_SCRUBBED:
            text = text.replace(piece, HIDDEN)
    return text


def _why(exc: ValueError, url: str) -> str:
    return sanitize(scrub(str(exc), url))


__all__ = [
    "HIDDEN",
    "SCHEMES",
    "WebhookUrl",
    "check_webhook_url",
    "parse_webhook_url",
    "redact_url",
    "scrub",
]
