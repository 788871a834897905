"""MI300X compute partitions (SPX / DPX / CPX) through the AMD-SMI backend, against the fake
``amdsmi`` (tests/fakes/fake_amdsmi.py: :func:`mi300x_partitions`, :func:`mi300x_cpx_node`)."""

from __future__ import annotations

import pytest
from tests.fakes.fake_amdsmi import (
    FakeAmdProcess,
    GiB,
    make_fake_amdsmi,
    mi210_gpu,
    mi300x_cpx_node,
    mi300x_node,
    mi300x_partitions,
)

from gputui.backends.amd import AmdSmiBackend
from gputui.core.model import Snapshot
from gputui.health import HealthConfig, HealthMonitor
from gputui.views.report import render_snapshot

T0 = 1_700_000_000.0
MI300X = "AMD Instinct MI300X"
DEVICE_WIDE_FIELDS = (
    "power_w",
    "power_limit_w",
    "energy_j",
    "temperature_gpu_c",
    "temperature_hotspot_c",
    "temperature_memory_c",
    "pcie_gen",
    "pcie_width",
    "ecc_aggregate_corrected",
    "ecc_aggregate_uncorrected",
    "retired_pages_pending",
    "nvlink_rx_bytes_per_s",
    "nvlink_tx_bytes_per_s",
    "throttle_reasons",
)


@pytest.fixture(autouse=True)
def _no_host_sysfs(monkeypatch, tmp_path):
    """The fakes' BDFs may exist on the test machine: never read its real sysfs."""
    monkeypatch.setattr("gputui.core.pci.SYSFS_PCI_DEVICES", tmp_path / "no-sysfs")


def opened(fake):
    backend = AmdSmiBackend(fake)
    return backend, backend.open()


def test_cpx_mi300x_is_eight_gpus_each_known_by_its_whole_pci_address():
    _backend, node = opened(mi300x_cpx_node(1))
    assert [g.pci_bus_id for g in node.gpus] == [f"0000:05:00.{n}" for n in range(8)]
    assert [g.index for g in node.gpus] == list(range(8))
    assert len({g.uuid for g in node.gpus}) == 8
    # Every partition says its mode, read from the primary (a secondary answers NOT_SUPPORTED).
    assert [g.compute_partition for g in node.gpus] == ["CPX"] * 8
    assert [g.name for g in node.gpus] == [f"{MI300X} (CPX/NPS4 partition {n}/8)" for n in range(8)]
    assert [g.compute_partition_index for g in node.gpus] == list(range(8))
    assert [g.sm_count for g in node.gpus] == [38] * 8


def test_spx_and_unpartitionable_gpus_keep_their_names():
    _backend, node = opened(mi300x_node(count=2))
    assert [(g.name, g.compute_partition) for g in node.gpus] == [(MI300X, "SPX")] * 2
    assert [g.compute_partition_index for g in node.gpus] == [None, None]
    _backend, node = opened(make_fake_amdsmi([mi210_gpu()]))
    assert (node.gpus[0].name, node.gpus[0].compute_partition) == ("AMD Instinct MI210", None)
    assert node.gpus[0].compute_partition_index is None


def test_dpx_counts_two_partitions():
    _backend, node = opened(make_fake_amdsmi(mi300x_partitions(mode="DPX", memory="NPS1")))
    assert [g.name for g in node.gpus] == [
        f"{MI300X} (DPX/NPS1 partition 0/2)",
        f"{MI300X} (DPX/NPS1 partition 1/2)",
    ]
    assert [g.compute_partition for g in node.gpus] == ["DPX", "DPX"]


