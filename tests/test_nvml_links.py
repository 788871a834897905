"""Topology and NVLink (gputui.backends.nvml.links): links to NVSwitches and peers, PCIe levels,
P2P, CPU and NUMA locality, per-link state, rates and error counters, and what discovery costs."""

from __future__ import annotations

import ctypes

import pynvml
import pytest
from tests.factories import fake_pci_sysfs, open_nvml
from tests.fakes.fake_pynvml import (
    FakeGpu,
    FakeLink,
    FakeNvml,
    NVMLError_GpuIsLost,
    direct_links,
    make_fake_nvml,
    nvswitch_links,
)

from gputui.backends.nvml import (
    NvmlBackend,
    format_cpu_list,
)
from gputui.core.model import Topology

pytestmark = pytest.mark.usefixtures("nvml_backends")


# -- topology and NVLink --------------------------------------------------------------------------

LINK_CALLS = (
    "nvmlDeviceGetNvLinkState",
    "nvmlDeviceGetNvLinkVersion",
    "nvmlDeviceGetNvLinkRemotePciInfo",
    "nvmlDeviceGetNvLinkRemoteDeviceType",
    "nvmlDeviceGetNvLinkErrorCounter",
)
NEAR = tuple(range(0, 56)) + tuple(range(112, 168))
FAR = tuple(range(56, 112)) + tuple(range(168, 224))


def open_topology(fake: FakeNvml) -> tuple[NvmlBackend, Topology]:
    backend = NvmlBackend(fake)
    topology = backend.open().topology
    assert topology is not None
    return backend, topology


def test_nvswitch_node_discovers_18_switch_links_per_gpu(monkeypatch, tmp_path) -> None:
    """8 GPUs, 18 NVLink4 links each to an NVSwitch, two NUMA nodes (GPUs 0-3 and 4-7)."""
    gpus = [
        FakeGpu(
            nvlinks=nvswitch_links(18),
            nvlink_speed_mbps=26562,
            cpu_affinity=NEAR if i < 4 else FAR,
        )
        for i in range(8)
    ]
    # The NUMA node of each GPU's PCI device, as the kernel reports it.
    numa = {f"0000:{0x18 + i:02x}:00.0": {"numa_node": "0" if i < 4 else "1"} for i in range(8)}
    fake_pci_sysfs(monkeypatch, tmp_path / "sysfs", numa)
    levels = [
        [0 if a == b else (40 if (a < 4) == (b < 4) else 50) for b in range(8)] for a in range(8)
    ]
    fake = make_fake_nvml(gpus, topology_levels=levels)
    _, topology = open_topology(fake)
    assert len(topology.links) == 8 * 18
    for index in range(8):
        links = topology.links_of(index)
        assert [link.link for link in links] == list(range(18))
        assert {link.remote_type for link in links} == {"switch"}
        assert {link.remote_gpu_index for link in links} == {None}
        assert {link.version for link in links} == {4}
        assert {link.speed_gbps for link in links} == {212.496}  # 26562 MB/s in Gb/s
        assert {link.kind for link in links} == {"nvlink"}
        assert links[0].remote_pci_bus_id == "00000000:C1:00.0"
        # Links 0-17 answer, 18 says InvalidArgument: the loop stops there.
        assert fake.gpu_calls[(index, "nvmlDeviceGetNvLinkState")] == 19
    assert len(topology.paths) == 8 * 7 // 2
    assert [(p.a, p.b) for p in topology.paths[:3]] == [(0, 1), (0, 2), (0, 3)]
    assert topology.path(0, 3).pcie_level == "NODE"
    assert topology.path(3, 4).pcie_level == "SYS"
    assert topology.path(7, 6).pcie_level == "NODE"
    assert all(p.p2p_read is True and p.p2p_write is True for p in topology.paths)
    places = {place.gpu_index: place for place in topology.locality}
    assert places[0].cpu_affinity == "0-55,112-167"
    assert places[7].cpu_affinity == "56-111,168-223"
    assert (places[0].numa_node, places[7].numa_node) == (0, 1)


