"""A simulated node on a clock that only moves when told to (not what ``--demo`` runs: that is
the simulated backend on the wall clock, opened like any other through
:mod:`gputui.engine.session`).

Tests, the screenshot script and documentation examples need the dashboard in a known state with
history already filled: this builds a :class:`~gputui.engine.sampler.Sampler` over the simulated
backend, driven by a :class:`FakeClock`, and polls it ``polls`` times one interval apart.
"""

from __future__ import annotations

from gputui.engine.sampler import Sampler
from gputui.engine.session import Judging, sampler_for
from gputui.settings.model import Settings

T0 = 1_700_000_000.0
"""Default start of the fake clock: 2023-11-14 22:13:20 UTC."""


class FakeClock:
    """A clock that only moves when told to (``clock.now += 1``)."""

    def __init__(self, start: float = T0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def fake_clock_sampler(
    scenario: str = "dgx-h100",
    polls: int = 0,
    t: float = T0,
    interval: float = 1.0,
    seed: int = 0,
    gpu_hour_price: float | None = None,
    lost_after_s: float | None = None,
    judge: Judging = "none",
) -> Sampler:
    """An opened Sampler over the simulated ``scenario`` on a :class:`FakeClock` (``.clock``),
    after ``polls`` polls one ``interval`` apart (history filled, ``latest`` set). The clock is
    left at the time of the next poll, so ``sampler.poll()`` continues the series.
    ``lost_after_s``: when the ``faulty`` scenario's GPU 3 falls off the bus. ``judge``:
    ``"rules"`` attaches the health rules (findings in every snapshot)."""
    from gputui.backends.sim import SimBackend

    clock = FakeClock(t)
    lost = {} if lost_after_s is None else {"lost_after_s": lost_after_s}
    backend = SimBackend(scenario, seed=seed, **lost)
    settings = Settings(gpu_hour_price=gpu_hour_price)
    sampler = sampler_for(
        backend, backend.open(), interval=interval, clock=clock, judge=judge, settings=settings
    )
    for _ in range(polls):
        sampler.poll()
        clock.now += interval
    return sampler
