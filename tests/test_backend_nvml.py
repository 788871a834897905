"""The NVML backend against a fake ``pynvml`` (tests/fakes/fake_pynvml.py), plus the real module."""

from __future__ import annotations

import ctypes
import inspect
import subprocess
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator

import pynvml
import pytest
from tests.fakes.fake_pynvml import (
    FakeGpu,
    FakeLink,
    FakeMig,
    FakeNvml,
    FakeProcess,
    FakeProcUtil,
    GiB,
    MiB,
    NVMLError_GpuIsLost,
    NVMLError_NoPermission,
    NVMLError_Timeout,
    direct_links,
    make_fake_nvml,
    nvswitch_links,
)

from gputui.backends.base import BackendUnavailable
from gputui.backends.nvml import (
    LOST_MESSAGE,
    MAX_PID,
    NvmlBackend,
    decode_throttle_reasons,
    format_cpu_list,
)
from gputui.model import SLOW_SAMPLE_FIELDS, THROTTLE_REASONS, GpuEvent, GpuSample, Topology

FAST_FIELDS_OF_INTEREST = (
    "utilization_gpu_pct",
    "memory_used_bytes",
    "power_w",
    "energy_j",
    "temperature_gpu_c",
    "clock_sm_mhz",
    "pstate",
    "pcie_gen",
    "throttle_reasons",
)


@pytest.fixture(autouse=True)
def _no_host_sysfs(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """The fakes' bus ids may exist on the test machine: never read its real sysfs."""
    monkeypatch.setattr("gputui.pci.SYSFS_PCI_DEVICES", tmp_path / "no-sysfs")


def fake_sysfs(monkeypatch: pytest.MonkeyPatch, root, devices: dict[str, dict[str, str]]) -> None:
    """A sysfs PCI device tree under ``root``: bus id -> {attribute file: content}."""
    for bus_id, files in devices.items():
        device = root / bus_id
        device.mkdir(parents=True)
        for name, content in files.items():
            (device / name).write_text(content + "\n")
    monkeypatch.setattr("gputui.pci.SYSFS_PCI_DEVICES", root)


@pytest.fixture(autouse=True)
def _close_backends(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[NvmlBackend]]:
    """Short event waits, and every backend a test opened closed afterwards (no thread left)."""
    monkeypatch.setattr(NvmlBackend, "event_wait_ms", 20)
    opened: list[NvmlBackend] = []
    real_open = NvmlBackend.open

    def tracking_open(self: NvmlBackend):
        opened.append(self)
        return real_open(self)

    monkeypatch.setattr(NvmlBackend, "open", tracking_open)
    yield opened
    for backend in opened:
        backend.close()


def open_backend(gpus: list[FakeGpu] | int = 1, **kwargs) -> tuple[NvmlBackend, FakeNvml]:
    fake = make_fake_nvml(gpus, **kwargs)
    backend = NvmlBackend(fake)
    backend.open()
    return backend, fake


# -- the fake itself ------------------------------------------------------------------------------


def test_fake_mirrors_the_real_binding_names_and_parameters() -> None:
    own = [
        name
        for name, value in vars(FakeNvml).items()
        if name.startswith("nvml") and inspect.isfunction(value)
    ]
    assert len(own) > 60
    for name in own:
        assert hasattr(pynvml, name), name
        real = list(inspect.signature(getattr(pynvml, name)).parameters)
        fake = list(inspect.signature(getattr(FakeNvml, name)).parameters)[1:]  # drop self
        assert fake == real, name
    assert FakeNvml.NVMLError_GpuIsLost is pynvml.NVMLError_GpuIsLost
    assert FakeNvml.nvmlMemory_v2 == pynvml.nvmlMemory_v2


def test_fake_returns_the_real_types() -> None:
    fake = make_fake_nvml([FakeGpu(mig_mode=1, migs=[FakeMig(1)])])
    fake.nvmlInit()
    h = fake.nvmlDeviceGetHandleByIndex(0)
    mig = fake.nvmlDeviceGetMigDeviceHandleByIndex(h, 0)
    assert isinstance(fake.nvmlDeviceIsMigDeviceHandle(mig), ctypes.c_uint)
    assert fake.nvmlDeviceIsMigDeviceHandle(mig).value == 1
    assert isinstance(fake.nvmlDeviceGetMemoryInfo(h), pynvml.c_nvmlMemory_t)
    values = fake.nvmlDeviceGetFieldValues(h, [pynvml.NVML_FI_DEV_MEMORY_TEMP, (139, 0xFFFFFFFF)])
    assert isinstance(values[0], pynvml.c_nvmlFieldValue_t)
    assert values[1].scopeId == 0xFFFFFFFF
    with pytest.raises(pynvml.NVMLError_NotFound):
        fake.nvmlDeviceGetMigDeviceHandleByIndex(h, 3)


# -- opening --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (pynvml.NVMLError_LibraryNotFound, "libnvidia-ml.so.1 not found (no NVIDIA driver)"),
        (pynvml.NVMLError_DriverNotLoaded, "NVIDIA driver not loaded"),
        (pynvml.NVMLError_NoPermission, "no permission to open the NVIDIA device nodes"),
        (pynvml.NVMLError_Unknown, "NVML init failed: Unknown Error"),
    ],
)
def test_init_errors_become_one_line_reasons(error: type, message: str) -> None:
    fake = make_fake_nvml(1, init_error=error)
    with pytest.raises(BackendUnavailable) as info:
        NvmlBackend(fake).open()
    assert str(info.value) == message
    assert fake.calls["nvmlShutdown"] == 0  # init failed: nothing to shut down


def test_zero_gpus_is_unavailable_and_shuts_nvml_down() -> None:
    fake = make_fake_nvml([])
    with pytest.raises(BackendUnavailable, match=r"^no NVIDIA GPU found$"):
        NvmlBackend(fake).open()
    assert fake.calls["nvmlShutdown"] == 1
    assert fake.initialized == 0


def test_failure_after_init_shuts_down() -> None:
    fake = make_fake_nvml(1, errors={"nvmlDeviceGetCount": pynvml.NVMLError_NoPermission})
    with pytest.raises(BackendUnavailable, match="no permission"):
        NvmlBackend(fake).open()
    assert fake.initialized == 0


def test_real_pynvml_without_driver_is_unavailable() -> None:
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        pass
    else:
        pytest.skip("an NVIDIA driver is installed here")
    with pytest.raises(BackendUnavailable) as info:
        NvmlBackend().open()
    assert str(info.value) == "libnvidia-ml.so.1 not found (no NVIDIA driver)"


def test_missing_binding_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    with pytest.raises(BackendUnavailable, match=r"^nvidia-ml-py not installed$"):
        NvmlBackend().open()


def test_old_pynvml_package_shadowing_nvidia_ml_py_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    old = types.ModuleType("pynvml")
    old.__file__ = "/venv/lib/python3.11/site-packages/pynvml/__init__.py"
    monkeypatch.setitem(sys.modules, "pynvml", old)
    with pytest.raises(BackendUnavailable) as info:
        NvmlBackend().open()
    assert "uninstall" in str(info.value)
    assert "deprecated 'pynvml'" in str(info.value)


def test_importing_the_backend_does_not_import_pynvml() -> None:
    code = "import sys, gputui.backends.nvml; print('pynvml' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


def test_static_info_is_converted() -> None:
    fake = make_fake_nvml([FakeGpu(fan_speeds=[30, 50], power_default_limit_mw=650_000)])
    node = NvmlBackend(fake).open()
    assert node.backend == "NVML"
    assert node.hostname
    assert node.driver_version == "550.54.15"
    assert node.runtime_version == "12.4"
    assert node.library_version == "12.550.54.15"
    (info,) = node.gpus
    assert info.index == 0
    assert info.vendor == "nvidia"
    assert info.name == "NVIDIA H100 80GB HBM3"
    assert info.uuid == "GPU-00000000-fake-uuid"
    assert info.pci_bus_id == "00000000:18:00.0"
    assert info.architecture == "Hopper"
    assert info.compute_capability == "9.0"
    assert info.sm_count == 132
    assert info.memory_total_bytes == 80 * GiB
    assert info.power_default_limit_w == 650.0
    assert (info.power_min_limit_w, info.power_max_limit_w) == (200.0, 700.0)
    assert (info.sm_clock_max_mhz, info.memory_clock_max_mhz) == (1980, 2619)
    assert info.graphics_clock_max_mhz == 1980
    assert info.pcie_max_gen == 4  # what GPU and slot allow: a Gen5 GPU in a Gen4 host
    assert info.pcie_gpu_max_gen == 5  # the GPU's own capability
    assert info.pcie_max_width == 16
    assert (info.temperature_slowdown_c, info.temperature_shutdown_c) == (87.0, 92.0)
    assert info.temperature_memory_limit_c == 95.0  # MEM_MAX: the HBM sensor's limit
    assert info.temperature_hotspot_limit_c is None  # NVML has no hotspot sensor
    assert info.fan_count == 2
    assert info.mig_enabled is False
    assert info.mig_devices == ()
    assert info.ecc_enabled is True
    assert info.persistence_mode is True
    assert info.vbios_version == "96.00.99.00.01"
    assert info.serial == "1650123456789"


@pytest.mark.parametrize("how", ["missing", "absent"])
def test_pcie_max_gen_falls_back_to_the_system_maximum(how: str) -> None:
    node = NvmlBackend(make_fake_nvml(1, **{how: {"nvmlDeviceGetGpuMaxPcieLinkGeneration"}})).open()
    assert node.gpus[0].pcie_max_gen == 4


@pytest.mark.parametrize(
    ("host", "gpu", "max_gen", "gpu_max_gen"),
    [
        (4, 5, 4, 5),  # a Gen5 GPU in a Gen4 host: the link should train to Gen4
        (5, 5, 5, 5),
        (4, 4, 4, 4),
        (None, 5, 5, 5),  # no host-limited call: the GPU's own maximum stands in
        (4, None, 4, None),
        (None, None, None, None),
    ],
)
def test_pcie_max_gen_is_host_limited_and_the_gpu_maximum_is_kept_apart(
    host: int | None, gpu: int | None, max_gen: int | None, gpu_max_gen: int | None
) -> None:
    fake = make_fake_nvml([FakeGpu(pcie_max_gen=host, gpu_max_pcie_gen=gpu)])
    (info,) = NvmlBackend(fake).open().gpus
    assert (info.pcie_max_gen, info.pcie_gpu_max_gen) == (max_gen, gpu_max_gen)
    assert fake.calls["nvmlDeviceGetMaxPcieLinkGeneration"] == 1
    assert fake.calls["nvmlDeviceGetGpuMaxPcieLinkGeneration"] == 1


def test_pcie_maxima_are_read_once_at_open() -> None:
    backend, fake = open_backend(1)
    for t in range(3):
        backend.read_gpus(float(t), slow=t % 2 == 0)
    for name in (
        "nvmlDeviceGetMaxPcieLinkGeneration",
        "nvmlDeviceGetGpuMaxPcieLinkGeneration",
        "nvmlDeviceGetMaxPcieLinkWidth",
        "nvmlDeviceGetTemperatureThreshold",
    ):
        assert fake.calls[name] == (3 if name.endswith("Threshold") else 1), name


