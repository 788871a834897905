"""Backend selection: ``auto`` tries NVML, then AMD-SMI; ``sim:SCENARIO`` is the simulated node;
``replay:FILE`` plays back a recording (see :mod:`gputui.core.record`).

Vendor modules are imported only when chosen, so start-up stays fast and a missing optional
library costs nothing until it is asked for. Callers normally go through
:func:`gputui.engine.session.open_session`, which adds the sampler and health rules.
"""

from __future__ import annotations

import dataclasses
import time

from gputui.backends.base import Backend, BackendUnavailable, OpenProgress
from gputui.backends.spec import BackendSpec
from gputui.core.model import NodeInfo


class NoBackend(Exception):
    """No backend could be opened. ``reasons`` holds one (label, reason) pair per backend tried."""

    def __init__(self, reasons: list[tuple[str, str]]) -> None:
        self.reasons = reasons
        super().__init__("; ".join(f"{label}: {reason}" for label, reason in reasons))


def create_backend(spec: BackendSpec | str, *, seed: int = 0) -> Backend:
    """A backend object for a concrete ``spec`` (not ``auto``; not yet opened)."""
    if isinstance(spec, str):
        spec = BackendSpec.parse(spec)
    if spec.kind == "replay":
        from gputui.backends.replay import ReplayBackend

        return ReplayBackend(spec.arg)
    if spec.kind == "nvml":
        from gputui.backends.nvml import NvmlBackend

        return NvmlBackend()
    if spec.kind == "amd":
        from gputui.backends.amd import AmdSmiBackend

        return AmdSmiBackend()
    if spec.kind == "sim":
        from gputui.backends.sim import SimBackend

        return SimBackend(spec.arg, seed=seed)
    raise ValueError(f"{spec} names no single backend")


def open_backend(
    spec: BackendSpec | str = "auto",
    *,
    seed: int = 0,
    defer_topology: bool = False,
    progress: OpenProgress | None = None,
) -> tuple[Backend, NodeInfo]:
    """Open the backend named by ``spec``; ``auto`` tries NVML, then AMD-SMI. The node says how
    long the open took (``open_seconds``); ``progress`` follows it GPU by GPU.

    Raises :class:`NoBackend` listing why each candidate was unusable (ValueError for a spec
    string that names no backend)."""
    if isinstance(spec, str):
        spec = BackendSpec.parse(spec)
    reasons: list[tuple[str, str]] = []
    for candidate in spec.candidates():
        backend = create_backend(candidate, seed=seed)
        backend.defer_topology = defer_topology
        backend.open_progress = progress
        started = time.monotonic()
        try:
            node = backend.open()
        except BackendUnavailable as exc:
            reasons.append((backend.name, str(exc)))
            backend.close()
            continue
        finally:
            if progress is not None:
                progress.finish()
        if node.open_seconds is None and backend.playback is None and not node.simulated:
            node = dataclasses.replace(node, open_seconds=round(time.monotonic() - started, 3))
        return backend, node
    raise NoBackend(reasons)


__all__ = [
    "Backend",
    "BackendSpec",
    "BackendUnavailable",
    "NoBackend",
    "OpenProgress",
    "create_backend",
    "open_backend",
]
