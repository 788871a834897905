"""`gputui fleet` against misbehaving Prometheus servers, each a plain HTTP server on loopback:
redirects to another server (the credentials must not follow), error messages and labels with
control characters, values no health status holds (±Inf, NaN, huge), JSON nested 100,000 deep,
answers that trickle in a byte at a time or run past the size cap. The fleet answers every time
with a clear message, within --timeout, in bounded memory, and one bad node never hides the
others."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.prometheus_answers import synthetic_answers

from gputui import cli
from gputui.commands.fleet import make_source
from gputui.fleet import promql
from gputui.fleet.client import PrometheusClient, PrometheusError, auth_from_env
from gputui.fleet.transport import origin

ROOT = Path(__file__).resolve().parent.parent
ESC = "\x1b"
KEYS = {query: key for key, query in promql.refresh_queries("").all().items()}
"""The refresh query -> its key in :func:`synthetic_answers`."""
EMPTY = {"status": "success", "data": {"resultType": "vector", "result": []}}

Respond = Callable[["Handler"], None]


class Handler(BaseHTTPRequestHandler):
    server: FakePrometheus

    def do_GET(self) -> None:
        self.server.requests.append((self.path, dict(self.headers)))
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client left
            self.server.respond(self)

    @property
    def query(self) -> str:
        params = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        return params.get("query", [""])[0]

    def send(self, body: bytes | object, status: int = 200, **headers: str) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_args: object) -> None:
        pass


class FakePrometheus(ThreadingHTTPServer):
    """A server on 127.0.0.1 that answers each GET with ``respond(handler)`` and records the
    requests (path, headers)."""

    daemon_threads = True

    def __init__(self, respond: Respond) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.respond = respond
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.stop = threading.Event()
        """Set at teardown: a handler that trickles forever ends."""
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture
def serve() -> Iterator[Callable[[Respond], FakePrometheus]]:
    servers: list[FakePrometheus] = []

    def start(respond: Respond) -> FakePrometheus:
        servers.append(FakePrometheus(respond))
        return servers[-1]

    yield start
    for server in servers:
        server.stop.set()
        server.shutdown()
        server.server_close()


def fleet_answers(change: Callable[[dict[str, Any]], None] | None = None) -> Respond:
    """Answers the refresh of three nodes of two GPUs (:func:`synthetic_answers`), after
    ``change(answers)``."""
    answers = synthetic_answers(3, 2, at=time.time())  # scraped a second ago
    if change is not None:
        change(answers)

    def respond(handler: Handler) -> None:
        handler.send(answers.get(KEYS.get(handler.query, ""), EMPTY))

    return respond


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main(["fleet", *argv])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def python(*args: str, timeout: float = 60) -> tuple[subprocess.CompletedProcess[str], float]:
    """``python ARGS`` with gputui and the tests importable: the result and how long it took."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=timeout, env=env
    )
    return result, time.monotonic() - started


# -- redirects -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "environ",
    [{"GPUTUI_PROMETHEUS_TOKEN": "s3cret"},
     {"GPUTUI_PROMETHEUS_USER": "admin", "GPUTUI_PROMETHEUS_PASSWORD": "s3cret"}],
    ids=["token", "basic"],
)  # fmt: skip
def test_a_redirect_to_another_server_gets_no_credentials(
    serve: Callable[[Respond], FakePrometheus], environ: dict[str, str]
) -> None:
    other = serve(lambda h: h.send(EMPTY))  # another port: another origin
    first = serve(lambda h: h.send(b"", 302, Location=f"{other.url}{h.path}"))
    client = PrometheusClient(first.url, authorization=auth_from_env(environ))
    with pytest.raises(PrometheusError) as caught:
        client.query("up", 1.0)
    assert other.requests == []
    assert len(first.requests) == 1 and "Authorization" in first.requests[0][1]
    reason = caught.value.reason
    assert "redirect" in reason and f"{other.url}/api/v1/query" in reason