@pytest.mark.parametrize(("memory_max", "limit"), [(95, 95.0), (None, None), (0, None)])
def test_memory_temperature_limit_is_the_hbm_sensors_own(
    memory_max: int | None, limit: float | None
) -> None:
    fake = make_fake_nvml([FakeGpu(temp_memory_max=memory_max, temp_slowdown=90)])
    (info,) = NvmlBackend(fake).open().gpus
    assert info.temperature_memory_limit_c == limit
    assert info.temperature_slowdown_c == 90.0  # the GPU sensor's, whatever the memory's
    assert info.temperature_hotspot_limit_c is None
    thresholds = {args[1] for args in fake.args_of("nvmlDeviceGetTemperatureThreshold")}
    assert pynvml.NVML_TEMPERATURE_THRESHOLD_MEM_MAX in thresholds


@pytest.mark.parametrize(
    ("name", "cc", "cores", "sms"),
    [
        ("NVIDIA H100 80GB HBM3", (9, 0), 16896, 132),  # 128 cores per SM
        ("NVIDIA A100-SXM4-80GB", (8, 0), 6912, 108),  # 64 cores per SM
        ("NVIDIA GeForce RTX 4090", (8, 9), 16384, 128),
        ("Tesla V100-SXM2-16GB", (7, 0), 5120, 80),
        ("NVIDIA GeForce RTX 3090", (8, 6), 10496, 82),
        ("NVIDIA B200", (10, 0), 18944, 148),
    ],
)
def test_sm_count_of_a_whole_gpu_from_its_cuda_cores(
    name: str, cc: tuple[int, int], cores: int, sms: int
) -> None:
    # nvmlDeviceGetAttributes answers only for MIG slices: NotSupported on a whole GPU.
    gpu = FakeGpu(name=name, cuda_compute_capability=cc, num_gpu_cores=cores, sm_count=None)
    (info,) = NvmlBackend(make_fake_nvml([gpu])).open().gpus
    assert info.sm_count == sms


def test_sm_count_falls_back_to_the_spec_table_for_an_exact_name() -> None:
    gpu = FakeGpu(sm_count=None, num_gpu_cores=None)  # "NVIDIA H100 80GB HBM3", cc 9.0
    (info,) = NvmlBackend(make_fake_nvml([gpu])).open().gpus
    assert info.sm_count == 132


@pytest.mark.parametrize(
    "knobs",
    [
        {"name": "NVIDIA Mystery GPU", "num_gpu_cores": None},  # not in the spec table
        # the driver's compute capability contradicts the table's 9.0 for this name
        {"cuda_compute_capability": (8, 0), "num_gpu_cores": None},
        # 1000 cores is no whole number of 64-core SMs (and the table disagrees again)
        {"cuda_compute_capability": (8, 0), "num_gpu_cores": 1000},
    ],
)
def test_sm_count_is_none_when_nothing_confirms_it(knobs: dict) -> None:
    gpu = FakeGpu(sm_count=None, **knobs)
    (info,) = NvmlBackend(make_fake_nvml([gpu])).open().gpus
    assert info.sm_count is None


def test_sm_count_from_attributes_needs_no_core_count() -> None:
    fake = make_fake_nvml([FakeGpu(sm_count=114, num_gpu_cores=None)])
    (info,) = NvmlBackend(fake).open().gpus
    assert info.sm_count == 114
    assert fake.calls["nvmlDeviceGetNumGpuCores"] == 0


def test_cuda_version_formatting() -> None:
    node = NvmlBackend(make_fake_nvml(1, cuda_driver_version=12080)).open()
    assert node.runtime_version == "12.8"
    node = NvmlBackend(make_fake_nvml(1, cuda_driver_version=11020)).open()
    assert node.runtime_version == "11.2"


def test_everything_optional_unsupported_gives_nones_not_errors() -> None:
    fake = make_fake_nvml([FakeGpu(all_unsupported=True)])
    backend = NvmlBackend(fake)
    info = backend.open().gpus[0]
    assert info.name == "NVIDIA H100 80GB HBM3"
    assert info.uuid.startswith("GPU-")
    for name in (
        "pci_bus_id",
        "architecture",
        "compute_capability",
        "sm_count",
        "memory_total_bytes",
        "power_default_limit_w",
        "power_max_limit_w",
        "sm_clock_max_mhz",
        "pcie_max_gen",
        "temperature_slowdown_c",
        "fan_count",
        "mig_enabled",
        "ecc_enabled",
        "persistence_mode",
        "vbios_version",
        "serial",
    ):
        assert getattr(info, name) is None, name
    (sample,) = backend.read_gpus(1.0, slow=True)
    assert not sample.lost
    assert sample.error is None
    values = {
        f: getattr(sample, f)
        for f in GpuSample.__dataclass_fields__
        if f not in ("index", "timestamp", "lost", "error", "mig_devices", "links", "unanswered")
    }
    assert all(v is None for v in values.values()), values
    assert sample.links == ()  # link queries unsupported: a GPU without NVLink
    assert sample.unanswered == ()  # "not supported" is no failed reading
    assert backend.read_processes(1.0) == []
    assert backend.process_errors() == {}


def test_a_gpu_without_permission_at_open_is_reported_not_fatal() -> None:
    gpus = [
        FakeGpu(errors={"nvmlDeviceGetHandleByIndex": pynvml.NVMLError_NoPermission}),
        FakeGpu(),
    ]
    fake = make_fake_nvml(gpus)
    backend = NvmlBackend(fake)
    node = backend.open()
    # Not lost: not this user's to open (it is listed as such, and not read).
    assert node.inaccessible_gpus == (0,)
    (second,) = backend.read_gpus(1.0, slow=False)
    assert second.index == 1 and not second.lost and second.power_w == 350.0


def test_all_gpus_failing_at_open_is_unavailable() -> None:
    fake = make_fake_nvml([FakeGpu(lost=True), FakeGpu(lost=True)])
    with pytest.raises(BackendUnavailable, match="GPU is lost"):
        NvmlBackend(fake).open()
    assert fake.initialized == 0


# -- fast and slow tiers --------------------------------------------------------------------------


def test_fast_tier_values_and_units() -> None:
    gpu = FakeGpu(
        fan_speeds=[30, 50],
        power_mw=351_500,
        enforced_power_limit_mw=600_000,
        energy_mj=5_000_250,
        temperature=61,
        memory_temperature=70,
        pstate=2,
        encoder=12,
        decoder=7,
        throttle_reasons=0x4 | 0x40,
        util_gpu=97,
        util_memory=40,
    )
    backend, _ = open_backend([gpu])
    (s,) = backend.read_gpus(123.0, slow=False)
    assert (s.index, s.timestamp, s.lost, s.error) == (0, 123.0, False, None)
    assert (s.utilization_gpu_pct, s.utilization_memory_pct) == (97.0, 40.0)
    assert s.memory_used_bytes == 10 * GiB
    assert s.memory_reserved_bytes == 512 * MiB
    assert s.memory_free_bytes == 80 * GiB - 10 * GiB - 512 * MiB
    assert s.memory_total_bytes == 80 * GiB
    assert s.power_w == 351.5
    assert s.power_limit_w == 600.0
    assert s.energy_j == pytest.approx(5000.25)
    assert s.temperature_gpu_c == 61.0
    assert s.temperature_memory_c == 70.0
    assert s.temperature_hotspot_c is None
    assert (s.clock_sm_mhz, s.clock_memory_mhz) == (1755, 2619)
    # The HW thermal bit counts once its duration counter grows (none yet at a first reading).
    assert s.throttle_reasons == {"sw_power_cap"}
    gpu.slowdown_ns[270] += 800_000_000
    # What changes slowly is read on the slow tier (the sampler carries it between).
    (s,) = backend.read_gpus(124.0, slow=True)
    assert s.throttle_reasons == {"sw_power_cap", "hw_thermal"}
    assert s.fan_pct == 40.0
    assert s.clock_graphics_mhz == 1755
    assert s.pstate == 2
    assert (s.pcie_gen, s.pcie_width) == (4, 16)
    assert (s.encoder_pct, s.decoder_pct) == (12.0, 7.0)


def test_fast_read_leaves_slow_fields_none_and_makes_no_slow_calls() -> None:
    gpu = FakeGpu(ecc_errors={(0, 0): 3}, retired_pages_pending=1, remapped_rows=(2, 1, 0, 0))
    backend, fake = open_backend([gpu])
    (fast,) = backend.read_gpus(1.0, slow=False)
    for name in SLOW_SAMPLE_FIELDS:
        assert getattr(fast, name) is None, name
    for call in (
        "nvmlDeviceGetTotalEccErrors",
        "nvmlDeviceGetRetiredPagesPendingStatus",
        "nvmlDeviceGetRemappedRows",
        "nvmlDeviceGetPcieThroughput",
    ):
        assert fake.calls[call] == 0, call
    requested = [fid for fid, _ in fake.args_of("nvmlDeviceGetFieldValues")[-1][1]]
    assert 197 not in requested and 138 not in requested

    (slow,) = backend.read_gpus(2.0, slow=True)
    assert slow.ecc_volatile_corrected == 3
    assert slow.ecc_volatile_uncorrected == 0
    assert slow.ecc_aggregate_corrected == 0
    assert slow.retired_pages_pending is True
    assert (slow.remapped_rows_correctable, slow.remapped_rows_uncorrectable) == (2, 1)
    assert (slow.remapped_rows_pending, slow.remapped_rows_failure) == (False, False)
    assert slow.power_w == 350.0  # the fast tier is read as well


def test_pstate_unknown_is_none() -> None:
    backend, _ = open_backend([FakeGpu(pstate=32)])
    assert backend.read_gpus(1.0, slow=False)[0].pstate is None


def test_fanless_board_makes_no_fan_calls() -> None:
    backend, fake = open_backend([FakeGpu(fan_speeds=[])])
    assert backend.read_gpus(1.0, slow=False)[0].fan_pct is None
    assert fake.calls["nvmlDeviceGetFanSpeed_v2"] == 0
    assert fake.calls["nvmlDeviceGetFanSpeed"] == 0


def test_fan_falls_back_to_single_fan_call_when_count_unknown() -> None:
    backend, fake = open_backend([FakeGpu(fan_speeds=[44], unsupported={"nvmlDeviceGetNumFans"})])
    assert backend.read_gpus(1.0, slow=True)[0].fan_pct == 44.0  # fans: slow tier
    assert fake.calls["nvmlDeviceGetFanSpeed"] == 1


def test_energy_falls_back_to_the_direct_call_when_the_field_is_unsupported() -> None:
    backend, fake = open_backend([FakeGpu(unsupported_fields={83}, energy_mj=2_000)])
    assert backend.read_gpus(1.0, slow=False)[0].energy_j == 2.0
    assert fake.calls["nvmlDeviceGetTotalEnergyConsumption"] == 1


