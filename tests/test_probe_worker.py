"""The probe worker, run for real on CPU torch with tiny sizes, plus its JSON-lines protocol."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gputui.probe import protocol
from gputui.probe.protocol import ProbeMessage

torch = pytest.importorskip("torch")

from gputui.probe import worker  # noqa: E402  (needs torch only when run)

SRC = str(Path(__file__).resolve().parents[1] / "src")
TINY = ["--device", "cpu", "--size-scale", "0.001", "--seconds-per-test", "0.05"]
GPU_ONLY = {"h2d", "d2h", "p2p", "matmul_tf32", "matmul_fp8"}


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env.pop(worker.INJECT_ENV, None)
    for name in ("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "NVIDIA_TF32_OVERRIDE"):
        env.pop(name, None)
    env.update(extra)
    return env


def run_worker(*args: str, timeout: float = 30, **env: str) -> tuple[int, list[ProbeMessage]]:
    proc = subprocess.run(
        [sys.executable, "-m", "gputui.probe", *TINY, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_env(**env),
    )
    lines = [line for line in proc.stdout.splitlines()]
    msgs = [protocol.decode(line) for line in lines]  # every stdout line is a message
    return proc.returncode, msgs


def by_type(msgs: list[ProbeMessage], kind: str, test: str | None = None) -> list[Any]:
    return [m for m in msgs if m.type == kind and (test is None or getattr(m, "test", 0) == test)]


def test_full_cpu_run_streams_valid_messages() -> None:
    rc, msgs = run_worker()
    assert rc == 0
    assert msgs[0].type == "hello" and msgs[-1].type == "done"
    assert len(by_type(msgs, "hello")) == 1 and len(by_type(msgs, "done")) == 1
    hello = msgs[0]
    assert isinstance(hello, protocol.Hello)
    assert hello.device_kind == "cpu" and hello.device_index is None
    assert hello.torch_version == torch.__version__
    assert hello.total_memory > 0 and hello.free_memory > 0
    assert isinstance(msgs[-1], protocol.Done) and msgs[-1].cancelled is False
    results = {m.test: m for m in by_type(msgs, "result")}
    assert set(results) == {
        "memory_copy",
        "memory_triad",
        "matmul_fp32",
        "matmul_fp16",
        "matmul_bf16",
    }
    for res in results.values():
        assert res.value > 0 and res.iterations > 0 and res.seconds > 0
        assert res.unit in ("GB/s", "TFLOPS") and res.method
    assert "read+write" in results["memory_copy"].method
    assert results["memory_triad"].details["buffers"] == 3
    assert results["matmul_bf16"].details["dtype"] == "bfloat16"
    skipped = {m.test: m.reason for m in by_type(msgs, "skipped")}
    assert set(skipped) == GPU_ONLY
    assert all(reason for reason in skipped.values())
    assert not by_type(msgs, "error")
    for p in by_type(msgs, "progress"):
        assert 0.0 <= p.fraction <= 1.0


def test_oom_injection_retries_at_half_size_then_succeeds() -> None:
    rc, msgs = run_worker(
        "--tests", "memory_copy,matmul_bf16", GPUTUI_PROBE_INJECT_OOM="memory_copy:2"
    )
    assert rc == 0
    retries = by_type(msgs, "retry", "memory_copy")
    assert [r.attempt for r in retries] == [1, 2]
    assert all(r.reason == "out of memory" for r in retries)
    result = by_type(msgs, "result", "memory_copy")[0]
    final = result.details["buffer_bytes"]
    # Each retry halves the size (rounded to 4 KiB); the result uses the last retry's size.
    assert retries[0].size > retries[1].size == final
    assert abs(retries[0].size / retries[1].size - 2) < 0.1
    assert by_type(msgs, "result", "matmul_bf16")
    assert not by_type(msgs, "error")


def test_oom_beyond_retry_limit_is_an_error_and_other_tests_still_run() -> None:
    rc, msgs = run_worker(
        "--tests", "matmul_fp32,memory_triad", GPUTUI_PROBE_INJECT_OOM="matmul_fp32:9"
    )
    assert rc == 0
    assert len(by_type(msgs, "retry", "matmul_fp32")) == worker.MAX_RETRIES
    errors = by_type(msgs, "error", "matmul_fp32")
    assert len(errors) == 1 and "out of memory" in errors[0].message
    assert not by_type(msgs, "result", "matmul_fp32")
    assert by_type(msgs, "result", "memory_triad")
    assert msgs[-1].type == "done"


def test_sigterm_cancels_with_exit_130_and_a_final_line() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "gputui.probe", *TINY[:4], "--seconds-per-test", "20"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=_env(),
    )
    try:
        assert proc.stdout is not None
        first = protocol.decode(proc.stdout.readline())
        assert first.type == "hello"
        second = protocol.decode(proc.stdout.readline())  # a test is running now
        assert second.type == "progress"
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        rest = [protocol.decode(line) for line in proc.stdout]
        rc = proc.wait(timeout=10)
        assert time.monotonic() - t0 < 5
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == 130
    assert isinstance(rest[-1], protocol.Done) and rest[-1].cancelled is True
    assert isinstance(rest[-2], protocol.Error) and rest[-2].message == protocol.CANCELLED
    assert proc.poll() is not None


def test_tf32_settings_are_restored_in_process() -> None:
    saved = (
        torch.get_float32_matmul_precision(),
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
    )
    try:
        # A non-default user setting that the FP32 test (TF32 off) would otherwise clobber.
        torch.set_float32_matmul_precision("high")
        torch.backends.cudnn.allow_tf32 = False
        before = (
            torch.get_float32_matmul_precision(),
            torch.backends.cuda.matmul.allow_tf32,
            torch.backends.cudnn.allow_tf32,
        )
        msgs: list[ProbeMessage] = []
        rc = worker.run_probe(
            device="cpu",
            tests=["matmul_fp32", "matmul_tf32"],
            size_scale=0.001,
            seconds_per_test=0.02,
            emit=msgs.append,
        )
        after = (
            torch.get_float32_matmul_precision(),
            torch.backends.cuda.matmul.allow_tf32,
            torch.backends.cudnn.allow_tf32,
        )
        assert rc == 0
        assert before == after == ("high", True, False)
        assert by_type(msgs, "result", "matmul_fp32")
        for m in msgs:
            protocol.encode(m)  # in-process messages are valid too
    finally:
        torch.set_float32_matmul_precision(saved[0])
        torch.backends.cuda.matmul.allow_tf32 = saved[1]
        torch.backends.cudnn.allow_tf32 = saved[2]


def test_parse_inject_and_unknown_tests() -> None:
    assert worker.parse_inject("memory_copy:2, matmul_fp8:1,bad") == {
        "memory_copy": 2,
        "matmul_fp8": 1,
    }
    assert worker.parse_inject(None) == {}
    with pytest.raises(ValueError):
        worker.run_probe(device="cpu", tests=["nope"])


# --- protocol -----------------------------------------------------------------------------------


SAMPLES = [
    protocol.Hello("1", "2.13.0", "cuda", "NVIDIA H100 80GB HBM3", 0, 80 << 30, 79 << 30, ["h2d"]),
    protocol.Progress("matmul_bf16", 0.5, "half way"),
    protocol.Result("memory_copy", 2500.0, "GB/s", "dst.copy_(src)", {"bytes": 1 << 30}, 50, 1.2),
    protocol.Retry("matmul_fp8", "out of memory", 1 << 28, 1, "4096×4096×4096"),
    protocol.Skipped("matmul_fp8", "FP8 needs compute capability ≥ 8.9"),
    protocol.Error(None, "cancelled"),
    protocol.Done(12.5, cancelled=False),
]


@pytest.mark.parametrize("msg", SAMPLES, ids=lambda m: m.type)
def test_protocol_round_trip(msg: object) -> None:
    line = protocol.encode(msg)
    assert "\n" not in line
    assert protocol.decode(line) == msg
    assert protocol.decode(line.encode() + b"\n") == msg
    assert json.loads(line) == protocol.to_dict(msg) and json.loads(line)["type"] == msg.type


@pytest.mark.parametrize(
    "line",
    [
        "",
        "not json",
        "[1, 2]",
        '{"type": "bogus"}',
        '{"type": "done"}',
        '{"type": "done", "seconds": "1"}',
        '{"type": "done", "seconds": NaN}',
        '{"type": "progress", "test": "memory_copy", "fraction": 1.5, "text": ""}',
        '{"type": "skipped", "test": "no_such_test", "reason": "x"}',
        '{"type": "retry", "test": "h2d", "reason": "out of memory", "size": 0}',
        '{"type": "result", "test": "h2d", "value": true, "unit": "GB/s", "method": "m",'
        ' "details": {}, "iterations": 1, "seconds": 1}',
        json.dumps(
            {
                "type": "hello",
                "worker_version": "1",
                "torch_version": "x",
                "device_kind": "tpu",
                "device_name": "x",
                "device_index": 0,
                "total_memory": 1,
                "free_memory": 1,
            }
        ),
    ],
)
def test_protocol_rejects_bad_lines(line: str) -> None:
    with pytest.raises(protocol.ProtocolError):
        protocol.decode(line)


def test_decode_returns_the_message_and_says_what_is_wrong() -> None:
    line = '{"type": "progress", "test": "h2d", "fraction": 1, "text": "", "newer_field": 1}'
    msg = protocol.decode(line)
    assert msg == protocol.Progress("h2d", 1.0, "") and isinstance(msg.fraction, float)
    result = {"type": "result", "test": "h2d", "value": 1, "method": "m", "details": {}}
    with pytest.raises(protocol.ProtocolError, match="result: missing field 'unit'"):
        protocol.decode(json.dumps({**result, "iterations": 1, "seconds": 1.0}))
    with pytest.raises(protocol.ProtocolError, match="done: field 'cancelled' has the wrong type"):
        protocol.decode('{"type": "done", "seconds": 1, "cancelled": 1}')
    with pytest.raises(protocol.ProtocolError, match="hello: field 'tests' must be a list"):
        protocol.decode(protocol.encode(SAMPLES[0]).replace('["h2d"]', "[1]"))


def test_encode_rejects_invalid_messages() -> None:
    with pytest.raises(protocol.ProtocolError):
        protocol.encode(protocol.Done(float("nan")))
    with pytest.raises(protocol.ProtocolError):
        protocol.encode(protocol.Progress("memory_copy", 1.5))
    with pytest.raises(protocol.ProtocolError):
        protocol.encode(protocol.Result("h2d", 1.0, "GB/s", "m", {"x": float("nan")}, 1, 1.0))
    with pytest.raises(TypeError):
        protocol.encode({"type": "done"})  # type: ignore[arg-type]  # dicts are not messages
    with pytest.raises(TypeError):
        protocol.encode(42)  # type: ignore[arg-type]


# --- the GPU path, with torch's device properties faked --------------------------------------

import types  # noqa: E402

from gputui.probe import kernels, matmul  # noqa: E402


class _Uuid:
    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def _props(uuid: str = "6c9b1f2e-0000-1111-2222-333344445555", bus: int = 0x1B, **kw: Any):
    values = {"name": "NVIDIA H100 80GB HBM3", "uuid": _Uuid(uuid), "pci_domain_id": 0,
              "pci_bus_id": bus, "pci_device_id": 0, "multi_processor_count": 132}  # fmt: skip
    values.update(kw)
    return types.SimpleNamespace(**values)


def test_hello_names_the_device_it_opened() -> None:
    # The address has no function: CUDA's and HIP's device properties carry pciDomainID,
    # pciBusID and pciDeviceID only (the fake props above), and AMD compute partitions differ by
    # function alone (ROCm/rocm_smi_lib#208), so a made-up ".0" would pass any partition off as
    # partition 0.
    assert kernels.device_identity(_props()) == (
        "6c9b1f2e-0000-1111-2222-333344445555",
        "0000:1b:00",
    )
    # Older torch: no PCI fields; a runtime without a UUID prints zeros.
    bare = types.SimpleNamespace(uuid=_Uuid("00000000-0000-0000-0000-000000000000"))
    assert kernels.device_identity(bare) == (None, None)
    assert kernels.device_identity(_props(pci_device_id=0x2330))[1] is None  # not a slot
    hello = protocol.Hello("2", "x", "cuda", "n", 0, 1, 1, [], "6c9b", "0000:1b:00.0")
    assert protocol.decode(protocol.encode(hello)) == hello
    old = json.loads(protocol.encode(hello))
    del old["uuid"], old["pci_bus_id"]  # a version-1 hello still reads
    assert protocol.parse_object(old).uuid is None


def _fake_torch(props: list[Any], access: dict[tuple[int, int], bool] | None = None):
    cuda = types.SimpleNamespace(
        device_count=lambda: len(props),
        get_device_properties=lambda i: props[i if isinstance(i, int) else 0],
        can_device_access_peer=lambda a, b: (access or {}).get((a, b), True),
    )
    return types.SimpleNamespace(cuda=cuda)


def test_worker_opens_the_gpu_at_its_pci_address() -> None:
    fake = _fake_torch([_props(bus=0x1B), _props(bus=0x29), _props(bus=0x3A)])
    assert worker.find_device(fake, "00000000:29:00.0") == (1, True)  # type: ignore[arg-type]
    assert worker.find_device(fake, "0000:99:00.0") == (None, True)  # type: ignore[arg-type]
    no_pci = _fake_torch([types.SimpleNamespace(uuid=None)])
    assert worker.find_device(no_pci, "0000:29:00.0") == (None, False)  # type: ignore[arg-type]


def _ctx(kind: str = "cuda", **kw: Any) -> kernels.Context:
    values: dict[str, Any] = {
        "torch": torch, "device": torch.device("cpu"), "device_index": 0, "kind": kind,
        "seconds": 0.05, "size_scale": 1.0, "long": False, "emit": lambda m: None,
        "cancel": __import__("threading").Event(), "free": 80 << 30, "total": 80 << 30,
        "l2": 50 << 20,
    }  # fmt: skip
    values.update(kw)
    return kernels.Context(**values)


def test_matmul_shapes_fill_whole_waves_and_stay_256_aligned() -> None:
    assert matmul.wave_shape(8192, 132) == (8192, 8448)  # 32 x 66 tiles = 16 waves of 132 SMs
    m, n = matmul.wave_shape(8192, 304)  # MI300X: 7 full waves instead of 6.7
    assert (m // 256) * (n // 128) % 304 == 0
    ctx = _ctx(units=132)
    shapes = matmul.matmul_shapes(ctx, 2, 1.0)
    assert shapes == [(8192, 8192, 8192), (8192, 8448, 8192), (8192, 8448, 16384)]
    for scale in (1.0, 0.5, 0.25, 0.125):  # out-of-memory halving keeps every size aligned
        for shape in matmul.matmul_shapes(ctx, 2, scale):
            assert all(x % 256 == 0 for x in shape)
        assert worker.retry_size(ctx, "matmul_bf16", scale)[0] % 256 == 0
    tight = _ctx(units=132, free=2 << 30)  # the deep-K shape would not fit: left out
    assert all(
        (m * k + n * k + m * n) * 2 <= (2 << 30) * kernels.FREE_FRACTION
        for m, n, k in matmul.matmul_shapes(tight, 2, 1.0)
    )


def test_matmul_result_is_the_best_shape_and_says_so() -> None:
    ctx = _ctx(kind="cpu", device_index=None, size_scale=0.001, seconds=0.05)
    res = matmul.matmul(ctx, "matmul_bf16", 1.0)
    shapes = res.details["shapes"]
    assert len(shapes) == 2 and res.value == max(s["tflops"] for s in shapes)
    assert "best of 2 shapes" in res.method and "median of" in res.method
    assert res.details["statistic"] == "best shape's median of batches"


def test_fp8_data_has_no_nan_in_either_format() -> None:
    torch.manual_seed(0)
    for dtype in (torch.float8_e4m3fn, torch.float8_e4m3fnuz):
        x = matmul.fp8_operand(torch, (512, 512), dtype, "cpu")
        assert not x.to(torch.float32).isnan().any()
    # What the probe did before: randn x 64 overflows E4M3FNUZ (max 240) into NaN.
    old = (torch.randn(512, 512) * 64).to(torch.float8_e4m3fnuz).to(torch.float32)
    assert old.isnan().any()


class _ScaledMmSpy:
    """torch, with ``_scaled_mm`` recorded (and refused with ``out=`` when ``no_out``, as torch
    builds without the out variant do)."""

    def __init__(self, no_out: bool = False) -> None:
        self.calls: list[dict[str, Any]] = []
        self.no_out = no_out

    def __getattr__(self, name: str) -> Any:
        return getattr(torch, name)

    def _scaled_mm(self, a: Any, b: Any, **kw: Any) -> Any:
        self.calls.append(kw)
        if self.no_out and "out" in kw:
            raise TypeError("_scaled_mm() got an unexpected keyword argument 'out'")
        return torch._scaled_mm(a, b, **kw)


def test_fp8_writes_a_preallocated_output_with_fp32_accumulation() -> None:
    """The FP8 test writes into a preallocated BF16 output as the other matmuls do, with
    use_fast_accum=False said and passed; a torch without out= allocates, and the method says
    so rather than claiming a preallocated output."""
    spy = _ScaledMmSpy()
    ctx = _ctx(torch=spy)
    op, output = matmul._operation(ctx, "matmul_fp8", (256, 256, 256), torch.float8_e4m3fn)
    op()
    assert output == "output preallocated"
    out = spy.calls[-1]["out"]
    assert out.dtype == torch.bfloat16 and tuple(out.shape) == (256, 256)
    assert all(c["use_fast_accum"] is False and c["out"] is out for c in spy.calls)
    assert "use_fast_accum=False" in matmul.MATMUL_DTYPES["matmul_fp8"][2]
    old = _ScaledMmSpy(no_out=True)
    op, output = matmul._operation(_ctx(torch=old), "matmul_fp8", (256, 256, 256),
                                   torch.float8_e4m3fn)  # fmt: skip
    op()
    assert output == "output allocated per call" and "out" not in old.calls[-1]


def test_the_fp32_method_says_whether_a_tf32_override_is_set() -> None:
    """The runner removes TORCH_ALLOW_TF32_CUBLAS_OVERRIDE / NVIDIA_TF32_OVERRIDE; a worker
    started by hand may still have one, and its FP32 method says so."""
    plain = {"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "", "NVIDIA_TF32_OVERRIDE": ""}
    assert "unset (removed from the worker's environment)" in matmul.tf32_override_words({})
    assert "=1 set" in matmul.tf32_override_words({"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1"})
    assert "NVIDIA_TF32_OVERRIDE= set" in matmul.tf32_override_words(plain)
    rc, msgs = run_worker("--tests", "matmul_fp32", TORCH_ALLOW_TF32_CUBLAS_OVERRIDE="1")
    assert rc == 0
    method = by_type(msgs, "result", "matmul_fp32")[0].method
    assert "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 set" in method


def test_tf32_on_rocm_needs_hipblaslt_allow() -> None:
    why = matmul.tf32_problem("rocm", {})
    assert why is not None and "HIPBLASLT_ALLOW_TF32=1" in why
    assert matmul.tf32_problem("rocm", {"HIPBLASLT_ALLOW_TF32": "1"}) is None
    assert matmul.tf32_problem("cuda", {}) is None


def test_precision_uses_the_new_api_and_puts_everything_back() -> None:
    """torch 2.9+ raises when the old TF32 flags are read after the new ``fp32_precision`` was
    set: the worker uses the new API only, and restores a caller who used it."""
    m = torch.backends.cuda.matmul
    assert hasattr(m, "fp32_precision")
    try:
        m.fp32_precision = "tf32"
        torch.backends.cudnn.fp32_precision = "ieee"
        p = matmul.Precision(torch)
        assert p.new_api
        p.set_tf32(False)
        assert not p.tf32() and p.describe().endswith('"ieee"')
        p.set_tf32(True)
        assert p.tf32()
        p.restore()
        assert (m.fp32_precision, torch.backends.cudnn.fp32_precision) == ("tf32", "ieee")
        msgs: list[ProbeMessage] = []
        assert worker.run_probe(
            device="cpu", tests=["matmul_fp32"], size_scale=0.001, seconds_per_test=0.02,
            emit=msgs.append,
        ) == 0  # fmt: skip
        assert (m.fp32_precision, torch.backends.cudnn.fp32_precision) == ("tf32", "ieee")
        assert 'fp32_precision = "ieee"' in by_type(msgs, "result", "matmul_fp32")[0].method
    finally:
        m.fp32_precision = "none"
        torch.backends.cudnn.fp32_precision = "none"


def test_long_tests_are_not_cut_short() -> None:
    """A fast operation used to stop after 1000 batches (``--long`` ended after ~20 s): now a
    test runs its whole duration, merging batch times to keep memory bounded."""
    ctx = _ctx(kind="cpu", device_index=None)
    start = time.perf_counter()
    times, ops = kernels.bench(ctx, "memory_copy", lambda: None, 0.3)  # 1000 batches: ~5 ms
    assert time.perf_counter() - start >= 0.3
    assert len(times) <= kernels.MAX_BATCHES and ops > 1000 * 50


def test_a_failed_warm_up_is_skipped_not_fatal(monkeypatch) -> None:
    msgs: list[ProbeMessage] = []
    ctx = _ctx(kind="cpu", device_index=None, size_scale=0.001, emit=msgs.append,
               inject={protocol.WARMUP: 9})  # fmt: skip
    assert worker.warm_up(ctx) is False
    (skip,) = by_type(msgs, "skipped")
    assert skip.test == protocol.WARMUP and "out of memory after 3 retries" in skip.reason
    protocol.encode(skip)

    def broken(ctx: Any, scale: float) -> None:
        raise RuntimeError("CUBLAS_STATUS_NOT_SUPPORTED")

    monkeypatch.setattr(worker, "_warmup", broken)
    msgs.clear()
    assert worker.warm_up(_ctx(kind="cpu", device_index=None, emit=msgs.append)) is False
    assert "CUBLAS_STATUS_NOT_SUPPORTED" in by_type(msgs, "skipped")[0].reason


def test_blas_allocation_failures_are_out_of_memory() -> None:
    for text in (
        "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
        "HIPBLAS_STATUS_ALLOC_FAILED",
        "rocblas_status_memory_error",
    ):
        assert kernels.is_oom(RuntimeError(text))
    assert not kernels.is_oom(RuntimeError("CUBLAS_STATUS_EXECUTION_FAILED"))


def test_worker_binds_to_the_gpus_local_cpus(tmp_path, monkeypatch) -> None:
    dev = tmp_path / "0000:1b:00.0"
    dev.mkdir()
    (dev / "local_cpulist").write_text("0-3,8\n")
    bound: list[set[int]] = []
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)))
    monkeypatch.setattr(os, "sched_setaffinity", lambda pid, cpus: bound.append(set(cpus)))
    text = worker.bind_near("00000000:1B:00.0", tmp_path)
    assert text == "process bound to the GPU's local CPUs 0-3,8" and bound == [{0, 1, 2, 3, 8}]
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {12, 13})  # a cgroup elsewhere
    assert "unchanged" in worker.bind_near("0000:1b:00.0", tmp_path) and len(bound) == 1
    assert "not known" in worker.bind_near("0000:2b:00.0", tmp_path)
    assert worker.parse_cpu_list("0-2, 7,x,10-11") == {0, 1, 2, 7, 10, 11}


class _FakeTensor:
    def copy_(self, other: Any, non_blocking: bool = False) -> None:
        pass


class _Event:
    def __init__(self, enable_timing: bool = False) -> None:
        pass

    def record(self) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, other: Any) -> float:
        return 2.0  # ms


def test_p2p_result_names_its_destination_and_peer_access() -> None:
    props = [_props(bus=0x1B), _props("aaaa-peer", bus=0x29), _props("bbbb-other", bus=0x3A)]
    fake = _fake_torch(props, access={(0, 2): False})
    fake.cuda.Event = _Event
    fake.cuda.synchronize = lambda *a: None
    fake.cuda.empty_cache = lambda: None
    fake.empty = lambda *a, **kw: _FakeTensor()
    fake.device = lambda *a: a
    fake.uint8 = "uint8"
    ctx = _ctx(torch=fake, seconds=0.01)
    assert kernels.p2p_peers(ctx) == [(1, True), (2, False)]
    only = _ctx(torch=fake, peers=frozenset({(0, 0x29, 0)}))  # the runner's --p2p-peers
    assert kernels.p2p_peers(only) == [(1, True)]
    res = kernels.p2p_to(2, False)(ctx, "p2p", 1.0)
    assert res.details["dst_uuid"] == "bbbb-other" and res.details["dst_pci_bus_id"] == "0000:3a:00"
    assert res.details["peer_access"] is False and "NO peer access" in res.method
    assert "median of" in res.method and "CUDA events" in res.method
    protocol.encode(res)