def test_direct_nvlink_pair_finds_its_peer_despite_bus_id_spelling() -> None:
    """Two cards joined by a 4-link bridge; the remote bus ids differ in case and domain width
    from what nvmlDeviceGetPciInfo reports."""
    gpus = [
        FakeGpu(pci_bus_id="00000000:1A:00.0", nvlinks=direct_links("0000:1b:00.0")),
        FakeGpu(pci_bus_id="00000000:1B:00.0", nvlinks=direct_links("00000000:1a:00.0")),
    ]
    _, topology = open_topology(make_fake_nvml(gpus))
    assert [(link.link, link.remote_gpu_index) for link in topology.links_of(0)] == [
        (i, 1) for i in range(4)
    ]
    assert {link.remote_gpu_index for link in topology.links_of(1)} == {0}
    assert {link.remote_type for link in topology.links} == {"gpu"}
    assert {link.version for link in topology.links} == {3}
    assert {link.speed_gbps for link in topology.links} == {None}  # speed field unsupported
    assert topology.links_of(0)[0].remote_pci_bus_id == "0000:1b:00.0"  # as the driver said
    assert len(topology.paths) == 1


def test_remote_type_function_not_found_is_inferred_from_the_pci_id() -> None:
    gpus = [
        FakeGpu(pci_bus_id="00000000:1A:00.0", nvlinks=direct_links("0000:1B:00.0", count=2)),
        FakeGpu(pci_bus_id="00000000:1B:00.0"),
    ]
    gpus[0].nvlinks.append(FakeLink(remote_bus_id="00000000:C1:00.0"))
    fake = make_fake_nvml(gpus, missing={"nvmlDeviceGetNvLinkRemoteDeviceType"})
    _, topology = open_topology(fake)
    assert [(link.remote_type, link.remote_gpu_index) for link in topology.links_of(0)] == [
        ("gpu", 1),
        ("gpu", 1),
        (None, None),  # not a local GPU and no type: unknown
    ]
    assert topology.links_of(1) == ()


def test_remote_ibm_npu_reads_as_cpu() -> None:
    link = FakeLink(remote_bus_id="00000004:04:00.0", remote_type=1)
    _, topology = open_topology(make_fake_nvml([FakeGpu(nvlinks=[link])]))
    assert topology.links[0].remote_type == "cpu"


@pytest.mark.parametrize(
    ("level", "code"),
    [(0, "PIX"), (10, "PIX"), (20, "PXB"), (30, "PHB"), (40, "NODE"), (50, "SYS"), (99, None)],
)
def test_pcie_levels_map_to_topo_codes(level: int, code: str | None) -> None:
    _, topology = open_topology(make_fake_nvml(2, topology_levels=[[0, level], [level, 0]]))
    (path,) = topology.paths
    assert (path.a, path.b, path.pcie_level) == (0, 1, code)


def test_p2p_read_and_write_use_plain_indices() -> None:
    gpu_not_supported = pynvml.NVML_P2P_STATUS_GPU_NOT_SUPPORTED
    fake = make_fake_nvml(3, p2p_status={(0, 1, 1): gpu_not_supported, (2, 0, 0): 3})
    _, topology = open_topology(fake)
    assert (topology.path(0, 1).p2p_read, topology.path(0, 1).p2p_write) == (True, False)
    assert (topology.path(0, 2).p2p_read, topology.path(0, 2).p2p_write) == (False, True)
    assert (topology.path(1, 2).p2p_read, topology.path(1, 2).p2p_write) == (True, True)
    indices = [args[2] for args in fake.args_of("nvmlDeviceGetP2PStatus")]
    assert sorted(set(indices)) == [0, 1]
    assert all(type(index) is int for index in indices)  # never the binding's tuple (0,)
    assert pynvml.NVML_P2P_CAPS_INDEX_READ == (0,)  # the reason for the above


def test_fake_refuses_the_tuple_read_index_like_ctypes() -> None:
    fake = make_fake_nvml(2)
    fake.nvmlInit()
    h0, h1 = fake.nvmlDeviceGetHandleByIndex(0), fake.nvmlDeviceGetHandleByIndex(1)
    with pytest.raises(ctypes.ArgumentError):
        fake.nvmlDeviceGetP2PStatus(h0, h1, pynvml.NVML_P2P_CAPS_INDEX_READ)


