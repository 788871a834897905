"""The ``mig`` scenario: a DGX H100 shared through MIG.

GPUs 0-3 are split into seven ``1g.10gb`` instances each, GPUs 4-6 into two ``3g.40gb``, and
GPU 7 has MIG off (one whole-GPU training job). The instances hold inference servers of several
users (vLLM, text-embeddings-inference, Triton, a reranker), a notebook kernel, an evaluation
script next to an embedding server, and a LoRA fine-tune; a few instances are free.

What NVML reports on such a node, and so what the backend reports: per instance its memory and
its processes (each with the instance's GPU / compute instance ids); per parent GPU power,
temperatures, clocks, PCIe, ECC and the summed memory, but no utilization (``NotSupported`` on a
MIG-enabled GPU, so None), no per-process SM %, no encoder / decoder utilization and no
remapped-row counters while instances exist.
"""

from __future__ import annotations

import random
from dataclasses import replace

from gputui.backends.sim import workloads as wl
from gputui.backends.sim.hardware import H100_SXM, MIB
from gputui.backends.sim.noise import rng as make_rng
from gputui.backends.sim.plan import (
    DGX_SOFTWARE,
    GIB,
    H100_BUS,
    MigPlan,
    Plan,
    ProcPlan,
    dgx_host,
    gpu_plans,
    kernel_json,
    new_container_id,
    nvidia_uuid,
    pod_uid,
    training_ranks,
)

H100_MIG_PROFILES: dict[str, tuple[int, int, int, tuple[int, ...]]] = {
    "1g.10gb": (1, 9984, 16, (7, 8, 9, 10, 11, 12, 13)),
    "3g.40gb": (3, 40448, 60, (1, 2)),
}
"""Profile -> (compute slices, memory MiB, SMs, GPU instance ids when the GPU is split evenly
into that profile), as ``nvidia-smi mig -lgip`` / ``-lgi`` show them on an H100 80GB."""

MIG_LAYOUT: tuple[str | None, ...] = (
    "1g.10gb",
    "1g.10gb",
    "1g.10gb",
    "1g.10gb",
    "3g.40gb",
    "3g.40gb",
    "3g.40gb",
    None,
)
"""Per GPU: the profile it is split into (as many instances as fit), None for MIG off."""

_TENANTS: dict[tuple[int, int], tuple[tuple[str, str], ...]] = {
    (0, 0): (("chat", "svc-chat"),),
    (0, 1): (("chat", "svc-chat"),),
    (0, 2): (("chat", "svc-chat"),),
    (0, 3): (("embed", "svc-embed"),),
    (0, 4): (("embed", "svc-embed"),),
    (0, 5): (("notebook", "mkim"),),
    (1, 0): (("chat", "priya"),),
    (1, 1): (("chat", "priya"),),
    (1, 2): (("triton", "jlopez"),),
    (1, 3): (("triton", "jlopez"),),
    (1, 4): (("rerank", "okafor"),),
    (1, 6): (("chat", "tnguyen"),),
    (2, 0): (("chat", "svc-chat"),),
    (2, 1): (("chat", "svc-chat"),),
    (2, 2): (("chat", "svc-chat"),),
    (2, 3): (("chat", "svc-chat"),),
    (2, 4): (("embed", "okafor"), ("eval", "okafor")),
    (3, 0): (("chat", "rsato"),),
    (3, 1): (("embed", "rsato"),),
    (3, 2): (("triton", "jlopez"),),
    (3, 4): (("chat", "tnguyen"),),
    (4, 0): (("llm", "svc-chat"),),
    (4, 1): (("llm", "svc-chat"),),
    (5, 0): (("lora", "priya"),),
    (5, 1): (("llm", "okafor"),),
    (6, 0): (("llm", "tnguyen"),),
}
"""(GPU, instance in GI order) -> the (kind, user) of each process in it; absent: a free one."""

_CHAT_MODELS = {
    "svc-chat": "Qwen/Qwen2.5-1.5B-Instruct",
    "priya": "meta-llama/Llama-3.2-3B-Instruct",
    "tnguyen": "microsoft/Phi-3.5-mini-instruct",
    "rsato": "google/gemma-2-2b-it",
}
_SERVICE_USERS = frozenset({"svc-chat", "svc-embed"})
"""Users whose servers run in containers (the rest run from their home directories), in
Kubernetes pods of the ``ml`` namespace."""
_PODS = {
    "Qwen/Qwen2.5-1.5B-Instruct": ("qwen-chat", "vllm"),
    "meta-llama/Llama-3.1-8B-Instruct": ("llama-8b", "vllm"),
    "BAAI/bge-large-en-v1.5": ("bge-embed", "tei"),
}
"""Model served -> (the pods' StatefulSet, the container's name)."""
_VLLM_SERVE = (
    "/usr/bin/python3 /usr/local/bin/vllm serve {model} --port {port} "
    "--gpu-memory-utilization {frac} --max-model-len {ctx}"
)


