"""Backend selection: ``auto`` tries NVML, then AMD-SMI; ``sim[:SCENARIO]`` is the simulated node;
``replay:PATH`` plays back a recording (see :mod:`gputui.record`).

Vendor modules are imported only when chosen, so start-up stays fast and a missing optional
library costs nothing until it is asked for.
"""

from __future__ import annotations

from gputui.backends.base import Backend, BackendUnavailable
from gputui.model import NodeInfo

DEFAULT_SIM_SCENARIO = "dgx-h100"
BACKEND_CHOICES = ("auto", "nvml", "amd", "sim", "sim:SCENARIO", "replay:PATH")


class NoBackend(Exception):
    """No backend could be opened. ``reasons`` holds one (label, reason) pair per backend tried."""

    def __init__(self, reasons: list[tuple[str, str]]) -> None:
        self.reasons = reasons
        super().__init__("; ".join(f"{label}: {reason}" for label, reason in reasons))


def create_backend(spec: str, *, seed: int = 0) -> Backend:
    """A backend object for ``spec`` (not yet opened). Raises ValueError for an unknown spec."""
    kind, _, arg = spec.partition(":")
    kind = kind.strip().lower()
    if kind == "replay":
        if not arg:
            raise ValueError("replay:PATH needs the path of a recording")
        from gputui.backends.replay import ReplayBackend

        return ReplayBackend(arg)
    if kind == "nvml" and not arg:
        from gputui.backends.nvml import NvmlBackend

        return NvmlBackend()
    if kind in ("amd", "amdsmi", "amd-smi") and not arg:
        from gputui.backends.amd import AmdSmiBackend

        return AmdSmiBackend()
    if kind in ("sim", "demo"):
        from gputui.backends.sim import SimBackend

        return SimBackend(arg or DEFAULT_SIM_SCENARIO, seed=seed)
    raise ValueError(f"unknown backend {spec!r} (choose from: {', '.join(BACKEND_CHOICES)})")


def open_backend(spec: str = "auto", *, seed: int = 0) -> tuple[Backend, NodeInfo]:
    """Open the backend named by ``spec``; ``auto`` tries NVML, then AMD-SMI.

    Raises :class:`NoBackend` listing why each candidate was unusable.
    """
    specs = ["nvml", "amd"] if spec.strip().lower() == "auto" else [spec]
    reasons: list[tuple[str, str]] = []
    for candidate in specs:
        backend = create_backend(candidate, seed=seed)
        try:
            return backend, backend.open()
        except BackendUnavailable as exc:
            reasons.append((backend.name, str(exc)))
            backend.close()
    raise NoBackend(reasons)


__all__ = [
    "BACKEND_CHOICES",
    "Backend",
    "BackendUnavailable",
    "NoBackend",
    "create_backend",
    "open_backend",
]
