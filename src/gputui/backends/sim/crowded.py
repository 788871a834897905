"""The ``crowded`` scenario: 8x H100 SXM serving 2,000 inference worker processes of 40 users.

Each user runs one or two deployments (service accounts larger ones) of a worker program: a
model server, an embedding server, a Triton Python-backend stub, a Celery GPU worker, a Ray Serve
replica. A deployment's workers share a command line that differs only in its tail
(``--local-rank=N --port=...``, a shared-memory region) and a model size, so the per-process GPU
memory runs from 50 MiB to a few GiB. Workers are spread over the GPUs by memory, 250 each.

A supervisor restarts each worker every 6-16 hours (a new PID, memory growing back over a few
seconds): about three restarts a minute on the node, never many at once, so the process list
is stable enough to measure a dashboard against. The workers' combined activity is one
:func:`~gputui.backends.sim.workloads.worker_pool` track per GPU; a worker's SM % is its share of
its GPU's utilization.
"""

from __future__ import annotations

import math
import random

from gputui.backends.sim import workloads as wl
from gputui.backends.sim.hardware import H100_SXM, MIB
from gputui.backends.sim.noise import rng as make_rng
from gputui.backends.sim.plan import (
    DGX_SOFTWARE,
    GIB,
    H100_BUS,
    PID_BAND,
    HostPlan,
    Plan,
    WorkerPlan,
    core_loads,
    gpu_plans,
    new_container_id,
)
from gputui.core.frozen import frozen

WORKERS = 2000
GPUS = 8
LIFETIME_S = (6 * 3600.0, 16 * 3600.0)
"""Range of a worker's lifetime: 2,000 workers restart about three times a minute."""
MEMORY_FILL = 0.85
"""A GPU's workers hold at most this fraction of its memory (scaled down when they would not)."""
PID_START = 300_000

SERVICE_USERS = ("svc-chat", "svc-embed", "svc-rank", "svc-asr", "svc-ocr", "svc-search")
PEOPLE = (
    "ana", "bkumar", "cwu", "dchen", "eolsen", "fgarcia", "gpatel", "hkim", "ichen", "jlopez",
    "kmori", "lwang", "mkim", "nsingh", "okafor", "pmartin", "qzhang", "rsato", "sfischer",
    "tnguyen", "uali", "vrossi", "wjones", "xliu", "yito", "zbrown", "abose", "bnovak", "cdiaz",
    "dlee", "emuller", "fsilva", "gkaur", "hyamada",
)  # fmt: skip
"""40 users: six service accounts and 34 people."""

_MODELS: dict[str, tuple[tuple[str, ...], tuple[int, int]]] = {
    "tiny": (("dslim/bert-base-NER", "cross-encoder/ms-marco-MiniLM-L-6-v2"), (50, 130)),
    "small": (("BAAI/bge-small-en-v1.5", "intfloat/e5-base-v2", "openai/whisper-base"), (130, 420)),
    "medium": (("BAAI/bge-large-en-v1.5", "openai/whisper-small", "BAAI/bge-base-en"), (420, 1300)),
    "large": (("Qwen/Qwen2.5-0.5B-Instruct", "openai/whisper-medium", "BAAI/bge-m3"), (1500, 3600)),
}
"""Memory class -> (models, MiB range of one worker)."""


@frozen
class _Deployment:
    user: str
    name: str
    command: str  # with {rank} and {port} for the worker's own
    memory_mib: tuple[int, int]
    cpu_pct: tuple[float, float]
    rss_mib: float
    popularity: float  # share of the workers, before normalisation
    activity: float  # how much of its GPUs' work one of its workers does, relatively
    container_id: str | None


def _command(r: random.Random, kind: str, user: str, model: str, d: int) -> tuple[str, str]:
    """(process name, command line) of one deployment's workers; ``{rank}`` and ``{port}`` in
    the command stand for each worker's own."""
    py = f"/home/{user}/.venv/bin/python"
    if user.startswith("svc-"):
        py = "/opt/serve/venv/bin/python"
    slug = model.rsplit("/", 1)[-1].lower()
    if kind == "serve":
        seqs = r.choice((4, 8, 16, 32))
        return "python", (
            f"{py} -m serve.worker --model {model} --dtype bfloat16 --max-num-seqs {seqs} "
            "--local-rank={rank} --port={port}"
        )
    if kind == "embed":
        batch = r.choice((16, 32, 64))
        return "python", (
            f"{py} embed_server.py --model {model} --batch-size {batch} "
            "--local-rank={rank} --port={port}"
        )
    if kind == "triton":
        parent = r.randrange(2_000, 90_000)
        return "triton_python_b", (  # the kernel's 15-character process name
            "/opt/tritonserver/backends/python/triton_python_backend_stub "
            f"/models/{slug}/1/model.py triton_python_backend_shm_region_{d}_{{rank}} 1048576 "
            f"1048576 {parent} /opt/tritonserver/backends/python 336 {slug}_0_{{rank}}"
        )
    if kind == "celery":
        app = slug.replace("-", "_").replace(".", "_")
        return "celery", (
            f"{py.rsplit('/', 1)[0]}/celery -A {app}.tasks worker --pool=solo --concurrency=1 "
            "--hostname=gpu-w{rank}@%h"
        )
    return "ray::ServeRepli", f"ray::ServeReplica:{slug}:Deployment{d}"


