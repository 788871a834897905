"""The probe worker: quick PyTorch bandwidth and matmul tests, streamed as JSON lines.

Run as a child process (``python -m gputui.probe --device cuda:0``) so that torch, its CUDA
context and any crash stay out of the dashboard. Only this module imports torch at run time; the
tests themselves are in :mod:`gputui.probe.kernels` and :mod:`gputui.probe.matmul`.

Before torch starts, the worker binds itself to the GPU's local CPUs (``/sys/bus/pci/devices/
<bdf>/local_cpulist``, as nvbandwidth does) so that pinned host buffers sit on the GPU's NUMA
node. Its ``hello`` names the device it opened (UUID and PCI address as the runtime reports
them). A warm-up that fails (out of memory included) is retried smaller, then skipped with the
reason; it never ends the run.

Test hook: the environment variable ``GPUTUI_PROBE_INJECT_OOM=test_id:count[,test_id:count...]``
makes the named test (or ``warmup``) raise a synthetic out-of-memory error on its first ``count``
attempts, so the retry-at-half-size path can be tested on any machine. It has no other effect.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType, ModuleType

from gputui.probe import kernels, protocol
from gputui.probe.kernels import (
    INJECT_ENV,
    MIB,
    Cancelled,
    Context,
    Emit,
    SkipTest,
    TestFn,
    device_identity,
    free_memory,
    is_oom,
    p2p_peers,
    p2p_to,
    parse_inject,
)
from gputui.probe.matmul import MATMUL_DTYPES, Precision, matmul, retry_text
from gputui.probe.protocol import TEST_IDS, WARMUP, ProbeMessage

WORKER_VERSION = "2"
MAX_RETRIES = 3
WARMUP_SCALE = 0.25  # of the matmul tests' memory

TESTS: dict[str, TestFn] = {**kernels.TESTS, **{test: matmul for test in MATMUL_DTYPES}}
"""Every test but ``p2p``, which runs once per peer."""


def retry_size(ctx: Context, test: str, scale: float) -> tuple[int, str]:
    """The size a test will use at ``scale``: bytes (per buffer / operand) and in words."""
    if test in MATMUL_DTYPES:
        return retry_text(ctx, test, scale)
    return kernels.retry_size(ctx, test, scale)


def parse_cpu_list(text: str) -> set[int]:
    """``"0-3,8,10-11"`` -> {0, 1, 2, 3, 8, 10, 11}; entries that are not numbers are skipped."""
    cpus: set[int] = set()
    for part in text.replace("\n", ",").split(","):
        lo, _, hi = part.strip().partition("-")
        try:
            first, last = int(lo), int(hi or lo)
        except ValueError:
            continue
        cpus.update(range(first, last + 1))
    return cpus


def bind_near(pci_bus_id: str | None, root: Path | None = None) -> str:
    """Run this process on the CPUs local to the GPU at ``pci_bus_id`` (those it is allowed
    to use), so pinned host memory lands on the GPU's NUMA node; what was done, in words."""
    from gputui.core.pci import local_cpulist

    text = local_cpulist(pci_bus_id, root) if pci_bus_id else None
    if not text:
        return "CPU affinity unchanged (the GPU's local CPUs are not known)"
    local = parse_cpu_list(text)
    try:
        allowed = os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return "CPU affinity unchanged (not supported here)"
    use = local & allowed
    if not use:
        return f"CPU affinity unchanged (none of the GPU's local CPUs {text} is allowed here)"
    try:
        os.sched_setaffinity(0, use)
    except OSError as exc:
        return f"CPU affinity unchanged ({exc})"
    return f"process bound to the GPU's local CPUs {text}"


def _run_one(ctx: Context, test: str, fn: TestFn) -> None:
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
                ctx.emit(protocol.Error(test, f"{type(exc).__name__}: {exc}"))
                return
            del exc
            free_memory(ctx)
            if attempt == MAX_RETRIES:
                ctx.emit(protocol.Error(test, f"out of memory after {MAX_RETRIES} retries"))
                return
            scale /= 2
            size, text = retry_size(ctx, test, scale)
            ctx.emit(protocol.Retry(test, "out of memory", size, attempt + 1, text))
            continue
        finally:
            free_memory(ctx)
        ctx.emit(result)
        return


def default_seconds(device_kind: str, quick: bool = True) -> float:
    if not quick:
        return 5.0
    return 1.0 if device_kind != "cpu" else 0.3


def _ignore(msg: ProbeMessage) -> None:
    pass


