"""The simulated nodes: which GPUs, which processes doing what, which faults.

``build(scenario, seed)`` turns a scenario name into a :class:`Plan`: plain data that the backend
reads from (:mod:`.plan`). Everything random here comes from generators seeded with (scenario,
seed, purpose). The MIG node and the crowded inference node have modules of their own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gputui.backends.sim import workloads as wl
from gputui.backends.sim.crowded import crowded_node
from gputui.backends.sim.hardware import A100_PCIE_80, H100_SXM, MI300X, MIB, RTX_4090
from gputui.backends.sim.mig import mig_node
from gputui.backends.sim.noise import rng as make_rng
from gputui.backends.sim.plan import (
    DGX_SOFTWARE,
    GIB,
    H100_BUS,
    MI300_BUS,
    VLLM_COMMAND,
    EventPlan,
    HostPlan,
    Plan,
    ProcPlan,
    core_loads,
    dgx_host,
    gpu_plans,
    kernel_json,
    new_container_id,
    pod_uid,
    training_ranks,
)

SCENARIOS: dict[str, str] = {
    "dgx-h100": "DGX H100, 8x H100 SXM: 6-rank torchrun training (Slurm job 4242) on GPUs 0-5, "
    "a vLLM server (Kubernetes pod ml/vllm-0) on GPU 6, an idle Jupyter kernel (Docker "
    "container) holding 40 GB on GPU 7",
    "a100-pcie": "2x A100 80GB PCIe, no NVLink: a bursty vLLM server in a container on GPU 0, "
    "a notebook running occasional cells on GPU 1",
    "rtx4090": "Workstation with one GeForce RTX 4090: Xorg and gnome-shell, ComfyUI image "
    "generation, an NVENC ffmpeg encode",
    "mi300x": "8x AMD Instinct MI300X: an 8-rank training job launches 15 s in; XGMI all-reduce "
    "bursts, power-capped at 750 W",
    "faulty": "DGX H100 training node with faults: GPU 3 falls off the bus after a few seconds, "
    "GPU 5 thermal slowdown, GPU 2 uncorrected ECC error (row remap pending), GPU 6 PCIe gen3 x8, "
    "GPU 1 NVLink 7 down",
    "mig": "DGX H100 in MIG mode: GPUs 0-3 split into 7x 1g.10gb, GPUs 4-6 into 2x 3g.40gb, "
    "GPU 7 whole (MIG off); inference servers of several users (the services in Kubernetes "
    "pods), a notebook and a LoRA fine-tune in the instances, a training job on GPU 7",
    "crowded": "8x H100 SXM serving 2,000 inference worker processes of 40 users; a few workers "
    "restart every minute (a stress test for the process views)",
    "straggler": "DGX H100, one 8-rank training job (Slurm job 5151) on all 8 GPUs; GPU 3 lags "
    "its siblings, held down by a thermal limit (blocked airflow)",
}
"""Scenario name -> one-line description."""


def in_slurm_job(ranks: list[ProcPlan], job_id: str, name: str) -> list[ProcPlan]:
    """The ranks as step 0 of a Slurm job of their user."""
    return [
        replace(p, slurm_job_id=job_id, slurm_step="0", slurm_job_name=name, slurm_job_user=p.user)
        for p in ranks
    ]


def _dgx_h100(seed: int) -> Plan:
    s = "dgx-h100"
    r = make_rng(s, seed, "procs")
    gpus = gpu_plans(seed, s, H100_SXM, [f"00000000:{b}:00.0" for b in H100_BUS], hot=3)
    train = wl.training(make_rng(s, seed, "train"), step_s=r.uniform(2.9, 3.5))
    # Who each process works for, drawn apart so that the PIDs and ids below stay as they were.
    owners = make_rng(s, seed, "owners")
    new_container_id(r)  # the ranks once ran in a container; they run in a Slurm job now
    ranks = training_ranks(
        r,
        train,
        list(range(6)),
        config="llama-8b.yaml",
        mem_mib=(70_500, 72_800),
        user="svc-train",
        python="/opt/conda/bin/python",
        container=None,
        age_s=r.uniform(1.5, 3.0) * 3600,
    )
    procs = in_slurm_job(ranks, "4242", "train-llama")
    procs.append(
        ProcPlan(
            pid=r.randrange(100_000, 200_000),
            gpu=6,
            track=wl.inference(make_rng(s, seed, "vllm")),
            gpu_memory_bytes=int(0.85 * H100_SXM.memory_total_mib) * MIB,
            user="root",
            name="vllm",
            command=VLLM_COMMAND.format(port=8001, frac="0.85", ctx=32768),
            cpu_pct=(18.0, 105.0),
            rss_bytes=int(7.4 * GIB),
            age_s=r.uniform(2, 6) * 86400,
            container_id=new_container_id(r),
            container_runtime="containerd",
            container_name="vllm",
            k8s_pod_uid=pod_uid(owners),
            k8s_pod_name="vllm-0",
            k8s_namespace="ml",
        )
    )
    procs.append(
        ProcPlan(
            pid=r.randrange(3_000_000, 4_000_000),
            gpu=7,
            track=wl.holding(),
            gpu_memory_bytes=r.randrange(39_000, 41_500) * MIB,
            user="ana",
            name="python",
            command=(
                "/home/ana/.conda/envs/dev/bin/python -m ipykernel_launcher -f "
                + kernel_json(r, "ana")
            ),
            cpu_pct=(0.3, 0.3),
            rss_bytes=int(9.2 * GIB),
            age_s=r.uniform(20, 30) * 3600,
            container_id=new_container_id(owners),
            container_runtime="docker",
            container_name="jupyter",
        )
    )
    return Plan(
        scenario=s,
        seed=seed,
        **DGX_SOFTWARE,
        gpus=tuple(gpus),
        procs=tuple(procs),
        host=dgx_host(r, "dgx-h100-07", 6),
    )


def _faulty(seed: int, lost_after_s: float) -> Plan:
    s = "faulty"
    r = make_rng(s, seed, "procs")
    faults: dict[int, dict[str, Any]] = {
        2: {"ecc_fault": True},
        3: {"lost_after_s": lost_after_s},
        5: {"thermal_fault": True},
        6: {"pcie_gen": 3, "pcie_width": 8},
    }
    gpus = gpu_plans(seed, s, H100_SXM, [f"00000000:{b}:00.0" for b in H100_BUS], faults=faults)
    train = wl.training(make_rng(s, seed, "train"), step_s=r.uniform(2.9, 3.5))
    procs = training_ranks(
        r,
        train,
        list(range(8)),
        config="llama-8b.yaml",
        mem_mib=(70_500, 72_800),
        user="svc-train",
        python="/opt/conda/bin/python",
        container=new_container_id(r),
        age_s=r.uniform(4, 9) * 3600,
    )
    return Plan(
        scenario=s,
        seed=seed,
        **DGX_SOFTWARE,
        gpus=tuple(gpus),
        procs=tuple(procs),
        host=dgx_host(r, "dgx-h100-13", 8),
        events=_faulty_events(lost_after_s),
    )


def _straggler(seed: int) -> Plan:
    """Every GPU of one job, one of them slower: what the straggler rule is for."""
    s = "straggler"
    r = make_rng(s, seed, "procs")
    faults: dict[int, dict[str, Any]] = {3: {"thermal_fault": True}}
    gpus = gpu_plans(seed, s, H100_SXM, [f"00000000:{b}:00.0" for b in H100_BUS], faults=faults)
    train = wl.training(make_rng(s, seed, "train"), step_s=r.uniform(2.9, 3.5))
    ranks = training_ranks(
        r,
        train,
        list(range(8)),
        config="llama-70b.yaml",
        mem_mib=(74_000, 76_500),
        user="svc-train",
        python="/opt/conda/bin/python",
        container=None,
        age_s=r.uniform(2, 5) * 3600,
    )
    procs = in_slurm_job(ranks, "5151", "pretrain-70b")
    return Plan(
        scenario=s,
        seed=seed,
        **DGX_SOFTWARE,
        gpus=tuple(gpus),
        procs=tuple(procs),
        host=dgx_host(r, "dgx-h100-21", 8),
    )


ECC_EVENT_S = 1.0
"""When the ``faulty`` scenario's GPU 2 reports its double-bit ECC error."""


