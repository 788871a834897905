"""SVG snapshots of the dashboard (pytest-textual-snapshot). History is filled by polling the
simulated backend 60 times one fake second apart, so plots have data and every run is identical.

Update after a deliberate change with ``pytest tests/test_tui_snapshots.py --snapshot-update``
and look at ``snapshot_report.html`` (or the SVGs) before committing them.
"""

from __future__ import annotations

import pytest

from gputui.tui.app import GpuTuiApp

pytestmark = pytest.mark.usefixtures("tui_env")

POLLS = 60


def dashboard(sim_sampler, scenario: str, **kwargs) -> GpuTuiApp:
    sampler = sim_sampler(scenario, polls=POLLS)
    return GpuTuiApp(sampler, start_sampler=False, **kwargs)


def test_dgx_h100_120x40(snap_compare, sim_sampler) -> None:
    """Eight GPUs in two columns of framed panels, host strip, process table."""
    assert snap_compare(dashboard(sim_sampler, "dgx-h100"), terminal_size=(120, 40))


def test_dgx_h100_80x24(snap_compare, sim_sampler) -> None:
    """Eight compact rows, still every GPU, with the process table below."""
    assert snap_compare(dashboard(sim_sampler, "dgx-h100"), terminal_size=(80, 24))


def test_dgx_h100_200x60(snap_compare, sim_sampler) -> None:
    """A big terminal: two columns of panels with charts of utilization, memory, power and
    temperature (scale, time axis), the process table with whole command lines."""
    assert snap_compare(dashboard(sim_sampler, "dgx-h100"), terminal_size=(200, 60))


def test_rtx4090_roomy_120x40(snap_compare, sim_sampler) -> None:
    """One GPU: every field with its label and multi-row history plots."""
    assert snap_compare(dashboard(sim_sampler, "rtx4090"), terminal_size=(120, 40))


def test_faulty_gpu_lost_120x40(snap_compare, sim_sampler) -> None:
    """GPU 3 fell off the bus; ECC errors, thermal throttling and a degraded PCIe link."""
    assert snap_compare(dashboard(sim_sampler, "faulty"), terminal_size=(120, 40))


def test_gpu_selected_120x40(snap_compare, sim_sampler) -> None:
    """Key 2: GPU 2's panel highlighted, the table lists only its processes."""
    assert snap_compare(dashboard(sim_sampler, "dgx-h100"), press=["2"], terminal_size=(120, 40))


def test_mig_120x40(snap_compare, sim_sampler) -> None:
    """A node in MIG mode: the processes in MIG instances under their GPU (``0·g7``), sorted by
    GPU and instance, with the pods of the inference services in the JOB / POD column."""

    async def sort_by_gpu(pilot) -> None:
        pilot.app.dashboard.process_table.sort_by("gpu")
        await pilot.press("home")

    app = dashboard(sim_sampler, "mig")
    assert snap_compare(app, run_before=sort_by_gpu, terminal_size=(120, 40))


# -- the process table: grouped by GPU, a tree, tags, the filter ---------------------------------


def test_mig_grouped_80x24(snap_compare, sim_sampler) -> None:
    """The MIG node's 28 processes grouped by GPU (each GPU's index bright on its first row),
    by GPU memory within each; the header's right end: by GPU and where the cursor is."""
    assert snap_compare(dashboard(sim_sampler, "mig"), terminal_size=(80, 24))


def test_mig_grouped_120x40(snap_compare, sim_sampler) -> None:
    """The same at 120x40: the GPU panels in a grid, the table grouped below them."""
    assert snap_compare(dashboard(sim_sampler, "mig"), terminal_size=(120, 40))


def test_mig_grouped_200x60(snap_compare, sim_sampler) -> None:
    """A big terminal: a line for every one of the 28 processes (the charts give way to plain
    panels to leave the table the lines it needs)."""
    assert snap_compare(dashboard(sim_sampler, "mig"), terminal_size=(200, 60))


def test_tree_with_tags_120x40(snap_compare, sim_sampler) -> None:
    """Key f: the six ranks under torchrun's row (├─ └─), the others on their own; space on
    torchrun's row tagged all six (● in the margin, "6 tagged" in the header)."""

    async def tree_and_tags(pilot) -> None:
        await pilot.press("f", "home", "space", "home")

    app = dashboard(sim_sampler, "dgx-h100")
    assert snap_compare(app, run_before=tree_and_tags, terminal_size=(120, 40))