def test_memory_temperature_zero_means_no_sensor() -> None:
    backend, _ = open_backend([FakeGpu(memory_temperature=0)])
    assert backend.read_gpus(1.0, slow=False)[0].temperature_memory_c is None


# -- unsupported calls are remembered --------------------------------------------------------------


def test_not_supported_is_none_and_never_asked_again() -> None:
    gpu = FakeGpu(unsupported={"nvmlDeviceGetPowerUsage", "nvmlDeviceGetTotalEccErrors"})
    backend, fake = open_backend([gpu])
    for t in range(5):
        (s,) = backend.read_gpus(float(t), slow=True)
        assert s.power_w is None
        assert s.ecc_volatile_corrected is None
        assert s.power_limit_w == 700.0
    # The batched fields said "not supported" once; the fallback calls, once each, too.
    assert fake.calls["nvmlDeviceGetPowerUsage"] == 1
    assert fake.calls["nvmlDeviceGetTotalEccErrors"] == 4  # four counters, each asked once
    # The limit answers through the batched field values: no call of its own.
    assert fake.calls["nvmlDeviceGetEnforcedPowerLimit"] == 0
    requests = [[fid for fid, _ in args[1]] for args in fake.args_of("nvmlDeviceGetFieldValues")]
    assert all(190 in r and 185 not in r and 3 not in r for r in requests[1:])


def test_unsupported_is_remembered_per_gpu() -> None:
    gpus = [FakeGpu(unsupported={"nvmlDeviceGetPowerUsage"}), FakeGpu()]
    backend, fake = open_backend(gpus)
    for t in range(3):
        first, second = backend.read_gpus(float(t), slow=False)
        assert first.power_w is None
        assert second.power_w == 350.0
    assert fake.gpu_calls[(0, "nvmlDeviceGetPowerUsage")] == 1  # the fallback, once
    assert fake.gpu_calls[(1, "nvmlDeviceGetPowerUsage")] == 0  # answered by the field
    assert fake.gpu_calls[(1, "nvmlDeviceGetFieldValues")] == 3


def test_no_permission_for_one_call_is_remembered() -> None:
    gpu = FakeGpu(errors={"nvmlDeviceGetSerial": pynvml.NVMLError_NoPermission})
    backend, fake = open_backend([gpu])
    assert fake.calls["nvmlDeviceGetSerial"] == 1
    backend.read_gpus(1.0, slow=True)
    assert fake.calls["nvmlDeviceGetSerial"] == 1


def test_transient_errors_are_not_remembered() -> None:
    gpu = FakeGpu(errors={"nvmlDeviceGetPowerUsage": pynvml.NVMLError_Unknown})
    backend, fake = open_backend([gpu])
    assert backend.read_gpus(1.0, slow=False)[0].power_w is None
    assert backend.read_gpus(2.0, slow=False)[0].power_w is None
    del gpu.errors["nvmlDeviceGetPowerUsage"]
    assert backend.read_gpus(3.0, slow=False)[0].power_w == 350.0
    # The field failed with a transient error twice: asked every time, never given up on.
    requests = [[fid for fid, _ in args[1]] for args in fake.args_of("nvmlDeviceGetFieldValues")]
    assert all(185 in r for r in requests)


def test_unsupported_field_values_are_not_requested_again() -> None:
    backend, fake = open_backend([FakeGpu(unsupported_fields={82})])
    for t in range(3):
        assert backend.read_gpus(float(t), slow=False)[0].temperature_memory_c is None
    requests = [[fid for fid, _ in args[1]] for args in fake.args_of("nvmlDeviceGetFieldValues")]
    assert 82 in requests[0]
    assert all(82 not in r and 83 in r for r in requests[1:])


def test_handles_are_fetched_once() -> None:
    gpus = [FakeGpu(), FakeGpu(mig_mode=1, migs=[FakeMig(1), FakeMig(2)])]
    backend, fake = open_backend(gpus)
    for t in range(5):
        backend.read_gpus(float(t), slow=t % 2 == 0)
        backend.read_processes(float(t))
    assert fake.calls["nvmlDeviceGetHandleByIndex"] == 2
    assert fake.calls["nvmlDeviceGetMigDeviceHandleByIndex"] == 7  # the slots, once, at open


def test_unexpected_exception_stays_on_its_gpu() -> None:
    gpus = [
        FakeGpu(errors={"nvmlDeviceGetUtilizationRates": RuntimeError("binding bug")}),
        FakeGpu(),
    ]
    backend, _ = open_backend(gpus)
    first, second = backend.read_gpus(1.0, slow=False)
    assert first.error == "binding bug"
    assert not first.lost
    assert second.power_w == 350.0


# -- lost GPUs ------------------------------------------------------------------------------------


def test_gpu_lost_mid_run_others_keep_working() -> None:
    gpus = [
        FakeGpu(compute_processes=[FakeProcess(10)]),
        FakeGpu(compute_processes=[FakeProcess(20)]),
    ]
    backend, fake = open_backend(gpus)
    assert [s.lost for s in backend.read_gpus(1.0, slow=False)] == [False, False]
    gpus[0].lost = True
    first, second = backend.read_gpus(2.0, slow=True)
    assert first.lost is True
    assert first.error == LOST_MESSAGE
    assert first.timestamp == 2.0
    for name in FAST_FIELDS_OF_INTEREST + SLOW_SAMPLE_FIELDS:
        assert getattr(first, name) is None, name
    assert not second.lost and second.power_w == 350.0
    calls_after_loss = fake.calls_on(0)
    for t in range(3, 6):
        first, second = backend.read_gpus(float(t), slow=True)
        assert first.lost and not second.lost
        assert [p.pid for p in backend.read_processes(float(t))] == [20]
    assert fake.calls_on(0) == calls_after_loss  # a lost GPU is not asked again


def test_gpu_lost_after_some_calls_inside_a_read() -> None:
    backend, fake = open_backend([FakeGpu(), FakeGpu()])
    fake.gpus[1].lost_after = fake.gpus[1].call_count + 3  # falls off in the middle of a read
    first, second = backend.read_gpus(1.0, slow=False)
    assert not first.lost
    assert second.lost and second.power_w is None and second.error == LOST_MESSAGE


def test_gpu_lost_reported_in_a_field_value_entry() -> None:
    backend, fake = open_backend([FakeGpu(), FakeGpu()])
    fake.gpus[0].field_returns[83] = pynvml.NVML_ERROR_GPU_IS_LOST
    first, second = backend.read_gpus(1.0, slow=False)
    assert first.lost and not second.lost


def test_gpu_lost_while_listing_processes() -> None:
    gpus = [
        FakeGpu(compute_processes=[FakeProcess(10)]),
        FakeGpu(compute_processes=[FakeProcess(20)]),
    ]
    backend, _ = open_backend(gpus)
    gpus[1].lost = True
    assert [p.pid for p in backend.read_processes(1.0)] == [10]
    assert backend.read_gpus(1.0, slow=False)[1].lost


def test_gpu_lost_at_open_keeps_the_others() -> None:
    backend, _ = open_backend([FakeGpu(lost=True), FakeGpu()])
    first, second = backend.read_gpus(1.0, slow=False)
    assert first.lost and first.error == LOST_MESSAGE
    assert not second.lost


# -- the library or driver stops answering --------------------------------------------------------

DRIVER_ERRORS = [
    (pynvml.NVMLError_DriverNotLoaded, "NVML: NVIDIA driver not loaded"),
    (pynvml.NVMLError_Uninitialized, "NVML: library not initialized"),
    (pynvml.NVMLError_Unknown, "NVML: unknown error"),
    (
        pynvml.NVMLError_LibRmVersionMismatch,
        "NVML: library and kernel driver versions differ (driver updated but not reloaded)",
    ),
]


@pytest.mark.parametrize(("error", "message"), DRIVER_ERRORS)
def test_driver_not_answering_mid_run_is_a_gpu_error_retried_every_read(
    error: type, message: str
) -> None:
    gpus = [FakeGpu(compute_processes=[FakeProcess(10)]), FakeGpu()]
    backend, fake = open_backend(gpus)
    assert [s.error for s in backend.read_gpus(1.0, slow=True)] == [None, None]
    unsupported_before = len(backend._calls.unsupported)  # type: ignore[union-attr]
    gpus[0].fail_with = error  # from this tick on, every call for GPU 0 raises it
    for t in (2.0, 3.0):
        before = fake.calls_on(0)
        first, second = backend.read_gpus(t, slow=t == 2.0)
        assert first.error == message
        assert first.lost is False  # not "fell off the bus"
        assert (first.index, first.timestamp) == (0, t)
        for name in FAST_FIELDS_OF_INTEREST + SLOW_SAMPLE_FIELDS:
            assert getattr(first, name) is None, name
        assert fake.calls_on(0) > before  # asked again: nothing was taken as unsupported
        assert second.error is None and second.power_w == 350.0
    assert len(backend._calls.unsupported) == unsupported_before  # type: ignore[union-attr]
    assert backend.read_processes(3.0) == []
    gpus[0].fail_with = None  # the driver answers again
    first, second = backend.read_gpus(4.0, slow=True)
    assert first.error is None and not first.lost
    assert first.power_w == 350.0 and first.temperature_gpu_c == 45.0
    assert [p.pid for p in backend.read_processes(4.0)] == [10]


def test_driver_unloaded_in_the_middle_of_a_read_is_an_error_at_once() -> None:
    backend, fake = open_backend([FakeGpu(), FakeGpu()])
    fake.gpus[1].fail_with = pynvml.NVMLError_DriverNotLoaded
    fake.gpus[1].fail_after = fake.gpus[1].call_count + 3  # some calls answered first
    first, second = backend.read_gpus(1.0, slow=False)
    assert first.error is None
    assert second.error == "NVML: NVIDIA driver not loaded" and not second.lost
    assert second.power_w is None


def test_one_odd_unknown_error_among_answers_is_not_a_gpu_error() -> None:
    gpu = FakeGpu(errors={"nvmlDeviceGetPowerUsage": pynvml.NVMLError_Unknown})
    backend, _ = open_backend([gpu])
    (sample,) = backend.read_gpus(1.0, slow=False)
    assert sample.error is None and sample.power_w is None
    assert sample.temperature_gpu_c == 45.0


def test_not_supported_everywhere_stays_quiet_not_an_error() -> None:
    backend, fake = open_backend([FakeGpu()])
    fake.gpus[0].fail_with = pynvml.NVMLError_NotSupported
    (sample,) = backend.read_gpus(1.0, slow=True)
    assert sample.error is None and not sample.lost and sample.power_w is None


def test_gpu_is_lost_is_still_lost_not_a_driver_error() -> None:
    backend, fake = open_backend([FakeGpu(), FakeGpu()])
    fake.gpus[0].fail_with = NVMLError_GpuIsLost
    first, _ = backend.read_gpus(1.0, slow=False)
    assert first.lost and first.error == LOST_MESSAGE


