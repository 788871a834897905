"""NVIDIA backend: nvidia-ml-py (``import pynvml``) turned into :mod:`gputui.core.model` objects.

``open`` initialises NVML, caches one handle per GPU (and per MIG slice), reads the static facts
and the topology among the GPUs; ``read_gpus`` reads the fast tier on every call and the slow
tier when asked; ``read_processes`` lists GPU processes with their SM %; ``read_events`` drains
the driver events (XID, double-bit ECC) a watcher thread collected. Importing this package does
not import pynvml: only ``open`` does.

Modules, one job each: ``calls`` (the one call path: unsupported calls remembered, lost GPUs
detected; per-GPU state), ``values`` (NVML answers -> model types), ``fields`` (batched field
values), ``memory``, ``static`` (GpuInfo and MIG slices), ``device`` (fast and slow tiers),
``links`` (NVLink and topology), ``processes`` (with ``records``: the raw process-list
records, decoded at the size the driver wrote), ``events`` (the event thread) and ``backend``
(the :class:`NvmlBackend` adapter).
"""

from __future__ import annotations

# The underscored names are internals re-exported under the names they had when the adapter was
# one module (tests of the event thread use them).
from gputui.backends.nvml.backend import NvmlBackend
from gputui.backends.nvml.calls import LOST_MESSAGE
from gputui.backends.nvml.calls import NvmlGpu as _Gpu  # noqa: F401
from gputui.backends.nvml.device import THROTTLE_BITS, decode_throttle_reasons
from gputui.backends.nvml.events import EventWatcher as _EventWatcher  # noqa: F401
from gputui.backends.nvml.events import handle_address as _address  # noqa: F401
from gputui.backends.nvml.links import format_cpu_list
from gputui.backends.nvml.processes import MAX_PID

__all__ = [
    "LOST_MESSAGE",
    "MAX_PID",
    "THROTTLE_BITS",
    "NvmlBackend",
    "decode_throttle_reasons",
    "format_cpu_list",
]
