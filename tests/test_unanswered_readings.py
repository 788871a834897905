"""A GPU none of whose readings of what it is doing answered (utilization, memory and the process
list all failing with NVML_ERROR_UNKNOWN or the like after the open) is neither healthy nor idle:
rule ``no_readings`` through NVML and AMD-SMI, ``check``, the dashboard and a recording. A reading
the GPU does not support is no failure, and a GPU whose other readings answer is judged on them."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from tests.factories import run, sample, snap
from tests.fakes.checks import check_json, findings_of
from tests.fakes.fake_amdsmi import STATUS, make_fake_amdsmi, mi210_gpu
from tests.fakes.fake_pynvml import (
    PROCESS_SYMBOLS,
    FakeGpu,
    GiB,
    NVMLError,
    NVMLError_Timeout,
    NVMLError_Unknown,
    make_fake_nvml,
)

from gputui.backends.amd import AmdSmiBackend
from gputui.backends.nvml import NvmlBackend
from gputui.core.codec import decode, encode
from gputui.core.model import GpuSample, ProcessSample, Snapshot
from gputui.engine.sampler import Sampler
from gputui.health import HealthConfig, HealthMonitor
from gputui.health.rollup import gpu_status, node_summary

T0 = 1_700_000_000.0
READS = ("nvmlDeviceGetUtilizationRates", "nvmlDeviceGetMemoryInfo", *sorted(PROCESS_SYMBOLS))


def failing(error: type[NVMLError] = NVMLError_Unknown, **changes: Any) -> FakeGpu:
    """A GPU that opened, whose utilization, memory and process-list calls now raise ``error``
    while its other calls (power, temperature, clocks ...) answer."""
    return FakeGpu(errors=dict.fromkeys(READS, error), **changes)


def no_readings(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return findings_of(doc, "no_readings")


# -- check -------------------------------------------------------------------------------------


def test_check_fails_a_gpu_none_of_whose_readings_answered() -> None:
    code, doc = check_json(make_fake_nvml([failing(), FakeGpu()]))
    assert code == 2 and doc["verdict"] == "failed"
    (f,) = no_readings(doc)
    assert f["severity"] == "fail" and f["gpu_index"] == 0
    why = "utilization, memory, processes: Unknown Error"
    assert f["message"] == f"GPU 0: no reading answered ({why})"
    assert "nvidia-smi -r -i 0" in f["hint"] and "dmesg" in f["hint"]


def test_any_error_counts_not_only_unknown() -> None:
    code, doc = check_json(make_fake_nvml([failing(NVMLError_Timeout)]))
    assert code == 2
    (f,) = no_readings(doc)
    assert f["message"] == "GPU 0: no reading answered (utilization, memory, processes: Timeout)"


def test_readings_the_gpu_does_not_support_are_no_failure() -> None:
    """NotSupported for all three (a GPU that simply cannot say) is not a failed reading."""
    unsupported = FakeGpu(unsupported=set(READS))
    code, doc = check_json(make_fake_nvml([unsupported]))
    assert code == 0, doc["findings"]
    assert no_readings(doc) == []
    # one unsupported, the others failing: only the failures are named
    mixed = failing()
    mixed.errors.pop("nvmlDeviceGetUtilizationRates")
    mixed.unsupported = {"nvmlDeviceGetUtilizationRates"}
    code, doc = check_json(make_fake_nvml([mixed]))
    assert code == 2
    (f,) = no_readings(doc)
    assert f["message"] == "GPU 0: no reading answered (memory, processes: Unknown Error)"


def test_a_gpu_whose_memory_answers_is_judged_on_it() -> None:
    """Utilization and the process list fail; memory answers 40 GiB in use: no "no reading"
    finding, and --require-idle judges the memory."""
    gpu = failing(memory_used=40 * GiB)
    del gpu.errors["nvmlDeviceGetMemoryInfo"]
    code, doc = check_json(make_fake_nvml([gpu]))
    assert code == 0 and no_readings(doc) == []
    code, doc = check_json(make_fake_nvml([gpu]), require_idle=True)
    assert code == 2
    (f,) = findings_of(doc, "other_processes")
    assert "40.0 GiB in use by processes not visible here" in f["message"]


# -- the rule, on readings -----------------------------------------------------------------------


def test_rule_no_readings_trigger_and_near_misses() -> None:
    dark = sample(
        utilization_gpu_pct=None,
        memory_used_bytes=None,
        memory_free_bytes=None,
        unanswered=(("utilization", "Unknown Error"), ("memory", "Timeout")),
    )
    (f,) = run("no_readings", snap((dark,)))
    assert f.message == "GPU 0: no reading answered (utilization: Unknown Error; memory: Timeout)"
    # near misses: a reading that answered; a process list that lists someone; nothing failed
    assert run("no_readings", snap((dataclasses.replace(dark, utilization_gpu_pct=0.0),))) == []
    listed = ProcessSample(pid=7, gpu_index=0, gpu_memory_bytes=GiB)
    assert run("no_readings", snap((dark,), processes=(listed,))) == []
    assert run("no_readings", snap((dataclasses.replace(dark, unanswered=()),))) == []


# -- AMD ---------------------------------------------------------------------------------------


@pytest.fixture
def _no_host_sysfs(monkeypatch, tmp_path):
    """The fake's BDFs may exist on the test machine: never read its real sysfs."""
    monkeypatch.setattr("gputui.core.pci.SYSFS_PCI_DEVICES", tmp_path / "no-sysfs")


