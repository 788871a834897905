"""What a simulated node is made of: the plan dataclasses the backend reads from, and the helpers
the scenario builders share (UUIDs, per-board draws, host loads, training ranks).

A :class:`Plan` is plain data, built once per (scenario, seed) by :mod:`.scenarios`; reading it
never draws a random number.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from gputui.backends.sim import workloads as wl
from gputui.backends.sim.hardware import MIB, GpuModel
from gputui.backends.sim.noise import rng as make_rng
from gputui.core.frozen import frozen

GIB = 1 << 30


@frozen
class MigPlan:
    """One MIG instance of a GPU in MIG mode: a GPU instance holding one compute instance."""

    gpu_instance_id: int
    compute_instance_id: int
    uuid: str
    """``MIG-`` and a UUID, as NVML and ``nvidia-smi -L`` name it."""
    profile: str
    """``1g.10gb``, ``3g.40gb`` ...: compute slices and memory, as ``nvidia-smi mig -lgip``."""
    slices: int
    """Compute slices of the GPU's seven: its share of the SMs, engines and power."""
    memory_mib: int
    sm_count: int


@frozen
class GpuPlan:
    """One simulated GPU: its model plus the per-board draws and faults."""

    index: int
    model: GpuModel
    uuid: str
    pci_bus_id: str
    serial: str | None
    idle_w: float
    busy_w: float
    ambient_c: float
    c_per_w: float
    energy0_j: float
    ecc_aggregate_corrected: int = 0
    pcie_gen: int | None = None  # trained link, when below the model's maximum
    pcie_width: int | None = None
    thermal_fault: bool = False
    ecc_fault: bool = False
    lost_after_s: float | None = None
    mig: tuple[MigPlan, ...] | None = None
    """None: MIG as the model has it (off, or not supported); a tuple: MIG mode on, with these
    instances (NVML then reports no GPU utilization for the parent, only per-instance memory)."""
    pool_load: wl.Track | None = None
    """Activity of a worker pool on this GPU (see :class:`WorkerPlan`), on top of the processes'."""


@frozen
class ProcPlan:
    """One simulated GPU process."""

    pid: int
    gpu: int
    track: wl.Track
    gpu_memory_bytes: int
    user: str
    name: str
    command: str
    cpu_pct: tuple[float, float]  # (when its GPU work is idle, when busy)
    rss_bytes: int
    age_s: float = 0.0  # started this long before the simulation began
    start_s: float | None = None  # or: appears this many seconds into the simulation
    type: str = "compute"
    container_id: str | None = None
    mig_uuid: str | None = None
    """The MIG instance it runs in (its ``track`` is then its activity within that instance)."""
    # Who it works for, as the host's cgroups and the engines' state would tell (see
    # :class:`gputui.core.model.ProcessSample`); the sim backend's processes are not enriched from
    # /proc.
    container_runtime: str | None = None
    container_name: str | None = None
    slurm_job_id: str | None = None
    slurm_step: str | None = None
    slurm_job_name: str | None = None
    slurm_job_user: str | None = None
    k8s_pod_uid: str | None = None
    k8s_pod_name: str | None = None
    k8s_namespace: str | None = None
    ppid: int | None = None
    parent_name: str | None = None
    """The launcher that started it (``torchrun`` for the ranks of a training job)."""


@frozen
class EventPlan:
    """A scripted driver event: reported once, when the simulation reaches ``at_s``."""

    at_s: float
    kind: str
    gpu: int
    code: int | None = None
    message: str | None = None


@frozen
class HostPlan:
    hostname: str
    memory_total_bytes: int
    memory_base_used_bytes: int  # used by everything that is not a GPU process
    swap_total_bytes: int
    swap_used_bytes: int
    core_base_pct: tuple[float, ...]  # steady load of each logical CPU
    boot_age_s: float


@frozen
class WorkerPlan:
    """One place in a worker pool: a process that its supervisor restarts, with a new PID, every
    ``lifetime_s`` (or at once when it is killed). Its activity is part of its GPU's
    ``pool_load``; its SM % is its ``sm_weight`` share of the GPU's utilization."""

    gpu: int
    user: str
    name: str
    command: str
    gpu_memory_bytes: int
    sm_weight: float
    cpu_pct: tuple[float, float]  # (idle, at 100 % SM)
    rss_bytes: int
    pid_base: int
    """Its PIDs lie in ``[pid_base, pid_base + PID_BAND)`` (disjoint from every other worker's)."""
    lifetime_s: float
    phase_s: float
    """Age, at the start of the simulation, of the worker running then."""
    container_id: str | None = None


PID_BAND = 1500
"""PIDs per worker place (see :attr:`WorkerPlan.pid_base`)."""


@frozen
class Plan:
    scenario: str
    seed: int
    driver_version: str
    runtime_version: str
    library_version: str
    gpus: tuple[GpuPlan, ...]
    procs: tuple[ProcPlan, ...]
    host: HostPlan
    events: tuple[EventPlan, ...] = ()
    workers: tuple[WorkerPlan, ...] = ()


# -- helpers -------------------------------------------------------------------------------------


DGX_SOFTWARE: dict[str, Any] = {
    "driver_version": "550.54.15",
    "runtime_version": "12.4",
    "library_version": "12.550.54.15",
}
"""Driver, CUDA and NVML versions of the simulated DGX nodes (dgx-h100 and faulty)."""


