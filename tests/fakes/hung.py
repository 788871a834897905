"""A sampler whose driver hangs partway: the hung-driver tests' building block."""

from __future__ import annotations

import threading

from tests.fakes.fake_pynvml import FakeGpu, make_fake_nvml

from gputui.backends.nvml import NvmlBackend
from gputui.engine.sampler import Sampler
from gputui.health import HealthConfig, HealthMonitor


def hung_sampler(wedged: threading.Event, *, after: int) -> tuple[Sampler, FakeGpu]:
    """A sampler over two fake GPUs, opened; GPU 1's calls block once it has answered ``after``
    more calls."""
    gpus = [FakeGpu(), FakeGpu()]
    gpus[1].hang = wedged
    gpus[1].hang_after = 10**9
    backend = NvmlBackend(make_fake_nvml(gpus))
    node = backend.open()
    gpus[1].hang_after = gpus[1].call_count + after
    sampler = Sampler(
        backend,
        interval=0.1,
        node=node,
        deadline=0.5,
        health=HealthMonitor(HealthConfig(current_user="me"), env={}),
    )
    return sampler, gpus[1]
