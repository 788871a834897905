"""The session layer: which backend to read (parsed once) and the one way to open it.

Every command, the dashboard and the exporter open their readings here::

    spec = BackendSpec.parse("sim:faulty")          # ValueError for a bad name
    with open_session(spec, interval=1.0) as session:
        snapshot = session.sampler.poll()

:func:`open_session` opens the backend, wraps it in a :class:`~gputui.engine.sampler.Sampler` with
the health rules attached (or the recorded findings, for a replay), and raises :class:`SessionError`
with a message for the user instead of printing; the caller decides where the message goes.

The backend is opened on a thread of its own and waited for with a limit
(:mod:`gputui.engine.opening`): a driver that hangs while the GPUs are opened gives
:class:`DriverNotAnswering`, and Ctrl-C ends the wait.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Literal

from gputui import backends
from gputui.backends.base import Backend, OpenProgress
from gputui.backends.spec import BACKEND_KINDS, DEFAULT_SIM_SCENARIO, SPEC_HELP, BackendSpec
from gputui.core.model import NodeInfo
from gputui.core.playback import Playback, RecordedFindings
from gputui.engine.opening import DEFAULT_TIMEOUT_S, Opening, OpenTimedOut
from gputui.engine.sampler import HealthEvaluator, Sampler
from gputui.settings.model import HealthSettings, Settings


class SessionError(Exception):
    """The session could not be opened; ``str(exc)`` is the whole message for the user."""


class NoGpuError(SessionError):
    """No backend could be opened: ``reasons`` has one (label, reason) pair per backend tried."""

    def __init__(self, spec: BackendSpec, reasons: list[tuple[str, str]]) -> None:
        self.spec = spec
        self.reasons = reasons
        super().__init__(no_backend_message(reasons, spec))


class ReplayError(SessionError):
    """A recording that cannot be replayed (missing, not a recording, no readings)."""


class DriverNotAnswering(SessionError):
    """The GPU library did not return from opening the GPUs within ``allowed_s`` seconds."""

    def __init__(self, spec: BackendSpec, allowed_s: float) -> None:
        self.allowed_s = allowed_s
        tool = {"nvml": "nvidia-smi", "amd": "amd-smi"}.get(spec.kind, "nvidia-smi / amd-smi")
        super().__init__(
            f"gputui: the GPU library did not answer within {allowed_s:.0f} s while opening the "
            f"GPUs (a driver call hangs); check {tool} (it may hang too) and the kernel log (dmesg)"
        )


def no_backend_message(reasons: list[tuple[str, str]], spec: BackendSpec) -> str:
    head = "gputui: no usable GPU found." if spec.kind == "auto" else f"gputui: cannot use {spec}."
    lines = [head, *(f"  {label}: {reason}" for label, reason in reasons)]
    lines.append("Run `gputui --demo` to try gputui on a simulated 8-GPU node.")
    return "\n".join(lines)


@dataclass
class Session:
    """An open backend and the sampler that reads it. Close it (or use ``with``)."""

    spec: BackendSpec
    sampler: Sampler

    @property
    def backend(self) -> Backend:
        return self.sampler.backend

    @property
    def node(self) -> NodeInfo:
        node = self.sampler.node
        assert node is not None  # open_session opens the backend before it returns
        return node

    @property
    def playback(self) -> Playback | None:
        return self.sampler.playback

    def close(self) -> None:
        self.sampler.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


Judging = Literal["rules", "none"]


def open_session(
    spec: BackendSpec | str,
    *,
    seed: int = 0,
    interval: float = 1.0,
    slow_interval: float | None = None,
    clock: Callable[[], float] | None = None,
    health: HealthEvaluator | None = None,
    judge: Judging = "rules",
    deadline: float | None = None,
    defer_topology: bool = False,
    progress: OpenProgress | None = None,
    open_timeout: float | None = DEFAULT_TIMEOUT_S,
    on_wait: Callable[[float], None] | None = None,
    settings: Settings | None = None,
) -> Session:
    """Open ``spec`` (a string: see :meth:`BackendSpec.parse`) and a sampler over it.

    Health: ``health`` when given; else, with ``judge="rules"``, the health rules with the
    thresholds of ``settings`` (a live or simulated node) or the findings recorded with each
    reading (a replay); ``judge="none"`` attaches no evaluator. ``settings`` (default: the
    defaults) also gives the price of a GPU-hour. ``clock`` defaults to the wall clock, or the
    replay's clock; ``deadline`` is how long a reading may take (see :class:`Sampler`);
    ``defer_topology`` leaves the wiring to the first reading (the dashboard's quick start);
    ``progress`` follows a slow open GPU by GPU. Raises :class:`NoGpuError` or
    :class:`ReplayError`.

    The backend opens on a thread of its own; past ``open_timeout`` seconds (more for a cold
    open that makes progress, see :func:`gputui.engine.opening.open_deadline`; None: no limit; a
    replay has none) this raises :class:`DriverNotAnswering`. ``on_wait(seconds so far)`` runs on
    the calling thread while it waits, first at once.
    """
    if isinstance(spec, str):
        spec = BackendSpec.parse(spec)
    if progress is None:
        progress = OpenProgress()  # what the deadline follows
    open_it = functools.partial(
        _open_backend, spec, seed=seed, defer_topology=defer_topology, progress=progress
    )
    limit = None if spec.replayed else open_timeout  # a recording is a file, not a driver
    try:
        backend, node = Opening(open_it, timeout=limit, progress=progress).wait(on_wait)
    except OpenTimedOut as exc:
        raise DriverNotAnswering(spec, exc.allowed_s) from None
    sampler = sampler_for(
        backend,
        node,
        interval=interval,
        slow_interval=slow_interval,
        clock=clock,
        health=health,
        judge=judge,
        deadline=deadline,
        settings=settings,
    )
    return Session(spec, sampler)


def sampler_for(
    backend: Backend,
    node: NodeInfo,
    *,
    interval: float = 1.0,
    slow_interval: float | None = None,
    clock: Callable[[], float] | None = None,
    health: HealthEvaluator | None = None,
    judge: Judging = "rules",
    deadline: float | None = None,
    settings: Settings | None = None,
) -> Sampler:
    """The sampler over an already opened ``backend`` (see :func:`open_session`)."""
    settings = settings if settings is not None else Settings()
    playback = backend.playback
    if health is None and judge == "rules":
        health = (
            RecordedFindings(playback) if playback is not None else default_health(settings.health)
        )
    return Sampler(
        backend,
        interval=interval,
        slow_interval=slow_interval,
        clock=clock,
        node=node,
        health=health,
        deadline=deadline,
        gpu_hour_price=settings.gpu_hour_price,
    )


def _open_backend(
    spec: BackendSpec,
    *,
    seed: int,
    defer_topology: bool = False,
    progress: OpenProgress | None = None,
) -> tuple[Backend, NodeInfo]:
    try:
        return backends.open_backend(
            spec, seed=seed, defer_topology=defer_topology, progress=progress
        )
    except backends.NoBackend as exc:
        if spec.replayed:
            reason = exc.reasons[0][1] if exc.reasons else "cannot be read"
            raise ReplayError(f"gputui: cannot replay: {reason}") from None
        raise NoGpuError(spec, exc.reasons) from None


def default_health(health: HealthSettings | None = None) -> HealthEvaluator:
    """The health rules as the dashboard, ``snapshot`` and the exporter judge a running node,
    with the thresholds of ``health`` (default: the defaults)."""
    from gputui.health import HealthMonitor, torch_cuda_version

    health = health if health is not None else HealthSettings()
    return HealthMonitor(health.config(torch_cuda_version=torch_cuda_version()))


__all__ = [
    "BACKEND_KINDS",
    "DEFAULT_SIM_SCENARIO",
    "SPEC_HELP",
    "BackendSpec",
    "DriverNotAnswering",
    "NoGpuError",
    "ReplayError",
    "Session",
    "SessionError",
    "default_health",
    "no_backend_message",
    "open_session",
    "sampler_for",
]