def _mig_uuid(r: random.Random) -> str:
    return "MIG-" + nvidia_uuid(r)[len("GPU-") :]


def _instances(r: random.Random, profile: str | None) -> tuple[MigPlan, ...] | None:
    if profile is None:
        return None
    slices, memory_mib, sms, gi_ids = H100_MIG_PROFILES[profile]
    return tuple(MigPlan(gi, 0, _mig_uuid(r), profile, slices, memory_mib, sms) for gi in gi_ids)


def _fresh_pid(r: random.Random, lo: int, hi: int, taken: set[int]) -> int:
    """A PID in [lo, hi) that no other planned process has."""
    while (pid := r.randrange(lo, hi)) in taken:
        pass
    taken.add(pid)
    return pid


def _process(
    r: random.Random,
    taken: set[int],
    seed: int,
    kind: str,
    user: str,
    gpu: int,
    instance: MigPlan,
    port: int,
) -> ProcPlan:
    """One process of ``kind`` owned by ``user`` in ``instance``."""
    s = "mig"
    track_rng = make_rng(s, seed, f"track/{gpu}/{instance.gpu_instance_id}/{kind}")
    container = new_container_id(r) if user in _SERVICE_USERS else None
    home = f"/home/{user}"
    days = r.uniform(0.5, 9.0) * 86400
    if kind in ("chat", "llm"):
        chat = kind == "chat"
        frac, ctx = ("0.85", 8192) if chat else ("0.90", 16384)
        model = _CHAT_MODELS[user] if chat else "meta-llama/Llama-3.1-8B-Instruct"
        budget = int(float(frac) * instance.memory_mib)
        return ProcPlan(
            pid=_fresh_pid(r, 100_000, 2_000_000, taken),
            track=wl.inference(track_rng, mean_gap_s=r.uniform(3.0, 8.0)),
            gpu_memory_bytes=r.randrange(budget - 110, budget + 40) * MIB,
            name="vllm",
            command=_VLLM_SERVE.format(model=model, port=port, frac=frac, ctx=ctx),
            cpu_pct=(r.uniform(12.0, 20.0), r.uniform(90.0, 105.0)),
            rss_bytes=int(r.uniform(5.0, 7.5) * GIB),
            age_s=days,
            gpu=gpu,
            user=user,
            container_id=container,
            mig_uuid=instance.uuid,
        )
    if kind == "embed":
        return ProcPlan(
            pid=_fresh_pid(r, 100_000, 2_000_000, taken),
            track=wl.inference(track_rng, mean_gap_s=1.5),
            gpu_memory_bytes=r.randrange(1_600, 2_400) * MIB,
            name="text-embeddings",  # the kernel's 15-character process name
            command=f"text-embeddings-router --model-id BAAI/bge-large-en-v1.5 --port {port} "
            "--max-batch-tokens 16384",
            cpu_pct=(r.uniform(1.0, 3.0), r.uniform(40.0, 70.0)),
            rss_bytes=int(r.uniform(1.0, 1.6) * GIB),
            age_s=days,
            gpu=gpu,
            user=user,
            container_id=container,
            mig_uuid=instance.uuid,
        )
    if kind == "triton":
        return ProcPlan(
            pid=_fresh_pid(r, 100_000, 2_000_000, taken),
            track=wl.inference(track_rng, mean_gap_s=5.0),
            gpu_memory_bytes=r.randrange(3_000, 6_200) * MIB,
            name="tritonserver",
            command=f"/opt/tritonserver/bin/tritonserver --model-repository={home}/ocr-models "
            f"--http-port={port} --grpc-port={port + 1} --metrics-port={port + 2}",
            cpu_pct=(r.uniform(3.0, 6.0), r.uniform(60.0, 90.0)),
            rss_bytes=int(r.uniform(2.5, 3.5) * GIB),
            age_s=days,
            gpu=gpu,
            user=user,
            container_id=container,
            mig_uuid=instance.uuid,
        )
    if kind == "rerank":
        return ProcPlan(
            pid=_fresh_pid(r, 100_000, 2_000_000, taken),
            track=wl.inference(track_rng, mean_gap_s=4.0),
            gpu_memory_bytes=r.randrange(2_300, 2_900) * MIB,
            name="python",
            command=f"{home}/envs/rerank/bin/python -m rerank.server "
            f"--model BAAI/bge-reranker-v2-m3 --port {port}",
            cpu_pct=(r.uniform(1.0, 3.0), r.uniform(80.0, 100.0)),
            rss_bytes=int(r.uniform(2.0, 3.0) * GIB),
            age_s=days,
            gpu=gpu,
            user=user,
            container_id=container,
            mig_uuid=instance.uuid,
        )
    if kind == "eval":
        return ProcPlan(
            pid=_fresh_pid(r, 2_000_000, 3_000_000, taken),
            track=wl.inference(track_rng, mean_gap_s=0.5),
            gpu_memory_bytes=r.randrange(1_800, 2_600) * MIB,
            name="python",
            command=f"{home}/envs/rerank/bin/python eval_retrieval.py --split test --batch-size 64",
            cpu_pct=(r.uniform(60.0, 80.0), r.uniform(95.0, 100.0)),
            rss_bytes=int(r.uniform(3.5, 4.5) * GIB),
            age_s=r.uniform(5, 40) * 60,
            gpu=gpu,
            user=user,
            container_id=container,
            mig_uuid=instance.uuid,
        )
    if kind == "notebook":
        return ProcPlan(
            pid=_fresh_pid(r, 2_000_000, 3_000_000, taken),
            track=wl.notebook_cells(track_rng),
            gpu_memory_bytes=r.randrange(5_200, 6_800) * MIB,
            name="python",
            command=f"{home}/venv/bin/python -m ipykernel_launcher -f {kernel_json(r, user)}",
            cpu_pct=(0.5, 100.0),
            rss_bytes=int(r.uniform(7.0, 9.0) * GIB),
            age_s=r.uniform(1, 6) * 3600,
            gpu=gpu,
            user=user,
            container_id=container,
            mig_uuid=instance.uuid,
        )
    assert kind == "lora", kind
    train = wl.training(
        track_rng, step_s=r.uniform(1.1, 1.4), nvl_peak=(0.0, 0.0), nvl_base=(0.0, 0.0)
    )
    return ProcPlan(
        pid=_fresh_pid(r, 2_000_000, 3_000_000, taken),
        track=train,
        gpu_memory_bytes=r.randrange(29_000, 33_500) * MIB,
        name="python",
        command=f"{home}/miniconda3/envs/ft/bin/python finetune_lora.py "
        "--base meta-llama/Llama-3.1-8B --lora-rank 16 --batch-size 4 --local-rank=0",
        cpu_pct=(r.uniform(105.0, 120.0), r.uniform(140.0, 180.0)),
        rss_bytes=int(r.uniform(18.0, 24.0) * GIB),
        age_s=r.uniform(2, 8) * 3600,
        gpu=gpu,
        user=user,
        container_id=container,
        mig_uuid=instance.uuid,
    )