AMD_READS = (
    "amdsmi_get_gpu_activity",
    "amdsmi_get_gpu_memory_usage",
    "amdsmi_get_gpu_vram_usage",
    "amdsmi_get_gpu_process_list",
)


def amd_findings(status: str) -> list[Any]:
    gpu = mi210_gpu()
    backend = AmdSmiBackend(make_fake_amdsmi([gpu]))
    backend.open()
    gpu.errors = dict.fromkeys(AMD_READS, STATUS[status])  # after the open, as with NVML
    sampler = Sampler(backend, health=HealthMonitor(HealthConfig(current_user="me"), env={}))
    try:
        return [f for f in sampler.poll().findings if f.rule == "no_readings"]
    finally:
        sampler.close()


@pytest.mark.usefixtures("_no_host_sysfs")
def test_amd_gpu_none_of_whose_readings_answered_fails_the_same_rule() -> None:
    (f,) = amd_findings("UNKNOWN_ERROR")
    assert f.severity == "fail" and f.gpu_index == 0
    assert f.message.startswith("GPU 0: no reading answered (utilization, memory, processes: ")
    assert "UNKNOWN_ERROR" in f.message and "amd-smi reset -G -g 0" in f.hint
    assert amd_findings("NOT_SUPPORTED") == []


# -- the dashboard, and a recording ------------------------------------------------------------


def nvml_sampler(*gpus: FakeGpu) -> Sampler:
    health = HealthMonitor(HealthConfig(current_user="me"), env={})
    return Sampler(NvmlBackend(make_fake_nvml(list(gpus))), health=health, clock=lambda: T0)


async def test_the_dashboard_does_not_call_it_healthy() -> None:
    from gputui.tui.app import GpuTuiApp

    sampler = nvml_sampler(failing())
    sampler.poll()
    app = GpuTuiApp(sampler)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.2)
        title = app.dashboard.title_bar.plain_lines[0]
        assert "healthy" not in title and "1 failure" in title
        assert app.dashboard.panels[0].health == "fail"
        await pilot.press("q")
    sampler.close()


def test_fast_readings_keep_the_process_lists_failure() -> None:
    """The process list is read on the slow tier: readings between keep its failure as they
    keep the list, so the finding does not come and go."""
    sampler = nvml_sampler(failing())
    sampler.slow_interval = 3600.0
    try:
        slow, fast = sampler.poll(), sampler.poll()
    finally:
        sampler.close()
    for snapshot in (slow, fast):
        (gpu,) = snapshot.gpus
        assert ("processes", "Unknown Error") in gpu.unanswered
        assert node_summary(snapshot.findings)[1] == "fail"
        assert gpu_status(snapshot.findings, 0) == "fail"


def test_unanswered_readings_survive_the_recording_codec() -> None:
    sampler = nvml_sampler(failing())
    try:
        snapshot = sampler.poll()
    finally:
        sampler.close()
    (gpu,) = snapshot.gpus
    assert gpu.unanswered
    assert decode(GpuSample, encode(gpu, omit_defaults=True)) == gpu
    again = decode(Snapshot, encode(snapshot, omit_defaults=True))
    assert again.gpus == snapshot.gpus
