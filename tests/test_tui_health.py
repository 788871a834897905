"""Health findings on the dashboard: per-GPU badges, the title bar count, the findings strip, the
findings screen (h) with acknowledgement, and one notification per new finding.

The findings are what the real rules (gputui.health.rules) make of hand-made readings, put on
simulated snapshots by hand (``dataclasses.replace``) or handed out by a stub monitor with the
HealthMonitor API (``update`` / ``acknowledge``) attached to the sampler.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import pytest
from tests.factories import run, sample, snap

from gputui.core.format import finding_text
from gputui.core.history import History
from gputui.core.model import Finding, GpuSample, Snapshot
from gputui.engine.sampler import Sampler
from gputui.health import RULES, HealthConfig
from gputui.health.rollup import badge_text, gpu_status, node_summary, status_of, worst
from gputui.tui.app import GpuTuiApp
from gputui.tui.commands import gputui_commands
from gputui.tui.messages import SnapshotReady
from gputui.tui.screens.findings import FindingsScreen
from gputui.tui.screens.help import HelpScreen, key_rows

pytestmark = pytest.mark.usefixtures("tui_env")

T0 = 1_700_000_000.0


def judged(*samples: GpuSample, rule: str, **context: Any) -> Finding:
    """The one finding the real rule ``rule`` makes of a reading of ``samples``."""
    (finding,) = run(rule, snap(samples, t=T0 + 59), **context)
    return finding


def listed(finding: Finding, first_seen: float, *, active: bool = True) -> Finding:
    """``finding`` as the monitor lists it: seen from ``first_seen`` until the reading."""
    return dataclasses.replace(finding, first_seen=first_seen, last_seen=T0 + 59, active=active)


def lost(index: int) -> Finding:
    return judged(sample(index, lost=True, error="GPU is lost"), rule="gpu_lost")


def thermal(index: int, *reasons: str) -> Finding:
    return judged(sample(index, throttle_reasons=frozenset(reasons)), rule="throttle")


LOST = listed(lost(3), T0 + 10)
THERMAL = listed(thermal(5, "sw_thermal"), T0 + 20)  # a warning; "hw_thermal" would fail
ECC_HISTORY = listed(  # info: lifetime errors on a GPU that remaps rows
    judged(
        sample(1, ecc_aggregate_uncorrected=2, remapped_rows_correctable=0), rule="ecc_aggregate"
    ),
    T0,
)
OLD_DRIVER = listed(  # a node-wide warning: the driver's CUDA minor version is behind torch's
    judged(sample(0), rule="driver_cuda", config=HealthConfig(torch_cuda_version="12.8")), T0 + 10
)
ECC_CLEARED = listed(
    judged(sample(2, ecc_volatile_uncorrected=4), rule="ecc_uncorrected"), T0 + 5, active=False
)


def test_the_findings_are_the_real_rules() -> None:
    assert (LOST.rule, LOST.severity, LOST.gpu_index, LOST.key) == (
        "gpu_lost",
        "fail",
        3,
        "gpu_lost:3",
    )
    assert (THERMAL.severity, THERMAL.key) == ("warn", "throttle:5")
    assert (ECC_HISTORY.severity, ECC_HISTORY.gpu_index) == ("info", 1)
    assert (OLD_DRIVER.severity, OLD_DRIVER.gpu_index, OLD_DRIVER.key) == (
        "warn",
        None,
        "driver_cuda:node",
    )
    assert (ECC_CLEARED.severity, ECC_CLEARED.active) == ("fail", False)
    assert {f.rule for f in (LOST, THERMAL, ECC_HISTORY, OLD_DRIVER, ECC_CLEARED)} <= set(RULES)


def shown(finding: Finding) -> str:
    """How views that show the GPU separately print a finding's message."""
    return finding_text(finding.message, finding.gpu_index)


class StubMonitor:
    """The HealthMonitor API the TUI uses: ``update`` returns what the test set in ``findings``
    (minus acknowledged cleared ones); ``acknowledge`` drops cleared findings (thread-safe)."""

    def __init__(self, findings: tuple[Finding, ...] = ()) -> None:
        self.findings = findings
        self.acknowledged: list[str | None] = []
        self._lock = threading.Lock()

    def update(self, snapshot: Snapshot, history: History) -> tuple[Finding, ...]:
        with self._lock:
            return self.findings

    def acknowledge(self, key: str | None = None) -> int:
        with self._lock:
            self.acknowledged.append(key)
            keep = tuple(f for f in self.findings if f.active or (key is not None and f.key != key))
            done = len(self.findings) - len(keep)
            self.findings = keep
            return done


