"""Hash-based noise: a pure function of (key, time), so a reading never depends on call history.

Every random-looking wiggle in the simulator comes from here or from a ``random.Random`` seeded with
a string (string seeds hash with SHA-512, so they are stable across runs and Python versions).
"""

from __future__ import annotations

import math
import random

_M64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_INV16 = 2.0 / 65535.0


def mix(x: int) -> int:
    """splitmix64 finaliser: a well-scrambled 64-bit integer from any integer."""
    x = (x + _GOLDEN) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def key(*parts: int) -> int:
    """A noise key from small integers (seed, GPU index, channel...)."""
    k = 0x5EED
    for p in parts:
        k = mix(k ^ (p & _M64))
    return k


def rng(scenario: str, seed: int, purpose: str) -> random.Random:
    """A private generator for one purpose, so adding draws in one place never shifts another."""
    return random.Random(f"gputui-sim/{scenario}/{seed}/{purpose}")


def _channels(k: int, tick: int) -> tuple[float, ...]:
    """Eight values in [-1, 1] for one integer tick (two hashes, four 16-bit lanes each)."""
    a = mix(k ^ ((tick * _GOLDEN) & _M64))
    b = mix(a)
    s = _INV16
    return (
        (a & 0xFFFF) * s - 1.0,
        ((a >> 16) & 0xFFFF) * s - 1.0,
        ((a >> 32) & 0xFFFF) * s - 1.0,
        (a >> 48) * s - 1.0,
        (b & 0xFFFF) * s - 1.0,
        ((b >> 16) & 0xFFFF) * s - 1.0,
        ((b >> 32) & 0xFFFF) * s - 1.0,
        (b >> 48) * s - 1.0,
    )


def smooth8(k: int, t: float) -> list[float]:
    """Eight independent noise channels in [-1, 1] at time ``t`` (seconds), linearly interpolated
    between whole-second ticks: smooth at any sampling rate, identical for any call pattern."""
    n = math.floor(t)
    f = t - n
    v0 = _channels(k, n)
    v1 = _channels(k, n + 1)
    return [x + (y - x) * f for x, y in zip(v0, v1, strict=True)]