def _in_pods(procs: list[ProcPlan], r: random.Random) -> list[ProcPlan]:
    """The service users' servers as the pods of StatefulSets (``ml/qwen-chat-0`` ...), one
    pod a server, numbered in GPU and instance order."""
    out = []
    made: dict[str, int] = {}
    for p in procs:
        model = next((m for m in _PODS if m in p.command), None)
        if p.user not in _SERVICE_USERS or model is None:
            out.append(p)
            continue
        base, container = _PODS[model]
        n = made[base] = made.get(base, -1) + 1
        out.append(
            replace(
                p,
                container_runtime="containerd",
                container_name=container,
                k8s_pod_name=f"{base}-{n}",
                k8s_namespace="ml",
                k8s_pod_uid=pod_uid(r),
            )
        )
    return out


def mig_node(seed: int) -> Plan:
    """The plan of the ``mig`` scenario (see the module docstring)."""
    s = "mig"
    ids = make_rng(s, seed, "mig")
    layout = {i: {"mig": m} for i, p in enumerate(MIG_LAYOUT) if (m := _instances(ids, p))}
    gpus = gpu_plans(seed, s, H100_SXM, [f"00000000:{b}:00.0" for b in H100_BUS], faults=layout)
    r = make_rng(s, seed, "procs")
    whole = len(MIG_LAYOUT) - 1  # the GPU with MIG off: one whole-GPU training job
    train = wl.training(
        make_rng(s, seed, "train"),
        step_s=r.uniform(2.4, 2.8),
        nvl_peak=(0.0, 0.0),
        nvl_base=(0.0, 0.0),
    )
    procs = training_ranks(
        r,
        train,
        [whole],
        config="qwen2.5-7b-sft.yaml",
        mem_mib=(62_000, 67_000),
        user="dchen",
        python="/opt/conda/bin/python",
        container=new_container_id(r),
        age_s=r.uniform(3, 10) * 3600,
    )
    taken = {p.pid for p in procs}
    port = 8100
    for g in gpus:
        for k, instance in enumerate(g.mig or ()):
            for kind, user in _TENANTS.get((g.index, k), ()):
                procs.append(_process(r, taken, seed, kind, user, g.index, instance, port))
                port += 10
    procs = _in_pods(procs, make_rng(s, seed, "owners"))
    return Plan(
        scenario=s,
        seed=seed,
        **DGX_SOFTWARE,
        gpus=tuple(gpus),
        procs=tuple(procs),
        host=dgx_host(r, "dgx-h100-21", 2),
    )
