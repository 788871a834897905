"""The timed tests the probe worker runs: memory copy / triad, host <-> device and GPU <-> GPU
(matmul is in :mod:`gputui.probe.matmul`), each returning a :class:`~gputui.probe.protocol.
Result`, and what they share: the device :class:`Context`, the timing loop :func:`bench`.

Runs in the worker child only. torch arrives as the module in :class:`Context` (the worker imports
it), so importing this module does not load torch.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING

from gputui.probe import protocol
from gputui.probe.protocol import ProbeMessage

if TYPE_CHECKING:
    from gputui.probe.matmul import Precision

GIB = 1 << 30
MIB = 1 << 20
FREE_FRACTION = 0.25  # never take more than this share of free memory for one test
INJECT_ENV = "GPUTUI_PROBE_INJECT_OOM"
ALIGN = 256  # matrix dimensions stay multiples of this, halved or not
BATCH_SECONDS = 0.02  # a timed batch lasts about this long
MAX_BATCHES = 2000
"""The most batch times one test keeps: past it, neighbours are merged and batches doubled, so a
test runs its whole duration (``--long``: 60 s) in bounded memory."""
OOM_TEXTS = (
    "out of memory",
    "cublas_status_alloc_failed",
    "hipblas_status_alloc_failed",
    "rocblas_status_memory_error",
    "hipblaslt_status_alloc_failed",
)
"""Exception texts that mean the device ran out of memory (BLAS handles fail to allocate)."""

Emit = Callable[[ProbeMessage], None]


class Cancelled(Exception):
    """The run was cancelled (SIGTERM/SIGINT or the cancel event)."""


class SkipTest(Exception):
    """The test does not apply to this device; the message is the reason."""


class InjectedOOM(MemoryError):
    """Synthetic out-of-memory raised by the GPUTUI_PROBE_INJECT_OOM test hook."""


def parse_inject(value: str | None) -> dict[str, int]:
    """``"memory_copy:2,matmul_fp32:1"`` -> ``{"memory_copy": 2, "matmul_fp32": 1}``."""
    out: dict[str, int] = {}
    for part in (value or "").split(","):
        if ":" in part:
            name, _, count = part.strip().partition(":")
            with contextlib.suppress(ValueError):
                out[name.strip()] = int(count)
    return out


def is_oom(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    try:
        import torch

        if isinstance(exc, torch.cuda.OutOfMemoryError):
            return True
    except ImportError:  # pragma: no cover
        pass
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and any(t in text for t in OOM_TEXTS)


def fmt_bytes(n: float) -> str:
    for unit, size in (("GiB", GIB), ("MiB", MIB), ("KiB", 1024)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} B"


@dataclass
class Context:
    """One device and the run's settings, shared by every test."""

    torch: ModuleType
    device: object  # torch.device
    device_index: int | None  # cuda:N's N; None on the CPU
    kind: str  # cuda | rocm | cpu
    seconds: float  # timed seconds per test
    size_scale: float
    long: bool
    emit: Emit
    cancel: threading.Event
    free: int
    total: int
    l2: int
    inject: dict[str, int] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)
    units: int | None = None  # SMs (NVIDIA) or CUs (AMD); None on the CPU
    precision: Precision | None = None  # float32 matmul precision (matmul tests set it)
    affinity: str = ""  # where the process runs, in words (host copies say it)
    peers: frozenset[tuple[int, int, int]] | None = None  # P2P only to these PCI devices

    @property
    def unit_name(self) -> str:
        return "CUs" if self.kind == "rocm" else "SMs"

    @property
    def gpu(self) -> bool:
        return self.kind != "cpu"

    def check_cancel(self) -> None:
        if self.cancel.is_set():
            raise Cancelled()

    def sync(self) -> None:
        if self.gpu:
            self.torch.cuda.synchronize(self.device)

    def progress(self, test: str, fraction: float, text: str = "") -> None:
        fraction = min(1.0, max(0.0, fraction))
        self.emit(protocol.Progress(test, round(fraction, 3), text))

    def maybe_inject(self, test: str) -> None:
        n = self.attempts.get(test, 0) + 1
        self.attempts[test] = n
        if n <= self.inject.get(test, 0):
            raise InjectedOOM(f"out of memory (injected by {INJECT_ENV}, attempt {n})")

    def buffer_bytes(self, nbufs: int, scale: float) -> int:
        """Bytes per buffer: >= 8x the last-level cache, <= 25% of free memory for all buffers."""
        want = max(8 * self.l2, GIB if self.gpu else 256 * MIB)
        cap = int(self.free * FREE_FRACTION / nbufs)
        size = int(min(want, cap) * self.size_scale * scale)
        return max(4096, size - size % 4096)

    def host_copy_bytes(self, scale: float) -> int:
        """Bytes per host <-> device copy: 256 MiB scaled, <= 25% of free memory."""
        want = int(256 * MIB * self.size_scale * scale)
        nbytes = min(want, int(self.free * FREE_FRACTION))
        return max(4096, nbytes - nbytes % 4096)

    def matmul_n(self, elem_bytes: int, scale: float) -> int:
        """The square shape's side: 8192 (1024 on the CPU) scaled, a multiple of 256."""
        base = 8192 if self.gpu else 1024
        # Memory scales with n^2; --size-scale and the OOM halving act on memory.
        n = base * math.sqrt(max(self.size_scale * scale, 1e-12))
        cap = math.sqrt(self.free * FREE_FRACTION / (3 * max(elem_bytes, 2)))
        n = int(min(n, cap))
        return max(ALIGN, n - n % ALIGN)


