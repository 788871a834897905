"""Health rules on crafted snapshots (trigger and near miss), the monitor's state, Slurm and torch
version discovery, and the faulty simulated node end to end."""

from __future__ import annotations

import dataclasses
import sys
import threading
from pathlib import Path

import pytest
from tests.factories import GIB, T, info, proc, run, sample, snap
from tests.fakes.clock import fake_clock_sampler

from gputui.core.model import (
    Finding,
    GpuEvent,
    GpuInfo,
    LinkInfo,
    LinkSample,
    MigDeviceInfo,
    NodeInfo,
    Snapshot,
    Topology,
)
from gputui.health import (
    RULES,
    HealthConfig,
    HealthMonitor,
    RuleContext,
    gpu_severity,
    is_datacenter_gpu,
    slurm_expected_gpus,
    torch_cuda_version,
    worst,
)
from gputui.health.rollup import NewFindings

# -- rules: trigger and near miss --------------------------------------------------------------


def test_not_responding() -> None:
    (f,) = run("not_responding", snap((sample(error="Unknown Error"),)))
    assert f.severity == "fail" and f.gpu_index == 0 and "Unknown Error" in f.message
    node_level = Snapshot(timestamp=T, node=snap().node, gpus=())
    (f,) = run("not_responding", node_level)
    assert f.gpu_index is None and "no readings" in f.message
    empty = Snapshot(timestamp=T, node=NodeInfo(hostname="n", backend="nvml", gpus=()), gpus=())
    assert run("not_responding", empty)[0].severity == "fail"
    # near miss: a healthy reading, and a lost GPU (its own rule)
    assert run("not_responding", snap()) == []
    assert run("not_responding", snap((sample(lost=True, error="lost"),))) == []


def test_gpu_lost() -> None:
    (f,) = run("gpu_lost", snap((sample(0), sample(3, lost=True, error="fell off the bus"))))
    assert f.severity == "fail" and f.gpu_index == 3
    assert f.message == "GPU 3 is lost (fell off the bus)"
    assert "nvidia-smi -r" in f.hint
    assert run("gpu_lost", snap((sample(0), sample(3)))) == []


def test_gpu_count() -> None:
    two = snap((sample(0), sample(1)))
    (f,) = run("gpu_count", two, expected_gpus=3)
    assert f.severity == "fail" and "2 GPU(s) visible, 3 expected" in f.message
    assert run("gpu_count", two, expected_gpus=2) == []
    assert run("gpu_count", two, expected_gpus=1) == []  # more is fine (Slurm share)
    assert run("gpu_count", two, expected_gpus=None) == []


def test_slurm_expected_gpus() -> None:
    assert slurm_expected_gpus({}) is None
    assert slurm_expected_gpus({"SLURM_GPUS_ON_NODE": "4"}) is None  # not in a job
    assert slurm_expected_gpus({"SLURM_JOB_ID": "7", "SLURM_GPUS_ON_NODE": "4"}) == 4
    assert slurm_expected_gpus({"SLURM_JOB_ID": "7", "SLURM_JOB_GPUS": "0,1,5"}) == 3
    assert slurm_expected_gpus({"SLURM_JOB_ID": "7", "SLURM_JOB_GPUS": "0,4-7"}) == 5
    assert slurm_expected_gpus({"SLURM_JOB_ID": "7"}) is None
    monitor = HealthMonitor(HealthConfig(), env={"SLURM_JOB_ID": "1", "SLURM_GPUS_ON_NODE": "2"})
    assert monitor.expected_gpus == 2
    assert HealthMonitor(HealthConfig(expect_gpus=8), env={}).expected_gpus == 8


def _xid(code: int, gpu: int | None = 0, t: float = T) -> GpuEvent:
    return GpuEvent(timestamp=t, kind="xid", gpu_index=gpu, code=code)


def test_xid_graded_with_meaning() -> None:
    events = (_xid(79, 3), _xid(79, 3, T + 5), _xid(13, 1), _xid(999, 2))
    found = {f.key: f for f in run("xid", snap(), events=events)}
    lost = found["xid:3:79"]
    assert lost.severity == "fail" and "fallen off the bus" in lost.message
    assert "(×2)" in lost.message and (lost.first_seen, lost.last_seen) == (T, T + 5)
    assert found["xid:1:13"].severity == "info"
    assert found["xid:2:999"].severity == "warn"
    assert "see NVIDIA's XID catalog" in found["xid:2:999"].message
    # near miss: other event kinds are not XIDs
    ecc = GpuEvent(timestamp=T, kind="ecc_single_bit", gpu_index=0)
    assert run("xid", snap(), events=(ecc,)) == []


