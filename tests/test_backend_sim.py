"""The simulated backend: contract, determinism, physical sanity, workload rhythm and faults."""

from __future__ import annotations

import re
import signal
import statistics

import pytest

from gputui.backends.base import BackendUnavailable
from gputui.backends.sim import SCENARIOS, SimBackend
from gputui.core.model import SLOW_TIER_FIELDS, THROTTLE_TROUBLE, Snapshot

T0 = 1_700_000_000.0
GIB = 1 << 30


def sim(scenario: str = "dgx-h100", seed: int = 0, **kw) -> SimBackend:
    backend = SimBackend(scenario, seed=seed, start_time=T0, **kw)
    backend.open()
    return backend


def gpu(backend: SimBackend, t: float, index: int, *, slow: bool = True):
    return backend.read_gpus(T0 + t, slow=slow)[index]


def times(start: float, stop: float, step: float) -> list[float]:
    return [start + i * step for i in range(int((stop - start) / step) + 1)]


# -- the contract --------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_scenario_opens_and_reads(scenario: str) -> None:
    backend = SimBackend(scenario, seed=3)
    assert backend.name == f"sim:{scenario}"
    assert backend.enrich_processes is False
    node = backend.open()
    assert node.backend == f"sim:{scenario}"
    assert node.gpus and node.driver_version and node.runtime_version
    assert [g.index for g in node.gpus] == list(range(len(node.gpus)))
    assert len({g.uuid for g in node.gpus}) == len(node.gpus)
    assert len({g.pci_bus_id for g in node.gpus}) == len(node.gpus)
    for t in (0.0, 1.0, 2.5, 60.0):
        for slow in (False, True):
            samples = backend.read_gpus(T0 + t, slow=slow)
            assert [s.index for s in samples] == [g.index for g in node.gpus]
            assert all(s.timestamp == T0 + t for s in samples)
    procs = backend.read_processes(T0 + 60.0)
    assert procs, "every scenario has GPU processes a minute in"
    assert all(p.user and p.name and p.command and p.start_time for p in procs)
    host = backend.read_host(T0 + 60.0)
    assert host is not None and host.per_core_pct and host.memory_total_bytes


def test_unknown_scenario_names_the_valid_ones() -> None:
    with pytest.raises(BackendUnavailable) as info:
        SimBackend("dgx-b200")
    message = str(info.value)
    assert "dgx-b200" in message
    for name in SCENARIOS:
        assert name in message


def test_simulated_nvidia_gpus_have_device_minor_numbers_and_amd_none() -> None:
    """A scheduler's GRES index maps to NVML by the device minor: the simulated NVIDIA node has
    one per GPU, as a real one does; AMD GPUs have none."""
    nvidia = sim("dgx-h100").open()
    assert [g.minor_number for g in nvidia.gpus] == [g.index for g in nvidia.gpus]
    assert len(nvidia.gpus) == 8
    amd = sim("mi300x").open()
    assert {g.minor_number for g in amd.gpus} == {None}


def test_snapshot_of_sim_survives_json_round_trip() -> None:
    backend = sim("dgx-h100")
    now = T0 + 12.0
    snap = Snapshot(
        timestamp=now,
        node=backend.open(),
        gpus=tuple(backend.read_gpus(now, slow=True)),
        processes=tuple(backend.read_processes(now)),
        host=backend.read_host(now),
    )
    import json

    from gputui.core.codec import snapshot_from_dict, snapshot_to_json

    assert snapshot_from_dict(json.loads(snapshot_to_json(snap))) == snap


# -- determinism ---------------------------------------------------------------------------------


def _everything(backend: SimBackend, now: float):
    return (
        backend.read_gpus(now, slow=True),
        backend.read_processes(now),
        backend.read_host(now),
    )


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_same_seed_and_times_give_identical_samples(scenario: str) -> None:
    a, b = sim(scenario, seed=7), sim(scenario, seed=7)
    assert a.open() == b.open()
    for t in times(0.0, 40.0, 0.7):
        assert _everything(a, T0 + t) == _everything(b, T0 + t)


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_reading_directly_equals_stepping(scenario: str) -> None:
    direct, stepped = sim(scenario, seed=1), sim(scenario, seed=1)
    for t in times(0.0, 30.0, 0.25):
        stepped.read_gpus(T0 + t, slow=int(t) % 3 == 0)
        stepped.read_processes(T0 + t)
        stepped.read_host(T0 + t)
    assert _everything(direct, T0 + 30.0) == _everything(stepped, T0 + 30.0)


def test_start_time_defaults_to_first_now() -> None:
    implicit = SimBackend("dgx-h100", seed=2)
    explicit = SimBackend("dgx-h100", seed=2, start_time=5000.0)
    implicit.read_gpus(5000.0, slow=False)
    assert _everything(implicit, 5017.5) == _everything(explicit, 5017.5)


