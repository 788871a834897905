"""Spec-sheet and behaviour numbers of the simulated GPU models.

Static facts follow the vendors' spec sheets (see ``gputui/specs/gpus.csv``) and what
nvidia-smi / amd-smi print for these boards; the behaviour numbers (idle and busy power, thermal
resistance) are chosen so the simulated readings land where real ones do
(H100 SXM: ~70 W / 35 °C idle, 550-700 W / 60-75 °C busy).
"""

from __future__ import annotations

from gputui.core.frozen import frozen

MIB = 1 << 20


@frozen
class GpuModel:
    """One board model: static facts plus how it behaves under load."""

    name: str
    vendor: str
    architecture: str
    compute_capability: str
    sm_count: int
    memory_total_mib: int
    memory_reserved_mib: int | None  # NVML v2 splits "reserved" out; AMD does not
    power_default_w: float
    power_min_w: float | None
    power_max_w: float | None
    sm_clock_max_mhz: int
    sm_clock_busy_mhz: int  # where the clock sits under load when not capped
    sm_clock_idle_mhz: int
    memory_clock_max_mhz: int
    memory_clock_idle_mhz: int
    pcie_gen: int  # the link's maximum: what GPU and slot allow together (NVML MaxPcieLink...)
    pcie_width: int
    slowdown_c: float  # limit of the main sensor (temperature_gpu_c)
    shutdown_c: float
    hotspot_limit_c: float | None  # limit of the hotspot / junction sensor; None: not reported
    memory_limit_c: float | None  # limit of the memory (HBM / VRAM) sensor; None: not reported
    vbios: str
    # behaviour
    idle_w: tuple[float, float]  # range drawn per GPU: power with no context
    busy_w: tuple[float, float]  # range drawn per GPU: power demand at full activity
    ambient_c: float  # temperature at zero power (inlet air plus offsets)
    c_per_w: float  # steady-state temperature rise per watt
    mem_temp: tuple[float, float] | None  # (offset idle, extra at full load); None = no sensor
    hotspot: tuple[float, float] | None  # same for the hotspot/junction sensor
    droop_mhz_per_w: float  # SM clock lost per watt of demand over the power limit
    # capabilities (None in samples when False)
    fan_count: int | None = None
    ecc: bool = True
    mig: bool | None = False
    persistence: bool | None = True
    nvlink: bool = False
    encoder: bool = False
    decoder: bool = True
    remapped_rows: bool = True
    aggregate_ecc: bool = True
    pstate: bool = True
    pstate_idle: int = 0  # datacenter boards stay in P0; GeForce drops to P8
    pstate_busy: int = 0
    idle_reason: bool = True  # reports "gpu_idle" as a throttle reason when idle
    temp_is_hotspot: bool = False  # AMD MI300: no edge sensor, GPU temp falls back to hotspot
    pcie_gpu_gen: int | None = None  # the GPU's own PCIe maximum; None: the same as pcie_gen

    @property
    def pcie_gpu_max_gen(self) -> int:
        """What the GPU alone supports (it may sit in a slot of a lower generation)."""
        return self.pcie_gpu_gen if self.pcie_gpu_gen is not None else self.pcie_gen


H100_SXM = GpuModel(
    name="NVIDIA H100 80GB HBM3",
    vendor="nvidia",
    architecture="Hopper",
    compute_capability="9.0",
    sm_count=132,
    memory_total_mib=81559,
    memory_reserved_mib=585,
    power_default_w=700.0,
    power_min_w=200.0,
    power_max_w=700.0,
    sm_clock_max_mhz=1980,
    sm_clock_busy_mhz=1980,
    sm_clock_idle_mhz=345,
    memory_clock_max_mhz=2619,
    memory_clock_idle_mhz=2619,
    pcie_gen=5,
    pcie_width=16,
    slowdown_c=89.0,
    shutdown_c=92.0,
    # nvidia-smi -q on H100 SXM: "Memory Max Operating Temp: 95 C" (NVML's MEM_MAX threshold,
    # the HBM3 limit); NVML has no hotspot sensor, hence no hotspot limit.
    hotspot_limit_c=None,
    memory_limit_c=95.0,
    vbios="96.00.89.00.01",
    idle_w=(68.0, 76.0),
    busy_w=(685.0, 735.0),
    ambient_c=31.0,
    c_per_w=0.052,
    mem_temp=(2.0, 4.0),
    hotspot=(3.0, 9.0),
    droop_mhz_per_w=3.0,
    nvlink=True,
)

