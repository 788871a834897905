"""The vendor-neutral data model shared by every backend, the sampler, the TUI and the CLI.

Every class here is a small ``@frozen`` record (:mod:`gputui.core.frozen`). A field that the
hardware, driver or library does not support is ``None`` (never 0 and never an exception). Units
live in field names (``_bytes``, ``_w``, ``_c``, ``_mhz``, ``_pct``, ``_bytes_per_s``) so the JSON
form needs no separate legend.

The JSON form of a :class:`Snapshot` (:mod:`gputui.core.codec`) is documented in
``docs/snapshot-schema.md``; bump :data:`SCHEMA_VERSION` whenever a field is renamed or removed
(adding a field is compatible) and add a migration step to :data:`gputui.core.codec.MIGRATIONS`.
"""

from __future__ import annotations

from typing import Literal

from gputui.core.allocation import Allocation, SchedulerStatus
from gputui.core.frozen import frozen
from gputui.core.performance import Performance

SCHEMA_VERSION = 1
MAX_NAME_CHARS = 256
"""Characters kept of a name from outside (a process's name and user, a Slurm job's name and
user, a container's, a pod's and its namespace) where it enters the model: their users choose
them, megabytes included."""
MAX_COMMAND_CHARS = 64 * 1024
"""Bytes of ``/proc/PID/cmdline`` read, and characters of a command line shown (any user can
start a process whose arguments are megabytes)."""

Vendor = Literal["nvidia", "amd"]
ProcessType = Literal["compute", "graphics", "compute+graphics"]
Severity = Literal["ok", "info", "warn", "fail"]
Action = Literal["none", "watch", "restart_job", "reset_gpu", "reboot", "drain", "replace"]
"""What to do about a finding, one vocabulary for NVIDIA and AMD (``gputui.health.actions``)."""
PidNamespace = Literal["host", "container", "unknown"]
SEVERITY_ORDER: dict[str, int] = {"ok": 0, "info": 1, "warn": 2, "fail": 3}
"""Severities from harmless to failing; compare with ``SEVERITY_ORDER[a] > SEVERITY_ORDER[b]``."""

# Throttle / clock-event reasons, as vendor-neutral names. Backends map their bitmasks onto these.
THROTTLE_REASONS: dict[str, str] = {
    "gpu_idle": "idle",
    "applications_clocks": "application clocks setting",
    "sw_power_cap": "power cap",
    "hw_slowdown": "HW slowdown",
    "sync_boost": "sync boost",
    "sw_thermal": "SW thermal slowdown",
    "hw_thermal": "HW thermal slowdown",
    "hw_power_brake": "HW power brake",
    "display_clocks": "display clock setting",
    "board_limit": "board limit",
    "reliability": "reliability limit",
}
"""Canonical throttle-reason names mapped to the short words the UI shows."""

THROTTLE_TROUBLE = frozenset({"hw_slowdown", "hw_thermal", "hw_power_brake", "sw_thermal"})
"""Reasons that point at a problem (as opposed to idle or a power cap under load)."""


def describe_throttle(reasons: frozenset[str] | None) -> str:
    """Words for a set of throttle reasons, trouble first; '' when none are active."""
    if not reasons:
        return ""
    ordered = sorted(reasons, key=lambda r: (r not in THROTTLE_TROUBLE, r))
    return ", ".join(THROTTLE_REASONS.get(r, r.replace("_", " ")) for r in ordered)


@frozen
class MigDeviceInfo:
    """A MIG slice of an NVIDIA GPU (static)."""

    parent_index: int
    gpu_instance_id: int
    compute_instance_id: int
    uuid: str
    name: str | None = None
    memory_total_bytes: int | None = None
    sm_count: int | None = None


