"""Which GPU a probe worker opens: the children see only the probed GPUs (by UUID), every
worker's hello is checked against its GPU, and P2P destinations map back to NVML indices."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest
from tests.fakes.fake_probe_worker import FAKE

from gputui.core.codec import encode
from gputui.core.model import GpuInfo, GpuSample, MigDeviceInfo, NodeInfo, Snapshot
from gputui.probe import devices as D
from gputui.probe import runner as R
from gputui.probe.output import probe_output, spec_summary
from gputui.probe.protocol import Hello
from gputui.probe.runs import Target


def _info(i: int, *, vendor: str = "nvidia", uuid: str | None = None, **kw: object) -> GpuInfo:
    bus = f"0000:{0x18 + 0x10 * i:02X}:00.0"
    return GpuInfo(
        index=i,
        name="NVIDIA H100 80GB HBM3" if vendor == "nvidia" else "AMD Instinct MI300X",
        uuid=f"GPU-0000000{i}-aaaa-bbbb-cccc-dddddddddddd" if uuid is None else uuid,
        vendor=vendor,  # type: ignore[arg-type]
        pci_bus_id=bus,
        sm_count=132,
        memory_total_bytes=80 << 30,
        sm_clock_max_mhz=1980,
        power_default_limit_w=700,
        pcie_max_gen=5,
        pcie_max_width=16,
        **kw,  # type: ignore[arg-type]
    )


NODE3 = NodeInfo("n", "nvml", tuple(_info(i) for i in range(3)))


@pytest.fixture
def fake(tmp_path: Path) -> list[str]:
    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE)
    return [sys.executable, str(script)]


def _hello(uuid: str | None = None, pci: str | None = None, kind: str = "cuda") -> Hello:
    return Hello("2", "x", kind, "NVIDIA H100 80GB HBM3", 0, 1, 1, [], uuid, pci)


# -- visibility --------------------------------------------------------------------------------


def test_nvidia_children_see_exactly_the_probed_gpus_by_uuid() -> None:
    plan = D.plan_devices(NODE3, [0, 2])
    assert plan.pinned
    assert plan.visible == {"CUDA_VISIBLE_DEVICES": f"{NODE3.gpus[0].uuid},{NODE3.gpus[2].uuid}"}
    assert [(t.gpu, t.device, t.uuid) for t in plan.targets] == [
        (0, "cuda:0", NODE3.gpus[0].uuid),
        (2, "cuda:1", NODE3.gpus[2].uuid),  # the N-th UUID listed, whatever CUDA's own order
    ]
    env = R.child_env({"CUDA_VISIBLE_DEVICES": "0", "PATH": "/bin"}, plan.visible)
    assert env["CUDA_VISIBLE_DEVICES"] == plan.visible["CUDA_VISIBLE_DEVICES"]


def test_a_mig_enabled_gpu_is_named_by_its_mig_slice() -> None:
    mig = MigDeviceInfo(0, 1, 0, "MIG-11111111-2222-3333-4444-555555555555")
    node = NodeInfo("n", "nvml", (_info(0, mig_enabled=True, mig_devices=(mig,)),))
    (target,) = D.plan_devices(node, [0]).targets
    assert target.uuid == mig.uuid
    assert D.identity_check(target, _hello("11111111-2222-3333-4444-555555555555"))[0] == D.MATCH


def test_amd_without_runtime_uuids_goes_by_pci_address() -> None:
    """AMD-SMI's UUID is not what ROCR_VISIBLE_DEVICES takes: no pinning by UUID; the worker
    is told the PCI address to open (and those of the other probed GPUs, for P2P) and
    ROCR/HIP/CUDA_VISIBLE_DEVICES (which renumber; Slurm sets the first) are removed."""
    node = NodeInfo("n", "amdsmi", tuple(_info(i, vendor="amd", uuid=f"{i}e" * 8) for i in (0, 1)))
    plan = D.plan_devices(node, [1])
    assert not plan.pinned
    assert plan.visible == dict.fromkeys(D.VISIBILITY_VARS)
    env = R.child_env({"HIP_VISIBLE_DEVICES": "3", "ROCR_VISIBLE_DEVICES": "0,1"}, plan.visible)
    assert not set(D.VISIBILITY_VARS) & set(env)
    assert env["HIPBLASLT_ALLOW_TF32"] == "1"  # else torch on ROCm times FP32 as "TF32"
    both = D.plan_devices(node, [0, 1])
    runner = R.ProbeRunner(list(both.targets), tests=["p2p"], plan=both, command=["x"])
    argv = runner._argv(both.targets[1], ["p2p"])
    assert argv[argv.index("--pci-bus-id") + 1] == node.gpus[1].pci_bus_id
    assert argv[argv.index("--p2p-peers") + 1] == node.gpus[0].pci_bus_id
    # With runtime-style UUIDs the ROCm children are pinned like NVIDIA's.
    rocr = NodeInfo(
        "n", "amdsmi", tuple(_info(i, vendor="amd", uuid=f"GPU-{i:016x}") for i in (0, 1))
    )
    plan = D.plan_devices(rocr, [1, 0])
    assert (
        plan.pinned
        and plan.visible["ROCR_VISIBLE_DEVICES"] == "GPU-0000000000000001,GPU-0000000000000000"
    )
    assert plan.visible["HIP_VISIBLE_DEVICES"] is None


# -- the hello check ---------------------------------------------------------------------------


def test_identity_check_by_uuid_and_pci() -> None:
    target = Target(2, "cuda:1", "GPU 2", NODE3.gpus[2].uuid, NODE3.gpus[2].pci_bus_id)
    same = NODE3.gpus[2].uuid.removeprefix("GPU-").upper()
    assert D.identity_check(target, _hello(same))[0] == D.MATCH
    status, why = D.identity_check(target, _hello(NODE3.gpus[1].uuid.removeprefix("GPU-")))
    assert status == D.MISMATCH and "GPU 2" in why and "not used" in why
    # The PCI address says it too (any spelling of the same device).
    assert D.identity_check(target, _hello(pci="0000:38:00.0"))[0] == D.MATCH
    assert D.identity_check(target, _hello(pci="0000:28:00.0"))[0] == D.MISMATCH
    # ROCm: the runtime's UUID is not AMD-SMI's; only the address is compared.
    assert D.identity_check(target, _hello("whatever", "0000:38:00.0", "rocm"))[0] == D.MATCH
    assert D.identity_check(target, _hello("whatever", None, "rocm"))[0] == D.UNKNOWN
    assert D.identity_check(target, _hello())[0] == D.UNKNOWN
    # An old-style MIG name cannot be compared with what a runtime prints.
    old_mig = Target(0, "cuda:0", "GPU 0", "MIG-GPU-abc/1/0")
    assert D.identity_check(old_mig, _hello("abc"))[0] == D.UNKNOWN


def test_shifted_numbering_is_caught_by_the_hello(fake, monkeypatch) -> None:
    """GPU 1 lost: the children see GPU 0 and GPU 2 only, GPU 2 as cuda:1. A worker that reports
    another UUID (the numbering shifted under it) is stopped and nothing it measured is used."""
    lost = GpuSample(1, 0.0, lost=True, error="GPU has fallen off the bus")
    snapshot = Snapshot(0.0, NODE3, (GpuSample(0, 0.0), lost, GpuSample(2, 0.0)), ())
    report = R.probe_node(node=NODE3, snapshot=snapshot, command=fake, tests=["matmul_bf16", "h2d"])
    assert report.refused and "GPU 1 is lost" in report.refused[0]
    assert {j.gpu for j in report.judged} == {0, 2} and not report.errors
    assert [report.runs[g].target.device for g in (0, 2)] == ["cuda:0", "cuda:1"]
    assert (
        report.runs[2].hello is not None
        and report.runs[2].hello.uuid == "00000002-aaaa-bbbb-cccc-dddddddddddd"
    )

    monkeypatch.setenv("FAKE_MODE", "wrong_gpu")  # the worker for GPU 2 opens someone else
    report = R.probe_node(node=NODE3, snapshot=snapshot, command=fake, tests=["matmul_bf16", "h2d"])
    assert {j.gpu for j in report.judged} == {0}  # GPU 2's results dropped
    (err,) = report.errors
    assert "GPU 2" in err and "opened another GPU" in err and "someone-else" in err
    assert report.runs[2].error_kind == "identity" and not report.runs[2].measurements
    assert len(report.runs[2].returncodes) == 1  # its PCIe phase was not started again
    assert report.exit_code == 2


def test_children_get_the_uuid_list_and_no_guessing(fake, monkeypatch, tmp_path) -> None:
    log = tmp_path / "argv.jsonl"
    monkeypatch.setenv("FAKE_ARGV", str(log))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")  # the caller's setting never leaks through
    snapshot = Snapshot(0.0, NODE3, tuple(GpuSample(i, 0.0) for i in range(3)), ())
    R.probe_node(node=NODE3, snapshot=snapshot, gpus=[1, 2], command=fake, tests=["matmul_bf16"])
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    want = f"{NODE3.gpus[1].uuid},{NODE3.gpus[2].uuid}"
    assert [s["visible"] for s in seen] == [want, want]
    # The PCI address still goes along: the worker binds to the GPU's local CPUs with it.
    buses = {s["argv"][s["argv"].index("--pci-bus-id") + 1] for s in seen}
    assert buses == {NODE3.gpus[1].pci_bus_id, NODE3.gpus[2].pci_bus_id}


def test_an_unverifiable_worker_is_noted(fake) -> None:
    """No UUID list (unknown UUIDs): results are used, with a note that says so."""
    node = NodeInfo("n", "nvml", (_info(0, uuid=""),))
    report = R.probe_node(node=node, snapshot=None, command=fake, tests=["matmul_bf16"])
    assert report.judged and not report.errors
    assert any("could not check which GPU" in n for n in report.notes)
    assert encode(probe_output(report))["gpus"]["0"]["notes"] == report.notes


# -- P2P destinations --------------------------------------------------------------------------


def test_peer_index_by_uuid_pci_or_pinned_place() -> None:
    plan = D.plan_devices(NODE3, [2, 0])
    uid = NODE3.gpus[0].uuid.removeprefix("GPU-")
    assert D.peer_index({"dst": 1, "dst_uuid": uid}, NODE3, plan) == 0
    assert D.peer_index({"dst": 5, "dst_pci_bus_id": "0000:28:00.0"}, NODE3, plan) == 1
    assert D.peer_index({"dst": 1}, NODE3, plan) == 0  # the 2nd UUID listed is GPU 0
    assert D.peer_index({"dst": 9}, NODE3, plan) is None
    unpinned = D.DevicePlan(plan.targets, pinned=False)
    assert D.peer_index({"dst": 1}, NODE3, unpinned) is None  # no guessing from a number


def test_p2p_results_name_their_destination_gpu(fake) -> None:
    snapshot = Snapshot(0.0, NODE3, tuple(GpuSample(i, 0.0) for i in range(3)), ())
    report = R.probe_node(node=NODE3, snapshot=snapshot, gpus=[0, 2], command=fake, tests=["p2p"])
    assert sorted((j.gpu, j.peer) for j in report.judged) == [(0, 2), (2, 0)]


# -- MIG slices ----------------------------------------------------------------------------------


def _mig_node() -> NodeInfo:
    """The simulated DGX H100 in MIG mode: GPUs 0-3 in 1g.10gb slices (16 SMs, 9,984 MiB),
    GPUs 4-6 in 3g.40gb (60 SMs), GPU 7 whole."""
    from gputui.backends.sim import SimBackend

    return SimBackend("mig", seed=0, start_time=1_700_000_000.0).open()


def test_each_mig_slice_worker_sees_its_slice_alone() -> None:
    """CUDA enumerates one MIG device per process: two MIG UUIDs in one CUDA_VISIBLE_DEVICES
    leave cuda:1 an invalid ordinal. Each slice's worker gets its own list, and opens cuda:0."""
    node = _mig_node()
    plan = D.plan_devices(node, [0, 4, 7])
    by_gpu = {t.gpu: t for t in plan.targets}
    slices = {g: node.gpus[g].mig_devices[0].uuid for g in (0, 4)}
    for gpu, uuid in slices.items():
        assert by_gpu[gpu].device == "cuda:0" and by_gpu[gpu].uuid == uuid
        assert plan.visible_for(by_gpu[gpu]) == {"CUDA_VISIBLE_DEVICES": uuid}
    assert by_gpu[7].device == "cuda:0" and by_gpu[7].uuid == node.gpus[7].uuid
    assert plan.visible_for(by_gpu[7]) == {"CUDA_VISIBLE_DEVICES": node.gpus[7].uuid}
    assert plan.pinned and [t.gpu for t in plan.shared] == [7]
    # No slice is a P2P destination by its place: only whole GPUs share the numbering.
    assert D.peer_index({"dst": 0}, node, plan) == 7


