"""``@frozen``: the project's immutable record, a dataclass that the type checker keeps frozen.

Every model class is a record that nobody changes after it is made. ``dataclass(frozen=True)``
would say so at run time too, at a price paid on every start and every reading: Python 3.11
compiles six methods for each such class (building ~80 of them was a quarter of the dashboard's
own import time), and a frozen class's ``__init__`` sets each field through
``object.__setattr__`` (a ``ProcessSample`` took 8 times as long to make, and a crowded node makes
thousands a reading).

``@frozen`` makes a slotted dataclass whose one compiled method is ``__init__``; ``__eq__``,
``__hash__`` and ``__repr__`` are shared functions over the fields (as a dataclass's would be:
``compare``, ``hash`` and ``repr`` of ``field()`` are honoured, and a class's own method wins).
It tells mypy (strict, in CI) that the class is frozen: an assignment to a field is a type error,
and ``dataclasses.replace`` makes the changed copy. At run time nothing stops an assignment.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, overload

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:  # the decorator only informs type checkers (and typing has it from Python 3.11 only)

    def dataclass_transform(**_: object) -> Callable[[object], object]:
        return lambda decorator: decorator


T = TypeVar("T")
Values = Callable[[object], tuple[object, ...]]


@overload
def frozen(cls: type[T], /) -> type[T]: ...


@overload
def frozen(*, slots: bool = True) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen(
    cls: type[T] | None = None, /, *, slots: bool = True
) -> type[T] | Callable[[type[T]], type[T]]:
    """``@frozen`` or ``@frozen(slots=False)`` (a class that needs a ``__dict__``)."""

    def make(target: type[T]) -> type[T]:
        made = dataclasses.dataclass(target, slots=slots, eq=False, repr=False)
        _add_methods(made)
        return made

    return make if cls is None else make(cls)


def _add_methods(cls: type) -> None:
    fields = dataclasses.fields(cls)
    compared = _getter([f.name for f in fields if f.compare])
    hashed = _getter([f.name for f in fields if (f.compare if f.hash is None else f.hash)])
    shown = [f.name for f in fields if f.repr]

    def __eq__(self: object, other: object) -> bool:
        if other.__class__ is self.__class__:
            return compared(self) == compared(other)
        return NotImplemented

    def __hash__(self: object) -> int:
        return hash(hashed(self))

    def __repr__(self: object) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{self.__class__.__qualname__}({inner})"

    for method in (__eq__, __hash__, __repr__):
        if method.__name__ not in cls.__dict__:
            method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
            setattr(cls, method.__name__, method)


def _getter(names: list[str]) -> Values:
    """The values of these fields of a record, as a tuple."""
    if len(names) > 1:
        return operator.attrgetter(*names)
    if names:
        one = operator.attrgetter(names[0])
        return lambda record: (one(record),)
    return lambda record: ()