@frozen
class GpuInfo:
    """What does not change while a GPU is up: read once, at start-up (the static tier)."""

    index: int
    name: str
    uuid: str
    vendor: Vendor
    pci_bus_id: str | None = None
    architecture: str | None = None
    # CUDA compute capability ("9.0") for NVIDIA, gfx target ("gfx942") for AMD.
    compute_capability: str | None = None
    sm_count: int | None = None
    memory_total_bytes: int | None = None
    power_default_limit_w: float | None = None
    power_min_limit_w: float | None = None
    power_max_limit_w: float | None = None
    sm_clock_max_mhz: int | None = None
    memory_clock_max_mhz: int | None = None
    graphics_clock_max_mhz: int | None = None
    pcie_max_gen: int | None = None
    """The highest PCIe generation the GPU *and its slot / host* allow: what the link should
    train to (NVML ``MaxPcieLinkGeneration``). Health judges the link against this."""
    pcie_max_width: int | None = None
    pcie_gpu_max_gen: int | None = None
    """What the GPU alone supports (NVML ``GpuMaxPcieLinkGeneration``), shown as information: a
    Gen5 GPU in a Gen4 host is normal, not a fault."""
    temperature_slowdown_c: float | None = None
    """Limit of the main sensor (``GpuSample.temperature_gpu_c``): NVIDIA's slowdown threshold,
    AMD's edge critical temperature (or the hotspot's where the GPU reports it as its main one)."""
    temperature_shutdown_c: float | None = None
    temperature_hotspot_limit_c: float | None = None
    """Limit of the hotspot / junction sensor (``temperature_hotspot_c``)."""
    temperature_memory_limit_c: float | None = None
    """Limit of the memory (HBM / VRAM) sensor (``temperature_memory_c``): NVML's
    ``NVML_TEMPERATURE_THRESHOLD_MEM_MAX``, AMD's VRAM critical temperature."""
    fan_count: int | None = None
    mig_enabled: bool | None = None
    mig_devices: tuple[MigDeviceInfo, ...] = ()
    ecc_enabled: bool | None = None
    persistence_mode: bool | None = None
    vbios_version: str | None = None
    serial: str | None = None
    host_link: str | None = None
    """How the GPU reaches the CPU: ``pcie``, or ``nvlink-c2c`` on Grace Hopper / Grace
    Blackwell (GH200, GB200, GB10), whose PCIe queries answer a placeholder Gen1 x1; None when
    unknown."""
    host_link_bandwidth_gbs: float | None = None
    """The NVLink-C2C host link's bandwidth in GB/s per direction, where the driver says
    (all active C2C links together); None for PCIe (its bandwidth follows from gen and width)."""
    virtualization_mode: str | None = None
    """``none`` (bare metal), ``passthrough`` (a whole GPU handed to a VM), ``vgpu`` (a vGPU
    guest: the host owns ECC and persistence), ``host_vgpu`` / ``host_vsga`` (the hypervisor's
    view); None when unknown."""
    fabric_state: str | None = None
    """NVIDIA NVSwitch fabric (``nvmlDeviceGetGpuFabricInfoV``): ``not_supported`` (no fabric:
    a PCIe card, NVLink bridges), ``not_started``, ``in_progress`` (links not trained yet) or
    ``completed``; None where the driver cannot say."""
    fabric_error: str | None = None
    """The error the fabric's set-up of this GPU ended with (state ``completed``); None if none."""
    compute_partition: str | None = None
    """AMD compute partitioning of the physical GPU this device belongs to: ``SPX`` (one
    device), ``DPX``, ``TPX``, ``QPX``, ``CPX`` (several devices that differ only by PCI
    function); None when not partitionable or unknown."""
    compute_partition_index: int | None = None
    """Which partition of its physical GPU this device is in a mode other than SPX: 0 for the
    primary, the only one that reports the device-wide readings (power, temperatures, PCIe, ECC,
    XGMI); those of the others are None. None when not partitioned."""
    minor_number: int | None = None
    """NVIDIA: the device node's minor number (``/dev/nvidiaN``, ``nvmlDeviceGetMinorNumber``),
    which Slurm's GRES index names (:mod:`gputui.core.allocation`); it need not equal the NVML
    index. None when unknown (AMD, a driver that does not say)."""