def _kxid(code: int, gpu: int | None = 0, t: float = T) -> GpuEvent:
    return GpuEvent(timestamp=t, kind="xid", gpu_index=gpu, code=code, source="kernel_log")


def _marker(kind: str, t: float, gpu: int | None = None) -> GpuEvent:
    return GpuEvent(timestamp=t, kind=kind, gpu_index=gpu, source="kernel_log")


def _mig_info(*instances: tuple[int, int]) -> GpuInfo:
    name = "NVIDIA H100 80GB HBM3 MIG 1g.10gb"
    devices = tuple(
        MigDeviceInfo(0, gpu_instance_id=gi, compute_instance_id=ci, uuid=f"MIG-{gi}", name=name)
        for gi, ci in instances
    )
    return info(0, mig_enabled=True, mig_devices=devices)


def test_xid_on_a_mig_instance_names_it() -> None:
    def mig_xid(gi: int, ci: int | None) -> GpuEvent:
        return GpuEvent(T, "xid", gpu_index=0, code=94, gpu_instance_id=gi, compute_instance_id=ci)

    node = snap(infos=(_mig_info((5, 2), (6, 0), (6, 1)),))
    found = {f.key: f for f in run("xid", node, events=(mig_xid(5, 2), mig_xid(6, None)))}
    assert set(found) == {"xid:0:94:gi5:ci2", "xid:0:94:gi6"}  # one finding per instance
    assert found["xid:0:94:gi5:ci2"].message == (
        "XID 94 on GPU 0 (MIG 1g.10gb GI 5 CI 2): contained ECC error (only the affected "
        "application was stopped)"
    )
    # GPU instance 6 has two compute instances: the profile is not guessed
    assert found["xid:0:94:gi6"].message.startswith("XID 94 on GPU 0 (MIG GI 6):")
    assert found["xid:0:94:gi5:ci2"].severity == "warn" and found["xid:0:94:gi5:ci2"].gpu_index == 0
    # near miss: without MIG attribution, as before
    (f,) = run("xid", node, events=(_xid(94, 0),))
    assert f.key == "xid:0:94" and f.message.startswith("XID 94 on GPU 0: ")


def test_kernel_log_xid_before_a_driver_load_is_history() -> None:
    from gputui.core.format import fmt_datetime

    events = (_kxid(79, 0, T - 3600), _marker("driver_loaded", T - 1800))
    (f,) = run("xid", snap(), events=events)
    assert f.severity == "info" and f.key == "xid:0:79" and f.first_seen == T - 3600
    assert f.message == (
        f"XID 79 on GPU 0 at {fmt_datetime(T - 3600)}: GPU has fallen off the bus; history: the "
        f"NVIDIA driver was loaded again at {fmt_datetime(T - 1800)}, so it no longer counts"
    )
    assert "happens again" in f.hint and "--xid-window" in f.hint
    # near misses: an XID after the load counts, and so does one NVML delivered live
    (f,) = run("xid", snap(), events=(*events, _kxid(79, 0, T - 60)))
    assert f.severity == "fail" and (f.first_seen, f.last_seen) == (T - 60, T - 60)
    assert "(×" not in f.message and "history" not in f.message
    (f,) = run("xid", snap(), events=(_xid(79, 0, T - 3600), events[1]))
    assert f.severity == "fail"
    # the markers are no faults of their own
    assert run("gpu_event", snap(), events=events) == []


def test_kernel_log_xid_before_its_gpu_was_reenumerated_is_history() -> None:
    events = (
        _kxid(79, 0, T - 3600),
        _kxid(79, 1, T - 3600),
        _marker("gpu_reinitialized", T - 60, 0),
    )
    found = {f.gpu_index: f for f in run("xid", snap((sample(0), sample(1))), events=events)}
    assert found[0].severity == "info" and "found on the PCI bus again" in found[0].message
    assert found[1].severity == "fail"  # another GPU's re-enumeration does not age it
    assert run("gpu_event", snap(), events=events[2:]) == []