def test_advance_moves_the_node_on_before_and_after_its_first_reading() -> None:
    aged = SimBackend("faulty", seed=2)
    aged.advance(30.0)  # before any reading: the first one finds it 30 s up
    assert aged.read_gpus(5000.0, slow=True)[3].lost  # GPU 3 falls off the bus at 3 s
    assert aged.start_time == 4970.0
    explicit = SimBackend("faulty", seed=2, start_time=4970.0)
    assert _everything(aged, 5017.5) == _everything(explicit, 5017.5)
    aged.advance(10.0)  # after: its past grows, later readings play on from there
    assert aged.start_time == 4960.0
    fresh = SimBackend("faulty", seed=2)
    assert not fresh.read_gpus(5000.0, slow=True)[3].lost


def test_different_seeds_differ() -> None:
    a, b = sim(seed=0), sim(seed=1)
    assert [g.uuid for g in a.open().gpus] != [g.uuid for g in b.open().gpus]
    assert a.read_gpus(T0 + 5, slow=True) != b.read_gpus(T0 + 5, slow=True)
    assert {p.pid for p in a.read_processes(T0 + 5)} != {p.pid for p in b.read_processes(T0 + 5)}


# -- physical sanity -----------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_values_within_physical_bounds(scenario: str) -> None:
    backend = sim(scenario, seed=5)
    node = backend.open()
    energy: dict[int, float] = {}
    for t in times(0.0, 150.0, 1.3):
        for s in backend.read_gpus(T0 + t, slow=True):
            if s.lost:
                continue
            info = node.gpu(s.index)
            assert info is not None and info.memory_total_bytes
            if info.mig_enabled:  # NVML: no utilization for a GPU in MIG mode
                assert s.utilization_gpu_pct is None and s.utilization_memory_pct is None
            else:
                assert 0 <= s.utilization_gpu_pct <= 100
                assert 0 <= s.utilization_memory_pct <= 100
            assert 0 <= s.memory_used_bytes <= info.memory_total_bytes
            assert s.memory_free_bytes >= 0
            assert s.memory_total_bytes == info.memory_total_bytes
            assert 0 < s.power_w <= s.power_limit_w + 5
            assert s.power_limit_w == info.power_default_limit_w
            assert 20 <= s.temperature_gpu_c <= info.temperature_shutdown_c
            if s.temperature_hotspot_c is not None:
                assert s.temperature_hotspot_c >= s.temperature_gpu_c
            if s.temperature_memory_c is not None:
                assert 20 <= s.temperature_memory_c <= 100
            assert 0 < s.clock_sm_mhz <= info.sm_clock_max_mhz
            assert 0 < s.clock_memory_mhz <= info.memory_clock_max_mhz
            assert s.pcie_gen <= info.pcie_max_gen and s.pcie_width <= info.pcie_max_width
            assert s.pcie_rx_bytes_per_s >= 0 and s.pcie_tx_bytes_per_s >= 0
            if s.nvlink_rx_bytes_per_s is not None:
                assert 0 <= s.nvlink_rx_bytes_per_s < 500e9
            assert s.energy_j >= energy.get(s.index, 0.0)
            energy[s.index] = s.energy_j
        for p in backend.read_processes(T0 + t):
            assert (p.sm_pct is None) == (p.mig_uuid is not None)  # none per process in MIG
            assert p.sm_pct is None or 0 <= p.sm_pct <= 100
            assert p.cpu_pct >= 0 and p.host_rss_bytes > 0
            assert p.start_time <= T0 + t
        host = backend.read_host(T0 + t)
        assert all(0 <= c <= 100 for c in host.per_core_pct)
        assert 0 <= host.memory_used_bytes <= host.memory_total_bytes


def test_energy_counter_agrees_with_power() -> None:
    backend = sim()
    powers = [gpu(backend, t, 0).power_w for t in times(20.5, 80.0, 0.5)]
    joules = gpu(backend, 80.0, 0).energy_j - gpu(backend, 20.0, 0).energy_j
    assert joules / 60.0 == pytest.approx(statistics.mean(powers), rel=0.05)


# -- workload rhythm and thermal lag -------------------------------------------------------------


def test_training_rhythm_has_loader_dips_and_nvlink_bursts() -> None:
    backend = sim("dgx-h100")
    rows = [gpu(backend, t, 0) for t in times(0.0, 60.0, 0.5)]
    util = [s.utilization_gpu_pct for s in rows]
    nvlink = [s.nvlink_tx_bytes_per_s for s in rows]
    assert statistics.median(util) >= 95
    assert min(util) <= 45, "a data-loader stall should starve the GPU at least once a minute"
    assert max(nvlink) >= 150e9, "all-reduce bursts reach hundreds of GB/s"
    assert min(nvlink) <= 40e9
    busy = [s.power_w for s in rows if s.utilization_gpu_pct >= 95]
    starved = [s.power_w for s in rows if s.utilization_gpu_pct < 50]
    assert 500 <= statistics.mean(busy) <= 700
    assert statistics.mean(starved) < statistics.mean(busy) - 150
    assert all(s.pcie_rx_bytes_per_s > 0 for s in rows)
    # all ranks train in lockstep: their utilization dips together
    dips = {t for t, u in zip(times(0.0, 60.0, 0.5), util, strict=True) if u < 50}
    for t in dips:
        assert gpu(backend, t, 3).utilization_gpu_pct < 60


