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