def test_mig_slices_probe_side_by_side(fake, monkeypatch, tmp_path) -> None:
    log = tmp_path / "argv.jsonl"
    monkeypatch.setenv("FAKE_ARGV", str(log))
    node = _mig_node()
    report = R.probe_node(node=node, snapshot=None, gpus=[0, 1, 4], command=fake,
                          tests=["matmul_bf16"])  # fmt: skip
    assert not report.errors and sorted(j.gpu for j in report.judged) == [0, 1, 4]
    seen = sorted(json.loads(line)["visible"] for line in log.read_text().splitlines())
    assert seen == sorted(node.gpus[g].mig_devices[0].uuid for g in (0, 1, 4))


def test_a_mig_slice_is_judged_against_its_share_of_the_gpu() -> None:
    """A 1g.10gb slice has 16 of the H100's 132 SMs and 9,984 of its 81,559 MiB: its peaks are
    that share of the whole GPU's (the judgement says so), never the whole GPU's."""
    from gputui.probe.protocol import Result
    from gputui.probe.report import judge_result

    node = _mig_node()
    bf16 = judge_result(0, "GPU 0", Result("matmul_bf16", 100.0, "TFLOPS", "m", {}), node)
    assert bf16.spec == pytest.approx(989.5 * 16 / 132) and bf16.verdict == "OK"
    assert "x 16/132 SMs (the MIG slice 1g.10gb the probe ran on)" in bf16.judgement
    assert bf16.expected_assumed is True and "not on a MIG slice" in bf16.judgement
    copy = judge_result(0, "GPU 0", Result("memory_copy", 380.0, "GB/s", "m", {}), node)
    assert copy.spec == pytest.approx(3350 * 9984 / 81559)
    assert "x 9,984/81,559 MiB memory share" in copy.judgement and copy.verdict == "OK"
    big = judge_result(4, "GPU 4", Result("matmul_bf16", 100.0, "TFLOPS", "m", {}), node)
    assert big.spec == pytest.approx(989.5 * 60 / 132) and big.verdict == "LOW"
    whole = judge_result(7, "GPU 7", Result("matmul_bf16", 100.0, "TFLOPS", "m", {}), node)
    assert whole.spec == pytest.approx(989.5) and "MIG" not in whole.judgement
    # A slice whose size is not known is not judged rather than judged as the whole GPU.
    info = node.gpus[0]
    unsized = dataclasses.replace(info.mig_devices[0], sm_count=None, memory_total_bytes=None)
    bare = NodeInfo("n", "nvml", (dataclasses.replace(info, mig_devices=(unsized,)),))
    unknown = judge_result(0, "GPU 0", Result("matmul_bf16", 100.0, "TFLOPS", "m", {}), bare)
    assert unknown.spec is None and unknown.verdict == "n/a"
    assert "SM count of the MIG slice" in unknown.judgement
    spec = encode(spec_summary(node.gpus[0]))
    assert spec["mig_uuid"] == node.gpus[0].mig_devices[0].uuid
    assert "16/132 SMs" in spec["mig_compute_share"]