def test_filter_typing_120x40(snap_compare, sim_sampler) -> None:
    """/ then "8192" on the MIG node: the Filter: line with the text as typed, the filter's own
    footer (enter, esc), and the matched text highlighted in each row, brought into view
    (``--max-model-len 8192``) where the shortened command would have left it out."""

    async def type_filter(pilot) -> None:
        await pilot.press("slash", *"8192")

    app = dashboard(sim_sampler, "mig")
    assert snap_compare(app, run_before=type_filter, terminal_size=(120, 40))


def test_signal_dialog_120x40(snap_compare, sim_sampler, monkeypatch) -> None:
    """Key k on one's own process: the dialog, and the footer with the dialog's keys (not the
    dashboard's under it)."""
    from gputui.tui import permissions

    monkeypatch.setattr(permissions, "can_signal", lambda process: (True, ""))
    app = dashboard(sim_sampler, "dgx-h100")
    assert snap_compare(app, press=["k"], terminal_size=(120, 40))


def test_help_120x40(snap_compare, sim_sampler) -> None:
    """Key ?: every key, and the footer with the help's own (esc closes it)."""
    app = dashboard(sim_sampler, "dgx-h100")
    assert snap_compare(app, press=["question_mark"], terminal_size=(120, 40))


def test_mi300x_120x40(snap_compare, sim_sampler) -> None:
    """Eight MI300X: GFX clocks, XGMI rates, the junction temperature once (no edge sensor:
    ``hot 67°C mem 57°C``) and the process table's GFX% (AMD's GFX engine busy time)."""
    assert snap_compare(dashboard(sim_sampler, "mi300x"), terminal_size=(120, 40))


def test_mig_80x24(snap_compare, sim_sampler) -> None:
    """A MIG node in compact rows: ``MIG 7×1g.10gb`` where a GPU in MIG mode would show an
    empty utilization bar (the driver reports none); GPU 7, whole, keeps its bar."""
    assert snap_compare(dashboard(sim_sampler, "mig"), terminal_size=(80, 24))


def test_mig_200x60(snap_compare, sim_sampler) -> None:
    """A MIG node in a big terminal: each instance's memory in rows (side by side when there are
    many) where the utilization chart would be empty; memory, power and temperature charts."""
    assert snap_compare(dashboard(sim_sampler, "mig"), terminal_size=(200, 60))


# -- health findings ------------------------------------------------------------------------------

T0 = 1_700_000_000.0


def _finding(rule, severity, message, hint, gpu, at, *, active=True, last=None):
    from gputui.core.model import Finding

    key = f"{rule}:{'node' if gpu is None else gpu}"
    return Finding(rule, severity, message, hint, gpu, key, T0 + at, T0 + (last or 59), active)


FAULTY_FINDINGS = (
    _finding(
        "gpu_lost",
        "fail",
        "GPU 3 has fallen off the bus (XID 79)",
        "Drain the node; reset the GPU (nvidia-smi -r -i 3) or reboot, then reseat or RMA it "
        "if it happens again.",
        3,
        5,
    ),
    _finding(
        "ecc_uncorrected",
        "fail",
        "1 volatile uncorrected ECC error; row remapping pending",
        "Reset the GPU when idle so the pending row remap takes effect.",
        2,
        1,
    ),
    _finding(
        "throttle",
        "warn",
        "HW thermal slowdown active",
        "Check the cooling: fans, airflow and inlet temperature.",
        5,
        0,
    ),
    _finding(
        "pcie_degraded",
        "warn",
        "PCIe link trained at gen3 x8 under load (max gen5 x16)",
        "Reseat the GPU or check the riser; the link should train at gen5 x16.",
        6,
        0,
    ),
    _finding(
        "xid",
        "warn",
        "XID 48: double-bit ECC error",
        "See the ECC finding for GPU 2.",
        2,
        1,
        active=False,
        last=2,
    ),
)


class _Findings:
    """A health monitor stand-in that reports FAULTY_FINDINGS (deterministic snapshots)."""

    def update(self, snapshot, history):
        return FAULTY_FINDINGS

    def acknowledge(self, key=None) -> int:
        return 0


def faulty_with_findings(sim_sampler) -> GpuTuiApp:
    sampler = sim_sampler("faulty", polls=0)
    sampler.health = _Findings()
    for _ in range(POLLS):
        sampler.poll()
        sampler.clock.now += 1.0
    return GpuTuiApp(sampler, start_sampler=False)


