"""What every vendor adapter needs besides its library: rates from cumulative counters, and the
memory of calls a device cannot answer."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

KeyT = TypeVar("KeyT", bound=Hashable)


class CounterRates(Generic[KeyT]):
    """Per-second rates of cumulative counters (bytes, KiB, busy nanoseconds ...), one baseline
    per key.

    A rate needs two readings of the same key. The first reading gives None, and so does one whose
    time did not move forward or whose counter went backwards (a wrap, a reset, a driver reload);
    every reading becomes the new baseline, so the next one gives a rate again. The unit of the
    rate is the counter's unit per second: scale it where the counter is read.
    """

    def __init__(self) -> None:
        self._last: dict[KeyT, tuple[float, float]] = {}

    def rate(self, key: KeyT, value: float | None, now: float) -> float | None:
        """The rate since the previous reading of ``key``, or None (see the class).

        ``value`` None means nothing was read this time: the baseline is kept, so the next
        reading spans the gap. Callers that want no rate across a gap call :meth:`forget`.
        """
        if value is None:
            return None
        previous = self._last.get(key)
        self._last[key] = (value, now)
        if previous is None:
            return None
        before, then = previous
        if now <= then or value < before:
            return None
        return (value - before) / (now - then)

    def forget(self, key: KeyT) -> None:
        """Drop the baseline of ``key``: its next reading is a first reading."""
        self._last.pop(key, None)

    def forget_where(self, predicate: Callable[[KeyT], bool]) -> None:
        """Drop the baselines of every key for which ``predicate`` is true."""
        for key in [key for key in self._last if predicate(key)]:
            del self._last[key]

    def clear(self) -> None:
        self._last.clear()

    def __contains__(self, key: object) -> bool:
        return key in self._last

    def __len__(self) -> int:
        return len(self._last)


class UnsupportedCalls:
    """Calls a device has answered "not supported" to, so they are not asked again every tick.

    Keyed by (device index, call key). The call key names the reading, with its arguments where
    one library function serves several readings (``"clock:GFX"``, ``"nvlink3:state"``).
    """

    def __init__(self) -> None:
        self._calls: set[tuple[int, str]] = set()

    def has(self, device: int, call: str) -> bool:
        """Whether ``call`` is known to be unsupported on ``device``."""
        return (device, call) in self._calls

    def add(self, device: int, call: str) -> None:
        """Remember that ``device`` cannot answer ``call``."""
        self._calls.add((device, call))

    def forget_device(self, device: int) -> None:
        """Forget what is known about ``device`` (a different GPU may take its index)."""
        self._calls = {entry for entry in self._calls if entry[0] != device}

    def clear(self) -> None:
        self._calls.clear()

    def __len__(self) -> int:
        return len(self._calls)


__all__ = ["CounterRates", "UnsupportedCalls"]
