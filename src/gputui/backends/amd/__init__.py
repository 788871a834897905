"""AMD backend: adapts ROCm's ``amdsmi`` Python package to :mod:`gputui.core.model`.

Importing this package does not import amdsmi: only ``AmdSmiBackend.open`` does, silently (see
:mod:`~gputui.backends.amd.loader`). Every per-GPU library call goes through
:meth:`~gputui.backends.amd.calls.AmdCalls.call`, which turns "N/A" answers and errors into
``None``, remembers unsupported calls per GPU and detects a GPU that is gone.

Modules, one job each: ``loader`` (the quiet import), ``calls`` (the one call path), ``values``
(amdsmi answers -> model types), ``sensors`` (clocks and temperatures), ``static`` (GpuInfo and
versions), ``partition`` (MI300-class compute partitions: which handle is which partition of
which GPU), ``device`` (fast and slow tiers), ``throttle`` (throttle reasons), ``links`` (XGMI and
topology), ``processes`` and ``backend`` (the :class:`AmdSmiBackend` adapter).

Calls per tier (``h`` is a cached processor handle):

- static (``open``): ``amdsmi_init``, ``amdsmi_get_processor_handles``, ``amdsmi_get_lib_version``,
  ``amdsmi_get_rocm_version``; per GPU ``get_gpu_device_bdf``, ``get_gpu_kfd_info`` (the
  partition number), ``get_gpu_compute_partition``, and ``get_gpu_memory_partition`` until one
  partition of the GPU answers; then ``get_gpu_asic_info``, ``get_gpu_board_info``,
  ``get_gpu_device_uuid``, ``get_gpu_device_bdf``, ``get_gpu_memory_total(VRAM)`` (else
  ``get_gpu_vram_info``), ``get_power_cap_info``, ``get_clock_info(GFX/MEM)``, ``get_pcie_info``,
  ``get_temp_metric(EDGE/HOTSPOT/VRAM, CRITICAL)`` (each sensor's limit), ``(HOTSPOT,
  EMERGENCY)``, ``(EDGE, CURRENT)`` when the edge has no limit (is there an edge sensor?),
  ``get_gpu_ecc_enabled``, ``get_gpu_vbios_info``, ``get_gpu_driver_info`` (first GPU).
  Topology: per GPU pair (a < b) ``topo_get_link_type``, ``topo_get_link_weight``,
  ``is_P2P_accessible``; per GPU ``get_link_metrics`` (the XGMI links and their peers) and, where
  it has XGMI links, ``get_xgmi_info`` (lanes per link); sysfs ``numa_node`` (else
  ``topo_get_numa_node_number``) and ``local_cpulist`` for the NUMA and CPU affinity.
- fast (every ``read_gpus``): ``get_gpu_activity``, ``get_gpu_memory_usage(VRAM)`` (else
  ``get_gpu_vram_usage``), ``get_power_info``, ``get_power_cap_info``, ``get_energy_count``,
  ``get_temp_metric(EDGE/HOTSPOT/VRAM, CURRENT)``, ``get_gpu_fan_speed(0)``,
  ``get_clock_info(GFX/MEM)``, ``get_pcie_info``, ``get_gpu_metrics_info`` (throttle reasons).
- slow (``slow=True``): ``get_gpu_total_ecc_count``, ``get_gpu_bad_page_info``,
  ``get_link_metrics`` (aggregate and per-link XGMI rates), ``get_gpu_xgmi_link_status`` (link
  up/down); ``get_gpu_pci_throughput`` only when ``pcie_throughput=True``.
- processes (with the slow tier): ``get_gpu_process_list``.

A secondary compute partition is asked none of the device-wide calls above (power, energy,
temperatures, fan, PCIe, gpu_metrics, ECC, bad pages, XGMI): they are its primary's.
"""

from __future__ import annotations

# ``_pcie_gen`` is re-exported under the name it had when the adapter was one module (tests use it).
from gputui.backends.amd.backend import AmdSmiBackend
from gputui.backends.amd.loader import import_amdsmi
from gputui.backends.amd.values import architecture_from_gfx
from gputui.backends.amd.values import pcie_gen as _pcie_gen  # noqa: F401
from gputui.core.pci import canonical_pci_bus_id as pci_sysfs_name
from gputui.core.pci import local_cpulist

__all__ = [
    "AmdSmiBackend",
    "architecture_from_gfx",
    "import_amdsmi",
    "local_cpulist",
    "pci_sysfs_name",
]
