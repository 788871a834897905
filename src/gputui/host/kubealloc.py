"""Which GPUs the kubelet gave each pod's containers, read from its device-plugin checkpoint.

The kubelet's device manager keeps what it allocated in
``/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint``, JSON::

    {"Data": {"PodDeviceEntries": [{"PodUID": "...", "ContainerName": "...",
                                    "ResourceName": "nvidia.com/gpu",
                                    "DeviceIDs": {"0": ["GPU-8f3c...", ...]}, ...}],
              "RegisteredDevices": {"nvidia.com/gpu": ["GPU-...", ...]}},
     "Checksum": 1234567890}

``DeviceIDs`` maps a NUMA node to the ids (Kubernetes 1.20+); older kubelets wrote a flat list.
Both are read. The ids are the device plugin's: GPU UUIDs for NVIDIA's plugin (``nvidia.com/gpu``),
MIG UUIDs under the MIG strategies (``nvidia.com/mig-1g.10gb``), ``GPU-...::N`` for a time-sliced
replica; AMD's plugin (``amd.com/gpu``) names PCI bus ids. Only GPU resources are read
(:func:`is_gpu_resource`). The file is read as a file, no gRPC: at most :data:`MAX_BYTES`, every
value checked for its type, every text bounded; anything else is skipped, never trusted.
"""

from __future__ import annotations

import json
import os
from typing import Any

from gputui.core.allocation import Grant
from gputui.core.frozen import frozen
from gputui.core.model import MAX_NAME_CHARS

DEFAULT_KUBELET_ROOT = "/var/lib/kubelet"
CHECKPOINT = os.path.join("device-plugins", "kubelet_internal_checkpoint")
MAX_BYTES = 8 << 20
"""A checkpoint larger than this is not read (a node's is a few kB)."""
MAX_ENTRIES = 10_000
MAX_IDS = 1024
"""Device ids read per entry."""
MAX_ID_CHARS = 128


class CheckpointError(ValueError):
    """The checkpoint could not be read; ``str()`` says why, for the status line."""


@frozen
class PodDevices:
    """One container's devices of one resource."""

    pod_uid: str
    container: str | None
    resource: str
    device_ids: tuple[str, ...]


def is_gpu_resource(name: str) -> bool:
    """``nvidia.com/gpu``, ``nvidia.com/mig-1g.10gb``, ``amd.com/gpu`` (a shared GPU's
    ``nvidia.com/gpu.shared`` too)."""
    return name.startswith(("nvidia.com/gpu", "nvidia.com/mig-", "amd.com/gpu"))


def read_checkpoint(path: str) -> list[PodDevices]:
    """The GPU entries of the checkpoint at ``path``; CheckpointError when it cannot be read."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise CheckpointError(f"no device-plugin checkpoint at {path}") from None
    except OSError as exc:
        raise CheckpointError(f"{path}: {exc.strerror or exc}") from None
    if len(data) > MAX_BYTES:
        raise CheckpointError(f"{path}: larger than {MAX_BYTES >> 20} MiB, not read")
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        raise CheckpointError(f"{path}: not JSON") from None
    return parse_checkpoint(document)


def parse_checkpoint(document: Any) -> list[PodDevices]:
    """The GPU entries of a decoded checkpoint; CheckpointError when it has none of the shape."""
    data = document.get("Data") if isinstance(document, dict) else None
    entries = data.get("PodDeviceEntries") if isinstance(data, dict) else None
    if entries is None and isinstance(data, dict):
        return []  # no pod holds a device
    if not isinstance(entries, list):
        raise CheckpointError("not a kubelet device-plugin checkpoint (no Data.PodDeviceEntries)")
    out = []
    for entry in entries[:MAX_ENTRIES]:
        if not isinstance(entry, dict):
            continue
        uid = _text(entry.get("PodUID"))
        resource = _text(entry.get("ResourceName"))
        if uid is None or resource is None or not is_gpu_resource(resource):
            continue
        ids = _device_ids(entry.get("DeviceIDs"))
        if ids:
            out.append(PodDevices(uid, _text(entry.get("ContainerName")), resource, ids))
    return out


def _device_ids(value: Any) -> tuple[str, ...]:
    """``{"0": [ids], "1": [ids]}`` (by NUMA node) or ``[ids]`` (older kubelets)."""
    if isinstance(value, dict):
        lists = [v for _numa, v in sorted(value.items(), key=lambda kv: str(kv[0]))]
    elif isinstance(value, list):
        lists = [value]
    else:
        return ()
    ids: list[str] = []
    for listed in lists:
        if not isinstance(listed, list):
            continue
        for item in listed:
            text = _text(item, MAX_ID_CHARS)
            if text is not None and text not in ids:
                ids.append(text)
            if len(ids) >= MAX_IDS:
                return tuple(ids)
    return tuple(ids)


def _text(value: Any, limit: int = MAX_NAME_CHARS) -> str | None:
    if isinstance(value, str) and value.strip() and value.isprintable():
        return value.strip()[:limit]
    return None


def grants_of(
    entries: list[PodDevices], pods: dict[str, tuple[str | None, str | None]]
) -> tuple[Grant, ...]:
    """One grant per device; ``pods``: pod UID -> (name, namespace) where known."""
    out = []
    for entry in entries:
        name, namespace = pods.get(entry.pod_uid, (None, None))
        for device in entry.device_ids:
            out.append(
                Grant(
                    scheduler="kubernetes",
                    device=device,
                    device_id=device,
                    pod_uid=entry.pod_uid,
                    pod_name=name,
                    namespace=namespace,
                    container=entry.container,
                )
            )
    return tuple(out)


__all__ = [
    "CHECKPOINT",
    "DEFAULT_KUBELET_ROOT",
    "MAX_BYTES",
    "CheckpointError",
    "PodDevices",
    "grants_of",
    "is_gpu_resource",
    "parse_checkpoint",
    "read_checkpoint",
]