def test_rates_start_again_after_the_driver_comes_back() -> None:
    gpu = FakeGpu(pcie_tx_bytes=0)
    backend, _ = open_backend([gpu])
    backend.read_gpus(1.0, slow=True)
    gpu.fail_with = pynvml.NVMLError_DriverNotLoaded
    assert backend.read_gpus(2.0, slow=True)[0].error is not None
    gpu.fail_with = None
    gpu.pcie_tx_bytes = 10_000  # whatever the counter says now, it is a new baseline
    (sample,) = backend.read_gpus(3.0, slow=True)
    assert sample.error is None and sample.pcie_tx_bytes_per_s is None
    gpu.pcie_tx_bytes += 1000
    assert backend.read_gpus(4.0, slow=True)[0].pcie_tx_bytes_per_s == 1000.0


# -- fallbacks for older drivers and bindings ------------------------------------------------------


def test_temperature_v_falls_back_to_temperature() -> None:
    backend, fake = open_backend([FakeGpu(temperature=66)], missing={"nvmlDeviceGetTemperatureV"})
    for t in range(3):
        assert backend.read_gpus(float(t), slow=False)[0].temperature_gpu_c == 66.0
    assert fake.calls["nvmlDeviceGetTemperatureV"] == 1
    assert fake.calls["nvmlDeviceGetTemperature"] == 3


def test_temperature_v_is_preferred() -> None:
    backend, fake = open_backend([FakeGpu(temperature=66)])
    assert backend.read_gpus(1.0, slow=False)[0].temperature_gpu_c == 66.0
    assert fake.calls["nvmlDeviceGetTemperature"] == 0


def test_memory_info_v2_falls_back_to_v1() -> None:
    backend, fake = open_backend(1, missing={"nvmlDeviceGetMemoryInfo_v2"})
    for t in range(3):
        (s,) = backend.read_gpus(float(t), slow=False)
        assert s.memory_reserved_bytes is None
        assert s.memory_used_bytes == 10 * GiB + 512 * MiB  # v1 "used" includes reserved
        assert s.memory_total_bytes == 80 * GiB
    versions = [k.get("version") for k in fake.kwargs_of("nvmlDeviceGetMemoryInfo")]
    assert versions.count(pynvml.nvmlMemory_v2) == 1  # tried once, at open
    assert versions.count(None) == 4


def test_memory_info_v2_falls_back_when_the_binding_has_no_version_keyword() -> None:
    fake = make_fake_nvml(1)
    v1 = fake.nvmlDeviceGetMemoryInfo

    def old_binding(handle):  # nvidia-ml-py before the version= keyword
        return v1(handle)

    fake.nvmlDeviceGetMemoryInfo = old_binding
    backend = NvmlBackend(fake)
    backend.open()
    (s,) = backend.read_gpus(1.0, slow=False)
    assert s.memory_reserved_bytes is None
    assert s.memory_used_bytes == 10 * GiB + 512 * MiB


@pytest.mark.parametrize("how", ["missing", "absent"])
def test_clocks_event_reasons_fall_back_to_throttle_reasons(how: str) -> None:
    gpu = FakeGpu(throttle_reasons=0x8, unsupported_fields={269, 270, 271, 75})
    backend, fake = open_backend([gpu], **{how: {"nvmlDeviceGetCurrentClocksEventReasons"}})
    # No duration counters: the bit counts from its second reading in a row.
    expected = [set(), {"hw_slowdown"}, {"hw_slowdown"}]
    for t in range(3):
        assert backend.read_gpus(float(t), slow=False)[0].throttle_reasons == expected[t]
    assert fake.calls["nvmlDeviceGetCurrentClocksEventReasons"] == (1 if how == "missing" else 0)
    assert fake.calls["nvmlDeviceGetCurrentClocksThrottleReasons"] == 3


def test_processes_utilization_info_falls_back_to_process_utilization() -> None:
    gpu = FakeGpu(
        compute_processes=[FakeProcess(10)],
        process_utilization=[FakeProcUtil(10, 1_000, 35)],
    )
    backend, fake = open_backend([gpu], missing={"nvmlDeviceGetProcessesUtilizationInfo"})
    assert backend.read_processes(1.0)[0].sm_pct == 35.0
    backend.read_processes(2.0)
    assert fake.calls["nvmlDeviceGetProcessesUtilizationInfo"] == 1
    assert fake.calls["nvmlDeviceGetProcessUtilization"] == 2


# -- throttle reasons -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mask", "names"),
    [
        (0x0, set()),
        (0x1, {"gpu_idle"}),
        (0x2 | 0x4, {"applications_clocks", "sw_power_cap"}),
        (0x8 | 0x10 | 0x20, {"hw_slowdown", "sync_boost", "sw_thermal"}),
        (0x40 | 0x80 | 0x100, {"hw_thermal", "hw_power_brake", "display_clocks"}),
        (0x200 | 0x400, {"board_limit", "reliability"}),
        (0x1000, set()),  # unknown bits are ignored
    ],
)
def test_throttle_decoding(mask: int, names: set[str]) -> None:
    assert decode_throttle_reasons(mask) == names


def test_throttle_names_are_canonical() -> None:
    assert decode_throttle_reasons(0x7FF) == set(THROTTLE_REASONS)
    assert decode_throttle_reasons(pynvml.nvmlClocksEventReasonSwThermalSlowdown) == {"sw_thermal"}


# -- PCIe and NVLink rates ------------------------------------------------------------------------


def test_pcie_and_nvlink_rates_from_counter_deltas() -> None:
    gpu = FakeGpu(pcie_tx_bytes=10_000, pcie_rx_bytes=0, nvlink_tx_kib=100, nvlink_rx_kib=0)
    backend, fake = open_backend([gpu])
    (first,) = backend.read_gpus(10.0, slow=True)
    assert first.pcie_tx_bytes_per_s is None  # no baseline yet
    assert first.nvlink_tx_bytes_per_s is None
    gpu.pcie_tx_bytes += 4_000_000
    gpu.pcie_rx_bytes += 1_000_000
    gpu.nvlink_tx_kib += 4096
    gpu.nvlink_rx_kib += 2048
    backend.read_gpus(11.0, slow=False)  # a fast read in between does not disturb the baseline
    (second,) = backend.read_gpus(12.0, slow=True)
    assert second.pcie_tx_bytes_per_s == 2_000_000.0
    assert second.pcie_rx_bytes_per_s == 500_000.0
    assert second.nvlink_tx_bytes_per_s == 2048 * 1024
    assert second.nvlink_rx_bytes_per_s == 1024 * 1024
    gpu.pcie_tx_bytes = 5  # counter went backwards (wrap or driver reload)
    (third,) = backend.read_gpus(14.0, slow=True)
    assert third.pcie_tx_bytes_per_s is None
    assert third.nvlink_tx_bytes_per_s == 0.0
    scopes = {fid: scope for fid, scope in fake.args_of("nvmlDeviceGetFieldValues")[-1][1]}
    assert scopes[138] == scopes[139] == 0xFFFFFFFF
    assert fake.calls["nvmlDeviceGetPcieThroughput"] == 0


def test_pcie_falls_back_to_throughput_when_counters_are_unsupported() -> None:
    gpu = FakeGpu(unsupported_fields={197, 198}, pcie_throughput_kbs=(300, 100))
    backend, fake = open_backend([gpu])
    backend.read_gpus(1.0, slow=False)
    assert fake.calls["nvmlDeviceGetPcieThroughput"] == 0  # blocks 20 ms: slow tier only
    (s,) = backend.read_gpus(2.0, slow=True)
    assert s.pcie_tx_bytes_per_s == 300 * 1024
    assert s.pcie_rx_bytes_per_s == 100 * 1024
    assert fake.calls["nvmlDeviceGetPcieThroughput"] == 2


# -- processes ------------------------------------------------------------------------------------


def test_processes_merge_compute_and_graphics() -> None:
    gpu = FakeGpu(
        compute_processes=[FakeProcess(100, 2 * GiB), FakeProcess(101, None)],
        graphics_processes=[FakeProcess(100, GiB), FakeProcess(102, 64 * MiB)],
    )
    backend, _ = open_backend([gpu])
    rows = {p.pid: p for p in backend.read_processes(1.0)}
    assert set(rows) == {100, 101, 102}
    assert rows[100].type == "compute+graphics"
    assert rows[100].gpu_memory_bytes == 2 * GiB  # the larger of the two reports
    assert rows[101].type == "compute"
    assert rows[101].gpu_memory_bytes is None
    assert rows[102].type == "graphics"
    for p in rows.values():
        assert p.gpu_index == 0
        assert p.mig_uuid is None
        assert (p.user, p.name, p.command, p.cpu_pct, p.host_rss_bytes) == (None,) * 5
        assert (p.start_time, p.container_id) == (None, None)


def test_insane_process_rows_are_dropped() -> None:
    gpu = FakeGpu(
        memory_total=80 * GiB,
        compute_processes=[
            FakeProcess(0, GiB),  # garbled: PID 0
            FakeProcess(MAX_PID + 1, GiB),  # garbled: beyond pid_max
            FakeProcess(300, 81 * GiB),  # more memory than the GPU has
            FakeProcess(301, GiB),
            FakeProcess(301, GiB),  # duplicate row
        ],
    )
    backend, _ = open_backend([gpu])
    rows = backend.read_processes(1.0)
    assert [(p.pid, p.gpu_memory_bytes) for p in rows] == [(301, GiB)]


def test_per_process_sm_uses_the_last_seen_timestamp() -> None:
    gpu = FakeGpu(
        compute_processes=[FakeProcess(10), FakeProcess(11), FakeProcess(12)],
        process_utilization=[
            FakeProcUtil(10, 1_000, 20),
            FakeProcUtil(10, 2_000, 45),  # newer sample of the same PID wins
            FakeProcUtil(11, 1_500, 250),  # garbage is clamped
        ],
    )
    backend, fake = open_backend([gpu])
    rows = {p.pid: p.sm_pct for p in backend.read_processes(1.0)}
    assert rows == {10: 45.0, 11: 100.0, 12: 0.0}
    gpu.process_utilization.append(FakeProcUtil(12, 3_000, 5))
    rows = {p.pid: p.sm_pct for p in backend.read_processes(2.0)}
    assert rows == {10: 0.0, 11: 0.0, 12: 5.0}
    rows = {p.pid: p.sm_pct for p in backend.read_processes(3.0)}  # NotFound: nothing new
    assert rows == {10: 0.0, 11: 0.0, 12: 0.0}
    stamps = [args[1] for args in fake.args_of("nvmlDeviceGetProcessesUtilizationInfo")]
    assert stamps == [0, 2_000, 3_000]


