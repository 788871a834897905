"""The AMD-SMI backend against a fake ``amdsmi`` module (tests/fakes/fake_amdsmi.py)."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import sys

import pytest
from tests.fakes.fake_amdsmi import (
    MI300X_BDFS,
    REAL_SIGNATURES,
    STATUS,
    UINT16_MAX,
    UINT32_MAX,
    UINT64_MAX,
    FakeAmdProcess,
    FakePair,
    FakeXgmiLink,
    GiB,
    MiB,
    make_fake_amdsmi,
    mi210_gpu,
    mi300x_gpu,
    mi300x_node,
    pcie_pair,
    w7900_gpu,
    write_broken_amdsmi,
)

from gputui.backends.amd import (
    AmdSmiBackend,
    _pcie_gen,
    architecture_from_gfx,
    local_cpulist,
    pci_sysfs_name,
)
from gputui.backends.amd.links import xgmi_link_gbps
from gputui.backends.base import BackendUnavailable
from gputui.core.model import SLOW_SAMPLE_FIELDS, SLOW_TIER_FIELDS, THROTTLE_REASONS, LinkSample

T0 = 1_700_000_000.0


@pytest.fixture(autouse=True)
def _no_host_sysfs(monkeypatch, tmp_path):
    """The fakes' BDFs may exist on the test machine: never read its real local_cpulist."""
    monkeypatch.setattr("gputui.core.pci.SYSFS_PCI_DEVICES", tmp_path / "no-sysfs")


def opened(*gpus, **knobs):
    fake = make_fake_amdsmi(list(gpus) if gpus else None, **knobs)
    backend = AmdSmiBackend(fake)
    node = backend.open()
    return fake, backend, node


# ------------------------------------------------------------------------------------ the fake


def test_fake_mirrors_real_signatures():
    fake = make_fake_amdsmi()
    for name, params in REAL_SIGNATURES.items():
        assert tuple(inspect.signature(getattr(fake, name)).parameters) == params, name


def test_fake_rejects_plain_ints_where_the_real_module_wants_enums():
    fake, _backend, _node = opened()
    handle = fake.amdsmi_get_processor_handles()[0]
    with pytest.raises(fake.AmdSmiParameterException):
        fake.amdsmi_get_temp_metric(handle, 0, 0)
    with pytest.raises(fake.AmdSmiParameterException):
        fake.amdsmi_get_gpu_activity(0)


# ------------------------------------------------------------------------------- import guard


def _forget_amdsmi(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in sys.modules if n == "amdsmi" or n.startswith("amdsmi.")]:
        monkeypatch.delitem(sys.modules, name)


def test_import_guard_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "amdsmi", None)  # makes `import amdsmi` fail as if absent
    with pytest.raises(BackendUnavailable, match=r"^amdsmi not installed$"):
        AmdSmiBackend().open()


def test_import_guard_library_missing_prints_nothing(monkeypatch, tmp_path, capfd):
    _forget_amdsmi(monkeypatch)
    write_broken_amdsmi(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()

    # The stand-in really behaves like amdsmi without ROCm: noise on stdout, then KeyError.
    noise = io.StringIO()
    with contextlib.redirect_stdout(noise), pytest.raises(KeyError, match=r"libamd_smi\.so"):
        importlib.import_module("amdsmi")
    assert "Unable to find libamd_smi.so" in noise.getvalue()
    _forget_amdsmi(monkeypatch)

    with pytest.raises(BackendUnavailable) as info:
        AmdSmiBackend().open()
    assert str(info.value) == "libamd_smi.so not found (ROCm amd-smi-lib not installed)"
    out, err = capfd.readouterr()
    assert out == ""
    assert err == ""


def test_import_guard_library_older_than_package(monkeypatch, tmp_path, capfd):
    _forget_amdsmi(monkeypatch)
    package = tmp_path / "amdsmi"
    package.mkdir()
    (package / "__init__.py").write_text(
        "print('noise')\n"
        "raise AttributeError('undefined symbol: amdsmi_get_gpu_enumeration_info')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    with pytest.raises(BackendUnavailable, match="pin amdsmi to your ROCm version"):
        AmdSmiBackend().open()
    assert capfd.readouterr() == ("", "")


def test_lazy_import_uses_the_installed_module(monkeypatch):
    fake = make_fake_amdsmi()
    monkeypatch.setitem(sys.modules, "amdsmi", fake)
    backend = AmdSmiBackend()
    assert backend.open().gpus[0].name == "AMD Instinct MI210"
    assert fake.calls["amdsmi_init"] == 1


# ------------------------------------------------------------------------------------- init


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (STATUS["DRIVER_NOT_LOADED"], "amdgpu driver not loaded"),
        (STATUS["NO_PERM"], "no permission (add the user to the render and video groups)"),
        (
            STATUS["INIT_ERROR"],
            "AMD-SMI init failed: AMDSMI_STATUS_INIT_ERROR - Initialization error (18)",
        ),
    ],
)
def test_init_errors_map_to_one_line_reasons(code, message, capfd):
    fake = make_fake_amdsmi(init_error=code, init_noise="amdsmi: something on stdout")
    with pytest.raises(BackendUnavailable) as info:
        AmdSmiBackend(fake).open()
    assert str(info.value) == message
    assert capfd.readouterr() == ("", "")
    assert fake.calls["amdsmi_shut_down"] == 0


def test_init_passes_the_gpu_flag_enum():
    fake, _backend, _node = opened()
    assert fake.init_flag is fake.AmdSmiInitFlags.INIT_AMD_GPUS


def test_no_gpus_is_unavailable_and_shuts_down():
    fake = make_fake_amdsmi([])
    with pytest.raises(BackendUnavailable, match=r"^no AMD GPU found$"):
        AmdSmiBackend(fake).open()
    assert fake.calls["amdsmi_shut_down"] == 1
    assert not fake.initialized


def test_close_is_idempotent_and_swallows_errors():
    fake, backend, _node = opened()
    backend.close()
    backend.close()
    assert fake.calls["amdsmi_shut_down"] == 1

    fake, backend, _node = opened()
    fake.amdsmi_shut_down()  # the library is already down: its shut_down now raises
    backend.close()
    assert fake.calls["amdsmi_shut_down"] == 2

    never_opened = make_fake_amdsmi()
    AmdSmiBackend(never_opened).close()
    assert never_opened.calls["amdsmi_shut_down"] == 0


# ------------------------------------------------------------------------------ static tier


