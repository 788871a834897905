"""The ``mig`` and ``crowded`` simulated scenarios: MIG layout and readings as NVML gives them,
2,000 worker processes that come and go slowly, and how the snapshot report shows MIG."""

from __future__ import annotations

import collections
import json
import re
import signal
import statistics

import pytest

from gputui import cli
from gputui.backends.sim import SimBackend
from gputui.core.mig import mig_profile
from gputui.views.report import render_snapshot

T0 = 1_700_000_000.0
MIB = 1 << 20
GIB = 1 << 30
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def sim(scenario: str, seed: int = 0) -> SimBackend:
    backend = SimBackend(scenario, seed=seed, start_time=T0)
    backend.open()
    return backend


def times(start: float, stop: float, step: float) -> list[float]:
    return [start + i * step for i in range(int((stop - start) / step) + 1)]


# -- mig: layout ---------------------------------------------------------------------------------


def test_mig_layout_7_small_instances_2_large_and_one_whole_gpu() -> None:
    node = sim("mig").open()
    assert len(node.gpus) == 8 and node.hostname == "dgx-h100-21"
    for info in node.gpus[:4]:
        assert info.mig_enabled is True
        assert [m.gpu_instance_id for m in info.mig_devices] == list(range(7, 14))
        for m in info.mig_devices:
            assert m.name == "NVIDIA H100 80GB HBM3 MIG 1g.10gb"
            assert (m.compute_instance_id, m.sm_count) == (0, 16)
            assert m.memory_total_bytes == 9984 * MIB
    for info in node.gpus[4:7]:
        assert info.mig_enabled is True
        assert [m.gpu_instance_id for m in info.mig_devices] == [1, 2]
        for m in info.mig_devices:
            assert mig_profile(m.name) == "3g.40gb"
            assert (m.compute_instance_id, m.sm_count) == (0, 60)
            assert m.memory_total_bytes == 40448 * MIB
    whole = node.gpus[7]
    assert whole.mig_enabled is False and whole.mig_devices == ()
    uuids = [m.uuid for g in node.gpus for m in g.mig_devices]
    assert len(uuids) == 4 * 7 + 3 * 2 == len(set(uuids))
    assert all(re.fullmatch(f"MIG-{UUID}", u) for u in uuids)
    for info in node.gpus:
        assert all(m.parent_index == info.index for m in info.mig_devices)
        # the instances never add up to more than their GPU
        assert sum(m.memory_total_bytes for m in info.mig_devices) <= info.memory_total_bytes
        assert sum(m.sm_count for m in info.mig_devices) <= info.sm_count


def test_mig_readings_follow_nvml_on_a_mig_gpu() -> None:
    backend = sim("mig")
    node = backend.open()
    for t in times(0.0, 60.0, 2.5):
        for s in backend.read_gpus(T0 + t, slow=True):
            info = node.gpu(s.index)
            assert s.power_w > 0 and s.temperature_gpu_c and s.clock_sm_mhz
            assert s.ecc_volatile_uncorrected == 0 and s.pcie_rx_bytes_per_s is not None
            if info.mig_enabled:
                # NotSupported on a MIG-enabled parent: utilization, media engines, row remapping
                assert s.utilization_gpu_pct is None and s.utilization_memory_pct is None
                assert s.encoder_pct is None and s.decoder_pct is None
                assert s.remapped_rows_pending is None and s.remapped_rows_correctable is None
                assert [m.uuid for m in s.mig_devices] == [m.uuid for m in info.mig_devices]
            else:
                assert 0 <= s.utilization_gpu_pct <= 100
                assert s.remapped_rows_pending is False
                assert s.mig_devices == ()