def test_p2p_and_topology_errors_are_none() -> None:
    errors = {
        "nvmlDeviceGetP2PStatus": pynvml.NVMLError_NotSupported,
        "nvmlDeviceGetTopologyCommonAncestor": pynvml.NVMLError_Unknown,
    }
    _, topology = open_topology(make_fake_nvml(2, errors=errors))
    (path,) = topology.paths
    assert (path.pcie_level, path.p2p_read, path.p2p_write) == (None, None, None)


def test_single_gpu_has_no_paths() -> None:
    fake = make_fake_nvml([FakeGpu(cpu_affinity=tuple(range(8)), numa_node=0)])
    _, topology = open_topology(fake)
    assert topology.paths == () and topology.links == ()
    assert topology.locality[0].cpu_affinity == "0-7"
    assert fake.calls["nvmlDeviceGetTopologyCommonAncestor"] == 0
    assert fake.calls["nvmlDeviceGetP2PStatus"] == 0


@pytest.mark.parametrize(
    ("words", "text"),
    [
        # CPUs 0-55 and 112-167 on 64-bit words: 0-55 in word 0, 112-127 in word 1 (bits 48-63),
        # 128-167 in word 2 (bits 0-39).
        ([(1 << 56) - 1, ((1 << 16) - 1) << 48, (1 << 40) - 1, 0], "0-55,112-167"),
        ([0b1110101], "0,2,4-6"),
        ([1 << 63, 1], "63-64"),
        ([0xFFFFFFFFFFFFFFFF], "0-63"),
        ([0, 0], None),
        ([], None),
    ],
)
def test_cpu_affinity_formatting(words: list[int], text: str | None) -> None:
    assert format_cpu_list(words) == text


def test_cpu_affinity_formatting_takes_a_ctypes_array() -> None:
    words = (ctypes.c_ulonglong * 2)(0b11, 1 << 1)
    assert format_cpu_list(words) == "0-1,65"
    assert format_cpu_list([0b11, 0b10], bits=2) == "0-1,3"


def test_locality_unsupported_and_numa_function_not_found_are_none() -> None:
    fake = make_fake_nvml(
        [FakeGpu(cpu_affinity=(4, 5, 6)), FakeGpu()], missing={"nvmlDeviceGetNumaNodeId"}
    )
    _, topology = open_topology(fake)
    first, second = topology.locality
    assert (first.cpu_affinity, first.numa_node) == ("4-6", None)
    assert (second.cpu_affinity, second.numa_node) == (None, None)
    words = fake.args_of("nvmlDeviceGetCpuAffinity")[0][1]
    assert words >= 4  # room for at least 256 CPUs


def test_negative_numa_node_is_none() -> None:
    _, topology = open_topology(make_fake_nvml([FakeGpu(numa_node=-1)]))
    assert topology.locality[0].numa_node is None


def test_numa_affinity_is_the_pci_devices_not_the_gpu_numa_id(monkeypatch, tmp_path) -> None:
    """A Grace Hopper-like GPU: NVML's GPU NUMA ID is the node of the GPU's own memory (2);
    the NUMA affinity ``nvidia-smi topo -m`` shows is the PCI device's node in sysfs (0)."""
    fake_pci_sysfs(monkeypatch, tmp_path, {"0000:18:00.0": {"numa_node": "0"}})
    fake = make_fake_nvml([FakeGpu(numa_node=2, cpu_affinity=tuple(range(72)))])
    _, topology = open_topology(fake)
    (place,) = topology.locality
    assert (place.numa_node, place.cpu_affinity) == (0, "0-71")
    assert fake.calls["nvmlDeviceGetNumaNodeId"] == 0


def test_cpu_affinity_falls_back_to_sysfs_local_cpulist(monkeypatch, tmp_path) -> None:
    devices = {
        "0000:18:00.0": {"numa_node": "1", "local_cpulist": "56-111,168-223"},
        "0000:19:00.0": {"numa_node": "-1", "local_cpulist": "0-223"},  # no NUMA: -1
        "0000:1a:00.0": {"numa_node": "0", "local_cpulist": "0-55"},
    }
    fake_pci_sysfs(monkeypatch, tmp_path, devices)
    gpus = [
        FakeGpu(cpu_affinity=None),  # NVML cannot say: sysfs can
        FakeGpu(errors={"nvmlDeviceGetCpuAffinity": pynvml.NVMLError_Unknown}),
        FakeGpu(cpu_affinity=(0, 1, 2, 3)),  # NVML answers: its answer stands
    ]
    _, topology = open_topology(make_fake_nvml(gpus))
    assert [(p.cpu_affinity, p.numa_node) for p in topology.locality] == [
        ("56-111,168-223", 1),
        ("0-223", None),
        ("0-3", 0),
    ]