def _faulty_events(lost_after_s: float) -> tuple[EventPlan, ...]:
    """GPU 2: a double-bit ECC error (with its XID 48), then the row-remap XID 63; GPU 3: XID 79
    when it falls off the bus. In time order (stable for equal times)."""
    events = [
        EventPlan(ECC_EVENT_S, "ecc_double_bit", 2, message="uncorrectable double-bit ECC error"),
        EventPlan(ECC_EVENT_S, "xid", 2, 48, "DBE (double bit error) ECC error"),
        EventPlan(ECC_EVENT_S + 0.2, "xid", 2, 63, "ECC page retirement or row remapping event"),
        EventPlan(lost_after_s, "xid", 3, 79, "GPU has fallen off the bus"),
    ]
    return tuple(sorted(events, key=lambda e: e.at_s))


def _a100_pcie(seed: int) -> Plan:
    s = "a100-pcie"
    r = make_rng(s, seed, "procs")
    gpus = gpu_plans(seed, s, A100_PCIE_80, ["00000000:17:00.0", "00000000:CA:00.0"])
    procs = [
        ProcPlan(
            pid=r.randrange(20_000, 90_000),
            gpu=0,
            track=wl.inference(make_rng(s, seed, "vllm"), mean_gap_s=4.0),
            gpu_memory_bytes=int(0.9 * A100_PCIE_80.memory_total_mib) * MIB,
            user="root",
            name="vllm",
            command=VLLM_COMMAND.format(port=8000, frac="0.90", ctx=16384),
            cpu_pct=(15.0, 102.0),
            rss_bytes=int(6.8 * GIB),
            age_s=r.uniform(1, 9) * 86400,
            container_id=new_container_id(r),
        ),
        ProcPlan(
            pid=r.randrange(400_000, 900_000),
            gpu=1,
            track=wl.notebook_cells(make_rng(s, seed, "notebook")),
            gpu_memory_bytes=r.randrange(20_000, 24_000) * MIB,
            user="mkim",
            name="python",
            command="/home/mkim/venv/bin/python -m ipykernel_launcher -f " + kernel_json(r, "mkim"),
            cpu_pct=(0.5, 100.0),
            rss_bytes=int(12.5 * GIB),
            age_s=r.uniform(1, 5) * 3600,
        ),
    ]
    busy = [r.uniform(60, 100), r.uniform(5, 30)] + [r.uniform(5, 20) for _ in range(4)]
    host = HostPlan(
        hostname="gpu-a100-02",
        memory_total_bytes=503 * GIB,
        memory_base_used_bytes=14 * GIB,
        swap_total_bytes=8 * GIB,
        swap_used_bytes=int(0.2 * GIB),
        core_base_pct=core_loads(r, 64, busy),  # 2x EPYC 7313: 32 cores, 64 threads
        boot_age_s=r.uniform(10, 60) * 86400,
    )
    return Plan(
        scenario=s,
        seed=seed,
        driver_version="535.161.08",
        runtime_version="12.2",
        library_version="12.535.161.08",
        gpus=tuple(gpus),
        procs=tuple(procs),
        host=host,
    )


