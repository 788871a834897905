"""How a GPU is attached, on real hardware: NVLinks that were never wired (a one-GPU VM carved
out of an HGX board), the NVSwitch fabric, Grace Hopper's NVLink-C2C host link, virtualisation."""

from __future__ import annotations

import json
from pathlib import Path

import pynvml
import pytest
from tests.fakes.checks import check_json, findings_of
from tests.fakes.fake_pynvml import (
    FakeGpu,
    grace_hopper,
    make_fake_nvml,
    nvswitch_links,
    unwired_links,
)

from gputui.backends.nvml import NvmlBackend
from gputui.backends.nvml.attachment import BUS_PCIE, VIRTUALIZATION_MODES
from gputui.core.model import GpuInfo, GpuSample
from gputui.core.topology import link_rows, link_summary
from gputui.views.report import render_snapshot

REAL = Path(__file__).parent / "data" / "real" / "h100-sxm5-580.159.04"
COMPLETED = pynvml.NVML_GPU_FABRIC_STATE_COMPLETED


def opened(gpus: list[FakeGpu], **knobs: object) -> tuple[NvmlBackend, GpuInfo]:
    backend = NvmlBackend(make_fake_nvml(gpus, **knobs))
    node = backend.open()
    return backend, node.gpus[0]


def slow_reading(backend: NvmlBackend, at: float = 1.0) -> GpuSample:
    return backend.read_gpus(at, slow=True)[0]


# -- NVLinks with nothing at the far end -----------------------------------------------------------


def test_a_one_gpu_vm_from_an_hgx_board_is_healthy_with_nvlink_not_in_use() -> None:
    code, doc = check_json(make_fake_nvml([FakeGpu(nvlinks=unwired_links(18))]))
    assert findings_of(doc, "nvlink_down") == []  # was 18 nvlink_down FAILs
    (unused,) = findings_of(doc, "nvlink_unused")
    assert unused["severity"] == "info"
    assert "NVLink not in use: 18 links inactive" in unused["message"]
    assert (doc["verdict"], code) == ("healthy", 0)


def test_unwired_links_read_as_not_in_use_not_down() -> None:
    backend, _ = opened([FakeGpu(nvlinks=unwired_links(4))])
    try:
        sample = slow_reading(backend)
        assert sample.links is not None
        assert [(r.up, r.unused) for r in sample.links] == [(None, True)] * 4
    finally:
        backend.close()


def test_a_link_that_was_up_and_went_inactive_is_down() -> None:
    gpu = FakeGpu(nvlinks=unwired_links(2))
    gpu.nvlinks[1].state = 1
    backend, _ = opened([gpu])
    try:
        assert [r.up for r in slow_reading(backend, 1.0).links or ()] == [None, True]
        gpu.nvlinks[1].state = 0  # it was up while gputui watched: a real fault now
        assert [r.up for r in slow_reading(backend, 2.0).links or ()] == [None, False]
    finally:
        backend.close()


def test_an_inactive_link_with_a_remote_end_is_down() -> None:
    links = nvswitch_links(2)
    links[0].state = 0  # trained down, but NVML still names the switch at its far end
    code, doc = check_json(make_fake_nvml([FakeGpu(nvlinks=links)]))
    (down,) = findings_of(doc, "nvlink_down")
    assert down["severity"] == "fail" and "NVLink 0 is down" in down["message"]
    assert code == 2


def test_on_a_set_up_nvswitch_fabric_an_untrained_link_is_down() -> None:
    links = nvswitch_links(18)
    links[5].state = 0
    links[5].remote_bus_id = None
    links[5].remote_type = None
    _, doc = check_json(make_fake_nvml([FakeGpu(nvlinks=links, fabric_state=COMPLETED)]))
    assert [f["message"] for f in findings_of(doc, "nvlink_down")] == [
        "GPU 0 NVLink 5 is down (17/18 up)"
    ]


def test_links_are_not_judged_down_while_the_fabric_is_still_setting_up() -> None:
    links = nvswitch_links(4)
    for link in links:
        link.state = 0
    gpu = FakeGpu(nvlinks=links, fabric_state=pynvml.NVML_GPU_FABRIC_STATE_IN_PROGRESS)
    code, doc = check_json(make_fake_nvml([gpu]))
    assert findings_of(doc, "nvlink_down") == []
    (fabric,) = findings_of(doc, "nvlink_fabric")
    assert fabric["severity"] == "warn" and "in progress" in fabric["message"]
    assert code == 1


def test_a_fabric_set_up_that_failed_fails_the_gpu() -> None:
    gpu = FakeGpu(
        nvlinks=nvswitch_links(18),
        fabric_state=COMPLETED,
        fabric_status=pynvml.NVML_ERROR_INSUFFICIENT_RESOURCES,
    )
    code, doc = check_json(make_fake_nvml([gpu]))
    (fabric,) = findings_of(doc, "nvlink_fabric")
    assert fabric["severity"] == "fail"
    assert "Insufficient Resources" in fabric["message"]
    assert code == 2


def test_the_topology_says_not_in_use() -> None:
    backend = NvmlBackend(make_fake_nvml([FakeGpu(nvlinks=unwired_links(3))]))
    node = backend.open()
    try:
        rows = link_rows(node, slow_reading(backend))
        assert link_summary(rows) == "3 links not in use"
        assert [row.unused for row in rows] == [True] * 3
    finally:
        backend.close()