def test_no_sysfs_means_unknown_locality() -> None:
    _, topology = open_topology(make_fake_nvml([FakeGpu(numa_node=0)]))
    assert (topology.locality[0].cpu_affinity, topology.locality[0].numa_node) == (None, None)


@pytest.mark.parametrize(
    ("content", "node"),
    [("0", 0), ("1\n", 1), ("-1", None), ("", None), ("x", None), (None, None)],
)
def test_pci_numa_node_reads_sysfs(tmp_path, content: str | None, node: int | None) -> None:
    from gputui.core.pci import numa_node

    device = tmp_path / "0000:c1:00.0"
    device.mkdir()
    if content is not None:
        (device / "numa_node").write_text(content)
    assert numa_node("00000000:C1:00.0", root=tmp_path) == node
    assert numa_node("0000:03:00.0", root=tmp_path) is None
    assert numa_node(None, root=tmp_path) is None


@pytest.mark.parametrize(
    ("raw", "version"),
    [
        (pynvml.NVML_NVLINK_VERSION_1_0, 1),
        (pynvml.NVML_NVLINK_VERSION_2_0, 2),
        (pynvml.NVML_NVLINK_VERSION_2_2, 2),
        (pynvml.NVML_NVLINK_VERSION_3_0, 3),
        (pynvml.NVML_NVLINK_VERSION_3_1, 3),
        (pynvml.NVML_NVLINK_VERSION_4_0, 4),
        (pynvml.NVML_NVLINK_VERSION_5_0, 5),
        (pynvml.NVML_NVLINK_VERSION_INVALID, None),
        (99, None),
    ],
)
def test_nvlink_version_enum_is_decoded_to_the_generation(raw: int, version: int | None) -> None:
    links = [FakeLink(version=raw), FakeLink(version=raw)]
    _, topology = open_topology(make_fake_nvml([FakeGpu(nvlinks=links)]))
    assert [link.version for link in topology.links] == [version, version]


def test_h100_nvlink_reads_as_nvlink_4_not_the_raw_enum() -> None:
    assert pynvml.NVML_NVLINK_VERSION_4_0 == 6  # what an H100 answers
    _, topology = open_topology(make_fake_nvml([FakeGpu(nvlinks=nvswitch_links(2))]))
    assert {link.version for link in topology.links} == {4}


def test_nvlink_speed_is_per_link_per_direction() -> None:
    """Field 90 is the common speed of one active link, one way, in MB/s (nvidia-smi prints
    26.562 GB/s per H100 link): 212.5 Gb/s per link, not the sum over the 18 links."""
    gpu = FakeGpu(nvlinks=nvswitch_links(18), nvlink_speed_mbps=26562)
    _, topology = open_topology(make_fake_nvml([gpu]))
    assert [link.speed_gbps for link in topology.links] == [pytest.approx(212.496)] * 18
    assert (topology.links[0].speed_gbps or 0) / 8 == pytest.approx(26.562)  # GB/s, one way


@pytest.mark.parametrize(
    "knobs",
    [
        {},  # a consumer / PCIe card: NotSupported on link 0
        {"unsupported": {"nvmlDeviceGetNvLinkState"}},
        {"all_unsupported": True},
    ],
)
def test_unsupported_link_queries_mean_no_links_and_empty_link_samples(knobs: dict) -> None:
    fake = make_fake_nvml([FakeGpu(**knobs), FakeGpu(**knobs)])
    backend, topology = open_topology(fake)
    assert topology.links == ()
    assert len(topology.paths) == 1
    assert fake.gpu_calls[(0, "nvmlDeviceGetNvLinkState")] == 1  # stopped at link 0
    for t in range(3):
        for sample in backend.read_gpus(float(t), slow=True):
            assert sample.error is None and not sample.lost
            assert sample.links == ()
    assert fake.calls["nvmlDeviceGetNvLinkState"] == 2  # nothing asked after open
    assert fake.calls["nvmlDeviceGetNvLinkErrorCounter"] == 0
    scopes = {scope for args in fake.args_of("nvmlDeviceGetFieldValues") for _, scope in args[1]}
    assert scopes <= {0, 0xFFFFFFFF}