def _rtx4090(seed: int) -> Plan:
    s = "rtx4090"
    r = make_rng(s, seed, "procs")
    gpus = gpu_plans(seed, s, RTX_4090, ["00000000:01:00.0"])
    xorg = r.randrange(1_500, 3_000)
    procs = [
        ProcPlan(
            pid=xorg,
            gpu=0,
            track=wl.desktop(make_rng(s, seed, "xorg")),
            gpu_memory_bytes=r.randrange(380, 620) * MIB,
            user="root",
            name="Xorg",
            command="/usr/lib/xorg/Xorg vt2 -displayfd 3 -auth /run/user/1000/gdm/Xauthority "
            "-nolisten tcp -background none -noreset -keeptty -novtswitch -verbose 3",
            cpu_pct=(2.0, 4.0),
            rss_bytes=int(0.21 * GIB),
            age_s=r.uniform(1, 6) * 86400,
            type="graphics",
        ),
        ProcPlan(
            pid=xorg + r.randrange(100, 400),
            gpu=0,
            track=wl.Track([wl.row(util=1.0, act=0.01)] * wl.N),
            gpu_memory_bytes=r.randrange(120, 260) * MIB,
            user="sam",
            name="gnome-shell",
            command="/usr/bin/gnome-shell",
            cpu_pct=(1.5, 3.0),
            rss_bytes=int(0.45 * GIB),
            age_s=r.uniform(1, 6) * 86400,
            type="graphics",
        ),
        ProcPlan(
            pid=r.randrange(40_000, 90_000),
            gpu=0,
            track=wl.diffusion(make_rng(s, seed, "comfy")),
            gpu_memory_bytes=r.randrange(13_800, 14_900) * MIB,
            user="sam",
            name="python",
            command="/home/sam/ComfyUI/venv/bin/python main.py --listen 127.0.0.1 --port 8188",
            cpu_pct=(1.0, 100.0),
            rss_bytes=int(7.9 * GIB),
            age_s=r.uniform(0.5, 3) * 3600,
        ),
        ProcPlan(
            pid=r.randrange(90_000, 120_000),
            gpu=0,
            track=wl.video_encode(make_rng(s, seed, "ffmpeg")),
            gpu_memory_bytes=r.randrange(340, 420) * MIB,
            user="sam",
            name="ffmpeg",
            command="ffmpeg -hwaccel cuda -hwaccel_output_format cuda -i capture-0511.mkv "
            "-c:v hevc_nvenc -preset p5 -b:v 12M -c:a copy capture-0511.mp4",
            cpu_pct=(35.0, 45.0),
            rss_bytes=int(0.38 * GIB),
            age_s=r.uniform(60, 900),
        ),
    ]
    busy = [r.uniform(40, 80) for _ in range(3)]
    host = HostPlan(
        hostname="sam-workstation",
        memory_total_bytes=int(62.5 * GIB),
        memory_base_used_bytes=int(9.5 * GIB),
        swap_total_bytes=8 * GIB,
        swap_used_bytes=int(1.3 * GIB),
        core_base_pct=core_loads(r, 32, busy),  # Ryzen 9 7950X: 16 cores, 32 threads
        boot_age_s=r.uniform(1, 6) * 86400,
    )
    return Plan(
        scenario=s,
        seed=seed,
        driver_version="550.67",
        runtime_version="12.4",
        library_version="12.550.67",
        gpus=tuple(gpus),
        procs=tuple(procs),
        host=host,
    )