def advance(sampler: Sampler, seconds: float = 1.0) -> None:
    sampler.clock.now += seconds  # type: ignore[attr-defined]


async def show(app: GpuTuiApp, pilot, sampler: Sampler, findings=None) -> Snapshot:
    """Poll once, optionally replace the findings, post it like the sampler thread, settle."""
    snapshot = sampler.poll()
    advance(sampler)
    if findings is not None:
        snapshot = dataclasses.replace(snapshot, findings=tuple(findings))
    app.post_message(SnapshotReady(snapshot))
    await pilot.pause()
    return snapshot


def bottom_edge(app: GpuTuiApp, index: int) -> str:
    return app.dashboard.panels[index].plain_lines[-1]


def title(app: GpuTuiApp) -> str:
    return app.dashboard.title_bar.plain_lines[0]


def words(text: str) -> str:
    return " ".join(text.split())


def screen_text(app: GpuTuiApp) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


class Toasts:
    """Records ``app.notify`` calls."""

    def __init__(self, app: GpuTuiApp, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, str, str]] = []
        original = app.notify

        def notify(message, *, title="", severity="information", **kwargs):
            self.calls.append((str(message), str(title), str(severity)))
            return original(message, title=title, severity=severity, **kwargs)

        monkeypatch.setattr(app, "notify", notify)

    def health(self) -> list[tuple[str, str, str]]:
        return [c for c in self.calls if c[1].startswith(("GPU", "node")) or "health" in c[1]]


# -- pure helpers ---------------------------------------------------------------------------------


def test_badge_severity_is_the_worst_active_finding_of_that_gpu() -> None:
    findings = (LOST, THERMAL, ECC_HISTORY, OLD_DRIVER, ECC_CLEARED)
    assert gpu_status(findings, 3, active_only=True) == "fail"
    assert gpu_status(findings, 5, active_only=True) == "warn"
    assert gpu_status(findings, 1, active_only=True) == "ok"  # info does not change the badge
    assert gpu_status(findings, 2, active_only=True) == "ok"  # cleared findings do not count
    assert gpu_status(findings, 0, active_only=True) == "ok"
    assert status_of(worst(findings, active_only=True)) == "fail"
    assert badge_text("fail") == "✖ fail" and badge_text("warn") == "▲ warn"
    assert badge_text("ok") == "✔ ok"
    assert node_summary(findings) == ("✖ 1 failure, 2 warnings", "fail")
    assert node_summary((THERMAL,)) == ("▲ 1 warning", "warn")
    assert node_summary((ECC_HISTORY, ECC_CLEARED)) == ("✔ healthy", "ok")


# -- dashboard ------------------------------------------------------------------------------------


async def test_badges_fail_for_lost_gpu_warn_for_warning_ok_otherwise(sim_sampler) -> None:
    sampler = sim_sampler("faulty", polls=30)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(app, pilot, sampler, (LOST, THERMAL, ECC_HISTORY, OLD_DRIVER, ECC_CLEARED))
        assert "✖ fail" in bottom_edge(app, 3)
        assert "▲ warn" in bottom_edge(app, 5)
        for index in (0, 1, 2, 4, 6, 7):
            assert "✔ ok" in bottom_edge(app, index), index
        assert "✖ 1 failure, 2 warnings" in title(app)
        # The condition clears: the badge goes back to ok, the count follows.
        await show(app, pilot, sampler, (LOST, dataclasses.replace(THERMAL, active=False)))
        assert "✔ ok" in bottom_edge(app, 5)
        assert "✖ 1 failure" in title(app) and "warning" not in title(app)
        await show(app, pilot, sampler, ())
        assert "✔ healthy" in title(app)
        assert "✔ ok" in bottom_edge(app, 3)


async def test_no_badge_without_a_monitor_or_findings(sim_sampler) -> None:
    """No health checks ran: no badge and no 'healthy' claim."""
    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(app, pilot, sampler)
        assert "✔ ok" not in bottom_edge(app, 0)
        assert "healthy" not in title(app)
        assert not app.dashboard.findings_strip.display