@frozen
class LinkInfo:
    """One NVLink (NVIDIA) or XGMI (AMD) link of a GPU, as discovered at start-up."""

    gpu_index: int
    link: int
    kind: str
    """``nvlink`` or ``xgmi``."""
    version: int | None = None
    """The link generation as its users name it: NVLink 4 on H100 is ``4`` (NVML reports an enum
    that is not the version number; adapters decode it)."""
    speed_gbps: float | None = None
    """Signalling rate of the whole link (all its lanes) in Gb/s per direction, so NVLink and
    XGMI compare: an H100 NVLink 4 link is 212.5 Gb/s (26.6 GB/s, as nvidia-smi shows it; 25 GB/s
    of payload), an MI300X XGMI link 512 Gb/s (64 GB/s)."""
    remote_type: str | None = None
    """``gpu``, ``switch`` (NVSwitch), ``cpu`` or None when unknown."""
    remote_gpu_index: int | None = None
    remote_pci_bus_id: str | None = None


@frozen
class GpuPath:
    """How GPU ``a`` reaches GPU ``b`` (one entry per unordered pair, ``a < b``)."""

    a: int
    b: int
    pcie_level: str | None = None
    """Closest common PCIe ancestor as ``nvidia-smi topo -m`` names it: ``PIX`` (one switch),
    ``PXB`` (several switches), ``PHB`` (host bridge), ``NODE`` (same NUMA node), ``SYS``
    (across NUMA nodes); None when unknown."""
    link_type: str | None = None
    """AMD only: ``xgmi`` or ``pcie`` as amdsmi_topo_get_link_type reports it."""
    hops: int | None = None
    weight: int | None = None
    p2p_read: bool | None = None
    p2p_write: bool | None = None


@frozen
class GpuLocality:
    """Where a GPU sits relative to the CPUs, as ``nvidia-smi topo -m`` shows it."""

    gpu_index: int
    cpu_affinity: str | None = None
    """CPU list in ``taskset`` form, e.g. ``0-55,112-167``."""
    numa_node: int | None = None


@frozen
class Topology:
    """The static wiring of a node: GPU pairs, NVLink/XGMI links, CPU locality."""

    paths: tuple[GpuPath, ...] = ()
    links: tuple[LinkInfo, ...] = ()
    locality: tuple[GpuLocality, ...] = ()

    def path(self, a: int, b: int) -> GpuPath | None:
        lo, hi = min(a, b), max(a, b)
        for path in self.paths:
            if path.a == lo and path.b == hi:
                return path
        return None

    def links_of(self, gpu_index: int) -> tuple[LinkInfo, ...]:
        return tuple(link for link in self.links if link.gpu_index == gpu_index)


@frozen
class LinkSample:
    """One reading of one NVLink / XGMI link (slow tier)."""

    link: int
    up: bool | None = None
    """True active, False down (it was active earlier, or it has a remote end it should reach),
    None unknown or not in use (see ``unused``)."""
    rx_bytes_per_s: float | None = None
    tx_bytes_per_s: float | None = None
    replay_errors: int | None = None
    recovery_errors: int | None = None
    crc_errors: int | None = None
    unused: bool = False
    """Inactive since gputui started, with no remote end: a link that is not wired or not set
    up (a one-GPU VM carved out of an HGX board, an HGX partition without the fabric), not a
    link that went down."""


@frozen
class MigSample:
    """Per-tick reading of one MIG slice."""

    uuid: str
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None