def bench(
    ctx: Context,
    test: str,
    op: Callable[[], None],
    seconds: float,
    span: tuple[float, float] = (0.0, 1.0),
) -> tuple[list[float], int]:
    """Warm up, then time batches of back-to-back ``op`` calls for about ``seconds``.

    Returns the per-op seconds of each batch and the number of timed operations. GPU batches are
    bracketed by CUDA events (HIP events on ROCm); CPU batches by perf_counter around sync.
    ``span``: (start, width) of the test's progress this call covers (a test of several parts).
    """
    torch = ctx.torch
    start_at, width = span

    def progress(fraction: float, text: str) -> None:
        ctx.progress(test, start_at + width * min(1.0, max(0.0, fraction)), text)

    progress(0.0, "warming up")
    # Warm-up: first call (allocation, library heuristics), then ~15% of the budget (>= 2 ops).
    op()
    ctx.sync()
    warm_ops = 0
    t0 = time.perf_counter()
    warm_end = t0 + 0.15 * seconds
    while warm_ops < 2 or time.perf_counter() < warm_end:
        ctx.check_cancel()
        op()
        ctx.sync()
        warm_ops += 1
    one = max((time.perf_counter() - t0) / warm_ops, 1e-7)
    batch = int(min(50, max(1, BATCH_SECONDS / one)))
    times: list[float] = []
    ops = 0
    start = time.perf_counter()
    deadline = start + seconds
    last_report = start
    while True:
        ctx.check_cancel()
        if ctx.gpu:
            begin = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            begin.record()
            for _ in range(batch):
                op()
            end.record()
            end.synchronize()
            elapsed = begin.elapsed_time(end) / 1000.0
        else:
            t0 = time.perf_counter()
            for _ in range(batch):
                op()
            elapsed = time.perf_counter() - t0
        times.append(max(elapsed, 1e-9) / batch)
        ops += batch
        now = time.perf_counter()
        if now - last_report >= 0.1:  # at most ~10 progress lines a second
            last_report = now
            progress((now - start) / seconds if seconds > 0 else 1.0, f"{ops} ops timed")
        if now >= deadline and len(times) >= 3:
            break
        if len(times) >= MAX_BATCHES:  # keep memory bounded, not the duration
            times = [(a + b) / 2 for a, b in zip(times[::2], times[1::2], strict=False)]
            batch *= 2
    progress(1.0, f"{ops} ops timed")
    return times, ops


def timing_words(ctx: Context, times: list[float], ops: int) -> str:
    """How a test's value was timed and reduced, in words (goes into every method text)."""
    batches = max(len(times), 1)
    per_batch = max(1, round(ops / batches))
    clock = "perf_counter around a sync"
    if ctx.gpu:
        clock = "HIP events" if ctx.kind == "rocm" else "CUDA events"
    return (
        f"median of {batches} batches of {per_batch} back-to-back ops timed with {clock}, "
        "after a warm-up"
    )


