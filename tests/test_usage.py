"""Energy and idle accounting per GPU (gputui.core.usage), its place on every snapshot, in the JSON,
the text report and a replay, and what idle GPUs cost."""

from __future__ import annotations

import json

import pytest
from tests.fakes.clock import fake_clock_sampler

from gputui import cli
from gputui.core.codec import snapshot_from_dict, snapshot_to_dict
from gputui.core.model import GpuSample
from gputui.core.record import Recorder
from gputui.core.usage import (
    HELD_MEMORY_BYTES,
    UsageMeter,
    fmt_energy,
    idle_summary,
    parse_price,
    session_idle_share,
)
from gputui.engine.session import BackendSpec, open_session
from gputui.settings import Settings
from gputui.views.report import render_snapshot

GIB = 1024**3


def gpu(index: int, t: float, util: float | None, used: int | None, energy: float | None = None,
        lost: bool = False) -> GpuSample:  # fmt: skip
    return GpuSample(
        index=index,
        timestamp=t,
        lost=lost,
        utilization_gpu_pct=util,
        memory_used_bytes=used,
        energy_j=energy,
    )


def test_idle_held_idle_and_energy_are_counted_interval_by_interval() -> None:
    meter = UsageMeter()
    meter.update(0.0, [gpu(0, 0, 90, 70 * GIB, 1000.0), gpu(1, 0, 0, 0, 500.0)])
    meter.update(1.0, [gpu(0, 1, 3, 70 * GIB, 1400.0), gpu(1, 1, 0, 0, 560.0)])
    usage = meter.update(3.0, [gpu(0, 3, 50, 70 * GIB, 2000.0), gpu(1, 3, 4.9, GIB, 680.0)])
    g0, g1 = usage.gpus
    # each interval counts with the newer reading's state
    assert (g0.observed_s, g0.idle_s, g0.held_idle_s) == (3.0, 1.0, 1.0)
    assert g0.energy_used_j == 1000.0 and g0.idle is False
    # 1 GiB in use is not "held" (a driver context stays under it); 4.9 % is idle
    assert (g1.observed_s, g1.idle_s, g1.held_idle_s) == (3.0, 3.0, 0.0)
    assert g1.energy_used_j == 180.0 and g1.idle is True and g1.held_idle is False
    assert (usage.gpus_counted, usage.idle_gpus, usage.held_idle_gpus) == (2, 1, 0)
    assert usage.idle_share == 0.5 and usage.since == 0.0
    assert usage.idle_gpu_hours == round(4.0 / 3600, 6)
    assert session_idle_share(usage) == pytest.approx(4 / 6)
    assert usage.idle_cost_per_hour is None and usage.idle_cost is None  # no price


def test_counter_reset_lost_gpu_gaps_and_missing_counters() -> None:
    meter = UsageMeter()
    meter.update(0.0, [gpu(0, 0, 0, 2 * GIB, 5000.0), gpu(1, 0, 0, 0, None)])
    meter.update(1.0, [gpu(0, 1, 0, 2 * GIB, 5100.0), gpu(1, 1, None, 0, None)])
    # the driver reloaded: the counter restarts; that interval adds nothing
    meter.update(2.0, [gpu(0, 2, 0, 2 * GIB, 30.0), gpu(1, 2, 0, 0)])
    usage = meter.update(3.0, [gpu(0, 3, 0, 2 * GIB, 80.0), gpu(1, 3, 0, 0)])
    g0, g1 = usage.gpus
    assert g0.energy_used_j == 150.0 and g0.held_idle_s == 3.0
    assert g1.energy_used_j is None  # no counter: nothing made up from power
    assert g1.observed_s == 2.0  # the reading without utilization is not counted
    # GPU 0 falls off the bus: its totals stay, its time is not counted, idleness unknown
    usage = meter.update(10.0, [gpu(0, 10, None, None, lost=True), gpu(1, 10, 0, 0)])
    assert usage.gpu(0).observed_s == 3.0 and usage.gpu(0).idle is None
    assert usage.gpus_counted == 1
    # back: counting starts over from this reading (no credit for the lost time)
    usage = meter.update(20.0, [gpu(0, 20, 0, 0, 90.0), gpu(1, 20, 0, 0)])
    assert usage.gpu(0).observed_s == 3.0 and usage.gpu(0).energy_used_j == 150.0
    # a long gap (a suspended machine) counts only up to max(10 s, 3 intervals)
    assert usage.gpu(1).observed_s == 2.0 + 7.0 + 10.0