def test_missing_nvlink_symbols_mean_no_links() -> None:
    backend, topology = open_topology(make_fake_nvml(1, absent={"nvmlDeviceGetNvLinkState"}))
    assert topology.links == ()
    assert backend.read_gpus(1.0, slow=True)[0].links == ()


def test_fast_reads_make_no_link_calls_and_leave_links_none() -> None:
    backend, fake = open_nvml([FakeGpu(nvlinks=nvswitch_links(4))])
    at_open = {name: fake.calls[name] for name in LINK_CALLS}
    for t in range(3):
        assert backend.read_gpus(float(t), slow=False)[0].links is None
    assert {name: fake.calls[name] for name in LINK_CALLS} == at_open
    for args in fake.args_of("nvmlDeviceGetFieldValues")[-3:]:
        assert {scope for _, scope in args[1]} == {0}


def test_slow_reads_give_per_link_rates_from_counter_deltas() -> None:
    gpu = FakeGpu(nvlinks=nvswitch_links(3))
    backend, fake = open_nvml([gpu])
    (first,) = backend.read_gpus(10.0, slow=True)
    assert first.links is not None and [s.link for s in first.links] == [0, 1, 2]
    assert all(s.up is True and s.tx_bytes_per_s is None for s in first.links)  # no baseline
    gpu.nvlinks[0].tx_kib += 2048
    gpu.nvlinks[0].rx_kib += 1024
    gpu.nvlinks[2].rx_kib += 4096
    backend.read_gpus(11.0, slow=False)  # fast reads do not move the baseline
    (second,) = backend.read_gpus(12.0, slow=True)
    links = second.links
    assert links is not None
    assert (links[0].tx_bytes_per_s, links[0].rx_bytes_per_s) == (1024 * 1024, 512 * 1024)
    assert (links[1].tx_bytes_per_s, links[1].rx_bytes_per_s) == (0.0, 0.0)
    assert links[2].rx_bytes_per_s == 2048 * 1024
    # One field-value call carries the per-link counters (scopeId = link id) with the rest.
    request = fake.args_of("nvmlDeviceGetFieldValues")[-1][1]
    for link in range(3):
        assert (138, link) in request and (139, link) in request
    assert (138, 0xFFFFFFFF) in request and (83, 0) in request
    assert fake.calls["nvmlDeviceGetFieldValues"] == 1 + 3  # speed field at open, one per read


def test_link_error_counters() -> None:
    link = FakeLink(replay_errors=5, recovery_errors=1, crc_flit_errors=3, crc_data_errors=2)
    backend, fake = open_nvml([FakeGpu(nvlinks=[link, FakeLink()])])
    (sample,) = backend.read_gpus(1.0, slow=True)
    assert sample.links is not None
    first, second = sample.links
    assert (first.replay_errors, first.recovery_errors, first.crc_errors) == (5, 1, 5)
    assert (second.replay_errors, second.recovery_errors, second.crc_errors) == (0, 0, 0)
    counters = {args[2] for args in fake.args_of("nvmlDeviceGetNvLinkErrorCounter")}
    assert counters == {
        pynvml.NVML_NVLINK_ERROR_DL_REPLAY,
        pynvml.NVML_NVLINK_ERROR_DL_RECOVERY,
        pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT,
        pynvml.NVML_NVLINK_ERROR_DL_CRC_DATA,
    }


def test_crc_data_unsupported_still_gives_crc_flit() -> None:
    link = FakeLink(crc_flit_errors=7, crc_data_errors=None)
    backend, _ = open_nvml([FakeGpu(nvlinks=[link])])
    (sample,) = backend.read_gpus(1.0, slow=True)
    assert sample.links is not None and sample.links[0].crc_errors == 7