def test_static_info_and_unit_conversions():
    _fake, _backend, node = opened(mi210_gpu())
    assert node.backend == "AMD-SMI"
    assert node.hostname
    assert node.driver_version == "6.8.5"
    assert node.runtime_version == "6.3.1"
    assert node.library_version == "25.1.0"
    (gpu,) = node.gpus
    assert gpu.index == 0
    assert gpu.name == "AMD Instinct MI210"
    assert gpu.vendor == "amd"
    assert gpu.uuid == "b3ff740f-0000-1000-8031-a8b2c7d9e0f1"
    assert gpu.pci_bus_id == "0000:03:00.0"
    assert gpu.compute_capability == "gfx90a"
    assert gpu.architecture == "CDNA2"
    assert gpu.sm_count == 104
    assert gpu.memory_total_bytes == 65520 * MiB
    assert gpu.power_default_limit_w == 300.0  # µW -> W
    assert gpu.power_min_limit_w == 100.0
    assert gpu.power_max_limit_w == 300.0
    assert gpu.sm_clock_max_mhz == gpu.graphics_clock_max_mhz == 1700
    assert gpu.memory_clock_max_mhz == 1600
    assert (gpu.pcie_max_gen, gpu.pcie_max_width) == (4, 16)
    # The edge sensor's limit: temperature_gpu_c is the edge temperature on this GPU.
    assert (gpu.temperature_slowdown_c, gpu.temperature_shutdown_c) == (100.0, 110.0)
    assert gpu.temperature_hotspot_limit_c == 105.0
    assert gpu.temperature_memory_limit_c == 95.0
    assert gpu.pcie_gpu_max_gen is None  # amdsmi has one maximum: the link's
    assert gpu.ecc_enabled is True
    assert gpu.mig_enabled is None
    assert gpu.vbios_version == "113-D67301-063"
    assert gpu.serial == "692223000123"


def test_memory_total_falls_back_to_vram_size_in_mb():
    _fake, _backend, node = opened(
        mi210_gpu(unsupported={"amdsmi_get_gpu_memory_total"}, vram_size_mb=1000)
    )
    assert node.gpus[0].memory_total_bytes == 1000 * MiB


def test_static_fallbacks_and_unsupported_values():
    gpu = mi210_gpu(
        market_name="",  # the wrapper turns an empty name into "N/A"
        target_graphics_version=UINT64_MAX,  # -> "gfxffffffffffffffff"
        num_compute_units=UINT32_MAX,
        clocks={"GFX": (1700, 500, UINT32_MAX), "MEM": (1600, 1600, 1600)},
        max_pcie_speed=UINT32_MAX,
        ecc_enabled_mask=0,
    )
    _fake, _backend, node = opened(gpu, rocm_version=(False, "Could not find librocm-core.so"))
    info = node.gpus[0]
    assert info.name == "Instinct MI210"
    assert info.compute_capability is None
    assert info.architecture is None
    assert info.sm_count is None
    assert info.sm_clock_max_mhz is None
    assert info.pcie_max_gen == 4  # from pcie_interface_version
    assert info.ecc_enabled is False
    assert node.runtime_version is None


@pytest.mark.parametrize(
    ("speed", "gen"),
    [
        (2500, 1),
        (5000, 2),
        (8000, 3),
        (16000, 4),
        (32000, 5),
        (64000, 6),
        (16, 4),
        (32, 5),
        (2.5, 1),
        (0, None),
        (500, None),
        (12345, None),
        ("N/A", None),
        (UINT32_MAX, None),
    ],
)
def test_pcie_speed_to_generation(speed, gen):
    assert _pcie_gen(speed) == gen


@pytest.mark.parametrize(
    ("gfx", "arch"),
    [
        ("gfx942", "CDNA3"),
        ("gfx950", "CDNA4"),
        ("gfx90a", "CDNA2"),
        ("gfx908", "CDNA"),
        ("gfx906", "GCN5.1"),
        ("gfx1100", "RDNA3"),
        ("gfx1030", "RDNA2"),
        ("gfx1201", "RDNA4"),
        ("gfx1151", "RDNA3.5"),
        ("gfx8000", None),
        (None, None),
    ],
)
def test_architecture_from_gfx_target(gfx, arch):
    assert architecture_from_gfx(gfx) == arch


# -------------------------------------------------------------------------------- fast tier


def test_fast_sample_values():
    _fake, backend, node = opened(mi210_gpu(), w7900_gpu(bdf="0000:83:00.0"))
    mi210, w7900 = backend.read_gpus(T0, slow=False)
    assert mi210.index == 0 and w7900.index == 1
    assert mi210.timestamp == T0
    assert not mi210.lost and mi210.error is None
    assert mi210.utilization_gpu_pct == 87.0
    assert mi210.utilization_memory_pct == 41.0
    assert mi210.memory_used_bytes == 12 * GiB
    assert mi210.memory_total_bytes == node.gpus[0].memory_total_bytes
    assert mi210.power_w == 243.0  # average_socket_power; current_socket_power is "N/A"
    assert mi210.power_limit_w == 300.0
    assert mi210.energy_j == pytest.approx(1_000_000_000 * 15.259 / 1e6)
    assert (mi210.temperature_gpu_c, mi210.temperature_hotspot_c) == (52.0, 61.0)
    assert mi210.temperature_memory_c == 58.0
    assert mi210.fan_pct is None  # passively cooled
    assert w7900.fan_pct == pytest.approx(40.0)  # 102 of 255
    assert mi210.clock_sm_mhz == mi210.clock_graphics_mhz == 1700
    assert mi210.clock_memory_mhz == 1600
    assert mi210.pstate is None
    assert (mi210.pcie_gen, mi210.pcie_width) == (4, 16)
    assert mi210.throttle_reasons == frozenset()


def test_na_and_all_ones_sentinels_become_none():
    gpu = mi210_gpu(
        gfx_activity=UINT16_MAX,  # "N/A" from the wrapper
        umc_activity=UINT32_MAX,  # raw, out of range
        current_socket_power=UINT16_MAX,  # "N/A"
        average_socket_power=UINT32_MAX,  # raw: the wrapper maps only 0xFFFF
        socket_power=UINT32_MAX,
        clocks={"GFX": (UINT32_MAX, 500, 1700), "MEM": (UINT32_MAX, 1, 1)},
        pcie_width=UINT16_MAX,
        pcie_speed=UINT32_MAX,
        power_cap_uw=UINT32_MAX,
    )
    _fake, backend, _node = opened(gpu)
    (sample,) = backend.read_gpus(T0, slow=False)
    assert sample.utilization_gpu_pct is None
    assert sample.utilization_memory_pct is None
    assert sample.power_w is None
    assert sample.power_limit_w is None
    assert sample.clock_sm_mhz is None
    assert sample.clock_memory_mhz is None
    assert sample.pcie_width is None
    assert sample.pcie_gen is None
    assert sample.temperature_gpu_c == 52.0  # the rest still reads


