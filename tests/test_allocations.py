"""Allocated but idle: a scheduler's grants joined with the readings (which GPU each names, its
state, its idle time and cost), the ``allocated_idle`` rule, and the sampler that asks the
schedulers in the background."""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path

import pytest
from tests.factories import GIB, T, info, kubelet_checkpoint, proc, run, sample, scrape, snap
from tests.fakes.clock import fake_clock_sampler
from tests.fakes.schedulers import FixedSchedulers, slurm_job

from gputui.core.allocation import (
    Allocation,
    Grant,
    SchedulerReading,
    SchedulerStatus,
    device_text,
    owner_text,
)
from gputui.core.allocation_meter import AllocationMeter, locate
from gputui.core.codec import snapshot_from_dict, snapshot_to_dict
from gputui.core.model import MigDeviceInfo, MigSample, NodeInfo, Usage
from gputui.health import HealthConfig
from gputui.host.allocations import AllocationReader, Answer, KubeletSource

OK = (SchedulerStatus("slurm", "ok", answered_at=T),)


def node(*infos, inaccessible: tuple[int, ...] = ()) -> NodeInfo:
    return NodeInfo("n", "nvml", infos, inaccessible_gpus=inaccessible)


def job(minor: int, job_id: str = "4242", **kw) -> Grant:
    return Grant("slurm", f"IDX {minor}", minor=minor, job_id=job_id, **kw)


def reading(*grants: Grant, statuses=OK) -> SchedulerReading:
    return SchedulerReading(statuses, grants)


# -- which GPU a grant names ---------------------------------------------------------------------


def test_slurm_index_is_matched_by_minor_number_not_by_nvml_index() -> None:
    """NVML index 0 is /dev/nvidia2 here: IDX 2 is GPU 0, IDX 0 is GPU 2."""
    n = node(info(0, minor_number=2), info(1, minor_number=1), info(2, minor_number=0))
    assert locate(job(2), n).gpu_index == 0
    assert locate(job(0), n).gpu_index == 2
    missing = locate(job(3), n)
    assert missing.gpu_index is None and missing.unmatched == "no GPU with minor number 3"


def test_an_index_is_never_matched_where_minors_are_unknown() -> None:
    n = node(info(0), info(1))  # no minor numbers (AMD, or the driver does not say)
    found = locate(job(1), n)
    assert found.gpu_index is None
    assert found.unmatched == (
        "no GPU with minor number 1 (this driver does not report minor numbers)"
    )
    hidden = locate(job(5), node(info(0, minor_number=0), inaccessible=(1,)))
    assert hidden.unmatched == "no GPU with minor number 5 among those this user may open"


def test_kubelet_ids_match_gpu_and_mig_uuids_replicas_and_bus_ids() -> None:
    mig = MigDeviceInfo(1, 1, 0, "MIG-aaaa-bbbb")
    n = node(info(0, uuid="GPU-0abc"), info(1, uuid="GPU-1def", mig_devices=(mig,)))

    def where(device: str) -> tuple[int | None, str | None]:
        found = locate(Grant("kubernetes", device, device_id=device), n)
        return found.gpu_index, found.mig_uuid

    assert where("GPU-1DEF") == (1, None)  # case does not matter
    assert where("GPU-0abc::3") == (0, None)  # a time-sliced replica of GPU 0
    assert where("MIG-aaaa-bbbb") == (1, "MIG-aaaa-bbbb")
    assert where("0000:19:00.0") == (1, None)  # AMD's plugin: the PCI bus id (NVML's is 8-digit)
    assert where("GPU-0abc::x") == (None, None)  # not a replica suffix: another id


# -- states, idle time and cost -------------------------------------------------------------------