async def test_monitor_attached_and_nothing_found_shows_ok_and_healthy(sim_sampler) -> None:
    sampler = sim_sampler("dgx-h100", polls=3)
    sampler.health = StubMonitor()
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(app, pilot, sampler)
        assert all("✔ ok" in bottom_edge(app, i) for i in range(8))
        assert "✔ healthy" in title(app)


async def test_compact_rows_and_roomy_panel_show_the_badge(sim_sampler) -> None:
    sampler = sim_sampler("faulty", polls=30)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await show(app, pilot, sampler, (LOST, THERMAL))
        assert app.dashboard.layout_choice.mode == "compact"
        rows = {i: p.plain_lines[0] for i, p in app.dashboard.panels.items()}
        assert "✖ fail" in rows[3] and "LOST" in rows[3]
        assert "▲ " in rows[5] and "°C! " in rows[5]  # the word gives way, never the temperature
        assert "✔ ok" in rows[0]
    sampler = sim_sampler("rtx4090", polls=5)
    app = GpuTuiApp(sampler, start_sampler=False)
    finding = thermal(0, "sw_thermal")
    async with app.run_test(size=(120, 40)) as pilot:
        await show(app, pilot, sampler, (finding,))
        assert app.dashboard.layout_choice.mode == "roomy"
        assert "▲ warn" in bottom_edge(app, 0)


async def test_findings_strip_shows_while_something_is_wrong(sim_sampler) -> None:
    sampler = sim_sampler("faulty", polls=30)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(app, pilot, sampler, (ECC_HISTORY,))
        strip = app.dashboard.findings_strip
        assert not strip.display  # info only
        await show(app, pilot, sampler, (THERMAL, LOST, ECC_HISTORY))
        assert strip.display
        line = strip.plain_lines[0]
        assert line.index("GPU 3: is lost") < line.index("GPU 5: clocks held down")
        assert line.rstrip().endswith("h: health")
        # All eight GPU panels still fit above it.
        assert all(p.region.height == 6 for p in app.dashboard.panels.values())
        await show(app, pilot, sampler, (dataclasses.replace(LOST, active=False),))
        assert not strip.display


# -- findings screen ------------------------------------------------------------------------------


async def test_h_opens_the_findings_screen_with_message_and_hint(sim_sampler) -> None:
    sampler = sim_sampler("faulty", polls=30)
    sampler.health = StubMonitor()
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(app, pilot, sampler, (THERMAL, LOST, ECC_CLEARED, OLD_DRIVER))
        await pilot.press("h")
        assert isinstance(app.screen, FindingsScreen)
        text = screen_text(app)
        for f in (LOST, THERMAL, ECC_CLEARED, OLD_DRIVER):
            assert shown(f) in text
            assert words(f.hint) in words(text)  # long hints wrap
        assert "✖ fail  GPU 3" in text and "▲ warn  GPU 5" in text and "node" in text
        assert "since 22:13:30" in text  # LOST.first_seen, on the snapshot clock (UTC)
        assert "cleared" in text
        # Worst and active first (within a severity, in rule order), cleared last.
        assert [f.key for f in app.screen.findings] == [
            LOST.key,
            THERMAL.key,
            OLD_DRIVER.key,
            ECC_CLEARED.key,
        ]
        # It follows new snapshots in place.
        await show(app, pilot, sampler, (THERMAL,))
        assert shown(LOST) not in screen_text(app)
        await pilot.press("escape")
        assert app.screen is app.dashboard
        await pilot.press("h")
        assert isinstance(app.screen, FindingsScreen)
        await pilot.press("h")  # h toggles
        assert app.screen is app.dashboard