def test_power_cap_is_hit_sometimes_with_clock_droop() -> None:
    backend = sim("dgx-h100")
    capped = [
        s
        for t in times(0.0, 60.0, 1.0)
        for s in backend.read_gpus(T0 + t, slow=False)[:6]
        if s.throttle_reasons and "sw_power_cap" in s.throttle_reasons
    ]
    assert capped
    assert all(s.power_w <= 700 and s.clock_sm_mhz < 1980 for s in capped)


def test_temperature_lags_power_after_a_kill() -> None:
    backend = sim("dgx-h100")
    t_kill = next(t for t in times(100.0, 160.0, 1.0) if gpu(backend, t, 0).power_w > 500)
    before = gpu(backend, t_kill, 0)
    pid = next(p.pid for p in backend.read_processes(T0 + t_kill) if p.gpu_index == 0)
    backend.signal_process(pid, signal.SIGTERM)
    after = [gpu(backend, t_kill + dt, 0) for dt in (1.0, 10.0, 30.0, 300.0)]
    assert all(s.power_w < 130 for s in after), "power drops at once"
    temps = [s.temperature_gpu_c for s in after]
    assert temps[0] >= before.temperature_gpu_c - 2, "temperature does not"
    assert temps[0] > temps[1] > temps[2] > temps[3]
    assert temps[3] <= 40


def test_temperature_rises_gradually_when_a_job_starts() -> None:
    backend = sim("mi300x")
    idle = gpu(backend, 14.0, 0)
    assert idle.utilization_gpu_pct == 0 and not backend.read_processes(T0 + 14.0)
    first = [gpu(backend, t, 0) for t in times(16.0, 36.0, 0.5)]
    assert statistics.median(s.utilization_gpu_pct for s in first) > 90
    assert statistics.median(s.power_w for s in first) > 600
    temps = [gpu(backend, t, 0).temperature_gpu_c for t in (16.0, 30.0, 60.0, 240.0)]
    assert temps[0] - idle.temperature_gpu_c <= 3
    assert temps[0] < temps[1] < temps[2] < temps[3]
    assert temps[3] - idle.temperature_gpu_c >= 25
    assert len(backend.read_processes(T0 + 17.0)) == 8


def test_one_gpu_runs_a_few_degrees_hotter() -> None:
    backend = sim("dgx-h100")
    readings = [backend.read_gpus(T0 + t, slow=False)[:6] for t in times(30.0, 60.0, 3.0)]
    temps = [statistics.mean(r[i].temperature_gpu_c for r in readings) for i in range(6)]
    assert temps.index(max(temps)) == 3
    assert max(temps) - statistics.median(temps) >= 3


def test_idle_gpu_holding_memory_is_present() -> None:
    backend = sim("dgx-h100")
    for t in times(0.0, 30.0, 1.5):
        s = gpu(backend, t, 7)
        assert s.utilization_gpu_pct == 0
        assert s.memory_used_bytes >= 35 * GIB
        assert s.power_w < 130
    (kernel,) = [p for p in backend.read_processes(T0 + 30.0) if p.gpu_index == 7]
    assert "ipykernel_launcher" in kernel.command and kernel.user == "ana"
    assert kernel.sm_pct == 0 and kernel.cpu_pct < 2
    assert kernel.gpu_memory_bytes >= 35 * GIB


def test_training_processes_look_real() -> None:
    backend = sim("dgx-h100")
    procs = backend.read_processes(T0 + 20.0)
    ranks = [p for p in procs if "train.py" in p.command]
    assert len(ranks) == 6
    assert {p.gpu_index for p in ranks} == set(range(6))
    assert [re.search(r"--local-rank=(\d)", p.command).group(1) for p in ranks] == list("012345")
    for p in ranks:
        assert p.user == "svc-train"
        assert 100 <= p.cpu_pct <= 300
        assert p.host_rss_bytes > 8 * GIB
        assert 60 * GIB < p.gpu_memory_bytes < 80 * GIB
        assert T0 - 4 * 3600 < p.start_time < T0 - 3600
    assert any(p.container_id and re.fullmatch(r"[0-9a-f]{64}", p.container_id) for p in procs)
    assert any(p.command.startswith("/usr/bin/python3 /usr/local/bin/vllm serve") for p in procs)
    for p in ranks:
        assert p.sm_pct == gpu(backend, 20.0, p.gpu_index).utilization_gpu_pct
    gpu0 = gpu(backend, 20.0, 0)
    assert gpu0.memory_used_bytes >= ranks[0].gpu_memory_bytes