def test_each_temperature_limit_belongs_to_its_own_sensor():
    """A card at 114 °C junction with a 110 °C junction limit must not read as "far below its
    limit" because the edge (80 °C) is compared with it, or the junction with the edge's."""
    temps = {
        ("EDGE", "CURRENT"): 80,
        ("HOTSPOT", "CURRENT"): 114,
        ("VRAM", "CURRENT"): 90,
        ("EDGE", "CRITICAL"): 100,
        ("HOTSPOT", "CRITICAL"): 110,
        ("HOTSPOT", "EMERGENCY"): 115,
        ("VRAM", "CRITICAL"): 105,
    }
    _fake, backend, node = opened(w7900_gpu(temps=temps))
    info = node.gpus[0]
    (sample,) = backend.read_gpus(T0, slow=False)
    assert (sample.temperature_gpu_c, info.temperature_slowdown_c) == (80.0, 100.0)
    assert (sample.temperature_hotspot_c, info.temperature_hotspot_limit_c) == (114.0, 110.0)
    assert (sample.temperature_memory_c, info.temperature_memory_limit_c) == (90.0, 105.0)


def test_mi300_main_temperature_limit_is_the_hotspots():
    fake, backend, node = opened(mi300x_gpu())
    info = node.gpus[0]
    # No EDGE sensor: the hotspot is the GPU temperature, so its limit is the main one.
    assert info.temperature_slowdown_c == info.temperature_hotspot_limit_c == 100.0
    assert info.temperature_memory_limit_c == 95.0
    (sample,) = backend.read_gpus(T0, slow=False)
    assert sample.temperature_gpu_c == sample.temperature_hotspot_c == 45.0
    # The limits are read once, at open.
    limits = fake.calls["amdsmi_get_temp_metric"]
    backend.read_gpus(T0 + 1, slow=False)
    assert fake.calls["amdsmi_get_temp_metric"] - limits == 2  # HOTSPOT and VRAM, CURRENT


def test_an_edge_sensor_without_a_limit_leaves_the_main_limit_unknown():
    temps = {
        ("EDGE", "CURRENT"): 52,
        ("HOTSPOT", "CURRENT"): 61,
        ("HOTSPOT", "CRITICAL"): 105,
    }
    _fake, _backend, node = opened(mi210_gpu(temps=temps))
    info = node.gpus[0]
    assert info.temperature_slowdown_c is None  # never the hotspot's limit for the edge reading
    assert info.temperature_hotspot_limit_c == 105.0
    assert info.temperature_memory_limit_c is None


def test_compute_units_fill_sm_count():
    _fake, _backend, node = opened(mi300x_gpu())
    assert node.gpus[0].sm_count == 304


def test_mi300_uses_hotspot_for_gpu_temperature_and_current_power():
    fake, backend, node = opened(mi300x_gpu())
    assert node.gpus[0].architecture == "CDNA3"
    assert node.gpus[0].compute_capability == "gfx942"
    assert node.gpus[0].pcie_max_gen == 5
    first = backend.read_gpus(T0, slow=False)[0]
    temp_calls = fake.calls["amdsmi_get_temp_metric"]
    second = backend.read_gpus(T0 + 1, slow=False)[0]
    for sample in (first, second):
        assert sample.temperature_gpu_c == 45.0  # no EDGE sensor: junction instead
        assert sample.temperature_hotspot_c == 45.0
        assert sample.temperature_memory_c == 38.0
        assert sample.power_w == 350.0  # current_socket_power; average is "N/A"
        assert sample.pcie_gen == 5
    # EDGE answered NOT_SUPPORTED once and is not asked again: 2 temperature calls a tick.
    assert fake.calls["amdsmi_get_temp_metric"] - temp_calls == 2


def test_not_supported_is_asked_once():
    fake, backend, _node = opened(mi210_gpu(unsupported={"amdsmi_get_energy_count"}))
    for tick in range(5):
        (sample,) = backend.read_gpus(T0 + tick, slow=False)
        assert sample.energy_j is None
        assert sample.fan_pct is None
    assert fake.gpu_calls["amdsmi_get_energy_count", 0] == 1
    assert fake.gpu_calls["amdsmi_get_gpu_fan_speed", 0] == 1  # fanless MI210
    assert fake.gpu_calls["amdsmi_get_gpu_activity", 0] == 5


def test_unsupported_memory_is_per_device():
    fake, backend, _node = opened(mi210_gpu(fan_speed=None), w7900_gpu())
    for tick in range(3):
        backend.read_gpus(T0 + tick, slow=False)
    assert fake.gpu_calls["amdsmi_get_gpu_fan_speed", 0] == 1
    assert fake.gpu_calls["amdsmi_get_gpu_fan_speed", 1] == 3


def test_retry_and_busy_are_not_remembered():
    gpu = mi210_gpu(retry={"amdsmi_get_gpu_activity": 1}, errors={"amdsmi_get_power_info": 30})
    fake, backend, _node = opened(gpu)
    (first,) = backend.read_gpus(T0, slow=False)
    assert first.utilization_gpu_pct is None
    assert first.power_w is None
    assert not first.lost
    del gpu.errors["amdsmi_get_power_info"]
    (second,) = backend.read_gpus(T0 + 1, slow=False)
    assert second.utilization_gpu_pct == 87.0
    assert second.power_w == 243.0
    assert fake.gpu_calls["amdsmi_get_gpu_activity", 0] == 2
    assert fake.gpu_calls["amdsmi_get_power_info", 0] == 2


def test_unexpected_exceptions_never_escape(monkeypatch):
    fake, backend, _node = opened()

    def boom(handle):
        raise RuntimeError("boom")

    def bug(handle):
        raise TypeError("wrapper bug")

    monkeypatch.setattr(fake, "amdsmi_get_power_info", boom)
    monkeypatch.setattr(fake, "amdsmi_get_gpu_activity", bug)
    for tick in range(3):
        (sample,) = backend.read_gpus(T0 + tick, slow=True)
        assert sample.power_w is None
        assert sample.utilization_gpu_pct is None
        assert sample.temperature_gpu_c == 52.0