def test_faulty_health_badges_120x40(snap_compare, sim_sampler) -> None:
    """Health badges in each panel's bottom edge, the count in the title bar and the findings
    strip under the host strip, every GPU still on screen."""
    assert snap_compare(faulty_with_findings(sim_sampler), terminal_size=(120, 40))


def test_faulty_health_badges_80x24(snap_compare, sim_sampler) -> None:
    """Compact rows of a failing node: every GPU that answers keeps its temperature (GPU 5's
    marked ``!``); a badge gives up its word, then the power, before a fault is counted."""
    assert snap_compare(faulty_with_findings(sim_sampler), terminal_size=(80, 24))


def test_faulty_findings_screen_120x40(snap_compare, sim_sampler) -> None:
    """Key h: every finding with its hint; the cleared XID last."""
    assert snap_compare(faulty_with_findings(sim_sampler), press=["h"], terminal_size=(120, 40))


def test_faulty_findings_screen_80x24(snap_compare, sim_sampler) -> None:
    """Key h at 80x24: a message or hint that goes on is indented under its first line, and
    "since 22:13:21" is never split."""
    assert snap_compare(faulty_with_findings(sim_sampler), press=["h"], terminal_size=(80, 24))


def test_help_80x24(snap_compare, sim_sampler) -> None:
    """Key ?: a compact key table first (three columns at 80), the long ones after it, then what
    each part shows, every body indented under its title."""
    app = dashboard(sim_sampler, "dgx-h100")
    assert snap_compare(app, press=["question_mark"], terminal_size=(80, 24))


# -- topology -------------------------------------------------------------------------------------


def _topology_readings(app: GpuTuiApp, readings: int = 5):
    """After ``t``: a few more readings, so the per-link history plots have data."""

    async def run_before(pilot) -> None:
        from gputui.tui.messages import SnapshotReady

        await pilot.press("t")
        await pilot.pause()
        for _ in range(readings):
            app.sampler.clock.now += 1.0  # type: ignore[attr-defined]
            app.post_message(SnapshotReady(app.sampler.poll()))
            await pilot.pause()

    return run_before


def test_topology_dgx_h100_120x40(snap_compare, sim_sampler) -> None:
    """Key t: NV18 everywhere through NVSwitch, legend, per-GPU PCIe/P2P/links, links table."""
    app = dashboard(sim_sampler, "dgx-h100")
    assert snap_compare(app, run_before=_topology_readings(app), terminal_size=(120, 40))


def test_topology_a100_pcie_120x40(snap_compare, sim_sampler) -> None:
    """Two PCIe GPUs on different sockets: SYS, no P2P, no link table."""
    app = dashboard(sim_sampler, "a100-pcie")
    assert snap_compare(app, run_before=_topology_readings(app), terminal_size=(120, 40))


def test_topology_mi300x_120x40(snap_compare, sim_sampler) -> None:
    """A full XGMI mesh: XGMI cells, seven links per GPU, each to one peer."""
    app = dashboard(sim_sampler, "mi300x")
    assert snap_compare(app, run_before=_topology_readings(app), terminal_size=(120, 40))


# -- replay ---------------------------------------------------------------------------------------


def test_replay_dgx_h100_120x40(snap_compare, sim_sampler, tmp_path) -> None:
    """gputui --replay: a three-minute recording of the simulated DGX played from 0:30 for a
    minute, then paused at 1:30 and set to ×4. The title bar shows "REPLAY 00:01:30 / 00:02:59
    ×4 paused" instead of the interval; the footer has play/pause and the seek keys, and says
    that k, p and R are off in a replay."""
    from gputui.backends.replay import ReplayBackend
    from gputui.core.record import Recorder
    from gputui.engine.session import sampler_for

    live = sim_sampler("dgx-h100")
    path = tmp_path / "session.jsonl.gz"
    with Recorder(path) as recorder:
        live.add_listener(recorder.write)
        for _ in range(180):
            live.poll()
            live.clock.now += 1.0  # type: ignore[attr-defined]
    wall = [0.0]
    backend = ReplayBackend(path, start_paused=True, monotonic=lambda: wall[0])
    sampler = sampler_for(backend, backend.open())
    backend.seek(backend.start + 30)
    backend.set_paused(False)
    for _ in range(POLLS):
        sampler.poll()
        wall[0] += 1.0
    backend.set_paused(True)
    backend.set_speed(4)
    sampler.poll()  # the reading at the position shown, 1:30
    app = GpuTuiApp(sampler, start_sampler=False)
    assert snap_compare(app, terminal_size=(120, 40))