def test_kernel_log_xid_older_than_the_window_is_history() -> None:
    day = 24 * 3600
    old, recent = _kxid(48, 0, T - day - 60), _kxid(48, 1, T - day + 60)
    found = {f.gpu_index: f for f in run("xid", snap((sample(0), sample(1))), events=(old, recent))}
    assert found[0].severity == "info" and "older than the 24 h window" in found[0].message
    assert found[1].severity == "fail"
    # a narrower window ages the other one too; no window ages neither
    two = snap((sample(0), sample(1)))
    narrow = HealthConfig(current_user="me", xid_window_hours=12)
    assert {f.severity for f in run("xid", two, narrow, events=(old, recent))} == {"info"}
    none = HealthConfig(current_user="me", xid_window_hours=None)
    assert {f.severity for f in run("xid", two, none, events=(old, recent))} == {"fail"}
    # XIDs the driver delivered live never age
    (f,) = run("xid", snap(), events=(_xid(48, 0, T - 3 * day),))
    assert f.severity == "fail"


def test_gpu_event() -> None:
    dbe = GpuEvent(timestamp=T, kind="ecc_double_bit", gpu_index=2)
    sbe = GpuEvent(timestamp=T, kind="ecc_single_bit", gpu_index=2)
    found = {f.key: f for f in run("gpu_event", snap(), events=(dbe, sbe))}
    assert found["gpu_event:2:ecc_double_bit"].severity == "fail"
    assert found["gpu_event:2:ecc_single_bit"].severity == "info"
    assert run("gpu_event", snap(), events=(_xid(48),)) == []


def test_ecc_uncorrected() -> None:
    (f,) = run("ecc_uncorrected", snap((sample(2, ecc_volatile_uncorrected=1),)))
    assert f.severity == "fail" and f.gpu_index == 2
    assert run("ecc_uncorrected", snap((sample(2, ecc_volatile_uncorrected=0),))) == []
    assert run("ecc_uncorrected", snap((sample(2, ecc_volatile_uncorrected=None),))) == []


def test_ecc_aggregate() -> None:
    # a page-retirement GPU (V100): it does not answer the remapped-rows fields
    v100 = {"remapped_rows_pending": None, "remapped_rows_failure": None}
    (f,) = run("ecc_aggregate", snap((sample(ecc_aggregate_uncorrected=3, **v100),)))
    assert f.severity == "warn" and "3 uncorrected" in f.message and "up from" not in f.message
    grown = snap((sample(ecc_aggregate_uncorrected=3, **v100),))
    (f,) = run("ecc_aggregate", grown, ecc_baseline={0: 1})
    assert "up from 1" in f.message
    assert run("ecc_aggregate", snap((sample(ecc_aggregate_uncorrected=0),))) == []


def test_ecc_aggregate_is_history_on_gpus_that_remap_rows() -> None:
    # A100 / H100 answer the remapped-rows fields: lifetime errors are history there; a pending
    # or failed remap is what needs action, and the row_remap rule judges it
    (f,) = run("ecc_aggregate", snap((sample(ecc_aggregate_uncorrected=3),)), ecc_baseline={0: 1})
    assert f.severity == "info" and "3 uncorrected" in f.message and "up from 1" in f.message
    assert "row_remap" in f.hint
    counts_only = sample(
        ecc_aggregate_uncorrected=3,
        remapped_rows_pending=None,
        remapped_rows_failure=None,
        remapped_rows_uncorrectable=2,
    )
    assert run("ecc_aggregate", snap((counts_only,)))[0].severity == "info"


def test_retired_pages() -> None:
    (f,) = run("retired_pages", snap((sample(retired_pages_pending=True),)))
    assert f.severity == "fail"
    assert run("retired_pages", snap((sample(retired_pages_pending=False),))) == []


def test_row_remap() -> None:
    (f,) = run("row_remap", snap((sample(remapped_rows_failure=True),)))
    assert f.severity == "fail" and "RMA" in f.hint
    (f,) = run("row_remap", snap((sample(remapped_rows_pending=True),)))
    assert f.severity == "warn" and "reset needed" in f.message
    assert run("row_remap", snap((sample(remapped_rows_correctable=4),))) == []