def test_function_missing_from_older_amdsmi():
    _fake, backend, _node = opened(mi210_gpu(), missing=("amdsmi_get_gpu_metrics_info",))
    (sample,) = backend.read_gpus(T0, slow=False)
    assert sample.throttle_reasons is None
    assert sample.utilization_gpu_pct == 87.0


# ---------------------------------------------------------------------------------- lost GPU


def test_lost_gpu_is_isolated_and_can_come_back():
    a = mi210_gpu(processes=[FakeAmdProcess(pid=10, vram_mem=GiB)])
    b = mi210_gpu(bdf="0000:83:00.0", processes=[FakeAmdProcess(pid=20, vram_mem=2 * GiB)])
    _fake, backend, _node = opened(a, b)
    assert not any(s.lost for s in backend.read_gpus(T0, slow=True))

    a.lost = True
    lost, alive = backend.read_gpus(T0 + 1, slow=True)
    assert lost.lost is True
    assert "NOT_FOUND" in (lost.error or "")
    assert lost.utilization_gpu_pct is None and lost.power_w is None
    assert not alive.lost and alive.utilization_gpu_pct == 87.0
    assert [(p.pid, p.gpu_index) for p in backend.read_processes(T0 + 1)] == [(20, 1)]

    a.lost = False
    again = backend.read_gpus(T0 + 2, slow=False)[0]
    assert not again.lost and again.utilization_gpu_pct == 87.0


def test_driver_unloaded_after_init_is_an_error_on_every_gpu_not_a_loss():
    a, b = mi210_gpu(), mi210_gpu(bdf="0000:83:00.0")
    _fake, backend, _node = opened(a, b)
    for gpu in (a, b):
        gpu.lost, gpu.lost_code = True, STATUS["DRIVER_NOT_LOADED"]
    samples = backend.read_gpus(T0, slow=False)
    assert [s.lost for s in samples] == [False, False]
    assert [s.error for s in samples] == ["AMD-SMI: amdgpu driver not loaded"] * 2
    assert backend.read_processes(T0) == []


@pytest.mark.parametrize(
    ("status", "message"),
    [
        ("DRIVER_NOT_LOADED", "AMD-SMI: amdgpu driver not loaded"),
        ("NOT_INIT", "AMD-SMI: library not initialized"),
        ("UNKNOWN_ERROR", "AMD-SMI: unknown error"),
        ("AMDGPU_RESTART_ERR", "AMD-SMI: amdgpu driver restart failed (see dmesg)"),
    ],
)
def test_driver_not_answering_mid_run_is_a_gpu_error_retried_every_read(status, message):
    a = mi210_gpu(processes=[FakeAmdProcess(pid=10, vram_mem=GiB)])
    b = mi210_gpu(bdf="0000:83:00.0")
    fake, backend, _node = opened(a, b)
    assert [s.error for s in backend.read_gpus(T0, slow=True)] == [None, None]
    remembered = len(backend._calls.unsupported)
    a.fail_code = STATUS[status]  # from this tick on, every call for GPU 0 fails
    for tick in (1, 2):
        before = sum(n for (_fn, index), n in fake.gpu_calls.items() if index == 0)
        first, second = backend.read_gpus(T0 + tick, slow=tick == 1)
        assert first.error == message
        assert first.lost is False  # it did not fall off the bus
        for name in ("utilization_gpu_pct", "power_w", "temperature_gpu_c", *SLOW_SAMPLE_FIELDS):
            assert getattr(first, name) is None, name
        after = sum(n for (_fn, index), n in fake.gpu_calls.items() if index == 0)
        assert after > before  # asked again: nothing was taken as unsupported
        assert second.error is None and second.utilization_gpu_pct == 87.0
    assert len(backend._calls.unsupported) == remembered
    assert backend.read_processes(T0 + 2) == []
    a.fail_code = None  # the driver answers again
    first, _second = backend.read_gpus(T0 + 3, slow=True)
    assert first.error is None and not first.lost and first.utilization_gpu_pct == 87.0
    assert [p.pid for p in backend.read_processes(T0 + 3)] == [10]


def test_driver_unloaded_in_the_middle_of_a_read_is_an_error_at_once():
    gpu = mi210_gpu()
    _fake, backend, _node = opened(gpu)
    gpu.fail_code, gpu.fail_after = STATUS["DRIVER_NOT_LOADED"], gpu.call_count + 2
    (sample,) = backend.read_gpus(T0, slow=False)
    assert sample.error == "AMD-SMI: amdgpu driver not loaded" and not sample.lost


def test_one_odd_unknown_error_among_answers_is_not_a_gpu_error():
    _fake, backend, _node = opened(mi210_gpu(errors={"amdsmi_get_power_info": UINT32_MAX}))
    (sample,) = backend.read_gpus(T0, slow=False)
    assert sample.error is None and sample.power_w is None
    assert sample.utilization_gpu_pct == 87.0


def test_not_supported_everywhere_stays_quiet_not_an_error():
    gpu = mi210_gpu()
    _fake, backend, _node = opened(gpu)
    gpu.fail_code = STATUS["NOT_SUPPORTED"]
    (sample,) = backend.read_gpus(T0, slow=True)
    assert sample.error is None and not sample.lost and sample.utilization_gpu_pct is None


def test_one_odd_not_found_does_not_mark_a_healthy_gpu_lost():
    _fake, backend, _node = opened(w7900_gpu(errors={"amdsmi_get_gpu_fan_speed": 31}))
    (sample,) = backend.read_gpus(T0, slow=False)
    assert not sample.lost
    assert sample.fan_pct is None
    assert sample.utilization_gpu_pct == 87.0


def test_gpu_lost_during_open_still_opens():
    _fake, backend, node = opened(mi210_gpu(lost=True), mi210_gpu(bdf="0000:83:00.0"))
    assert node.gpus[0].name == "AMD GPU"
    assert node.gpus[1].name == "AMD Instinct MI210"
    lost, alive = backend.read_gpus(T0, slow=False)
    assert lost.lost and not alive.lost


# ---------------------------------------------------------------------------------- throttle


