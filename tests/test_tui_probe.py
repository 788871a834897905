"""The probe screen (key p): GPU and test pickers, a fake session feeding canned protocol
messages into the results table, progress, summary, Esc cancelling, what fits, replay mode."""

from __future__ import annotations

import pytest
from tests.fakes.clock import FakeClock
from tests.fakes.probe_session import (
    CANNED,
    TESTS,
    FakeSession,
    hello,
    manual_session,
    result,
)

from gputui.probe import protocol
from gputui.probe.runner import spec_for
from gputui.specs import fit
from gputui.tui.app import GpuTuiApp
from gputui.tui.commands import gputui_commands
from gputui.tui.screens import probe as probe_mod
from gputui.tui.screens.confirm_probe import ConfirmProbeScreen
from gputui.tui.screens.confirm_signal import TYPE_AHEAD_S
from gputui.tui.screens.help import key_rows
from gputui.tui.screens.probe import (
    BUSY_SHORT,
    BUSY_TEXT,
    CPU_VERDICT,
    ProbeScreen,
    SubprocessProbeSession,
)
from gputui.tui.screens.probe_state import ProbeRunState

pytestmark = pytest.mark.usefixtures("tui_env")

SIZE = (120, 40)


def dialog_clock(monkeypatch) -> FakeClock:
    """The busy-GPU dialog's clock, moved on by :func:`confirm_busy` (keys typed before the
    dialog could be read choose nothing)."""
    clock = FakeClock()
    monkeypatch.setattr("gputui.tui.screens.confirm_signal.monotonic", clock)
    return clock


async def confirm_busy(app: GpuTuiApp, pilot, clock: FakeClock, *keys: str) -> None:
    """Start was pressed with busy GPUs picked: the dialog asks; read it, then press ``keys``."""
    await pilot.pause()
    assert isinstance(app.screen, ConfirmProbeScreen)
    clock.now += TYPE_AHEAD_S + 0.05
    await pilot.press(*keys)
    await pilot.pause()


async def open_probe(app: GpuTuiApp, pilot) -> ProbeScreen:
    await pilot.pause()
    await pilot.press("p")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, ProbeScreen)
    return screen


def table_rows(screen: ProbeScreen) -> list[list[str]]:
    table = screen.query_one("#probe-results")
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


# -- the session adapter -------------------------------------------------------------------------


def test_subprocess_session_targets(sim_sampler) -> None:
    """GPUs map to ``cuda:N`` in PCI bus order; the CPU run is one CPU target."""

    class Screen:
        node = sim_sampler("dgx-h100", polls=1).poll().node

    gpus = SubprocessProbeSession(Screen(), python="/py")  # type: ignore[arg-type]
    targets = gpus.targets([3, 0])
    assert [(t.gpu, t.label) for t in targets] == [(3, "GPU 3"), (0, "GPU 0")]
    assert all(t.device.startswith("cuda:") for t in targets)
    cpu = SubprocessProbeSession(Screen(), cpu=True)  # type: ignore[arg-type]
    (target,) = cpu.targets([])
    assert (target.gpu, target.device, target.label) == (None, "cpu", "CPU")