def nvidia_uuid(r: random.Random) -> str:
    h = f"{r.getrandbits(128):032x}"
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def amd_uuid(r: random.Random) -> str:
    h = f"{r.getrandbits(128):032x}"
    return f"{h[:8]}-0000-1000-80{h[18:20]}-{h[20:]}"


def gpu_plans(
    seed: int,
    scenario: str,
    model: GpuModel,
    bus_ids: list[str],
    *,
    hot: int | None = None,
    faults: Mapping[int, Mapping[str, Any]] | None = None,
) -> list[GpuPlan]:
    r = make_rng(scenario, seed, "gpus")
    out = []
    for i, bus in enumerate(bus_ids):
        amb = model.ambient_c + r.uniform(-0.7, 0.7)
        cpw = model.c_per_w * r.uniform(0.97, 1.03)
        if i == hot:  # a board further from the fans: a few degrees hotter under load
            amb += 2.5
            cpw *= 1.1
        nvidia = model.vendor == "nvidia"
        plan = GpuPlan(
            index=i,
            model=model,
            uuid=nvidia_uuid(r) if nvidia else amd_uuid(r),
            pci_bus_id=bus,
            serial=f"{r.randrange(10**12, 10**13)}" if nvidia else f"{r.getrandbits(48):012X}",
            idle_w=r.uniform(*model.idle_w),
            busy_w=r.uniform(*model.busy_w),
            ambient_c=amb,
            c_per_w=cpw,
            energy0_j=r.uniform(2e8, 9e8),
            ecc_aggregate_corrected=r.choice((0, 0, 0, 0, 1, 2, 7)) if model.ecc else 0,
            **(faults or {}).get(i, {}),
        )
        out.append(plan)
    return out


def new_container_id(r: random.Random) -> str:
    return f"{r.getrandbits(256):064x}"


def pod_uid(r: random.Random) -> str:
    """A Kubernetes pod UID (a random UUID, as the API server gives)."""
    h = f"{r.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) % 4]}{h[17:20]}-{h[20:]}"


def kernel_json(r: random.Random, user: str) -> str:
    h = f"{r.getrandbits(128):032x}"
    return (
        f"/home/{user}/.local/share/jupyter/runtime/"
        f"kernel-{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}.json"
    )


def core_loads(r: random.Random, threads: int, busy: list[float]) -> tuple[float, ...]:
    """Per-CPU steady load: the given busy loads on random CPUs, the rest nearly idle."""
    loads = [r.uniform(0.3, 3.0) for _ in range(threads)]
    for load, cpu in zip(busy, r.sample(range(threads), len(busy)), strict=True):
        loads[cpu] = min(100.0, load)
    return tuple(loads)


def training_ranks(
    r: random.Random,
    track: wl.Track,
    gpus: list[int],
    *,
    config: str,
    mem_mib: tuple[int, int],
    user: str,
    python: str,
    container: str | None,
    age_s: float = 0.0,
    start_s: float | None = None,
    rss_gib: tuple[float, float] = (18.0, 30.0),
) -> list[ProcPlan]:
    pid = r.randrange(200_000, 3_000_000)  # torchrun's children come up one after another
    launcher = pid  # torchrun itself: the ranks' parent
    procs = []
    for rank, gpu in enumerate(gpus):
        pid += r.randint(1, 3)
        mem = r.randrange(*mem_mib) + (1200 if rank == 0 else 0)
        procs.append(
            ProcPlan(
                pid=pid,
                gpu=gpu,
                track=track,
                gpu_memory_bytes=mem * MIB,
                user=user,
                name="python",
                command=f"{python} -u train.py --config {config} --local-rank={rank}",
                cpu_pct=(r.uniform(110, 135), r.uniform(150, 260)),
                rss_bytes=int(r.uniform(*rss_gib) * GIB),
                age_s=age_s,
                start_s=start_s,
                container_id=container,
                ppid=launcher,
                parent_name="torchrun",
            )
        )
    return procs


# -- scenarios -----------------------------------------------------------------------------------

H100_BUS = ["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"]
MI300_BUS = ["05", "26", "46", "65", "85", "a6", "c6", "e5"]
VLLM_COMMAND = (
    "/usr/bin/python3 /usr/local/bin/vllm serve meta-llama/Llama-3.1-8B-Instruct "
    "--port {port} --gpu-memory-utilization {frac} --max-model-len {ctx} --enable-prefix-caching"
)


def dgx_host(r: random.Random, hostname: str, ranks: int) -> HostPlan:
    # 2x Xeon Platinum 8480C: 112 cores, 224 threads; 2 TiB RAM, no swap.
    busy = []
    for _ in range(ranks):
        busy.append(r.uniform(85, 100))  # rank main thread
        busy += [r.uniform(35, 85) for _ in range(8)]  # data-loader workers
    return HostPlan(
        hostname=hostname,
        memory_total_bytes=2015 * GIB,
        memory_base_used_bytes=int((30 + ranks * 8 * 2.5) * GIB),
        swap_total_bytes=0,
        swap_used_bytes=0,
        core_base_pct=core_loads(r, 224, busy),
        boot_age_s=r.uniform(3, 40) * 86400,
    )