def test_ecc_disabled_on_datacenter_only() -> None:
    (f,) = run("ecc_disabled", snap(infos=(info(ecc_enabled=False),)))
    assert f.severity == "warn"
    consumer = info(name="NVIDIA GeForce RTX 4090", ecc_enabled=False)
    assert run("ecc_disabled", snap(infos=(consumer,))) == []
    assert run("ecc_disabled", snap(infos=(info(ecc_enabled=True),))) == []


@pytest.mark.parametrize(
    ("mode", "judged"), [("vgpu", False), ("passthrough", True), ("none", True), (None, True)]
)
def test_ecc_and_persistence_off_not_judged_in_a_vgpu_guest(mode: str | None, judged: bool) -> None:
    # a vGPU guest cannot change ECC or persistence (the host owns the physical GPU); a
    # passthrough GPU (a whole GPU in a VM, as on the real H100 in tests/data/real) is bare metal
    off = snap(infos=(info(ecc_enabled=False, persistence_mode=False, virtualization_mode=mode),))
    assert len(run("ecc_disabled", off)) == int(judged)
    assert len(run("persistence_mode", off, platform="linux")) == int(judged)


@pytest.mark.parametrize(
    ("name", "datacenter"),
    [
        ("NVIDIA H100 80GB HBM3", True),
        ("NVIDIA A100-SXM4-80GB", True),
        ("NVIDIA H200", True),
        ("NVIDIA GH200 480GB", True),
        ("Tesla V100-SXM2-32GB", True),
        ("AMD Instinct MI300X", True),
        ("NVIDIA GeForce RTX 4090", False),
        ("NVIDIA RTX A6000", False),
        ("NVIDIA L40S", False),
        ("Tesla T4", False),
        ("NVIDIA A10G", False),
        ("AMD Radeon RX 7900 XTX", False),
    ],
)
def test_is_datacenter_gpu(name: str, datacenter: bool) -> None:
    assert is_datacenter_gpu(info(name=name)) is datacenter


def test_throttle_trouble_vs_normal() -> None:
    (f,) = run("throttle", snap((sample(throttle_reasons=frozenset({"hw_thermal"})),)))
    assert f.severity == "fail" and "HW thermal" in f.message
    (f,) = run("throttle", snap((sample(throttle_reasons=frozenset({"hw_power_brake"})),)))
    assert f.severity == "fail" and "power" in f.hint
    (f,) = run("throttle", snap((sample(throttle_reasons=frozenset({"sw_thermal"})),)))
    assert f.severity == "warn"
    normal = frozenset({"gpu_idle", "sw_power_cap", "applications_clocks"})
    assert run("throttle", snap((sample(throttle_reasons=normal),))) == []


def test_power_limit() -> None:
    (f,) = run("power_limit", snap((sample(power_limit_w=500.0),)))
    assert f.severity == "warn" and "500W" in f.message and "700W" in f.message
    assert run("power_limit", snap((sample(power_limit_w=699.5),))) == []


def test_temperature() -> None:
    (f,) = run("temperature", snap((sample(temperature_gpu_c=89.0),)))
    assert f.severity == "fail" and "89°C" in f.message
    (f,) = run("temperature", snap((sample(temperature_gpu_c=84.0),)))
    assert f.severity == "warn"
    assert run("temperature", snap((sample(temperature_gpu_c=83.0),))) == []
    assert run("temperature", snap(infos=(info(temperature_slowdown_c=None),))) == []


def _linked_snap(links: tuple[LinkSample, ...] | None, gpu: int = 1, n: int = 18) -> Snapshot:
    base = snap((sample(0), dataclasses.replace(sample(gpu), links=links)))
    infos = tuple(LinkInfo(gpu_index=g, link=i, kind="nvlink") for g in (0, gpu) for i in range(n))
    node = dataclasses.replace(base.node, topology=Topology(links=infos))
    return dataclasses.replace(base, node=node)