def test_demo_processes_work_for_a_slurm_job_a_pod_and_a_container() -> None:
    """What the dashboard's JOB / POD column shows on the demo node (the sim's processes are not
    enriched from this machine's /proc, so their attribution is theirs)."""
    assert SimBackend.enrich_processes is False
    procs = sim("dgx-h100").read_processes(T0 + 20.0)
    ranks = [p for p in procs if "train.py" in p.command]
    for p in ranks:
        assert (p.slurm_job_id, p.slurm_step, p.slurm_job_name) == ("4242", "0", "train-llama")
        assert p.slurm_job_user == "svc-train" and p.container_id is None
    (server,) = [p for p in procs if p.name == "vllm"]
    assert (server.k8s_namespace, server.k8s_pod_name) == ("ml", "vllm-0")
    assert re.fullmatch(
        r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
        server.k8s_pod_uid or "",
    )
    assert server.container_name == "vllm" and server.container_runtime == "containerd"
    (kernel,) = [p for p in procs if p.gpu_index == 7]
    assert kernel.container_name == "jupyter" and kernel.container_runtime == "docker"
    assert re.fullmatch(r"[0-9a-f]{64}", kernel.container_id or "")
    assert kernel.k8s_pod_uid is None and kernel.slurm_job_id is None


# -- tiers and capabilities ----------------------------------------------------------------------


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_slow_fields_only_on_slow_reads(scenario: str) -> None:
    backend = sim(scenario)
    for s in backend.read_gpus(T0 + 20.0, slow=False):
        assert all(getattr(s, f) is None for f in SLOW_TIER_FIELDS)
    for s in backend.read_gpus(T0 + 20.0, slow=True):
        if not s.lost:
            assert s.pcie_rx_bytes_per_s is not None and s.pcie_tx_bytes_per_s is not None


def test_dgx_slow_reads_fill_nvlink_and_ecc() -> None:
    s = gpu(sim("dgx-h100"), 20.0, 0, slow=True)
    assert s.nvlink_rx_bytes_per_s is not None and s.nvlink_tx_bytes_per_s is not None
    assert s.ecc_volatile_uncorrected == 0 and s.ecc_volatile_corrected == 0
    assert s.ecc_aggregate_uncorrected == 0 and s.ecc_aggregate_corrected is not None
    assert s.remapped_rows_pending is False and s.remapped_rows_failure is False


def test_h100_static_facts() -> None:
    node = sim("dgx-h100").open()
    assert node.driver_version == "550.54.15" and node.runtime_version == "12.4"
    for info in node.gpus:
        assert info.name == "NVIDIA H100 80GB HBM3" and info.vendor == "nvidia"
        assert info.memory_total_bytes == 81559 * (1 << 20)
        assert info.power_default_limit_w == 700 and info.sm_clock_max_mhz == 1980
        assert info.memory_clock_max_mhz == 2619 and info.sm_count == 132
        assert info.compute_capability == "9.0"
        assert (info.pcie_max_gen, info.pcie_max_width) == (5, 16)
        assert info.ecc_enabled is True and info.persistence_mode is True
        assert info.mig_enabled is False and not info.fan_count
        assert re.fullmatch(
            r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", info.uuid
        )
        assert re.fullmatch(r"00000000:[0-9A-F]{2}:00\.0", info.pci_bus_id)
        assert info.temperature_slowdown_c < info.temperature_shutdown_c
    assert gpu(sim("dgx-h100"), 5.0, 0).fan_pct is None


def test_rtx4090_lacks_ecc_mig_nvlink_but_has_fans() -> None:
    backend = sim("rtx4090")
    (info,) = backend.open().gpus
    assert info.name == "NVIDIA GeForce RTX 4090" and info.compute_capability == "8.9"
    assert info.sm_count == 128 and info.power_default_limit_w == 450
    assert info.ecc_enabled is None and info.mig_enabled is None and info.fan_count
    s = gpu(backend, 30.0, 0, slow=True)
    assert s.nvlink_rx_bytes_per_s is None and s.nvlink_tx_bytes_per_s is None
    assert s.ecc_volatile_corrected is None and s.ecc_volatile_uncorrected is None
    assert s.remapped_rows_pending is None
    assert s.fan_pct is not None and s.encoder_pct > 0
    procs = backend.read_processes(T0 + 30.0)
    assert any(p.type == "graphics" and p.name == "Xorg" for p in procs)
    assert any(p.type == "compute" and "ComfyUI" in p.command for p in procs)


def test_a100_pcie_has_no_nvlink_and_serves_vllm() -> None:
    backend = sim("a100-pcie")
    node = backend.open()
    assert [g.name for g in node.gpus] == ["NVIDIA A100 80GB PCIe"] * 2
    assert all(s.nvlink_tx_bytes_per_s is None for s in backend.read_gpus(T0 + 3, slow=True))
    util = [gpu(backend, t, 0).utilization_gpu_pct for t in times(0.0, 120.0, 1.0)]
    assert max(util) >= 80 and min(util) == 0, "inference load is bursty"
    (server,) = [p for p in backend.read_processes(T0 + 3) if p.gpu_index == 0]
    assert "vllm serve meta-llama/Llama-3.1-8B-Instruct" in server.command
    assert server.container_id and len(server.container_id) == 64


