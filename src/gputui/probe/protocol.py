"""JSON-lines protocol between the probe worker (child process) and its runner.

The worker writes one JSON object per line on stdout. Every object has a ``type`` field naming
its kind; the other fields depend on the kind (see the dataclasses below). Both sides handle the
dataclasses only: :func:`encode` turns one into a line, :func:`decode` checks a line and returns
the dataclass (or raises :class:`ProtocolError` saying what is wrong with it). This module does
not import torch, so the runner and the TUI can use it without the probe's dependencies.

A run always starts with ``hello`` and ends with ``done`` (unless the process was killed). The
``hello`` names the device the worker opened (its UUID and PCI bus id as the runtime reports
them), so the runner can check that it is the GPU it meant before using any result.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeAlias

PROTOCOL_VERSION = 2
"""2: ``hello`` carries ``uuid`` and ``pci_bus_id`` (optional, so a version-1 line still reads)."""

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
WARMUP = "warmup"
"""The test id of the worker's clock warm-up (progress and cancel messages only)."""

DEVICE_KINDS: tuple[str, ...] = ("cuda", "rocm", "cpu")

CANCELLED = "cancelled"
"""The ``message`` of the :class:`Error` a worker sends when it was cancelled."""

JsonValue: TypeAlias = "str | int | float | bool | list[JsonValue] | dict[str, JsonValue] | None"
JsonObject: TypeAlias = "dict[str, JsonValue]"


class ProtocolError(ValueError):
    """A line that is not a valid probe message."""


@dataclass(frozen=True, slots=True)
class Hello:
    type: ClassVar[str] = "hello"

    worker_version: str
    torch_version: str
    device_kind: str  # "cuda" | "rocm" | "cpu"
    device_name: str
    device_index: int | None
    total_memory: int | None  # bytes
    free_memory: int | None  # bytes
    tests: list[str] = field(default_factory=list)  # the tests this run will attempt, in order
    uuid: str | None = None  # the opened device's UUID as the runtime prints it (no "GPU-")
    pci_bus_id: str | None = None  # "dddd:bb:dd" from the runtime (no function); None: none
    protocol: int = PROTOCOL_VERSION


@dataclass(frozen=True, slots=True)
class Progress:
    type: ClassVar[str] = "progress"

    test: str
    fraction: float  # 0..1 within this test
    text: str = ""


@dataclass(frozen=True, slots=True)
class Result:
    type: ClassVar[str] = "result"

    test: str
    value: float
    unit: str  # "GB/s" or "TFLOPS"
    method: str  # how it was measured, in words
    details: JsonObject = field(default_factory=dict)  # shape, dtype, bytes, best value, ...
    iterations: int = 0  # timed operations
    seconds: float = 0.0  # wall time of the test, warm-up included


@dataclass(frozen=True, slots=True)
class Retry:
    type: ClassVar[str] = "retry"

    test: str
    reason: str  # "out of memory"
    size: int  # new size in bytes (per buffer / operand)
    attempt: int = 1  # 1 for the first retry
    text: str = ""  # the new size in words


@dataclass(frozen=True, slots=True)
class Skipped:
    type: ClassVar[str] = "skipped"

    test: str
    reason: str


@dataclass(frozen=True, slots=True)
class Error:
    type: ClassVar[str] = "error"

    test: str | None  # None: the run as a whole
    message: str

    @property
    def cancelled(self) -> bool:
        """The worker's "I was cancelled" notice, not a failure."""
        return self.message == CANCELLED


@dataclass(frozen=True, slots=True)
class Done:
    type: ClassVar[str] = "done"

    seconds: float
    cancelled: bool = False


ProbeMessage: TypeAlias = Hello | Progress | Result | Retry | Skipped | Error | Done
"""Any one line of the protocol."""

MESSAGE_TYPES: dict[str, type[ProbeMessage]] = {
    cls.type: cls for cls in (Hello, Progress, Result, Retry, Skipped, Error, Done)
}

_NUMBER = (int, float)
_OPT_INT = (int, type(None))
_OPT_STR = (str, type(None))