MI300X_JOB_START_S = 15.0


def _mi300x(seed: int) -> Plan:
    s = "mi300x"
    r = make_rng(s, seed, "procs")
    gpus = gpu_plans(seed, s, MI300X, [f"0000:{b}:00.0" for b in MI300_BUS], hot=5)
    train = wl.training(
        make_rng(s, seed, "train"),
        step_s=r.uniform(5.0, 6.0),
        nvl_peak=(180e9, 300e9),
        nvl_base=(5e9, 18e9),
    )
    procs = training_ranks(
        r,
        train,
        list(range(8)),
        config="llama-70b-fsdp.yaml",
        mem_mib=(168_000, 174_000),
        user="svc-train",
        python="/opt/venv/bin/python",
        container=None,
        start_s=MI300X_JOB_START_S,
        rss_gib=(30.0, 45.0),
    )
    busy = []
    for _ in range(8):
        busy.append(r.uniform(85, 100))
        busy += [r.uniform(35, 85) for _ in range(6)]
    host = HostPlan(
        hostname="mi300x-node-03",
        memory_total_bytes=2267 * GIB,
        memory_base_used_bytes=70 * GIB,
        swap_total_bytes=0,
        swap_used_bytes=0,
        core_base_pct=core_loads(r, 384, busy),  # 2x EPYC 9654: 192 cores, 384 threads
        boot_age_s=r.uniform(3, 30) * 86400,
    )
    return Plan(
        scenario=s,
        seed=seed,
        driver_version="6.8.5",
        runtime_version="6.2.0",
        library_version="24.6.2",
        gpus=tuple(gpus),
        procs=tuple(procs),
        host=host,
    )


_BUILDERS: dict[str, Callable[[int], Plan]] = {
    "dgx-h100": _dgx_h100,
    "a100-pcie": _a100_pcie,
    "rtx4090": _rtx4090,
    "mi300x": _mi300x,
    "mig": mig_node,
    "crowded": crowded_node,
    "straggler": _straggler,
}


def build(scenario: str, seed: int, *, lost_after_s: float = 3.0) -> Plan:
    """The plan of ``scenario`` under ``seed``. ``scenario`` must be a key of :data:`SCENARIOS`."""
    if scenario == "faulty":
        return _faulty(seed, lost_after_s)
    return _BUILDERS[scenario](seed)
