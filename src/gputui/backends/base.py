"""The contract every backend (NVML, AMD-SMI, simulated, replay) fulfils.

A backend is an adapter: it turns one vendor library into :mod:`gputui.core.model` objects and
nothing more. It never raises for an unsupported field (that field is ``None``), it never raises
because one GPU is lost (that GPU's sample says ``lost=True``), and it is called from one thread at
a time (the sampler's), so it needs no locking of its own.
"""

from __future__ import annotations

import abc
import os
import signal
import time
from dataclasses import dataclass, field

from gputui.core.model import GpuEvent, GpuSample, HostSample, NodeInfo, ProcessSample, Topology
from gputui.core.playback import Playback


class BackendUnavailable(Exception):
    """The backend cannot be used on this machine. ``str(exc)`` is a one-line reason for the user,
    e.g. "libnvidia-ml.so.1 not found (no NVIDIA driver)"."""


@dataclass
class OpenProgress:
    """How far a backend's :meth:`Backend.open` has got, for a watchdog on another thread.

    Without persistence mode the driver initialises each GPU when a program first opens it,
    1-3 s a GPU (NVIDIA's "Driver Persistence" notes): a slow open that makes steady progress is
    a cold driver, not a hung one."""

    expected: int | None = None
    """GPUs to open, once known (the driver's own count, or the backend's)."""
    opened: int = 0
    last_step: float = field(default_factory=time.monotonic)
    done_at: float | None = None
    """When the open returned (``time.monotonic``)."""

    def step(self) -> None:
        """One more GPU opened."""
        self.opened += 1
        self.last_step = time.monotonic()

    def finish(self) -> None:
        self.done_at = time.monotonic()


class Backend(abc.ABC):
    """Base class for backends. Subclasses implement :meth:`open`, :meth:`read_gpus` and
    :meth:`read_processes`; the rest has sensible defaults."""

    #: Short name shown to users ("NVML", "AMD-SMI", "sim:dgx-h100").
    name: str = "backend"

    #: Whether the sampler should fill host-side process fields (user, command, CPU %, RSS...)
    #: from psutil. The simulated backend invents its own processes, so it says False.
    enrich_processes: bool = True

    #: Where this host's ``/proc`` is: read for the host-side process fields, the PID namespace
    #: gputui runs in (:mod:`gputui.host.pidns`) and what may be signalled. Tests point it at a
    # fake.
    proc_root: str = "/proc"

    #: The GPU index being read right now (None between reads, or when a backend does not say):
    #: when a driver call hangs, the sampler names this GPU in its "not responding" finding.
    reading_gpu: int | None = None

    #: Set before :meth:`open` to leave the slow discovery of the wiring (NVLink peers, the P2P
    #: matrix, CPU locality) out of it: the dashboard draws its first frame sooner, and the
    #: sampler calls :meth:`discover_topology` before the first reading.
    defer_topology: bool = False

    #: Set before :meth:`open` by a caller that watches a slow open (``gputui check``).
    open_progress: OpenProgress | None = None

    @property
    def topology_pending(self) -> bool:
        """Whether :meth:`discover_topology` still has the wiring to find."""
        return False

    def discover_topology(self) -> Topology | None:
        """Find the wiring left out of :meth:`open` (see :attr:`defer_topology`); None when
        there is none to find."""
        return None

    @property
    def playback(self) -> Playback | None:
        """The replay controls of a backend that plays back a recording; None for a live one."""
        return None

    @abc.abstractmethod
    def open(self) -> NodeInfo:
        """Initialise the library, enumerate GPUs, cache handles and read static facts.

        Raises :class:`BackendUnavailable` with a one-line reason when the library, driver or GPUs
        are missing. Called once, before any read.
        """

    @abc.abstractmethod
    def read_gpus(self, now: float, *, slow: bool) -> list[GpuSample]:
        """Read every GPU once, in index order.

        ``now`` is the wall-clock timestamp to stamp samples with. When ``slow`` is False, the
        fields in :data:`gputui.core.model.SLOW_SAMPLE_FIELDS` may be left ``None``: the sampler
        carries the last slow-tier values forward.
        """

    @abc.abstractmethod
    def read_processes(self, now: float) -> list[ProcessSample]:
        """GPU processes with their GPU-side facts (pid, GPU, type, GPU memory, SM %).

        Host-side fields may be left ``None`` when :attr:`enrich_processes` is True.
        """

    def process_errors(self) -> dict[int, str]:
        """Per GPU, why its process list failed at the last :meth:`read_processes` (an error,
        not "not supported"); the sampler puts it on the GPU's readings
        (``GpuSample.unanswered``)."""
        return {}

    def read_events(self, now: float) -> list[GpuEvent]:
        """Events (XID errors, ECC errors ...) that arrived since the last call; cheap: called on
        every poll. Backends that watch events do so on their own thread and queue them here."""
        return []

    def read_host(self, now: float) -> HostSample | None:
        """Host CPU/RAM reading; real backends use psutil, the simulator invents a host."""
        from gputui.host.processes import read_host

        return read_host(now)

    def signal_process(self, pid: int, sig: signal.Signals) -> None:
        """Send ``sig`` to ``pid``. Raises ProcessLookupError / PermissionError like os.kill.

        Never to PID 1, PID 2 or a kernel thread, and nothing at all where gputui does not run in
        the host's PID namespace (the driver's PIDs are host PIDs): those raise
        :class:`gputui.host.signals.SignalRefused` and nothing is sent. When ``pid`` is a
        :class:`gputui.host.signals.ProcessRef` (the dashboard passes one), the PID must also still
        name the process that started at its ``start_time``, checked right before sending
        (through a pidfd where the kernel has them)."""
        from gputui.host.signals import ProcessRef, check_target, send_signal

        if isinstance(pid, ProcessRef):
            send_signal(pid, sig, start_time=pid.start_time, proc_root=self.proc_root)
        else:
            check_target(pid, self.proc_root)
            os.kill(pid, sig)

    def advance(self, seconds: float) -> None:  # noqa: B027 - a real node ignores it
        """Move the node on by ``seconds``, as if it had been running that much longer: a
        simulated node's scenario plays on (``gputui check`` judges it as a node that has been up
        a while). A real node's time is its own."""

    def close(self) -> None:  # noqa: B027 - optional hook, most backends need nothing
        """Release the library. Safe to call more than once."""