def test_secondary_partitions_leave_device_wide_values_unreported():
    backend, node = opened(mi300x_cpx_node(1))
    samples = backend.read_gpus(T0, slow=True)
    primary, *secondaries = samples
    assert primary.power_w == 350.0 and primary.temperature_gpu_c == 45.0
    assert primary.utilization_gpu_pct == 12.0
    for s in secondaries:
        assert not s.lost and s.error is None  # a partition, not a broken GPU
        for name in DEVICE_WIDE_FIELDS:
            assert getattr(s, name) is None, (s.index, name)
        assert s.utilization_gpu_pct is None  # "N/A" on ROCm 7.0.2
        assert s.clock_sm_mhz == 2100  # a partition metric of its own
        assert s.memory_used_bytes == GiB // 2
        assert s.links == ()  # the XGMI links are the primary's
    # Static limits are the physical GPU's: only the primary has them.
    assert node.gpus[0].power_default_limit_w == 750.0
    assert all(g.power_default_limit_w is None for g in node.gpus[1:])
    assert all(g.temperature_slowdown_c is None for g in node.gpus[1:])
    assert all(g.pcie_max_gen is None for g in node.gpus[1:])


def test_an_amdsmi_that_mirrors_the_primary_copies_nothing_onto_secondaries():
    # Before ROCm 6.4.1 every partition read the primary's DRM node: the same power, errors and
    # links eight times over. Only the primary reports them; a secondary only its identity.
    fake = mi300x_cpx_node(2, mirror=True)
    for gpu in fake.gpus:
        gpu.ecc_uncorrectable = 1
    backend, node = opened(fake)
    samples = backend.read_gpus(T0, slow=True)
    powers = [s.power_w for s in samples]
    assert powers == [350.0] + [None] * 7 + [350.0] + [None] * 7
    for s in samples:
        if s.index % 8:
            assert s.utilization_gpu_pct is None and s.memory_used_bytes is None, s.index
            assert s.clock_sm_mhz is None and s.ecc_aggregate_uncorrected is None, s.index
    assert [(link.gpu_index, link.remote_gpu_index) for link in node.topology.links] == [
        (0, 8),
        (8, 0),
    ]
    snapshot = Snapshot(timestamp=T0, node=node, gpus=tuple(samples))
    findings = HealthMonitor(HealthConfig(current_user="me")).update(snapshot)
    assert sorted({f.gpu_index for f in findings if f.rule == "ecc_aggregate"}) == [0, 8]


def test_links_name_the_peers_primary_by_its_whole_address():
    _backend, node = opened(mi300x_cpx_node(2))
    links = node.topology.links
    assert [(link.gpu_index, link.remote_gpu_index) for link in links] == [(0, 8), (8, 0)]
    assert [link.remote_pci_bus_id for link in links] == ["0000:26:00.0", "0000:05:00.0"]


def test_a_lone_secondary_is_still_a_partition():
    # A container given partition 3 only: its primary is not visible, the mode unknown.
    _backend, node = opened(make_fake_amdsmi([mi300x_partitions()[3]]))
    assert node.gpus[0].name == f"{MI300X} (partition 3)"
    assert node.gpus[0].compute_partition is None
    assert node.gpus[0].compute_partition_index == 3
    assert node.gpus[0].pci_bus_id == "0000:05:00.3"


def test_locality_of_a_secondary_comes_from_its_own_address_else_its_pci_device(
    monkeypatch, tmp_path
):
    # Only the primary is a PCI function with sysfs files; a partition that has its own entry
    # (a driver that makes one) is read there.
    for name, node_id, cpus in (("0000:05:00.0", "0", "0-47"), ("0000:05:00.3", "1", "48-95")):
        device = tmp_path / name
        device.mkdir()
        (device / "numa_node").write_text(node_id + "\n")
        (device / "local_cpulist").write_text(cpus + "\n")
    monkeypatch.setattr("gputui.core.pci.SYSFS_PCI_DEVICES", tmp_path)
    fake = mi300x_cpx_node(1)
    for gpu in fake.gpus:
        gpu.numa_node = 7  # what amdsmi would say: sysfs wins
    _backend, node = opened(fake)
    locality = node.topology.locality
    assert [loc.cpu_affinity for loc in locality] == ["0-47"] * 3 + ["48-95"] + ["0-47"] * 4
    assert [loc.numa_node for loc in locality] == [0, 0, 0, 1, 0, 0, 0, 0]