def test_a_redirect_within_the_same_server_is_followed(
    serve: Callable[[Respond], FakePrometheus],
) -> None:
    def respond(handler: Handler) -> None:
        if handler.path.startswith("/prometheus/"):
            handler.send(EMPTY)
        else:
            handler.send(b"", 307, Location=f"/prometheus{handler.path}")

    server = serve(respond)
    client = PrometheusClient(server.url, authorization="Bearer s3cret")
    assert client.query("up", 1.0) == []
    assert [h.get("Authorization") for _, h in server.requests] == ["Bearer s3cret"] * 2


@pytest.mark.parametrize(
    "location",
    ["ftp://127.0.0.1:{port}/api/v1/query", "https://127.0.0.1:{port}/api/v1/query",
     "http://localhost:{port}/api/v1/query", "file:///etc/passwd"],
)  # fmt: skip
def test_a_redirect_to_another_scheme_or_host_is_refused(
    serve: Callable[[Respond], FakePrometheus], location: str
) -> None:
    server = serve(lambda h: h.send(b"", 302, Location=location.format(port=h.server.port)))
    with pytest.raises(PrometheusError) as caught:
        PrometheusClient(server.url, authorization="Bearer s3cret").query("up", 1.0)
    assert len(server.requests) == 1
    assert "redirect" in caught.value.reason
    assert location.format(port=server.port) in caught.value.reason


def test_a_refused_redirect_names_its_target_safely(
    serve: Callable[[Respond], FakePrometheus], capsys: pytest.CaptureFixture[str]
) -> None:
    server = serve(lambda h: h.send(b"", 302, Location=f"http://evil.example/{ESC}[2J"))
    code, out, err = run_cli(capsys, "--prometheus", server.url, "--json")
    assert (code, out) == (2, "")
    assert ESC not in err and "http://evil.example/?[2J" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://Prom:9090/x", ("http", "prom", 9090)),
        ("http://prom/x", ("http", "prom", 80)),
        ("https://prom/x", ("https", "prom", 443)),
        ("https://[::1]:8443", ("https", "::1", 8443)),
        ("ftp://prom/x", None),
        ("http://user:pw@prom/x", None),
        ("http://prom:99999/x", None),
        ("http:///x", None),
    ],
)
def test_origin(url: str, expected: tuple[str, str, int] | None) -> None:
    assert origin(url) == expected


# -- what Prometheus says reaches the terminal sanitised -------------------------------------------

FORGED = f"parse error\ngputui fleet: every node is ok{ESC}[2J\u202e"


@pytest.mark.parametrize(
    "respond",
    [
        lambda h: h.send({"status": "error", "errorType": "bad_data", "error": FORGED}, 400),
        lambda h: h.send({"status": "error", "errorType": f"x\n{ESC}]0;t\a", "error": FORGED}),
    ],
    ids=["http-400", "status-error"],
)
def test_a_prometheus_error_message_cannot_forge_output_lines(
    serve: Callable[[Respond], FakePrometheus],
    capsys: pytest.CaptureFixture[str],
    respond: Respond,
) -> None:
    server = serve(respond)
    code, out, err = run_cli(capsys, "--prometheus", server.url, "--json")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith(f"gputui fleet: Prometheus at {server.url}: ")
    assert ESC not in err and "\a" not in err and "\u202e" not in err
    assert "parse error?gputui fleet: every node is ok?[2J?" in err


