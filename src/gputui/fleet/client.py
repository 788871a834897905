"""A small client of the Prometheus HTTP API (``/api/v1/query``, ``/api/v1/query_range``), on the
standard library's ``urllib``.

Everything that can go wrong ends in one :class:`PrometheusError` that names the URL and says why
(cannot connect, no answer in time, 401/403, not Prometheus, bad JSON, a query Prometheus
rejected, a redirect to another server, answers past the size cap). Credentials come from the
environment (:func:`auth_from_env`), never the command line, where ``ps`` would show them. The
HTTP layer is one function (:data:`Transport`, :mod:`gputui.fleet.transport`) so tests can play
recorded answers. The queries of one batch share one :class:`~gputui.fleet.transport.Budget`:
the timeout bounds the whole batch, and the size cap all its answers together.
"""

from __future__ import annotations

import base64
import functools
import http.client
import json
import os
import threading
import urllib.error
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, TypeGuard, TypeVar

from gputui import __version__
from gputui.core.format import sanitize
from gputui.core.frozen import frozen
from gputui.fleet.transport import AnswerTooLarge, Budget, RedirectRefused, urllib_transport

TOKEN_ENV = "GPUTUI_PROMETHEUS_TOKEN"
"""A bearer token for a secured Prometheus (``Authorization: Bearer ...``)."""
USER_ENV = "GPUTUI_PROMETHEUS_USER"
PASSWORD_ENV = "GPUTUI_PROMETHEUS_PASSWORD"
"""HTTP basic authentication (both must be set)."""
DEFAULT_TIMEOUT_S = 10.0
"""The longest one refresh (its batch of queries together) may take."""

T = TypeVar("T")
Transport = Callable[[str, Mapping[str, str], Budget], bytes | bytearray]
"""``(url, headers, budget) -> body`` of a GET within the budget's time and bytes; raises
``urllib.error.HTTPError`` for an HTTP error status, ``OSError`` (``URLError``, ``TimeoutError``)
when there is no answer in time, :class:`~gputui.fleet.transport.AnswerTooLarge` past the size
cap and :class:`~gputui.fleet.transport.RedirectRefused` for a redirect to another server."""


class PrometheusError(Exception):
    """A query could not be answered: :attr:`url` and why (:attr:`reason`)."""

    def __init__(self, url: str, reason: str, *, status: int | None = None) -> None:
        reason = sanitize(reason)  # one line, whatever the server put in it
        super().__init__(f"Prometheus at {sanitize(url)}: {reason}")
        self.url = url
        self.reason = reason
        """Why, as one line safe to print (control characters, newlines and bidi controls of
        the server's messages replaced)."""
        self.status = status
        """The HTTP status, when there was one."""


class Sample(NamedTuple):
    """One series of an instant query: its labels and value (``NaN`` and ``±Inf`` as Prometheus
    sent them)."""

    labels: dict[str, str]
    value: float


@frozen
class Series:
    """One series of a range query: its labels and ``(time, value)`` points, oldest first."""

    labels: dict[str, str]
    points: list[tuple[float, float]]


MAX_JSON_CONTAINERS = 1_000_000
"""The most JSON arrays and objects one answer may hold. Each costs 60-200 bytes once parsed
(an empty ``[]`` takes 3 bytes on the wire), so the byte cap alone would let 32 MiB of
``[],[],…`` take most of a GiB; a sample of the vectors gputui asks for is three (its labels,
its value pair and itself), so this admits over 300,000 GPUs in one answer.
"""


def auth_from_env(environ: Mapping[str, str] | None = None) -> str | None:
    """The ``Authorization`` header the environment asks for, or None. ValueError when it is
    ambiguous (a token and a user) or half-given (a user without a password)."""
    env = os.environ if environ is None else environ
    token = env.get(TOKEN_ENV, "").strip()
    user = env.get(USER_ENV, "")
    password = env.get(PASSWORD_ENV, "")
    if token and (user or password):
        raise ValueError(f"set either {TOKEN_ENV} or {USER_ENV}/{PASSWORD_ENV}, not both")
    if token:
        return f"Bearer {token}"
    if user or password:
        if not (user and password):
            raise ValueError(f"{USER_ENV} and {PASSWORD_ENV} go together: set both")
        pair = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        return f"Basic {pair}"
    return None


