"""The timed tests the probe worker runs: memory copy / triad, host <-> device, GPU <-> GPU and
matmul per dtype, each returning a :class:`~gputui.probe.protocol.Result`.

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

from gputui.probe import protocol
from gputui.probe.protocol import ProbeMessage

GIB = 1 << 30
MIB = 1 << 20
FREE_FRACTION = 0.25  # never take more than this share of free memory for one test
INJECT_ENV = "GPUTUI_PROBE_INJECT_OOM"

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
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


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
        base = 8192 if self.gpu else 1024
        # Memory scales with n^2; --size-scale and the OOM halving act on memory.
        n = base * math.sqrt(max(self.size_scale * scale, 1e-12))
        cap = math.sqrt(self.free * FREE_FRACTION / (3 * max(elem_bytes, 2)))
        n = int(min(n, cap))
        return max(32, n - n % 32)


def bench(
    ctx: Context, test: str, op: Callable[[], None], seconds: float
) -> tuple[list[float], int]:
    """Warm up, then time batches of back-to-back ``op`` calls for about ``seconds``.

    Returns the per-op seconds of each batch and the number of timed operations. GPU batches are
    bracketed by CUDA events (HIP events on ROCm); CPU batches by perf_counter around sync.
    """
    torch = ctx.torch
    ctx.progress(test, 0.0, "warming up")
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
    batch = int(min(50, max(1, 0.02 / one)))
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
            ctx.progress(test, (now - start) / seconds if seconds > 0 else 1.0, f"{ops} ops timed")
        if (now >= deadline and len(times) >= 3) or len(times) >= 1000:
            break
    ctx.progress(test, 1.0, f"{ops} ops timed")
    return times, ops


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
        method=f"{method}, {fmt_bytes(nbytes)} per copy, bytes counted once",
        details={"bytes": nbytes, "best": nbytes / best / 1e9, "pinned": True},
        iterations=ops,
        seconds=time.perf_counter() - t0,
    )


def p2p_peers(ctx: Context) -> list[int]:
    """The CUDA indices this GPU can copy to directly (peer access)."""
    torch = ctx.torch
    if not ctx.gpu:
        raise SkipTest("GPU-to-GPU copies need GPUs (device is the CPU)")
    me = ctx.device_index or 0
    peers = [
        j
        for j in range(torch.cuda.device_count())
        if j != me and torch.cuda.can_device_access_peer(me, j)
    ]
    if not peers:
        raise SkipTest("no peer GPU with peer access")
    return peers


def p2p_to(peer: int) -> TestFn:
    """The GPU -> GPU copy test towards ``peer``."""

    def run(ctx: Context, test: str, scale: float) -> protocol.Result:
        return _p2p(ctx, test, scale, peer)

    return run


def _p2p(ctx: Context, test: str, scale: float, peer: int) -> protocol.Result:
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
    return protocol.Result(
        test=test,
        value=nbytes / med / 1e9,
        unit="GB/s",
        method=f"dst.copy_(src) from cuda:{ctx.device_index} to cuda:{peer}, "
        f"{fmt_bytes(nbytes)}, unidirectional, bytes counted once",
        details={
            "src": ctx.device_index,
            "dst": peer,
            "bytes": nbytes,
            "best": nbytes / best / 1e9,
        },
        iterations=ops,
        seconds=time.perf_counter() - t0,
    )


def _fp8_dtype(ctx: Context) -> object:
    torch = ctx.torch
    if not ctx.gpu:
        raise SkipTest("FP8 matmul needs a GPU (device is the CPU)")
    if not hasattr(torch, "_scaled_mm"):
        raise SkipTest(f"torch {torch.__version__} has no torch._scaled_mm")
    props = torch.cuda.get_device_properties(ctx.device)
    if ctx.kind == "rocm":
        arch = getattr(props, "gcnArchName", "") or ""
        if "gfx942" in arch:
            return torch.float8_e4m3fnuz
        if "gfx950" in arch or "gfx12" in arch:
            return torch.float8_e4m3fn
        raise SkipTest(f"FP8 needs gfx942 or newer (this GPU is {arch or 'unknown'})")
    if (props.major, props.minor) < (8, 9):
        raise SkipTest(
            f"FP8 needs compute capability ≥ 8.9 (this GPU is {props.major}.{props.minor})"
        )
    return torch.float8_e4m3fn


MATMUL_DTYPES: dict[str, tuple[str, int, str]] = {
    "matmul_fp32": ("float32", 4, "FP32, TF32 off"),
    "matmul_tf32": ("float32", 4, "TF32 (float32 inputs, tensor cores)"),
    "matmul_fp16": ("float16", 2, "FP16"),
    "matmul_bf16": ("bfloat16", 2, "BF16"),
    "matmul_fp8": ("fp8", 1, "FP8 E4M3 via torch._scaled_mm, BF16 output"),
}
"""Test id -> (torch dtype name, bytes per element, label)."""


def matmul(ctx: Context, test: str, scale: float) -> protocol.Result:
    torch = ctx.torch
    dtype_name, elem, label = MATMUL_DTYPES[test]
    fp8 = None
    if test == "matmul_tf32" and not ctx.gpu:
        raise SkipTest("TF32 is a GPU tensor-core mode; the CPU has no TF32")
    if test == "matmul_fp8":
        fp8 = _fp8_dtype(ctx)
    n = ctx.matmul_n(elem, scale)
    ctx.maybe_inject(test)
    if test == "matmul_fp32":
        torch.set_float32_matmul_precision("highest")
        torch.backends.cuda.matmul.allow_tf32 = False
    elif test == "matmul_tf32":
        torch.set_float32_matmul_precision("high")
        torch.backends.cuda.matmul.allow_tf32 = True
    t0 = time.perf_counter()
    m = k = n
    if fp8 is not None:
        # Random data scaled into the E4M3 range (max 448); b column-major as _scaled_mm needs.
        a = (torch.randn(m, k, device=ctx.device) * 64).to(fp8)
        b = (torch.randn(n, k, device=ctx.device) * 64).to(fp8).t()
        one = torch.ones((), dtype=torch.float32, device=ctx.device)
        try:
            torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        except Exception as exc:  # any failure here means "unsupported"
            if is_oom(exc):
                raise
            raise SkipTest(f"torch._scaled_mm unsupported here: {exc}") from exc

        def op() -> None:
            torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    else:
        dt = getattr(torch, dtype_name)
        a = torch.randn(m, k, dtype=dt, device=ctx.device)
        b = torch.randn(n, k, dtype=dt, device=ctx.device).t()
        c = torch.empty(m, n, dtype=dt, device=ctx.device)

        def op() -> None:
            torch.mm(a, b, out=c)

    seconds = ctx.seconds
    if ctx.long and test == "matmul_bf16":
        seconds = max(seconds, 60.0)
    times, ops = bench(ctx, test, op, seconds)
    flops = 2.0 * m * n * k
    med, best = statistics.median(times), min(times)
    return protocol.Result(
        test=test,
        value=flops / med / 1e12,
        unit="TFLOPS",
        method=f"torch.mm {label}, {m}×{n}×{k}, randn data, FLOPs = 2·M·N·K, "
        f"{'CUDA-event' if ctx.gpu else 'perf_counter'} timing after warm-up",
        details={
            "m": m,
            "n": n,
            "k": k,
            "dtype": str(fp8).replace("torch.", "") if fp8 is not None else dtype_name,
            "best": flops / best / 1e12,
            "statistic": "median of batches",
            "operand_bytes": (m * k + n * k) * elem,
        },
        iterations=ops,
        seconds=time.perf_counter() - t0,
    )


TESTS: dict[str, TestFn] = {
    "memory_copy": memory,
    "memory_triad": memory,
    "h2d": host,
    "d2h": host,
    "matmul_fp32": matmul,
    "matmul_tf32": matmul,
    "matmul_fp16": matmul,
    "matmul_bf16": matmul,
    "matmul_fp8": matmul,
}
"""Every test but ``p2p``, which runs once per peer (:func:`p2p_peers`, :func:`p2p_to`)."""


def retry_size(ctx: Context, test: str, scale: float) -> tuple[int, str]:
    """The size a test will use at ``scale``: bytes (per buffer / operand) and in words."""
    if test.startswith("matmul"):
        _, elem, _ = MATMUL_DTYPES[test]
        n = ctx.matmul_n(elem, scale)
        return n * n * elem, f"{n}×{n}×{n}"
    if test in ("h2d", "d2h"):
        nbytes = max(4096, int(min(256 * MIB * ctx.size_scale * scale, ctx.free * FREE_FRACTION)))
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
