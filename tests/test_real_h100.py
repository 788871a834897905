"""The first real GPU (tests/data/real/h100-sxm5-580.159.04/: an H100 SXM5 in a passthrough VM,
driver 580.159.04): gputui's own output decodes and agrees with nvidia-smi, the fake driver fed
the real driver's answers gives what gputui gave on the machine, the recording replays, and the
exporter's page parses."""

from __future__ import annotations

import dataclasses
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.fake_pynvml import FakeGpu, make_fake_nvml

from gputui.backends.nvml import NvmlBackend
from gputui.commands.check import CheckOptions, run_replay_check
from gputui.core.codec import encode, snapshot_from_dict
from gputui.core.model import Snapshot
from gputui.engine.session import BackendSpec
from gputui.health import HealthConfig, HealthMonitor

REAL = Path(__file__).parent / "data" / "real" / "h100-sxm5-580.159.04"
MIB = 1 << 20


def snapshot(name: str) -> Snapshot:
    return snapshot_from_dict(json.loads((REAL / f"{name}.json").read_text()))


def smi(name: str) -> ET.Element:
    gpu = ET.parse(REAL / name).getroot().find("gpu")
    assert gpu is not None
    return gpu


def number(gpu: ET.Element, path: str) -> float:
    text = gpu.findtext(path)
    assert text is not None, path
    return float(text.split()[0].rstrip("x"))