# The JSON types each field accepts (bool is never a number). Fields without a default in the
# dataclass are required; the others may be left out of a line.
_FIELD_TYPES: dict[type[ProbeMessage], dict[str, tuple[type, ...]]] = {
    Hello: {
        "worker_version": (str,),
        "torch_version": (str,),
        "device_kind": (str,),
        "device_name": (str,),
        "device_index": _OPT_INT,
        "total_memory": _OPT_INT,
        "free_memory": _OPT_INT,
        "tests": (list,),
        "uuid": _OPT_STR,
        "pci_bus_id": _OPT_STR,
        "protocol": (int,),
    },
    Progress: {"test": (str,), "fraction": _NUMBER, "text": (str,)},
    Result: {
        "test": (str,),
        "value": _NUMBER,
        "unit": (str,),
        "method": (str,),
        "details": (dict,),
        "iterations": (int,),
        "seconds": _NUMBER,
    },
    Retry: {"test": (str,), "reason": (str,), "size": (int,), "attempt": (int,), "text": (str,)},
    Skipped: {"test": (str,), "reason": (str,)},
    Error: {"test": _OPT_STR, "message": (str,)},
    Done: {"seconds": _NUMBER, "cancelled": (bool,)},
}
# Fields the dataclass annotates as float: a JSON integer there becomes a float.
_FLOAT_FIELDS = frozenset({"fraction", "value", "seconds"})
# Fields that the line must carry even where the dataclass has a default (the historic schema).
_ALWAYS_REQUIRED: dict[type[ProbeMessage], frozenset[str]] = {
    Progress: frozenset({"text"}),
    Result: frozenset({"details", "iterations", "seconds"}),
}


def _required(cls: type[ProbeMessage]) -> frozenset[str]:
    no_default = {
        f.name
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    return frozenset(no_default) | _ALWAYS_REQUIRED.get(cls, frozenset())


def _check_field(kind: str, name: str, value: object, types: tuple[type, ...]) -> None:
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        raise ProtocolError(f"{kind}: field {name!r} has the wrong type ({value!r})")
    if isinstance(value, float) and not math.isfinite(value):
        raise ProtocolError(f"{kind}: field {name!r} is not finite")


def _check_meaning(msg: ProbeMessage) -> None:
    """Rules beyond the field types: known test ids and device kinds, ranges."""
    kind = msg.type
    test = None if isinstance(msg, Hello | Done) else msg.test
    if test is not None and test not in TEST_IDS and test != WARMUP:
        raise ProtocolError(f"{kind}: unknown test id {test!r}")
    match msg:
        case Hello(device_kind=device_kind) if device_kind not in DEVICE_KINDS:
            raise ProtocolError(f"hello: unknown device kind {device_kind!r}")
        case Hello(tests=tests) if not all(isinstance(t, str) for t in tests):
            raise ProtocolError("hello: field 'tests' must be a list of test ids")
        case Progress(fraction=fraction) if not 0.0 <= fraction <= 1.0:
            raise ProtocolError(f"progress: fraction out of range ({fraction!r})")
        case Retry(size=size) if size <= 0:
            raise ProtocolError("retry: size must be positive")


def parse_object(obj: object) -> ProbeMessage:
    """The message a decoded JSON object stands for; raise ProtocolError if it is not one.

    Keys that the message kind does not define are ignored (a newer worker may send more)."""
    if not isinstance(obj, dict):
        raise ProtocolError("a message must be a JSON object")
    kind = obj.get("type")
    cls = MESSAGE_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ProtocolError(f"unknown message type: {kind!r}")
    kind = cls.type
    types = _FIELD_TYPES[cls]
    for name in sorted(_required(cls), key=list(types).index):
        if name not in obj:
            raise ProtocolError(f"{kind}: missing field {name!r}")
    values: dict[str, Any] = {}  # each value checked against its field's type below
    for name, accepted in types.items():
        if name not in obj:
            continue
        value = obj[name]
        _check_field(kind, name, value, accepted)
        values[name] = float(value) if name in _FLOAT_FIELDS else value
    msg = cls(**values)
    _check_meaning(msg)
    return msg


def to_dict(msg: ProbeMessage) -> JsonObject:
    """A message as the JSON object that goes on the wire (fields in order, ``type`` last)."""
    if type(msg) not in _FIELD_TYPES:
        raise TypeError(f"not a probe message: {msg!r}")
    out: JsonObject = {f.name: _copy_json(getattr(msg, f.name)) for f in dataclasses.fields(msg)}
    out["type"] = msg.type
    return out


def _copy_json(value: object) -> JsonValue:
    if isinstance(value, Mapping):
        return {str(k): _copy_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_copy_json(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise ProtocolError(f"not a JSON value: {value!r}")


def encode(msg: ProbeMessage) -> str:
    """One message as one JSON line (no trailing newline). Validates before encoding."""
    obj = to_dict(msg)
    parse_object(obj)
    try:
        return json.dumps(obj, separators=(",", ":"), allow_nan=False, sort_keys=False)
    except ValueError as exc:  # NaN or infinity hidden in details
        raise ProtocolError(str(exc)) from exc


def decode(line: str | bytes) -> ProbeMessage:
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
    return parse_object(obj)