def test_run_state_folds_every_message_kind(sim_sampler) -> None:
    """Retries, skips, test errors and the cancel notice reach progress and the summary notes."""
    state = ProbeRunState(sim_sampler("dgx-h100", polls=1).poll().node)
    tests = ["memory_copy", "h2d", "matmul_fp8"]
    state.begin([0], tests, None)
    run = state.runs[0]
    state.apply(0, hello(0, tests))
    state.apply(0, protocol.Progress("memory_copy", 0.25, "warming up"))
    assert (run.test, run.fraction, run.device_name) == (
        "memory_copy",
        0.25,
        "NVIDIA H100 80GB HBM3",
    )
    state.apply(0, protocol.Retry("memory_copy", "out of memory", 4096, 1, "2×4 KiB"))
    assert run.text == "out of memory, retrying smaller 2×4 KiB"
    state.apply(0, result("memory_copy", 2900.0, "GB/s"))
    state.apply(0, protocol.Skipped("matmul_fp8", "FP8 needs compute capability ≥ 8.9"))
    state.apply(0, protocol.Error("h2d", "RuntimeError: boom"))
    state.apply(0, protocol.Error(None, protocol.CANCELLED))  # a notice, not a failure
    assert run.finished == set(tests) and not run.error and state.running
    state.apply(0, protocol.Done(3.0))
    assert not state.running and run.progress == 1.0 and not run.failed
    assert state.skipped == ["GPU 0 · FP8 matmul: FP8 needs compute capability ≥ 8.9"]
    assert state.notes == ["GPU 0: host → device failed: RuntimeError: boom"]
    assert [(r.test, r.value) for r in state.results] == [("memory_copy", 2900.0)]
    # One line each: the skipped tests with their reasons, then the other notes.
    assert state.summary().splitlines()[-3:] == [
        "Skipped:",
        "  GPU 0 · FP8 matmul: FP8 needs compute capability ≥ 8.9",
        "GPU 0: host → device failed: RuntimeError: boom",
    ]


# -- the screen -----------------------------------------------------------------------------------


async def test_p_opens_probe_screen_marks_busy_gpus(sim_sampler) -> None:
    sampler = sim_sampler("a100-pcie", polls=3)
    app = GpuTuiApp(sampler, start_sampler=False, probe_session=manual_session)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_probe(app, pilot)
        gpus = screen.query_one("#probe-gpus")
        snapshot = app.latest
        busy = {
            g.index
            for g in snapshot.node.gpus
            if snapshot.processes_on(g.index)
            or (snapshot.sample(g.index).memory_used_bytes or 0) > 1 << 30
        }
        assert screen.busy == busy
        for index in range(gpus.option_count):
            option = gpus.get_option_at_index(index)
            is_busy = option.value in busy
            assert (BUSY_TEXT in str(option.prompt)) == is_busy
            assert (option.value in gpus.selected) == (not is_busy and not screen.cpu)
        tests = screen.query_one("#probe-tests")
        assert set(tests.selected) == set(probe_mod.QUICK_TESTS)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ProbeScreen)


