"""JSON-lines protocol between the probe worker (child process) and its runner.

The worker writes one JSON object per line on stdout. Every object has a ``type`` field naming
its kind; the other fields depend on the kind (see the dataclasses below). Both sides handle the
dataclasses only: :func:`encode` turns one into a line, :func:`decode` checks a line and returns
the dataclass (or raises :class:`ProtocolError` saying what is wrong with it). The field types are
the dataclasses' own, checked by :mod:`gputui.core.codec`; this module adds what the types cannot
say (known test ids and device kinds, ranges, finite numbers). It does not import torch, so the
runner and the TUI can use it without the probe's dependencies.

A run always starts with ``hello`` and ends with ``done`` (unless the process was killed). The
``hello`` names the device the worker opened (its UUID and PCI bus id as the runtime reports
them), so the runner can check that it is the GPU it meant before using any result.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import field
from typing import Any, ClassVar, TypeAlias

from gputui.core import codec
from gputui.core.codec import CodecError
from gputui.core.frozen import frozen

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

JsonObject: TypeAlias = dict[str, Any]
"""A JSON object (a message's ``details``: plain JSON values under string keys)."""


class ProtocolError(ValueError):
    """A line that is not a valid probe message."""


@frozen
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


@frozen
class Progress:
    type: ClassVar[str] = "progress"

    test: str
    fraction: float  # 0..1 within this test
    text: str = ""


@frozen
class Result:
    type: ClassVar[str] = "result"

    test: str
    value: float
    unit: str  # "GB/s" or "TFLOPS"
    method: str  # how it was measured, in words
    details: JsonObject = field(default_factory=dict)  # shape, dtype, bytes, best value, ...
    iterations: int = 0  # timed operations
    seconds: float = 0.0  # wall time of the test, warm-up included


@frozen
class Retry:
    type: ClassVar[str] = "retry"

    test: str
    reason: str  # "out of memory"
    size: int  # new size in bytes (per buffer / operand)
    attempt: int = 1  # 1 for the first retry
    text: str = ""  # the new size in words


@frozen
class Skipped:
    type: ClassVar[str] = "skipped"

    test: str
    reason: str


@frozen
class Error:
    type: ClassVar[str] = "error"

    test: str | None  # None: the run as a whole
    message: str

    @property
    def cancelled(self) -> bool:
        """The worker's "I was cancelled" notice, not a failure."""
        return self.message == CANCELLED


@frozen
class Done:
    type: ClassVar[str] = "done"

    seconds: float
    cancelled: bool = False


ProbeMessage: TypeAlias = Hello | Progress | Result | Retry | Skipped | Error | Done
"""Any one line of the protocol."""

MESSAGE_TYPES: dict[str, type[ProbeMessage]] = {
    cls.type: cls for cls in (Hello, Progress, Result, Retry, Skipped, Error, Done)
}

_ALWAYS_REQUIRED: dict[type[ProbeMessage], tuple[str, ...]] = {
    Progress: ("text",),
    Result: ("details", "iterations", "seconds"),
}
"""Fields a line must carry even where the dataclass has a default (the historic schema)."""
_ITEMS = {"tests": "test ids"}
"""What the list fields of the protocol hold, in words."""
_TYPES = frozenset(MESSAGE_TYPES.values())


def _check_meaning(msg: ProbeMessage) -> None:
    """Rules beyond the field types (the codec checks those): finite numbers, known test ids and
    device kinds, ranges."""
    kind = msg.type
    for f in dataclasses.fields(msg):
        value = getattr(msg, f.name)
        if isinstance(value, float) and not math.isfinite(value):
            raise ProtocolError(f"{kind}: field {f.name!r} is not finite")
    test = None if isinstance(msg, Hello | Done) else msg.test
    if test is not None and test not in TEST_IDS and test != WARMUP:
        raise ProtocolError(f"{kind}: unknown test id {test!r}")
    match msg:
        case Hello(device_kind=device_kind) if device_kind not in DEVICE_KINDS:
            raise ProtocolError(f"hello: unknown device kind {device_kind!r}")
        case Progress(fraction=fraction) if not 0.0 <= fraction <= 1.0:
            raise ProtocolError(f"progress: fraction out of range ({fraction!r})")
        case Retry(size=size) if size <= 0:
            raise ProtocolError("retry: size must be positive")


def _protocol_error(kind: str, exc: CodecError) -> ProtocolError:
    """The codec's complaint about a line of ``kind``, in the protocol's words."""
    if not exc.path:  # missing field 'unit'
        return ProtocolError(f"{kind}: {exc.reason}")
    name = exc.path.split(".")[0].split("[")[0]
    if name != exc.path:  # a list item: "tests[0]: expected a string, got an integer"
        items = _ITEMS.get(name, "values")
        return ProtocolError(f"{kind}: field {name!r} must be a list of {items} ({exc})")
    return ProtocolError(f"{kind}: field {name!r} has the wrong type ({exc.reason})")


def parse_object(obj: object) -> ProbeMessage:
    """The message a decoded JSON object stands for; raise ProtocolError if it is not one.

    Keys that the message kind does not define are ignored (a newer worker may send more)."""
    if not isinstance(obj, dict):
        raise ProtocolError("a message must be a JSON object")
    kind = obj.get("type")
    cls = MESSAGE_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ProtocolError(f"unknown message type: {kind!r}")
    try:
        msg = codec.decode(cls, obj)
    except CodecError as exc:
        raise _protocol_error(cls.type, exc) from None
    for name in _ALWAYS_REQUIRED.get(cls, ()):
        if name not in obj:
            raise ProtocolError(f"{cls.type}: missing field {name!r}")
    _check_meaning(msg)
    return msg


def to_dict(msg: ProbeMessage) -> JsonObject:
    """A message as the JSON object that goes on the wire (fields in order, ``type`` last)."""
    if type(msg) not in _TYPES:
        raise TypeError(f"not a probe message: {msg!r}")
    out: JsonObject = codec.encode(msg)
    out["type"] = msg.type
    return out


def encode(msg: ProbeMessage) -> str:
    """One message as one JSON line (no trailing newline), checked as the reader will check it
    (a ``str`` subclass such as torch's version string is written as the string it is)."""
    obj = to_dict(msg)
    try:
        line = json.dumps(obj, separators=(",", ":"), allow_nan=False, sort_keys=False)
    except (ValueError, TypeError) as exc:  # NaN, infinity or a value JSON does not have
        raise ProtocolError(str(exc)) from exc
    parse_object(json.loads(line))
    return line


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
