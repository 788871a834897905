"""Alerts (``--notify``, ``--webhook``, ``[alerts]``): which findings are sent (new, severe
enough, rate-limited, one per key), what is sent, delivered to a real HTTP receiver on loopback
and to real commands; retries, redirects, credentials; never blocking the readings; the secret
parts of a webhook URL in no message; and the commands end to end."""

from __future__ import annotations

import base64
import dataclasses
import json
import shlex
import sys
import threading
import time
from pathlib import Path

import pytest
from tests.factories import T, gputui_env, record, snap, start_gputui
from tests.fakes.clock import fake_clock_sampler
from tests.fakes.webhook_receiver import Request, free_port, receiver

from gputui import cli
from gputui.backends.spec import BackendSpec
from gputui.commands.alerting import alerts_sent
from gputui.core.alert_message import FIELDS, alert_text
from gputui.core.model import Finding, Severity, Snapshot
from gputui.core.webhook_url import parse_webhook_url, redact_url, scrub
from gputui.engine.alert_send import SendFailed
from gputui.engine.alerts import AlertDispatcher
from gputui.engine.notify_command import NotifyCommand
from gputui.engine.session import open_session
from gputui.engine.webhook import Webhook
from gputui.settings.model import AlertSettings, Settings

SECRET = "T000/B000/XXXXSECRETXXXX"
TOKEN = "t0kenVALUE"
PASSWORD = "pa55word"
PROXIES = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Requests to the loopback receiver go straight to it."""
    for name in PROXIES:
        monkeypatch.delenv(name, raising=False)


def finding(
    key: str = "xid:3:79",
    severity: Severity = "fail",
    *,
    active: bool = True,
    gpu: int | None = 3,
    message: str = "XID 79 on GPU 3: GPU has fallen off the bus",
) -> Finding:
    return Finding(
        rule=key.split(":")[0],
        severity=severity,
        message=message,
        hint="drain the node and power-cycle it",
        gpu_index=gpu,
        key=key,
        first_seen=T,
        last_seen=T,
        active=active,
        action="reboot" if severity == "fail" else "watch",
    )


def reading(t: float, *findings: Finding, host: str = "dgx-h100-07") -> Snapshot:
    base = snap(t=t)
    node = dataclasses.replace(base.node, hostname=host)
    return dataclasses.replace(base, node=node, findings=findings)


def no_sleep(seconds: float) -> None:
    pass


def to_webhook(url: str, reports: list[str], **alerts: object) -> AlertDispatcher:
    """A dispatcher POSTing to ``url``, without waits between tries."""
    settings = AlertSettings(webhook=url, **alerts)  # type: ignore[arg-type]
    return AlertDispatcher(
        settings, report=reports.append, senders=[Webhook(url, sleep=no_sleep, timeout=5)]
    )


def keys_sent(requests: list[Request]) -> list[str]:
    return [r.json["key"] for r in requests]


# -- which findings are sent -----------------------------------------------------------------------


def test_each_new_finding_is_sent_once_and_a_repeat_is_not() -> None:
    """The simulated faulty node over eight readings: every warn / fail key once, the ones that
    stay active (most) not again, the ones that arrive later (GPU 3 lost, its XID) when new."""
    reports: list[str] = []
    sampler = fake_clock_sampler("faulty", judge="rules")
    with receiver() as got:
        alerts = to_webhook(f"{got.url}/hook", reports)
        sampler.add_listener(alerts.on_snapshot)
        expected: set[str] = set()
        for _ in range(8):
            snapshot = sampler.poll()
            sampler.clock.now += 1.0  # type: ignore[attr-defined]
            expected |= {
                f.key for f in snapshot.findings if f.active and f.severity in ("warn", "fail")
            }
        (counts,) = alerts.close()
        requests = got.requests
    sent = keys_sent(requests)
    assert sorted(sent) == sorted(expected)  # each key exactly once
    assert {"gpu_lost:3", "xid:3:79", "ecc_uncorrected:2"} <= set(sent)
    assert counts.sent == len(sent) and counts.lost == 0 and reports == []
    assert {r.path for r in requests} == {"/hook"}
    assert {r.headers["Content-Type"] for r in requests} == {"application/json"}


def test_a_flapping_finding_is_sent_at_most_once_per_rate_limit() -> None:
    on, off = finding(), ()
    timeline = [
        (T, (on,)),  # new: sent
        (T + 1, off),
        (T + 2, (on,)),  # back after 2 s: held back
        (T + 3, off),
        (T + 300, (on,)),  # back after 5 min: held back
        (T + 301, off),
        (T + 600, (on,)),  # 10 min after the first: sent
        (T + 601, (on,)),  # still active: not new
    ]
    reports: list[str] = []
    with receiver() as got:
        alerts = to_webhook(got.url, reports, rate_limit_minutes=10.0)
        for t, findings in timeline:
            alerts.on_snapshot(reading(t, *findings))
        alerts.close()
        limited = got.bodies()
    with receiver() as got:
        alerts = to_webhook(got.url, reports, rate_limit_minutes=0.0)
        for t, findings in timeline:
            alerts.on_snapshot(reading(t, *findings))
        alerts.close()
        unlimited = got.bodies()
    assert [b["time"] for b in limited] == ["2023-11-14T22:13:20Z", "2023-11-14T22:23:20Z"]
    assert len(unlimited) == 4  # every return, never the reading it stays active in


@pytest.mark.parametrize(
    ("least", "sent"),
    [("info", {"info", "warn", "fail"}), ("warn", {"warn", "fail"}), ("fail", {"fail"})],
)
def test_only_findings_at_or_above_the_severity_are_sent(least: Severity, sent: set[str]) -> None:
    findings = [finding(f"rule_{s}:0", s, gpu=0, message=f"GPU 0 {s}") for s in sent | {"info"}]
    findings += [finding("rule_warn:0", "warn", gpu=0), finding("rule_fail:0", "fail", gpu=0)]
    with receiver() as got:
        alerts = to_webhook(got.url, [], min_severity=least)
        alerts.on_snapshot(reading(T, *findings))
        alerts.close()
        bodies = got.bodies()
    assert {b["severity"] for b in bodies} == sent
    assert len(bodies) == len({b["key"] for b in bodies})  # one per key


def test_a_finding_that_gets_worse_is_sent_again_and_a_cleared_one_is_not() -> None:
    with receiver() as got:
        alerts = to_webhook(got.url, [])
        alerts.on_snapshot(reading(T, finding("temperature:5", "warn", gpu=5)))
        alerts.on_snapshot(reading(T + 1, finding("temperature:5", "fail", gpu=5)))
        alerts.on_snapshot(reading(T + 2, finding("temperature:5", "warn", gpu=5)))
        alerts.on_snapshot(reading(T + 3, finding("temperature:5", "fail", gpu=5, active=False)))
        alerts.close()
        bodies = got.bodies()
    assert [b["severity"] for b in bodies] == ["warn", "fail"]


# -- what is sent ----------------------------------------------------------------------------------


def test_the_payload_and_its_slack_text() -> None:
    with receiver() as got:
        alerts = to_webhook(got.url, [])
        alerts.on_snapshot(reading(T + 3, finding()))
        alerts.close()
        (body,) = got.bodies()
    assert tuple(body) == FIELDS
    assert body["text"] == (
        "gputui dgx-h100-07: fail XID 79 on GPU 3: GPU has fallen off the bus → reboot"
    )
    assert body["rule"] == "xid" and body["key"] == "xid:3:79" and body["gpu"] == 3
    assert body["action"] == "reboot" and body["hint"].startswith("drain")
    assert body["host"] == "dgx-h100-07"
    assert body["time"] == "2023-11-14T22:13:23Z" and body["first_seen"] == "2023-11-14T22:13:20Z"
    assert body["gputui_version"] == __import__("gputui").__version__
    # a message that does not name its GPU gets it; a node finding has none; no action, no arrow
    lost = dataclasses.replace(finding(message="lost"), action="none")
    assert alert_text(lost, "h") == "gputui h: fail GPU 3: lost"
    node = dataclasses.replace(finding(gpu=None, message="7 of 8 GPUs"), severity="warn")
    assert alert_text(node, "h") == "gputui h: warn 7 of 8 GPUs → reboot"
    assert "\n" not in alert_text(finding(message="two\nlines"), "h")


# -- the webhook: retries, redirects, credentials --------------------------------------------------


def test_a_5xx_is_tried_again_with_backoff_then_delivered() -> None:
    waits: list[float] = []
    with receiver([500, 503]) as got:
        Webhook(f"{got.url}/hook", sleep=waits.append).send(b'{"a": 1}')
        requests = got.requests
    assert len(requests) == 3 and {r.body for r in requests} == {b'{"a": 1}'}
    assert waits == [1.0, 2.0]


def test_a_5xx_every_time_fails_after_the_tries() -> None:
    waits: list[float] = []
    with receiver([500, 500, 500, 500]) as got:
        with pytest.raises(SendFailed) as failed:
            Webhook(got.url, sleep=waits.append).send(b"{}")
        assert len(got.requests) == 3
    assert failed.value.kind == "HTTP 500" and "(3 tries)" in failed.value.detail
    assert waits == [1.0, 2.0]


def test_a_4xx_is_not_tried_again() -> None:
    waits: list[float] = []
    with receiver([400, 200]) as got:
        with pytest.raises(SendFailed) as failed:
            Webhook(got.url, sleep=waits.append).send(b"{}")
        assert len(got.requests) == 1
    assert failed.value.kind == "HTTP 400" and "answered HTTP 400" in failed.value.detail
    assert waits == []


def test_a_refused_connection_is_tried_again() -> None:
    waits: list[float] = []
    with pytest.raises(SendFailed) as failed:
        Webhook(f"http://127.0.0.1:{free_port()}/hook", sleep=waits.append).send(b"{}")
    assert failed.value.kind == "connection" and waits == [1.0, 2.0]


def test_a_redirect_to_another_server_is_not_followed() -> None:
    with receiver() as elsewhere, receiver([(307, f"http://127.0.0.1:{0}/x")]) as got:
        got.answers = [(307, f"{elsewhere.url}/steal/{SECRET}")]
        with pytest.raises(SendFailed) as failed:
            Webhook(f"{got.url}/hook", sleep=no_sleep).send(b"{}")
        assert elsewhere.requests == [] and len(got.requests) == 1
    assert failed.value.kind == "redirect"
    assert f"{elsewhere.url}/…" in failed.value.detail and SECRET not in failed.value.detail


def test_a_same_origin_307_is_followed_with_the_body_and_a_302_is_not() -> None:
    with receiver([(307, "/moved")]) as got:
        Webhook(f"{got.url}/hook", sleep=no_sleep).send(b'{"k": 1}')
        first, second = got.requests
    assert (second.method, second.path, second.body) == ("POST", "/moved", b'{"k": 1}')
    assert first.path == "/hook"
    with receiver([(302, "/moved")]) as got:  # a POST would come back as a GET, without the alert
        with pytest.raises(SendFailed) as failed:
            Webhook(f"{got.url}/hook", sleep=no_sleep).send(b"{}")
        assert len(got.requests) == 1
    assert failed.value.kind == "redirect"


def test_credentials_in_the_url_are_sent_as_basic_auth_not_in_the_url() -> None:
    with receiver() as got:
        url = got.url.replace("http://", f"http://alice:{PASSWORD}%40x@") + "/hook"
        hook = Webhook(url, sleep=no_sleep)
        hook.send(b"{}")
        (request,) = got.requests
    expected = base64.b64encode(f"alice:{PASSWORD}@x".encode()).decode()
    assert request.headers["Authorization"] == f"Basic {expected}"
    assert request.path == "/hook"
    assert "alice" not in hook.name and PASSWORD not in hook.name


# -- never in the way ------------------------------------------------------------------------------


def test_a_receiver_that_hangs_does_not_block_the_readings() -> None:
    reports: list[str] = []
    sampler = fake_clock_sampler("faulty", judge="rules")
    with receiver(["hang"]) as got:
        alerts = to_webhook(got.url, reports)
        sampler.add_listener(alerts.on_snapshot)
        sampler.poll()  # its findings queue; the first request hangs
        sampler.clock.now += 1.0  # type: ignore[attr-defined]
        assert got.wait_for(1) and len(got.requests) == 1
        snapshot = sampler.poll()
        later = reading(T + 5, finding("new:1", gpu=1, message="GPU 1 new"))
        started = time.perf_counter()
        alerts.on_snapshot(later)
        took = time.perf_counter() - started
        started = time.perf_counter()
        (counts,) = alerts.close(timeout=0.2)
        closing = time.perf_counter() - started
    assert snapshot.findings  # the readings went on
    assert took < 0.5, f"the listener took {took:.3f} s"  # the receiver holds a send 5 s
    assert closing < 2.0 and counts.unsent >= 1 and counts.sent == 0


class Blocking:
    """A sender that holds each alert until released."""

    name = "--notify blocking"

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.bodies: list[bytes] = []

    def send(self, body: bytes) -> None:
        self.started.set()
        self.release.wait(10)
        self.bodies.append(body)


def test_a_full_queue_drops_the_oldest_and_says_so_once() -> None:
    reports: list[str] = []
    sender = Blocking()
    alerts = AlertDispatcher(
        AlertSettings(notify="x"), report=reports.append, senders=[sender], capacity=2
    )
    alerts.on_snapshot(reading(T, finding("a:0", gpu=0, message="GPU 0 a")))
    assert sender.started.wait(5)  # "a" is being sent
    more = [finding(f"{k}:0", gpu=0, message=f"GPU 0 {k}") for k in "bcde"]
    for i, one in enumerate(more):
        alerts.on_snapshot(reading(T + 1 + i, one))
    sender.release.set()
    (counts,) = alerts.close()
    assert [json.loads(b)["key"] for b in sender.bodies] == ["a:0", "d:0", "e:0"]
    assert counts.dropped == 2 and counts.sent == 3
    assert len(reports) == 1 and "dropping the oldest" in reports[0]


def test_failures_are_said_once_per_kind_and_sending_goes_on() -> None:
    reports: list[str] = []
    with receiver([500, 500, 500, 500, 500, 500, 404]) as got:
        alerts = to_webhook(got.url, reports)
        for i in range(4):
            alerts.on_snapshot(reading(T + i, finding(f"k{i}:0", gpu=0, message="GPU 0 x")))
        (counts,) = alerts.close()
        assert len(got.requests) == 3 + 3 + 1 + 1
    assert counts.failed == 3 and counts.sent == 1
    assert len(reports) == 2
    assert "HTTP 500" in reports[0] and "(3 tries)" in reports[0]
    assert "HTTP 404" in reports[1]
    assert all("Traceback" not in r for r in reports)


# -- the command -----------------------------------------------------------------------------------


def python_command(code: str, *args: str) -> str:
    return shlex.join([sys.executable, "-c", code, *args])


def test_notify_gets_each_alert_as_json_on_stdin(tmp_path: Path) -> None:
    out = tmp_path / "alerts.jsonl"
    code = "import sys; open(sys.argv[1], 'ab').write(sys.stdin.buffer.read() + b'\\n')"
    reports: list[str] = []
    alerts = AlertDispatcher(
        AlertSettings(notify=python_command(code, str(out))), report=reports.append
    )
    alerts.on_snapshot(reading(T, finding(), finding("gpu_lost:3", message="GPU 3 is lost")))
    (counts,) = alerts.close()
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(b["key"] for b in lines) == ["gpu_lost:3", "xid:3:79"]
    assert lines[0]["host"] == "dgx-h100-07" and counts.sent == 2 and reports == []


def test_notify_never_meets_the_terminal(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    seen = tmp_path / "seen.json"
    code = (
        "import json, os, sys\n"
        "print('LEAKED-OUT'); sys.stdout.flush()\n"
        "json.dump({'stdin': sys.stdin.read(), 'own_session': os.getsid(0) == os.getpid()},"
        " open(sys.argv[1], 'w'))\n"
    )
    NotifyCommand(python_command(code, str(seen))).send(b'{"k": 1}')
    facts = json.loads(seen.read_text())
    assert facts == {"stdin": '{"k": 1}', "own_session": True}
    out, err = capfd.readouterr()
    assert "LEAKED-OUT" not in out + err


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return True
    return state == "Z"  # killed, waiting for a parent that is not gputui to reap it


def test_a_command_that_hangs_is_killed_at_its_timeout_with_what_it_started(
    tmp_path: Path,
) -> None:
    pids = tmp_path / "pids"
    code = (
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "open(sys.argv[1], 'w').write(f'{os.getpid()} {child.pid}')\n"
        "time.sleep(60)\n"
    )
    started = time.monotonic()
    with pytest.raises(SendFailed) as failed:
        NotifyCommand(python_command(code, str(pids)), timeout=1.0).send(b"{}")
    took = time.monotonic() - started
    assert failed.value.kind == "timeout" and "within 1 s; killed" in failed.value.detail
    assert took < 5
    command, grandchild = (int(p) for p in pids.read_text().split())
    end = time.monotonic() + 3
    while not (_gone(command) and _gone(grandchild)) and time.monotonic() < end:
        time.sleep(0.05)
    assert _gone(command) and _gone(grandchild)


def test_a_failing_command_is_said_with_its_first_error_line() -> None:
    code = "import sys; sys.stderr.write('no mail server\\nmore\\n'); sys.exit(3)"
    with pytest.raises(SendFailed) as failed:
        NotifyCommand(python_command(code)).send(b"{}")
    assert failed.value.kind == "exit"
    assert failed.value.detail == "exited with status 3: no mail server"
    with pytest.raises(SendFailed) as missing:
        NotifyCommand("/nonexistent/notify-me --now").send(b"{}")
    assert missing.value.kind == "start" and "cannot run it" in missing.value.detail


# -- secrets ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://hooks.slack.com/services/T000/B000/XXXX", "https://hooks.slack.com/…"),
        ("https://bob:pw@example.com:8443/hook?token=abc#x", "https://example.com:8443/…"),
        ("http://[::1]:9/hook", "http://[::1]:9/…"),
        ("HTTPS://Example.COM", "https://example.com/…"),
        ("hooks.slack.com/services/T000/B000/XXXX", "(a URL that cannot be read)"),
        ("http://host:notaport/x", "(a URL that cannot be read)"),
    ],
)
def test_redact_url_shows_only_scheme_host_and_port(url: str, shown: str) -> None:
    assert redact_url(url) == shown


@pytest.mark.parametrize(
    "url",
    [
        f"ftp://bob:{PASSWORD}@example.com/{SECRET}",
        f"hooks.slack.com/services/{SECRET}",
        f"https:///services/{SECRET}",
        f"https://example.com/{SECRET} {TOKEN}",
        f"https://example.com:99999/{SECRET}",
    ],
)
def test_a_url_that_is_no_webhook_is_refused_without_its_secret(url: str) -> None:
    with pytest.raises(ValueError) as refused:
        parse_webhook_url(url)
    assert SECRET not in str(refused.value) and PASSWORD not in str(refused.value)


def test_scrub_takes_every_secret_piece_out_of_a_text() -> None:
    url = f"https://bob:{PASSWORD}@example.com/services/{SECRET}?token={TOKEN}"
    text = f"{url}; path /services/{SECRET}, token={TOKEN}, bob:{PASSWORD}, host example.com"
    cleaned = scrub(text, url)
    assert cleaned == "…; path …, …, …, host example.com"


def test_no_message_of_the_senders_shows_the_secret(capsys: pytest.CaptureFixture[str]) -> None:
    """Every failure a webhook can meet, the start line, the reports and the summary, with a
    secret path, query and password in the URL."""
    texts: list[str] = []

    def secret_url(base: str) -> str:
        base = base.replace("http://", f"http://bob:{PASSWORD}@")
        return f"{base}/services/{SECRET}?token={TOKEN}"

    answers: list = [500, 500, 500, 404, (307, "http://127.0.0.1:1/x"), "hang", "hang", "hang"]
    with receiver(answers) as got:
        hook = Webhook(secret_url(got.url), sleep=no_sleep, timeout=0.3)
        texts.append(hook.name)
        for _ in range(4):  # 500 three times, 404, a redirect elsewhere, no answer
            with pytest.raises(SendFailed) as failed:
                hook.send(b"{}")
            texts.append(failed.value.detail)
        got.release()
    refused = Webhook(secret_url(f"http://127.0.0.1:{free_port()}"), sleep=no_sleep)
    with pytest.raises(SendFailed) as failed:
        refused.send(b"{}")
    texts.append(failed.value.detail)
    assert [t.split(" ")[0] for t in texts[1:]] == [
        "answered",
        "answered",
        "redirected",
        "no",
        "cannot",
    ]
    # what the commands' helper prints: where alerts go, a failure, the summary
    session = open_session(BackendSpec.sim("faulty"), interval=0.2)
    with receiver([404] * 20) as got:
        settings = Settings(alerts=AlertSettings(webhook=secret_url(got.url)))
        with alerts_sent(settings, session) as alerts:
            assert alerts is not None
            session.sampler.poll()
    session.close()
    err = capsys.readouterr().err
    assert "alerts (warn and fail) by --webhook http://127.0.0.1:" in err
    assert "answered HTTP 404" in err and " failed" in err
    texts.append(err)
    for text in texts:
        for secret in (SECRET, TOKEN, PASSWORD, "bob", "services"):
            assert secret not in text, text


def test_no_setting_message_shows_the_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``gputui config`` (text and JSON), a config file's problem line, a bad environment
    variable and a bad option."""
    url = f"https://bob:{PASSWORD}@hooks.slack.com/services/{SECRET}?token={TOKEN}"
    monkeypatch.setenv("GPUTUI_WEBHOOK", url)
    assert cli.main(["config"]) == 0
    text = capsys.readouterr().out
    assert '"https://hooks.slack.com/…"' in text
    assert cli.main(["config", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["settings"]["alerts.webhook"] == {
        "value": "https://hooks.slack.com/…",
        "source": "env GPUTUI_WEBHOOK",
    }
    outputs = [text, json.dumps(data)]
    monkeypatch.delenv("GPUTUI_WEBHOOK")
    config = tmp_path / "config.toml"
    config.write_text(f'[alerts]\nwebhook = "ftp://bob:{PASSWORD}@x/{SECRET}"\n')
    assert cli.main(["--config", str(config), "config"]) == 0
    outputs.append(capsys.readouterr().err)
    monkeypatch.setenv("GPUTUI_WEBHOOK", f"gopher://x/{SECRET}")
    with pytest.raises(SystemExit):
        cli.main(["record", "--demo", "--duration", "1", str(tmp_path / "r.jsonl")])
    outputs.append(capsys.readouterr().err)
    monkeypatch.delenv("GPUTUI_WEBHOOK")
    with pytest.raises(SystemExit):
        cli.main(["export", "--demo", "--webhook", f"ftp://bob:{PASSWORD}@x/{SECRET}"])
    outputs.append(capsys.readouterr().err)
    assert "ftp://x/…" in outputs[2] and "gopher://x/…" in outputs[3] and "ftp://x/…" in outputs[4]
    for output in outputs:
        for secret in (SECRET, TOKEN, PASSWORD, "bob"):
            assert secret not in output, output


# -- the commands ----------------------------------------------------------------------------------


def test_export_sends_the_faulty_nodes_fail_findings_end_to_end() -> None:
    """``gputui export --backend sim:faulty --webhook URL`` in a child process, until GPU 3
    falls off the bus (about 3 s into the scenario)."""
    env = {k: v for k, v in gputui_env().items() if k not in PROXIES}
    with receiver() as got:
        hook = f"{got.url}/hook/{SECRET}"
        argv = ["export", "--backend", "sim:faulty", "--interval", "0.2", "--webhook", hook]
        argv += ["--listen", f"127.0.0.1:{free_port()}"]
        child = start_gputui(*argv, env=env)
        try:
            arrived = got.wait_until(lambda rs: "xid:3:79" in keys_sent(rs), timeout=60)
        finally:
            child.terminate()
            out, err = child.communicate(timeout=60)
        bodies = got.bodies()
        paths = {r.path for r in got.requests}
    assert arrived, err
    assert child.returncode == 0, err
    keys = [b["key"] for b in bodies]
    assert len(keys) == len(set(keys))
    fails = {b["key"] for b in bodies if b["severity"] == "fail"}
    assert {"ecc_uncorrected:2", "nvlink_down:1:link7", "gpu_lost:3", "xid:3:79"} <= fails
    xid = next(b for b in bodies if b["key"] == "xid:3:79")
    assert xid["text"].endswith(": fail XID 79 on GPU 3: GPU has fallen off the bus → reboot")
    assert paths == {f"/hook/{SECRET}"}
    assert f"--webhook {got.url}/…" in err and SECRET not in out + err


def test_the_config_files_alerts_table_reaches_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "alerts.jsonl"
    code = "import sys; open(sys.argv[1], 'ab').write(sys.stdin.buffer.read() + b'\\n')"
    command = python_command(code, str(out))
    with receiver() as got:
        config = tmp_path / "config.toml"
        config.write_text(
            "[alerts]\n"
            f"webhook = {json.dumps(got.url + '/from-file')}\n"
            f"notify = {json.dumps(command)}\n"
            'min_severity = "fail"\n'
            "rate_limit_minutes = 30\n",
            encoding="utf-8",
        )
        argv = ["--config", str(config), "record", "--backend", "sim:faulty", "--interval", "0.2"]
        assert cli.main([*argv, "--duration", "1", str(tmp_path / "r.jsonl")]) == 0
        bodies = got.bodies()
        paths = {r.path for r in got.requests}
    assert paths == {"/from-file"}
    assert bodies and {b["severity"] for b in bodies} == {"fail"}
    assert {"ecc_uncorrected:2", "temperature:5"} <= {b["key"] for b in bodies}
    noted = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(b["key"] for b in noted) == sorted(b["key"] for b in bodies)
    assert "gputui: alerts (fail) by --notify python" in capsys.readouterr().err
    assert cli.main(["--config", str(config), "config", "--json"]) == 0
    settings = json.loads(capsys.readouterr().out)["settings"]
    assert settings["alerts.min_severity"] == {"value": "fail", "source": str(config)}
    assert settings["alerts.rate_limit_minutes"]["value"] == 30.0


def test_alert_options_where_no_alert_is_sent_are_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--webhook", "http://127.0.0.1:9/x", "snapshot", "--demo"])
    assert exit_.value.code == 2
    assert "--webhook is for the dashboard, export and record, not snapshot" in (
        capsys.readouterr().err
    )
    assert cli.main(["--webhook", "http://127.0.0.1:9/x", "config"]) == 0  # shows it
    assert "http://127.0.0.1:9/…" in capsys.readouterr().out
    path = tmp_path / "r.jsonl"
    record(path, readings=3)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--replay", str(path), "--notify", "true"])
    assert exit_.value.code == 2
    assert "--notify: a replay sends no alerts" in capsys.readouterr().err


def test_a_replay_sends_no_alert_from_the_config_file(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    record(path, readings=3)
    session = open_session(BackendSpec.replay(str(path)))
    settings = Settings(alerts=AlertSettings(notify="true"))
    with alerts_sent(settings, session, announce=False) as alerts:
        assert alerts is None
    session.close()
    live = open_session(BackendSpec.sim("faulty"))
    with alerts_sent(settings, live, announce=False) as alerts:
        assert alerts is not None
    live.close()


@pytest.mark.usefixtures("tui_env")
async def test_the_dashboard_shows_a_failed_alert_as_a_notification() -> None:
    from gputui.tui.app import GpuTuiApp

    app = GpuTuiApp(fake_clock_sampler("faulty"), start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        worker = threading.Thread(
            target=app.report_alert_problem,
            args=("gputui: alert by --webhook https://hooks.slack.com/… failed: HTTP 404",),
        )
        worker.start()
        worker.join()
        await pilot.pause()
        notes = [(n.title, n.message) for n in app._notifications]
    assert ("alerts", "alert by --webhook https://hooks.slack.com/… failed: HTTP 404") in notes