def test_nvlink_down() -> None:
    links = tuple(LinkSample(link=i, up=i != 7) for i in range(18))
    (f,) = run("nvlink_down", _linked_snap(links))
    assert f.severity == "fail" and f.gpu_index == 1
    assert f.message == "GPU 1 NVLink 7 is down (17/18 up)"
    assert "fabric manager" in f.hint and "RMA" in f.hint
    assert f.key == "nvlink_down:1:link7"
    # near misses: all up; links not read (None); no links (consumer card); state unknown
    all_up = tuple(LinkSample(link=i, up=True) for i in range(18))
    assert run("nvlink_down", _linked_snap(all_up)) == []
    assert run("nvlink_down", _linked_snap(None)) == []
    assert run("nvlink_down", _linked_snap((), n=0)) == []
    assert run("nvlink_down", _linked_snap((LinkSample(link=0, up=None),))) == []
    assert list(RULES).index("nvlink_down") == list(RULES).index("pcie_link") + 1


def test_xgmi_link_down_is_named_as_such() -> None:
    base = snap((sample(0, links=(LinkSample(link=2, up=False), LinkSample(link=3, up=True))),))
    infos = tuple(LinkInfo(gpu_index=0, link=i, kind="xgmi") for i in (2, 3))
    node = dataclasses.replace(base.node, topology=Topology(links=infos))
    (f,) = run("nvlink_down", dataclasses.replace(base, node=node))
    assert f.message == "GPU 0 XGMI link 2 is down (1/2 up)" and "amd-smi" in f.hint


def test_pcie_link_judged_under_load_only() -> None:
    (f,) = run("pcie_link", snap((sample(6, pcie_gen=3, pcie_width=8),)))
    assert f.severity == "warn" and "Gen3 x8" in f.message and "Gen5 x16" in f.message
    assert "down-train" in f.hint
    (f,) = run("pcie_link", snap((sample(pcie_gen=5, pcie_width=8),)))
    assert f.gpu_index == 0
    idle = sample(pcie_gen=1, pcie_width=16, utilization_gpu_pct=29.0)
    assert run("pcie_link", snap((idle,))) == []
    assert run("pcie_link", snap((sample(pcie_gen=5, pcie_width=16),))) == []


def test_persistence_mode() -> None:
    off = snap(infos=(info(persistence_mode=False),))
    (f,) = run("persistence_mode", off, platform="linux")
    assert f.severity == "warn"
    assert run("persistence_mode", off, platform="win32") == []
    assert run("persistence_mode", snap(), platform="linux") == []
    consumer = snap(infos=(info(name="NVIDIA GeForce RTX 3090", persistence_mode=False),))
    assert run("persistence_mode", consumer, platform="linux") == []


def test_other_processes() -> None:
    theirs = proc(3038655, user="ana", mem=40 * GIB)
    s = snap((sample(memory_used_bytes=40 * GIB),), processes=(theirs,))
    (f,) = run("other_processes", s)
    assert f.severity == "info" and "3038655" in f.message and "ana" in f.message
    assert "40.0 GiB" in f.message  # a GiB figure is labelled GiB
    (f,) = run("other_processes", s, HealthConfig(require_idle=True, current_user="me"))
    assert f.severity == "fail"
    # memory in use that no visible process accounts for (another container)
    hidden = snap((sample(memory_used_bytes=5 * GIB),))
    (f,) = run("other_processes", hidden, HealthConfig(require_idle=True, current_user="me"))
    assert f.severity == "fail" and "not visible" in f.message
    # near miss: my own process is no other user's, a little driver memory
    mine = snap((sample(memory_used_bytes=10 * GIB + 500),), processes=(proc(user="me"),))
    assert run("other_processes", mine) == []
    small = snap((sample(memory_used_bytes=512 * 1024**2),))
    assert run("other_processes", small, HealthConfig(require_idle=True, current_user="me")) == []


def test_require_idle_fails_on_any_process_of_any_user() -> None:
    """A Slurm prolog runs as root, and container workloads show as root on the host: with
    --require-idle root's own processes are no less in the way than anyone else's."""
    root = HealthConfig(require_idle=True, current_user="root")
    train = proc(123, user="root", mem=40 * GIB, command="python train.py")
    busy = snap((sample(utilization_gpu_pct=86.0, memory_used_bytes=40 * GIB),), processes=(train,))
    (f,) = run("other_processes", busy, root)
    assert f.severity == "fail"
    assert f.message == "GPU 0: 1 process(es) running: PID 123 (root, python train.py) 40.0 GiB"
    assert "other users" not in f.message
    # near miss: gputui's own process (its probe holding a context) is not in the way
    own = dataclasses.replace(root, own_pid=123)
    assert run("other_processes", busy, own) == []