def test_unsupported_link_calls_are_asked_once() -> None:
    gpu = FakeGpu(nvlinks=nvswitch_links(2), unsupported={"nvmlDeviceGetNvLinkErrorCounter"})
    gpu.nvlinks[1].tx_kib = None  # this link's throughput field answers NOT_SUPPORTED
    backend, fake = open_nvml([gpu])
    for t in range(4):
        (sample,) = backend.read_gpus(float(t), slow=True)
        assert sample.links is not None
        assert all(s.replay_errors is None and s.crc_errors is None for s in sample.links)
        assert sample.links[1].tx_bytes_per_s is None
    assert fake.calls["nvmlDeviceGetNvLinkErrorCounter"] == 2 * 4  # 2 links x 4 counters, once
    # Link state: calls at open (2 + the stop), then the batched per-link state field.
    assert fake.calls["nvmlDeviceGetNvLinkState"] == 3
    requests = [args[1] for args in fake.args_of("nvmlDeviceGetFieldValues")]
    assert (138, 1) in requests[1]
    assert all((138, 1) not in r and (139, 1) in r and (138, 0) in r for r in requests[2:])
    assert (138, 0xFFFFFFFF) in requests[-1]  # the all-links sum is kept apart


def test_link_going_down_reads_up_false_and_no_rates() -> None:
    gpu = FakeGpu(nvlinks=nvswitch_links(2))
    backend, _ = open_nvml([gpu])
    backend.read_gpus(1.0, slow=True)
    gpu.nvlinks[1].state = 0
    gpu.nvlinks[0].tx_kib += 1000
    gpu.nvlinks[1].tx_kib += 1000
    (sample,) = backend.read_gpus(2.0, slow=True)
    assert sample.links is not None
    up, down = sample.links
    assert (up.up, up.tx_bytes_per_s) == (True, 1000 * 1024)
    assert (down.up, down.tx_bytes_per_s, down.rx_bytes_per_s) == (False, None, None)
    assert down.replay_errors == 0  # counters still read
    assert sample.error is None
    gpu.nvlinks[1].state = 1  # back up: rates resume from the old baseline
    (again,) = backend.read_gpus(4.0, slow=True)
    assert again.links is not None and again.links[1].up is True
    assert again.links[1].tx_bytes_per_s == 1000 * 1024 / 3


def test_a_link_down_at_open_is_still_listed() -> None:
    links = nvswitch_links(2)
    links[0].state = 0
    links[0].remote_bus_id = None  # an inactive link has no remote end
    links[0].remote_type = None
    # On an NVSwitch board whose fabric is set up every link is wired: down, not unused.
    gpu = FakeGpu(nvlinks=links, fabric_state=pynvml.NVML_GPU_FABRIC_STATE_COMPLETED)
    backend, topology = open_topology(make_fake_nvml([gpu]))
    first, second = topology.links
    assert (first.link, first.remote_type, first.remote_pci_bus_id) == (0, None, None)
    assert second.remote_type == "switch"
    (sample,) = backend.read_gpus(1.0, slow=True)
    assert sample.links is not None and [s.up for s in sample.links] == [False, True]


def test_lost_gpu_has_no_link_samples() -> None:
    gpus = [FakeGpu(nvlinks=nvswitch_links(2)), FakeGpu(nvlinks=nvswitch_links(2))]
    backend, _ = open_nvml(gpus)
    gpus[0].lost = True
    first, second = backend.read_gpus(1.0, slow=True)
    assert first.lost and first.links is None
    assert second.links is not None and len(second.links) == 2


def test_gpu_lost_during_discovery_keeps_the_others() -> None:
    gpus = [FakeGpu(nvlinks=nvswitch_links(2)), FakeGpu(nvlinks=nvswitch_links(2)), FakeGpu()]
    gpus[1].errors["nvmlDeviceGetNvLinkVersion"] = NVMLError_GpuIsLost
    backend, topology = open_topology(make_fake_nvml(gpus))
    assert {link.gpu_index for link in topology.links} == {0}
    assert [(p.a, p.b) for p in topology.paths] == [(0, 2)]
    assert [place.gpu_index for place in topology.locality] == [0, 2]
    samples = backend.read_gpus(1.0, slow=True)
    assert [s.lost for s in samples] == [False, True, False]


def test_topology_discovery_binding_bug_leaves_topology_none() -> None:
    fake = make_fake_nvml(2, errors={"nvmlDeviceGetP2PStatus": RuntimeError("binding bug")})
    node = NvmlBackend(fake).open()
    assert node.topology is None
    assert len(node.gpus) == 2