# -- AMD compute partitions ----------------------------------------------------------------------


def test_a_gpu_split_into_compute_partitions_is_refused(fake) -> None:
    """MI300X partitions (CPX ...) differ only by PCI function (ROCm/rocm_smi_lib#208) and the
    runtime reports no function: which one a worker opened cannot be checked, so none is
    probed, forced or not; an SPX GPU is."""
    gpus = (
        _info(0, vendor="amd", uuid="aa" * 8, compute_partition="CPX"),
        _info(1, vendor="amd", uuid="bb" * 8, compute_partition="SPX"),
    )
    node = NodeInfo("n", "amdsmi", gpus)
    snapshot = Snapshot(0.0, node, (GpuSample(0, 0.0), GpuSample(1, 0.0)), ())
    for snap in (snapshot, None):
        report = R.probe_node(node=node, snapshot=snap, command=fake, force=True,
                              tests=["matmul_bf16"])  # fmt: skip
        (refused,) = report.refused
        assert "GPU 0" in refused and "CPX" in refused and "PCI function" in refused
        assert "SPX" in refused and list(report.runs) == [1] and report.exit_code == 2
    assert R.unusable_label(snapshot, 0) == "CPX partition: cannot be checked"
    assert R.unusable_label(snapshot, 1) is None


def test_identity_check_compares_the_pci_function() -> None:
    """Partitions of one GPU sit at 0000:05:00.0, .1, ...: the function is part of the check.
    The runtime reports no function, so an address without one proves only function 0."""
    part1 = Target(1, "cuda:1", "GPU 1", None, "0000:05:00.1")
    status, why = D.identity_check(part1, _hello(pci="0000:05:00.0", kind="rocm"))
    assert status == D.MISMATCH and "not 0000:05:00.1" in why
    status, why = D.identity_check(part1, _hello(pci="0000:05:00", kind="rocm"))
    assert status == D.MISMATCH and "cannot tell which function" in why
    assert D.identity_check(part1, _hello(pci="0000:05:00.1", kind="rocm"))[0] == D.MATCH
    whole = Target(0, "cuda:0", "GPU 0", None, "0000:05:00.0")
    assert D.identity_check(whole, _hello(pci="0000:05:00", kind="rocm"))[0] == D.MATCH