def normalize_url(text: str) -> str:
    """``http(s)://host[:port][/prefix]`` without a trailing slash; ValueError otherwise.
    Credentials in the URL are refused (they would show in ``ps``; use the environment)."""
    url = text.strip()
    if "://" not in url:
        url = "http://" + url
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"--prometheus {text!r}: expected an http:// or https:// URL")
    if not parts.hostname:
        raise ValueError(f"--prometheus {text!r}: no host in the URL")
    if parts.username or parts.password:
        raise ValueError(
            f"--prometheus: put no credentials in the URL; set {TOKEN_ENV} or "
            f"{USER_ENV}/{PASSWORD_ENV} instead"
        )
    if parts.query or parts.fragment:
        raise ValueError(f"--prometheus {text!r}: the URL of the server, without ?query or #")
    try:
        parts.port  # noqa: B018  (raises ValueError for a bad port)
    except ValueError:
        raise ValueError(f"--prometheus {text!r}: bad port") from None
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))


class PrometheusClient:
    """Instant and range queries against one Prometheus (or a server with its HTTP API)."""

    def __init__(
        self,
        url: str,
        *,
        authorization: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        transport: Transport | None = None,
    ) -> None:
        self.url = normalize_url(url)
        self.timeout = timeout
        self._headers = {"Accept": "application/json", "User-Agent": f"gputui/{__version__}"}
        if authorization:
            self._headers["Authorization"] = authorization
        self._authorized = authorization is not None
        self._transport = transport or urllib_transport

    # -- queries -----------------------------------------------------------------------------------

    def query(self, promql: str, at: float, budget: Budget | None = None) -> list[Sample]:
        """An instant query evaluated at ``at`` (Unix seconds): its vector (a scalar answer is one
        sample without labels). ``budget``: shared with other queries (else its own)."""
        params = {"query": promql, "time": _num(at)}
        data = self._get("/api/v1/query", params, promql, budget)
        kind = data.get("resultType")
        result = data.get("result")
        if kind == "scalar" and isinstance(result, list):
            return [Sample({}, _value(result, promql, self.url))]
        if kind != "vector" or not isinstance(result, list):
            raise PrometheusError(self.url, f"expected a vector from {promql!r}, got {kind!r}")
        # the hot path of a refresh (thousands of series): decoding made the Samples already
        if not all(type(sample) is Sample for sample in result):
            raise PrometheusError(self.url, f"malformed answer to {promql!r}")
        if not all(_is_labels(sample.labels) for sample in result):
            raise PrometheusError(self.url, f"malformed labels in the answer to {promql!r}")
        return result

    def query_range(
        self, promql: str, start: float, end: float, step: float, budget: Budget | None = None
    ) -> list[Series]:
        """A range query: every series with its points between ``start`` and ``end``."""
        params = {"query": promql, "start": _num(start), "end": _num(end), "step": _num(step)}
        data = self._get("/api/v1/query_range", params, promql, budget)
        result = data.get("result")
        if data.get("resultType") != "matrix" or not isinstance(result, list):
            raise PrometheusError(self.url, f"expected a matrix from {promql!r}")
        out = []
        for item in result:
            values = item.get("values") if isinstance(item, dict) else None
            if not isinstance(values, list):
                raise PrometheusError(self.url, f"malformed answer to {promql!r}")
            try:
                points = [(float(t), float(v)) for t, v in values]
            except (TypeError, ValueError):
                raise PrometheusError(
                    self.url, f"malformed values in the answer to {promql!r}"
                ) from None
            out.append(Series(_labels(item, promql, self.url), points))
        return out

    def query_many(self, queries: Mapping[str, str], at: float) -> dict[str, list[Sample]]:
        """Several instant queries at the same time ``at``, sent in parallel within one budget
        (the timeout, the size cap); the first error raises (after the others have ended)."""
        budget = Budget(self.timeout)
        calls: dict[str, Callable[[], list[Sample]]] = {
            key: functools.partial(self.query, q, at, budget) for key, q in queries.items()
        }
        return _parallel(calls)

    def query_range_many(
        self, queries: Mapping[str, str], start: float, end: float, step: float
    ) -> dict[str, list[Series]]:
        budget = Budget(self.timeout)
        calls: dict[str, Callable[[], list[Series]]] = {
            key: functools.partial(self.query_range, q, start, end, step, budget)
            for key, q in queries.items()
        }
        return _parallel(calls)

    # -- HTTP --------------------------------------------------------------------------------------

    def _get(
        self, path: str, params: Mapping[str, str], promql: str, budget: Budget | None
    ) -> dict[str, Any]:
        url = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        budget = budget or Budget(self.timeout)
        try:
            body = self._transport(url, self._headers, budget)
        except RedirectRefused as exc:
            raise PrometheusError(self.url, str(exc)) from None
        except AnswerTooLarge as exc:
            raise PrometheusError(
                self.url, f"{exc} (the cap of one refresh): narrow the fleet with --match"
            ) from None
        except urllib.error.HTTPError as exc:
            raise self._http_error(exc, promql) from None
        except TimeoutError:
            raise PrometheusError(self.url, f"no answer within {budget.seconds:g} s") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise PrometheusError(self.url, f"no answer within {budget.seconds:g} s") from None
            raise PrometheusError(self.url, f"cannot connect: {_why(exc.reason)}") from None
        except OSError as exc:
            raise PrometheusError(self.url, f"cannot connect: {_why(exc)}") from None
        except http.client.HTTPException as exc:  # something that does not speak HTTP
            raise PrometheusError(self.url, f"not an HTTP answer ({type(exc).__name__})") from None
        answer = self._decode(body)
        if answer.get("status") != "success":
            raise PrometheusError(self.url, _api_error(answer, promql))
        data = answer.get("data")
        if not isinstance(data, dict):
            raise PrometheusError(self.url, f"no data in the answer to {promql!r}")
        return data

    def _decode(self, body: bytes | bytearray) -> dict[str, Any]:
        # Counted before parsing, at C speed; brackets inside strings count too (stricter).
        if body.count(b"[") + body.count(b"{") > MAX_JSON_CONTAINERS:
            raise PrometheusError(
                self.url,
                f"the answer holds more than {MAX_JSON_CONTAINERS:,} JSON arrays and objects: "
                "narrow the fleet with --match",
            )
        try:
            answer = json.loads(body, object_hook=_samples_hook())
        except (ValueError, UnicodeDecodeError):
            raise PrometheusError(
                self.url, "the answer is not JSON: is this the URL of a Prometheus server?"
            ) from None
        except RecursionError:
            raise PrometheusError(
                self.url, "the answer is JSON nested too deeply for a Prometheus answer"
            ) from None
        if not isinstance(answer, dict):
            raise PrometheusError(self.url, "unexpected answer: is this a Prometheus server?")
        return answer

    def _http_error(self, exc: urllib.error.HTTPError, promql: str) -> PrometheusError:
        status = exc.code
        body = b""
        try:
            body = exc.read(64 * 1024)
        except (OSError, ValueError):
            pass
        finally:
            exc.close()
        if status in (401, 403):
            if self._authorized:
                reason = f"HTTP {status} {exc.reason}: the credentials were refused"
            else:
                reason = (
                    f"HTTP {status} {exc.reason}: it needs credentials; set {TOKEN_ENV} or "
                    f"{USER_ENV} and {PASSWORD_ENV}"
                )
            return PrometheusError(self.url, reason, status=status)
        try:
            answer = json.loads(body) if body else None
        except (ValueError, UnicodeDecodeError, RecursionError):
            answer = None
        if isinstance(answer, dict) and answer.get("status") == "error":
            return PrometheusError(self.url, _api_error(answer, promql), status=status)
        hint = " (is this the URL of a Prometheus server?)" if status == 404 else ""
        return PrometheusError(self.url, f"HTTP {status} {exc.reason}{hint}", status=status)


