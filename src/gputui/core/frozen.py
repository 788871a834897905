"""``@frozen``: the project's immutable record, a dataclass that the type checker keeps frozen.

Every model class is a record that nobody changes after it is made. ``dataclass(frozen=True)``
would say so at run time too, at a price paid on every start and every reading: Python compiles
two more methods per class (a tenth of the dashboard's imports go to building ~80 dataclasses),
and a frozen class's ``__init__`` sets each field through ``object.__setattr__`` (a
``ProcessSample`` takes 8 times as long to make, and a crowded node makes thousands a reading).
``@frozen`` makes an ordinary slotted dataclass with ``__eq__`` and ``__hash__`` over its fields
and tells mypy (strict, in CI) that it is frozen: an assignment to a field is a type error, and
``dataclasses.replace`` makes the changed copy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, overload

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:  # the decorator only informs type checkers (and typing has it from Python 3.11 only)

    def dataclass_transform(**_: object) -> Callable[[object], object]:
        return lambda decorator: decorator


T = TypeVar("T")


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
        return dataclasses.dataclass(target, slots=slots, unsafe_hash=True)

    return make if cls is None else make(cls)