def test_hostile_labels_in_the_json_and_on_stderr(
    serve: Callable[[Respond], FakePrometheus], capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = f"evil{ESC}]0;pwned\a\n\u202eabc"

    def change(answers: dict[str, Any]) -> None:
        for item in answers["last_seen"]["data"]["result"]:
            if "gpu" in item["metric"]:
                item["metric"].update(hostname=hostile, modelName=hostile, UUID=hostile)

    server = serve(fleet_answers(change))
    code, out, err = run_cli(capsys, "--prometheus", server.url, "--json")
    assert code == 0
    assert ESC not in out and "\u202e" not in out and err == ""
    nodes = json.loads(out)["nodes"]
    assert {n["hostname"] for n in nodes} == {hostile}  # JSON escapes it, and it reads back


# -- one bad node does not blind the fleet ---------------------------------------------------------

BAD_VALUES = ["+Inf", "-Inf", "NaN", "1e308", "-1", "7", "2.5"]


def set_value(name: str, value: str, instance: str = "gpu-002:9400", gpu: str | None = None):
    """A change of :func:`fleet_answers`: ``name`` of ``instance`` (and ``gpu``) reads ``value``
    (the series is added when the answer has none)."""

    def change(answers: dict[str, Any]) -> None:
        result = answers["values"]["data"]["result"]
        for item in result:
            m = item["metric"]
            if (m["__name__"], m["instance"], m.get("gpu")) == (name, instance, gpu):
                item["value"][1] = value
                return
        labels = {"__name__": name, "instance": instance}
        if gpu is not None:
            labels["gpu"] = gpu
        if name == promql.GPUTUI_FINDINGS:
            labels.update(rule="temperature", severity="warn")
        result.append({"metric": labels, "value": [time.time(), value]})

    return change


def json_fleet(
    serve: Callable[[Respond], FakePrometheus],
    capsys: pytest.CaptureFixture[str],
    change: Callable[[dict[str, Any]], None],
) -> tuple[int, dict[str, Any], str]:
    server = serve(fleet_answers(change))
    code, out, err = run_cli(capsys, "--prometheus", server.url, "--json")
    assert "internal error" not in err and "Traceback" not in err, err
    return code, json.loads(out) if out else {}, err


BAD = [(promql.GPUTUI_NODE_STATUS, None, value) for value in BAD_VALUES]
BAD += [(promql.GPUTUI_STATUS, "1", value) for value in BAD_VALUES]
BAD += [(promql.GPUTUI_STALL, None, value) for value in ("+Inf", "-Inf", "NaN", "1e308", "-1")]
BAD += [(promql.GPUTUI_FINDINGS, "0", v) for v in ("+Inf", "-Inf", "NaN", "1e308", "-1", "2.5")]


@pytest.mark.parametrize(("name", "gpu", "value"), BAD)
def test_a_value_no_status_holds_makes_that_node_unknown(
    serve: Callable[[Respond], FakePrometheus],
    capsys: pytest.CaptureFixture[str],
    name: str,
    gpu: str | None,
    value: str,
) -> None:
    code, fleet, err = json_fleet(serve, capsys, set_value(name, value, gpu=gpu))
    health = {n["hostname"]: n["health"] for n in fleet["nodes"]}
    assert health == {"node-000": "ok", "node-001": "ok", "node-002": "unknown"}, fleet
    assert code == 1 and err == ""
    (bad,) = (n for n in fleet["nodes"] if n["hostname"] == "node-002")
    assert any(name in reason and "not" in reason for reason in bad["reasons"]), bad["reasons"]


@pytest.mark.parametrize(
    "label", ["²", "1" * 5000, "-1", "0x1", " 1", "١", "01", ""], ids=lambda label: repr(label[:8])
)
def test_a_gpu_label_that_is_no_index_is_left_out(
    serve: Callable[[Respond], FakePrometheus], capsys: pytest.CaptureFixture[str], label: str
) -> None:
    def change(answers: dict[str, Any]) -> None:
        for key in ("values", "last_seen"):
            for item in answers[key]["data"]["result"]:
                metric = item["metric"]
                if (metric["instance"], metric.get("gpu")) == ("gpu-001:9400", "1"):
                    metric["gpu"] = label
        answers["values"]["data"]["result"].append(
            {"metric": {"__name__": promql.GPUTUI_FINDINGS, "instance": "gpu-000:9400",
                        "gpu": label, "rule": "x", "severity": "info"}, "value": [0, "1"]}
        )  # fmt: skip

    code, fleet, err = json_fleet(serve, capsys, change)
    assert (code, err) == (0, "")
    gpus = {n["hostname"]: [g["index"] for g in n["gpus"]] for n in fleet["nodes"]}
    assert gpus == {"node-000": [0, 1], "node-001": [0], "node-002": [0, 1]}


@pytest.mark.parametrize(
    "labels", [{"instance": 5}, {"instance": ["a"]}, {"instance": None}, {"__name__": {}}]
)
def test_labels_that_are_not_strings_are_a_malformed_answer(
    serve: Callable[[Respond], FakePrometheus],
    capsys: pytest.CaptureFixture[str],
    labels: dict[str, Any],
) -> None:
    def change(answers: dict[str, Any]) -> None:
        answers["values"]["data"]["result"][0]["metric"].update(labels)

    code, fleet, err = json_fleet(serve, capsys, change)
    assert (code, fleet) == (2, {})
    assert "malformed labels in the answer to" in err


DEEP = b'{"status":"success","data":' + b"[" * 100_000 + b"]" * 100_000 + b"}"


@pytest.mark.parametrize("status", [200, 400])
def test_json_nested_too_deeply_is_a_clear_error(
    serve: Callable[[Respond], FakePrometheus], capsys: pytest.CaptureFixture[str], status: int
) -> None:
    server = serve(lambda h: h.send(DEEP, status))
    code, out, err = run_cli(capsys, "--prometheus", server.url, "--json")
    assert (code, out) == (2, "")
    assert "internal error" not in err and "Traceback" not in err, err
    assert ("nested too deeply" if status == 200 else "HTTP 400 Bad Request") in err
    assert err.startswith(f"gputui fleet: Prometheus at {server.url}: ")


@pytest.mark.usefixtures("tui_env")
async def test_the_fleet_screen_lists_the_other_nodes() -> None:
    from gputui.tui.fleet.app import FleetApp

    server = FakePrometheus(fleet_answers(set_value(promql.GPUTUI_NODE_STATUS, "+Inf")))
    try:
        app = FleetApp(make_source(server.url), interval=5.0, start_poller=False)
        async with app.run_test(size=(160, 30)) as pilot:
            await asyncio.get_running_loop().run_in_executor(None, app.poll_now)
            await pilot.pause()
            assert not app.fleet_screen.banner.display, app.error
            nodes = app.fleet_screen.nodes.visible_items
            assert [n.health for n in nodes] == ["unknown", "ok", "ok"]
            assert "gputui_node_health_status is +Inf" in nodes[0].reasons[0]
    finally:
        server.stop.set()
        server.shutdown()
        server.server_close()


# -- time and memory stay bounded ------------------------------------------------------------------


def trickle(what: str) -> Respond:
    """A server that sends its answer a byte a second, forever: the whole response
    (``response``) or the body after prompt headers (``body``)."""

    def respond(handler: Handler) -> None:
        head = (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 999999\r\n\r\n"
        )
        if what == "body":
            handler.wfile.write(head)
            handler.wfile.flush()
        data = (head if what == "response" else b"") + b" " * 10**6
        for byte in data:
            if handler.server.stop.wait(1.0):
                return
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()

    return respond


@pytest.mark.parametrize("what", ["body", "response"])
def test_a_trickling_server_cannot_hold_a_refresh_past_the_timeout(
    serve: Callable[[Respond], FakePrometheus], what: str
) -> None:
    server = serve(trickle(what))
    result, took = python(
        "-m", "gputui", "fleet", "--json", "--prometheus", server.url, "--timeout", "3"
    )
    assert result.returncode == 2 and result.stdout == ""
    assert f"Prometheus at {server.url}: no answer within 3 s" in result.stderr
    assert took < 15  # --timeout bounds the whole refresh (3 s), not each read (1 s apart)


QUIT = """
import asyncio, sys
from gputui.commands.fleet import make_source
from gputui.tui.fleet.app import FleetApp

async def main() -> None:
    app = FleetApp(make_source(sys.argv[1], timeout=600), interval=5.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(1.0)
        assert app.refreshes == 0  # still reading the answer
        await pilot.press("q")

asyncio.run(main())
print("quit", flush=True)
"""


def test_quitting_ends_the_process_while_a_refresh_is_in_flight(
    serve: Callable[[Respond], FakePrometheus],
) -> None:
    server = serve(trickle("body"))
    result, took = python("-c", QUIT, server.url)
    assert result.returncode == 0 and result.stdout == "quit\n", result.stderr
    assert took < 15  # nothing waits for the threads still reading


def padded(size: int) -> bytes:
    """An empty vector answer of ``size`` bytes (valid JSON)."""
    head = b'{"status":"success","data":{"resultType":"vector","result":[]},"pad":"'
    return head + b"x" * (size - len(head) - 2) + b'"}'


@pytest.mark.parametrize(("answers", "size"), [(1, 33 * 2**20), (5, 7 * 2**20)])
def test_the_answers_of_one_refresh_are_capped_together(
    serve: Callable[[Respond], FakePrometheus],
    capsys: pytest.CaptureFixture[str],
    answers: int,
    size: int,
) -> None:
    big, small = padded(size), json.dumps(EMPTY).encode()
    values_query = promql.refresh_queries("").values
    queries = list(promql.refresh_queries("").all().values())[:answers]
    server = serve(lambda h: h.send(big if h.query in queries else small))
    assert values_query in queries
    code, out, err = run_cli(capsys, "--prometheus", server.url, "--json")
    assert (code, out) == (2, "")
    assert "answers larger than 32 MiB" in err, err


def series_answer(size: int) -> bytes:
    """A vector of DCGM-like series (8 GPUs x 15 fields per node) of about ``size`` bytes."""
    items = []
    total = 0
    while total < size:
        n = len(items)
        node, rest = divmod(n, 120)
        labels = {"__name__": f"DCGM_FI_DEV_F{rest % 15}", "instance": f"gpu-{node:05d}:9400",
                  "gpu": str(rest // 15)}  # fmt: skip
        items.append(json.dumps({"metric": labels, "value": [1.8e9, str(n % 100)]}))
        total += len(items[-1]) + 1
    head = '{"status":"success","data":{"resultType":"vector","result":['
    return (head + ",".join(items) + "]}}").encode()


PEAK_RSS = """
import re, sys
from gputui import cli
code = cli.main(["fleet", "--json", "--prometheus", sys.argv[1], "--timeout", "300"])
# VmHWM: this program's peak RSS (ru_maxrss would count the forking test process too)
with open("/proc/self/status") as status:
    print(re.search(r"VmHWM:\\s+(\\d+) kB", status.read()).group(1), file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.parametrize(
    ("size", "refused"), [(6 * 2**20, False), (31 * 2**20, True)], ids=["5x6MiB", "5x31MiB"]
)
def test_memory_stays_a_small_multiple_of_the_answers(
    serve: Callable[[Respond], FakePrometheus], size: int, refused: bool
) -> None:
    """Five answers of 6 MiB (30 MiB, just under the cap) are read; five of 31 MiB are refused
    once the cap is reached, before they take gigabytes."""
    body = series_answer(size)
    server = serve(lambda h: h.send(body))
    result, _took = python("-c", PEAK_RSS, server.url, timeout=300)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert result.returncode == 2 if refused else result.returncode in (0, 1), result.stderr
    assert ("answers larger than 32 MiB" in result.stderr) == refused, result.stderr
    peak_mib = int(result.stderr.split()[-1]) / 1024
    print(f"peak RSS {peak_mib:.0f} MiB for five answers of {size / 2**20:.0f} MiB")
    assert peak_mib < 400


def test_an_answer_of_empty_arrays_is_refused_before_it_is_parsed(
    serve: Callable[[Respond], FakePrometheus],
) -> None:
    """31 MiB of ``[],[],…`` (under the byte cap) would take most of a GiB once parsed: an
    answer holding more arrays and objects than any fleet's is refused unparsed."""
    head = b'{"status":"success","data":{"resultType":"vector","result":['
    count = (31 * 2**20 - len(head)) // 3
    body, small = head + b"[]," * (count - 1) + b"[]]}}", json.dumps(EMPTY).encode()
    values_query = promql.refresh_queries("").values
    server = serve(lambda h: h.send(body if h.query == values_query else small))
    result, _took = python("-c", PEAK_RSS, server.url, timeout=300)
    assert result.returncode == 2, result.stderr
    assert "more than 1,000,000 JSON arrays and objects" in result.stderr, result.stderr
    peak_mib = int(result.stderr.split()[-1]) / 1024
    assert peak_mib < 250, peak_mib
