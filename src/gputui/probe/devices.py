"""Which device each probe worker opens, and checking from its ``hello`` that it opened that one.

GPU numbers in gputui are the monitoring library's (NVML / AMD-SMI) indices; a worker opens a
runtime device ``cuda:N``. The two numberings differ (CUDA orders fastest-first by default,
containers renumber, and a GPU that fell off the bus may vanish from the runtime, shifting every
later ``N``). So:

* NVIDIA: the children get ``CUDA_VISIBLE_DEVICES`` = the UUIDs of the GPUs being probed (all of
  them healthy: lost and unanswering GPUs were refused before), in target order; ``cuda:N`` is
  then exactly the N-th target whatever the runtime would otherwise number, and a GPU-to-GPU
  copy can only reach another probed GPU. A GPU with MIG enabled is probed on its first MIG slice
  (:func:`probed_slice`), and its worker gets a ``CUDA_VISIBLE_DEVICES`` of its own holding just
  that slice's UUID: CUDA enumerates one MIG device per process (with two MIG UUIDs listed,
  ``device_count()`` is 1 and ``cuda:1`` is an invalid ordinal: pytorch/pytorch#92315, NVIDIA's
  MIG user guide, "CUDA device enumeration"), so it opens it as ``cuda:0``.
* AMD: ``ROCR_VISIBLE_DEVICES`` takes the runtime's ``GPU-<16 hex>`` UUIDs, which AMD-SMI's
  device UUID is not; when the node's UUIDs are in that form they are used the same way.
  Otherwise ``ROCR_VISIBLE_DEVICES`` (Slurm sets it), ``HIP_VISIBLE_DEVICES`` and
  ``CUDA_VISIBLE_DEVICES`` are removed (they would renumber), ``N`` is the GPU's place in PCI bus
  order, and the worker is told the PCI address to open (it picks the device with that address
  where the runtime reports addresses) and the addresses of the other probed GPUs (the only
  ones a P2P copy may reach).
* Either way the worker's ``hello`` names what it opened (UUID, PCI bus id) and
  :func:`identity_check` compares it with the target, PCI function included: a mismatch drops
  that worker's results.
* An AMD GPU split into compute partitions (CPX, DPX ...; ``GpuInfo.compute_partition`` other
  than ``SPX``) is refused (:func:`partition_reason`): its partitions differ only by PCI function
  (``0000:05:00.1`` ...; ROCm/rocm_smi_lib#208, ROCm/rocm-systems#5805), and the runtime reports
  no PCI function (HIP's and CUDA's device properties carry domain, bus and device only), so
  which partition a worker opened cannot be checked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import field

from gputui.core.frozen import frozen
from gputui.core.model import GpuInfo, MigDeviceInfo, NodeInfo
from gputui.core.pci import parse_pci_bus_id
from gputui.probe.protocol import Hello
from gputui.probe.runs import Target

VISIBILITY_VARS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
ROCR_UUID = re.compile(r"GPU-[0-9a-fA-F]{16}")
MATCH, MISMATCH, UNKNOWN = "match", "mismatch", "unknown"


@frozen
class DevicePlan:
    """The targets of one run and the environment that makes their ``cuda:N`` exact."""

    targets: tuple[Target, ...]
    visible: Mapping[str, str | None] = field(default_factory=dict)
    """Visibility variables for the children: a value to set, or None to remove."""
    pinned: bool = False
    """``cuda:N`` is the N-th target by construction (its UUID is in the visible list)."""
    how: str = ""
    own: Mapping[int, Mapping[str, str | None]] = field(default_factory=dict)
    """GPU index -> visibility of its own, instead of :attr:`visible` (a MIG slice, which
    CUDA enumerates alone)."""

    def visible_for(self, target: Target) -> Mapping[str, str | None]:
        """The visibility variables of the worker probing ``target``."""
        if target.gpu is not None and target.gpu in self.own:
            return self.own[target.gpu]
        return self.visible

    @property
    def shared(self) -> tuple[Target, ...]:
        """The targets that see each other (:attr:`visible`), in ``cuda:N`` order."""
        return tuple(t for t in self.targets if t.gpu not in self.own)


def cuda_index_map(node: NodeInfo) -> dict[int, int]:
    """NVML index -> ``cuda:N`` in PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID, every GPU of
    the node visible to the runtime)."""
    gpus = list(node.gpus)
    bus_ids = {g.index: g.pci_bus_id for g in gpus if g.pci_bus_id}
    if len(bus_ids) == len(gpus):
        order = sorted(gpus, key=lambda g: bus_ids[g.index].lower())
    else:
        order = sorted(gpus, key=lambda g: g.index)
    return {g.index: i for i, g in enumerate(order)}


def probed_slice(info: GpuInfo) -> MigDeviceInfo | None:
    """The MIG slice a GPU in MIG mode is probed on (its first slice with a UUID); None for a
    GPU without MIG (probed whole)."""
    if not info.mig_enabled:
        return None
    return next((m for m in info.mig_devices if m.uuid), None)


def runtime_uuid(info: GpuInfo) -> str | None:
    """What the runtime's visibility variable takes for this GPU: its probed MIG slice's UUID
    when MIG is on (a MIG-enabled GPU's own UUID opens nothing), else the GPU's UUID."""
    mig = probed_slice(info)
    if mig is not None:
        return mig.uuid
    return info.uuid or None


def partition_reason(info: GpuInfo) -> str | None:
    """Why a GPU split into compute partitions is not probed (see the module doc), or None."""
    mode = (info.compute_partition or "").strip().upper()
    if not mode or mode == "SPX":
        return None
    return (
        f"GPU {info.index} is one compute partition of a GPU in {mode} mode: its partitions "
        "differ only by PCI function, which the runtime does not report, so which partition a "
        "probe worker opened cannot be checked. It is not probed (not even with --force); "
        "switch the GPU to SPX (amd-smi set --compute-partition SPX) to probe it."
    )


def _nvidia_plan(infos: Sequence[GpuInfo], ids: Sequence[str | None]) -> DevicePlan:
    """Pinned by UUID: the whole GPUs see each other as cuda:0, cuda:1 ... in this order; each
    MIG slice is alone in its worker's CUDA_VISIBLE_DEVICES, as cuda:0."""
    targets: list[Target] = []
    shared: list[str] = []
    own: dict[int, dict[str, str | None]] = {}
    for info, uid in zip(infos, ids, strict=True):
        assert uid is not None
        if probed_slice(info) is not None:
            own[info.index] = {"CUDA_VISIBLE_DEVICES": uid}
            device = "cuda:0"
        else:
            device = f"cuda:{len(shared)}"
            shared.append(uid)
        targets.append(Target(info.index, device, f"GPU {info.index}", uid, info.pci_bus_id))
    how = "CUDA_VISIBLE_DEVICES lists the probed GPUs' UUIDs; each hello is checked"
    if own:
        how += "; a MIG slice's worker sees that slice alone (CUDA enumerates one per process)"
    return DevicePlan(
        tuple(targets),
        {"CUDA_VISIBLE_DEVICES": ",".join(shared)},
        pinned=True,
        how=how,
        own=own,
    )


def plan_devices(node: NodeInfo, indices: Sequence[int]) -> DevicePlan:
    """The targets for ``indices`` (NVML indices, in this order) and their visibility."""
    infos = [info for i in indices if (info := node.gpu(i)) is not None]
    ids = [runtime_uuid(info) for info in infos]
    vendors = {info.vendor for info in infos}
    # Pinned by UUID: the runtime sees exactly these GPUs, as cuda:0, cuda:1 ... in this order.
    pinned_targets = tuple(
        Target(info.index, f"cuda:{n}", f"GPU {info.index}", uid, info.pci_bus_id)
        for n, (info, uid) in enumerate(zip(infos, ids, strict=True))
    )
    value = ",".join(uid for uid in ids if uid)
    if infos and vendors == {"nvidia"} and all(ids):
        return _nvidia_plan(infos, ids)
    if infos and vendors == {"amd"} and all(uid and ROCR_UUID.fullmatch(uid) for uid in ids):
        return DevicePlan(
            pinned_targets,
            {
                "ROCR_VISIBLE_DEVICES": value,
                "HIP_VISIBLE_DEVICES": None,
                "CUDA_VISIBLE_DEVICES": None,
            },
            pinned=True,
            how="ROCR_VISIBLE_DEVICES lists the probed GPUs' UUIDs; each hello is checked",
        )
    order = cuda_index_map(node)
    targets = tuple(
        Target(
            info.index,
            f"cuda:{order.get(info.index, info.index)}",
            f"GPU {info.index}",
            info.uuid or None,
            info.pci_bus_id,
        )
        for info in infos
    )
    return DevicePlan(
        targets,
        {name: None for name in VISIBILITY_VARS},
        pinned=False,
        how="PCI bus order (the workers open their GPU by PCI bus id where the runtime reports "
        "it); each hello is checked",
    )


def normalize_uuid(text: str | None) -> str | None:
    """``GPU-6C9B…`` / ``MIG-…`` / ``6c9b…`` -> ``6c9b…``; None for none or an old-style MIG
    name (``MIG-GPU-<uuid>/1/0``), which no runtime prints."""
    if not text or "/" in text:
        return None
    out = text.strip().lower()
    for prefix in ("mig-", "gpu-"):
        out = out.removeprefix(prefix)
    return out or None


def identity_check(target: Target, hello: Hello) -> tuple[str, str]:
    """Did the worker open ``target``? (MATCH | MISMATCH | UNKNOWN, why in words).

    The UUID is compared on NVIDIA (the runtime prints NVML's UUID without ``GPU-``); the PCI
    address on both vendors (AMD-SMI's UUID is not the runtime's, so on ROCm only the address
    says), function included: where the hello names no function (the runtimes report domain,
    bus and device only), the address proves the device only for a target at function 0, the
    one function a GPU that is not partitioned has."""
    if target.gpu is None:
        return MATCH, "the CPU"
    opened = f"{hello.device_name} (cuda:{hello.device_index})"
    checked: list[str] = []
    want_uuid, got_uuid = normalize_uuid(target.uuid), normalize_uuid(hello.uuid)
    if hello.device_kind == "cuda" and want_uuid and got_uuid:
        if want_uuid != got_uuid:
            return MISMATCH, (
                f"{target.label}: the worker opened another GPU: {opened} has UUID "
                f"{hello.uuid}, not {target.uuid}; its results are not used"
            )
        checked.append("UUID")
    want_pci, got_pci = parse_pci_bus_id(target.pci_bus_id), parse_pci_bus_id(hello.pci_bus_id)
    if want_pci is not None and got_pci is not None:
        if want_pci.device_key != got_pci.device_key or (
            want_pci.function is not None
            and got_pci.function is not None
            and want_pci.function != got_pci.function
        ):
            return MISMATCH, (
                f"{target.label}: the worker opened another GPU: {opened} is at PCI "
                f"{hello.pci_bus_id}, not {target.pci_bus_id}; its results are not used"
            )
        if got_pci.function is not None or not want_pci.function:
            checked.append("PCI bus id")
        elif not checked:
            return MISMATCH, (
                f"{target.label}: cannot tell which function of PCI device {hello.pci_bus_id} "
                f"the worker opened (the runtime reports no PCI function; {target.label} is "
                f"at {target.pci_bus_id}); its results are not used"
            )
    if checked:
        return MATCH, f"{target.label}: the worker opened it ({' and '.join(checked)} checked)"
    return UNKNOWN, (
        f"{target.label}: could not check which GPU the worker opened (the runtime reports no "
        "UUID or PCI bus id to compare); results are attributed by the device numbering"
    )


def peer_index(
    details: Mapping[str, object], node: NodeInfo | None, plan: DevicePlan | None
) -> int | None:
    """The NVML index of a P2P result's destination: by UUID, else PCI bus id, else (when the
    numbering is pinned) its ``cuda:N`` place among the targets; None when nothing says."""
    uid = details.get("dst_uuid")
    bus = details.get("dst_pci_bus_id")
    gpus = node.gpus if node is not None else ()
    want = normalize_uuid(uid) if isinstance(uid, str) else None
    if want:
        for info in gpus:
            names = [info.uuid, *(m.uuid for m in info.mig_devices)]
            if any(normalize_uuid(n) == want for n in names):
                return info.index
    address = parse_pci_bus_id(bus) if isinstance(bus, str) else None
    if address is not None:
        for info in gpus:
            mine = parse_pci_bus_id(info.pci_bus_id)
            if mine is not None and mine.device_key == address.device_key:
                return info.index
    dst = details.get("dst")
    pinned = plan is not None and plan.pinned
    if pinned and isinstance(dst, int) and not isinstance(dst, bool) and plan is not None:
        shared = plan.shared  # a MIG slice's worker sees no other GPU: never a destination
        return shared[dst].gpu if 0 <= dst < len(shared) else None
    return None
