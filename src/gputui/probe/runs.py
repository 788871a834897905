"""What a probe run is made of: the devices probed and what each one's workers reported.

Shared by the runner (which fills these in) and the report (which judges them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from gputui.core.frozen import frozen
from gputui.probe.protocol import Hello, ProbeMessage, Result, Retry, Skipped
from gputui.probe.verdict import Telemetry

ErrorKind = Literal["no_torch", "crash", "start", "device", "identity"]
"""Why a device's run failed as a whole: torch missing in the worker's Python, a worker that died
or wrote garbage, a worker that could not be started, a device the worker could not open, a
worker that opened another GPU than the one it was started for (its results are dropped)."""
NO_TORCH: ErrorKind = "no_torch"

EventCallback = Callable[[int | None, ProbeMessage], None]
"""Called with (NVML GPU index or None for the CPU, message) for every message a worker sends,
and for the errors the runner makes up when a worker fails without saying why."""


@frozen
class Target:
    """One device to probe: an NVML GPU (``gpu`` set) or the CPU (``gpu`` None).

    ``uuid`` and ``pci_bus_id`` are what the monitoring library reports for the GPU: the worker's
    ``hello`` must name the same device, or its results are not used."""

    gpu: int | None
    device: str  # "cuda:N" or "cpu"
    label: str  # "GPU 3" / "CPU"
    uuid: str | None = None  # "GPU-…" (NVIDIA), or a MIG slice's "MIG-…"
    pci_bus_id: str | None = None


@dataclass(slots=True)
class Measurement:
    """One result as the runner received it, with the telemetry read while its test ran."""

    result: Result
    received: float  # time.time() on arrival: the end of the test's telemetry window
    telemetry: Telemetry | None = None


@dataclass
class GpuRun:
    """What one device's workers reported."""

    target: Target
    hello: Hello | None = None  # the first worker's
    measurements: list[Measurement] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    retries: list[Retry] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    error_kind: ErrorKind | None = None
    notes: list[str] = field(default_factory=list)  # e.g. an identity that could not be checked
    cancelled: bool = False
    returncodes: list[int] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.errors and not self.cancelled

    @property
    def results(self) -> list[Result]:
        return [m.result for m in self.measurements]