@frozen
class GpuSample:
    """One reading of one GPU. ``lost`` means the GPU stopped answering (fell off the bus)."""

    index: int
    timestamp: float
    lost: bool = False
    error: str | None = None
    utilization_gpu_pct: float | None = None
    utilization_memory_pct: float | None = None
    memory_used_bytes: int | None = None
    memory_free_bytes: int | None = None
    memory_reserved_bytes: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    energy_j: float | None = None
    temperature_gpu_c: float | None = None
    temperature_hotspot_c: float | None = None
    temperature_memory_c: float | None = None
    fan_pct: float | None = None
    clock_sm_mhz: int | None = None
    clock_memory_mhz: int | None = None
    clock_graphics_mhz: int | None = None
    pstate: int | None = None
    pcie_gen: int | None = None
    pcie_width: int | None = None
    pcie_rx_bytes_per_s: float | None = None
    pcie_tx_bytes_per_s: float | None = None
    nvlink_rx_bytes_per_s: float | None = None
    nvlink_tx_bytes_per_s: float | None = None
    encoder_pct: float | None = None
    decoder_pct: float | None = None
    ecc_volatile_corrected: int | None = None
    ecc_volatile_uncorrected: int | None = None
    ecc_aggregate_corrected: int | None = None
    ecc_aggregate_uncorrected: int | None = None
    retired_pages_pending: bool | None = None
    remapped_rows_correctable: int | None = None
    remapped_rows_uncorrectable: int | None = None
    remapped_rows_pending: bool | None = None
    remapped_rows_failure: bool | None = None
    throttle_reasons: frozenset[str] | None = None
    mig_devices: tuple[MigSample, ...] = ()
    links: tuple[LinkSample, ...] | None = None
    """Per-link state, throughput and error counters (NVLink / XGMI), slow tier; ``()`` for a GPU
    without links, None when not read."""
    process_list_incomplete: bool | None = None
    """True when the driver's process list for this GPU may leave processes out: AMD, a caller
    without root got an empty list while VRAM was in use (ROCm before its 2026 fix hides other
    users' processes from such callers). False when the list was read and looks whole; None when
    not read. Slow tier."""
    unanswered: tuple[tuple[str, str], ...] = ()
    """The readings that say what a GPU is doing which failed with an error (not "not
    supported"): ``(reading, error)`` for ``utilization`` and ``memory`` in this reading, and
    ``processes`` in the last read of the process list, e.g. ``("memory", "Unknown Error")``."""
    performance: Performance | None = None
    """Why it runs as fast as it does, judged by the engine over the last readings (None: not
    judged, e.g. a reading from an older recording)."""

    @property
    def memory_total_bytes(self) -> int | None:
        """used + free (+ reserved when the driver splits it out), or None when unknown."""
        if self.memory_used_bytes is None or self.memory_free_bytes is None:
            return None
        return self.memory_used_bytes + self.memory_free_bytes + (self.memory_reserved_bytes or 0)


SLOW_TIER_FIELDS: tuple[str, ...] = (
    "pcie_rx_bytes_per_s",
    "pcie_tx_bytes_per_s",
    "nvlink_rx_bytes_per_s",
    "nvlink_tx_bytes_per_s",
    "ecc_volatile_corrected",
    "ecc_volatile_uncorrected",
    "ecc_aggregate_corrected",
    "ecc_aggregate_uncorrected",
    "retired_pages_pending",
    "remapped_rows_correctable",
    "remapped_rows_uncorrectable",
    "remapped_rows_pending",
    "remapped_rows_failure",
    "links",
    "process_list_incomplete",
)
"""GpuSample fields every backend fills only on slow-tier reads (rates, error counters, links)."""

SLOWLY_CHANGING_FIELDS: tuple[str, ...] = (
    "pstate",
    "pcie_gen",
    "pcie_width",
    "encoder_pct",
    "decoder_pct",
    "clock_graphics_mhz",
    "fan_pct",
)
"""GpuSample fields a backend may read on slow-tier reads only, to save driver calls."""

SLOW_SAMPLE_FIELDS: tuple[str, ...] = SLOW_TIER_FIELDS + SLOWLY_CHANGING_FIELDS
"""What the sampler carries from the last slow read into the fast reads that leave it None."""