def test_mi300x_reports_like_amd() -> None:
    backend = sim("mi300x")
    node = backend.open()
    assert len(node.gpus) == 8
    info = node.gpus[0]
    assert info.vendor == "amd" and info.name == "AMD Instinct MI300X"
    assert info.compute_capability == "gfx942" and info.sm_count == 304
    assert info.power_default_limit_w == 750
    assert info.memory_total_bytes > 190 * 10**9
    s = gpu(backend, 60.0, 0, slow=True)
    assert s.pstate is None and s.fan_pct is None
    assert s.temperature_gpu_c is not None and s.temperature_gpu_c == s.temperature_hotspot_c
    xgmi = [gpu(backend, t, 0).nvlink_tx_bytes_per_s for t in times(40.0, 80.0, 0.5)]
    assert max(xgmi) >= 100e9


@pytest.mark.parametrize(
    ("scenario", "slowdown", "hotspot", "memory"),
    [
        ("dgx-h100", 89.0, None, 95.0),  # NVML: MEM_MAX for HBM3, no hotspot sensor
        ("faulty", 89.0, None, 95.0),
        ("a100-pcie", 89.0, None, 95.0),
        ("rtx4090", 90.0, None, None),  # GeForce: no memory or hotspot limit
        ("mi300x", 100.0, 100.0, 95.0),  # no edge sensor: the main limit is the hotspot's
    ],
)
def test_every_sensor_has_its_own_limit(
    scenario: str, slowdown: float, hotspot: float | None, memory: float | None
) -> None:
    for info in sim(scenario).open().gpus:
        assert info.temperature_slowdown_c == slowdown
        assert info.temperature_hotspot_limit_c == hotspot
        assert info.temperature_memory_limit_c == memory
        assert info.temperature_slowdown_c < (info.temperature_shutdown_c or 0)


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_pcie_gpu_maximum_is_reported_and_at_least_the_links(scenario: str) -> None:
    for info in sim(scenario).open().gpus:
        assert info.pcie_gpu_max_gen is not None and info.pcie_max_gen is not None
        assert info.pcie_gpu_max_gen >= info.pcie_max_gen


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_healthy_boards_stay_clear_of_every_temperature_limit(scenario: str) -> None:
    """More than 5 °C below each sensor's limit for ten minutes (the health rule warns within 5),
    except the hot GPUs of the faulty and straggler nodes, which are meant to be over."""
    backend = sim(scenario)
    node = backend.open()
    for t in times(0.0, 600.0, 5.0):
        for s in backend.read_gpus(T0 + t, slow=False):
            info = node.gpu(s.index)
            hot = {"faulty": 5, "straggler": 3}.get(scenario)
            if s.lost or info is None or s.index == hot:
                continue
            for reading, limit in (
                (s.temperature_gpu_c, info.temperature_slowdown_c),
                (s.temperature_hotspot_c, info.temperature_hotspot_limit_c),
                (s.temperature_memory_c, info.temperature_memory_limit_c),
            ):
                if reading is not None and limit is not None:
                    assert reading < limit - 5, (s.index, t, reading, limit)


# -- faults --------------------------------------------------------------------------------------


def test_faulty_gpu_is_lost_only_after_lost_after_s() -> None:
    backend = sim("faulty", lost_after_s=5.0)
    node = backend.open()
    lost_index = 3
    before = gpu(backend, 4.9, lost_index)
    assert not before.lost and before.utilization_gpu_pct is not None
    assert any(p.gpu_index == lost_index for p in backend.read_processes(T0 + 4.9))
    for t in (5.0, 6.0, 60.0):
        s = gpu(backend, t, lost_index)
        assert s.lost and s.error == "GPU is lost (fell off the bus)"
        assert s.utilization_gpu_pct is None and s.power_w is None
        assert s.memory_used_bytes is None and s.temperature_gpu_c is None
        assert s.throttle_reasons is None
        assert not any(p.gpu_index == lost_index for p in backend.read_processes(T0 + t))
    assert len(node.gpus) == 8
    assert sum(s.lost for s in backend.read_gpus(T0 + 60.0, slow=True)) == 1


def test_faulty_default_loss_is_three_seconds_in() -> None:
    backend = sim("faulty")
    assert not any(s.lost for s in backend.read_gpus(T0 + 2.9, slow=False))
    assert any(s.lost for s in backend.read_gpus(T0 + 3.0, slow=False))