async def test_busy_gpu_listed_unchecked(sim_sampler) -> None:
    """Every GPU of the simulated DGX runs a job: all listed, none checked."""
    app = GpuTuiApp(sim_sampler("dgx-h100", polls=3), start_sampler=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_probe(app, pilot)
        gpus = screen.query_one("#probe-gpus")
        assert gpus.option_count == 8 and screen.busy == set(range(8))
        assert all(BUSY_TEXT in str(gpus.get_option_at_index(i).prompt) for i in range(8))


async def test_canned_results_fill_the_table(sim_sampler, monkeypatch) -> None:
    sampler = sim_sampler("dgx-h100", polls=3)
    monkeypatch.setattr(probe_mod, "cpu_mode", lambda node: False)
    clock = dialog_clock(monkeypatch)
    app = GpuTuiApp(sampler, start_sampler=False, probe_session=manual_session)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_probe(app, pilot)
        gpus, tests = screen.query_one("#probe-gpus"), screen.query_one("#probe-tests")
        gpus.select(0)
        gpus.select(1)
        tests.deselect_all()
        for test in TESTS:
            tests.select(test)
        await pilot.press("enter")
        await confirm_busy(app, pilot, clock, "F")  # GPUs 0 and 1 are busy: probe anyway
        session = FakeSession.instances[-1]
        assert session.started == ([0, 1], TESTS)
        assert screen.running
        assert all(run.progress == 0 for run in screen.runs.values())

        session.feed(0, CANNED[0][:2])
        await pilot.pause()
        assert screen.runs[0].progress == pytest.approx(0.5 / 3)
        assert "memory copy 50%" in str(screen.progress_lines()[0])
        session.feed(0, CANNED[0][2:3])
        await pilot.pause()
        assert screen.runs[0].progress == pytest.approx(1 / 3)

        session.feed(0, CANNED[0][3:])
        session.feed(1, CANNED[1])
        await pilot.pause()
        assert not screen.running
        rows = table_rows(screen)
        assert len(rows) == 6
        copy0 = rows[0]
        assert copy0[:2] == ["GPU 0", "memory copy"]
        assert copy0[2] == "2,900 GB/s" and copy0[3] == "3,350" and copy0[4] == "87%"
        assert copy0[5] == "OK" and "read+write" in copy0[6]
        h2d0 = rows[1]
        assert h2d0[3] == "63.0" and h2d0[4] == "86%" and h2d0[5] == "OK"  # gen5 x16
        bf16_1 = rows[5]
        assert bf16_1[:2] == ["GPU 1", "BF16 matmul"]
        bf16_spec = spec_for(app.dashboard.node.gpus[1])[1]["bf16_tflops"]
        assert bf16_1[3] == f"{bf16_spec:,.0f}" and bf16_1[4] == f"{640 / bf16_spec:.0%}"
        assert bf16_1[5] == "LOW"
        summary = screen.summary_text
        assert "GPU 0: all 3 results as expected." in summary
        assert "GPU 1: BF16 matmul 18% below its siblings (LOW)" in summary
        assert str(screen.query_one("#probe-summary").render()).startswith("GPU 0: all 3")
        assert all("done (3 tests)" in str(line) for line in screen.progress_lines())
        telemetry = screen.telemetry_lines()
        assert telemetry[0].startswith("GPU 0  SM ") and "throttle:" in telemetry[0]


async def test_escape_during_a_run_cancels(sim_sampler) -> None:
    app = GpuTuiApp(sim_sampler("dgx-h100", polls=3), start_sampler=False)
    app.probe_session = manual_session
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_probe(app, pilot)
        screen.start([], ["memory_copy"])  # the simulated backend: one CPU run
        await pilot.pause()
        session = FakeSession.instances[-1]
        session.feed(None, [hello(None, ["memory_copy"])])
        await pilot.pause()
        assert screen.running and list(screen.runs) == [None]
        await pilot.press("escape")
        await pilot.pause()
        assert session.cancelled >= 1
        assert not isinstance(app.screen, ProbeScreen)


async def test_cpu_run_has_no_spec(sim_sampler) -> None:
    app = GpuTuiApp(sim_sampler("rtx4090", polls=3), start_sampler=False)
    app.probe_session = manual_session
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_probe(app, pilot)
        assert screen.cpu and screen.query_one("#probe-gpus").disabled
        await pilot.press("enter")
        await pilot.pause()
        session = FakeSession.instances[-1]
        session.feed(
            None,
            [
                hello(None, ["memory_copy"]),
                result("memory_copy", 12.5, "GB/s"),
                protocol.Done(1.0),
            ],
        )
        await pilot.pause()
        (row,) = table_rows(screen)
        assert row[0] == "CPU" and row[3] == "—" and row[5] == CPU_VERDICT
        assert screen.summary_text.startswith("CPU run: 1 result measured on this machine's CPU")
        assert "no spec comparison" in screen.summary_text
        title = str(screen.query_one("#probe-title").render())
        assert "CPU run" in title and "no real GPU" in title
        assert "not judged: CPU run" in row[6]


async def test_what_fits_matches_fit_module(sim_sampler) -> None:
    app = GpuTuiApp(sim_sampler("dgx-h100", polls=3), start_sampler=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_probe(app, pilot)
        text = str(screen.query_one("#probe-fits-text").render())
        info = app.dashboard.node.gpus[0]
        sample = app.latest.sample(0)
        rows = fit.fits(info.memory_total_bytes, sample.memory_free_bytes)
        node = fit.node_fits(
            [
                (g.memory_total_bytes, app.latest.sample(g.index).memory_free_bytes)
                for g in app.dashboard.node.gpus
            ]
        )
        assert "What fits — GPU 0" in text
        assert "79.6 GiB, " in text and " GiB free" in text  # not a panel: sizes say GiB
        fp16 = next(line for line in text.splitlines() if line.startswith("FP16 inference"))
        assert f"{rows[0].total_b:.0f} B" in fp16 and f"{node[0].total_b:.0f} B" in fp16
        train = next(line for line in text.splitlines() if line.startswith("training (Adam)"))
        assert f"{rows[-1].total_b:.1f} B" in train
        assert "16 bytes per parameter" in text and "sharded" in text
        # Highlighting another GPU moves the panel to it.
        screen.query_one("#probe-gpus").highlighted = 3
        await pilot.pause()
        assert "What fits — GPU 3" in str(screen.query_one("#probe-fits-text").render())


async def test_probe_key_help_and_palette(sim_sampler) -> None:
    app = GpuTuiApp(sim_sampler("dgx-h100", polls=3), start_sampler=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert ("p", "Run the probe") in key_rows(app.dashboard)
        assert "Run the probe" in [title for title, _, _ in gputui_commands(app)]
        assert app.check_action("probe", ()) is True


async def test_probe_hidden_in_replay(sim_sampler, tmp_path) -> None:
    from gputui.backends.replay import ReplayBackend
    from gputui.core.record import Recorder
    from gputui.engine.session import sampler_for

    live = sim_sampler("dgx-h100")
    path = tmp_path / "session.jsonl.gz"
    with Recorder(path) as recorder:
        live.add_listener(recorder.write)
        for _ in range(3):
            live.poll()
            live.clock.now += 1.0
    backend = ReplayBackend(path, start_paused=True)
    sampler = sampler_for(backend, backend.open())
    sampler.poll()
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.check_action("probe", ()) is None  # off, and the footer says why
        assert ("p", "Run the probe (off: replay)") in key_rows(app.dashboard)
        assert "Run the probe" not in [title for title, _, _ in gputui_commands(app)]
        await pilot.press("p")
        await pilot.pause()
        assert not isinstance(app.screen, ProbeScreen)
        assert [n.title for n in app._notifications] == ["Probe is off"]


async def test_summary_names_throttling(sim_sampler, monkeypatch) -> None:
    """A LOW result while telemetry shows a power cap and clocks below max: the summary says
    why."""
    import dataclasses

    from gputui.tui.messages import SnapshotReady

    sampler = sim_sampler("dgx-h100", polls=3)
    monkeypatch.setattr(probe_mod, "cpu_mode", lambda node: False)
    app = GpuTuiApp(sampler, start_sampler=False, probe_session=manual_session)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_probe(app, pilot)
        screen.start([0], ["matmul_bf16"])
        await pilot.pause()
        snap = app.latest
        capped = dataclasses.replace(
            snap.sample(0), clock_sm_mhz=1410, throttle_reasons=frozenset({"sw_power_cap"})
        )
        gpus = tuple(capped if s.index == 0 else s for s in snap.gpus)
        app.post_message(SnapshotReady(dataclasses.replace(snap, gpus=gpus)))
        await pilot.pause()
        assert "power cap" in screen.telemetry_lines()[0]
        session = FakeSession.instances[-1]
        session.feed(
            0,
            [
                hello(0, ["matmul_bf16"]),
                result("matmul_bf16", 400.0, "TFLOPS"),
                protocol.Done(5.0),
            ],
        )
        await pilot.pause()
        assert "BF16 matmul at 40% of spec" in screen.summary_text
        assert "(LOW)" in screen.summary_text
        assert "SM clock down to 1410 MHz by power cap" in screen.summary_text


async def _wait(pilot, condition, seconds: float = 60.0) -> None:
    for _ in range(int(seconds / 0.05)):
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError("timed out")


async def test_real_cpu_child_runs_and_cancels(sim_sampler) -> None:
    """The default session on the simulated backend: one real ``--device cpu`` child."""
    pytest.importorskip("torch")
    app = GpuTuiApp(sim_sampler("rtx4090", polls=3), start_sampler=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_probe(app, pilot)
        screen.start([], ["memory_copy"])
        await _wait(pilot, lambda: not screen.running)
        (row,) = table_rows(screen)
        assert row[0] == "CPU" and row[1] == "memory copy" and row[5] == CPU_VERDICT
        assert "GB/s" in row[2]

        screen.start([], ["matmul_fp32", "matmul_bf16", "memory_copy", "memory_triad"])
        session = screen.session
        assert isinstance(session, SubprocessProbeSession)
        await _wait(pilot, lambda: screen.runs[None].test != "")
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ProbeScreen)
        runner = session.runner
        assert runner is not None and runner.cancelled
        await _wait(pilot, lambda: all(c.proc.poll() is not None for c in runner._children), 15)


@pytest.mark.parametrize("size", [(60, 20), (80, 24)])
async def test_probe_is_usable_in_a_small_terminal(sim_sampler, size) -> None:
    """Narrow: the pickers side by side, Start on screen under the tests, "what fits" below
    them across the width (readable, not four columns wide); the body scrolls to the rest."""
    app = GpuTuiApp(sim_sampler("dgx-h100", polls=3), start_sampler=False)
    app.probe_session = manual_session
    async with app.run_test(size=size) as pilot:
        screen = await open_probe(app, pilot)
        assert screen.has_class("-narrow")
        start = screen.query_one("#probe-start")
        footer_y = size[1] - 1
        assert start.region.height == 1 and 0 < start.region.bottom <= footer_y
        assert start.region.right <= size[0]
        gpus = screen.query_one("#probe-gpus")
        assert gpus.region.width >= 30 and gpus.region.right <= size[0]
        prompt = str(gpus.get_option_at_index(0).prompt)
        assert prompt.endswith(BUSY_SHORT if size[0] < 78 else BUSY_TEXT)
        screen_lines = [s.text for s in app.screen._compositor.render_strips()]
        assert any(prompt in line for line in screen_lines)  # whole, beside the tests
        fits = screen.query_one("#probe-fits")
        assert fits.region.width >= size[0] - 3
        # The button on screen starts the run.
        FakeSession.instances.clear()
        assert await pilot.click("#probe-start")
        await pilot.pause()
        assert FakeSession.instances and FakeSession.instances[-1].started is not None
        body = screen.query_one("#probe-body")
        body.scroll_end(animate=False)
        await pilot.pause()
        summary = screen.query_one("#probe-summary")
        assert summary.region.height > 0 and summary.region.bottom <= footer_y


# -- the command's rules, on the screen ------------------------------------------------------------


async def test_lost_gpu_is_listed_but_cannot_be_probed(sim_sampler, monkeypatch) -> None:
    """The faulty node's GPU 3 falls off the bus: listed with the reason, not selectable, and a
    Start with it picked runs the others only (the command refuses it the same way)."""
    from gputui.probe.runner import unusable_label

    sampler = sim_sampler("faulty", polls=6)
    monkeypatch.setattr(probe_mod, "cpu_mode", lambda node: False)
    clock = dialog_clock(monkeypatch)
    app = GpuTuiApp(sampler, start_sampler=False, probe_session=manual_session)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_probe(app, pilot)
        assert app.latest.sample(3).lost
        assert (
            screen.unusable == {3: unusable_label(app.latest, 3)} == {3: "lost: fell off the bus"}
        )
        gpus = screen.query_one("#probe-gpus")
        option = gpus.get_option("3")
        assert option.disabled and "lost: fell off the bus" in str(option.prompt)
        assert 3 not in gpus.selected
        gpus.select(0)
        gpus.select(3)  # however it got checked, it is refused at Start
        tests = screen.query_one("#probe-tests")
        tests.deselect_all()
        tests.select("memory_copy")
        await pilot.press("enter")
        await confirm_busy(app, pilot, clock, "F")  # GPU 0 runs the training job
        session = FakeSession.instances[-1]
        assert session.started is not None and 3 not in session.started[0]
        assert 0 in session.started[0]


async def test_gpu_lost_after_the_screen_opened_is_relisted(sim_sampler, monkeypatch) -> None:
    import dataclasses

    from gputui.tui.messages import SnapshotReady

    sampler = sim_sampler("dgx-h100", polls=3)
    monkeypatch.setattr(probe_mod, "cpu_mode", lambda node: False)
    app = GpuTuiApp(sampler, start_sampler=False, probe_session=manual_session)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_probe(app, pilot)
        assert screen.unusable == {}
        snap = app.latest
        lost = dataclasses.replace(snap.sample(5), lost=True, error="fallen off the bus")
        gpus = tuple(lost if s.index == 5 else s for s in snap.gpus)
        app.post_message(SnapshotReady(dataclasses.replace(snap, gpus=gpus)))
        await pilot.pause()
        option = screen.query_one("#probe-gpus").get_option("5")
        assert screen.unusable == {5: "lost: fell off the bus"} and option.disabled


async def test_screen_judges_like_the_command(sim_sampler, monkeypatch) -> None:
    """The same results give the same spec, expected share, verdict and judgement text on the
    screen and in ``gputui probe`` (one judge), P2P rows name their destination GPU."""
    from gputui.probe.report import judge_runs
    from gputui.probe.runs import GpuRun, Measurement, Target

    sampler = sim_sampler("dgx-h100", polls=3)
    monkeypatch.setattr(probe_mod, "cpu_mode", lambda node: False)
    app = GpuTuiApp(sampler, start_sampler=False, probe_session=manual_session)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_probe(app, pilot)
        screen.start([0, 1], ["memory_copy", "p2p", "matmul_bf16"])
        await pilot.pause()
        session = FakeSession.instances[-1]
        msgs = {
            0: [
                result("memory_copy", 2600.0, "GB/s"),
                protocol.Result("p2p", 390.0, "GB/s", "copy", {"peer": 1}, 10, 1.0),
                result("matmul_bf16", 700.0, "TFLOPS"),
            ],
            1: [
                result("memory_copy", 2550.0, "GB/s"),
                protocol.Result("p2p", 280.0, "GB/s", "copy", {"peer": 0}, 10, 1.0),
                result("matmul_bf16", 690.0, "TFLOPS"),
            ],
        }
        for gpu, results in msgs.items():
            session.feed(gpu, [hello(gpu, ["memory_copy", "p2p", "matmul_bf16"]), *results])
            session.feed(gpu, [protocol.Done(3.0)])
        await pilot.pause()
        node = app.latest.node
        runs = {
            g: GpuRun(
                Target(g, f"cuda:{g}", f"GPU {g}"), measurements=[Measurement(r, 0.0) for r in rs]
            )
            for g, rs in msgs.items()
        }
        command = judge_runs(runs, node)
        screen_judged = screen.state.judged()
        key = lambda j: (j.gpu, j.test, j.spec, j.expected, j.verdict, j.judgement)  # noqa: E731
        assert [key(j) for j in screen_judged] == [key(j) for j in command]
        p2p = [j for j in screen_judged if j.test == "p2p"]
        assert [j.spec for j in p2p] == [pytest.approx(450.0)] * 2  # NVSwitch: 18 links each
        assert p2p[1].verdict == "LOW" and p2p[0].verdict == "OK"
        rows = table_rows(screen)
        assert rows[1][1] == "P2P GPU ↔ GPU → GPU 1" and "judged: spec 450 GB/s" in rows[1][6]
        assert "NVSwitch: min(18, 18) links" in rows[1][6]


async def test_warm_up_skip_is_a_note_not_a_test(sim_sampler) -> None:
    state = ProbeRunState(sim_sampler("dgx-h100", polls=1).poll().node)
    state.begin([0], ["matmul_bf16"], None)
    state.apply(0, protocol.Skipped(protocol.WARMUP, "out of memory after 3 retries"))
    assert state.runs[0].finished == set() and state.runs[0].progress == 0
    assert state.notes == ["GPU 0: warm-up skipped (out of memory after 3 retries)"]


def test_screen_children_see_only_the_picked_gpus(sim_sampler) -> None:
    class Screen:
        node = sim_sampler("dgx-h100", polls=1).poll().node

    session = SubprocessProbeSession(Screen(), python="/py")  # type: ignore[arg-type]
    plan = session.plan([3, 0])
    assert plan is not None and plan.pinned
    uuids = [Screen.node.gpu(3).uuid, Screen.node.gpu(0).uuid]
    assert plan.visible == {"CUDA_VISIBLE_DEVICES": ",".join(uuids)}
    assert [(t.gpu, t.device) for t in plan.targets] == [(3, "cuda:0"), (0, "cuda:1")]


# -- facts a user reads without colour, failures that say what to do, busy GPUs asked for ----------


def screen_lines(app: GpuTuiApp) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


async def test_boxes_read_x_and_blank_and_focus_starts_on_the_gpus(
    sim_sampler, monkeypatch
) -> None:
    monkeypatch.setattr(probe_mod, "cpu_mode", lambda node: False)
    app = GpuTuiApp(sim_sampler("a100-pcie", polls=3), start_sampler=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_probe(app, pilot)
        assert app.focused is screen.query_one("#probe-gpus")
        text = "\n".join(screen_lines(app))
        assert "[ ] 0  A100" in text  # busy: listed unchecked
        assert "[x] memory copy" in text and "[ ] FP8 matmul" in text
        assert "▐X▌" not in text
        await pilot.press("space")  # on the GPU list: checks GPU 0
        await pilot.pause()
        assert "[x] 0  A100" in "\n".join(screen_lines(app))
    # A CPU run (the simulated node): the GPU list is disabled, so the tests have the focus.
    monkeypatch.setattr(probe_mod, "cpu_mode", lambda node: True)
    app = GpuTuiApp(sim_sampler("a100-pcie", polls=3), start_sampler=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_probe(app, pilot)
        assert screen.cpu and app.focused is screen.query_one("#probe-tests")


NO_CUDA = "cuda:0: torch 2.13.0+cpu is a CPU-only build (no CUDA or ROCm)"


async def test_a_failed_run_shows_a_failed_bar_says_why_and_what_to_do(
    sim_sampler, monkeypatch
) -> None:
    monkeypatch.setattr(probe_mod, "cpu_mode", lambda node: False)
    app = GpuTuiApp(sim_sampler("dgx-h100", polls=3), start_sampler=False)
    app.probe_session = manual_session
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_probe(app, pilot)
        screen.start([0], TESTS)
        await pilot.pause()
        FakeSession.instances[-1].feed(0, [protocol.Error(None, NO_CUDA), protocol.Done(0.1)])
        await pilot.pause()
        assert not screen.running and screen.runs[0].failed
        (line,) = screen.progress_lines()
        assert str(line).startswith("GPU 0  ░░░░") and "   0%  failed: " + NO_CUDA in str(line)
        assert "done" not in str(line)
        assert any(span.style == "red" for span in line.spans)
        summary = screen.summary_text
        assert summary.startswith(f"GPU 0 failed: {NO_CUDA}.")
        assert "`gputui probe --python PATH` with a Python whose torch has CUDA" in summary


def test_failure_advice_for_each_kind_of_failure() -> None:
    from gputui.tui.screens.probe_state import NO_GPU_TORCH, NO_TORCH, OTHER_FAILURE
    from gputui.tui.screens.probe_state import failure_advice as advice

    assert advice(NO_CUDA) == advice("cuda:1: torch 2.5.0 sees no GPU") == NO_GPU_TORCH
    assert advice("GPU 0: torch is not installed in /usr/bin/python3; pip install") == NO_TORCH
    assert advice("GPU 0: the probe worker exited with status -9") == OTHER_FAILURE


def test_the_worker_says_when_torch_is_a_cpu_only_build() -> None:
    from types import SimpleNamespace

    from gputui.probe.worker import no_gpu_reason

    cpu = SimpleNamespace(__version__="2.13.0+cpu", version=SimpleNamespace(cuda=None, hip=None))
    cuda = SimpleNamespace(__version__="2.5.0", version=SimpleNamespace(cuda="12.4", hip=None))
    assert no_gpu_reason(cpu) == "torch 2.13.0+cpu is a CPU-only build (no CUDA or ROCm)"  # type: ignore[arg-type]  # fmt: skip
    assert no_gpu_reason(cuda) == "torch 2.5.0 sees no GPU"  # type: ignore[arg-type]


async def test_skipped_tests_are_listed_one_a_line_with_their_reasons(sim_sampler) -> None:
    app = GpuTuiApp(sim_sampler("dgx-h100", polls=3), start_sampler=False)
    app.probe_session = manual_session
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_probe(app, pilot)
        tests = ["memory_copy", "h2d", "matmul_tf32"]
        screen.start([], tests)  # a CPU run
        await pilot.pause()
        FakeSession.instances[-1].feed(
            None,
            [
                hello(None, tests),
                result("memory_copy", 20.0, "GB/s"),
                protocol.Skipped("h2d", "host-to-device copies need a GPU (device is the CPU)"),
                protocol.Skipped(
                    "matmul_tf32", "TF32 is a GPU tensor-core mode; the CPU has no TF32"
                ),
                protocol.Done(1.0),
            ],
        )
        await pilot.pause()
        lines = screen.summary_text.splitlines()
        assert lines[1:] == [
            "Skipped:",
            "  CPU · host → device: host-to-device copies need a GPU (device is the CPU)",
            "  CPU · TF32 matmul: TF32 is a GPU tensor-core mode; the CPU has no TF32",
        ]
        shown = str(screen.query_one("#probe-summary").render())
        assert "\n  CPU · host → device: " in shown


async def test_a_busy_gpu_asks_before_it_is_probed(sim_sampler, monkeypatch) -> None:
    monkeypatch.setattr(probe_mod, "cpu_mode", lambda node: False)
    clock = dialog_clock(monkeypatch)
    app = GpuTuiApp(sim_sampler("dgx-h100", polls=3), start_sampler=False)
    app.probe_session = manual_session
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_probe(app, pilot)
        screen.busy = {0}  # GPU 1 idle, for the "idle only" choice
        gpus, tests = screen.query_one("#probe-gpus"), screen.query_one("#probe-tests")
        gpus.select(0)
        gpus.select(1)
        tests.deselect_all()
        tests.select("memory_copy")
        started = len(FakeSession.instances)

        await pilot.press("enter")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ConfirmProbeScreen)
        details = str(dialog.query_one("#confirm-details").render())
        assert "GPU 0 is busy: processes running: PID" in details and "--force" in details
        assert app.focused is dialog.query_one("#probe-cancel")  # the default
        await pilot.press("F")  # typed before the dialog could be read: nothing
        await pilot.pause()
        assert app.screen is dialog
        await pilot.press("enter")  # Cancel
        await pilot.pause()
        assert app.screen is screen and len(FakeSession.instances) == started

        await pilot.press("enter")
        await confirm_busy(app, pilot, clock, "I")
        assert FakeSession.instances[-1].started == ([1], ["memory_copy"])

        screen.state.runs[1].done = True  # that run over, start again with both
        await pilot.press("enter")
        await confirm_busy(app, pilot, clock, "F")
        assert FakeSession.instances[-1].started == ([0, 1], ["memory_copy"])