def test_memory_of_processes_not_visible_here_is_named_as_such() -> None:
    hidden = tuple(proc(p, user=None, mem=20 * GIB, not_visible=True) for p in (4242, 4243))
    s = snap((sample(memory_used_bytes=40 * GIB),), processes=hidden)
    (f,) = run("other_processes", s, HealthConfig(require_idle=True, current_user="me"))
    assert f.severity == "fail" and "hidepid" in f.hint
    assert f.message == "GPU 0: 40.0 GiB held by PIDs 4242, 4243, processes not visible here"
    (f,) = run("other_processes", s)
    assert f.severity == "info" and "other users" not in f.message


def test_driver_cuda() -> None:
    cfg = HealthConfig(torch_cuda_version="12.4", current_user="me")
    (f,) = run("driver_cuda", snap(runtime="12.2"), cfg)
    assert f.severity == "warn" and f.message == "CUDA driver API 12.2 < torch built for 12.4"
    (f,) = run("driver_cuda", snap(runtime="11.8"), cfg)
    assert f.severity == "fail"
    assert run("driver_cuda", snap(runtime="12.4"), cfg) == []
    assert run("driver_cuda", snap(runtime="12.6"), cfg) == []
    assert run("driver_cuda", snap(runtime="12.2")) == []  # torch unknown


def test_idle_memory() -> None:
    p = proc(
        3038655, gpu=7, user="ana", mem=int(39.3 * 1e9), command="python -m ipykernel_launcher"
    )
    s = snap((sample(7, utilization_gpu_pct=0.0),), t=T + 12 * 60, processes=(p,))
    (f,) = run("idle_memory", s, idle_since={(3038655, 7): T})
    assert f.severity == "warn"
    assert f.message.startswith("PID 3038655 (ana, python -m ipykernel_launcher) holds")
    assert "on GPU 7 and has been idle for 12m00s" in f.message
    (f,) = run(
        "idle_memory", dataclasses.replace(s, timestamp=T + 120), idle_since={(3038655, 7): T}
    )
    assert f.severity == "info"
    assert (
        run("idle_memory", dataclasses.replace(s, timestamp=T + 30), idle_since={(3038655, 7): T})
        == []
    )
    assert run("idle_memory", s) == []  # not tracked as idle


def test_rules_registry_documents_every_rule() -> None:
    assert len(RULES) >= 18
    for rule_id, (fn, doc) in RULES.items():
        assert callable(fn) and doc and "\n" not in doc, rule_id


# -- the monitor -------------------------------------------------------------------------------


def _hot(t: float, temp: float = 95.0) -> Snapshot:
    return snap((sample(temperature_gpu_c=temp),), t=t)


def test_monitor_first_seen_kept_and_cleared_until_acknowledged() -> None:
    m = HealthMonitor(HealthConfig(current_user="me"), env={})
    (f,) = m.update(_hot(T))
    assert (f.rule, f.first_seen, f.last_seen, f.active) == ("temperature", T, T, True)
    (f,) = m.update(_hot(T + 1))
    assert (f.first_seen, f.last_seen) == (T, T + 1)
    (f,) = m.update(_hot(T + 2, temp=60.0))
    assert f.active is False and f.last_seen == T + 1
    assert m.acknowledge(f.key) == 1
    assert m.update(_hot(T + 3, temp=60.0)) == ()


def test_monitor_live_condition_cannot_be_acknowledged_away() -> None:
    m = HealthMonitor(HealthConfig(current_user="me"), env={})
    (f,) = m.update(_hot(T))
    assert m.acknowledge(f.key) == 0 and m.acknowledge() == 0
    assert len(m.findings) == 1


def test_monitor_events_persist_until_acknowledged() -> None:
    m = HealthMonitor(HealthConfig(current_user="me"), env={})
    m.update(snap(t=T, events=(_xid(79, 0),)))
    (f,) = m.update(snap(t=T + 10))
    assert f.key == "xid:0:79" and f.first_seen == T and f.active
    assert m.acknowledge() == 1
    assert m.update(snap(t=T + 11)) == ()
    # the same event read again (kernel log re-read) does not come back
    m.add_events([_xid(79, 0)])
    assert m.update(snap(t=T + 12)) == ()