# -- probe ----------------------------------------------------------------------------------------


def test_probe_dgx_h100_120x40(snap_compare, sim_sampler, monkeypatch) -> None:
    """Key p with canned results for GPUs 0 and 1 (a fake session, as if on real H100s): the
    pickers (every GPU busy), what fits, finished progress, measured | spec | % | verdict with
    GPU 1's BF16 LOW against its sibling, telemetry and the summary."""
    from tests.fakes.probe_session import TESTS, canned_session

    from gputui.tui.screens import probe as probe_mod

    monkeypatch.setattr(probe_mod, "cpu_mode", lambda node: False)
    app = dashboard(sim_sampler, "dgx-h100", probe_session=canned_session)

    async def run_before(pilot) -> None:
        await pilot.press("p")
        await pilot.pause()
        app.screen.start([0, 1], TESTS)  # type: ignore[attr-defined]
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(app, run_before=run_before, terminal_size=(120, 40))


def test_probe_dgx_h100_60x20(snap_compare, sim_sampler) -> None:
    """Key p in a 60x20 terminal: GPUs and tests side by side (busy GPUs marked "busy
    (--force)"), Start under the tests on screen, "what fits" below across the width; the body
    scrolls."""
    app = dashboard(sim_sampler, "dgx-h100")
    assert snap_compare(app, press=["p"], terminal_size=(60, 20))


def test_probe_dgx_h100_80x24(snap_compare, sim_sampler, monkeypatch) -> None:
    """Key p at 80x24 with canned results: the pickers with the busy reason in full, Start on
    screen, "what fits" under them (not squeezed to four columns)."""
    from tests.fakes.probe_session import TESTS, canned_session

    from gputui.tui.screens import probe as probe_mod

    monkeypatch.setattr(probe_mod, "cpu_mode", lambda node: False)
    app = dashboard(sim_sampler, "dgx-h100", probe_session=canned_session)

    async def run_before(pilot) -> None:
        await pilot.press("p")
        await pilot.pause()
        app.screen.start([0, 1], TESTS)  # type: ignore[attr-defined]
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(app, run_before=run_before, terminal_size=(80, 24))


def test_probe_failed_run_80x24(snap_compare, sim_sampler, monkeypatch) -> None:
    """A probe whose worker's torch is a CPU-only build: the bar red where it stopped, "failed"
    and why, and the summary says what to do (``gputui probe --python PATH``)."""
    from tests.fakes.probe_session import TESTS, manual_session

    from gputui.probe import protocol
    from gputui.tui.screens import probe as probe_mod

    monkeypatch.setattr(probe_mod, "cpu_mode", lambda node: False)
    app = dashboard(sim_sampler, "dgx-h100", probe_session=manual_session)
    why = "cuda:0: torch 2.13.0+cpu is a CPU-only build (no CUDA or ROCm)"

    async def run_before(pilot) -> None:
        await pilot.press("p")
        await pilot.pause()
        screen = app.screen
        screen.start([0], TESTS)  # type: ignore[attr-defined]
        await pilot.pause()
        screen.session.feed(0, [protocol.Error(None, why), protocol.Done(0.1)])  # type: ignore[attr-defined]
        await pilot.pause()
        screen.query_one("#probe-body").scroll_end(animate=False)
        await pilot.pause()

    assert snap_compare(app, run_before=run_before, terminal_size=(80, 24))


def test_probe_busy_gpu_asks_80x24(snap_compare, sim_sampler, monkeypatch) -> None:
    """Start with busy GPUs picked: the dialog, in the signal dialog's look, names what runs on
    them and asks (Cancel the default, F probes anyway as --force would)."""
    from gputui.tui.screens import probe as probe_mod

    monkeypatch.setattr(probe_mod, "cpu_mode", lambda node: False)
    app = dashboard(sim_sampler, "dgx-h100")

    async def run_before(pilot) -> None:
        await pilot.press("p")
        await pilot.pause()
        gpus = app.screen.query_one("#probe-gpus")
        gpus.select(0)
        gpus.select(1)
        await pilot.press("enter")
        await pilot.pause()

    assert snap_compare(app, run_before=run_before, terminal_size=(80, 24))