def powered(t: float, energy: float, limit: float | None = 700.0) -> GpuSample:
    return GpuSample(
        index=0, timestamp=t, utilization_gpu_pct=90, energy_j=energy, power_limit_w=limit
    )


def test_an_impossible_energy_jump_adds_nothing_and_counting_goes_on() -> None:
    """The driver's "no value" (2^63 mJ) or any jump beyond what the GPU could draw in the
    interval (its power limit x the time x a margin) is no energy used: the interval adds
    nothing, and the next normal increase counts from the new reading."""
    meter = UsageMeter()
    no_value = 2**63 / 1000.0  # joules
    readings = [
        (0.0, 1000.0),
        (1.0, 1500.0),  # +500 J in 1 s under a 700 W limit
        (2.0, no_value),  # rejected
        (3.0, 2200.0),  # back to the real counter: a decrease, counted as a reset
        (4.0, 2800.0),  # +600 J
        (5.0, 2800.0 + 1e6),  # a megajoule in a second: rejected
        (6.0, 2800.0 + 1e6 + 650.0),  # +650 J from the new baseline
    ]
    for t, energy in readings:
        usage = meter.update(t, [powered(t, energy)])
    assert usage.gpu(0).energy_used_j == 500.0 + 600.0 + 650.0


def test_without_a_power_limit_the_bound_is_a_generous_default() -> None:
    meter = UsageMeter()
    for t, energy in ((0.0, 0.0), (1.0, 3000.0), (2.0, 3000.0 + 50_000.0), (12.0, 93_000.0)):
        usage = meter.update(t, [powered(t, energy, limit=None)])
    # 3 kJ in a second fits 2 kW x 2; 50 kJ does not; 40 kJ in 10 s does
    assert usage.gpu(0).energy_used_j == 3000.0 + 40_000.0


def test_a_clock_that_goes_back_counts_nothing_for_that_interval() -> None:
    meter = UsageMeter()
    meter.update(100.0, [gpu(0, 100, 0, 0)])
    meter.update(50.0, [gpu(0, 50, 0, 0)])  # the wall clock was set back
    usage = meter.update(51.0, [gpu(0, 51, 0, 0)])
    assert usage.gpu(0).idle_s == 1.0


def test_a_gpu_that_is_no_longer_listed_keeps_its_totals() -> None:
    meter = UsageMeter()
    meter.update(0.0, [gpu(0, 0, 0, 0), gpu(1, 0, 0, 0)])
    meter.update(1.0, [gpu(0, 1, 0, 0), gpu(1, 1, 0, 0)])
    usage = meter.update(2.0, [gpu(0, 2, 0, 0)])
    assert usage.gpu(1).idle_s == 1.0 and usage.gpu(1).idle is None
    assert usage.gpus_counted == 1


def test_price_turns_idle_gpus_into_cost() -> None:
    meter = UsageMeter(gpu_hour_price=2.5)
    meter.update(0.0, [gpu(i, 0, 0 if i < 3 else 99, 40 * GIB if i == 0 else 0) for i in range(8)])
    usage = meter.update(3600.0 / 4, [gpu(i, 900, 0 if i < 3 else 99, 40 * GIB if i == 0 else 0)
                                      for i in range(8)])  # fmt: skip
    # the 15 minutes are longer than the gap limit: only 10 s per GPU are counted
    assert usage.gpu(0).idle_s == 10.0
    assert (usage.idle_gpus, usage.held_idle_gpus, usage.gpus_counted) == (3, 1, 8)
    assert usage.idle_cost_per_hour == 7.5 and usage.held_idle_cost_per_hour == 2.5
    assert usage.idle_cost == pytest.approx(3 * 10 / 3600 * 2.5, abs=1e-6)
    assert idle_summary(usage) == "3/8 GPUs idle (1 held) · 7.50/h"
    busy = UsageMeter().update(0.0, [gpu(0, 0, 80, 0)])
    assert idle_summary(busy) == ""


def test_prices_and_energy_format() -> None:
    assert parse_price("2.5") == 2.5 and parse_price(" 0 ") == 0.0
    for bad in ("-1", "nan", "inf", "2,5", "two"):
        with pytest.raises(ValueError):
            parse_price(bad)
    assert [fmt_energy(v) for v in (None, 950.0, 12_345.0, 1.52e6, 3.04e9)] == [
        "n/a",
        "950 J",
        "12.3 kJ",
        "1.52 MJ",
        "3.04 GJ",
    ]