def test_discovery_is_not_repeated_in_the_slow_tier() -> None:
    backend, fake = open_nvml([FakeGpu(nvlinks=nvswitch_links(18)) for _ in range(2)])
    at_open = {
        name: fake.calls[name]
        for name in (
            "nvmlDeviceGetNvLinkVersion",
            "nvmlDeviceGetNvLinkRemotePciInfo",
            "nvmlDeviceGetNvLinkRemoteDeviceType",
            "nvmlDeviceGetTopologyCommonAncestor",
            "nvmlDeviceGetP2PStatus",
            "nvmlDeviceGetCpuAffinity",
        )
    }
    assert at_open["nvmlDeviceGetNvLinkVersion"] == 36
    for t in range(3):
        backend.read_gpus(float(t), slow=True)
    assert {name: fake.calls[name] for name in at_open} == at_open


def test_link_0_counter_unsupported_keeps_the_all_links_sum() -> None:
    gpu = FakeGpu(nvlinks=nvswitch_links(2), nvlink_tx_kib=0)
    gpu.nvlinks[0].tx_kib = None  # scopeId 0 is link 0 here, not "the device"
    backend, fake = open_nvml([gpu])
    backend.read_gpus(1.0, slow=True)
    gpu.nvlink_tx_kib += 10
    gpu.nvlinks[1].tx_kib += 10
    (sample,) = backend.read_gpus(2.0, slow=True)
    assert sample.nvlink_tx_bytes_per_s == 10 * 1024
    assert sample.links is not None
    assert sample.links[0].tx_bytes_per_s is None
    assert sample.links[1].tx_bytes_per_s == 10 * 1024
    request = fake.args_of("nvmlDeviceGetFieldValues")[-1][1]
    assert (138, 0) not in request and (138, 0xFFFFFFFF) in request and (139, 0) in request


def test_gpu_lost_while_pairing_skips_the_path_without_blaming_either() -> None:
    fake = make_fake_nvml(3)
    fake.gpus[1].errors["nvmlDeviceGetTopologyCommonAncestor"] = NVMLError_GpuIsLost
    backend, topology = open_topology(fake)
    # GPU 1 answers "lost" whenever it is either end of the pair query.
    assert [(p.a, p.b) for p in topology.paths] == [(0, 2)]
    assert [s.lost for s in backend.read_gpus(1.0, slow=False)] == [False, False, False]


def test_per_link_error_counters_are_read_again_only_when_the_totals_move() -> None:
    gpu = FakeGpu(nvlinks=nvswitch_links(18))
    backend, fake = open_nvml([gpu])
    backend.read_gpus(1.0, slow=True)
    first = fake.calls["nvmlDeviceGetNvLinkErrorCounter"]
    assert first == 18 * 4  # once, to know each link's counts
    for t in range(2, 6):
        (sample,) = backend.read_gpus(float(t), slow=True)
    assert fake.calls["nvmlDeviceGetNvLinkErrorCounter"] == first  # totals unchanged: none
    gpu.nvlinks[5].replay_errors = 3
    (sample,) = backend.read_gpus(6.0, slow=True)
    assert fake.calls["nvmlDeviceGetNvLinkErrorCounter"] == 2 * first
    assert sample.links is not None and sample.links[5].replay_errors == 3


def test_topology_can_wait_for_the_first_reading() -> None:
    """The dashboard opens NVML without the slow wiring discovery; the sampler finds it before
    the first reading, and the snapshot's node carries it."""
    from gputui.engine.sampler import Sampler

    fake = make_fake_nvml([FakeGpu(nvlinks=nvswitch_links(4)), FakeGpu(nvlinks=nvswitch_links(4))])
    backend = NvmlBackend(fake)
    backend.defer_topology = True
    node = backend.open()
    assert node.topology is None and backend.topology_pending
    assert fake.calls["nvmlDeviceGetNvLinkRemotePciInfo"] == 0
    sampler = Sampler(backend, node=node)
    snapshot = sampler.poll()
    assert not backend.topology_pending
    assert snapshot.node.topology is not None and len(snapshot.node.topology.links) == 8
    assert snapshot.gpus[0].links is not None and len(snapshot.gpus[0].links) == 4
    assert sampler.poll().node is snapshot.node  # found once
