"""JSON-lines protocol between the probe worker (child process) and its runner.

The worker writes one JSON object per line on stdout. Every object has a ``type`` field naming
its kind; the other fields depend on the kind (see the dataclasses below). This module does not
import torch, so the runner and the TUI can use it without the probe's dependencies.

A run always starts with ``hello`` and ends with ``done`` (unless the process was killed).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

PROTOCOL_VERSION = 1

TEST_IDS: tuple[str, ...] = (
    "memory_copy",
    "memory_triad",
    "h2d",
    "d2h",
    "p2p",
    "matmul_fp32",
    "matmul_tf32",
    "matmul_fp16",
    "matmul_bf16",
    "matmul_fp8",
)

DEVICE_KINDS: tuple[str, ...] = ("cuda", "rocm", "cpu")

CANCELLED = "cancelled"


class ProtocolError(ValueError):
    """A line that is not a valid probe message."""


@dataclass
class Hello:
    worker_version: str
    torch_version: str
    device_kind: str  # "cuda" | "rocm" | "cpu"
    device_name: str
    device_index: int | None
    total_memory: int | None  # bytes
    free_memory: int | None  # bytes
    tests: list[str] = field(default_factory=list)  # the tests this run will attempt, in order
    protocol: int = PROTOCOL_VERSION
    type: str = "hello"


@dataclass
class Progress:
    test: str
    fraction: float  # 0..1 within this test
    text: str = ""
    type: str = "progress"


@dataclass
class Result:
    test: str
    value: float
    unit: str  # "GB/s" or "TFLOPS"
    method: str  # how it was measured, in words
    details: dict[str, Any] = field(default_factory=dict)  # shape, dtype, bytes, best value, ...
    iterations: int = 0  # timed operations
    seconds: float = 0.0  # wall time of the test, warm-up included
    type: str = "result"


@dataclass
class Retry:
    test: str
    reason: str  # "out of memory"
    size: int  # new size in bytes (per buffer / operand)
    attempt: int = 1  # 1 for the first retry
    text: str = ""  # the new size in words
    type: str = "retry"


@dataclass
class Skipped:
    test: str
    reason: str
    type: str = "skipped"


@dataclass
class Error:
    test: str | None  # None: the run as a whole
    message: str
    type: str = "error"


@dataclass
class Done:
    seconds: float
    cancelled: bool = False
    type: str = "done"


MESSAGE_TYPES: dict[str, type] = {
    "hello": Hello,
    "progress": Progress,
    "result": Result,
    "retry": Retry,
    "skipped": Skipped,
    "error": Error,
    "done": Done,
}

_NUM = (int, float)
_OPT_INT = (int, type(None))
_OPT_STR = (str, type(None))

# Required fields per kind and the JSON types they accept (bool is never a number).
_REQUIRED: dict[str, dict[str, tuple[type, ...]]] = {
    "hello": {
        "worker_version": (str,),
        "torch_version": (str,),
        "device_kind": (str,),
        "device_name": (str,),
        "device_index": _OPT_INT,
        "total_memory": _OPT_INT,
        "free_memory": _OPT_INT,
    },
    "progress": {"test": (str,), "fraction": _NUM, "text": (str,)},
    "result": {
        "test": (str,),
        "value": _NUM,
        "unit": (str,),
        "method": (str,),
        "details": (dict,),
        "iterations": (int,),
        "seconds": _NUM,
    },
    "retry": {"test": (str,), "reason": (str,), "size": (int,)},
    "skipped": {"test": (str,), "reason": (str,)},
    "error": {"test": _OPT_STR, "message": (str,)},
    "done": {"seconds": _NUM},
}


def to_dict(msg: Any) -> dict[str, Any]:
    """A message dataclass (or an already-built dict) as a plain dict."""
    if isinstance(msg, dict):
        return dict(msg)
    if hasattr(msg, "__dataclass_fields__"):
        return asdict(msg)
    raise TypeError(f"not a probe message: {msg!r}")


def validate(obj: Any) -> dict[str, Any]:
    """Check a decoded object against the schema; return it or raise ProtocolError."""
    if not isinstance(obj, dict):
        raise ProtocolError("a message must be a JSON object")
    kind = obj.get("type")
    if kind not in _REQUIRED:
        raise ProtocolError(f"unknown message type: {kind!r}")
    for name, types in _REQUIRED[kind].items():
        if name not in obj:
            raise ProtocolError(f"{kind}: missing field {name!r}")
        value = obj[name]
        if isinstance(value, bool) or not isinstance(value, types):
            raise ProtocolError(f"{kind}: field {name!r} has the wrong type ({value!r})")
        if isinstance(value, float) and not math.isfinite(value):
            raise ProtocolError(f"{kind}: field {name!r} is not finite")
    test = obj.get("test")
    if kind != "hello" and test is not None and test not in TEST_IDS and test != "warmup":
        raise ProtocolError(f"{kind}: unknown test id {test!r}")
    if kind == "hello" and obj["device_kind"] not in DEVICE_KINDS:
        raise ProtocolError(f"hello: unknown device kind {obj['device_kind']!r}")
    if kind == "progress" and not 0.0 <= obj["fraction"] <= 1.0:
        raise ProtocolError(f"progress: fraction out of range ({obj['fraction']!r})")
    if kind == "retry" and obj["size"] <= 0:
        raise ProtocolError("retry: size must be positive")
    return obj


def encode(msg: Any) -> str:
    """One message as one JSON line (no trailing newline). Validates before encoding."""
    obj = validate(to_dict(msg))
    try:
        return json.dumps(obj, separators=(",", ":"), allow_nan=False, sort_keys=False)
    except ValueError as exc:  # NaN or infinity hidden in details
        raise ProtocolError(str(exc)) from exc


def decode(line: str | bytes) -> dict[str, Any]:
    """Parse and validate one line from the worker; raise ProtocolError if it is not a message."""
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError("not UTF-8") from exc
    text = line.strip()
    if not text:
        raise ProtocolError("empty line")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProtocolError(f"not JSON: {exc.msg}") from exc
    return validate(obj)