def test_monitor_kernel_log_events_added() -> None:
    m = HealthMonitor(HealthConfig(current_user="me"), env={})
    m.add_events([_xid(48, 0, T - 3600), _xid(48, 0, T - 3600)])
    (f,) = m.update(snap())
    assert f.severity == "fail" and "(×" not in f.message


def test_monitor_new_findings_reported_once() -> None:
    m = HealthMonitor(HealthConfig(current_user="me"), env={})
    news = NewFindings()
    (new,) = news.take(m.update(_hot(T, temp=86.0)))
    assert new.severity == "warn"
    assert news.take(m.update(_hot(T + 1, temp=86.0))) == []
    (new,) = news.take(m.update(_hot(T + 2, temp=95.0)))  # got worse: notify again
    assert new.severity == "fail"
    news.take(m.update(_hot(T + 3, temp=60.0)))
    # came back before being acknowledged: not new
    assert news.take(m.update(_hot(T + 4, temp=95.0))) == []


def test_monitor_ignore_and_gpu_filter() -> None:
    s = snap((sample(0, temperature_gpu_c=95.0), sample(1, temperature_gpu_c=95.0)))
    assert {
        f.gpu_index for f in HealthMonitor(HealthConfig(current_user="me"), env={}).update(s)
    } == {0, 1}
    only1 = HealthMonitor(HealthConfig(gpus=frozenset({1}), current_user="me"), env={})
    assert {f.gpu_index for f in only1.update(s)} == {1}
    ignoring = HealthMonitor(
        HealthConfig(ignore=frozenset({"temperature"}), current_user="me"), env={}
    )
    assert ignoring.update(s) == ()
    counted = HealthMonitor(HealthConfig(gpus=frozenset({1}), expect_gpus=2, current_user="me"))
    assert [f.rule for f in counted.update(snap((sample(0), sample(1))))] == ["gpu_count"]