def test_throttle_from_mi300_residency_counters():
    gpu = mi300x_gpu()
    _fake, backend, _node = opened(gpu)
    assert backend.read_gpus(T0, slow=False)[0].throttle_reasons is None  # no baseline yet

    gpu.accumulation_counter += 100
    gpu.residency["ppt_residency_acc"] += 60
    gpu.residency["hbm_thm_residency_acc"] += 5
    reasons = backend.read_gpus(T0 + 1, slow=False)[0].throttle_reasons
    assert reasons == {"sw_power_cap", "sw_thermal"}
    # the firmware has not sampled again: the same answer, not a fresh "nothing"
    assert backend.read_gpus(T0 + 1.5, slow=False)[0].throttle_reasons == reasons

    gpu.accumulation_counter += 100
    gpu.residency["vr_thm_residency_acc"] += 1
    gpu.residency["prochot_residency_acc"] += 1
    assert backend.read_gpus(T0 + 2, slow=False)[0].throttle_reasons == {
        "hw_thermal",
        "hw_slowdown",
    }

    gpu.accumulation_counter += 100
    assert backend.read_gpus(T0 + 3, slow=False)[0].throttle_reasons == frozenset()


def test_throttle_from_amdsmi6_bitmask():
    mask = (1 << 0) | (1 << 36) | (1 << 47) | (1 << 57)  # PPT0, TEMP_HOTSPOT, PROCHOT_GFX, FIT
    _fake, backend, _node = opened(
        mi210_gpu(indep_throttle_status=mask), indep_throttle_as_int=True
    )
    reasons = backend.read_gpus(T0, slow=False)[0].throttle_reasons
    assert reasons == {"sw_power_cap", "sw_thermal", "hw_slowdown", "reliability"}
    assert reasons <= set(THROTTLE_REASONS)


def test_throttle_bool_only_true_gives_unknown():
    _fake, backend, _node = opened(mi210_gpu(indep_throttle_status=5, throttle_status=1))
    assert backend.read_gpus(T0, slow=False)[0].throttle_reasons is None


# -------------------------------------------------------------------------------- slow tier


def test_slow_fields_only_on_slow_reads():
    gpu = mi300x_gpu(
        ecc_correctable=7,
        ecc_uncorrectable=1,
        bad_pages=[(0x1000, 4096, 0), (0x2000, 4096, 1)],
    )
    fake, backend, _node = opened(gpu)
    at_open = fake.calls.copy()  # open() reads link metrics once, for the topology
    (fast,) = backend.read_gpus(T0, slow=False)
    for name in SLOW_TIER_FIELDS:
        assert getattr(fast, name) is None, name
    for fn in (
        "amdsmi_get_gpu_total_ecc_count",
        "amdsmi_get_gpu_bad_page_info",
        "amdsmi_get_link_metrics",
        "amdsmi_get_gpu_xgmi_link_status",
        "amdsmi_get_gpu_pci_throughput",
    ):
        assert fake.calls[fn] == at_open[fn], fn

    (slow,) = backend.read_gpus(T0 + 1, slow=True)
    # One AMD counter set: reported as aggregate only (see the comment in the backend).
    assert (slow.ecc_aggregate_corrected, slow.ecc_aggregate_uncorrected) == (7, 1)
    assert slow.ecc_volatile_corrected is None and slow.ecc_volatile_uncorrected is None
    assert slow.retired_pages_pending is True
    assert fake.calls["amdsmi_get_gpu_pci_throughput"] == 0  # opt-in only


def test_xgmi_rates_from_cumulative_link_counters():
    links = [FakeXgmiLink(read=10_000, write=5_000) for _ in range(7)]
    gpu = mi300x_gpu(xgmi_links=links)
    fake, backend, _node = opened(gpu)
    assert fake.calls["amdsmi_get_link_metrics"] == 1  # topology discovery
    first = backend.read_gpus(T0, slow=True)[0]
    assert first.nvlink_rx_bytes_per_s is None  # no previous reading
    for link in links:
        link.read += 1000
        link.write += 500
    assert backend.read_gpus(T0 + 1, slow=False)[0].nvlink_rx_bytes_per_s is None
    assert fake.calls["amdsmi_get_link_metrics"] == 2
    second = backend.read_gpus(T0 + 2, slow=True)[0]
    assert second.nvlink_rx_bytes_per_s == pytest.approx(7 * 1000 * 1024 / 2)
    assert second.nvlink_tx_bytes_per_s == pytest.approx(7 * 500 * 1024 / 2)


def test_xgmi_links_are_sliced_to_num_links():
    links = [FakeXgmiLink(read=0, write=0) for _ in range(3)]
    gpu = mi300x_gpu(xgmi_links=links, num_links=2)
    _fake, backend, _node = opened(gpu)
    backend.read_gpus(T0, slow=True)
    for link in links:
        link.read += 100
        link.write += 100
    sample = backend.read_gpus(T0 + 1, slow=True)[0]
    assert sample.nvlink_rx_bytes_per_s == pytest.approx(2 * 100 * 1024)
    assert sample.nvlink_tx_bytes_per_s == pytest.approx(2 * 100 * 1024)


def test_xgmi_counter_reset_gives_none_not_negative():
    links = [FakeXgmiLink(read=5000, write=5000)]
    _fake, backend, _node = opened(mi300x_gpu(xgmi_links=links))
    backend.read_gpus(T0, slow=True)
    links[0].read = 10
    sample = backend.read_gpus(T0 + 1, slow=True)[0]
    assert sample.nvlink_rx_bytes_per_s is None


def test_pcie_throughput_is_opt_in():
    fake = make_fake_amdsmi([mi210_gpu(pci_sent=1000, pci_received=3000, max_pkt_sz=256)])
    backend = AmdSmiBackend(fake, pcie_throughput=True)
    backend.open()
    (fast,) = backend.read_gpus(T0, slow=False)
    assert fast.pcie_tx_bytes_per_s is None
    (slow,) = backend.read_gpus(T0 + 1, slow=True)
    assert slow.pcie_tx_bytes_per_s == 1000 * 256
    assert slow.pcie_rx_bytes_per_s == 3000 * 256


# --------------------------------------------------------------------------------- topology

TOPOLOGY_CALLS = (
    "amdsmi_topo_get_link_type",
    "amdsmi_topo_get_link_weight",
    "amdsmi_is_P2P_accessible",
    "amdsmi_topo_get_numa_node_number",
)


def open_node(fake):
    backend = AmdSmiBackend(fake)
    return backend, backend.open()