async def test_an_amd_node_s_findings_name_amd_smi(monkeypatch, tmp_path) -> None:
    """The findings screen of an MI300X with a bad page pending retirement and lifetime ECC
    errors (the AMD backend on a fake amdsmi, judged by the real rules): amd-smi, no nvidia-smi."""
    from tests.fakes.clock import FakeClock
    from tests.fakes.fake_amdsmi import mi300x_node

    from gputui.backends.amd import AmdSmiBackend
    from gputui.engine.session import sampler_for
    from gputui.health import HealthConfig, HealthMonitor

    monkeypatch.setattr("gputui.core.pci.SYSFS_PCI_DEVICES", tmp_path / "no-sysfs")
    fake = mi300x_node(count=3)
    fake.gpus[2] = dataclasses.replace(
        fake.gpus[2], bad_pages=[(0x2000, 4096, 1)], ecc_uncorrectable=2
    )
    backend = AmdSmiBackend(fake)
    monitor = HealthMonitor(HealthConfig(current_user="me"), env={})
    sampler = sampler_for(backend, backend.open(), clock=FakeClock(T0), health=monitor)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(200, 50)) as pilot:
        await show(app, pilot, sampler)
        await pilot.press("h")
        assert isinstance(app.screen, FindingsScreen)
        text = screen_text(app)
    assert "retired memory pages pending" in text
    assert "amd-smi reset -G -g 2" in text and "amd-smi bad-pages -g 2" in text
    assert "nvidia-smi" not in text