def test_faulty_other_faults_are_present() -> None:
    backend = sim("faulty")
    node = backend.open()
    samples = backend.read_gpus(T0 + 30.0, slow=True)
    hot = [s for s in samples if s.throttle_reasons and s.throttle_reasons & THROTTLE_TROUBLE]
    assert len(hot) == 1
    (hot_gpu,) = hot
    info = node.gpu(hot_gpu.index)
    assert hot_gpu.throttle_reasons & {"sw_thermal", "hw_thermal"}
    assert hot_gpu.temperature_gpu_c >= info.temperature_slowdown_c - 3
    assert hot_gpu.clock_sm_mhz <= 0.8 * info.sm_clock_max_mhz
    assert hot_gpu.utilization_gpu_pct > 0
    ecc = [s for s in samples if s.ecc_volatile_uncorrected]
    assert [s.ecc_volatile_uncorrected for s in ecc] == [1]
    assert ecc[0].remapped_rows_pending is True
    narrow = [s for s in samples if not s.lost and (s.pcie_gen, s.pcie_width) != (5, 16)]
    assert [(s.pcie_gen, s.pcie_width) for s in narrow] == [(3, 8)]
    assert node.gpu(narrow[0].index).pcie_max_gen == 5
    assert len({hot_gpu.index, ecc[0].index, narrow[0].index, 3}) == 4


# -- scripted events ------------------------------------------------------------------------------


FAULTY_EVENTS = [  # (elapsed s, kind, GPU, code) with the default lost_after_s of 3 s
    (1.0, "ecc_double_bit", 2, None),
    (1.0, "xid", 2, 48),
    (1.2, "xid", 2, 63),
    (3.0, "xid", 3, 79),
]


def event_rows(events) -> list[tuple[float, str, int | None, int | None]]:
    return [(round(e.timestamp - T0, 6), e.kind, e.gpu_index, e.code) for e in events]


def test_faulty_events_come_once_in_time_order_none_early() -> None:
    backend = sim("faulty")
    seen = []
    for t in times(0.0, 10.0, 0.1):
        got = backend.read_events(T0 + t)
        assert all(e.timestamp <= T0 + t + 1e-9 for e in got), t  # none before its moment
        assert all(e.timestamp > T0 + t - 0.1 - 1e-9 for e in got), t  # nor late
        seen += got
    assert event_rows(seen) == FAULTY_EVENTS
    assert all(e.source == "sim" for e in seen)
    assert {e.code: e.message for e in seen if e.kind == "xid"}[79] == "GPU has fallen off the bus"
    assert backend.read_events(T0 + 100.0) == []


def test_faulty_events_read_directly_at_a_late_time_all_at_once() -> None:
    backend = sim("faulty")
    assert event_rows(backend.read_events(T0 + 10.0)) == FAULTY_EVENTS
    assert backend.read_events(T0 + 10.0) == []
    assert backend.read_events(T0 + 20.0) == []


def test_faulty_events_nothing_before_the_first_moment() -> None:
    backend = sim("faulty")
    assert backend.read_events(T0 + 0.0) == []
    assert backend.read_events(T0 + 0.99) == []
    assert [e.kind for e in backend.read_events(T0 + 1.0)] == ["ecc_double_bit", "xid"]
    assert [e.code for e in backend.read_events(T0 + 2.9)] == [63]
    assert [(e.gpu_index, e.code) for e in backend.read_events(T0 + 3.0)] == [(3, 79)]


def test_faulty_xid_79_follows_lost_after_s_and_matches_the_loss() -> None:
    backend = sim("faulty", lost_after_s=5.0)
    assert [e.code for e in backend.read_events(T0 + 4.99)] == [None, 48, 63]
    assert not gpu(backend, 4.99, 3).lost
    (xid,) = backend.read_events(T0 + 5.0)
    assert (xid.kind, xid.gpu_index, xid.code, xid.timestamp) == ("xid", 3, 79, T0 + 5.0)
    assert gpu(backend, 5.0, 3).lost


def test_events_are_deterministic_across_backends() -> None:
    a, b = sim("faulty", seed=3), sim("faulty", seed=3)
    stepped = [e for t in times(0.0, 6.0, 0.25) for e in a.read_events(T0 + t)]
    assert stepped == b.read_events(T0 + 6.0)
    c = SimBackend("faulty", seed=3)  # start time taken from the first reading
    assert c.read_events(T0 - 50.0) == []
    offsets = [e.timestamp - (T0 - 50.0) for e in c.read_events(T0 - 40.0)]
    assert offsets == pytest.approx([1.0, 1.0, 1.2, 3.0])


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if s != "faulty"])
def test_other_scenarios_have_no_events(scenario: str) -> None:
    backend = sim(scenario)
    assert backend.read_events(T0 + 600.0) == []


# -- signals -------------------------------------------------------------------------------------


def test_signal_process_removes_process_and_frees_its_gpu() -> None:
    backend = sim("dgx-h100")
    backend.read_gpus(T0 + 10.0, slow=False)
    (kernel,) = [p for p in backend.read_processes(T0 + 10.0) if p.gpu_index == 7]
    backend.signal_process(kernel.pid, signal.SIGKILL)
    assert all(p.pid != kernel.pid for p in backend.read_processes(T0 + 10.0))
    assert all(p.pid != kernel.pid for p in backend.read_processes(T0 + 50.0))
    freed = gpu(backend, 11.0, 7)
    assert freed.memory_used_bytes < GIB
    assert freed.utilization_gpu_pct == 0 and freed.power_w < 90
    with pytest.raises(ProcessLookupError):
        backend.signal_process(kernel.pid, signal.SIGTERM)
    with pytest.raises(ProcessLookupError):
        backend.signal_process(1, signal.SIGTERM)


