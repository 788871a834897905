"""The NVML adapter: opening and closing NVML and the :class:`~gputui.backends.base.Backend`
methods, each handing the per-GPU work to the module of its concern."""

from __future__ import annotations

import contextlib
import socket
import warnings
from types import ModuleType
from typing import Any

from gputui.backends.base import Backend, BackendUnavailable
from gputui.backends.nvml.attachment import driver_gpu_count
from gputui.backends.nvml.calls import GpuLost, NvmlCalls, NvmlGpu, error_classes, init_reason
from gputui.backends.nvml.device import read_sample
from gputui.backends.nvml.events import EventWatcher, start_event_watcher
from gputui.backends.nvml.links import read_topology
from gputui.backends.nvml.processes import gpu_processes
from gputui.backends.nvml.static import static_info
from gputui.backends.nvml.values import optional_text, to_int
from gputui.core.model import GpuEvent, GpuInfo, GpuSample, NodeInfo, ProcessSample, Topology


class NvmlBackend(Backend):
    """The NVML adapter. ``nvml`` injects a pynvml-like module (tests); by default ``open``
    imports nvidia-ml-py lazily."""

    name = "NVML"

    #: How long (ms) the event thread blocks in one ``nvmlEventSetWait``; ``close`` waits about
    #: this long for the thread to notice its stop flag.
    event_wait_ms: int = 500

    def __init__(self, nvml: ModuleType | Any | None = None) -> None:
        self._injected = nvml
        self._calls: NvmlCalls | None = None
        self._initialized = False
        self._gpus: list[NvmlGpu] = []
        self._events: EventWatcher | None = None
        self._topology_pending = False

    # -- lifecycle ---------------------------------------------------------------------------

    def open(self) -> NodeInfo:
        nvml = self._load()
        calls = self._calls = NvmlCalls(nvml)
        if self.open_progress is not None and self.open_progress.expected is None:
            self.open_progress.expected = driver_gpu_count()
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as exc:
            raise BackendUnavailable(init_reason(nvml, exc)) from None
        self._initialized = True
        try:
            node = self._open_node(calls)
        except BackendUnavailable:
            self.close()
            raise
        except nvml.NVMLError as exc:
            self.close()
            raise BackendUnavailable(init_reason(nvml, exc)) from None
        self._events = start_event_watcher(nvml, self._gpus, self.event_wait_ms)
        return node

    def close(self) -> None:
        if not self._initialized or self._calls is None:
            return
        self._initialized = False
        events, self._events = self._events, None
        if events is not None and not events.close(timeout=self.event_wait_ms / 1000 + 0.5):
            return  # its thread is still inside nvmlEventSetWait: shutting down would free it
        with contextlib.suppress(Exception):
            self._calls.nvml.nvmlShutdown()

    def _load(self) -> Any:
        if self._injected is not None:
            return self._injected
        try:
            with warnings.catch_warnings():
                # The deprecated PyPI "pynvml" shim warns on import; never let that hit the screen.
                warnings.simplefilter("ignore")
                import pynvml
        except ImportError:
            raise BackendUnavailable("nvidia-ml-py not installed") from None
        except Exception as exc:
            raise BackendUnavailable(f"nvidia-ml-py failed to import: {exc}") from None
        if not str(getattr(pynvml, "__file__", "") or "").endswith("pynvml.py"):
            raise BackendUnavailable(
                "an old 'pynvml' package shadows nvidia-ml-py: "
                "uninstall the deprecated 'pynvml' package (pip uninstall pynvml)"
            )
        return pynvml

    def _open_node(self, calls: NvmlCalls) -> NodeInfo:
        count = int(calls.nvml.nvmlDeviceGetCount())
        if count <= 0:
            raise BackendUnavailable("no NVIDIA GPU found")
        progress = self.open_progress
        if progress is not None:
            progress.expected = count
        opened = []
        for index in range(count):
            opened.append(self._open_gpu(calls, index))
            if progress is not None:
                progress.step()
        # nvml.h: the count includes GPUs whose handle lookup answers NO_PERMISSION (a
        # container or cgroup that denies their device nodes): not ours to read, not lost.
        self._gpus = [gpu for gpu in opened if not gpu.denied]
        denied = tuple(gpu.index for gpu in opened if gpu.denied)
        if not self._gpus:
            raise BackendUnavailable(
                f"no permission to open any of the {count} NVIDIA GPU(s) (their device nodes "
                "are not accessible to this user or container)"
            )
        if all(gpu.lost for gpu in self._gpus):
            raise BackendUnavailable(self._gpus[0].error or "no usable NVIDIA GPU")
        cuda = to_int(calls.system("nvmlSystemGetCudaDriverVersion"))
        topology = None if self.defer_topology else read_topology(calls, self._gpus)
        self._topology_pending = self.defer_topology
        return NodeInfo(
            hostname=socket.gethostname(),
            backend=self.name,
            gpus=tuple(gpu.info for gpu in self._gpus if gpu.info is not None),
            driver_version=optional_text(calls.system("nvmlSystemGetDriverVersion")),
            runtime_version=f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else None,
            library_version=optional_text(calls.system("nvmlSystemGetNVMLVersion")),
            topology=topology,
            inaccessible_gpus=denied,
        )

    @property
    def topology_pending(self) -> bool:
        return self._topology_pending

    def discover_topology(self) -> Topology | None:
        if not self._topology_pending or self._calls is None:
            return None
        self._topology_pending = False
        return read_topology(self._calls, self._gpus)

    def _open_gpu(self, calls: NvmlCalls, index: int) -> NvmlGpu:
        nvml = calls.nvml
        gpu = NvmlGpu(index=index)
        lost: tuple[type[BaseException], ...] = (GpuLost, *calls.lost_errors)
        denied = error_classes(nvml, "NVMLError_NoPermission")
        try:
            gpu.handle = nvml.nvmlDeviceGetHandleByIndex(index)
        except denied:
            gpu.denied = True
            return gpu
        except lost:
            gpu.mark_lost()
        except nvml.NVMLError as exc:
            gpu.mark_lost(f"cannot open GPU {index}: {init_reason(nvml, exc)}")
        try:
            if gpu.handle is not None:
                gpu.info = static_info(calls, gpu)
        except lost:
            gpu.mark_lost()
        except nvml.NVMLError as exc:
            gpu.mark_lost(f"cannot open GPU {index}: {init_reason(nvml, exc)}")
        if gpu.info is None:
            gpu.info = GpuInfo(index=index, name="unknown", uuid="", vendor="nvidia")
        return gpu

    # -- readings ----------------------------------------------------------------------------

    def read_gpus(self, now: float, *, slow: bool) -> list[GpuSample]:
        samples = []
        for gpu in self._gpus:
            if not gpu.lost and self._calls is not None:
                self.reading_gpu = gpu.index
                try:
                    gpu.begin_reading()
                    sample = read_sample(self._calls, gpu, now, slow)
                    error = gpu.failed_reading()
                    if error is not None:
                        # NVML is not answering for this GPU (driver unloaded, library and
                        # driver out of step ...): say so, and read it all again next time.
                        gpu.rates.clear()
                        sample = GpuSample(index=gpu.index, timestamp=now, error=error)
                    samples.append(sample)
                    continue
                except GpuLost:
                    gpu.mark_lost()
                except Exception as exc:  # a binding bug must not take the other GPUs down
                    samples.append(GpuSample(index=gpu.index, timestamp=now, error=str(exc)))
                    continue
            samples.append(GpuSample(index=gpu.index, timestamp=now, lost=True, error=gpu.error))
        self.reading_gpu = None
        return samples

    def read_processes(self, now: float) -> list[ProcessSample]:
        processes: list[ProcessSample] = []
        if self._calls is None:
            return processes
        for gpu in self._gpus:
            if gpu.lost:
                continue
            self.reading_gpu = gpu.index
            gpu.failures = {}
            try:
                processes.extend(gpu_processes(self._calls, gpu))
            except GpuLost:
                gpu.mark_lost()
            except Exception:  # a binding bug on one GPU must not hide the others' processes
                continue
            finally:
                failed = (e for key, e in gpu.failures.items() if "_procs:" in key)
                gpu.process_error = next(failed, None)
        self.reading_gpu = None
        return processes

    def process_errors(self) -> dict[int, str]:
        return {g.index: g.process_error for g in self._gpus if g.process_error and not g.lost}

    def read_events(self, now: float) -> list[GpuEvent]:
        return self._events.drain() if self._events is not None else []