def test_processes_stay_on_their_own_partition():
    fake = mi300x_cpx_node(1)
    fake.gpus[3].processes = [FakeAmdProcess(pid=333, name="train", vram_mem=2 * GiB)]
    fake.gpus[0].processes = [FakeAmdProcess(pid=100, name="serve", vram_mem=GiB)]
    backend, _node = opened(fake)
    assert sorted((p.gpu_index, p.pid) for p in backend.read_processes(T0)) == [(0, 100), (3, 333)]


def test_snapshot_and_health_show_secondaries_as_not_reported():
    backend, node = opened(mi300x_cpx_node(1, mirror=True))
    samples = tuple(backend.read_gpus(T0, slow=True))
    snapshot = Snapshot(timestamp=T0, node=node, gpus=samples)
    rows = [line for line in render_snapshot(snapshot, width=160).splitlines() if "MI300X" in line]
    assert len(rows) == 8
    assert "350" in rows[0] and rows[0].endswith("CPX partition 0")
    for n, row in enumerate(rows[1:], start=1):
        assert "350" not in row and "LOST" not in row and "not answering" not in row, row
        assert row.endswith(f"CPX partition {n}")
    findings = HealthMonitor(HealthConfig(current_user="me")).update(snapshot)
    assert [f for f in findings if f.severity in ("warn", "fail")] == []


@pytest.mark.parametrize(
    ("rocm", "secondaries_answer_the_mode", "own_readings"),
    [
        ((True, "6.3.1"), False, False),  # before 6.4.1: the primary's node answers for all
        ((True, "7.0.2"), True, True),  # an amdsmi that asks the primary for the mode
        ((False, "librocm-core.so not found"), True, False),  # unknown: the mode answer tells
        ((False, "librocm-core.so not found"), False, True),
    ],
)
def test_whether_secondaries_mirror_their_primary(rocm, secondaries_answer_the_mode, own_readings):
    fake = mi300x_cpx_node(1, rocm_version=rocm)
    for gpu in fake.gpus[1:]:
        gpu.compute_partition = "CPX" if secondaries_answer_the_mode else None
    backend, node = opened(fake)
    secondary = backend.read_gpus(T0, slow=False)[5]
    assert node.gpus[5].compute_partition == "CPX"
    assert secondary.power_w is None
    if own_readings:
        assert (secondary.memory_used_bytes, secondary.clock_sm_mhz) == (GiB // 2, 2100)
    else:
        assert (secondary.memory_used_bytes, secondary.clock_sm_mhz) == (None, None)


@pytest.mark.usefixtures("tui_env")
async def test_dashboard_shows_secondaries_as_partitions_not_as_broken_gpus():
    from tests.fakes.clock import FakeClock

    from gputui.engine.sampler import Sampler
    from gputui.tui.app import GpuTuiApp
    from gputui.tui.messages import SnapshotReady
    from gputui.tui.widgets.gpu_pieces import LOST_TEXT, NOT_ANSWERING_TEXT

    sampler = Sampler(AmdSmiBackend(mi300x_cpx_node(1)), clock=FakeClock(T0))
    sampler.open()
    app = GpuTuiApp(sampler, start_sampler=False)
    async with app.run_test(size=(160, 60)) as pilot:
        app.post_message(SnapshotReady(sampler.poll()))
        await pilot.pause()
        texts = ["\n".join(p.plain_lines) for p in app.dashboard.panels.values()]
        assert len(texts) == 8
        assert "350" in texts[0]
        for n, text in enumerate(texts[1:], start=1):
            assert LOST_TEXT not in text and NOT_ANSWERING_TEXT not in text, text
            assert "350" not in text
            assert f"partition {n}/8" in text, text