@frozen
class ProcessSample:
    """A process using a GPU: GPU-side facts from the backend, host-side facts from psutil."""

    pid: int
    gpu_index: int
    type: ProcessType = "compute"
    gpu_memory_bytes: int | None = None
    sm_pct: float | None = None
    user: str | None = None
    name: str | None = None
    command: str | None = None
    cpu_pct: float | None = None
    host_rss_bytes: int | None = None
    start_time: float | None = None
    container_id: str | None = None
    mig_uuid: str | None = None
    exited: bool = False
    """The process had exited by the time its host facts were read (it was listed by the driver
    a moment earlier): not somebody else's job, and soon gone. Set only where that is proven:
    in the host's PID namespace, with a ``/proc`` that hides no process (no ``hidepid``)."""
    not_visible: bool = False
    """The PID names no process gputui can see (gputui runs in another PID namespace, or
    ``/proc`` hides other users' processes): whoever holds the GPU is unknown, not gone."""
    kernel_thread: bool = False
    """The PID names a kernel thread (a garbled driver record can): never offered a signal
    (see :mod:`gputui.host.procstat`)."""
    # Who the process works for, from its cgroup (``/proc/PID/cgroup``) and, where readable, the
    # container engine's and kubelet's own state (see :mod:`gputui.host.attribution`).
    container_runtime: str | None = None
    """``docker``, ``containerd``, ``cri-o`` or ``podman``; None when not in a container or
    the engine cannot be told from the cgroup."""
    container_name: str | None = None
    """The container's name from the engine's state (Docker's name, the Kubernetes container
    name, Podman's name); None where it cannot be read (show the short id instead)."""
    slurm_job_id: str | None = None
    """The Slurm job the process runs in (the numeric id of its cgroup, ``job_4242``)."""
    slurm_step: str | None = None
    """The job step: ``0``, ``1`` ..., ``batch``, ``extern``, ``interactive``."""
    slurm_job_name: str | None = None
    """The job's name and user from ``scontrol show job`` where Slurm's tools are installed;
    looked up in the background, so they arrive a reading or two after the id."""
    slurm_job_user: str | None = None
    k8s_pod_uid: str | None = None
    """The Kubernetes pod's UID (with dashes) from a ``kubepods`` cgroup."""
    k8s_pod_name: str | None = None
    """The pod's name where this node shows it (the runtime's annotations, or the pod's
    ``etc-hosts`` kept by the kubelet)."""
    k8s_namespace: str | None = None
    ppid: int | None = None
    """The parent's PID (the process tree groups processes under it); None where not read."""
    parent_name: str | None = None
    """The parent's name (``torchrun``, ``bash``), read with ``ppid``."""

    def running_for(self, now: float) -> float | None:
        """Seconds since the process started, as of ``now`` (a snapshot's timestamp)."""
        return None if self.start_time is None else max(now - self.start_time, 0.0)


@frozen
class HostSample:
    """The host around the GPUs."""

    timestamp: float
    cpu_pct: float | None = None
    per_core_pct: tuple[float, ...] = ()
    memory_total_bytes: int | None = None
    memory_used_bytes: int | None = None
    memory_available_bytes: int | None = None
    swap_total_bytes: int | None = None
    swap_used_bytes: int | None = None
    load_average: tuple[float, float, float] | None = None
    uptime_s: float | None = None


@frozen
class GpuEvent:
    """Something that happened at a moment, as opposed to a reading: an XID error reported by the
    driver, a double-bit ECC error, a GPU falling off the bus."""

    timestamp: float
    kind: str
    """``xid``, ``ecc_double_bit``, ``ecc_single_bit``, ``gpu_lost`` ...; from the kernel log
    also ``driver_loaded`` (node-wide) and ``gpu_reinitialized`` (one GPU found on the PCI bus
    again), which are no faults but mark XIDs before them as history."""
    gpu_index: int | None = None
    code: int | None = None
    """The XID number for ``xid`` events."""
    message: str | None = None
    source: str = "driver"
    """``driver`` (NVML / AMD-SMI events), ``kernel_log`` (dmesg) or ``sim``."""
    gpu_instance_id: int | None = None
    """MIG: the GPU instance the driver attributed the event to (``GPU-I:05`` in the kernel
    log); None when the GPU is not in MIG mode or the driver did not say."""
    compute_instance_id: int | None = None
    """MIG: the compute instance within that GPU instance (``GPU-CI:02``), where the driver
    says."""