# -- the NVSwitch fabric -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "status", "expected"),
    [
        (None, 0, (None, None)),
        (pynvml.NVML_GPU_FABRIC_STATE_NOT_SUPPORTED, 0, ("not_supported", None)),
        (pynvml.NVML_GPU_FABRIC_STATE_IN_PROGRESS, 0, ("in_progress", None)),
        (COMPLETED, 0, ("completed", None)),
        (COMPLETED, pynvml.NVML_ERROR_NOT_READY, ("completed", "Not Ready")),
    ],
)
def test_fabric_state_is_read_with_the_versioned_struct(
    state: int | None, status: int, expected: tuple[str | None, str | None]
) -> None:
    backend, info = opened([FakeGpu(fabric_state=state, fabric_status=status)])
    backend.close()
    assert (info.fabric_state, info.fabric_error) == expected


def test_fabric_falls_back_to_the_older_call() -> None:
    fake = make_fake_nvml(
        [FakeGpu(fabric_state=COMPLETED)], missing={"nvmlDeviceGetGpuFabricInfoV"}
    )
    backend = NvmlBackend(fake)
    info = backend.open().gpus[0]
    backend.close()
    assert info.fabric_state == "completed"
    assert fake.calls["nvmlDeviceGetGpuFabricInfo"] == 1


# -- Grace Hopper: the host link is NVLink-C2C --------------------------------------------------


def test_grace_hopper_host_link_is_c2c_with_its_bandwidth() -> None:
    backend, info = opened([grace_hopper()])
    try:
        assert (info.host_link, info.host_link_bandwidth_gbs) == ("nvlink-c2c", 450.0)
        assert (info.pcie_max_gen, info.pcie_max_width, info.pcie_gpu_max_gen) == (None,) * 3
        sample = slow_reading(backend)
        assert (sample.pcie_gen, sample.pcie_width) == (None, None)
    finally:
        backend.close()


def test_grace_hopper_under_load_has_no_pcie_warning() -> None:
    # Even where the placeholder Gen1 x1 sits beside a Gen5 x16 maximum.
    gpu = grace_hopper(util_gpu=100, pcie_max_gen=5, gpu_max_pcie_gen=5, pcie_max_width=16)
    code, doc = check_json(make_fake_nvml([gpu]))
    assert findings_of(doc, "pcie_link") == []
    assert code == 0


def test_grace_hopper_snapshot_shows_the_c2c_link() -> None:
    from tests.fakes.checks import fake_driver

    from gputui.engine.session import open_session

    with fake_driver(make_fake_nvml([grace_hopper()])):
        session = open_session("nvml", interval=1.0, slow_interval=1.0, judge="none")
        with session:
            snapshot = session.sampler.poll(deadline=5.0)
            text = render_snapshot(snapshot)
    assert "C2C 450GB/s" in text
    assert "1×1" not in text


def test_a_pcie_gpu_reports_pcie() -> None:
    backend, info = opened([FakeGpu()])
    backend.close()
    assert (info.host_link, info.host_link_bandwidth_gbs) == ("pcie", None)


# -- virtualisation --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "expected"),
    [(0, "none"), (1, "passthrough"), (2, "vgpu"), (3, "host_vgpu"), (None, None)],
)
def test_virtualization_mode(mode: int | None, expected: str | None) -> None:
    backend, info = opened([FakeGpu(virtualization_mode=mode)])
    backend.close()
    assert info.virtualization_mode == expected


def test_the_real_h100_vm_reads_as_passthrough_over_pcie() -> None:
    calls = json.loads((REAL / "nvml_raw_idle.json").read_text())["devices"][0]["calls"]
    virt, bus = calls["virt_mode"]["value"], calls["bus_type"]["value"]
    assert (VIRTUALIZATION_MODES[virt], bus) == ("passthrough", BUS_PCIE)
    backend, info = opened([FakeGpu(virtualization_mode=virt, bus_type=bus)])
    backend.close()
    assert (info.virtualization_mode, info.host_link) == ("passthrough", "pcie")


# -- GPUs this user may not open ------------------------------------------------------------------


def four_gpus_two_denied() -> list[FakeGpu]:
    return [FakeGpu(no_permission=i in (1, 2)) for i in range(4)]


def test_a_gpu_the_user_may_not_open_is_not_lost() -> None:
    code, doc = check_json(make_fake_nvml(four_gpus_two_denied()))
    assert findings_of(doc, "gpu_lost") == []  # was "GPU 1 is lost (fell off the bus)"
    assert doc["checked_gpus"] == [0, 3]
    assert any("GPUs 1, 2: not accessible to this user" in n for n in doc["not_checked"])
    assert (doc["verdict"], code) == ("healthy", 0)


def test_inaccessible_gpus_do_not_count_as_present_or_missing() -> None:
    fake = make_fake_nvml(four_gpus_two_denied())
    code, doc = check_json(fake, expect_gpus=2)
    assert findings_of(doc, "gpu_count") == [] and code == 0
    code, doc = check_json(make_fake_nvml(four_gpus_two_denied()), expect_gpus=4)
    (count,) = findings_of(doc, "gpu_count")
    assert "2 GPU(s) visible, 4 expected" in count["message"] and code == 2


def test_inaccessible_gpus_are_named_in_the_snapshot() -> None:
    backend = NvmlBackend(make_fake_nvml(four_gpus_two_denied()))
    node = backend.open()
    try:
        assert [g.index for g in node.gpus] == [0, 3]
        assert node.inaccessible_gpus == (1, 2)
        assert [s.index for s in backend.read_gpus(1.0, slow=True)] == [0, 3]
    finally:
        backend.close()


def test_no_accessible_gpu_at_all_says_so() -> None:
    from gputui.backends.base import BackendUnavailable

    backend = NvmlBackend(make_fake_nvml([FakeGpu(no_permission=True) for _ in range(2)]))
    with pytest.raises(BackendUnavailable, match="no permission to open any of the 2"):
        backend.open()