def test_per_process_sm_is_none_when_unsupported() -> None:
    gpu = FakeGpu(
        compute_processes=[FakeProcess(10)],
        unsupported={"nvmlDeviceGetProcessesUtilizationInfo", "nvmlDeviceGetProcessUtilization"},
    )
    backend, fake = open_backend([gpu])
    assert backend.read_processes(1.0)[0].sm_pct is None
    assert backend.read_processes(2.0)[0].sm_pct is None
    assert fake.calls["nvmlDeviceGetProcessesUtilizationInfo"] == 1
    assert fake.calls["nvmlDeviceGetProcessUtilization"] == 1


def test_no_processes_means_no_utilization_call() -> None:
    backend, fake = open_backend(1)
    assert backend.read_processes(1.0) == []
    assert fake.calls["nvmlDeviceGetProcessesUtilizationInfo"] == 0


# -- MIG ------------------------------------------------------------------------------------------


def mig_gpu() -> FakeGpu:
    return FakeGpu(
        mig_mode=1,
        migs=[
            FakeMig(
                gpu_instance_id=1,
                compute_instance_id=0,
                memory_total=20 * GiB,
                memory_used=3 * GiB,
                sm_count=32,
                name="NVIDIA H100 80GB HBM3 MIG 2g.20gb",
                compute_processes=[FakeProcess(500, 2 * GiB)],
            ),
            None,  # an empty slot
            FakeMig(
                gpu_instance_id=5,
                compute_instance_id=0,
                compute_processes=[FakeProcess(501, GiB), FakeProcess(502, 11 * GiB)],
                graphics_processes=[FakeProcess(501, GiB)],
            ),
        ],
        compute_processes=[FakeProcess(999)],  # the parent's aggregate list is not used
    )


def test_mig_slices_are_listed_under_their_parent() -> None:
    node = NvmlBackend(make_fake_nvml([FakeGpu(), mig_gpu()])).open()
    assert node.gpus[0].mig_enabled is False
    parent = node.gpus[1]
    assert parent.mig_enabled is True
    first, second = parent.mig_devices
    assert (first.parent_index, first.gpu_instance_id, first.compute_instance_id) == (1, 1, 0)
    assert first.uuid == "MIG-0001-0000-fake"
    assert first.name == "NVIDIA H100 80GB HBM3 MIG 2g.20gb"
    assert first.memory_total_bytes == 20 * GiB
    assert first.sm_count == 32
    assert (second.gpu_instance_id, second.uuid) == (5, "MIG-0001-0002-fake")


def test_mig_slices_are_sampled_each_tick() -> None:
    gpu = mig_gpu()
    backend, _ = open_backend([gpu])
    (s,) = backend.read_gpus(1.0, slow=False)
    assert s.utilization_gpu_pct is None  # NotSupported on a MIG-enabled parent
    assert [(m.uuid, m.memory_used_bytes, m.memory_total_bytes) for m in s.mig_devices] == [
        ("MIG-0000-0000-fake", 3 * GiB, 20 * GiB),
        ("MIG-0000-0002-fake", GiB, 10 * GiB),
    ]
    gpu.migs[0].memory_used = 7 * GiB
    (s,) = backend.read_gpus(2.0, slow=True)
    assert s.mig_devices[0].memory_used_bytes == 7 * GiB


def test_mig_processes_map_to_slice_and_parent() -> None:
    backend, fake = open_backend([FakeGpu(compute_processes=[FakeProcess(7)]), mig_gpu()])
    rows = {p.pid: p for p in backend.read_processes(1.0)}
    assert set(rows) == {7, 500, 501}  # 502 claims more memory than its 10 GiB slice: dropped
    assert rows[7].gpu_index == 0 and rows[7].mig_uuid is None
    assert rows[500].gpu_index == 1 and rows[500].mig_uuid == "MIG-0001-0000-fake"
    assert rows[501].mig_uuid == "MIG-0001-0002-fake"
    assert rows[501].type == "compute+graphics"
    assert rows[500].sm_pct is None  # per-process utilization is not supported on MIG
    parent_calls = [a for a in fake.args_of("nvmlDeviceGetComputeRunningProcesses_v3", 1)]
    assert all(a[0].mig_slot is not None for a in parent_calls)


# -- closing --------------------------------------------------------------------------------------


def test_close_is_idempotent_and_swallows_errors() -> None:
    backend, fake = open_backend(1)
    backend.close()
    backend.close()
    assert fake.calls["nvmlShutdown"] == 1
    assert fake.initialized == 0
    backend, fake = open_backend(1, errors={"nvmlShutdown": pynvml.NVMLError_Unknown})
    backend.close()
    backend.close()
    assert fake.calls["nvmlShutdown"] == 1


def test_close_without_open_does_nothing() -> None:
    fake = make_fake_nvml(1)
    NvmlBackend(fake).close()
    assert fake.calls["nvmlShutdown"] == 0


# -- driver events --------------------------------------------------------------------------------


def event_thread(backend: NvmlBackend) -> threading.Thread | None:
    watcher = backend._events
    return watcher.thread if watcher is not None else None


def wait_for(condition: Callable[[], bool], timeout: float = 2.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.002)


def events_until(backend: NvmlBackend, count: int, timeout: float = 2.0) -> list[GpuEvent]:
    """Poll read_events until ``count`` events came (deadline ``timeout``)."""
    events: list[GpuEvent] = []
    deadline = time.monotonic() + timeout
    while len(events) < count:
        assert time.monotonic() < deadline, f"only {events} arrived"
        events += backend.read_events(time.time())
        time.sleep(0.002)
    return events


XID = pynvml.nvmlEventTypeXidCriticalError
DBE = pynvml.nvmlEventTypeDoubleBitEccError


def test_events_register_xid_and_dbe_on_every_gpu_with_one_set_and_one_thread() -> None:
    backend, fake = open_backend(3)
    (event_set,) = fake.event_sets
    assert event_set.registered == {0: XID | DBE, 1: XID | DBE, 2: XID | DBE}
    thread = event_thread(backend)
    assert thread is not None and thread.daemon and thread.is_alive()
    assert sum(t.name == "gputui-nvml-events" and t is thread for t in threading.enumerate()) == 1


def test_events_mask_is_limited_to_what_each_gpu_supports() -> None:
    _backend, fake = open_backend([FakeGpu(supported_event_types=XID), FakeGpu()])
    assert fake.event_sets[0].registered == {0: XID, 1: XID | DBE}


def test_xid_event_arrives_with_gpu_index_and_code() -> None:
    backend, fake = open_backend(4)
    assert fake.emit_event(2, XID, 79) == 1
    (event,) = events_until(backend, 1)
    assert event.kind == "xid" and event.gpu_index == 2 and event.code == 79
    assert event.source == "driver" and event.message is None
    assert abs(event.timestamp - time.time()) < 5


def test_double_bit_ecc_event_arrives() -> None:
    backend, fake = open_backend(2)
    fake.emit_event(1, DBE)
    fake.emit_event(0, XID, 48)
    first, second = events_until(backend, 2)
    assert (first.kind, first.gpu_index, first.code) == ("ecc_double_bit", 1, None)
    assert (second.kind, second.gpu_index, second.code) == ("xid", 0, 48)


def test_read_events_never_blocks_and_is_empty_when_nothing_came() -> None:
    backend, fake = open_backend(1)
    started = time.monotonic()
    for _ in range(50):
        assert backend.read_events(time.time()) == []
    assert time.monotonic() - started < 0.1
    fake.emit_event(0, XID, 13)
    assert len(events_until(backend, 1)) == 1
    assert backend.read_events(time.time()) == []  # each event once


def test_events_not_registered_are_not_delivered() -> None:
    backend, fake = open_backend([FakeGpu(supported_event_types=XID)])
    assert fake.emit_event(0, DBE) == 0
    fake.emit_event(0, XID, 31)
    assert [e.code for e in events_until(backend, 1)] == [31]


@pytest.mark.parametrize(
    "knobs",
    [
        {"missing": {"nvmlEventSetCreate"}},
        {"absent": {"nvmlEventSetCreate"}},
        {"absent": {"nvmlEventSetWait"}},
        {"errors": {"nvmlDeviceRegisterEvents": NVMLError_NoPermission}},
        {"missing": {"nvmlDeviceGetSupportedEventTypes"}},
        {"gpus": [FakeGpu(supported_event_types=0)]},
        {"gpus": [FakeGpu(unsupported={"nvmlDeviceRegisterEvents"})]},
        {"gpus": [FakeGpu(all_unsupported=True)]},
    ],
)
def test_unsupported_event_api_means_no_thread_and_reads_still_work(knobs: dict) -> None:
    gpus = knobs.pop("gpus", 1)
    backend, fake = open_backend(gpus, **knobs)
    assert event_thread(backend) is None
    assert all(s.freed for s in fake.event_sets)
    assert backend.read_events(time.time()) == []
    (sample,) = backend.read_gpus(time.time(), slow=True)
    assert not sample.lost
    backend.close()
    assert fake.initialized == 0


def test_events_skip_a_gpu_that_cannot_register() -> None:
    gpus = [FakeGpu(errors={"nvmlDeviceRegisterEvents": NVMLError_NoPermission}), FakeGpu()]
    backend, fake = open_backend(gpus)
    assert fake.event_sets[0].registered == {1: XID | DBE}
    fake.emit_event(1, XID, 94)
    assert [(e.gpu_index, e.code) for e in events_until(backend, 1)] == [(1, 94)]


def test_events_skip_a_gpu_lost_at_open() -> None:
    _backend, fake = open_backend([FakeGpu(lost=True), FakeGpu()])
    assert fake.event_sets[0].registered == {1: XID | DBE}


def test_close_stops_the_thread_then_frees_the_set_then_shuts_down() -> None:
    backend, fake = open_backend(2)
    thread = event_thread(backend)
    assert thread is not None and thread.is_alive()
    backend.close()
    assert not thread.is_alive()
    (event_set,) = fake.event_sets
    assert event_set.freed
    names = [name for name, *_ in fake.log]
    assert names.index("nvmlEventSetFree") < names.index("nvmlShutdown")
    assert names[names.index("nvmlEventSetFree") :].count("nvmlEventSetWait") == 0
    assert fake.initialized == 0
    assert backend.read_events(time.time()) == []
    backend.close()
    assert fake.calls["nvmlEventSetFree"] == 1


def test_close_is_prompt_with_the_default_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(NvmlBackend, "event_wait_ms", 500)
    backend, fake = open_backend(1)
    wait_for(lambda: fake.calls["nvmlEventSetWait"] >= 1)
    started = time.monotonic()
    backend.close()
    assert time.monotonic() - started < 1.0
    assert fake.event_sets[0].freed


def test_event_thread_survives_a_timeout_storm() -> None:
    backend, fake = open_backend(1)
    fake.emit_wait_error(NVMLError_Timeout, 2000)
    fake.emit_event(0, XID, 62)
    (event,) = events_until(backend, 1)
    assert event.code == 62
    assert fake.calls["nvmlEventSetWait"] > 2000
    thread = event_thread(backend)
    assert thread is not None and thread.is_alive()