def _parallel(calls: Mapping[str, Callable[[], T]]) -> dict[str, T]:
    """Every call at once, each on its own daemon thread (a batch is a handful of queries, and
    quitting never waits for a thread still reading an answer); the results once all have ended,
    or the first error in the order of ``calls``."""
    if len(calls) <= 1:
        return {key: call() for key, call in calls.items()}
    results: dict[str, T] = {}
    errors: dict[str, BaseException] = {}

    def run(key: str, call: Callable[[], T]) -> None:
        try:
            results[key] = call()
        except BaseException as exc:
            errors[key] = exc

    threads = [
        threading.Thread(target=run, args=(key, call), name=f"gputui-fleet-{key}", daemon=True)
        for key, call in calls.items()
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for key in calls:
        if key in errors:
            raise errors[key]
    return {key: results[key] for key in calls}


def _samples_hook() -> Callable[[dict[str, Any]], Any]:
    """A ``json.loads`` object hook for one answer: each ``{"metric": {...}, "value": [t, "v"]}``
    of a vector becomes a :class:`Sample` as soon as it is decoded (its dict, list and value
    string are freed at once, not after the whole answer), and equal label values share one
    string (an instance name once, not once per series). Peak memory is about half of a plain
    decode's, and decoding is faster. What is malformed stays as it was, for the caller to
    report."""
    memo: dict[str, str] = {}

    def hook(obj: dict[str, Any]) -> Any:
        if len(obj) == 2 and "value" in obj and "metric" in obj:
            pair = obj["value"]
            if type(pair) is list and len(pair) == 2:
                try:
                    return Sample(obj["metric"], float(pair[1]))
                except (TypeError, ValueError):
                    pass
            return obj
        for key, value in obj.items():
            if type(value) is str:
                obj[key] = memo.setdefault(value, value)
        return obj

    return hook


def _num(value: float) -> str:
    return f"{value:.3f}"


def _why(reason: object) -> str:
    if isinstance(reason, TimeoutError):
        return "timed out"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return str(reason) or type(reason).__name__


def _labels(item: dict[str, Any], promql: str, url: str) -> dict[str, str]:
    metric = item.get("metric", {})
    if not _is_labels(metric):
        raise PrometheusError(url, f"malformed labels in the answer to {promql!r}")
    return metric


def _is_labels(labels: object) -> TypeGuard[dict[str, str]]:
    """Whether ``labels`` is a label set: a dict of strings to strings (JSON keys always are)."""
    return type(labels) is dict and all(type(value) is str for value in labels.values())


def _value(pair: object, promql: str, url: str) -> float:
    """The value of ``[time, "value"]`` (Prometheus sends numbers as strings: NaN, +Inf too)."""
    if not isinstance(pair, Sequence) or isinstance(pair, str) or len(pair) != 2:
        raise PrometheusError(url, f"malformed value in the answer to {promql!r}")
    try:
        return float(pair[1])
    except (TypeError, ValueError):
        raise PrometheusError(url, f"malformed value in the answer to {promql!r}") from None


def _api_error(answer: dict[str, Any], promql: str) -> str:
    kind = answer.get("errorType") or "error"
    text = answer.get("error") or "no reason given"
    return f"query rejected ({kind}: {text}): {promql}"


__all__ = [
    "DEFAULT_TIMEOUT_S",
    "PASSWORD_ENV",
    "TOKEN_ENV",
    "USER_ENV",
    "PrometheusClient",
    "PrometheusError",
    "Sample",
    "Series",
    "Transport",
    "auth_from_env",
    "normalize_url",
    "urllib_transport",
]