def test_signal_process_training_rank_drops_gpu_to_idle() -> None:
    backend = sim("dgx-h100")
    procs = backend.read_processes(T0 + 20.0)
    rank2 = next(p for p in procs if p.gpu_index == 2)
    backend.signal_process(rank2.pid, signal.SIGINT)
    s = gpu(backend, 21.0, 2)
    assert s.utilization_gpu_pct == 0 and s.memory_used_bytes == 0
    assert s.throttle_reasons == {"gpu_idle"}
    assert gpu(backend, 21.0, 1).utilization_gpu_pct > 0, "other ranks are untouched"


def test_non_terminating_signal_keeps_process() -> None:
    backend = sim("rtx4090")
    ffmpeg = next(p for p in backend.read_processes(T0 + 5.0) if p.name == "ffmpeg")
    backend.signal_process(ffmpeg.pid, signal.SIGUSR1)
    assert any(p.pid == ffmpeg.pid for p in backend.read_processes(T0 + 6.0))


def test_kills_do_not_leak_between_backends() -> None:
    a, b = sim(), sim()
    pid = a.read_processes(T0)[0].pid
    a.signal_process(pid, signal.SIGTERM)
    assert any(p.pid == pid for p in b.read_processes(T0 + 1))


# -- host ----------------------------------------------------------------------------------------


def test_dgx_host_is_big_and_busy() -> None:
    backend = sim("dgx-h100")
    h1 = backend.read_host(T0 + 10.0)
    h2 = backend.read_host(T0 + 70.0)
    assert len(h1.per_core_pct) == 224
    assert h1.memory_total_bytes >= 1900 * GIB
    assert h1.cpu_pct == pytest.approx(statistics.mean(h1.per_core_pct), abs=0.1)
    assert 5 <= h1.cpu_pct <= 60
    assert h1.load_average and all(x > 10 for x in h1.load_average)
    assert h2.uptime_s - h1.uptime_s == pytest.approx(60.0)
    assert h1.per_core_pct != h2.per_core_pct


# -- topology and per-link readings --------------------------------------------------------------


def _pairs(n: int) -> list[tuple[int, int]]:
    return [(a, b) for a in range(n) for b in range(a + 1, n)]


@pytest.mark.parametrize("scenario", ["dgx-h100", "faulty"])
def test_dgx_topology_is_nv18_through_nvswitch(scenario: str) -> None:
    topo = sim(scenario).open().topology
    assert topo is not None
    assert [(p.a, p.b) for p in topo.paths] == _pairs(8)  # 28 pairs, a < b, once each
    for p in topo.paths:
        same_socket = (p.a < 4) == (p.b < 4)
        assert p.pcie_level == ("NODE" if same_socket else "SYS")
        assert p.p2p_read is True and p.p2p_write is True
        assert p.link_type is None  # AMD only
    switches = set()
    for i in range(8):
        links = topo.links_of(i)
        assert [link.link for link in links] == list(range(18))
        for link in links:
            assert link.kind == "nvlink" and link.version == 4
            assert link.speed_gbps == pytest.approx(212.5)
            assert link.remote_type == "switch" and link.remote_gpu_index is None
            switches.add(link.remote_pci_bus_id)
    assert len(switches) == 4
    assert len(topo.links) == 8 * 18
    assert [(loc.gpu_index, loc.numa_node) for loc in topo.locality] == [
        (i, 0 if i < 4 else 1) for i in range(8)
    ]
    for loc in topo.locality:
        assert loc.cpu_affinity == ("0-55,112-167" if loc.numa_node == 0 else "56-111,168-223")


def test_a100_pcie_topology_is_one_sys_pair_without_links() -> None:
    backend = sim("a100-pcie")
    topo = backend.open().topology
    assert topo is not None
    assert len(topo.paths) == 1
    (path,) = topo.paths
    assert (path.a, path.b, path.pcie_level) == (0, 1, "SYS")
    assert path.p2p_read is False and path.p2p_write is False
    assert topo.links == ()
    assert [loc.numa_node for loc in topo.locality] == [0, 1]
    assert all(loc.cpu_affinity for loc in topo.locality)
    for s in backend.read_gpus(T0 + 5.0, slow=True):
        assert s.links == ()


def test_rtx4090_topology_is_a_single_gpu() -> None:
    backend = sim("rtx4090")
    topo = backend.open().topology
    assert topo is not None
    assert topo.paths == () and topo.links == ()
    assert len(topo.locality) == 1 and topo.locality[0].gpu_index == 0
    assert topo.locality[0].cpu_affinity == "0-31"
    assert gpu(backend, 5.0, 0).links == ()