@frozen
class Finding:
    """One health finding: what is wrong (or worth knowing), on which GPU, and what to do."""

    rule: str
    """Stable rule id (``gpu_lost``, ``ecc_uncorrected`` ...), usable with ``--ignore``."""
    severity: Severity
    message: str
    hint: str = ""
    gpu_index: int | None = None
    key: str = ""
    """Identity across readings (rule, GPU and subject), so one condition is one finding."""
    first_seen: float | None = None
    last_seen: float | None = None
    active: bool = True
    """False once the condition has cleared; the finding stays listed until acknowledged."""
    action: Action = "none"
    """What to do about it: ``none``, ``watch``, ``restart_job``, ``reset_gpu``, ``reboot``,
    ``drain`` or ``replace``."""


@frozen
class NodeInfo:
    """The node as a backend sees it once it is open (the static tier)."""

    hostname: str
    backend: str
    gpus: tuple[GpuInfo, ...]
    driver_version: str | None = None
    # CUDA driver API version ("12.4") for NVIDIA, ROCm version for AMD.
    runtime_version: str | None = None
    library_version: str | None = None
    topology: Topology | None = None
    """None when the backend did not (or could not) discover the wiring."""
    simulated: bool = False
    """A simulated node (``--demo``): there is no real GPU to act on (probe, reset)."""
    open_seconds: float | None = None
    """How long opening the library and the GPUs took: seconds a GPU without persistence mode
    spends being initialised show here (None for a simulated or replayed node)."""
    inaccessible_gpus: tuple[int, ...] = ()
    """Indices of GPUs the driver counts but this user may not open (NVML answers
    NO_PERMISSION: a container or cgroup denies their device nodes). Not in ``gpus``: not read,
    not judged, not lost."""
    pid_namespace: PidNamespace | None = None
    """Where gputui ran: ``host`` (the PIDs the driver reports name processes here), ``container``
    (another PID namespace: they are host PIDs, not looked up and never signalled) or ``unknown``
    (treated like ``container``); None where the backend reports its own processes (a simulated
    node) or the recording is older (see :mod:`gputui.host.pidns`)."""

    def gpu(self, index: int) -> GpuInfo | None:
        for info in self.gpus:
            if info.index == index:
                return info
        return None


@frozen
class Stall:
    """The backend has not answered the current reading: a driver call that hangs (a sick GPU, a
    wedged driver). The snapshot then repeats the last complete reading, marked with this."""

    since: float
    """When the unanswered reading started (the sampler's clock)."""
    gpu_index: int | None = None
    """The GPU being read when the backend stopped answering, where the backend says."""
    last_reading: float | None = None
    """Timestamp of the last complete reading, whose values the snapshot repeats (None: none)."""


@frozen
class GpuUsage:
    """What one GPU did since the session started (see :mod:`gputui.core.usage`): the energy it used
    and how long it sat idle. Seconds count only time the GPU was read (a gap between readings
    counts up to three intervals; a lost GPU's time is not counted)."""

    index: int
    observed_s: float = 0.0
    """Seconds with a utilization reading: the base of the idle share."""
    idle_s: float = 0.0
    """Seconds with utilization below ``Usage.idle_util_pct``."""
    held_idle_s: float = 0.0
    """Of ``idle_s``, the seconds with more than ``Usage.held_memory_bytes`` of GPU memory in
    use: idle but held by somebody."""
    energy_used_j: float | None = None
    """Joules used since the session started, from the GPU's energy counter (summed over the
    readings, so a counter reset loses one interval, not the total); None without a counter."""
    idle: bool | None = None
    """Idle in this reading; None when not known (lost, utilization not reported)."""
    held_idle: bool | None = None
    """Idle with memory held in this reading; None when not known."""