A100_PCIE_80 = GpuModel(
    name="NVIDIA A100 80GB PCIe",
    vendor="nvidia",
    architecture="Ampere",
    compute_capability="8.0",
    sm_count=108,
    memory_total_mib=81920,
    memory_reserved_mib=590,
    power_default_w=300.0,
    power_min_w=150.0,
    power_max_w=300.0,
    sm_clock_max_mhz=1410,
    sm_clock_busy_mhz=1410,
    sm_clock_idle_mhz=210,
    memory_clock_max_mhz=1512,
    memory_clock_idle_mhz=1512,
    pcie_gen=4,
    pcie_width=16,
    slowdown_c=89.0,
    shutdown_c=92.0,
    # nvidia-smi -q on A100 80GB: "Memory Max Operating Temp: 95 C" (HBM2e, NVML MEM_MAX).
    hotspot_limit_c=None,
    memory_limit_c=95.0,
    vbios="92.00.90.00.04",
    idle_w=(40.0, 46.0),
    busy_w=(290.0, 312.0),
    ambient_c=30.0,
    c_per_w=0.11,
    mem_temp=(2.0, 5.0),
    hotspot=(3.0, 8.0),
    droop_mhz_per_w=4.0,
)

RTX_4090 = GpuModel(
    name="NVIDIA GeForce RTX 4090",
    vendor="nvidia",
    architecture="Ada Lovelace",
    compute_capability="8.9",
    sm_count=128,
    memory_total_mib=24564,
    memory_reserved_mib=346,
    power_default_w=450.0,
    power_min_w=150.0,
    power_max_w=600.0,
    sm_clock_max_mhz=3105,
    sm_clock_busy_mhz=2745,
    sm_clock_idle_mhz=210,
    memory_clock_max_mhz=10501,
    memory_clock_idle_mhz=405,
    pcie_gen=4,
    pcie_width=16,
    slowdown_c=90.0,
    shutdown_c=95.0,
    # GeForce: NVML reports neither a memory (GDDR6X) nor a hotspot limit ("N/A").
    hotspot_limit_c=None,
    memory_limit_c=None,
    vbios="95.02.18.80.87",
    idle_w=(14.0, 19.0),
    busy_w=(455.0, 475.0),
    ambient_c=35.0,
    c_per_w=0.072,
    mem_temp=None,  # GDDR6X temperature is not exposed by NVML on GeForce
    hotspot=(2.0, 11.0),
    droop_mhz_per_w=4.0,
    fan_count=2,
    ecc=False,
    mig=None,
    persistence=False,
    encoder=True,
    remapped_rows=False,
    pstate_idle=8,
    pstate_busy=2,
    aggregate_ecc=False,
)

MI300X = GpuModel(
    name="AMD Instinct MI300X",
    vendor="amd",
    architecture="CDNA3",
    compute_capability="gfx942",
    sm_count=304,
    memory_total_mib=196592,
    memory_reserved_mib=None,
    power_default_w=750.0,
    power_min_w=None,
    power_max_w=750.0,
    sm_clock_max_mhz=2100,
    sm_clock_busy_mhz=2100,
    sm_clock_idle_mhz=132,
    memory_clock_max_mhz=1300,
    memory_clock_idle_mhz=1300,
    pcie_gen=5,
    pcie_width=16,
    # amd-smi's documented MI300X `amd-smi static --limit` example: SLOWDOWN_HOTSPOT_TEMPERATURE
    # 100 °C and SLOWDOWN_MEM_TEMPERATURE 95 °C (the CRITICAL metric of HOTSPOT and VRAM),
    # SHUTDOWN_HOTSPOT_TEMPERATURE 110 °C and SHUTDOWN_MEM_TEMPERATURE 105 °C (EMERGENCY).
    # There is no edge sensor, so the main limit is the hotspot's.
    slowdown_c=100.0,
    shutdown_c=110.0,
    hotspot_limit_c=100.0,
    memory_limit_c=95.0,
    vbios="113-M3000100-102",
    idle_w=(128.0, 142.0),
    busy_w=(820.0, 870.0),
    ambient_c=31.0,
    c_per_w=0.064,
    mem_temp=(-4.0, -10.0),  # HBM runs cooler than the junction hotspot
    hotspot=(0.0, 0.0),  # the GPU temperature *is* the hotspot here
    droop_mhz_per_w=3.5,
    ecc=True,
    mig=None,
    persistence=None,
    nvlink=True,  # XGMI traffic is reported in the nvlink_* fields
    decoder=False,
    remapped_rows=False,
    aggregate_ecc=False,
    pstate=False,
    idle_reason=False,
    temp_is_hotspot=True,
)