def no_gpu_reason(torch: ModuleType) -> str:
    """Why torch has no GPU to give: a build without CUDA and ROCm (``torch 2.5.0+cpu``, the one
    pip installs where it finds no CUDA), or a GPU build that sees none (driver, container,
    ``CUDA_VISIBLE_DEVICES``)."""
    version = getattr(torch, "version", None)
    if getattr(version, "cuda", None) is None and getattr(version, "hip", None) is None:
        return f"torch {torch.__version__} is a CPU-only build (no CUDA or ROCm)"
    return f"torch {torch.__version__} sees no GPU"


def find_device(torch: ModuleType, pci_bus_id: str) -> tuple[int | None, bool]:
    """The visible device at ``pci_bus_id``: (its index or None, whether the runtime reports
    PCI addresses at all). Without addresses the caller keeps the index it was given."""
    from gputui.core.pci import parse_pci_bus_id

    want = parse_pci_bus_id(pci_bus_id)
    if want is None:
        return None, False
    reported = False
    for i in range(torch.cuda.device_count()):
        _, pci = device_identity(torch.cuda.get_device_properties(i))
        got = parse_pci_bus_id(pci)
        if got is None:
            continue
        reported = True
        if got.device_key == want.device_key:
            return i, True
    return None, reported


def run_probe(
    device: str = "cpu",
    tests: list[str] | None = None,
    size_scale: float = 1.0,
    seconds_per_test: float | None = None,
    long: bool = False,
    emit: Emit | None = None,
    cancel: threading.Event | None = None,
    pci_bus_id: str | None = None,
    peers: list[str] | None = None,
) -> int:
    """Run the probe in this process, calling ``emit`` with each message.

    ``pci_bus_id``: the GPU's PCI address: the process is bound to its local CPUs, and the
    visible GPU at this address is opened rather than ``cuda:N``'s N (where the runtime reports
    addresses; the hello says which device was opened either way). ``peers``: PCI addresses of
    the other GPUs P2P may copy to (None: every visible GPU).
    Returns the exit status: 0, 1 when the device cannot be used, 130 when cancelled.
    The caller's TF32 / float32 matmul precision settings are restored before returning.
    """
    affinity = bind_near(pci_bus_id) if pci_bus_id and device != "cpu" else ""
    import torch

    start = time.perf_counter()
    emit = emit or _ignore
    cancel = cancel or threading.Event()
    tests = list(tests) if tests else list(TEST_IDS)
    for t in tests:
        if t not in TEST_IDS:
            raise ValueError(f"unknown test id {t!r}; known: {', '.join(TEST_IDS)}")

    dev = torch.device(device)
    index: int | None
    uuid: str | None = None
    pci: str | None = None
    units: int | None = None
    if dev.type == "cpu":
        import psutil

        vm = psutil.virtual_memory()
        kind, name, index = "cpu", _cpu_name(), None
        total, free, l2 = int(vm.total), int(vm.available), 32 * MIB
    elif dev.type == "cuda":
        if not torch.cuda.is_available():
            emit(protocol.Error(None, f"{device}: {no_gpu_reason(torch)}"))
            emit(protocol.Done(time.perf_counter() - start))
            return 1
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        if pci_bus_id:
            found, reported = find_device(torch, pci_bus_id)
            if found is not None:
                index = found
            elif reported:
                emit(protocol.Error(None, f"{device}: no visible GPU at PCI {pci_bus_id}"))
                emit(protocol.Done(time.perf_counter() - start))
                return 1
        if index >= torch.cuda.device_count():
            emit(protocol.Error(None, f"{device}: no such GPU"))
            emit(protocol.Done(time.perf_counter() - start))
            return 1
        dev = torch.device("cuda", index)
        torch.cuda.set_device(dev)
        kind = "rocm" if getattr(torch.version, "hip", None) else "cuda"
        props = torch.cuda.get_device_properties(dev)
        name = props.name
        uuid, pci = device_identity(props)
        units = int(getattr(props, "multi_processor_count", 0) or 0) or None
        free, total = (int(x) for x in torch.cuda.mem_get_info(dev))
        l2 = int(getattr(props, "L2_cache_size", 0) or 50 * 1000 * 1000)
        if kind == "rocm":
            l2 = max(l2, 256 * MIB)  # MI300X Infinity Cache
    else:
        raise ValueError(f"unsupported device {device!r}; use cuda:N or cpu")

    if seconds_per_test is None:
        seconds_per_test = default_seconds(kind, quick=not long)
    emit(
        protocol.Hello(
            WORKER_VERSION, torch.__version__, kind, name, index, total, free, tests, uuid, pci
        )
    )
    ctx = Context(
        torch=torch,
        device=dev,
        device_index=index,
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
        units=units,
        precision=Precision(torch),
        affinity=affinity,
        peers=_peer_keys(peers),
    )
    precision = ctx.precision
    assert precision is not None
    current: str | None = None
    try:
        if ctx.gpu and any(t.startswith("matmul") for t in tests):
            current = WARMUP
            warm_up(ctx)
        for test in tests:
            current = test
            ctx.check_cancel()
            try:
                if test == "p2p":
                    for peer, access in p2p_peers(ctx):
                        _run_one(ctx, test, p2p_to(peer, access))
                else:
                    _run_one(ctx, test, TESTS[test])
            except SkipTest as exc:
                emit(protocol.Skipped(test, str(exc)))
            finally:
                precision.restore()
    except Cancelled:
        free_memory(ctx)
        emit(protocol.Error(current, protocol.CANCELLED))
        emit(protocol.Done(time.perf_counter() - start, cancelled=True))
        return 130
    finally:
        precision.restore()
        free_memory(ctx)
    emit(protocol.Done(time.perf_counter() - start))
    return 0