def test_mig_memory_adds_up_from_processes_to_instances_to_gpu() -> None:
    backend = sim("mig")
    node = backend.open()
    for t in (1.0, 30.0, 200.0):
        procs = backend.read_processes(T0 + t)
        for s in backend.read_gpus(T0 + t, slow=False):
            info = node.gpu(s.index)
            totals = {m.uuid: m.memory_total_bytes for m in info.mig_devices}
            for m in s.mig_devices:
                held = sum(p.gpu_memory_bytes for p in procs if p.mig_uuid == m.uuid)
                assert m.memory_total_bytes == totals[m.uuid]
                assert held <= m.memory_used_bytes <= m.memory_total_bytes
                assert m.memory_used_bytes - held <= 16 * MIB  # the driver's few MiB
            if info.mig_enabled:
                assert s.memory_used_bytes == sum(m.memory_used_bytes for m in s.mig_devices)
            assert s.memory_used_bytes + s.memory_free_bytes <= info.memory_total_bytes


def test_mig_processes_run_in_instances_of_their_gpu() -> None:
    backend = sim("mig")
    node = backend.open()
    procs = backend.read_processes(T0 + 20.0)
    for p in procs:
        info = node.gpu(p.gpu_index)
        if info.mig_enabled:
            assert p.mig_uuid in {m.uuid for m in info.mig_devices}, p
            assert p.sm_pct is None  # no per-process utilization on a MIG GPU
        else:
            assert p.mig_uuid is None and p.sm_pct is not None
    on_mig = [p for p in procs if p.mig_uuid]
    assert len(on_mig) >= 20
    assert len({p.user for p in on_mig}) >= 6, "inference servers of several users"
    assert any("ipykernel_launcher" in p.command for p in on_mig), "a notebook in an instance"
    per_instance = collections.Counter(p.mig_uuid for p in on_mig)
    assert max(per_instance.values()) >= 2, "two processes sharing one instance"
    all_instances = {m.uuid for g in node.gpus for m in g.mig_devices}
    assert len(all_instances - set(per_instance)) >= 3, "some instances are free"
    (whole,) = [p for p in procs if p.gpu_index == 7]
    assert "train.py" in whole.command and whole.gpu_memory_bytes > 50 * GIB


def test_mig_power_follows_the_instances_work() -> None:
    """Busy instances heat their GPU: the parent's power reflects the sum of its instances."""
    backend = sim("mig")
    power = collections.defaultdict(list)
    for t in times(0.0, 120.0, 2.0):
        for s in backend.read_gpus(T0 + t, slow=False):
            power[s.index].append(s.power_w)
    busiest = statistics.mean(power[4])  # two 8B servers in 3g.40gb instances
    assert 90 < statistics.mean(power[3]) < 700
    assert busiest < statistics.mean(power[7])  # the whole-GPU training job draws the most
    assert max(power[7]) > 550


def test_mig_is_deterministic_under_a_seed() -> None:
    a, b, c = sim("mig", seed=4), sim("mig", seed=4), sim("mig", seed=5)
    assert a.open() == b.open()
    for t in times(0.0, 20.0, 1.5):
        assert a.read_gpus(T0 + t, slow=True) == b.read_gpus(T0 + t, slow=True)
        assert a.read_processes(T0 + t) == b.read_processes(T0 + t)
    uuids = {m.uuid for g in a.open().gpus for m in g.mig_devices}
    assert uuids.isdisjoint({m.uuid for g in c.open().gpus for m in g.mig_devices})


def test_mig_snapshot_round_trips_through_json() -> None:
    from gputui.core.codec import snapshot_from_dict, snapshot_to_json
    from gputui.core.model import Snapshot

    backend = sim("mig")
    now = T0 + 9.0
    snap = Snapshot(
        timestamp=now,
        node=backend.open(),
        gpus=tuple(backend.read_gpus(now, slow=True)),
        processes=tuple(backend.read_processes(now)),
    )
    assert snapshot_from_dict(json.loads(snapshot_to_json(snap))) == snap


# -- mig: the snapshot report --------------------------------------------------------------------


