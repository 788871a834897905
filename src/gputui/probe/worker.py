"""The probe worker: quick PyTorch bandwidth and matmul tests, streamed as JSON lines.

Run as a child process (``python -m gputui.probe --device cuda:0``) so that torch, its CUDA
context and any crash stay out of the dashboard. Only this module imports torch.

Test hook: the environment variable ``GPUTUI_PROBE_INJECT_OOM=test_id:count[,test_id:count...]``
makes the named test raise a synthetic out-of-memory error on its first ``count`` attempts, so the
retry-at-half-size path can be tested on any machine. It has no other effect.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gputui.probe import protocol
from gputui.probe.protocol import TEST_IDS

WORKER_VERSION = "1"
GIB = 1 << 30
MIB = 1 << 20
MAX_RETRIES = 3
FREE_FRACTION = 0.25  # never take more than this share of free memory for one test
INJECT_ENV = "GPUTUI_PROBE_INJECT_OOM"

Emit = Callable[[dict[str, Any]], None]


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


def _fmt_bytes(n: float) -> str:
    for unit, size in (("GiB", GIB), ("MiB", MIB), ("KiB", 1024)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} B"


@dataclass
class Context:
    torch: Any
    device: Any  # torch.device
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
        self.emit(protocol.to_dict(protocol.Progress(test, round(fraction, 3), text)))

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

    def matmul_n(self, elem_bytes: int, scale: float) -> int:
        base = 8192 if self.gpu else 1024
        # Memory scales with n^2; --size-scale and the OOM halving act on memory.
        n = base * math.sqrt(max(self.size_scale * scale, 1e-12))
        cap = math.sqrt(self.free * FREE_FRACTION / (3 * max(elem_bytes, 2)))
        n = int(min(n, cap))
        return max(32, n - n % 32)


def _bench(ctx: Context, test: str, op: Callable[[], None], seconds: float) -> tuple[list, int]:
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


def _memory(ctx: Context, test: str, scale: float) -> protocol.Result:
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

        method = f"torch.add(b, c, alpha=2.0, out=a), 3×{_fmt_bytes(nbytes)} fp32, "
        method += "bytes counted 2 reads + 1 write"
    else:

        def op() -> None:
            a.copy_(b)

        method = f"dst.copy_(src), 2×{_fmt_bytes(nbytes)}, bytes counted read+write"
    times, ops = _bench(ctx, test, op, ctx.seconds)
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


def _host(ctx: Context, test: str, scale: float) -> protocol.Result:
    torch = ctx.torch
    if not ctx.gpu:
        raise SkipTest("host-to-device copies need a GPU (device is the CPU)")
    want = int(256 * MIB * ctx.size_scale * scale)
    nbytes = min(want, int(ctx.free * FREE_FRACTION))
    nbytes = max(4096, nbytes - nbytes % 4096)
    ctx.maybe_inject(test)
    t0 = time.perf_counter()
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    dev = torch.empty(nbytes, dtype=torch.uint8, device=ctx.device)
    if test == "h2d":

        def op() -> None:
            dev.copy_(host, non_blocking=True)

        method = "pinned host → device, dst.copy_(src, non_blocking=True)"
    else:

        def op() -> None:
            host.copy_(dev, non_blocking=True)

        method = "device → pinned host, dst.copy_(src, non_blocking=True)"
    times, ops = _bench(ctx, test, op, ctx.seconds)
    med, best = statistics.median(times), min(times)
    return protocol.Result(
        test=test,
        value=nbytes / med / 1e9,
        unit="GB/s",
        method=f"{method}, {_fmt_bytes(nbytes)} per copy, bytes counted once",
        details={"bytes": nbytes, "best": nbytes / best / 1e9, "pinned": True},
        iterations=ops,
        seconds=time.perf_counter() - t0,
    )


def _p2p_peers(ctx: Context) -> list[int]:
    torch = ctx.torch
    if not ctx.gpu:
        raise SkipTest("GPU-to-GPU copies need GPUs (device is the CPU)")
    me = ctx.device.index or 0
    peers = [
        j
        for j in range(torch.cuda.device_count())
        if j != me and torch.cuda.can_device_access_peer(me, j)
    ]
    if not peers:
        raise SkipTest("no peer GPU with peer access")
    return peers


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
        times, ops = _bench(ctx, test, op, ctx.seconds)
    finally:
        torch.cuda.synchronize(peer)
    med, best = statistics.median(times), min(times)
    return protocol.Result(
        test=test,
        value=nbytes / med / 1e9,
        unit="GB/s",
        method=f"dst.copy_(src) from cuda:{ctx.device.index} to cuda:{peer}, "
        f"{_fmt_bytes(nbytes)}, unidirectional, bytes counted once",
        details={
            "src": ctx.device.index,
            "dst": peer,
            "bytes": nbytes,
            "best": nbytes / best / 1e9,
        },
        iterations=ops,
        seconds=time.perf_counter() - t0,
    )


def _fp8_dtype(ctx: Context) -> Any:
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


_MATMUL_DTYPES = {
    "matmul_fp32": ("float32", 4, "FP32, TF32 off"),
    "matmul_tf32": ("float32", 4, "TF32 (float32 inputs, tensor cores)"),
    "matmul_fp16": ("float16", 2, "FP16"),
    "matmul_bf16": ("bfloat16", 2, "BF16"),
    "matmul_fp8": ("fp8", 1, "FP8 E4M3 via torch._scaled_mm, BF16 output"),
}


def _matmul(ctx: Context, test: str, scale: float) -> protocol.Result:
    torch = ctx.torch
    dtype_name, elem, label = _MATMUL_DTYPES[test]
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
    times, ops = _bench(ctx, test, op, seconds)
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


_TESTS: dict[str, Callable[[Context, str, float], protocol.Result]] = {
    "memory_copy": _memory,
    "memory_triad": _memory,
    "h2d": _host,
    "d2h": _host,
    "matmul_fp32": _matmul,
    "matmul_tf32": _matmul,
    "matmul_fp16": _matmul,
    "matmul_bf16": _matmul,
    "matmul_fp8": _matmul,
}


def _retry_size(ctx: Context, test: str, scale: float) -> tuple[int, str]:
    if test.startswith("matmul"):
        _, elem, _ = _MATMUL_DTYPES[test]
        n = ctx.matmul_n(elem, scale)
        return n * n * elem, f"{n}×{n}×{n}"
    if test in ("h2d", "d2h"):
        nbytes = max(4096, int(min(256 * MIB * ctx.size_scale * scale, ctx.free * FREE_FRACTION)))
        return nbytes, _fmt_bytes(nbytes)
    nbufs = 3 if test == "memory_triad" else 2
    nbytes = ctx.buffer_bytes(nbufs, scale)
    return nbytes, f"{nbufs}×{_fmt_bytes(nbytes)}"


def _free_memory(ctx: Context) -> None:
    import gc

    gc.collect()
    if ctx.gpu:
        ctx.torch.cuda.synchronize()
        ctx.torch.cuda.empty_cache()


def _run_one(ctx: Context, test: str, fn: Callable[[Context, str, float], protocol.Result]) -> None:
    """Run one test with OOM retries at half size; emit result / retry / error."""
    scale = 1.0
    for attempt in range(MAX_RETRIES + 1):
        ctx.check_cancel()
        try:
            result = fn(ctx, test, scale)
        except (Cancelled, SkipTest):
            raise
        except Exception as exc:  # report any failure of one test, go on
            if not is_oom(exc):
                ctx.emit(protocol.to_dict(protocol.Error(test, f"{type(exc).__name__}: {exc}")))
                return
            del exc
            _free_memory(ctx)
            if attempt == MAX_RETRIES:
                ctx.emit(
                    protocol.to_dict(
                        protocol.Error(test, f"out of memory after {MAX_RETRIES} retries")
                    )
                )
                return
            scale /= 2
            size, text = _retry_size(ctx, test, scale)
            ctx.emit(
                protocol.to_dict(protocol.Retry(test, "out of memory", size, attempt + 1, text))
            )
            continue
        finally:
            _free_memory(ctx)
        ctx.emit(protocol.to_dict(result))
        return


def _save_precision(torch: Any) -> tuple[Any, ...]:
    return (
        torch.get_float32_matmul_precision(),
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
    )


def _restore_precision(torch: Any, saved: tuple[Any, ...]) -> None:
    precision, matmul_tf32, cudnn_tf32 = saved
    torch.set_float32_matmul_precision(precision)
    torch.backends.cuda.matmul.allow_tf32 = matmul_tf32
    torch.backends.cudnn.allow_tf32 = cudnn_tf32


def default_seconds(device_kind: str, quick: bool = True) -> float:
    if not quick:
        return 5.0
    return 1.0 if device_kind != "cpu" else 0.3


def run_probe(
    device: str = "cpu",
    tests: list[str] | None = None,
    size_scale: float = 1.0,
    seconds_per_test: float | None = None,
    long: bool = False,
    emit: Emit | None = None,
    cancel: threading.Event | None = None,
) -> int:
    """Run the probe in this process, calling ``emit`` with each message dict.

    Returns the exit status: 0, 1 when the device cannot be used, 130 when cancelled.
    The caller's TF32 / float32 matmul precision settings are restored before returning.
    """
    import torch

    start = time.perf_counter()
    emit = emit or (lambda msg: None)
    cancel = cancel or threading.Event()
    tests = list(tests) if tests else list(TEST_IDS)
    for t in tests:
        if t not in TEST_IDS:
            raise ValueError(f"unknown test id {t!r}; known: {', '.join(TEST_IDS)}")

    dev = torch.device(device)
    if dev.type == "cpu":
        import psutil

        vm = psutil.virtual_memory()
        kind, name, index = "cpu", _cpu_name(), None
        total, free, l2 = int(vm.total), int(vm.available), 32 * MIB
    elif dev.type == "cuda":
        if not torch.cuda.is_available():
            emit(protocol.to_dict(protocol.Error(None, f"{device}: torch sees no GPU")))
            emit(protocol.to_dict(protocol.Done(time.perf_counter() - start)))
            return 1
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        if index >= torch.cuda.device_count():
            emit(protocol.to_dict(protocol.Error(None, f"{device}: no such GPU")))
            emit(protocol.to_dict(protocol.Done(time.perf_counter() - start)))
            return 1
        dev = torch.device("cuda", index)
        torch.cuda.set_device(dev)
        kind = "rocm" if getattr(torch.version, "hip", None) else "cuda"
        props = torch.cuda.get_device_properties(dev)
        name = props.name
        free, total = (int(x) for x in torch.cuda.mem_get_info(dev))
        l2 = int(getattr(props, "L2_cache_size", 0) or 50 * 1000 * 1000)
        if kind == "rocm":
            l2 = max(l2, 256 * MIB)  # MI300X Infinity Cache
    else:
        raise ValueError(f"unsupported device {device!r}; use cuda:N or cpu")

    if seconds_per_test is None:
        seconds_per_test = default_seconds(kind, quick=not long)
    emit(
        protocol.to_dict(
            protocol.Hello(WORKER_VERSION, torch.__version__, kind, name, index, total, free, tests)
        )
    )
    ctx = Context(
        torch=torch,
        device=dev,
        kind=kind,
        seconds=float(seconds_per_test),
        size_scale=float(size_scale),
        long=long,
        emit=emit,
        cancel=cancel,
        free=free,
        total=total,
        l2=l2,
        inject=parse_inject(os.environ.get(INJECT_ENV)),
    )
    saved = _save_precision(torch)
    current: str | None = None
    try:
        if ctx.gpu and any(t.startswith("matmul") for t in tests):
            current = "warmup"
            _warmup(ctx)
        for test in tests:
            current = test
            ctx.check_cancel()
            try:
                if test == "p2p":
                    for peer in _p2p_peers(ctx):
                        _run_one(ctx, test, lambda c, t, s, p=peer: _p2p(c, t, s, p))
                else:
                    _run_one(ctx, test, _TESTS[test])
            except SkipTest as exc:
                emit(protocol.to_dict(protocol.Skipped(test, str(exc))))
            finally:
                _restore_precision(torch, saved)
    except Cancelled:
        _free_memory(ctx)
        emit(protocol.to_dict(protocol.Error(current, protocol.CANCELLED)))
        emit(protocol.to_dict(protocol.Done(time.perf_counter() - start, cancelled=True)))
        return 130
    finally:
        _restore_precision(torch, saved)
        _free_memory(ctx)
    emit(protocol.to_dict(protocol.Done(time.perf_counter() - start)))
    return 0


def _warmup(ctx: Context) -> None:
    """~min(2 s, budget) of BF16 matmuls: clock ramp, context and cuBLAS heuristics."""
    torch = ctx.torch
    n = ctx.matmul_n(2, 0.25)
    a = torch.randn(n, n, dtype=torch.bfloat16, device=ctx.device)
    b = torch.randn(n, n, dtype=torch.bfloat16, device=ctx.device)
    seconds = min(2.0, 2 * ctx.seconds)
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        ctx.check_cancel()
        for _ in range(4):
            torch.mm(a, b)
        ctx.sync()
        ctx.progress("warmup", (time.perf_counter() - start) / seconds, "warming up")
    del a, b
    _free_memory(ctx)


def _cpu_name() -> str:
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return "CPU: " + line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "CPU: " + (platform.processor() or platform.machine() or "unknown")


# --- command line -------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m gputui.probe",
        description="gputui probe worker: bandwidth and matmul tests, JSON lines on stdout.",
    )
    p.add_argument("--device", default="cuda:0", help="cuda:N (NVIDIA or ROCm) or cpu")
    p.add_argument("--tests", default="", help=f"comma-separated subset of {','.join(TEST_IDS)}")
    p.add_argument(
        "--size-scale", type=float, default=1.0, help="multiply buffer sizes (tests: 0.001)"
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="short timings (default)")
    mode.add_argument("--long", action="store_true", help="60 s sustained BF16 matmul")
    p.add_argument("--seconds-per-test", type=float, default=None, help="timed seconds per test")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    tests = [t.strip() for t in args.tests.split(",") if t.strip()] or None
    if tests:
        bad = [t for t in tests if t not in TEST_IDS]
        if bad:
            print(f"unknown test id(s): {', '.join(bad)}", file=sys.stderr)
            return 2
    if args.size_scale <= 0:
        print("--size-scale must be positive", file=sys.stderr)
        return 2

    # JSON goes to the original stdout; everything else (torch, libraries) to stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8", buffering=1)
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    lock = threading.Lock()

    def emit(msg: dict[str, Any]) -> None:
        line = protocol.encode(msg)
        with lock:
            try:
                out.write(line + "\n")
                out.flush()
            except BrokenPipeError:  # the runner went away: stop
                cancel.set()

    cancel = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        cancel.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        return run_probe(
            device=args.device,
            tests=tests,
            size_scale=args.size_scale,
            seconds_per_test=args.seconds_per_test,
            long=args.long,
            emit=emit,
            cancel=cancel,
        )
    except Cancelled:  # cancelled before the run started (e.g. during import)
        emit(protocol.to_dict(protocol.Error(None, protocol.CANCELLED)))
        emit(protocol.to_dict(protocol.Done(0.0, cancelled=True)))
        return 130