def device_identity(props: object) -> tuple[str | None, str | None]:
    """(UUID, PCI address) of a device from torch's device properties, None where torch does not
    report one (older releases have no PCI fields; the UUID reads as all zeros where the runtime
    gives none). The UUID is printed the runtime's way, without NVML's ``GPU-`` prefix. The
    address is ``dddd:bb:dd`` with no function: CUDA's and HIP's device properties carry
    ``pciDomainID``, ``pciBusID`` and ``pciDeviceID`` only, and a function made up here would
    hide which partition of an AMD GPU a worker opened (partitions differ by function alone)."""
    from gputui.core.pci import parse_pci_bus_id

    raw = getattr(props, "uuid", None)
    uuid = str(raw).strip() if raw is not None else ""
    if not uuid.replace("0", "").replace("-", ""):
        uuid = ""
    parts = [
        getattr(props, name, None) for name in ("pci_domain_id", "pci_bus_id", "pci_device_id")
    ]
    pci = None
    if all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in parts):
        domain, bus, dev = (int(x) for x in parts if isinstance(x, int))
        address = parse_pci_bus_id(f"{domain:04x}:{bus:02x}:{dev:02x}")
        pci = f"{domain:04x}:{bus:02x}:{dev:02x}" if address is not None else None
    return uuid or None, pci


# --- the tests; each gets a scale factor (halved on OOM) and returns a Result -----------------

TestFn = Callable[[Context, str, float], protocol.Result]


def memory(ctx: Context, test: str, scale: float) -> protocol.Result:
    torch = ctx.torch
    triad = test == "memory_triad"
    nbufs = 3 if triad else 2
    nbytes = ctx.buffer_bytes(nbufs, scale)
    ctx.maybe_inject(test)
    n = nbytes // 4
    t0 = time.perf_counter()
    a = torch.empty(n, dtype=torch.float32, device=ctx.device)
    b = torch.randn(n, dtype=torch.float32, device=ctx.device)
    if triad:
        c = torch.randn(n, dtype=torch.float32, device=ctx.device)

        def op() -> None:
            torch.add(b, c, alpha=2.0, out=a)

        method = f"torch.add(b, c, alpha=2.0, out=a), 3×{fmt_bytes(nbytes)} fp32, "
        method += "bytes counted 2 reads + 1 write"
    else:

        def op() -> None:
            a.copy_(b)

        method = f"dst.copy_(src), 2×{fmt_bytes(nbytes)}, bytes counted read+write"
    times, ops = bench(ctx, test, op, ctx.seconds)
    moved = nbufs * nbytes
    med, best = statistics.median(times), min(times)
    method += f" ({fmt_bytes(moved)} per op, decimal GB/s); {timing_words(ctx, times, ops)}"
    return protocol.Result(
        test=test,
        value=moved / med / 1e9,
        unit="GB/s",
        method=method + ("" if ctx.gpu else " (CPU)"),
        details={
            "buffer_bytes": nbytes,
            "buffers": nbufs,
            "bytes_per_op": moved,
            "dtype": "float32",
            "best": moved / best / 1e9,
            "statistic": "median of batches",
            "l2_bytes": ctx.l2,
        },
        iterations=ops,
        seconds=time.perf_counter() - t0,
    )


def host(ctx: Context, test: str, scale: float) -> protocol.Result:
    torch = ctx.torch
    if not ctx.gpu:
        raise SkipTest("host-to-device copies need a GPU (device is the CPU)")
    nbytes = ctx.host_copy_bytes(scale)
    ctx.maybe_inject(test)
    t0 = time.perf_counter()
    pinned = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    dev = torch.empty(nbytes, dtype=torch.uint8, device=ctx.device)
    if test == "h2d":

        def op() -> None:
            dev.copy_(pinned, non_blocking=True)

        method = "pinned host → device, dst.copy_(src, non_blocking=True)"
    else:

        def op() -> None:
            pinned.copy_(dev, non_blocking=True)

        method = "device → pinned host, dst.copy_(src, non_blocking=True)"
    times, ops = bench(ctx, test, op, ctx.seconds)
    med, best = statistics.median(times), min(times)
    return protocol.Result(
        test=test,
        value=nbytes / med / 1e9,
        unit="GB/s",
        method=f"{method}, {fmt_bytes(nbytes)} per copy, bytes counted once, "
        f"{ctx.affinity or 'CPU affinity unchanged'}; {timing_words(ctx, times, ops)}",
        details={
            "bytes": nbytes,
            "best": nbytes / best / 1e9,
            "pinned": True,
            "affinity": ctx.affinity,
        },
        iterations=ops,
        seconds=time.perf_counter() - t0,
    )