def test_states_follow_processes_memory_and_utilization() -> None:
    """GPU 0: nothing on it; 1: a process, busy; 2: a process, idle (held idle once it has been
    for idle_after_s); 3: not allocated; IDX 9: not on this node."""
    meter = AllocationMeter(idle_after_s=30.0)
    n = node(*(info(i, minor_number=i) for i in range(4)))
    gpus = [
        sample(0, utilization_gpu_pct=0.0, memory_used_bytes=0),
        sample(1, utilization_gpu_pct=80.0, memory_used_bytes=30 * GIB),
        sample(2, utilization_gpu_pct=0.0, memory_used_bytes=30 * GIB),
        sample(3, utilization_gpu_pct=0.0),
    ]
    procs = [proc(1, gpu=1), proc(2, gpu=2)]
    grants = reading(job(0), job(1), job(2), job(9, "77"))

    def states(at: float) -> dict[int | None, str]:
        out = meter.update(at, n, gpus, procs, grants)
        return {a.gpu_index if a.gpu_index is not None else -1: a.state for a in out}

    assert states(T) == {0: "no_process", 1: "in_use", 2: "in_use", 3: "free", -1: "unknown"}
    assert states(T + 29) == {0: "no_process", 1: "in_use", 2: "in_use", 3: "free", -1: "unknown"}
    assert states(T + 30)[2] == "held_idle"
    gpus[2] = sample(2, utilization_gpu_pct=40.0, memory_used_bytes=30 * GIB)
    assert states(T + 31)[2] == "in_use"  # work again: the idle stretch is over
    gpus[2] = sample(2, utilization_gpu_pct=0.0, memory_used_bytes=30 * GIB)
    assert states(T + 32)[2] == "in_use"  # a new stretch starts from nothing


