"""The AMD adapter: opening and closing AMD SMI and the :class:`~gputui.backends.base.Backend`
methods, each handing the per-GPU work to the module of its concern."""

from __future__ import annotations

import contextlib
import socket
from types import ModuleType
from typing import Any

from gputui.backends.amd.calls import AmdCalls, GpuGone
from gputui.backends.amd.device import DeviceReader
from gputui.backends.amd.links import read_topology
from gputui.backends.amd.loader import import_amdsmi, quiet
from gputui.backends.amd.partition import backing_bus_ids, read_partitions, with_partition
from gputui.backends.amd.processes import ProcessListing, ProcessReader, with_completeness
from gputui.backends.amd.static import driver_version, library_version, rocm_version, static_info
from gputui.backends.base import Backend, BackendUnavailable
from gputui.core.model import GpuInfo, GpuSample, NodeInfo, ProcessSample, Topology

_NO_GPU = "no AMD GPU found"


class AmdSmiBackend(Backend):
    """AMD GPUs through ``amdsmi`` (ROCm's AMD SMI library).

    ``amdsmi`` is the module to use (tests pass a fake); by default ``open()`` imports the real one.
    ``pcie_throughput=True`` adds ``amdsmi_get_gpu_pci_throughput`` to the slow tier; it blocks
    about one second per GPU and is supported only on some GPUs, so it is off by default.
    """

    name = "AMD-SMI"

    def __init__(self, amdsmi: ModuleType | None = None, *, pcie_throughput: bool = False) -> None:
        self._lib: Any = amdsmi
        self._pcie_throughput = pcie_throughput
        self._open = False
        self._node: NodeInfo | None = None
        # Made anew by every open: nothing learnt about a previous session's GPUs carries over
        # (their indexes may differ now).
        self._calls: AmdCalls | None = None
        self._reader: DeviceReader | None = None
        self._processes: ProcessReader | None = None
        self._listing: ProcessListing | None = None
        self._gpu_infos: tuple[GpuInfo, ...] = ()
        self._backing: list[str | None] = []
        self._topology_pending = False

    # ------------------------------------------------------------------------------- lifecycle

    def open(self) -> NodeInfo:
        if self._open and self._node is not None:
            return self._node
        if self._lib is None:
            self._lib = import_amdsmi()
        lib = self._lib
        calls = AmdCalls(lib)
        try:
            with quiet():
                flags = getattr(lib, "AmdSmiInitFlags", None)
                if flags is not None and hasattr(flags, "INIT_AMD_GPUS"):
                    lib.amdsmi_init(flags.INIT_AMD_GPUS)
                else:
                    lib.amdsmi_init()
        except Exception as exc:
            raise BackendUnavailable(calls.init_error(exc)) from None
        self._open = True
        self._calls = calls
        try:
            with quiet():
                handles = list(lib.amdsmi_get_processor_handles())
        except Exception as exc:
            self.close()
            raise BackendUnavailable(f"AMD-SMI cannot list GPUs: {calls.describe(exc)}") from None
        if not handles:
            self.close()
            raise BackendUnavailable(_NO_GPU)
        calls.handles = handles
        runtime = rocm_version(lib)
        partitions = read_partitions(calls, runtime)
        calls.refused = {i: part.refused() for i, part in enumerate(partitions) if part.secondary}
        gpus = tuple(
            with_partition(static_info(calls, i), part) for i, part in enumerate(partitions)
        )
        self._backing = backing_bus_ids(gpus, partitions)
        self._reader = DeviceReader(calls, gpus, pcie_throughput=self._pcie_throughput)
        self._processes = ProcessReader(calls)
        self._listing = None
        self._gpu_infos = gpus
        self._topology_pending = self.defer_topology
        topology = None if self.defer_topology else self._read_topology()
        self._node = NodeInfo(
            hostname=socket.gethostname(),
            backend=self.name,
            gpus=gpus,
            driver_version=driver_version(calls),
            runtime_version=runtime,
            library_version=library_version(lib),
            topology=topology,
        )
        return self._node

    def _read_topology(self) -> Topology | None:
        if self._calls is None:
            return None
        try:
            return read_topology(self._calls, self._gpu_infos, self._backing)
        except Exception:  # a bug here must not stop the dashboard: no topology screen data
            return None

    @property
    def topology_pending(self) -> bool:
        return self._topology_pending

    def discover_topology(self) -> Topology | None:
        if not self._topology_pending:
            return None
        self._topology_pending = False
        return self._read_topology()

    def close(self) -> None:
        if not self._open:
            return
        self._open = False
        if self._calls is not None:
            self._calls.handles = []
        with contextlib.suppress(Exception), quiet():
            self._lib.amdsmi_shut_down()

    # --------------------------------------------------------------------------------- reading

    def read_gpus(self, now: float, *, slow: bool) -> list[GpuSample]:
        if self._calls is None or self._reader is None:
            return []
        samples = []
        for index in range(len(self._calls.handles)):
            self.reading_gpu = index
            try:
                self._calls.begin_reading(index)
                sample = self._reader.read(index, now, slow)
                error = self._calls.failed_reading(index)
                if error is not None:
                    # AMD-SMI or the amdgpu driver is not answering for this GPU: say so (it
                    # has not fallen off the bus), and read it all again next time.
                    self._reader.forget_gpu(index)
                    sample = GpuSample(index=index, timestamp=now, error=error)
                samples.append(sample)
            except GpuGone as gone:
                self._reader.forget_gpu(index)
                samples.append(GpuSample(index=index, timestamp=now, lost=True, error=str(gone)))
            except Exception as exc:  # a bug here must not take the other GPUs down
                samples.append(GpuSample(index=index, timestamp=now, error=f"AMD-SMI: {exc!r}"))
        self.reading_gpu = None
        if slow and self._processes is not None:
            # The process lists are read with the slow tier, so that each GPU's reading can say
            # whether its list may be incomplete; read_processes then returns this listing.
            self._listing = self._processes.read(now)
            samples = [with_completeness(s, self._listing) for s in samples]
        return samples

    def read_processes(self, now: float) -> list[ProcessSample]:
        if self._processes is None:
            return []
        if self._listing is None or self._listing.timestamp != now:
            self._listing = self._processes.read(now)
        return list(self._listing.processes)

    def process_errors(self) -> dict[int, str]:
        return dict(self._listing.failed) if self._listing is not None else {}