def test_event_thread_keeps_watching_after_gpu_lost_and_other_nvml_errors() -> None:
    backend, fake = open_backend(2)
    fake.emit_wait_error(NVMLError_GpuIsLost, 3)
    fake.emit_wait_error(pynvml.NVMLError_Unknown)
    fake.emit_event(1, XID, 79)
    (event,) = events_until(backend, 1)
    assert (event.gpu_index, event.code) == (1, 79)
    assert event_thread(backend).is_alive()


def test_event_thread_stops_quietly_on_a_binding_bug() -> None:
    backend, fake = open_backend(1)
    fake.emit_wait_error(RuntimeError("binding bug"))
    fake.emit_event(0, XID, 79)
    wait_for(lambda: not event_thread(backend).is_alive())
    assert backend.read_events(time.time()) == []
    backend.close()
    assert fake.event_sets[0].freed


def test_event_thread_stops_when_nvml_is_uninitialized() -> None:
    backend, fake = open_backend(1)
    fake.emit_wait_error(pynvml.NVMLError_Uninitialized)
    wait_for(lambda: not event_thread(backend).is_alive())
    backend.close()
    assert fake.event_sets[0].freed and fake.initialized == 0


def test_event_device_maps_by_uuid_to_the_gpu_index() -> None:
    backend, fake = open_backend(3)
    for index in (2, 0, 1):
        fake.emit_event(index, DBE)
    assert [e.gpu_index for e in events_until(backend, 3)] == [2, 0, 1]


def test_real_ctypes_handles_map_by_pointer_value_without_a_uuid_call() -> None:
    from gputui.backends.nvml import _address, _EventWatcher, _Gpu

    def handle(address: int):
        return ctypes.cast(ctypes.c_void_p(address), pynvml.c_nvmlDevice_t)

    assert _address(handle(0x1234)) == 0x1234
    assert _address(pynvml.c_nvmlDevice_t()) is None
    assert _address(object()) is None
    nvml = make_fake_nvml(2)
    gpus = [_Gpu(index=i, handle=handle(0x1000 + i)) for i in range(2)]
    watcher = _EventWatcher(nvml, object(), gpus, 20)
    data = pynvml.c_nvmlEventData_t(device=handle(0x1001), eventType=XID, eventData=45)
    event = watcher._event(data)
    assert (event.kind, event.gpu_index, event.code) == ("xid", 1, 45)
    assert nvml.calls["nvmlDeviceGetUUID"] == 0


# -- topology and NVLink --------------------------------------------------------------------------

LINK_CALLS = (
    "nvmlDeviceGetNvLinkState",
    "nvmlDeviceGetNvLinkVersion",
    "nvmlDeviceGetNvLinkRemotePciInfo",
    "nvmlDeviceGetNvLinkRemoteDeviceType",
    "nvmlDeviceGetNvLinkErrorCounter",
)
NEAR = tuple(range(0, 56)) + tuple(range(112, 168))
FAR = tuple(range(56, 112)) + tuple(range(168, 224))


def open_topology(fake: FakeNvml) -> tuple[NvmlBackend, Topology]:
    backend = NvmlBackend(fake)
    topology = backend.open().topology
    assert topology is not None
    return backend, topology


def test_nvswitch_node_discovers_18_switch_links_per_gpu(monkeypatch, tmp_path) -> None:
    """8 GPUs, 18 NVLink4 links each to an NVSwitch, two NUMA nodes (GPUs 0-3 and 4-7)."""
    gpus = [
        FakeGpu(
            nvlinks=nvswitch_links(18),
            nvlink_speed_mbps=26562,
            cpu_affinity=NEAR if i < 4 else FAR,
        )
        for i in range(8)
    ]
    # The NUMA node of each GPU's PCI device, as the kernel reports it.
    numa = {f"0000:{0x18 + i:02x}:00.0": {"numa_node": "0" if i < 4 else "1"} for i in range(8)}
    fake_sysfs(monkeypatch, tmp_path / "sysfs", numa)
    levels = [
        [0 if a == b else (40 if (a < 4) == (b < 4) else 50) for b in range(8)] for a in range(8)
    ]
    fake = make_fake_nvml(gpus, topology_levels=levels)
    _, topology = open_topology(fake)
    assert len(topology.links) == 8 * 18
    for index in range(8):
        links = topology.links_of(index)
        assert [link.link for link in links] == list(range(18))
        assert {link.remote_type for link in links} == {"switch"}
        assert {link.remote_gpu_index for link in links} == {None}
        assert {link.version for link in links} == {4}
        assert {link.speed_gbps for link in links} == {212.496}  # 26562 MB/s in Gb/s
        assert {link.kind for link in links} == {"nvlink"}
        assert links[0].remote_pci_bus_id == "00000000:C1:00.0"
        # Links 0-17 answer, 18 says InvalidArgument: the loop stops there.
        assert fake.gpu_calls[(index, "nvmlDeviceGetNvLinkState")] == 19
    assert len(topology.paths) == 8 * 7 // 2
    assert [(p.a, p.b) for p in topology.paths[:3]] == [(0, 1), (0, 2), (0, 3)]
    assert topology.path(0, 3).pcie_level == "NODE"
    assert topology.path(3, 4).pcie_level == "SYS"
    assert topology.path(7, 6).pcie_level == "NODE"
    assert all(p.p2p_read is True and p.p2p_write is True for p in topology.paths)
    places = {place.gpu_index: place for place in topology.locality}
    assert places[0].cpu_affinity == "0-55,112-167"
    assert places[7].cpu_affinity == "56-111,168-223"
    assert (places[0].numa_node, places[7].numa_node) == (0, 1)


def test_direct_nvlink_pair_finds_its_peer_despite_bus_id_spelling() -> None:
    """Two cards joined by a 4-link bridge; the remote bus ids differ in case and domain width
    from what nvmlDeviceGetPciInfo reports."""
    gpus = [
        FakeGpu(pci_bus_id="00000000:1A:00.0", nvlinks=direct_links("0000:1b:00.0")),
        FakeGpu(pci_bus_id="00000000:1B:00.0", nvlinks=direct_links("00000000:1a:00.0")),
    ]
    _, topology = open_topology(make_fake_nvml(gpus))
    assert [(link.link, link.remote_gpu_index) for link in topology.links_of(0)] == [
        (i, 1) for i in range(4)
    ]
    assert {link.remote_gpu_index for link in topology.links_of(1)} == {0}
    assert {link.remote_type for link in topology.links} == {"gpu"}
    assert {link.version for link in topology.links} == {3}
    assert {link.speed_gbps for link in topology.links} == {None}  # speed field unsupported
    assert topology.links_of(0)[0].remote_pci_bus_id == "0000:1b:00.0"  # as the driver said
    assert len(topology.paths) == 1


def test_remote_type_function_not_found_is_inferred_from_the_pci_id() -> None:
    gpus = [
        FakeGpu(pci_bus_id="00000000:1A:00.0", nvlinks=direct_links("0000:1B:00.0", count=2)),
        FakeGpu(pci_bus_id="00000000:1B:00.0"),
    ]
    gpus[0].nvlinks.append(FakeLink(remote_bus_id="00000000:C1:00.0"))
    fake = make_fake_nvml(gpus, missing={"nvmlDeviceGetNvLinkRemoteDeviceType"})
    _, topology = open_topology(fake)
    assert [(link.remote_type, link.remote_gpu_index) for link in topology.links_of(0)] == [
        ("gpu", 1),
        ("gpu", 1),
        (None, None),  # not a local GPU and no type: unknown
    ]
    assert topology.links_of(1) == ()


def test_remote_ibm_npu_reads_as_cpu() -> None:
    link = FakeLink(remote_bus_id="00000004:04:00.0", remote_type=1)
    _, topology = open_topology(make_fake_nvml([FakeGpu(nvlinks=[link])]))
    assert topology.links[0].remote_type == "cpu"


@pytest.mark.parametrize(
    ("level", "code"),
    [(0, "PIX"), (10, "PIX"), (20, "PXB"), (30, "PHB"), (40, "NODE"), (50, "SYS"), (99, None)],
)
def test_pcie_levels_map_to_topo_codes(level: int, code: str | None) -> None:
    _, topology = open_topology(make_fake_nvml(2, topology_levels=[[0, level], [level, 0]]))
    (path,) = topology.paths
    assert (path.a, path.b, path.pcie_level) == (0, 1, code)


def test_p2p_read_and_write_use_plain_indices() -> None:
    gpu_not_supported = pynvml.NVML_P2P_STATUS_GPU_NOT_SUPPORTED
    fake = make_fake_nvml(3, p2p_status={(0, 1, 1): gpu_not_supported, (2, 0, 0): 3})
    _, topology = open_topology(fake)
    assert (topology.path(0, 1).p2p_read, topology.path(0, 1).p2p_write) == (True, False)
    assert (topology.path(0, 2).p2p_read, topology.path(0, 2).p2p_write) == (False, True)
    assert (topology.path(1, 2).p2p_read, topology.path(1, 2).p2p_write) == (True, True)
    indices = [args[2] for args in fake.args_of("nvmlDeviceGetP2PStatus")]
    assert sorted(set(indices)) == [0, 1]
    assert all(type(index) is int for index in indices)  # never the binding's tuple (0,)
    assert pynvml.NVML_P2P_CAPS_INDEX_READ == (0,)  # the reason for the above


def test_fake_refuses_the_tuple_read_index_like_ctypes() -> None:
    fake = make_fake_nvml(2)
    fake.nvmlInit()
    h0, h1 = fake.nvmlDeviceGetHandleByIndex(0), fake.nvmlDeviceGetHandleByIndex(1)
    with pytest.raises(ctypes.ArgumentError):
        fake.nvmlDeviceGetP2PStatus(h0, h1, pynvml.NVML_P2P_CAPS_INDEX_READ)


def test_p2p_and_topology_errors_are_none() -> None:
    errors = {
        "nvmlDeviceGetP2PStatus": pynvml.NVMLError_NotSupported,
        "nvmlDeviceGetTopologyCommonAncestor": pynvml.NVMLError_Unknown,
    }
    _, topology = open_topology(make_fake_nvml(2, errors=errors))
    (path,) = topology.paths
    assert (path.pcie_level, path.p2p_read, path.p2p_write) == (None, None, None)


def test_single_gpu_has_no_paths() -> None:
    fake = make_fake_nvml([FakeGpu(cpu_affinity=tuple(range(8)), numa_node=0)])
    _, topology = open_topology(fake)
    assert topology.paths == () and topology.links == ()
    assert topology.locality[0].cpu_affinity == "0-7"
    assert fake.calls["nvmlDeviceGetTopologyCommonAncestor"] == 0
    assert fake.calls["nvmlDeviceGetP2PStatus"] == 0