def test_memory_held_without_a_listed_process_is_not_no_process() -> None:
    """In another PID namespace the driver lists no process of the host: 20 GiB in use on an
    idle GPU is held, whoever holds it; a driver context's few hundred MiB is not."""
    meter = AllocationMeter(idle_after_s=0.0)
    n = node(info(0, minor_number=0), info(1, minor_number=1))
    gpus = [
        sample(0, utilization_gpu_pct=0.0, memory_used_bytes=20 * GIB),
        sample(1, utilization_gpu_pct=0.0, memory_used_bytes=GIB // 2),
    ]
    out = meter.update(T, n, gpus, [], reading(job(0), job(1)))
    assert [a.state for a in out] == ["held_idle", "no_process"]
    exited = meter.update(T + 1, n, gpus[1:], [proc(5, gpu=1, exited=True)], reading(job(1)))
    assert exited[1].state == "no_process"  # an exited process holds nothing


def test_idle_time_counts_only_idle_intervals_and_is_priced() -> None:
    meter = AllocationMeter()
    n = node(info(0, minor_number=0))
    idle = [sample(0, utilization_gpu_pct=0.0)]
    busy = [sample(0, utilization_gpu_pct=90.0, memory_used_bytes=10 * GIB)]
    grants = reading(job(0))

    def at(t: float, gpus=idle, procs=(), price: float | None = 3.0) -> Allocation:
        (a,) = meter.update(t, n, gpus, list(procs), grants, price=price, interval=60.0)
        return a

    at(T)
    at(T + 60)
    at(T + 120, busy, [proc(gpu=0)])
    a = at(T + 180)
    assert a.idle_s == 120.0  # T..T+60 and T+120..T+180; not the busy minute
    assert a.idle_since == T + 180  # the stretch that began with this reading
    assert a.idle_cost == pytest.approx(120 / 3600 * 3.0)
    assert a.first_seen == T
    assert at(T + 3600).idle_s == 300.0  # a gap counts up to 3 intervals: the rest was unseen
    assert at(T + 3660, price=None).idle_cost is None


def test_a_new_job_on_a_gpu_starts_its_own_count() -> None:
    meter = AllocationMeter()
    n = node(info(0, minor_number=0))
    idle = [sample(0, utilization_gpu_pct=0.0)]
    meter.update(T, n, idle, [], reading(job(0, "1")))
    meter.update(T + 5, n, idle, [], reading(job(0, "1")))
    (second,) = meter.update(T + 10, n, idle, [], reading(job(0, "2")))
    assert second.job_id == "2" and second.idle_s == 0.0 and second.first_seen == T + 10


def test_nothing_is_said_while_no_scheduler_answers() -> None:
    """Gone silent: no allocations, not free GPUs (nobody knows whether they are free)."""
    meter = AllocationMeter()
    n = node(info(0, minor_number=0))
    gpus = [sample(0)]
    silent = (SchedulerStatus("slurm", "unreachable", "squeue failed"),)
    assert meter.update(T, n, gpus, [], reading(statuses=silent)) == ()
    assert meter.update(T, n, gpus, [], None) == ()
    waiting = (SchedulerStatus("slurm", "waiting"),)
    assert meter.update(T, n, gpus, [], reading(statuses=waiting)) == ()
    stale = (SchedulerStatus("slurm", "stale", "timed out", T - 60),)
    (a,) = meter.update(T, n, gpus, [], reading(job(0), statuses=stale))
    assert a.job_id == "4242"  # an answer from a minute ago is still used


def test_a_mig_allocation_is_judged_by_its_instance() -> None:
    migs = (MigDeviceInfo(0, 1, 0, "MIG-a"), MigDeviceInfo(0, 2, 0, "MIG-b"))
    n = node(info(0, mig_devices=migs, mig_enabled=True))
    gpu = sample(
        0,
        utilization_gpu_pct=None,  # NVML reports none in MIG mode
        mig_devices=(MigSample("MIG-a", 5 * GIB), MigSample("MIG-b", 0)),
    )
    grants = reading(
        Grant("kubernetes", "MIG-a", device_id="MIG-a", pod_uid="p1"),
        Grant("kubernetes", "MIG-b", device_id="MIG-b", pod_uid="p2"),
    )
    out = AllocationMeter().update(T, n, [gpu], [proc(gpu=0, mig_uuid="MIG-a")], grants)
    assert [(a.mig_uuid, a.state, a.processes) for a in out] == [
        ("MIG-a", "in_use", 1),  # no utilization to judge: working, as far as anyone can tell
        ("MIG-b", "no_process", 0),
    ]


def test_a_pod_is_named_as_its_processes_show_it() -> None:
    """The kubelet's pod directory may not name the pod; the container engine's state that
    attribution reads for its processes does."""
    n = node(info(0, uuid="GPU-0"))
    grant = Grant("kubernetes", "GPU-0", device_id="GPU-0", pod_uid="u1")
    p = proc(gpu=0, k8s_pod_uid="u1", k8s_pod_name="trainer-0", k8s_namespace="ml")
    (a,) = AllocationMeter().update(T, n, [sample(0)], [p], reading(grant))
    assert (a.pod_name, a.namespace) == ("trainer-0", "ml")
    (unnamed,) = AllocationMeter().update(T, n, [sample(0)], [], reading(grant))
    assert unnamed.pod_name is None and owner_text(unnamed) == "pod u1"


def test_owner_and_device_words() -> None:
    a = Allocation(0, "no_process", "slurm", "IDX 3", job_id="4242", job_name="train", user="al")
    assert owner_text(a) == "job 4242 train (al)" and owner_text(a, short=True) == "job 4242"
    pod = Allocation(0, "no_process", "kubernetes", "GPU-1", pod_uid="0123456789", container="c")
    assert owner_text(pod) == "pod 01234567 [c]"
    named = dataclasses.replace(pod, pod_name="trainer-0", namespace="ml")
    assert owner_text(named) == "pod ml/trainer-0 [c]"
    missing = Allocation(None, "unknown", "slurm", "IDX 3", unmatched="no GPU with minor number 3")
    assert device_text(missing) == "IDX 3 (no GPU with minor number 3)"


def test_allocations_survive_the_json_round_trip() -> None:
    a = Allocation(1, "held_idle", "slurm", "IDX 1", job_id="7", idle_since=T, idle_s=5.0)
    s = dataclasses.replace(snap(), allocations=(a,), schedulers=OK)
    assert snapshot_from_dict(snapshot_to_dict(s)) == s


# -- the rule ----------------------------------------------------------------------------------


def allocated(state: str, idle_since: float | None, **kw) -> Allocation:
    base = dict(
        gpu_index=0,
        state=state,
        scheduler="slurm",
        device="IDX 0",
        job_id="4242",
        job_name="train",
        user="alice",
        idle_since=idle_since,
        started=T - 7200,
    )
    base.update(kw)
    return Allocation(**base)


def test_allocated_idle_is_info_at_once_and_warns_after_the_configured_time() -> None:
    config = HealthConfig(current_user="me", allocated_idle_minutes=10)
    fresh = dataclasses.replace(snap(), allocations=(allocated("no_process", T),))
    (info_finding,) = run("allocated_idle", fresh, config)
    assert info_finding.severity == "info" and info_finding.action == "none"
    assert "GPU 0: allocated, no process for 0s: job 4242 train (alice)" in info_finding.message
    assert "allocated since" in info_finding.message and "(2h" in info_finding.message
    assert "scancel 4242" in info_finding.hint and "alice" in info_finding.hint
    usage = Usage(since=T, gpu_hour_price=2.0)
    long = dataclasses.replace(
        snap(),
        allocations=(allocated("held_idle", T - 601, idle_cost=0.33),),
        usage=usage,
    )
    (warn,) = run("allocated_idle", long, config)
    assert warn.severity == "warn" and warn.action == "none"
    assert "memory held, no work for 10m" in warn.message
    assert warn.message.endswith("idle cost 0.33 at 2.00 per GPU-hour")


def test_allocated_idle_leaves_out_working_free_and_unjudged_gpus() -> None:
    allocations = (
        allocated("in_use", None),
        Allocation(1, "free"),
        allocated("no_process", T, gpu_index=2),
        allocated("unknown", None, gpu_index=None, unmatched="no GPU with minor number 9"),
    )
    s = dataclasses.replace(snap(), allocations=allocations)
    assert [f.gpu_index for f in run("allocated_idle", s)] == [2]
    only_0 = HealthConfig(current_user="me", gpus=frozenset({0}))
    assert run("allocated_idle", s, only_0) == []
    pod = Allocation(
        3, "no_process", "kubernetes", "GPU-3", pod_uid="u1", pod_name="p", namespace="ml"
    )
    (finding,) = run("allocated_idle", dataclasses.replace(snap(), allocations=(pod,)))
    assert "kubectl delete pod -n ml p" in finding.hint and finding.key == "allocated_idle:3:pod:u1"


# -- the sampler asks in the background -----------------------------------------------------------


class SlowSource:
    """A scheduler that answers only when the test lets it."""

    scheduler = "slurm"

    def __init__(self, grants: tuple[Grant, ...]) -> None:
        self.release = threading.Event()
        self.grants = grants
        self.asked = 0

    def ask(self) -> Answer:
        self.asked += 1
        self.release.wait(10)
        return Answer(self.grants, "1 job", "n")

    def close(self) -> None:
        self.release.set()


def test_a_slow_scheduler_never_holds_up_a_reading() -> None:
    source = SlowSource((Grant("slurm", "IDX 0", minor=0, job_id="9"),))
    reader = AllocationReader([source], refresh_s=60)
    sampler = fake_clock_sampler("dgx-h100", polls=0)
    sampler.allocations = reader
    try:
        started = time.monotonic()
        first = sampler.poll()
        assert time.monotonic() - started < 5  # the reading did not wait for the scheduler
        assert first.allocations == ()
        assert [s.state for s in first.schedulers] == ["waiting"]
        source.release.set()
        assert sampler.wait_for_schedulers(10)
        second = sampler.poll()
        assert [s.state for s in second.schedulers] == ["ok"]
        (held,) = [a for a in second.allocations if a.job_id == "9"]
        assert held.gpu_index == 0  # the simulated node's /dev/nvidia0 is GPU 0
        assert len(second.allocations) == 8  # and the other seven are free
    finally:
        sampler.close()


class FailingSource:
    scheduler = "slurm"

    def __init__(self) -> None:
        self.answers = [Answer((job(0),), "1 job", "n")]

    def ask(self) -> Answer:
        return self.answers.pop(0) if self.answers else Answer(None, "squeue failed: timeout", "n")

    def close(self) -> None:
        pass


def test_a_scheduler_that_stops_answering_goes_stale_then_silent() -> None:
    now = [T]
    reader = AllocationReader([FailingSource()], refresh_s=0.01, clock=lambda: now[0])
    try:
        assert reader.wait_answered(5)
        deadline = time.monotonic() + 5
        while reader.reading().statuses[0].state != "stale" and time.monotonic() < deadline:
            time.sleep(0.01)
        stale = reader.reading()
        assert stale.statuses[0].state == "stale" and stale.statuses[0].answered_at == T
        assert stale.statuses[0].message == "squeue failed: timeout"
        assert len(stale.grants) == 1  # the last answer, for a while
        now[0] = T + 121
        while reader.reading().statuses[0].state != "unreachable" and time.monotonic() < deadline:
            time.sleep(0.01)
        silent = reader.reading()
        assert silent.statuses[0].state == "unreachable" and silent.grants == ()
    finally:
        reader.close()


def test_the_kubelet_source_reads_again_only_when_the_file_changes(tmp_path: Path) -> None:
    path = kubelet_checkpoint(tmp_path / "device-plugins" / "cp", {"uid-1": ["GPU-1"]})
    pods = tmp_path / "pods" / "uid-1"
    pods.mkdir(parents=True)
    (pods / "etc-hosts").write_text(
        "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n10.0.0.5\ttrainer-0\n"
    )
    source = KubeletSource(str(path))
    first = source.ask()
    assert first.grants is not None
    assert [(g.pod_uid, g.pod_name, g.device_id) for g in first.grants] == [
        ("uid-1", "trainer-0", "GPU-1")
    ]
    assert source.ask() is first  # unchanged: not read again
    kubelet_checkpoint(path, {"uid-1": ["GPU-1"], "uid-2": ["GPU-2", "GPU-3"]})
    second = source.ask()
    assert second.grants is not None and len(second.grants) == 3
    assert second.message == "2 pods with GPUs"
    path.unlink()
    gone = source.ask()
    assert gone.grants is None and "no device-plugin checkpoint" in gone.message


# -- the exporter ---------------------------------------------------------------------------------


def test_the_exporter_publishes_allocations_idle_time_and_cost() -> None:
    """The simulated DGX: job 4242 holds GPU 6 (busy) and 7 (a process holding memory, idle);
    a pod holds GPU 5 twice (the GPU and a time-sliced replica of it: one series)."""
    from gputui import export

    sampler = fake_clock_sampler("dgx-h100", gpu_hour_price=2.0)
    uuid = sampler.node.gpus[5].uuid
    pod = tuple(
        Grant("kubernetes", d, device_id=d, pod_uid="u1", pod_name="nb-0", namespace="ml")
        for d in (uuid, uuid + "::1")
    )
    sampler.allocations = FixedSchedulers(slurm_job("4242", 6, 7) + pod)
    sampler.allocation_meter.idle_after_s = 0.0
    collector = export.GpuCollector(sampler)
    for _ in range(4):
        sampler.poll()
        sampler.clock.now += 1.0
    text, families = scrape(collector)

    def series(name: str) -> dict[tuple[str, ...], float]:
        return {
            (s.labels.get("gpu", ""), s.labels["slurm_job"], s.labels["pod"]): s.value
            for s in families[name].samples
            if s.name == name
        }

    assert series("gputui_gpu_allocated") == {
        ("5", "", "nb-0"): 1.0,
        ("6", "4242", ""): 1.0,
        ("7", "4242", ""): 1.0,
    }
    idle = series("gputui_gpu_allocated_idle")
    assert idle[("6", "4242", "")] == 0.0 and idle[("7", "4242", "")] == 1.0
    seconds = {
        (s.labels["gpu"], s.labels["slurm_job"]): s.value
        for s in families["gputui_gpu_allocated_idle_seconds"].samples
        if s.name == "gputui_gpu_allocated_idle_seconds_total"
    }
    assert seconds[("7", "4242")] == 3.0 and seconds[("6", "4242")] == 0.0
    (cost,) = [
        s
        for s in families["gputui_allocation_idle_cost"].samples
        if s.labels["slurm_job"] == "4242"
    ]
    assert cost.labels["user"] == "alice"
    assert cost.value == pytest.approx(3.0 / 3600 * 2.0, abs=1e-6)
    assert 'gputui_scheduler_up{scheduler="slurm"} 1.0' in text
    assert text.count('gputui_gpu_allocated{gpu="5"') == 1  # the replica is the same GPU


def test_the_exporter_says_when_the_scheduler_went_silent() -> None:
    from gputui import export

    sampler = fake_clock_sampler("dgx-h100")
    gone = (SchedulerStatus("slurm", "unreachable", "squeue failed"),)
    sampler.allocations = FixedSchedulers(slurm_job("1", 0), gone)
    collector = export.GpuCollector(sampler)
    sampler.poll()
    text, families = scrape(collector)
    assert 'gputui_scheduler_up{scheduler="slurm"} 0.0' in text
    assert "gputui_gpu_allocated" not in families  # nothing guessed


def test_the_text_report_lists_schedulers_holders_and_free_gpus() -> None:
    from gputui.views.report import render_snapshot

    allocations = (
        Allocation(0, "free"),
        allocated("no_process", T - 125),
        allocated(
            "unknown", None, gpu_index=None, device="IDX 5", unmatched="no GPU with minor number 5"
        ),
    )
    statuses = (SchedulerStatus("slurm", "ok", "1 job with GPUs on node n"),)
    s = dataclasses.replace(snap(), allocations=allocations, schedulers=statuses)
    text = render_snapshot(s)
    assert "Slurm: ok (1 job with GPUs on node n)" in text
    (row,) = [line for line in text.splitlines() if line.startswith("0 ") and "IDX 0" in line]
    assert "job 4242 train (alice)" in row and "allocated, no process" in row and "2m05s" in row
    assert "IDX 5 (no GPU with minor number 5)" in text
    assert "Free (not allocated): GPU 0" in text
    assert "Slurm" not in render_snapshot(snap())  # no scheduler here: nothing said