def test_mi300x_mesh_discovery():
    fake = mi300x_node()
    _backend, node = open_node(fake)
    topo = node.topology
    assert topo is not None
    assert len(topo.paths) == 28
    assert [(p.a, p.b) for p in topo.paths] == [(a, b) for a in range(8) for b in range(a + 1, 8)]
    for path in topo.paths:
        assert (path.link_type, path.hops, path.weight) == ("xgmi", 1, 15)
        assert path.p2p_read is True and path.p2p_write is True
    # NUMA 0 for GPUs 0-3, 1 for 4-7: only pairs across the two are known to be SYS.
    assert [loc.numa_node for loc in topo.locality] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert topo.path(1, 2).pcie_level is None
    assert topo.path(6, 1).pcie_level == "SYS"
    # Each pair asked once, in one direction.
    for fn in ("amdsmi_topo_get_link_type", "amdsmi_topo_get_link_weight"):
        assert fake.calls[fn] == 28, fn
    assert fake.calls["amdsmi_get_minmax_bandwidth_between_processors"] == 0


def test_mi300x_links_match_their_remote_gpus():
    _backend, node = open_node(mi300x_node())
    topo = node.topology
    assert len(topo.links) == 8 * 7
    for gpu in range(8):
        links = topo.links_of(gpu)
        assert [link.link for link in links] == list(range(7))
        assert {link.remote_gpu_index for link in links} == set(range(8)) - {gpu}
        for link in links:
            assert link.kind == "xgmi"
            assert link.speed_gbps == 512.0  # 16 lanes x 32 Gb/s: 64 GB/s each way
            assert link.version is None
            assert link.remote_type == "gpu"
            assert link.remote_pci_bus_id == MI300X_BDFS[link.remote_gpu_index]


def test_link_to_an_unknown_peer_keeps_its_address_only():
    links = [
        FakeXgmiLink(bdf="0000:26:00.0"),
        FakeXgmiLink(bdf="0000:99:00.0"),  # not one of our GPUs (hidden from this container)
        FakeXgmiLink(bdf="0000:00:00.0", bit_rate=0),  # an unset entry
    ]
    gpus = [mi300x_gpu(bdf="0000:05:00.0", xgmi_links=links), mi300x_gpu(bdf="0000:26:00.0")]
    _backend, node = open_node(make_fake_amdsmi(gpus))
    known, unknown, unset = node.topology.links_of(0)
    assert (known.remote_gpu_index, known.remote_type) == (1, "gpu")
    assert (unknown.remote_gpu_index, unknown.remote_type) == (None, None)
    assert unknown.remote_pci_bus_id == "0000:99:00.0"
    assert unset.remote_pci_bus_id is None and unset.speed_gbps is None
    assert node.topology.path(0, 1).link_type == "xgmi"


def test_pcie_only_pair():
    fake = pcie_pair()
    backend, node = open_node(fake)
    (path,) = node.topology.paths
    assert (path.a, path.b, path.link_type, path.hops, path.weight) == (0, 1, "pcie", 2, 72)
    assert path.p2p_read is True and path.p2p_write is True
    assert path.pcie_level == "SYS"  # NUMA 0 and 1
    assert node.topology.links == ()
    assert [loc.numa_node for loc in node.topology.locality] == [0, 1]
    # No XGMI: links is () on slow reads (not None), and asked only once.
    for tick in range(3):
        for sample in backend.read_gpus(T0 + tick, slow=True):
            assert sample.links == ()
            assert sample.nvlink_rx_bytes_per_s is None
    assert fake.gpu_calls["amdsmi_get_link_metrics", 0] == 1
    assert fake.gpu_calls["amdsmi_get_gpu_xgmi_link_status", 0] == 1


def test_pcie_pair_without_p2p():
    fake = pcie_pair(pairs={(0, 1): FakePair(p2p=False)})
    _backend, node = open_node(fake)
    (path,) = node.topology.paths
    assert path.p2p_read is False and path.p2p_write is False


def test_single_gpu_has_no_paths():
    _backend, node = open_node(make_fake_amdsmi([mi210_gpu()]))
    assert node.topology.paths == ()
    assert node.topology.links == ()
    assert [(loc.gpu_index, loc.numa_node) for loc in node.topology.locality] == [(0, 0)]


def test_numa_minus_one_is_unknown():
    fake = pcie_pair()
    for gpu in fake.gpus:
        gpu.numa_node = -1  # no NUMA: the c_uint32 comes back as 0xFFFFFFFF
    _backend, node = open_node(fake)
    assert [loc.numa_node for loc in node.topology.locality] == [None, None]
    assert node.topology.paths[0].pcie_level is None


def test_topology_calls_unsupported_give_none_never_an_error():
    unsupported = set(TOPOLOGY_CALLS) | {"amdsmi_get_link_metrics"}
    fake = mi300x_node(count=2)
    for gpu in fake.gpus:
        gpu.unsupported |= unsupported
    backend, node = open_node(fake)
    (path,) = node.topology.paths
    assert (path.link_type, path.hops, path.weight, path.p2p_read) == (None, None, None, None)
    assert node.topology.links == ()
    assert [loc.numa_node for loc in node.topology.locality] == [None, None]
    # link status still answers: up/down without rates
    sample = backend.read_gpus(T0, slow=True)[0]
    assert [link.up for link in sample.links] == [True]
    assert sample.links[0].rx_bytes_per_s is None


def test_topology_from_an_amdsmi_without_the_calls():
    missing = (*TOPOLOGY_CALLS, "amdsmi_get_gpu_xgmi_link_status", "amdsmi_get_link_metrics")
    fake = mi300x_node(count=2, missing=missing)
    backend, node = open_node(fake)
    assert len(node.topology.paths) == 1 and node.topology.paths[0].link_type is None
    assert [sample.links for sample in backend.read_gpus(T0, slow=True)] == [(), ()]


def test_gpu_lost_during_topology_discovery_still_opens():
    fake = mi300x_node(count=2)
    fake.gpus[1].lost = True
    backend, node = open_node(fake)
    (path,) = node.topology.paths
    assert path.link_type is None
    assert node.topology.locality[1].numa_node is None
    lost = backend.read_gpus(T0, slow=True)[1]
    assert lost.lost


