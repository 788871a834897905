"""Which GPUs a command is about: ``--gpus`` (NVML indices or GPU / MIG UUIDs), else
``CUDA_VISIBLE_DEVICES``, else every GPU of the node. Used by ``check``, ``probe`` and ``pick``."""

from __future__ import annotations

import os
from collections.abc import Mapping

from gputui.core.frozen import frozen
from gputui.core.model import NodeInfo

CUDA_ORDER_NOTE = (
    "GPU numbers are NVML indices; CUDA numbers devices fastest-first unless "
    "CUDA_DEVICE_ORDER=PCI_BUS_ID, so CUDA's device 0 may be another GPU (UUIDs are exact)"
)
NO_GPU_VALUES = frozenset({"", "-1", "NoDevFiles", "none"})


@frozen
class Selection:
    """Which GPUs are judged, and why."""

    indices: frozenset[int] | None
    """None: every GPU of the node."""
    source: str
    """``all``, ``--gpus`` or ``CUDA_VISIBLE_DEVICES``."""
    unknown: tuple[str, ...] = ()
    """Entries naming no GPU of this node (only from CUDA_VISIBLE_DEVICES; --gpus rejects them)."""
    notes: tuple[str, ...] = ()
    none_visible: str | None = None
    """Why no GPU is visible at all (CUDA_VISIBLE_DEVICES empty, ``-1``, garbage or naming only
    GPUs this node does not have): a job would see no GPU, which a check fails."""


def split_gpu_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _match(token: str, node: NodeInfo) -> int | None:
    """An NVML index, a GPU UUID or a MIG UUID (or a unique prefix of one, as CUDA accepts)."""
    if token.isdigit():
        index = int(token)
        return index if node.gpu(index) is not None else None
    hits = set()
    for info in node.gpus:
        if info.uuid.startswith(token):
            hits.add(info.index)
        for mig in info.mig_devices:
            if mig.uuid.startswith(token):
                hits.add(info.index)
    return hits.pop() if len(hits) == 1 else None


def select_gpus(
    node: NodeInfo, gpus: str | None, environ: Mapping[str, str] | None = None
) -> Selection:
    """``--gpus`` wins; else ``CUDA_VISIBLE_DEVICES``; else every GPU. Raises ValueError when
    ``--gpus`` names a GPU this node does not have."""
    env = os.environ if environ is None else environ
    if gpus is not None:
        tokens = split_gpu_list(gpus)
        chosen = {t: _match(t, node) for t in tokens}
        bad = [t for t, i in chosen.items() if i is None]
        if bad or not tokens:
            have = ", ".join(str(g.index) for g in node.gpus) or "none"
            raise ValueError(
                f"--gpus {gpus}: no such GPU {', '.join(bad) or '(empty list)'} "
                f"(this node has GPUs {have}; indices or GPU-/MIG- UUIDs)"
            )
        return Selection(frozenset(i for i in chosen.values() if i is not None), "--gpus")
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return Selection(None, "all")
    if visible.strip() in NO_GPU_VALUES:
        return Selection(
            frozenset(),
            "CUDA_VISIBLE_DEVICES",
            none_visible=f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU",
        )
    indices: set[int] = set()
    unknown: list[str] = []
    notes: list[str] = []
    for token in split_gpu_list(visible):
        if not (token.isdigit() or token.startswith(("GPU-", "MIG-"))):
            notes.append(
                f"CUDA_VISIBLE_DEVICES: {token!r} is not a device; CUDA ignores it and after"
            )
            break  # CUDA stops at the first entry it cannot parse
        index = _match(token, node)
        if index is None:
            unknown.append(token)
        else:
            indices.add(index)
    if any(t.isdigit() for t in split_gpu_list(visible)) and (
        env.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID"
    ):
        notes.append(CUDA_ORDER_NOTE)
    none_visible = None
    if not indices and not unknown:  # unknown devices are findings of their own
        none_visible = f"CUDA_VISIBLE_DEVICES={visible!r} names no device"
    return Selection(
        frozenset(indices),
        "CUDA_VISIBLE_DEVICES",
        tuple(unknown),
        tuple(notes),
        none_visible=none_visible,
    )


__all__ = ["CUDA_ORDER_NOTE", "NO_GPU_VALUES", "Selection", "select_gpus", "split_gpu_list"]