def warm_up(ctx: Context) -> bool:
    """The warm-up, retried at half size on out of memory; on a failure it is skipped with the
    reason (a ``skipped`` message for ``warmup``) and the tests run anyway. True when it ran."""
    scale = WARMUP_SCALE
    for _attempt in range(MAX_RETRIES + 1):
        try:
            _warmup(ctx, scale)
            return True
        except Cancelled:
            raise
        except Exception as exc:  # never let the warm-up end the run
            free_memory(ctx)
            if not is_oom(exc):
                why = f"{type(exc).__name__}: {exc}"
                ctx.emit(protocol.Skipped(WARMUP, f"warm-up failed ({why}); tests run cold"))
                return False
            scale /= 2
    ctx.emit(protocol.Skipped(WARMUP, f"out of memory after {MAX_RETRIES} retries; tests run cold"))
    return False


def _warmup(ctx: Context, scale: float = WARMUP_SCALE) -> None:
    """~min(2 s, budget) of BF16 matmuls: clock ramp, context and cuBLAS heuristics."""
    torch = ctx.torch
    n = ctx.matmul_n(2, scale)
    ctx.maybe_inject(WARMUP)
    a = torch.randn(n, n, dtype=torch.bfloat16, device=ctx.device)
    b = torch.randn(n, n, dtype=torch.bfloat16, device=ctx.device)
    seconds = min(2.0, 2 * ctx.seconds)
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        ctx.check_cancel()
        for _ in range(4):
            torch.mm(a, b)
        ctx.sync()
        ctx.progress(WARMUP, (time.perf_counter() - start) / seconds, "warming up")
    del a, b
    free_memory(ctx)


def _peer_keys(peers: list[str] | None) -> frozenset[tuple[int, int, int]] | None:
    if peers is None:
        return None
    from gputui.core.pci import pci_device_key

    return frozenset(key for p in peers if (key := pci_device_key(p)) is not None)


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
    p.add_argument(
        "--pci-bus-id",
        default=None,
        help="the GPU's PCI address: bind to its local CPUs, open the visible GPU there",
    )
    p.add_argument(
        "--p2p-peers", default="", help="PCI addresses of the GPUs P2P may copy to (default: all)"
    )
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
    cancel = threading.Event()

    def emit(msg: ProbeMessage) -> None:
        line = protocol.encode(msg)
        with lock:
            try:
                out.write(line + "\n")
                out.flush()
            except BrokenPipeError:  # the runner went away: stop
                cancel.set()

    def on_signal(signum: int, frame: FrameType | None) -> None:
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
            pci_bus_id=args.pci_bus_id,
            peers=[x for x in args.p2p_peers.split(",") if x.strip()] or None,
        )
    except Cancelled:  # cancelled before the run started (e.g. during import)
        emit(protocol.Error(None, protocol.CANCELLED))
        emit(protocol.Done(0.0, cancelled=True))
        return 130


__all__ = [
    "INJECT_ENV",
    "MAX_RETRIES",
    "TESTS",
    "WORKER_VERSION",
    "bind_near",
    "build_parser",
    "default_seconds",
    "find_device",
    "main",
    "parse_cpu_list",
    "parse_inject",
    "retry_size",
    "run_probe",
    "warm_up",
]
