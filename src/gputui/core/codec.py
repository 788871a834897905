"""The one JSON codec of the model: dataclasses to plain JSON values and back.

Encoding turns dataclasses into objects, frozensets into sorted lists and tuples into lists;
numbers stay numbers. ``omit_defaults=True`` leaves out every field equal to its default (what a
recording line stores); decoding restores the defaults, so both forms decode to the same object.
A field marked :data:`OMIT_DEFAULT` is left out at its default always: a key an output carries
only where it applies (a GPU's ``mig_devices`` in ``gputui check --json``). ``nan_as_null=True``
writes NaN and infinity as ``null`` (a command's output is strict JSON).

Decoding is driven by the model's type hints and checks every value against its field's type, so
input from anywhere (a recording copied between machines, a snapshot in a bug report) either
becomes a well-typed model object or raises :class:`CodecError` naming the field, e.g.
``gpus[0].utilization_gpu_pct: expected a number, got a string``. Unknown keys are ignored (a
later gputui may add fields). One converter is compiled per type on first use: a day of readings
is 86,400 lines.

Snapshots carry ``schema_version``. :data:`MIGRATIONS` holds one step per version, so a snapshot
(or recording) written by an older gputui is brought up to :data:`~gputui.core.model.SCHEMA_VERSION`
before it is decoded; a newer one is refused with a clear message.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar

from gputui.core.model import SCHEMA_VERSION, Snapshot

T = TypeVar("T")
JsonObject = dict[str, Any]
Converter = Callable[[Any], Any]


class CodecError(ValueError):
    """A JSON value that does not fit the model. ``path`` names the field (``gpus[0].power_w``)."""

    def __init__(self, reason: str, path: str = "") -> None:
        self.reason = reason
        self.path = path
        super().__init__(f"{path}: {reason}" if path else reason)

    def within(self, step: str) -> CodecError:
        """The same error one level up (``step`` is a field name or ``[i]``)."""
        if not self.path:
            path = step
        elif self.path.startswith("["):
            path = step + self.path
        else:
            path = f"{step}.{self.path}"
        return CodecError(self.reason, path)


# -- encoding -------------------------------------------------------------------------------------

OMIT_DEFAULT: Mapping[str, bool] = types.MappingProxyType({"omit_default": True})
"""``field(default=..., metadata=OMIT_DEFAULT)``: the key is written only when the value is not
the default, with or without ``omit_defaults``."""

_MISSING = object()
_DEFAULTS: dict[type, tuple[tuple[str, object, bool], ...]] = {}


def _field_defaults(tp: type) -> tuple[tuple[str, object, bool], ...]:
    """(name, default or _MISSING, always omitted at its default) per field of ``tp``."""
    found = _DEFAULTS.get(tp)
    if found is None:
        found = _DEFAULTS[tp] = tuple(
            (
                f.name,
                f.default if f.default is not dataclasses.MISSING else _MISSING,
                bool(f.metadata.get("omit_default")),
            )
            for f in dataclasses.fields(tp)
        )
    return found


def encode(value: object, *, omit_defaults: bool = False, nan_as_null: bool = False) -> Any:
    """``value`` as plain JSON values. With ``omit_defaults``, dataclass fields equal to their
    default (same type and value) are left out; with ``nan_as_null``, NaN and infinity become
    None."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: JsonObject = {}
        for name, default, omit in _field_defaults(type(value)):
            v = getattr(value, name)
            if (
                (omit_defaults or omit)
                and default is not _MISSING
                and (v is default or (type(v) is type(default) and v == default))
            ):
                continue
            out[name] = encode(v, omit_defaults=omit_defaults, nan_as_null=nan_as_null)
        return out
    if isinstance(value, (frozenset, set)):
        return sorted(value)
    if isinstance(value, (tuple, list)):
        return [encode(v, omit_defaults=omit_defaults, nan_as_null=nan_as_null) for v in value]
    if isinstance(value, dict):
        return {
            k: encode(v, omit_defaults=omit_defaults, nan_as_null=nan_as_null)
            for k, v in value.items()
        }
    if nan_as_null and type(value) is float and not math.isfinite(value):
        return None
    return value