@pytest.mark.parametrize(
    ("bit_rate", "max_bandwidth", "lanes", "gbps"),
    [
        (32, 512, 16, 512.0),  # MI300X: 16 lanes x 32 Gb/s
        (32, 16, 16, 512.0),
        (32, 512, None, 512.0),  # no lane count: amdsmi 7's max_bandwidth is the link's Gb/s
        (32, 16, None, 512.0),  # older amdsmi put the link width there
        (25, 16, None, 400.0),  # MI250X: x16 at 25 Gb/s
        (16, 16, None, 256.0),
        ("N/A", 512, None, 512.0),
        ("N/A", 16, None, None),
        (0, 16, 16, None),  # an unset entry
        (32, 0, None, None),
        (32, "N/A", None, None),
    ],
)
def test_xgmi_link_speed_is_the_whole_link(bit_rate, max_bandwidth, lanes, gbps):
    assert xgmi_link_gbps(bit_rate, max_bandwidth, lanes) == gbps


@pytest.mark.parametrize(
    ("lanes", "max_bandwidth", "gbps"),
    [(16, 512, 512.0), (None, 512, 512.0), (None, 16, 512.0), (112, 16, 512.0)],
)
def test_mi300x_link_speed_from_the_lane_count_or_max_bandwidth(lanes, max_bandwidth, gbps):
    fake = mi300x_node(count=2)
    for gpu in fake.gpus:
        gpu.xgmi_lanes = lanes  # None: amdsmi_get_xgmi_info answers NOT_SUPPORTED
        for link in gpu.xgmi_links:
            link.max_bandwidth = max_bandwidth
    _backend, node = open_node(fake)
    assert {link.speed_gbps for link in node.topology.links} == {gbps}


def test_xgmi_info_is_read_once_and_only_where_there_are_links():
    fake = make_fake_amdsmi([mi300x_gpu(bdf="0000:05:00.0"), mi210_gpu(bdf="0000:83:00.0")])
    backend, _node = open_node(fake)
    for tick in range(3):
        backend.read_gpus(T0 + tick, slow=True)
    assert fake.gpu_calls["amdsmi_get_xgmi_info", 0] == 1
    assert fake.gpu_calls["amdsmi_get_xgmi_info", 1] == 0


def test_numa_node_comes_from_the_pci_devices_sysfs(monkeypatch, tmp_path):
    for bdf, node in (("0000:05:00.0", "1"), ("0000:26:00.0", "-1")):
        device = tmp_path / bdf
        device.mkdir()
        (device / "numa_node").write_text(node + "\n")
    monkeypatch.setattr("gputui.core.pci.SYSFS_PCI_DEVICES", tmp_path)
    fake = mi300x_node(count=3)  # amdsmi says 0, 0, 1
    _backend, node = open_node(fake)
    # sysfs 1 wins; -1 (unknown) there leaves amdsmi's answer; no sysfs entry: amdsmi's.
    assert [loc.numa_node for loc in node.topology.locality] == [1, 0, 1]


def test_topology_unlisted_pair_with_link_type_zero_is_unknown():
    fake = pcie_pair(pairs={(0, 1): FakePair(link_type=0, hops=0, weight=0)})
    _backend, node = open_node(fake)
    assert node.topology.paths[0].link_type is None  # 0: INTERNAL (7.x) / UNDEFINED (6.x)


# ------------------------------------------------------------------------------- link samples


def test_link_status_up_and_down():
    fake = mi300x_node(count=3)
    fake.gpus[0].link_status = ["U", "D"]
    fake.gpus[1].link_status = ["X", "U"]
    backend, _node = open_node(fake)
    first, second, third = backend.read_gpus(T0, slow=True)
    assert [(link.link, link.up) for link in first.links] == [(0, True), (1, False)]
    assert [link.up for link in second.links] == [None, True]  # disabled is not "down"
    assert [link.up for link in third.links] == [True, True]
    for sample in (first, second, third):
        for link in sample.links:
            # amdsmi has no per-link error counters
            assert (link.replay_errors, link.recovery_errors, link.crc_errors) == (None,) * 3


def test_link_goes_down_between_reads():
    fake = mi300x_node(count=2)
    backend, _node = open_node(fake)
    assert [link.up for link in backend.read_gpus(T0, slow=True)[0].links] == [True]
    fake.gpus[0].link_status = ["D"]
    assert [link.up for link in backend.read_gpus(T0 + 1, slow=True)[0].links] == [False]


def test_per_link_rates_from_counter_deltas():
    fake = mi300x_node(count=3)
    a, b = fake.gpus[0].xgmi_links
    a.read, a.write, b.read, b.write = 1000, 2000, 5000, 5000
    backend, _node = open_node(fake)
    first = backend.read_gpus(T0, slow=True)[0]
    assert [(s.rx_bytes_per_s, s.tx_bytes_per_s) for s in first.links] == [(None, None)] * 2
    a.read += 4000  # KB received over link 0
    a.write += 2000
    b.write += 1000
    second = backend.read_gpus(T0 + 2, slow=True)[0]
    assert second.links == (
        LinkSample(link=0, up=True, rx_bytes_per_s=4000 * 1024 / 2, tx_bytes_per_s=2000 * 1024 / 2),
        LinkSample(link=1, up=True, rx_bytes_per_s=0.0, tx_bytes_per_s=1000 * 1024 / 2),
    )
    # the per-link rates add up to the aggregate
    assert second.nvlink_rx_bytes_per_s == pytest.approx(4000 * 1024 / 2)
    assert second.nvlink_tx_bytes_per_s == pytest.approx(3000 * 1024 / 2)


def test_per_link_counter_reset_gives_none_for_that_link_only():
    fake = mi300x_node(count=3)
    a, b = fake.gpus[0].xgmi_links
    a.read = b.read = 5000
    backend, _node = open_node(fake)
    backend.read_gpus(T0, slow=True)
    a.read = 10
    b.read += 100
    sample = backend.read_gpus(T0 + 1, slow=True)[0]
    assert sample.links[0].rx_bytes_per_s is None
    assert sample.links[1].rx_bytes_per_s == 100 * 1024


def test_per_link_samples_sliced_to_num_links():
    fake = mi300x_node()
    fake.gpus[0].num_links = 3
    backend, node = open_node(fake)
    assert len(node.topology.links_of(0)) == 3
    assert [link.link for link in backend.read_gpus(T0, slow=True)[0].links] == [0, 1, 2]


