"""Shared fixtures: a simulated sampler on a fake clock, and switches that make TUI tests and SVG
snapshots deterministic (no cursor blink, UTC clock labels)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

import pytest

from gputui.sampler import Sampler

T0 = 1_700_000_000.0
"""The fake clock's start: 2023-11-14 22:13:20 UTC."""


class FakeClock:
    """A clock that only moves when told to (``clock.now += 1``)."""

    def __init__(self, start: float = T0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


SimSamplerFactory = Callable[..., Sampler]


@pytest.fixture
def sim_sampler() -> SimSamplerFactory:
    """``sim_sampler(scenario="dgx-h100", polls=0, t=T0, interval=1.0, seed=0)``: an opened
    Sampler over the simulated backend on a :class:`FakeClock` (``sampler.clock``), after
    ``polls`` polls one ``interval`` apart (history filled, ``sampler.latest`` set). The clock is
    left at the time of the next poll, so ``sampler.poll()`` continues the series."""

    def make(
        scenario: str = "dgx-h100",
        polls: int = 0,
        t: float = T0,
        interval: float = 1.0,
        seed: int = 0,
    ) -> Sampler:
        from gputui.backends.sim import SimBackend

        clock = FakeClock(t)
        sampler = Sampler(SimBackend(scenario, seed=seed), interval=interval, clock=clock)
        sampler.open()
        for _ in range(polls):
            sampler.poll()
            clock.now += interval
        return sampler

    return make


def advance(sampler: Sampler, seconds: float = 1.0) -> None:
    """Move a :func:`sim_sampler`'s fake clock on."""
    sampler.clock.now += seconds  # type: ignore[attr-defined]


@pytest.fixture
def no_cursor_blink(monkeypatch: pytest.MonkeyPatch) -> None:
    """Input cursors do not blink (a blinking cursor makes snapshots flaky)."""
    monkeypatch.setattr("textual.widgets._input.Input.cursor_blink", False)


@pytest.fixture
def utc() -> Iterator[None]:
    """Local time is UTC, so clock labels ("22:13:20") are the same on every machine."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = old
        time.tzset()


@pytest.fixture
def tui_env(no_cursor_blink: None, utc: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Everything a deterministic TUI test needs; NO_COLOR is cleared so colour is on."""
    monkeypatch.delenv("NO_COLOR", raising=False)
