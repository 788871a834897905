"""Snapshot serialization: stable JSON, numbers stay numbers, round trip is lossless."""

from __future__ import annotations

import json

import pytest

from gputui.core.codec import snapshot_from_dict, snapshot_to_json
from gputui.core.model import (
    SCHEMA_VERSION,
    GpuInfo,
    GpuLocality,
    GpuPath,
    GpuSample,
    HostSample,
    LinkInfo,
    LinkSample,
    MigDeviceInfo,
    MigSample,
    NodeInfo,
    ProcessSample,
    Snapshot,
    Topology,
    describe_throttle,
)


def make_snapshot() -> Snapshot:
    info = GpuInfo(
        index=0,
        name="NVIDIA H100 80GB HBM3",
        uuid="GPU-1",
        vendor="nvidia",
        memory_total_bytes=80 * 2**30,
        mig_devices=(MigDeviceInfo(0, 1, 0, "MIG-1", "1g.10gb", 10 * 2**30, 16),),
    )
    sample = GpuSample(
        index=0,
        timestamp=100.0,
        utilization_gpu_pct=97.0,
        memory_used_bytes=70 * 2**30,
        memory_free_bytes=10 * 2**30,
        power_w=612.5,
        throttle_reasons=frozenset({"sw_power_cap", "hw_thermal"}),
        mig_devices=(MigSample("MIG-1", 2**30, 10 * 2**30),),
        links=(LinkSample(0, up=True, tx_bytes_per_s=1e9, replay_errors=0),),
    )
    proc = ProcessSample(pid=42, gpu_index=0, gpu_memory_bytes=2**30, command="python train.py")
    host = HostSample(
        timestamp=100.0, cpu_pct=12.5, per_core_pct=(10.0, 15.0), load_average=(1, 2, 3)
    )
    topology = Topology(
        paths=(GpuPath(0, 1, pcie_level="SYS", p2p_read=True, p2p_write=False),),
        links=(LinkInfo(0, 0, "nvlink", version=4, remote_type="switch"),),
        locality=(GpuLocality(0, cpu_affinity="0-55,112-167", numa_node=0),),
    )
    node = NodeInfo(
        hostname="box",
        backend="sim:test",
        gpus=(info,),
        driver_version="550.54.15",
        topology=topology,
    )
    return Snapshot(timestamp=100.0, node=node, gpus=(sample,), processes=(proc,), host=host)


def test_json_round_trip_is_lossless() -> None:
    snapshot = make_snapshot()
    restored = snapshot_from_dict(json.loads(snapshot_to_json(snapshot)))
    assert restored == snapshot


def test_json_uses_plain_types_and_sorted_reasons() -> None:
    data = json.loads(snapshot_to_json(make_snapshot()))
    assert data["schema_version"] == SCHEMA_VERSION
    gpu = data["gpus"][0]
    assert gpu["throttle_reasons"] == ["hw_thermal", "sw_power_cap"]
    assert gpu["power_w"] == 612.5
    assert gpu["temperature_gpu_c"] is None  # unsupported stays null, never 0
    assert data["node"]["gpus"][0]["mig_devices"][0]["uuid"] == "MIG-1"
    assert data["host"]["load_average"] == [1, 2, 3]
    assert data["node"]["topology"]["paths"][0]["pcie_level"] == "SYS"
    assert data["gpus"][0]["links"][0]["tx_bytes_per_s"] == 1e9


def test_unknown_keys_are_ignored_and_wrong_schema_rejected() -> None:
    data = json.loads(snapshot_to_json(make_snapshot()))
    data["gpus"][0]["a_field_from_the_future"] = 1
    assert snapshot_from_dict(data).gpus[0].utilization_gpu_pct == 97.0
    data["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(ValueError, match="schema"):
        snapshot_from_dict(data)


def test_memory_total_includes_reserved() -> None:
    sample = GpuSample(0, 0.0, memory_used_bytes=5, memory_free_bytes=3, memory_reserved_bytes=2)
    assert sample.memory_total_bytes == 10
    assert GpuSample(0, 0.0, memory_used_bytes=5).memory_total_bytes is None


def test_describe_throttle_puts_trouble_first() -> None:
    assert describe_throttle(frozenset({"sw_power_cap", "hw_thermal"})) == (
        "HW thermal slowdown, power cap"
    )
    assert describe_throttle(frozenset()) == ""
    assert describe_throttle(None) == ""