def _deployments(r: random.Random) -> list[_Deployment]:
    out: list[_Deployment] = []
    users = [(u, 2, r.uniform(60.0, 140.0)) for u in SERVICE_USERS]
    users += [(u, r.choice((1, 1, 1, 2)), r.lognormvariate(2.3, 0.7)) for u in PEOPLE]
    for user, count, popularity in users:
        for _ in range(count):
            d = len(out)
            size = r.choices(("tiny", "small", "medium", "large"), (40, 35, 18, 7))[0]
            models, memory = _MODELS[size]
            kind = r.choices(("serve", "embed", "triton", "celery", "ray"), (40, 25, 15, 12, 8))[0]
            name, command = _command(r, kind, user, r.choice(models), d)
            # bigger models do not run in hundreds of copies
            share = popularity / {"tiny": 1.0, "small": 1.0, "medium": 3.0, "large": 8.0}[size]
            out.append(
                _Deployment(
                    user=user,
                    name=name,
                    command=command,
                    memory_mib=memory,
                    cpu_pct=(r.uniform(0.2, 2.0), r.uniform(8.0, 45.0)),
                    rss_mib=r.uniform(220.0, 900.0),
                    popularity=share,
                    activity=r.lognormvariate(0.0, 0.8),
                    container_id=new_container_id(r) if user.startswith("svc-") else None,
                )
            )
    return out


def _split(total: int, weights: list[float]) -> list[int]:
    """``total`` split in proportion to ``weights`` (largest remainders), at least 1 each."""
    scale = (total - len(weights)) / sum(weights)
    raw = [w * scale for w in weights]
    counts = [1 + math.floor(x) for x in raw]
    by_remainder = sorted(range(len(raw)), key=lambda i: raw[i] - math.floor(raw[i]), reverse=True)
    for i in by_remainder[: total - sum(counts)]:
        counts[i] += 1
    return counts


def crowded_node(seed: int) -> Plan:
    """The plan of the ``crowded`` scenario (see the module docstring)."""
    s = "crowded"
    loads = {i: {"pool_load": wl.worker_pool(make_rng(s, seed, f"load/{i}"))} for i in range(GPUS)}
    bus = [f"00000000:{b}:00.0" for b in H100_BUS]
    gpus = gpu_plans(seed, s, H100_SXM, bus, faults=loads)
    r = make_rng(s, seed, "workers")
    deployments = _deployments(r)
    counts = _split(WORKERS, [d.popularity for d in deployments])
    drafts = []  # (deployment, rank, port, memory MiB, weight)
    for d, (dep, n) in enumerate(zip(deployments, counts, strict=True)):
        port0 = 20_000 + 400 * d
        for rank in range(n):
            mib = r.uniform(*dep.memory_mib)
            drafts.append((dep, rank, port0 + rank, mib, dep.activity * r.lognormvariate(0, 0.9)))
    # Spread by memory: biggest first, each onto the GPU holding least that still has room.
    per_gpu = WORKERS // GPUS
    placed: list[list[int]] = [[] for _ in range(GPUS)]
    held = [0.0] * GPUS
    for i in sorted(range(len(drafts)), key=lambda i: -drafts[i][3]):
        g = min((g for g in range(GPUS) if len(placed[g]) < per_gpu), key=lambda g: held[g])
        placed[g].append(i)
        held[g] += drafts[i][3]
    room = MEMORY_FILL * (H100_SXM.memory_total_mib - (H100_SXM.memory_reserved_mib or 0))
    pids = r.sample(range(WORKERS), WORKERS)  # which PID band each worker gets
    workers: list[WorkerPlan] = []
    for g in range(GPUS):
        fit = min(1.0, room / held[g])
        weight = sum(drafts[i][4] for i in placed[g])
        for i in sorted(placed[g]):
            dep, rank, port, mib, w = drafts[i]
            lifetime = r.uniform(*LIFETIME_S)
            workers.append(
                WorkerPlan(
                    gpu=g,
                    user=dep.user,
                    name=dep.name,
                    command=dep.command.format(rank=rank, port=port),
                    gpu_memory_bytes=max(50, int(mib * fit)) // 2 * 2 * MIB,
                    sm_weight=w / weight,
                    cpu_pct=dep.cpu_pct,
                    rss_bytes=int(dep.rss_mib * r.uniform(0.95, 1.08)) * MIB,
                    pid_base=PID_START + pids[len(workers)] * PID_BAND,
                    lifetime_s=lifetime,
                    phase_s=r.uniform(0.0, lifetime),
                    container_id=dep.container_id,
                )
            )
    busy = [r.uniform(6.0, 40.0) for _ in range(170)]  # the workers' host-side work
    host = HostPlan(
        hostname="infer-h100-04",
        memory_total_bytes=2015 * GIB,
        memory_base_used_bytes=48 * GIB,
        swap_total_bytes=0,
        swap_used_bytes=0,
        core_base_pct=core_loads(r, 224, busy),
        boot_age_s=r.uniform(5, 50) * 86400,
    )
    return Plan(
        scenario=s,
        seed=seed,
        **DGX_SOFTWARE,
        gpus=tuple(gpus),
        procs=(),
        host=host,
        workers=tuple(workers),
    )