def test_snapshot_text_lists_the_instances_under_their_gpu(capsys) -> None:
    assert cli.main(["snapshot", "--backend", "sim:mig"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {
        int(m.group(1)): k for k, line in enumerate(lines) if (m := re.match(r"(\d) +H100 ", line))
    }
    assert sorted(rows) == list(range(8))
    under = {g: lines[rows[g] + 1 : rows[g + 1] if g < 7 else rows[g] + 8] for g in range(8)}
    gpu0 = [line for line in under[0] if "1g.10gb" in line]
    assert len(gpu0) == 7 and rows[1] - rows[0] == 8
    assert re.match(
        r" +├ 1g\.10gb +GI 7 +CI 0 +\d\.\d\d/9\.75 GiB +PID \d+ \(svc-chat vllm\)", gpu0[0]
    )
    assert gpu0[-1].lstrip().startswith("└ 1g.10gb")
    assert any("no processes" in line for line in gpu0), "a free instance"
    assert "MIG: 7 instances" in lines[rows[0]] and " n/a " in lines[rows[0]]
    assert sum("3g.40gb" in line for line in under[4]) == 2
    assert not any("g.10gb" in line or "g.40gb" in line for line in under[7][:1])
    header = next(line for line in lines if line.startswith("GPU  GI  CI  PID"))
    assert header.split()[:5] == ["GPU", "GI", "CI", "PID", "USER"]
    table = lines[lines.index(header) :]
    training = next(line for line in table if "train.py" in line)
    assert re.match(r"7 +- +- +\d+ +dchen", training)


def test_snapshot_json_carries_mig_devices_and_process_instances(capsys) -> None:
    assert cli.main(["snapshot", "--backend", "sim:mig", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    info0 = data["node"]["gpus"][0]
    assert info0["mig_enabled"] is True and len(info0["mig_devices"]) == 7
    assert info0["mig_devices"][0]["gpu_instance_id"] == 7
    assert data["gpus"][0]["utilization_gpu_pct"] is None
    assert len(data["gpus"][0]["mig_devices"]) == 7
    uuids = {m["uuid"] for m in info0["mig_devices"]}
    assert any(p["mig_uuid"] in uuids for p in data["processes"] if p["gpu_index"] == 0)


def test_snapshot_of_other_scenarios_has_no_mig_columns(sim_sampler) -> None:
    text = render_snapshot(sim_sampler("dgx-h100", polls=2).latest)
    assert "GPU  PID  " in text and " GI " not in text and "MIG" not in text


# -- crowded -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def crowded():
    backend = sim("crowded")
    return backend, backend.read_processes(T0 + 30.0)


def test_crowded_has_2000_processes_of_40_users_on_8_gpus(crowded) -> None:
    backend, procs = crowded
    node = backend.open()
    assert len(node.gpus) == 8 and all(g.name == "NVIDIA H100 80GB HBM3" for g in node.gpus)
    assert len(procs) == 2000 == len({p.pid for p in procs})
    assert collections.Counter(p.gpu_index for p in procs) == {g: 250 for g in range(8)}
    assert procs == sorted(procs, key=lambda p: (p.gpu_index, p.pid))
    users = collections.Counter(p.user for p in procs)
    assert len(users) == 40
    assert users.most_common(1)[0][1] >= 100 and min(users.values()) <= 20
    assert all(p.name and p.command and p.start_time and p.host_rss_bytes for p in procs)
    assert all(p.start_time <= T0 + 30.0 and p.mig_uuid is None for p in procs)


def test_crowded_commands_differ_in_their_tails(crowded) -> None:
    _backend, procs = crowded
    commands = [p.command for p in procs]
    assert len(set(commands)) >= 1500
    ranked = [c for c in commands if "--local-rank=" in c]
    assert len(ranked) >= 1000
    assert sum("--port=" in c for c in commands) >= 1000
    heads = {c.split(" --local-rank=")[0] for c in ranked}
    assert len(heads) <= 80, "many workers share a command up to their rank and port"
    assert any("triton_python_backend_stub" in c for c in commands)


def test_crowded_memory_spread(crowded) -> None:
    backend, procs = crowded
    memory = sorted(p.gpu_memory_bytes for p in procs)
    assert memory[0] >= 50 * MIB and memory[-1] <= 4 * GIB
    assert memory[-1] >= 1 * GIB, "a few workers hold GiBs"
    assert statistics.median(memory) <= 300 * MIB, "most are small"
    assert len(set(memory)) >= 200
    for s in backend.read_gpus(T0 + 30.0, slow=False):
        held = sum(p.gpu_memory_bytes for p in procs if p.gpu_index == s.index)
        assert held <= s.memory_used_bytes <= held + 16 * MIB
        assert s.memory_used_bytes <= 0.9 * s.memory_total_bytes
        assert 0 < s.utilization_gpu_pct <= 100


def test_crowded_sm_shares_add_up_to_the_gpu(crowded) -> None:
    backend, procs = crowded
    samples = backend.read_gpus(T0 + 30.0, slow=False)
    for s in samples:
        sm = [p.sm_pct for p in procs if p.gpu_index == s.index]
        busy = [x for x in sm if x > 0]
        assert busy and len(busy) < 125, "a few workers do most of the work"
        assert sum(sm) <= s.utilization_gpu_pct + 0.5 * len(busy)


def test_crowded_processes_come_and_go_slowly() -> None:
    backend = sim("crowded")
    previous = {p.pid for p in backend.read_processes(T0)}
    started = 0
    for t in times(1.0, 600.0, 1.0):
        procs = backend.read_processes(T0 + t)
        assert len(procs) == 2000
        pids = {p.pid for p in procs}
        assert len(pids - previous) <= 3, "never many at once"
        started += len(pids - previous)
        previous = pids
    assert 10 <= started <= 60, "a few restarts a minute"


def test_crowded_rows_mostly_stay_the_same_between_readings() -> None:
    backend = sim("crowded")
    before = backend.read_processes(T0 + 100.0)
    after = backend.read_processes(T0 + 101.0)
    same = sum(a == b for a, b in zip(before, after, strict=True))
    assert same >= 0.8 * len(after)


def test_crowded_restarted_worker_gets_a_new_pid_and_grows_back() -> None:
    backend = sim("crowded")
    backend.read_gpus(T0 + 40.0, slow=False)
    procs = backend.read_processes(T0 + 40.0)
    victim = max(procs, key=lambda p: p.gpu_memory_bytes)
    gpu_before = backend.read_gpus(T0 + 40.0, slow=False)[victim.gpu_index].memory_used_bytes
    backend.signal_process(victim.pid, signal.SIGTERM)
    after = backend.read_processes(T0 + 40.0)
    assert len(after) == 2000 and victim.pid not in {p.pid for p in after}
    (new,) = [p for p in after if p.command == victim.command and p.gpu_index == victim.gpu_index]
    assert new.start_time == T0 + 40.0 and new.gpu_memory_bytes < victim.gpu_memory_bytes
    assert backend.read_gpus(T0 + 40.0, slow=False)[victim.gpu_index].memory_used_bytes < gpu_before
    (grown,) = [p for p in backend.read_processes(T0 + 60.0) if p.pid == new.pid]
    assert grown.gpu_memory_bytes == victim.gpu_memory_bytes
    backend.signal_process(new.pid, signal.SIGUSR1)  # not a terminating signal: nothing changes
    assert new.pid in {p.pid for p in backend.read_processes(T0 + 61.0)}
    with pytest.raises(ProcessLookupError):
        backend.signal_process(victim.pid, signal.SIGTERM)


def test_crowded_reads_the_same_forwards_backwards_and_directly() -> None:
    stepped, direct = sim("crowded", seed=2), sim("crowded", seed=2)
    for t in times(0.0, 90.0, 0.5):
        stepped.read_gpus(T0 + t, slow=t % 2 == 0)
        stepped.read_processes(T0 + t)
    for t in (90.0, 12.5, 45.0):
        assert stepped.read_processes(T0 + t) == direct.read_processes(T0 + t)
        assert stepped.read_gpus(T0 + t, slow=True) == direct.read_gpus(T0 + t, slow=True)
        assert stepped.read_host(T0 + t) == direct.read_host(T0 + t)


def test_crowded_snapshot_text_lists_every_process(capsys) -> None:
    assert cli.main(["snapshot", "--backend", "sim:crowded"]) == 0
    out = capsys.readouterr().out
    assert "infer-h100-04" in out and " GI " not in out
    assert sum(1 for line in out.splitlines() if re.match(r"\d +\d+ +\S+ +\d", line)) == 2000