@pytest.mark.parametrize(
    ("words", "text"),
    [
        # CPUs 0-55 and 112-167 on 64-bit words: 0-55 in word 0, 112-127 in word 1 (bits 48-63),
        # 128-167 in word 2 (bits 0-39).
        ([(1 << 56) - 1, ((1 << 16) - 1) << 48, (1 << 40) - 1, 0], "0-55,112-167"),
        ([0b1110101], "0,2,4-6"),
        ([1 << 63, 1], "63-64"),
        ([0xFFFFFFFFFFFFFFFF], "0-63"),
        ([0, 0], None),
        ([], None),
    ],
)
def test_cpu_affinity_formatting(words: list[int], text: str | None) -> None:
    assert format_cpu_list(words) == text


def test_cpu_affinity_formatting_takes_a_ctypes_array() -> None:
    words = (ctypes.c_ulonglong * 2)(0b11, 1 << 1)
    assert format_cpu_list(words) == "0-1,65"
    assert format_cpu_list([0b11, 0b10], bits=2) == "0-1,3"


def test_locality_unsupported_and_numa_function_not_found_are_none() -> None:
    fake = make_fake_nvml(
        [FakeGpu(cpu_affinity=(4, 5, 6)), FakeGpu()], missing={"nvmlDeviceGetNumaNodeId"}
    )
    _, topology = open_topology(fake)
    first, second = topology.locality
    assert (first.cpu_affinity, first.numa_node) == ("4-6", None)
    assert (second.cpu_affinity, second.numa_node) == (None, None)
    words = fake.args_of("nvmlDeviceGetCpuAffinity")[0][1]
    assert words >= 4  # room for at least 256 CPUs


def test_negative_numa_node_is_none() -> None:
    _, topology = open_topology(make_fake_nvml([FakeGpu(numa_node=-1)]))
    assert topology.locality[0].numa_node is None


def test_numa_affinity_is_the_pci_devices_not_the_gpu_numa_id(monkeypatch, tmp_path) -> None:
    """A Grace Hopper-like GPU: NVML's GPU NUMA ID is the node of the GPU's own memory (2);
    the NUMA affinity ``nvidia-smi topo -m`` shows is the PCI device's node in sysfs (0)."""
    fake_sysfs(monkeypatch, tmp_path, {"0000:18:00.0": {"numa_node": "0"}})
    fake = make_fake_nvml([FakeGpu(numa_node=2, cpu_affinity=tuple(range(72)))])
    _, topology = open_topology(fake)
    (place,) = topology.locality
    assert (place.numa_node, place.cpu_affinity) == (0, "0-71")
    assert fake.calls["nvmlDeviceGetNumaNodeId"] == 0


def test_cpu_affinity_falls_back_to_sysfs_local_cpulist(monkeypatch, tmp_path) -> None:
    devices = {
        "0000:18:00.0": {"numa_node": "1", "local_cpulist": "56-111,168-223"},
        "0000:19:00.0": {"numa_node": "-1", "local_cpulist": "0-223"},  # no NUMA: -1
        "0000:1a:00.0": {"numa_node": "0", "local_cpulist": "0-55"},
    }
    fake_sysfs(monkeypatch, tmp_path, devices)
    gpus = [
        FakeGpu(cpu_affinity=None),  # NVML cannot say: sysfs can
        FakeGpu(errors={"nvmlDeviceGetCpuAffinity": pynvml.NVMLError_Unknown}),
        FakeGpu(cpu_affinity=(0, 1, 2, 3)),  # NVML answers: its answer stands
    ]
    _, topology = open_topology(make_fake_nvml(gpus))
    assert [(p.cpu_affinity, p.numa_node) for p in topology.locality] == [
        ("56-111,168-223", 1),
        ("0-223", None),
        ("0-3", 0),
    ]


def test_no_sysfs_means_unknown_locality() -> None:
    _, topology = open_topology(make_fake_nvml([FakeGpu(numa_node=0)]))
    assert (topology.locality[0].cpu_affinity, topology.locality[0].numa_node) == (None, None)


@pytest.mark.parametrize(
    ("content", "node"),
    [("0", 0), ("1\n", 1), ("-1", None), ("", None), ("x", None), (None, None)],
)
def test_pci_numa_node_reads_sysfs(tmp_path, content: str | None, node: int | None) -> None:
    from gputui.pci import numa_node

    device = tmp_path / "0000:c1:00.0"
    device.mkdir()
    if content is not None:
        (device / "numa_node").write_text(content)
    assert numa_node("00000000:C1:00.0", root=tmp_path) == node
    assert numa_node("0000:03:00.0", root=tmp_path) is None
    assert numa_node(None, root=tmp_path) is None


@pytest.mark.parametrize(
    ("raw", "version"),
    [
        (pynvml.NVML_NVLINK_VERSION_1_0, 1),
        (pynvml.NVML_NVLINK_VERSION_2_0, 2),
        (pynvml.NVML_NVLINK_VERSION_2_2, 2),
        (pynvml.NVML_NVLINK_VERSION_3_0, 3),
        (pynvml.NVML_NVLINK_VERSION_3_1, 3),
        (pynvml.NVML_NVLINK_VERSION_4_0, 4),
        (pynvml.NVML_NVLINK_VERSION_5_0, 5),
        (pynvml.NVML_NVLINK_VERSION_INVALID, None),
        (99, None),
    ],
)
def test_nvlink_version_enum_is_decoded_to_the_generation(raw: int, version: int | None) -> None:
    links = [FakeLink(version=raw), FakeLink(version=raw)]
    _, topology = open_topology(make_fake_nvml([FakeGpu(nvlinks=links)]))
    assert [link.version for link in topology.links] == [version, version]


def test_h100_nvlink_reads_as_nvlink_4_not_the_raw_enum() -> None:
    assert pynvml.NVML_NVLINK_VERSION_4_0 == 6  # what an H100 answers
    _, topology = open_topology(make_fake_nvml([FakeGpu(nvlinks=nvswitch_links(2))]))
    assert {link.version for link in topology.links} == {4}


def test_nvlink_speed_is_per_link_per_direction() -> None:
    """Field 90 is the common speed of one active link, one way, in MB/s (nvidia-smi prints
    26.562 GB/s per H100 link): 212.5 Gb/s per link, not the sum over the 18 links."""
    gpu = FakeGpu(nvlinks=nvswitch_links(18), nvlink_speed_mbps=26562)
    _, topology = open_topology(make_fake_nvml([gpu]))
    assert [link.speed_gbps for link in topology.links] == [pytest.approx(212.496)] * 18
    assert (topology.links[0].speed_gbps or 0) / 8 == pytest.approx(26.562)  # GB/s, one way


@pytest.mark.parametrize(
    "knobs",
    [
        {},  # a consumer / PCIe card: NotSupported on link 0
        {"unsupported": {"nvmlDeviceGetNvLinkState"}},
        {"all_unsupported": True},
    ],
)
def test_unsupported_link_queries_mean_no_links_and_empty_link_samples(knobs: dict) -> None:
    fake = make_fake_nvml([FakeGpu(**knobs), FakeGpu(**knobs)])
    backend, topology = open_topology(fake)
    assert topology.links == ()
    assert len(topology.paths) == 1
    assert fake.gpu_calls[(0, "nvmlDeviceGetNvLinkState")] == 1  # stopped at link 0
    for t in range(3):
        for sample in backend.read_gpus(float(t), slow=True):
            assert sample.error is None and not sample.lost
            assert sample.links == ()
    assert fake.calls["nvmlDeviceGetNvLinkState"] == 2  # nothing asked after open
    assert fake.calls["nvmlDeviceGetNvLinkErrorCounter"] == 0
    scopes = {scope for args in fake.args_of("nvmlDeviceGetFieldValues") for _, scope in args[1]}
    assert scopes <= {0, 0xFFFFFFFF}


def test_missing_nvlink_symbols_mean_no_links() -> None:
    backend, topology = open_topology(make_fake_nvml(1, absent={"nvmlDeviceGetNvLinkState"}))
    assert topology.links == ()
    assert backend.read_gpus(1.0, slow=True)[0].links == ()


def test_fast_reads_make_no_link_calls_and_leave_links_none() -> None:
    backend, fake = open_backend([FakeGpu(nvlinks=nvswitch_links(4))])
    at_open = {name: fake.calls[name] for name in LINK_CALLS}
    for t in range(3):
        assert backend.read_gpus(float(t), slow=False)[0].links is None
    assert {name: fake.calls[name] for name in LINK_CALLS} == at_open
    for args in fake.args_of("nvmlDeviceGetFieldValues")[-3:]:
        assert {scope for _, scope in args[1]} == {0}


def test_slow_reads_give_per_link_rates_from_counter_deltas() -> None:
    gpu = FakeGpu(nvlinks=nvswitch_links(3))
    backend, fake = open_backend([gpu])
    (first,) = backend.read_gpus(10.0, slow=True)
    assert first.links is not None and [s.link for s in first.links] == [0, 1, 2]
    assert all(s.up is True and s.tx_bytes_per_s is None for s in first.links)  # no baseline
    gpu.nvlinks[0].tx_kib += 2048
    gpu.nvlinks[0].rx_kib += 1024
    gpu.nvlinks[2].rx_kib += 4096
    backend.read_gpus(11.0, slow=False)  # fast reads do not move the baseline
    (second,) = backend.read_gpus(12.0, slow=True)
    links = second.links
    assert links is not None
    assert (links[0].tx_bytes_per_s, links[0].rx_bytes_per_s) == (1024 * 1024, 512 * 1024)
    assert (links[1].tx_bytes_per_s, links[1].rx_bytes_per_s) == (0.0, 0.0)
    assert links[2].rx_bytes_per_s == 2048 * 1024
    # One field-value call carries the per-link counters (scopeId = link id) with the rest.
    request = fake.args_of("nvmlDeviceGetFieldValues")[-1][1]
    for link in range(3):
        assert (138, link) in request and (139, link) in request
    assert (138, 0xFFFFFFFF) in request and (83, 0) in request
    assert fake.calls["nvmlDeviceGetFieldValues"] == 1 + 3  # speed field at open, one per read


def test_link_error_counters() -> None:
    link = FakeLink(replay_errors=5, recovery_errors=1, crc_flit_errors=3, crc_data_errors=2)
    backend, fake = open_backend([FakeGpu(nvlinks=[link, FakeLink()])])
    (sample,) = backend.read_gpus(1.0, slow=True)
    assert sample.links is not None
    first, second = sample.links
    assert (first.replay_errors, first.recovery_errors, first.crc_errors) == (5, 1, 5)
    assert (second.replay_errors, second.recovery_errors, second.crc_errors) == (0, 0, 0)
    counters = {args[2] for args in fake.args_of("nvmlDeviceGetNvLinkErrorCounter")}
    assert counters == {
        pynvml.NVML_NVLINK_ERROR_DL_REPLAY,
        pynvml.NVML_NVLINK_ERROR_DL_RECOVERY,
        pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT,
        pynvml.NVML_NVLINK_ERROR_DL_CRC_DATA,
    }


def test_crc_data_unsupported_still_gives_crc_flit() -> None:
    link = FakeLink(crc_flit_errors=7, crc_data_errors=None)
    backend, _ = open_backend([FakeGpu(nvlinks=[link])])
    (sample,) = backend.read_gpus(1.0, slow=True)
    assert sample.links is not None and sample.links[0].crc_errors == 7