def p2p_peers(ctx: Context) -> list[tuple[int, bool]]:
    """Every other GPU this worker may copy to, with whether the runtime grants peer access.

    The runner makes only the probed GPUs visible; where it cannot (no runtime UUIDs), it names
    their PCI addresses and the others are left out here. A pair without peer access is still
    timed and says so: torch then copies through host memory."""
    torch = ctx.torch
    if not ctx.gpu:
        raise SkipTest("GPU-to-GPU copies need GPUs (device is the CPU)")
    me = ctx.device_index or 0
    peers: list[tuple[int, bool]] = []
    for j in range(torch.cuda.device_count()):
        if j == me:
            continue
        if ctx.peers is not None:
            from gputui.core.pci import pci_device_key

            _, pci = device_identity(torch.cuda.get_device_properties(j))
            key = pci_device_key(pci)
            if key is not None and key not in ctx.peers:
                continue
        peers.append((j, bool(torch.cuda.can_device_access_peer(me, j))))
    if not peers:
        raise SkipTest("no other probed GPU visible: GPU-to-GPU copies need two")
    return peers


def p2p_to(peer: int, access: bool = True) -> TestFn:
    """The GPU -> GPU copy test towards ``peer`` (``access``: the runtime grants peer access)."""

    def run(ctx: Context, test: str, scale: float) -> protocol.Result:
        return _p2p(ctx, test, scale, peer, access)

    return run


def _p2p(ctx: Context, test: str, scale: float, peer: int, access: bool) -> protocol.Result:
    torch = ctx.torch
    nbytes = ctx.buffer_bytes(2, scale)
    ctx.maybe_inject(test)
    t0 = time.perf_counter()
    src = torch.empty(nbytes, dtype=torch.uint8, device=ctx.device)
    dst = torch.empty(nbytes, dtype=torch.uint8, device=torch.device("cuda", peer))

    def op() -> None:
        dst.copy_(src)

    try:
        times, ops = bench(ctx, test, op, ctx.seconds)
    finally:
        torch.cuda.synchronize(peer)
    med, best = statistics.median(times), min(times)
    props = torch.cuda.get_device_properties(peer)
    dst_uuid, dst_pci = device_identity(props)
    peer_name = dst_pci or getattr(props, "name", "?")
    how = (
        "peer access granted by the runtime"
        if access
        else "NO peer access: torch copies through host memory"
    )
    return protocol.Result(
        test=test,
        value=nbytes / med / 1e9,
        unit="GB/s",
        method=f"dst.copy_(src) from cuda:{ctx.device_index} to cuda:{peer} ({peer_name}), "
        f"{how}, {fmt_bytes(nbytes)}, one direction, bytes counted once; "
        f"{timing_words(ctx, times, ops)}",
        details={
            "src": ctx.device_index,
            "dst": peer,
            "dst_uuid": dst_uuid,
            "dst_pci_bus_id": dst_pci,
            "peer_access": access,
            "bytes": nbytes,
            "best": nbytes / best / 1e9,
        },
        iterations=ops,
        seconds=time.perf_counter() - t0,
    )


TESTS: dict[str, TestFn] = {
    "memory_copy": memory,
    "memory_triad": memory,
    "h2d": host,
    "d2h": host,
}
"""The tests of this module but ``p2p``, which runs once per peer (:func:`p2p_peers`,
:func:`p2p_to`); the worker adds the matmul tests (:mod:`gputui.probe.matmul`)."""


def retry_size(ctx: Context, test: str, scale: float) -> tuple[int, str]:
    """The size a memory / host / P2P test will use at ``scale``: bytes per buffer, in words."""
    if test in ("h2d", "d2h"):
        nbytes = ctx.host_copy_bytes(scale)
        return nbytes, fmt_bytes(nbytes)
    nbufs = 3 if test == "memory_triad" else 2
    nbytes = ctx.buffer_bytes(nbufs, scale)
    return nbytes, f"{nbufs}×{fmt_bytes(nbytes)}"


def free_memory(ctx: Context) -> None:
    """Drop what the last test allocated (and the caching allocator's hold on it)."""
    import gc

    gc.collect()
    if ctx.gpu:
        ctx.torch.cuda.synchronize()
        ctx.torch.cuda.empty_cache()