async def test_findings_screen_without_findings_says_so(sim_sampler) -> None:
    sampler = sim_sampler("dgx-h100", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await show(app, pilot, sampler)
        await pilot.press("h")
        assert "no health monitor attached" in screen_text(app)
        await pilot.press("q")  # closes the screen, does not quit
        assert app.screen is app.dashboard and app.is_running


async def test_acknowledge_removes_a_cleared_finding(sim_sampler) -> None:
    sampler = sim_sampler("faulty", polls=30)
    monitor = StubMonitor((LOST, ECC_CLEARED, dataclasses.replace(THERMAL, active=False)))
    sampler.health = monitor
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(app, pilot, sampler)
        await pilot.press("h")
        screen = app.screen
        assert isinstance(screen, FindingsScreen)
        assert screen.selected_finding.key == LOST.key
        await pilot.press("a")  # active: refused
        assert monitor.acknowledged == []
        await pilot.press("down")
        assert screen.selected_finding.key == ECC_CLEARED.key
        await pilot.press("a")
        assert monitor.acknowledged == [ECC_CLEARED.key]
        assert shown(ECC_CLEARED) not in screen_text(app)  # at once, before the next reading
        await show(app, pilot, sampler)
        assert [f.key for f in screen.findings] == [LOST.key, THERMAL.key]
        await pilot.press("A")
        assert monitor.acknowledged == [ECC_CLEARED.key, THERMAL.key]
        await show(app, pilot, sampler)
        assert [f.key for f in screen.findings] == [LOST.key]


async def test_acknowledge_with_a_real_health_monitor(sim_sampler) -> None:
    health = pytest.importorskip("gputui.health")
    sampler = sim_sampler("faulty", polls=0)
    monitor = health.HealthMonitor(health.HealthConfig())
    sampler.health = monitor
    for _ in range(40):
        sampler.poll()
        advance(sampler)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        snapshot = await show(app, pilot, sampler)
        assert snapshot.findings, "the faulty scenario should produce findings"
        lost = [f for f in snapshot.findings if f.gpu_index == 3 and f.active]
        assert lost and "✖ fail" in bottom_edge(app, 3)
        await pilot.press("h")
        screen = app.screen
        assert isinstance(screen, FindingsScreen)
        assert all(shown(f) in screen_text(app) for f in screen.findings[:3])
        cleared = [f for f in screen.findings if not f.active]
        if cleared:
            await pilot.press("A")
            await show(app, pilot, sampler)
            still = {f.key for f in screen.findings}
            assert not any(f.key in still and not f.active for f in cleared)


# -- notifications --------------------------------------------------------------------------------


async def test_notification_once_per_new_finding(sim_sampler, monkeypatch) -> None:
    sampler = sim_sampler("faulty", polls=30)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        toasts = Toasts(app, monkeypatch)
        await show(app, pilot, sampler, (ECC_HISTORY,))
        assert toasts.health() == []  # info does not notify
        await show(app, pilot, sampler, (LOST, ECC_HISTORY))
        assert toasts.health() == [(shown(LOST), "GPU 3", "error")]
        for _ in range(3):
            await show(app, pilot, sampler, (LOST, ECC_HISTORY))
        await show(app, pilot, sampler, (LOST, THERMAL, OLD_DRIVER))
        # Two new ones in one reading: one notice, the worst first.
        assert toasts.health()[1:] == [
            (f"GPU 5: {shown(THERMAL)} (and 1 more: h shows them all)", "2 new health findings",
             "warning"),
        ]  # fmt: skip
        # Clears and comes back while still listed: not again.
        await show(app, pilot, sampler, (LOST, dataclasses.replace(THERMAL, active=False)))
        await show(app, pilot, sampler, (LOST, THERMAL))
        assert len(toasts.health()) == 2
        # Gets worse under the same key: once more.
        worse = thermal(5, "hw_thermal")
        assert (worse.key, worse.severity) == (THERMAL.key, "fail")
        await show(app, pilot, sampler, (LOST, worse))
        assert toasts.health()[-1] == (shown(worse), "GPU 5", "error")
        # Acknowledged (no longer listed), then back: a new occurrence, notified again.
        await show(app, pilot, sampler, (LOST,))
        await show(app, pilot, sampler, (LOST, THERMAL))
        assert toasts.health()[-1] == (shown(THERMAL), "GPU 5", "warning")
        assert len(toasts.health()) == 4
        # Also while paused: a finding is never silent.
        app.set_paused(True)
        await show(app, pilot, sampler, (LOST, THERMAL, ECC_CLEARED, lost(7)))
        assert toasts.health()[4:] == [(shown(lost(7)), "GPU 7", "error")]


async def test_the_first_readings_findings_give_no_notice(sim_sampler, monkeypatch) -> None:
    """At start the title bar counts the findings and the strip names them: no toasts over the
    panels. A finding that comes later gets its notice."""
    sampler = sim_sampler("faulty", polls=30)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        toasts = Toasts(app, monkeypatch)
        await show(app, pilot, sampler, (LOST, THERMAL, OLD_DRIVER))
        assert toasts.calls == [] and len(app._notifications) == 0
        assert "✖ 1 failure, 2 warnings" in title(app)
        assert app.dashboard.findings_strip.display
        await show(app, pilot, sampler, (LOST, THERMAL, OLD_DRIVER, lost(7)))
        assert toasts.health() == [(shown(lost(7)), "GPU 7", "error")]


async def test_many_new_findings_at_once_are_one_notice(sim_sampler, monkeypatch) -> None:
    sampler = sim_sampler("faulty", polls=30)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        toasts = Toasts(app, monkeypatch)
        await show(app, pilot, sampler, ())
        await show(app, pilot, sampler, [lost(i) for i in range(6)])
        assert toasts.health() == [
            (f"GPU 0: {shown(lost(0))} (and 5 more: h shows them all)", "6 new health findings",
             "error"),
        ]  # fmt: skip
        assert len(app._notifications) == 1
        await show(app, pilot, sampler, [lost(i) for i in range(6)])
        assert len(toasts.health()) == 1


# -- readonly, help, palette ----------------------------------------------------------------------


async def test_readonly_does_not_hide_health(sim_sampler) -> None:
    sampler = sim_sampler("faulty", polls=30)
    monitor = StubMonitor((LOST, ECC_CLEARED))
    sampler.health = monitor
    app = GpuTuiApp(sampler, start_sampler=False, readonly=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(app, pilot, sampler)
        assert "✖ fail" in bottom_edge(app, 3)
        assert "✖ 1 failure" in title(app)
        assert app.dashboard.findings_strip.display
        assert "Health" in screen_text(app)  # in the footer
        await pilot.press("h")
        assert isinstance(app.screen, FindingsScreen)
        assert words(LOST.hint) in words(screen_text(app))
        await pilot.press("A")
        assert monitor.acknowledged == [ECC_CLEARED.key]


async def test_help_and_command_palette_list_health(sim_sampler) -> None:
    sampler = sim_sampler("dgx-h100", polls=1)
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        assert ("h", "Health") in key_rows(app.dashboard)
        titles = [t for t, _, _ in gputui_commands(app)]
        assert "Show health findings" in titles
        dict((t, cb) for t, _, cb in gputui_commands(app))["Show health findings"]()
        await pilot.pause()
        assert isinstance(app.screen, FindingsScreen)
        await pilot.press("escape", "question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert "Health" in app.screen.help_text.plain and "✖ fail" in app.screen.help_text.plain
