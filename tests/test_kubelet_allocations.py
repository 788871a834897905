"""Reading the kubelet's device-plugin checkpoint: both shapes of ``DeviceIDs`` (by NUMA node, and
the flat list of older kubelets), GPU resources only, and content nobody should trust; then a
simulated node whose GPUs it allocates, through ``gputui snapshot``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.factories import kubelet_checkpoint

from gputui import cli
from gputui.backends.sim import SimBackend
from gputui.host.kubealloc import (
    MAX_BYTES,
    CheckpointError,
    grants_of,
    parse_checkpoint,
    read_checkpoint,
)


@pytest.mark.parametrize("flat", [False, True])
def test_both_shapes_of_device_ids(tmp_path: Path, flat: bool) -> None:
    path = kubelet_checkpoint(
        tmp_path / "cp", {"u1": ["GPU-a", "GPU-b"], "u2": ["MIG-c"]}, flat=flat
    )
    entries = read_checkpoint(str(path))
    assert [(e.pod_uid, e.container, e.device_ids) for e in entries] == [
        ("u1", "main", ("GPU-a", "GPU-b")),
        ("u2", "main", ("MIG-c",)),
    ]


def test_devices_on_several_numa_nodes_and_other_resources() -> None:
    document = {
        "Data": {
            "PodDeviceEntries": [
                {
                    "PodUID": "u1",
                    "ContainerName": "c",
                    "ResourceName": "nvidia.com/gpu",
                    "DeviceIDs": {"1": ["GPU-b"], "0": ["GPU-a", "GPU-a"]},
                },
                {
                    "PodUID": "u2",
                    "ContainerName": "c",
                    "ResourceName": "rdma/hca",
                    "DeviceIDs": {"0": ["mlx5_0"]},
                },
                {
                    "PodUID": "u3",
                    "ContainerName": "c",
                    "ResourceName": "nvidia.com/mig-1g.10gb",
                    "DeviceIDs": ["MIG-x"],
                },
                {
                    "PodUID": "u4",
                    "ContainerName": "c",
                    "ResourceName": "amd.com/gpu",
                    "DeviceIDs": ["0000:c1:00.0"],
                },
            ],
            "RegisteredDevices": {},
        },
        "Checksum": 1,
    }
    entries = parse_checkpoint(document)
    assert [(e.pod_uid, e.device_ids) for e in entries] == [
        ("u1", ("GPU-a", "GPU-b")),  # NUMA node 0 first; listed twice, allocated once
        ("u3", ("MIG-x",)),
        ("u4", ("0000:c1:00.0",)),
    ]
    grants = grants_of(entries, {"u1": ("trainer-0", "ml")})
    assert [(g.pod_name, g.namespace, g.device_id) for g in grants][:2] == [
        ("trainer-0", "ml", "GPU-a"),
        ("trainer-0", "ml", "GPU-b"),
    ]


@pytest.mark.parametrize(
    "document",
    [
        [],
        {"Data": []},
        {"Data": {"PodDeviceEntries": {"PodUID": "u"}}},
        "checkpoint",
    ],
)
def test_what_is_no_checkpoint_is_said_so(document: Any) -> None:
    with pytest.raises(CheckpointError, match="not a kubelet device-plugin checkpoint"):
        parse_checkpoint(document)


def test_no_pod_holding_a_device_is_an_empty_answer() -> None:
    assert parse_checkpoint({"Data": {"RegisteredDevices": {}}}) == []
    assert parse_checkpoint({"Data": {"PodDeviceEntries": None, "RegisteredDevices": {}}}) == []


def test_hostile_entries_are_skipped_not_trusted() -> None:
    entries = [
        "not an entry",
        {"PodUID": 7, "ResourceName": "nvidia.com/gpu", "DeviceIDs": ["GPU-a"]},
        {"PodUID": "u", "ResourceName": ["nvidia.com/gpu"], "DeviceIDs": ["GPU-a"]},
        {"PodUID": "u", "ResourceName": "nvidia.com/gpu", "DeviceIDs": "GPU-a"},
        {"PodUID": "u", "ResourceName": "nvidia.com/gpu", "DeviceIDs": {"0": "GPU-a"}},
        {"PodUID": "u\x1b[2J", "ResourceName": "nvidia.com/gpu", "DeviceIDs": ["GPU-a"]},
        {
            "PodUID": "ok",
            "ContainerName": {"x": 1},
            "ResourceName": "nvidia.com/gpu",
            "DeviceIDs": [None, 3, "", "GPU-\n", "G" * 10_000, *(f"GPU-{i}" for i in range(5000))],
        },
    ]
    (entry,) = parse_checkpoint({"Data": {"PodDeviceEntries": entries}})
    assert entry.pod_uid == "ok" and entry.container is None
    assert len(entry.device_ids) == 1024  # bounded
    assert entry.device_ids[0] == "G" * 128  # each id bounded too
    assert all(i.isprintable() for i in entry.device_ids)


def test_files_that_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="no device-plugin checkpoint"):
        read_checkpoint(str(tmp_path / "none"))
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"\xff{" * 10)
    with pytest.raises(CheckpointError, match="not JSON"):
        read_checkpoint(str(garbage))
    deep = tmp_path / "deep"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(CheckpointError):
        read_checkpoint(str(deep))
    huge = tmp_path / "huge"
    with huge.open("wb") as f:
        f.truncate(MAX_BYTES + 1)
    with pytest.raises(CheckpointError, match="larger than"):
        read_checkpoint(str(huge))


def test_a_simulated_node_allocated_by_a_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``gputui snapshot --json`` over the simulated DGX, whose GPU 6 and 7 (by UUID, one as a
    time-sliced replica) a pod holds, and a device the node does not have."""
    node = SimBackend("dgx-h100").open()
    pods = {"1b2c": [node.gpus[6].uuid, node.gpus[7].uuid + "::1"], "9f9f": ["GPU-gone"]}
    root = tmp_path / "kubelet"
    path = kubelet_checkpoint(
        root / "device-plugins" / "kubelet_internal_checkpoint", pods, flat=True
    )
    (root / "pods" / "1b2c").mkdir(parents=True)
    (root / "pods" / "1b2c" / "etc-hosts").write_text(
        "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n10.1.2.3\ttrainer-0\n"
    )
    monkeypatch.setenv("GPUTUI_KUBELET_CHECKPOINT", str(path))
    cli.main(["snapshot", "--json", "--backend", "sim:dgx-h100"])
    data = json.loads(capsys.readouterr().out)
    (status,) = data["schedulers"]
    assert status["scheduler"] == "kubernetes" and status["state"] == "ok"
    held = {a["gpu_index"]: a for a in data["allocations"] if a["state"] != "free"}
    assert sorted(held, key=str) == [6, 7, None]
    assert held[6]["pod_name"] == "trainer-0" and held[6]["pod_uid"] == "1b2c"
    assert held[7]["device"] == node.gpus[7].uuid + "::1"
    assert held[None]["state"] == "unknown" and held[None]["unmatched"] == "no GPU with this id"
    free = [a["gpu_index"] for a in data["allocations"] if a["state"] == "free"]
    assert free == [0, 1, 2, 3, 4, 5]