@frozen
class Usage:
    """Energy and idle accounting of the node since ``since`` (the session's first reading),
    with the thresholds it used and, when a price per GPU-hour is set, what idle GPUs cost."""

    since: float
    idle_util_pct: float = 5.0
    """A GPU whose utilization is below this counts as idle."""
    held_memory_bytes: int = 1024**3
    """An idle GPU with more than this much memory in use counts as "held idle"."""
    gpu_hour_price: float | None = None
    """What one GPU-hour costs (``--gpu-hour-price``), in the user's currency; None: not set."""
    gpus: tuple[GpuUsage, ...] = ()
    gpus_counted: int = 0
    """GPUs whose idleness is known in this reading (not lost, utilization reported)."""
    idle_gpus: int = 0
    """GPUs idle in this reading."""
    held_idle_gpus: int = 0
    """Of ``idle_gpus``, those with memory held."""
    idle_share: float | None = None
    """``idle_gpus / gpus_counted`` in this reading (0-1); None when no GPU is counted."""
    idle_cost_per_hour: float | None = None
    """``idle_gpus x gpu_hour_price``: what the idle GPUs cost per hour now; None without a
    price."""
    held_idle_cost_per_hour: float | None = None
    observed_gpu_hours: float = 0.0
    idle_gpu_hours: float = 0.0
    held_idle_gpu_hours: float = 0.0
    idle_cost: float | None = None
    """``idle_gpu_hours x gpu_hour_price`` over the session; None without a price."""

    def gpu(self, index: int) -> GpuUsage | None:
        for usage in self.gpus:
            if usage.index == index:
                return usage
        return None


@frozen
class Snapshot:
    """Everything known about the node at one moment. Immutable: safe to hand across threads."""

    timestamp: float
    node: NodeInfo
    gpus: tuple[GpuSample, ...]
    processes: tuple[ProcessSample, ...] = ()
    host: HostSample | None = None
    findings: tuple[Finding, ...] = ()
    """Health findings as of this reading (active ones, and cleared ones not yet acknowledged)."""
    events: tuple[GpuEvent, ...] = ()
    """Events that arrived since the previous reading."""
    stall: Stall | None = None
    """Set when the backend has not answered within the reading's deadline: the values are those
    of ``stall.last_reading`` (stale), and a ``not_responding`` finding says for how long."""
    usage: Usage | None = None
    """Energy and idle time per GPU since the session started (None: not accounted, e.g. a
    reading from an older recording)."""
    allocations: tuple[Allocation, ...] = ()
    """Who the scheduler allocated each GPU to and whether it is used
    (:mod:`gputui.core.allocation`); () when no scheduler answers."""
    schedulers: tuple[SchedulerStatus, ...] = ()
    """The schedulers asked (Slurm, the kubelet) and whether they answered; () when none is."""
    schema_version: int = SCHEMA_VERSION

    def sample(self, index: int) -> GpuSample | None:
        for sample in self.gpus:
            if sample.index == index:
                return sample
        return None

    def processes_on(self, index: int) -> tuple[ProcessSample, ...]:
        return tuple(p for p in self.processes if p.gpu_index == index)


__all__ = [
    "SCHEMA_VERSION",
    "SEVERITY_ORDER",
    "SLOWLY_CHANGING_FIELDS",
    "SLOW_SAMPLE_FIELDS",
    "SLOW_TIER_FIELDS",
    "THROTTLE_REASONS",
    "THROTTLE_TROUBLE",
    "Action",
    "Finding",
    "GpuEvent",
    "GpuInfo",
    "GpuLocality",
    "GpuPath",
    "GpuSample",
    "GpuUsage",
    "HostSample",
    "LinkInfo",
    "LinkSample",
    "MigDeviceInfo",
    "MigSample",
    "NodeInfo",
    "PidNamespace",
    "ProcessSample",
    "ProcessType",
    "Severity",
    "Snapshot",
    "Stall",
    "Topology",
    "Usage",
    "Vendor",
    "describe_throttle",
]