def to_json(value: object, *, indent: int | None = None, nan_as_null: bool = False) -> str:
    """``value`` encoded, as JSON text (what a command's ``--json`` prints)."""
    return json.dumps(encode(value, nan_as_null=nan_as_null), indent=indent)


def snapshot_to_dict(snapshot: Snapshot) -> JsonObject:
    result: JsonObject = encode(snapshot)
    return result


def snapshot_to_json(snapshot: Snapshot, indent: int | None = None) -> str:
    return to_json(snapshot, indent=indent)


# -- decoding -------------------------------------------------------------------------------------


def _kind(value: object) -> str:
    """How a JSON value is named in an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    return {
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)


def _expect_int(data: Any) -> int:
    if type(data) is int:
        return data
    if type(data) is float and data.is_integer():  # 3.0 written by another tool
        return int(data)
    raise CodecError(f"expected an integer, got {_kind(data)}")


def _expect_float(data: Any) -> float:
    t = type(data)
    if t is float:
        if data in (math.inf, -math.inf):  # NaN stands for "not measured"; infinity for nothing
            raise CodecError("expected a finite number, got infinity")
        return typing.cast(float, data)
    if t is int:
        try:
            return float(data)
        except OverflowError:
            raise CodecError("expected a number, got an integer too large for one") from None
    raise CodecError(f"expected a number, got {_kind(data)}")


def _expect_str(data: Any) -> str:
    if type(data) is str:
        return data
    raise CodecError(f"expected a string, got {_kind(data)}")


def _expect_bool(data: Any) -> bool:
    if type(data) is bool:
        return data
    raise CodecError(f"expected true or false, got {_kind(data)}")


def _expect_any(data: Any) -> Any:
    return data


_SCALARS: dict[object, Converter] = {
    int: _expect_int,
    float: _expect_float,
    str: _expect_str,
    bool: _expect_bool,
}

_CONVERTERS: dict[object, Converter] = {}


def converter(tp: object) -> Converter:
    """The compiled decoder of type ``tp`` (raises :class:`CodecError` for a misfit)."""
    found = _CONVERTERS.get(tp)
    if found is None:
        found = _CONVERTERS[tp] = _build(tp)
    return found


def _build(tp: object) -> Converter:
    scalar = _SCALARS.get(tp)
    if scalar is not None:
        return scalar
    if tp is Any or tp is object:
        return _expect_any
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass_converter(tp)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return _optional_converter(tp, args)
    if origin is Literal:
        return _literal_converter(args)
    if origin is frozenset:
        return _collection_converter(converter(args[0]), frozenset)
    if origin is list:
        return _collection_converter(converter(args[0]), list)
    if origin is dict and args[0] is str:
        return _mapping_converter(converter(args[1]))
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return _collection_converter(converter(args[0]), tuple)
        return _fixed_tuple_converter(tuple(converter(a) for a in args))
    raise TypeError(f"the codec cannot decode {tp!r}")


def _optional_converter(tp: object, args: tuple[object, ...]) -> Converter:
    non_none = [a for a in args if a is not type(None)]
    if len(non_none) != 1:
        raise TypeError(f"the codec cannot decode {tp!r}")
    inner = converter(non_none[0])

    def optional(data: Any) -> Any:
        return None if data is None else inner(data)

    return optional


def _literal_converter(allowed: tuple[object, ...]) -> Converter:
    choices = frozenset(allowed)
    words = ", ".join(repr(a) for a in allowed)

    def literal(data: Any) -> Any:
        if type(data) is str and data in choices:
            return data
        raise CodecError(f"expected one of {words}, got {_kind(data)}")

    return literal


def _collection_converter(item: Converter, make: Callable[[Any], Any]) -> Converter:
    def collection(data: Any) -> Any:
        if type(data) is not list:
            raise CodecError(f"expected a list, got {_kind(data)}")
        out = []
        for i, value in enumerate(data):
            try:
                out.append(item(value))
            except CodecError as exc:
                raise exc.within(f"[{i}]") from None
        return make(out)

    return collection


def _mapping_converter(value: Converter) -> Converter:
    def mapping(data: Any) -> dict[str, Any]:
        if type(data) is not dict:
            raise CodecError(f"expected an object, got {_kind(data)}")
        out = {}
        for key, item in data.items():
            try:
                out[key] = value(item)
            except CodecError as exc:
                raise exc.within(key) from None
        return out

    return mapping


def _fixed_tuple_converter(items: tuple[Converter, ...]) -> Converter:
    def fixed(data: Any) -> tuple[Any, ...]:
        if type(data) is not list:
            raise CodecError(f"expected a list of {len(items)} values, got {_kind(data)}")
        if len(data) != len(items):
            raise CodecError(f"expected a list of {len(items)} values, got {len(data)}")
        out = []
        for i, (conv, value) in enumerate(zip(items, data, strict=True)):
            try:
                out.append(conv(value))
            except CodecError as exc:
                raise exc.within(f"[{i}]") from None
        return tuple(out)

    return fixed


def _dataclass_converter(tp: type) -> Converter:
    hints = typing.get_type_hints(tp)
    fields = dataclasses.fields(tp)
    convs = {f.name: converter(hints[f.name]) for f in fields}
    required = tuple(
        f.name
        for f in fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    )

    def dataclass_object(data: Any, **given: Any) -> Any:
        if type(data) is not dict:
            raise CodecError(f"expected an object, got {_kind(data)}")
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            conv = convs.get(key)
            if conv is None or key in given:
                continue  # a field from a later gputui, or one supplied by the caller
            try:
                kwargs[key] = conv(value)
            except CodecError as exc:
                raise exc.within(key) from None
        kwargs.update(given)
        for name in required:
            if name not in kwargs:
                raise CodecError(f"missing field {name!r}")
        return tp(**kwargs)

    return dataclass_object


def decode(tp: type[T], data: Any, **given: Any) -> T:
    """``data`` (plain JSON values) as a ``tp``; ``given`` fields are used as they are (e.g. the
    node of a recording line, which lives in the recording's header)."""
    conv = converter(tp)
    result: T = conv(data, **given) if given else conv(data)
    return result


# -- schema versions ------------------------------------------------------------------------------

Migration = Callable[[JsonObject], JsonObject]

MIGRATIONS: Mapping[int, Migration] = {}
"""``MIGRATIONS[n]`` turns a snapshot object of schema ``n`` into one of schema ``n + 1``. Add a
step here whenever :data:`~gputui.core.model.SCHEMA_VERSION` is bumped (a field renamed or removed),
so older recordings keep loading."""


def schema_of(data: Mapping[str, Any]) -> int:
    """The schema version an object says it has (the current one when it says nothing)."""
    version = data.get("schema_version", SCHEMA_VERSION)
    if type(version) is not int:
        raise CodecError(f"expected an integer, got {_kind(version)}", "schema_version")
    return version


def migrate(data: JsonObject, version: int) -> JsonObject:
    """``data`` (a snapshot object, or a recording's node and lines, of schema ``version``)
    brought up to the current schema. CodecError for a version this gputui cannot read."""
    if version > SCHEMA_VERSION:
        raise CodecError(
            f"snapshot schema {version} is newer than this gputui reads ({SCHEMA_VERSION}); "
            "upgrade gputui to read it"
        )
    if version < 1:
        raise CodecError(f"snapshot schema {version} is not a gputui schema")
    while version < SCHEMA_VERSION:
        data = MIGRATIONS[version](data)
        version += 1
    return data


def snapshot_from_dict(data: Any) -> Snapshot:
    """A snapshot from its JSON object (``gputui snapshot --json``), migrated from an older
    schema when needed. CodecError naming the field when it does not fit."""
    if type(data) is not dict:
        raise CodecError(f"expected an object, got {_kind(data)}")
    version = schema_of(data)
    data = migrate(dict(data), version)
    data["schema_version"] = SCHEMA_VERSION
    return decode(Snapshot, data)


__all__ = [
    "MIGRATIONS",
    "OMIT_DEFAULT",
    "CodecError",
    "converter",
    "decode",
    "encode",
    "migrate",
    "schema_of",
    "snapshot_from_dict",
    "snapshot_to_dict",
    "snapshot_to_json",
    "to_json",
]
