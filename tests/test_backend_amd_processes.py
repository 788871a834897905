"""AMD process lists as ROCm had them before its fix (rocm-systems PR #8396): every process under
every GPU, and an empty list for a caller without root. Against the fake ``amdsmi``."""

from __future__ import annotations

import pytest
from tests.fakes.clock import FakeClock
from tests.fakes.fake_amdsmi import FakeAmdProcess, GiB, MiB, make_fake_amdsmi, mi210_gpu

from gputui.backends.amd import AmdSmiBackend
from gputui.core.model import GpuSample, NodeInfo, Snapshot
from gputui.engine.sampler import Sampler
from gputui.health import HealthConfig, HealthMonitor

T0 = 1_700_000_000.0
BDFS = ("0000:03:00.0", "0000:43:00.0", "0000:83:00.0")


@pytest.fixture(autouse=True)
def _no_host_sysfs(monkeypatch, tmp_path):
    monkeypatch.setattr("gputui.core.pci.SYSFS_PCI_DEVICES", tmp_path / "no-sysfs")


def node_of(*processes: list[FakeAmdProcess], **knobs):
    gpus = [
        mi210_gpu(bdf=bdf, processes=procs) for bdf, procs in zip(BDFS, processes, strict=False)
    ]
    return make_fake_amdsmi(gpus, **knobs)


def rows(backend, now):
    return sorted((p.gpu_index, p.pid) for p in backend.read_processes(now))


def not_root(monkeypatch, root: bool = False):
    monkeypatch.setattr("gputui.backends.amd.processes.caller_is_root", lambda: root)


def test_a_process_listed_under_every_gpu_shows_only_where_it_holds_vram():
    train = FakeAmdProcess(pid=10, name="train", vram_mem=20 * GiB, gfx_ns=5_000_000_000)
    serve = FakeAmdProcess(pid=20, name="serve", vram_mem=4 * GiB)
    fake = node_of([train], [serve], [], duplicate_processes=True)
    backend = AmdSmiBackend(fake)
    backend.open()
    listed = fake.amdsmi_get_gpu_process_list(backend._calls.handles[2])
    assert sorted(entry["pid"] for entry in listed) == [10, 20]  # the fake lists both everywhere
    assert rows(backend, T0) == [(0, 10), (1, 20)]
    train.gfx_ns += 1_000_000_000
    second = backend.read_processes(T0 + 2)
    assert sorted((p.gpu_index, p.pid) for p in second) == [(0, 10), (1, 20)]
    assert {p.pid: p.sm_pct for p in second} == {10: pytest.approx(50.0), 20: 0.0}


def test_a_process_without_vram_shows_once_its_engine_time_grows():
    # Memory in GTT only (no VRAM): judged by its GFX engine time on this GPU.
    gtt = FakeAmdProcess(pid=30, name="apu-job", vram_mem=0, gtt_mem=GiB, gfx_ns=1_000)
    fake = node_of([gtt], [], duplicate_processes=True)
    backend = AmdSmiBackend(fake)
    backend.open()
    assert rows(backend, T0) == []  # first sight: no growth to judge by yet
    gtt.gfx_ns += 500_000_000
    assert rows(backend, T0 + 1) == [(0, 30)]
    assert rows(backend, T0 + 2) == []  # idle again and holding no VRAM here


def test_empty_list_for_a_caller_without_root_while_vram_is_used(monkeypatch):
    not_root(monkeypatch)
    theirs = FakeAmdProcess(pid=40, name="their-job", vram_mem=10 * GiB)
    fake = node_of([theirs], [], caller_root=False, hide_other_users=True)
    fake.gpus[1].vram_used_bytes = 300 * MiB  # idle: what the driver holds itself
    backend = AmdSmiBackend(fake)
    backend.open()
    busy, idle = backend.read_gpus(T0, slow=True)
    assert backend.read_processes(T0) == []
    assert busy.process_list_incomplete is True
    assert idle.process_list_incomplete is False
    assert fake.calls["amdsmi_get_gpu_process_list"] == 2  # read once, with the slow tier
    fast, _ = backend.read_gpus(T0 + 1, slow=False)
    assert fast.process_list_incomplete is None  # not read: the sampler carries the last one

    # The caller's own process shows: the list is not empty, nothing to say.
    fake.gpus[0].processes.append(FakeAmdProcess(pid=41, name="mine", vram_mem=GiB, mine=True))
    busy, _ = backend.read_gpus(T0 + 2, slow=True)
    assert busy.process_list_incomplete is False
    assert rows(backend, T0 + 2) == [(0, 41)]


def test_root_sees_every_process_and_an_empty_list_means_none(monkeypatch):
    not_root(monkeypatch, root=True)
    fake = node_of([], caller_root=True, hide_other_users=True)
    backend = AmdSmiBackend(fake)
    backend.open()
    (sample,) = backend.read_gpus(T0, slow=True)
    assert sample.process_list_incomplete is False


def test_incomplete_list_is_an_info_finding_carried_between_slow_reads(monkeypatch):
    not_root(monkeypatch)
    fake = node_of([FakeAmdProcess(pid=40, vram_mem=10 * GiB)], caller_root=False)
    fake.hide_other_users = True
    clock = FakeClock(T0)
    sampler = Sampler(
        AmdSmiBackend(fake),
        clock=clock,
        slow_interval=5.0,
        health=HealthMonitor(HealthConfig(current_user="me")),
    )
    sampler.open()
    for _tick in range(3):  # one slow read, then fast ones
        snapshot = sampler.poll()
        assert snapshot.gpus[0].process_list_incomplete is True
        (finding,) = [f for f in snapshot.findings if f.rule == "process_list"]
        clock.now += 1.0
    assert finding.severity == "info" and finding.gpu_index == 0
    assert finding.message == (
        "GPU 0: the process list may be incomplete (no permission to list other users' processes)"
    )
    assert "root" in finding.hint


def test_process_list_rule_judges_only_the_flag():
    node = NodeInfo(hostname="n", backend="AMD-SMI", gpus=())
    gpus = (
        GpuSample(index=0, timestamp=T0, process_list_incomplete=True),
        GpuSample(index=1, timestamp=T0, process_list_incomplete=False),
        GpuSample(index=2, timestamp=T0),
        GpuSample(index=3, timestamp=T0, process_list_incomplete=True, lost=True),
    )
    findings = HealthMonitor(HealthConfig(current_user="me")).update(
        Snapshot(timestamp=T0, node=node, gpus=gpus)
    )
    assert [f.gpu_index for f in findings if f.rule == "process_list"] == [0]
