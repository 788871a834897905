"""Opening NVML and its GPUs (gputui.backends.nvml.backend and .static): init errors as one-line
reasons, the static facts of each GPU, GPUs that cannot be opened, and closing."""

from __future__ import annotations

import ctypes
import subprocess
import sys
import types

import pynvml
import pytest
from tests.factories import open_nvml
from tests.fakes.fake_pynvml import (
    FakeGpu,
    GiB,
    make_fake_nvml,
)

from gputui.backends.base import BackendUnavailable
from gputui.backends.nvml import (
    NvmlBackend,
)
from gputui.core.model import GpuSample

pytestmark = pytest.mark.usefixtures("nvml_backends")


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
    assert info.minor_number == 0


def test_each_gpu_keeps_its_own_device_minor_number() -> None:
    """/dev/nvidiaN's N comes from the driver's probe order, not the NVML index (PCI order): a
    GPU is known by its own minor, and a driver that does not say leaves it unknown."""
    fake = make_fake_nvml([FakeGpu(minor_number=2), FakeGpu(minor_number=0), FakeGpu()])
    fake.gpus[2].minor_number = None  # NotSupported
    node = NvmlBackend(fake).open()
    assert [g.minor_number for g in node.gpus] == [2, 0, None]


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
    backend, fake = open_nvml(1)
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
        "minor_number",
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


# -- closing --------------------------------------------------------------------------------------


def test_close_is_idempotent_and_swallows_errors() -> None:
    backend, fake = open_nvml(1)
    backend.close()
    backend.close()
    assert fake.calls["nvmlShutdown"] == 1
    assert fake.initialized == 0
    backend, fake = open_nvml(1, errors={"nvmlShutdown": pynvml.NVMLError_Unknown})
    backend.close()
    backend.close()
    assert fake.calls["nvmlShutdown"] == 1


def test_close_without_open_does_nothing() -> None:
    fake = make_fake_nvml(1)
    NvmlBackend(fake).close()
    assert fake.calls["nvmlShutdown"] == 0