def test_unsupported_link_calls_are_asked_once() -> None:
    gpu = FakeGpu(nvlinks=nvswitch_links(2), unsupported={"nvmlDeviceGetNvLinkErrorCounter"})
    gpu.nvlinks[1].tx_kib = None  # this link's throughput field answers NOT_SUPPORTED
    backend, fake = open_backend([gpu])
    for t in range(4):
        (sample,) = backend.read_gpus(float(t), slow=True)
        assert sample.links is not None
        assert all(s.replay_errors is None and s.crc_errors is None for s in sample.links)
        assert sample.links[1].tx_bytes_per_s is None
    assert fake.calls["nvmlDeviceGetNvLinkErrorCounter"] == 2 * 4  # 2 links x 4 counters, once
    # Link state: calls at open (2 + the stop), then the batched per-link state field.
    assert fake.calls["nvmlDeviceGetNvLinkState"] == 3
    requests = [args[1] for args in fake.args_of("nvmlDeviceGetFieldValues")]
    assert (138, 1) in requests[1]
    assert all((138, 1) not in r and (139, 1) in r and (138, 0) in r for r in requests[2:])
    assert (138, 0xFFFFFFFF) in requests[-1]  # the all-links sum is kept apart


def test_link_going_down_reads_up_false_and_no_rates() -> None:
    gpu = FakeGpu(nvlinks=nvswitch_links(2))
    backend, _ = open_backend([gpu])
    backend.read_gpus(1.0, slow=True)
    gpu.nvlinks[1].state = 0
    gpu.nvlinks[0].tx_kib += 1000
    gpu.nvlinks[1].tx_kib += 1000
    (sample,) = backend.read_gpus(2.0, slow=True)
    assert sample.links is not None
    up, down = sample.links
    assert (up.up, up.tx_bytes_per_s) == (True, 1000 * 1024)
    assert (down.up, down.tx_bytes_per_s, down.rx_bytes_per_s) == (False, None, None)
    assert down.replay_errors == 0  # counters still read
    assert sample.error is None
    gpu.nvlinks[1].state = 1  # back up: rates resume from the old baseline
    (again,) = backend.read_gpus(4.0, slow=True)
    assert again.links is not None and again.links[1].up is True
    assert again.links[1].tx_bytes_per_s == 1000 * 1024 / 3


def test_a_link_down_at_open_is_still_listed() -> None:
    links = nvswitch_links(2)
    links[0].state = 0
    links[0].remote_bus_id = None  # an inactive link has no remote end
    links[0].remote_type = None
    # On an NVSwitch board whose fabric is set up every link is wired: down, not unused.
    gpu = FakeGpu(nvlinks=links, fabric_state=pynvml.NVML_GPU_FABRIC_STATE_COMPLETED)
    backend, topology = open_topology(make_fake_nvml([gpu]))
    first, second = topology.links
    assert (first.link, first.remote_type, first.remote_pci_bus_id) == (0, None, None)
    assert second.remote_type == "switch"
    (sample,) = backend.read_gpus(1.0, slow=True)
    assert sample.links is not None and [s.up for s in sample.links] == [False, True]


def test_lost_gpu_has_no_link_samples() -> None:
    gpus = [FakeGpu(nvlinks=nvswitch_links(2)), FakeGpu(nvlinks=nvswitch_links(2))]
    backend, _ = open_backend(gpus)
    gpus[0].lost = True
    first, second = backend.read_gpus(1.0, slow=True)
    assert first.lost and first.links is None
    assert second.links is not None and len(second.links) == 2


def test_gpu_lost_during_discovery_keeps_the_others() -> None:
    gpus = [FakeGpu(nvlinks=nvswitch_links(2)), FakeGpu(nvlinks=nvswitch_links(2)), FakeGpu()]
    gpus[1].errors["nvmlDeviceGetNvLinkVersion"] = NVMLError_GpuIsLost
    backend, topology = open_topology(make_fake_nvml(gpus))
    assert {link.gpu_index for link in topology.links} == {0}
    assert [(p.a, p.b) for p in topology.paths] == [(0, 2)]
    assert [place.gpu_index for place in topology.locality] == [0, 2]
    samples = backend.read_gpus(1.0, slow=True)
    assert [s.lost for s in samples] == [False, True, False]


def test_topology_discovery_binding_bug_leaves_topology_none() -> None:
    fake = make_fake_nvml(2, errors={"nvmlDeviceGetP2PStatus": RuntimeError("binding bug")})
    node = NvmlBackend(fake).open()
    assert node.topology is None
    assert len(node.gpus) == 2


def test_discovery_is_not_repeated_in_the_slow_tier() -> None:
    backend, fake = open_backend([FakeGpu(nvlinks=nvswitch_links(18)) for _ in range(2)])
    at_open = {
        name: fake.calls[name]
        for name in (
            "nvmlDeviceGetNvLinkVersion",
            "nvmlDeviceGetNvLinkRemotePciInfo",
            "nvmlDeviceGetNvLinkRemoteDeviceType",
            "nvmlDeviceGetTopologyCommonAncestor",
            "nvmlDeviceGetP2PStatus",
            "nvmlDeviceGetCpuAffinity",
        )
    }
    assert at_open["nvmlDeviceGetNvLinkVersion"] == 36
    for t in range(3):
        backend.read_gpus(float(t), slow=True)
    assert {name: fake.calls[name] for name in at_open} == at_open


def test_link_0_counter_unsupported_keeps_the_all_links_sum() -> None:
    gpu = FakeGpu(nvlinks=nvswitch_links(2), nvlink_tx_kib=0)
    gpu.nvlinks[0].tx_kib = None  # scopeId 0 is link 0 here, not "the device"
    backend, fake = open_backend([gpu])
    backend.read_gpus(1.0, slow=True)
    gpu.nvlink_tx_kib += 10
    gpu.nvlinks[1].tx_kib += 10
    (sample,) = backend.read_gpus(2.0, slow=True)
    assert sample.nvlink_tx_bytes_per_s == 10 * 1024
    assert sample.links is not None
    assert sample.links[0].tx_bytes_per_s is None
    assert sample.links[1].tx_bytes_per_s == 10 * 1024
    request = fake.args_of("nvmlDeviceGetFieldValues")[-1][1]
    assert (138, 0) not in request and (138, 0xFFFFFFFF) in request and (139, 0) in request


def test_gpu_lost_while_pairing_skips_the_path_without_blaming_either() -> None:
    fake = make_fake_nvml(3)
    fake.gpus[1].errors["nvmlDeviceGetTopologyCommonAncestor"] = NVMLError_GpuIsLost
    backend, topology = open_topology(fake)
    # GPU 1 answers "lost" whenever it is either end of the pair query.
    assert [(p.a, p.b) for p in topology.paths] == [(0, 2)]
    assert [s.lost for s in backend.read_gpus(1.0, slow=False)] == [False, False, False]


# -- the call budget ------------------------------------------------------------------------------


def test_per_link_error_counters_are_read_again_only_when_the_totals_move() -> None:
    gpu = FakeGpu(nvlinks=nvswitch_links(18))
    backend, fake = open_backend([gpu])
    backend.read_gpus(1.0, slow=True)
    first = fake.calls["nvmlDeviceGetNvLinkErrorCounter"]
    assert first == 18 * 4  # once, to know each link's counts
    for t in range(2, 6):
        (sample,) = backend.read_gpus(float(t), slow=True)
    assert fake.calls["nvmlDeviceGetNvLinkErrorCounter"] == first  # totals unchanged: none
    gpu.nvlinks[5].replay_errors = 3
    (sample,) = backend.read_gpus(6.0, slow=True)
    assert fake.calls["nvmlDeviceGetNvLinkErrorCounter"] == 2 * first
    assert sample.links is not None and sample.links[5].replay_errors == 3


def test_an_h100_costs_few_calls_per_second() -> None:
    """One second in the life of the dashboard's sampler: a fast read every second and a slow
    one every third, on an H100 with 18 NVLinks and two processes. Every call is an ioctl under
    the driver lock that every other monitoring tool shares."""
    gpu = FakeGpu(
        nvlinks=nvswitch_links(18),
        compute_processes=[FakeProcess(10), FakeProcess(11)],
    )
    backend, fake = open_backend([gpu])
    backend.read_gpus(0.0, slow=True)
    backend.read_processes(0.0)  # the first slow tier reads the per-link error counters
    before = sum(fake.calls.values())
    for t in range(1, 31):
        slow = t % 3 == 0
        backend.read_gpus(float(t), slow=slow)
        if slow:
            backend.read_processes(float(t))
    per_second = (sum(fake.calls.values()) - before) / 30
    assert per_second <= 12, dict(fake.calls)


def test_topology_can_wait_for_the_first_reading() -> None:
    """The dashboard opens NVML without the slow wiring discovery; the sampler finds it before
    the first reading, and the snapshot's node carries it."""
    from gputui.sampler import Sampler

    fake = make_fake_nvml([FakeGpu(nvlinks=nvswitch_links(4)), FakeGpu(nvlinks=nvswitch_links(4))])
    backend = NvmlBackend(fake)
    backend.defer_topology = True
    node = backend.open()
    assert node.topology is None and backend.topology_pending
    assert fake.calls["nvmlDeviceGetNvLinkRemotePciInfo"] == 0
    sampler = Sampler(backend, node=node)
    snapshot = sampler.poll()
    assert not backend.topology_pending
    assert snapshot.node.topology is not None and len(snapshot.node.topology.links) == 8
    assert snapshot.gpus[0].links is not None and len(snapshot.gpus[0].links) == 4
    assert sampler.poll().node is snapshot.node  # found once


def test_field_values_unpacked_from_bytes_match_the_binding() -> None:
    """The one-pass byte decoding of nvmlFieldValue_t entries reads what the binding's own
    attributes say, for every value type (and None for a type NVML may add later)."""
    import pynvml

    from gputui.backends.nvml.fields import _decode, _decode_attributes

    members = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")
    samples = (1234.5, 4_000_000_000, 2**40 + 3, 2**63 + 5, -(2**40), -7, 65_000)
    entries = (pynvml.c_nvmlFieldValue_t * 9)()
    for i, (member, value) in enumerate(zip(members, samples, strict=True)):
        entries[i].fieldId, entries[i].scopeId = 100 + i, i
        entries[i].valueType = i
        entries[i].nvmlReturn = i % 2 * 3
        setattr(entries[i].value, member, value)
    entries[7].valueType, entries[7].nvmlReturn = 42, 0
    entries[8].valueType, entries[8].nvmlReturn = 0, 15
    decoded = list(_decode(entries))
    assert decoded == list(_decode_attributes(entries))
    assert decoded[:7] == [(i % 2 * 3, v) for i, v in enumerate(samples)]
    assert decoded[7] == (0, None)
    assert decoded[8][0] == 15