def test_mi300x_topology_is_a_full_xgmi_mesh() -> None:
    topo = sim("mi300x").open().topology
    assert topo is not None
    assert [(p.a, p.b) for p in topo.paths] == _pairs(8)
    for p in topo.paths:
        assert (p.link_type, p.hops, p.weight) == ("xgmi", 1, 15)
        assert p.p2p_read is True and p.p2p_write is True
    node = sim("mi300x").open()
    edges = set()
    for i in range(8):
        links = topo.links_of(i)
        assert len(links) == 7
        assert all(link.kind == "xgmi" and link.remote_type == "gpu" for link in links)
        peers = [link.remote_gpu_index for link in links]
        assert sorted(peers) == [p for p in range(8) if p != i]
        for link in links:
            peer = node.gpu(link.remote_gpu_index)
            assert peer is not None and link.remote_pci_bus_id == peer.pci_bus_id
            edges.add((min(i, link.remote_gpu_index), max(i, link.remote_gpu_index)))
    assert sorted(edges) == _pairs(8)
    assert [loc.numa_node for loc in topo.locality] == [0] * 4 + [1] * 4


def test_faulty_has_exactly_one_nvlink_down() -> None:
    backend = sim("faulty")
    samples = backend.read_gpus(T0 + 2.0, slow=True)  # before GPU 3 falls off the bus
    down = [(s.index, link) for s in samples for link in s.links or () if not link.up]
    assert len(down) == 1
    index, link = down[0]
    assert (index, link.link) == (1, 7)
    assert link.rx_bytes_per_s is None and link.tx_bytes_per_s is None
    assert link.replay_errors and link.recovery_errors
    for s in samples:
        assert s.links is not None and len(s.links) == 18
        for other in s.links:
            if (s.index, other.link) != (1, 7):
                assert other.up is True
                assert other.replay_errors == other.recovery_errors == other.crc_errors == 0
    lost = backend.read_gpus(T0 + 10.0, slow=True)[3]
    assert lost.lost and lost.links is None


@pytest.mark.parametrize("scenario", ["dgx-h100", "mi300x", "faulty"])
def test_per_link_rates_sum_to_the_aggregate(scenario: str) -> None:
    backend = sim(scenario)
    topo = backend.open().topology
    assert topo is not None
    cap = min(link.speed_gbps for link in topo.links) * 1e9 / 8  # bytes/s per direction
    busy = 0
    for t in times(16.0, 40.0, 0.75):
        for s in backend.read_gpus(T0 + t, slow=True):
            if s.lost:
                continue
            assert s.links
            up = [link for link in s.links if link.up]
            rx = [link.rx_bytes_per_s for link in up]
            tx = [link.tx_bytes_per_s for link in up]
            assert all(v is not None and 0 <= v < cap for v in rx + tx)
            # each link's share is rounded to whole bytes, nothing else is lost
            assert sum(rx) == pytest.approx(s.nvlink_rx_bytes_per_s, abs=len(up))
            assert sum(tx) == pytest.approx(s.nvlink_tx_bytes_per_s, abs=len(up))
            if s.nvlink_rx_bytes_per_s > 1e9:
                busy += 1
                assert len(set(rx)) == len(rx), "links are not identical"
                mean = sum(rx) / len(rx)
                assert all(abs(v - mean) <= 0.06 * mean for v in rx)
    assert busy, "some reads fall in all-reduce traffic"


def test_links_only_on_slow_reads() -> None:
    backend = sim("dgx-h100")
    assert all(s.links is None for s in backend.read_gpus(T0 + 3.0, slow=False))
    assert all(s.links for s in backend.read_gpus(T0 + 3.0, slow=True))


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_topology_and_links_are_deterministic(scenario: str) -> None:
    a, b = sim(scenario, seed=4), sim(scenario, seed=4)
    assert a.open().topology == b.open().topology
    assert a.open().topology is not None
    for t in (0.0, 3.3, 17.25, 61.0):
        la = [s.links for s in a.read_gpus(T0 + t, slow=True)]
        lb = [s.links for s in b.read_gpus(T0 + t, slow=True)]
        assert la == lb
    # the links of a reading do not depend on what was read before
    c = sim(scenario, seed=4)
    assert [s.links for s in c.read_gpus(T0 + 61.0, slow=True)] == la


def test_slow_read_draws_link_noise_once_per_gpu_not_per_link(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each link's wiggle pairs up channels of one smooth8 draw per GPU, so a slow read of
    8 GPUs x 18 links costs 8 draws, not 144; a fast read reads no links at all."""
    import gputui.backends.sim.topology as topology

    draws: list[int] = []
    real = topology.smooth8

    def counting(k: int, t: float) -> list[float]:
        draws.append(k)
        return real(k, t)

    monkeypatch.setattr(topology, "smooth8", counting)
    backend = sim("dgx-h100")
    backend.read_gpus(T0 + 20.0, slow=False)
    assert draws == []
    samples = backend.read_gpus(T0 + 20.5, slow=True)
    assert sum(len(s.links or ()) for s in samples) == 8 * 18
    assert len(draws) == 8 and len(set(draws)) == 8  # one per GPU, each its own key