def test_links_only_on_slow_reads_and_calls_stay_static():
    fake = mi300x_node()
    backend, _node = open_node(fake)
    at_open = fake.calls.copy()
    for sample in backend.read_gpus(T0, slow=False):
        assert sample.links is None
    assert fake.calls["amdsmi_get_gpu_xgmi_link_status"] == 0
    assert fake.calls["amdsmi_get_link_metrics"] == at_open["amdsmi_get_link_metrics"] == 8
    for tick in range(1, 4):
        for sample in backend.read_gpus(T0 + tick, slow=True):
            assert len(sample.links) == 7
    # one link-metrics and one link-status read per GPU per slow tick; topology never again
    assert fake.calls["amdsmi_get_link_metrics"] == 8 + 3 * 8
    assert fake.calls["amdsmi_get_gpu_xgmi_link_status"] == 3 * 8
    for fn in TOPOLOGY_CALLS:
        assert fake.calls[fn] == at_open[fn], fn
    assert backend.open() is _node  # open() again is the cached node


def test_unsupported_link_calls_are_asked_once():
    fake = mi300x_node(count=2)
    for gpu in fake.gpus:
        gpu.unsupported |= {"amdsmi_get_link_metrics", "amdsmi_get_gpu_xgmi_link_status"}
    backend, _node = open_node(fake)
    for tick in range(4):
        for sample in backend.read_gpus(T0 + tick, slow=True):
            assert sample.links == ()
            assert sample.nvlink_rx_bytes_per_s is None
    assert fake.gpu_calls["amdsmi_get_link_metrics", 0] == 1
    assert fake.gpu_calls["amdsmi_get_gpu_xgmi_link_status", 0] == 1


def test_link_calls_busy_give_none_this_tick_only():
    fake = mi300x_node(count=2)
    fake.gpus[0].retry = {"amdsmi_get_link_metrics": 1, "amdsmi_get_gpu_xgmi_link_status": 1}
    backend, _node = open_node(fake)  # open() takes the link-metrics retry: no links discovered
    fake.gpus[0].retry = {"amdsmi_get_link_metrics": 1, "amdsmi_get_gpu_xgmi_link_status": 1}
    busy = backend.read_gpus(T0, slow=True)[0]
    assert busy.links is None  # not read: the sampler keeps the previous reading
    again = backend.read_gpus(T0 + 1, slow=True)[0]
    assert [link.up for link in again.links] == [True]


def test_link_of_a_lost_gpu_and_its_return():
    fake = mi300x_node(count=2)
    link = fake.gpus[0].xgmi_links[0]
    backend, _node = open_node(fake)
    backend.read_gpus(T0, slow=True)
    fake.gpus[0].lost = True
    assert backend.read_gpus(T0 + 1, slow=True)[0].lost
    fake.gpus[0].lost = False
    link.read += 1000
    back = backend.read_gpus(T0 + 2, slow=True)[0]
    assert back.links[0].rx_bytes_per_s is None  # no bogus rate across the gap


# ------------------------------------------------------------------------------- cpu affinity


def test_pci_sysfs_name_normalises_bus_ids():
    assert pci_sysfs_name("00000000:C1:00.0") == "0000:c1:00.0"
    assert pci_sysfs_name("0000:c1:00.0") == "0000:c1:00.0"
    assert pci_sysfs_name("03:00.0") == "0000:03:00.0"
    assert pci_sysfs_name("N/A") is None
    assert pci_sysfs_name(None) is None
    assert pci_sysfs_name("0000:zz:00.0") is None


def test_local_cpulist_reads_sysfs(tmp_path):
    device = tmp_path / "0000:c1:00.0"
    device.mkdir()
    (device / "local_cpulist").write_text("0-55,112-167\n")
    assert local_cpulist("00000000:C1:00.0", root=tmp_path) == "0-55,112-167"
    assert local_cpulist("0000:03:00.0", root=tmp_path) is None
    assert local_cpulist(None, root=tmp_path) is None


def test_cpu_affinity_from_sysfs(monkeypatch, tmp_path):
    device = tmp_path / "0000:05:00.0"
    device.mkdir()
    (device / "local_cpulist").write_text("0-47\n")
    monkeypatch.setattr("gputui.core.pci.SYSFS_PCI_DEVICES", tmp_path)
    _backend, node = open_node(mi300x_node(count=2))
    assert [loc.cpu_affinity for loc in node.topology.locality] == ["0-47", None]


# -------------------------------------------------------------------------------- processes


def test_process_gfx_percent_from_engine_ns():
    busy = FakeAmdProcess(pid=4242, name="python3", vram_mem=3 * GiB, gfx_ns=1_000_000_000)
    anonymous = FakeAmdProcess(pid=5151, vram_mem=GiB)  # name unreadable -> "N/A"
    gpu = mi210_gpu(processes=[busy, anonymous])
    _fake, backend, _node = opened(gpu)

    first = {p.pid: p for p in backend.read_processes(T0)}
    assert first[4242].sm_pct is None  # first sight
    assert first[4242].gpu_memory_bytes == 3 * GiB
    assert first[4242].name == "python3"
    assert first[4242].type == "compute"
    assert first[4242].gpu_index == 0
    assert first[5151].name is None
    assert first[4242].user is None and first[4242].command is None

    busy.gfx_ns += 500_000_000  # 0.5 s of GFX time in 2 s of wall time
    second = {p.pid: p for p in backend.read_processes(T0 + 2)}
    assert second[4242].sm_pct == pytest.approx(25.0)
    assert second[5151].sm_pct == 0.0

    busy.gfx_ns += 8_000_000_000  # more than the wall time (several XCDs): clamped
    third = {p.pid: p for p in backend.read_processes(T0 + 3)}
    assert third[4242].sm_pct == 100.0

    gpu.processes = [anonymous]
    backend.read_processes(T0 + 4)
    gpu.processes = [busy]  # the same PID again later: no stale baseline
    assert backend.read_processes(T0 + 5)[0].sm_pct is None


def test_process_list_not_supported_is_empty():
    fake, backend, _node = opened(mi210_gpu(unsupported={"amdsmi_get_gpu_process_list"}))
    assert backend.read_processes(T0) == []
    assert backend.read_processes(T0 + 1) == []
    assert fake.calls["amdsmi_get_gpu_process_list"] == 1


def test_reopen_forgets_the_previous_session():
    fake, backend, _node = opened(mi210_gpu())
    backend.read_gpus(T0, slow=False)
    assert fake.gpu_calls["amdsmi_get_gpu_fan_speed", 0] == 1
    backend.close()
    fake.gpus[0] = w7900_gpu()  # another GPU now sits at index 0
    backend.open()
    (sample,) = backend.read_gpus(T0 + 1, slow=False)
    assert sample.fan_pct == pytest.approx(40.0)