@pytest.mark.parametrize(
    ("snap", "xml"),
    [("snap_idle", "smi_q_idle.xml"), ("snap_procs", "smi_q_procs.xml")],
)
def test_gputui_snapshots_decode_and_agree_with_nvidia_smi(snap: str, xml: str) -> None:
    shot, gpu = snapshot(snap), smi(xml)
    info, sample = shot.node.gpus[0], shot.gpus[0]
    assert info.name == gpu.findtext("product_name")
    assert info.uuid == gpu.findtext("uuid")
    assert info.pci_bus_id == gpu.findtext("pci/pci_bus_id")
    assert info.memory_total_bytes is not None
    # Both totals count what the driver reserves (used + reserved + free = total).
    reserved = number(gpu, "fb_memory_usage/reserved")
    assert info.memory_total_bytes // MIB == number(gpu, "fb_memory_usage/total")
    assert (sample.memory_reserved_bytes or 0) // MIB == reserved
    assert (sample.memory_used_bytes or 0) // MIB == number(gpu, "fb_memory_usage/used")
    assert info.power_default_limit_w == number(gpu, "gpu_power_readings/default_power_limit")
    assert sample.power_limit_w == number(gpu, "gpu_power_readings/current_power_limit")
    assert info.sm_clock_max_mhz == number(gpu, "max_clocks/sm_clock")
    assert info.memory_clock_max_mhz == number(gpu, "max_clocks/mem_clock")
    assert info.pcie_max_gen == number(gpu, "pci/pci_gpu_link_info/pcie_gen/max_link_gen")
    assert sample.pcie_width == number(gpu, "pci/pci_gpu_link_info/link_widths/current_link_width")
    assert info.persistence_mode is (gpu.findtext("persistence_mode") == "Enabled")
    assert sample.temperature_gpu_c == pytest.approx(number(gpu, "temperature/gpu_temp"), abs=2)
    listed = {
        int(p.findtext("pid") or 0): number(p, "used_memory")
        for p in gpu.findall("processes/process_info")
    }
    assert {p.pid: (p.gpu_memory_bytes or 0) // MIB for p in shot.processes} == listed


@pytest.mark.parametrize("name", ["snap_idle", "snap_procs", "snap_load", "nonroot_snap"])
def test_todays_rules_find_nothing_wrong_in_the_real_readings(name: str) -> None:
    """Idle, with processes, under a BF16 load at the power cap, and as nobody: today's rules
    judge each real reading again (the recorded findings set aside) and warn of nothing."""
    shot = dataclasses.replace(snapshot(name), findings=())
    monitor = HealthMonitor(HealthConfig(), env={})
    judged = monitor.update(shot)
    assert [f.message for f in judged if f.severity in ("warn", "fail")] == []


def calls() -> dict[str, Any]:
    dump = json.loads((REAL / "nvml_raw_idle.json").read_text())
    return dict(dump["devices"][0]["calls"])


def answer(name: str) -> Any:
    entry = calls()[name]
    return entry.get("value")


def fake_of_the_real_h100() -> FakeGpu:
    """A FakeGpu answering what the real driver answered, call by call (nvml_raw_idle.json)."""
    mem = answer("mem_v2")
    thresholds = {i: answer(f"temp_threshold_{i}") for i in range(4)}
    return FakeGpu(
        name=answer("name"),
        uuid=answer("uuid"),
        pci_bus_id=answer("pci")["busId"],
        architecture=answer("arch"),
        cuda_compute_capability=tuple(answer("cc")),
        sm_count=None,  # nvmlDeviceGetAttributes: NotSupported on a whole GPU
        num_gpu_cores=answer("cores"),
        memory_total=mem["total"],
        memory_used=mem["used"],
        memory_reserved=mem["reserved"],
        util_gpu=answer("util")["gpu"],
        util_memory=answer("util")["memory"],
        power_mw=answer("power_usage"),
        enforced_power_limit_mw=answer("power_enforced"),
        power_default_limit_mw=answer("power_default"),
        power_min_limit_mw=answer("power_constraints")[0],
        power_max_limit_mw=answer("power_constraints")[1],
        energy_mj=answer("energy"),
        temperature=answer("temp"),
        memory_temperature=45,  # field 82, answered beside the calls
        temp_shutdown=thresholds[0],
        temp_slowdown=thresholds[1],
        temp_memory_max=thresholds[2],
        temp_gpu_max=thresholds[3],
        clocks={0: answer("clock_graphics"), 1: answer("clock_sm"), 2: answer("clock_mem")},
        max_clocks={
            0: answer("max_clock_graphics"),
            1: answer("max_clock_sm"),
            2: answer("max_clock_mem"),
        },
        pstate=answer("pstate"),
        pcie_gen=answer("pcie_gen"),
        pcie_width=answer("pcie_width"),
        pcie_max_gen=answer("pcie_max_gen"),
        gpu_max_pcie_gen=answer("pcie_gpu_max_gen"),
        pcie_max_width=answer("pcie_max_width"),
        throttle_reasons=answer("events_reasons"),
        ecc_mode=answer("ecc_mode")[0],
        retired_pages_pending=None,  # NotSupported on row-remapping parts
        remapped_rows=tuple(answer("remapped_rows")),
        persistence_mode=answer("persistence"),
        vbios=answer("vbios"),
        serial=answer("serial"),
        mig_mode=answer("mig_mode")[0],
        virtualization_mode=answer("virt_mode"),
        bus_type=answer("bus_type"),
    )


def test_the_fake_fed_the_real_answers_gives_what_gputui_gave_on_the_machine() -> None:
    real = snapshot("snap_idle")
    backend = NvmlBackend(make_fake_nvml([fake_of_the_real_h100()], driver_version="580.159.04"))
    node = backend.open()
    try:
        sample = backend.read_gpus(1.0, slow=True)[0]
    finally:
        backend.close()
    ours = encode(node.gpus[0])
    recorded = json.loads((REAL / "snap_idle.json").read_text())["node"]["gpus"][0]
    assert {k: ours[k] for k in recorded} == recorded  # every field the real run wrote
    assert ours["virtualization_mode"] == "passthrough" and ours["host_link"] == "pcie"
    for field in (
        "utilization_gpu_pct",
        "memory_used_bytes",
        "memory_free_bytes",
        "memory_reserved_bytes",
        "temperature_gpu_c",
        "temperature_memory_c",
        "clock_sm_mhz",
        "clock_memory_mhz",
        "pstate",
        "pcie_gen",
        "pcie_width",
        "throttle_reasons",
        "remapped_rows_pending",
        "retired_pages_pending",
    ):
        assert getattr(sample, field) == getattr(real.gpus[0], field), field
    assert sample.power_w == pytest.approx(answer("power_usage") / 1000)


def test_the_real_recording_replays_healthy(capsys: pytest.CaptureFixture[str]) -> None:
    spec = BackendSpec.parse(f"replay:{REAL / 'rec.jsonl.gz'}")
    assert run_replay_check(CheckOptions(spec, as_json=True)) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "healthy" and doc["checked_gpus"] == [0]


def test_numa_node_on_a_one_node_vm_is_that_node_as_nvidia_smi_says(tmp_path: Path) -> None:
    """On the real VM the device's sysfs numa_node is -1 while nvidia-smi topo -m shows 0."""
    from gputui.core import pci

    devices, nodes = tmp_path / "devices", tmp_path / "node"
    (devices / "0000:00:06.0").mkdir(parents=True)
    (devices / "0000:00:06.0" / "numa_node").write_text("-1\n")
    (nodes / "node0").mkdir(parents=True)
    (nodes / "possible").write_text("0\n")
    row = next(
        line for line in (REAL / "smi_topo.txt").read_text().splitlines() if line[:4] == "GPU0"
    )
    assert row.split("\t")[3] == "0"  # GPU0, X, CPU affinity 0-15, NUMA affinity 0
    assert pci.numa_node("00000000:00:06.0", devices, nodes) == 0
    (nodes / "node1").mkdir()
    assert pci.numa_node("00000000:00:06.0", devices, nodes) is None  # two nodes: unknown


RUN2 = REAL / "run2"


def test_the_second_run_read_the_processes_from_raw_records_as_nvidia_smi_did() -> None:
    """Run 2 is this code on another H100 (same driver): the raw-record process lists, the
    attachment and the open time, against nvidia-smi beside it."""
    shot = snapshot_from_dict(json.loads((RUN2 / "snap_procs.json").read_text()))
    assert [((p.gpu_memory_bytes or 0) >> 20, p.user) for p in shot.processes] == [
        (1542, "root"),
        (2566, "root"),
        (3590, "nobody"),
    ]
    compare = (RUN2 / "compare_procs.txt").read_text().splitlines()
    assert not [line for line in compare if line.startswith("DIFF")]
    assert sum(line.startswith("MATCH     gpu0.pid") for line in compare) == 3
    info, node = shot.node.gpus[0], shot.node
    assert (info.host_link, info.virtualization_mode, info.fabric_state) == (
        "pcie",
        "passthrough",
        "not_supported",
    )
    assert node.pid_namespace == "host"
    assert node.open_seconds is not None and node.open_seconds < 1.0
    raw = json.loads((RUN2 / "extra_procs.json").read_text())
    decoded = raw["raw_nvmlDeviceGetComputeRunningProcesses_v2"]["value"]["decoded"]
    assert [(pid, mem >> 20) for pid, mem, _gi, _ci in decoded] == [
        (p.pid, (p.gpu_memory_bytes or 0) >> 20) for p in shot.processes
    ]


RUN3 = REAL / "run3"


@pytest.mark.parametrize(
    ("name", "require_idle", "expected"),
    [
        ("snap_idle", True, None),
        ("snap_root_busy", False, None),  # root's own process, judged for root: shared use only
        ("snap_root_busy", True, "GPU 0: 1 process(es) running: PID 495 (root, python3 -c"),
        ("snap_pidns", True, "GPU 0: 4.86 GiB in use by processes not visible here"),
        ("snap_hidepid", True, "GPU 0: 4.85 GiB held by PID 495, a process not visible here"),
        ("snap_procs_three", True, "GPU 0: 3 process(es) running: PID 1233 (root, "),
    ],
)
def test_require_idle_on_the_real_h100_fails_on_any_holder_seen_or_not(
    name: str, require_idle: bool, expected: str | None
) -> None:
    """The third run (run3/): root holding 4.85 GiB and computing, seen as root, from a PID
    namespace of its own (the driver then lists no process at all) and as nobody behind
    ``hidepid=invisible``; then three processes, two of them root's. Today's rules, judging
    for root as a prolog does, fail ``--require-idle`` on every one of them and on nothing
    when the GPU is idle."""
    shot = dataclasses.replace(snapshot(f"run3/{name}"), findings=())
    config = HealthConfig(require_idle=require_idle, current_user="root")
    judged = HealthMonitor(config, env={}).update(shot)
    bad = [f.message for f in judged if f.severity in ("warn", "fail")]
    if expected is None:
        assert bad == []
    else:
        assert len(bad) == 1 and bad[0].startswith(expected), bad