def test_every_snapshot_carries_the_usage_and_the_json_round_trips() -> None:
    sampler = fake_clock_sampler("dgx-h100", polls=5)
    snap = sampler.latest
    assert snap is not None and snap.usage is not None
    usage = snap.usage
    assert len(usage.gpus) == 8 and usage.since == snap.timestamp - 4
    assert all(g.observed_s == 4.0 for g in usage.gpus)
    assert all(g.energy_used_j and g.energy_used_j > 0 for g in usage.gpus)
    # the demo's GPU 7: an idle Jupyter kernel holding 40 GB
    g7 = usage.gpu(7)
    assert g7 is not None and g7.held_idle and g7.held_idle_s == 4.0
    assert usage.gpu(0).idle is False
    data = json.loads(json.dumps(snapshot_to_dict(snap)))
    assert data["usage"]["gpus"][7]["held_idle_s"] == 4.0
    assert "energy_used_j" in data["usage"]["gpus"][0]
    assert snapshot_from_dict(data) == snap


def test_the_sampler_applies_its_price() -> None:
    sampler = fake_clock_sampler("dgx-h100", polls=2, gpu_hour_price=4.0)
    assert sampler.latest is not None and sampler.latest.usage is not None
    assert sampler.latest.usage.gpu_hour_price == 4.0
    assert sampler.latest.usage.idle_cost_per_hour == 4.0  # GPU 7
    sampler.usage.gpu_hour_price = None  # the TUI may change it: from the next reading
    sampler.poll()
    assert sampler.latest.usage.idle_cost_per_hour is None


def test_the_snapshot_report_shows_usage_and_idle_cost() -> None:
    sampler = fake_clock_sampler("dgx-h100", polls=31, gpu_hour_price=2.0)
    text = render_snapshot(sampler.latest)
    assert "Usage over 30s (idle: utilization below 5 %; held: idle with more than 1 GiB" in text
    idle = next(x for x in text.splitlines() if x.startswith("Idle now: "))
    assert "7 (held)" in idle and "at 2.00 per GPU-hour they cost" in idle
    line = next(x for x in text.splitlines() if x.strip().startswith("7 ") and "held idle" in x)
    assert "30s of 30s (100%)" in line


def test_a_replay_keeps_the_recorded_usage(tmp_path) -> None:
    path = tmp_path / "node.jsonl"
    sampler = fake_clock_sampler("dgx-h100", polls=0)
    recorded = []
    with Recorder(path) as recorder:
        for _ in range(6):
            snap = sampler.poll()
            recorder.write(snap)
            recorded.append(snap.usage)
            sampler.clock.now += 1
    priced = Settings(gpu_hour_price=3.0)  # a price given at replay time applies to the recording
    with open_session(BackendSpec.replay(str(path)), settings=priced) as session:
        playback = session.playback
        assert playback is not None
        playback.set_paused(True)
        for ts, usage in zip(playback.timestamps(), recorded, strict=True):
            playback.seek(ts)
            got = session.sampler.poll().usage
            assert got is not None and usage is not None
            assert got.gpus == usage.gpus and got.since == usage.since
            assert got.gpu_hour_price == 3.0 and got.idle_cost_per_hour == 3.0 * got.idle_gpus
        # seeking back gives that reading's usage again, not a recount
        playback.seek(playback.start)
        assert session.sampler.poll().usage.gpus == recorded[0].gpus


def test_gpu_hour_price_option(capsys, monkeypatch) -> None:
    assert cli.main(["--demo", "--gpu-hour-price", "2.5", "snapshot", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["usage"]["gpu_hour_price"] == 2.5
    assert data["usage"]["idle_cost_per_hour"] == 2.5 * data["usage"]["idle_gpus"]
    assert cli.main(["snapshot", "--demo", "--gpu-hour-price", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["usage"]["gpu_hour_price"] == 1.0
    monkeypatch.setenv("GPUTUI_GPU_HOUR_PRICE", "0.75")
    assert cli.main(["snapshot", "--demo", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["usage"]["gpu_hour_price"] == 0.75
    with pytest.raises(SystemExit) as exc:
        cli.main(["--gpu-hour-price", "-3", "snapshot", "--demo"])
    assert exc.value.code == 2
    assert "not a price" in capsys.readouterr().err
    monkeypatch.setenv("GPUTUI_GPU_HOUR_PRICE", "cheap")
    with pytest.raises(SystemExit):
        cli.main(["snapshot", "--demo"])
    assert "GPUTUI_GPU_HOUR_PRICE" in capsys.readouterr().err


def test_held_threshold_is_one_gib() -> None:
    assert HELD_MEMORY_BYTES == GIB
