"""The matmul tests of the probe worker: TFLOPS per precision over a few wave-filling shapes.

Runs in the worker child only (torch arrives through :class:`~gputui.probe.kernels.Context`).

* Shapes: 8192³ (scaled to the memory at hand), then M x N sized so that its output tiles fill
  whole waves of the GPU's SMs / CUs (256 x 128 tiles assumed), once with K = 8192 and once with
  a deep K like mamf-finder's best shapes (H100: 2048x2048x13312). One square shape alone
  rounds badly on some GPUs: 8192² in 256x128 tiles is 2048 tiles, 6.7 waves of MI300X's 304 CUs,
  so the last wave runs 70% empty.
* Statistic: each shape's value is the median of its timed batches; the result is the best shape
  (as mamf-finder reports the best of a shape sweep). The method text says which shapes ran and
  which one won.
* Precision: float32 matmuls are set to TF32 or IEEE through ``fp32_precision`` where this torch
  has it (2.9 and later: mixing it with the old ``allow_tf32`` flags raises), else through the old
  flags; :class:`Precision` puts every setting back. On ROCm, torch runs TF32 (XF32) only with
  ``HIPBLASLT_ALLOW_TF32=1`` (the runner sets it for the child); without it the TF32 test is
  skipped with that reason rather than timing plain FP32 against the TF32 peak.
  The TF32 override variables (``TORCH_ALLOW_TF32_CUBLAS_OVERRIDE``, ``NVIDIA_TF32_OVERRIDE``)
  are removed from the worker's environment by the runner; the method text says whether any is
  set all the same (a worker started by hand).
* FP8: ``torch._scaled_mm`` on unscaled ``randn`` data clamped to the format's range (E4M3FNUZ on
  MI300X tops out at 240: scaling by 64 would turn ~2e-4 of the values into NaN), FP32
  accumulation (``use_fast_accum=False``) and a preallocated BF16 output, timed sustained like
  the other tests (about a second per test, at whatever clock the power cap allows).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Mapping
from types import ModuleType

from gputui.probe import protocol
from gputui.probe.children import TF32_OVERRIDE_VARS
from gputui.probe.kernels import (
    FREE_FRACTION,
    Context,
    SkipTest,
    bench,
    free_memory,
    is_oom,
    timing_words,
)

MATMUL_DTYPES: dict[str, tuple[str, int, str]] = {
    "matmul_fp32": ("float32", 4, "FP32, TF32 off"),
    "matmul_tf32": ("float32", 4, "TF32 (float32 inputs, tensor cores)"),
    "matmul_fp16": ("float16", 2, "FP16"),
    "matmul_bf16": ("bfloat16", 2, "BF16"),
    "matmul_fp8": ("fp8", 1, "FP8 E4M3 (use_fast_accum=False), BF16 output"),
}
"""Test id -> (torch dtype name, bytes per element, label)."""

TILE = (256, 128)
"""Output tile assumed when sizing a shape to whole waves (what cuBLAS / hipBLASLt pick for
large BF16 GEMMs, or a divisor of it)."""
HIPBLASLT_TF32_ENV = "HIPBLASLT_ALLOW_TF32"
LONG_BF16_SECONDS = 60.0

_FP32_PATHS = (
    "",
    "cuda.matmul",
    "cudnn",
    "cudnn.conv",
    "cudnn.rnn",
    "mkldnn",
    "mkldnn.matmul",
    "mkldnn.conv",
    "mkldnn.rnn",
)
"""Where torch 2.9+ keeps ``fp32_precision`` (``torch.backends`` and its sub-backends)."""

Shape = tuple[int, int, int]


class Precision:
    """The float32 matmul precision, set and restored through the API this torch has."""

    def __init__(self, torch: ModuleType) -> None:
        self.torch = torch
        self.new_api = hasattr(torch.backends.cuda.matmul, "fp32_precision")
        self.saved = self._read()

    def _backend(self, path: str) -> object:
        obj: object = self.torch.backends
        for part in filter(None, path.split(".")):
            obj = getattr(obj, part)
        return obj

    def _read(self) -> dict[str, object]:
        torch = self.torch
        if not self.new_api:
            return {
                "matmul": torch.get_float32_matmul_precision(),
                "allow_tf32": torch.backends.cuda.matmul.allow_tf32,
                "cudnn_tf32": torch.backends.cudnn.allow_tf32,
            }
        out: dict[str, object] = {}
        for path in _FP32_PATHS:
            try:
                out[path] = getattr(self._backend(path), "fp32_precision")  # noqa: B009
            except (AttributeError, RuntimeError):
                continue
        return out

    def set_tf32(self, on: bool) -> None:
        """TF32 on (tensor cores) or off (IEEE FP32) for CUDA / ROCm matmuls."""
        torch = self.torch
        if self.new_api:
            torch.backends.cuda.matmul.fp32_precision = "tf32" if on else "ieee"
        else:
            torch.set_float32_matmul_precision("high" if on else "highest")
            torch.backends.cuda.matmul.allow_tf32 = on

    def tf32(self) -> bool:
        """TF32 is what torch will use now (read back after :meth:`set_tf32`)."""
        matmul = self.torch.backends.cuda.matmul
        if self.new_api:
            return bool(matmul.fp32_precision == "tf32")
        return bool(matmul.allow_tf32)

    def describe(self) -> str:
        matmul = self.torch.backends.cuda.matmul
        if self.new_api:
            return f'torch.backends.cuda.matmul.fp32_precision = "{matmul.fp32_precision}"'
        return f"torch.backends.cuda.matmul.allow_tf32 = {matmul.allow_tf32}"

    def restore(self) -> None:
        """Every setting as it was when this object was made (the caller's)."""
        torch = self.torch
        if not self.new_api:
            torch.set_float32_matmul_precision(str(self.saved["matmul"]))
            torch.backends.cuda.matmul.allow_tf32 = bool(self.saved["allow_tf32"])
            torch.backends.cudnn.allow_tf32 = bool(self.saved["cudnn_tf32"])
            return
        for path, value in self.saved.items():  # the generic setting first, as read
            setattr(self._backend(path), "fp32_precision", value)  # noqa: B010


def tf32_override_words(environ: Mapping[str, str] | None = None) -> str:
    """What the TF32 override variables are in this process, in words (the runner removes
    them from the workers' environment: :data:`gputui.probe.children.TF32_OVERRIDE_VARS`)."""
    env = os.environ if environ is None else environ
    found = [f"{name}={env[name]}" for name in TF32_OVERRIDE_VARS if name in env]
    if found:
        return f"{', '.join(found)} set: it may override the setting above"
    return f"{' and '.join(TF32_OVERRIDE_VARS)} unset (removed from the worker's environment)"


def tf32_problem(kind: str, environ: dict[str, str] | None = None) -> str | None:
    """Why TF32 cannot be in effect for this device kind, or None."""
    env = os.environ if environ is None else environ
    if kind == "rocm" and env.get(HIPBLASLT_TF32_ENV) != "1":
        return (
            f"TF32 is off on ROCm unless {HIPBLASLT_TF32_ENV}=1 (torch ignores the TF32 "
            "setting without it): not timing plain FP32 against the TF32 peak"
        )
    return None


def wave_shape(n: int, units: int) -> tuple[int, int] | None:
    """(M, N) near n x n, both multiples of 256, whose 256x128 output tiles are a whole number
    of waves of ``units`` SMs / CUs (H100, 132 SMs: 8192 x 8448 = 2112 tiles = 16 waves)."""
    tm, tn = TILE
    if units <= 0 or n < tm:
        return None
    waves = max(1, round((n // tm) * (n // tn) / units))
    if waves * units % 2:
        waves += 1  # an even tile count, so that N is a multiple of 256 too
    tiles = waves * units
    best: tuple[int, int, int] | None = None
    for a in range(1, tiles + 1):
        if tiles % a or (tiles // a) % 2:
            continue
        m, nn = a * tm, (tiles // a) * tn
        score = abs(m - nn)
        if best is None or score < best[0]:
            best = (score, m, nn)
    return None if best is None else (best[1], best[2])


def _fits(ctx: Context, shape: Shape, elem: int) -> bool:
    m, n, k = shape
    return (m * k + n * k + m * n) * max(elem, 2) <= ctx.free * FREE_FRACTION


def matmul_shapes(ctx: Context, elem: int, scale: float) -> list[Shape]:
    """The shapes one matmul test times (see the module doc), each within the memory cap."""
    n = ctx.matmul_n(elem, scale)
    shapes: list[Shape] = [(n, n, n)]
    wave = wave_shape(n, ctx.units) if ctx.units else None
    m2, n2 = wave if wave is not None else (n, n)
    for shape in ((m2, n2, n), (m2, n2, 2 * n)):
        if shape not in shapes and _fits(ctx, shape, elem):
            shapes.append(shape)
    return shapes


def fp8_operand(torch: ModuleType, shape: tuple[int, int], dtype: object, device: object) -> object:
    """Random (normal) data in an FP8 format, clamped to its range: no value turns into NaN."""
    limit = float(torch.finfo(dtype).max)
    return torch.randn(*shape, device=device).clamp_(-limit, limit).to(dtype)


def fp8_dtype(ctx: Context) -> object:
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


Operation = tuple[Callable[[], None], str]
"""One timed matmul and how its output is written, in words."""
PREALLOCATED = "output preallocated"


def _operation(ctx: Context, test: str, shape: Shape, fp8: object | None) -> Operation:
    """One matmul of ``shape`` on fresh random operands (B column-major, output preallocated
    where this torch's ``_scaled_mm`` takes ``out=``)."""
    torch = ctx.torch
    m, n, k = shape
    if fp8 is not None:
        return _fp8_operation(ctx, shape, fp8)
    dt = getattr(torch, MATMUL_DTYPES[test][0])
    a = torch.randn(m, k, dtype=dt, device=ctx.device)
    b = torch.randn(n, k, dtype=dt, device=ctx.device).t()
    c = torch.empty(m, n, dtype=dt, device=ctx.device)

    def op() -> None:
        torch.mm(a, b, out=c)

    return op, PREALLOCATED


def _fp8_operation(ctx: Context, shape: Shape, fp8: object) -> Operation:
    """``torch._scaled_mm`` with unit scales, FP32 accumulation (``use_fast_accum=False``, the
    precise mode) and a BF16 output written into a preallocated tensor as ``torch.mm`` does
    (older torch builds take no ``out=``: the output is then allocated per call, and said)."""
    torch = ctx.torch
    m, n, k = shape
    a = fp8_operand(torch, (m, k), fp8, ctx.device)
    b = fp8_operand(torch, (n, k), fp8, ctx.device).t()  # type: ignore[attr-defined]
    one = torch.ones((), dtype=torch.float32, device=ctx.device)
    c = torch.empty(m, n, dtype=torch.bfloat16, device=ctx.device)
    kw = {"scale_a": one, "scale_b": one, "out_dtype": torch.bfloat16, "use_fast_accum": False}

    def into_c() -> None:
        torch._scaled_mm(a, b, out=c, **kw)

    def allocating() -> None:
        torch._scaled_mm(a, b, **kw)

    failure: Exception | None = None
    for op, words in ((into_c, PREALLOCATED), (allocating, "output allocated per call")):
        try:
            op()
        except Exception as exc:  # any failure here means "unsupported" (this way)
            if is_oom(exc):
                raise
            failure = exc
            continue
        return op, words
    raise SkipTest(f"torch._scaled_mm unsupported here: {failure}") from failure


def _fmt_shape(shape: Shape) -> str:
    return "×".join(str(x) for x in shape)


def matmul(ctx: Context, test: str, scale: float) -> protocol.Result:
    """TFLOPS of ``torch.mm`` (``_scaled_mm`` for FP8): the best of a few shapes."""
    dtype_name, elem, label = MATMUL_DTYPES[test]
    fp8 = None
    if test == "matmul_tf32":
        if not ctx.gpu:
            raise SkipTest("TF32 is a GPU tensor-core mode; the CPU has no TF32")
        why = tf32_problem(ctx.kind)
        if why:
            raise SkipTest(why)
    if test == "matmul_fp8":
        fp8 = fp8_dtype(ctx)
    shapes = matmul_shapes(ctx, elem, scale)
    ctx.maybe_inject(test)
    precision = ""
    if test in ("matmul_fp32", "matmul_tf32") and ctx.precision is not None:
        ctx.precision.set_tf32(test == "matmul_tf32")
        if ctx.gpu and ctx.precision.tf32() != (test == "matmul_tf32"):
            raise SkipTest(f"torch did not take the precision setting ({ctx.precision.describe()})")
        precision = f", {ctx.precision.describe()}, {tf32_override_words()}"
    seconds = ctx.seconds
    if ctx.long and test == "matmul_bf16":
        seconds = max(seconds, LONG_BF16_SECONDS)
    share = 1.0 / len(shapes)
    t0 = time.perf_counter()
    rows: list[tuple[Shape, float, float, list[float], int]] = []
    for i, shape in enumerate(shapes):
        op, output = _operation(ctx, test, shape, fp8)
        times, ops = bench(ctx, test, op, seconds * share, span=(i * share, share))
        del op
        free_memory(ctx)
        flops = 2.0 * shape[0] * shape[1] * shape[2]
        rows.append(
            (shape, flops / statistics.median(times) / 1e12, flops / min(times) / 1e12, times, ops)
        )
    best = max(rows, key=lambda row: row[1])
    shape, value, peak, times, ops = best
    waves = f" (M×N sized to whole waves of {ctx.units} {ctx.unit_name})" if ctx.units else ""
    method = (
        f"{'torch._scaled_mm' if fp8 is not None else 'torch.mm'} {label}{precision}, "
        f"randn data, {output}, FLOPs = 2·M·N·K; "
        f"best of {len(rows)} shape{'s' if len(rows) != 1 else ''} "
        f"({', '.join(_fmt_shape(r[0]) for r in rows)}){waves}, each the median of its "
        f"batches; best {_fmt_shape(shape)}: {timing_words(ctx, times, ops)}"
    )
    return protocol.Result(
        test=test,
        value=value,
        unit="TFLOPS",
        method=method,
        details={
            "m": shape[0],
            "n": shape[1],
            "k": shape[2],
            "dtype": str(fp8).replace("torch.", "") if fp8 is not None else dtype_name,
            "best": peak,
            "statistic": "best shape's median of batches",
            "shapes": [
                {"m": r[0][0], "n": r[0][1], "k": r[0][2], "tflops": r[1], "iterations": r[4]}
                for r in rows
            ],
            "operand_bytes": (shape[0] * shape[2] + shape[1] * shape[2]) * elem,
        },
        iterations=sum(r[4] for r in rows),
        seconds=time.perf_counter() - t0,
    )


def retry_text(ctx: Context, test: str, scale: float) -> tuple[int, str]:
    """Bytes of the largest operand and the shapes in words, at ``scale``."""
    _, elem, _ = MATMUL_DTYPES[test]
    shapes = matmul_shapes(ctx, elem, scale)
    m, _, k = shapes[0]
    return m * k * elem, ", ".join(_fmt_shape(s) for s in shapes)