def test_monitor_idle_memory_timer() -> None:
    m = HealthMonitor(HealthConfig(current_user="me", idle_memory_minutes=5), env={})
    p = proc(42, user="me", mem=20 * GIB, sm_pct=0.0)

    def reading(t: float, util: float = 0.0, mem: int = 20 * GIB) -> Snapshot:
        return snap(
            (sample(utilization_gpu_pct=util, memory_used_bytes=mem),),
            t=t,
            processes=(dataclasses.replace(p, gpu_memory_bytes=mem),),
        )

    assert m.update(reading(T)) == ()
    (f,) = m.update(reading(T + 61))
    assert f.severity == "info" and "idle for 1m01s" in f.message
    (f,) = m.update(reading(T + 301))
    assert f.severity == "warn"
    m.update(reading(T + 302, util=80.0))  # busy again: the timer restarts
    assert not m.findings[0].active
    m.acknowledge()
    m.update(reading(T + 303))
    assert m.update(reading(T + 340)) == ()
    small = HealthMonitor(HealthConfig(current_user="me"), env={})
    small.update(reading(T, mem=GIB // 2))
    assert small.update(reading(T + 3600, mem=GIB // 2)) == ()


def test_acknowledge_waits_for_an_update_in_progress() -> None:
    """The UI thread's acknowledge and findings wait for the sampler thread's update: they never
    act on a half-judged reading (here: before the XID it brings is listed)."""
    judging, release = threading.Event(), threading.Event()

    def slow_rule(ctx: RuleContext) -> list[Finding]:
        judging.set()
        release.wait(10)
        return []

    m = HealthMonitor(
        HealthConfig(current_user="me"),
        env={},
        rules={"xid": RULES["xid"], "slow": (slow_rule, "")},
    )
    sampler_thread = threading.Thread(target=m.update, args=(snap(events=(_xid(13),)),))
    sampler_thread.start()
    assert judging.wait(10)
    seen: dict[str, object] = {}

    def ui() -> None:
        seen["dropped"] = m.acknowledge()
        seen["findings"] = m.findings

    ui_thread = threading.Thread(target=ui)
    ui_thread.start()
    ui_thread.join(0.3)  # without the lock it would be done by now, with nothing to drop
    still_waiting = ui_thread.is_alive()
    release.set()
    sampler_thread.join(10)
    ui_thread.join(10)
    assert still_waiting
    assert seen == {"dropped": 1, "findings": ()}  # the XID, listed by the update, acknowledged
    assert m.findings == ()


def test_worst_and_gpu_severity() -> None:
    findings = [
        Finding(rule="a", severity="warn", message="", gpu_index=0),
        Finding(rule="b", severity="fail", message="", gpu_index=1, active=False),
        Finding(rule="c", severity="info", message="", gpu_index=None),
    ]
    assert worst([]) == "ok"
    assert worst(findings) == "fail"
    assert gpu_severity(findings, 0) == "warn"
    assert gpu_severity(findings, 1) == "fail"
    assert gpu_severity(findings, 2) == "ok"


# -- torch's CUDA build ---------------------------------------------------------------------------


def _fake_torch(tmp_path: Path, version_py: str | None) -> None:
    pkg = tmp_path / "torch"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise RuntimeError('torch must not be imported')\n")
    if version_py is not None:
        (pkg / "version.py").write_text(version_py)


@pytest.fixture
def fake_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    return tmp_path


def test_torch_cuda_version_read_without_import(fake_path: Path) -> None:
    _fake_torch(fake_path, "__version__ = '2.5.1+cu124'\ngit_version = 'abc'\ncuda = '12.4'\n")
    assert torch_cuda_version() == "12.4"
    assert "torch" not in sys.modules


def test_torch_cuda_version_annotated(fake_path: Path) -> None:
    _fake_torch(fake_path, "from typing import Optional\ncuda: Optional[str] = '12.6'\n")
    assert torch_cuda_version() == "12.6"


def test_torch_cuda_version_cpu_build(fake_path: Path) -> None:
    _fake_torch(fake_path, "__version__ = '2.5.1+cpu'\ncuda: Optional[str] = None\n")
    assert torch_cuda_version() is None


def test_torch_cuda_version_missing_file(fake_path: Path) -> None:
    _fake_torch(fake_path, None)
    assert torch_cuda_version() is None


def test_torch_cuda_version_no_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert torch_cuda_version() is None


# -- end to end --------------------------------------------------------------------------------


def test_faulty_node_end_to_end() -> None:
    sampler = fake_clock_sampler("faulty")
    monitor = HealthMonitor(HealthConfig(require_idle=True), env={})
    sampler.health = monitor
    for _ in range(6):
        sampler.poll()
        sampler.clock.now += 1  # type: ignore[attr-defined]
    assert sampler.latest is not None
    findings = sampler.latest.findings
    by_key = {f.key: f for f in findings}
    assert by_key["gpu_lost:3"].severity == "fail" and "GPU 3" in by_key["gpu_lost:3"].message
    assert by_key["ecc_uncorrected:2"].severity == "fail"
    assert by_key["throttle:5"].severity == "fail"
    assert "thermal" in by_key["throttle:5"].message
    assert by_key["pcie_link:6"].severity == "warn"
    assert "Gen3 x8" in by_key["pcie_link:6"].message
    assert by_key["row_remap:2:pending"].severity == "warn"
    assert worst(findings) == "fail"
    assert gpu_severity(findings, 3) == "fail" and gpu_severity(findings, 6) in ("warn", "fail")
    nvlink = by_key["nvlink_down:1:link7"]
    assert nvlink.severity == "fail" and nvlink.message == "GPU 1 NVLink 7 is down (17/18 up)"
    healthy = {0, 4, 7}
    rules_on_healthy = {f.rule for f in findings if f.gpu_index in healthy}
    assert rules_on_healthy <= {"other_processes"}  # only the busy GPUs' owner, pre-job
    # notify once: every finding is new once, then nothing until something changes
    news = NewFindings(("info", "warn", "fail"))
    active = {k for k, f in by_key.items() if f.active}  # GPU 3's processes went with it
    assert {f.key for f in news.take(findings)} == active
    assert news.take(sampler.poll().findings) == []


def test_healthy_node_end_to_end_has_no_trouble() -> None:
    sampler = fake_clock_sampler("dgx-h100")
    sampler.health = HealthMonitor(HealthConfig(current_user="svc-train"), env={})
    for _ in range(4):
        sampler.poll()
        sampler.clock.now += 1  # type: ignore[attr-defined]
    assert sampler.latest is not None
    assert worst(sampler.latest.findings) in ("ok", "info")
