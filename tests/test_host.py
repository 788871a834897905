"""Host facts via psutil, on this very process (the tests' own PID is a real process)."""

from __future__ import annotations

import dataclasses
import os
import pwd
import shutil
import subprocess
import sys
import time

import psutil
import pytest
from tests.fakes.proc import OTHER_NS_INODE, PLAIN_PROC, fake_proc, stat_line

from gputui.core.model import MAX_COMMAND_CHARS, MAX_NAME_CHARS, ProcessSample
from gputui.host.pidns import PROC_PID_INIT_INO, detect_pid_namespace
from gputui.host.processes import ProcessEnricher, read_host
from gputui.host.procstat import CMDLINE_CUT, PF_KTHREAD


def test_read_host_reports_this_machine() -> None:
    host = read_host(123.0)
    assert host.timestamp == 123.0
    assert host.memory_total_bytes and host.memory_total_bytes > 0
    assert 0 <= host.memory_used_bytes <= host.memory_total_bytes
    assert len(host.per_core_pct) == os.cpu_count()
    assert host.uptime_s and host.uptime_s > 0


def test_enrich_fills_host_fields_and_keeps_gpu_fields() -> None:
    enricher = ProcessEnricher(host_pids=True)  # this test's own PID, in this namespace
    row = ProcessSample(pid=os.getpid(), gpu_index=3, gpu_memory_bytes=5, sm_pct=40.0)
    (first,) = enricher.enrich([row])
    assert first.gpu_index == 3 and first.gpu_memory_bytes == 5 and first.sm_pct == 40.0
    assert first.name == psutil.Process().name()
    assert first.command == " ".join(psutil.Process().cmdline())  # pytest, or its worker
    assert first.host_rss_bytes and first.host_rss_bytes > 0
    assert first.cpu_pct is None  # no interval measured yet: unknown, not 0
    (second,) = enricher.enrich([row])
    assert second.cpu_pct is not None and second.cpu_pct >= 0


def test_enrich_names_the_parent(tmp_path) -> None:
    """A child's parent is this test's process: the tree groups GPU processes under it."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        enricher = ProcessEnricher(host_pids=True)
        (row,) = enricher.enrich([ProcessSample(pid=child.pid, gpu_index=0)])
    finally:
        child.kill()
        child.wait()
    assert row.ppid == os.getpid()
    assert row.parent_name == psutil.Process().name()


def test_vanished_pid_keeps_gpu_facts_without_error() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    enricher = ProcessEnricher(host_pids=True)
    (row,) = enricher.enrich([ProcessSample(pid=child.pid, gpu_index=0, gpu_memory_bytes=9)])
    assert row.gpu_memory_bytes == 9
    assert row.command is None and row.host_rss_bytes is None


# -- attribution: what the process runs in ---------------------------------------------------------

JOB_CGROUP = "0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n"


def attributing_enricher(tmp_path, cgroup: str, scontrol=None) -> ProcessEnricher:
    """An enricher whose cgroup reads come from a fake /proc holding this test's own PID."""
    from gputui.host.attribution import AttributionReader
    from gputui.host.slurmjobs import SlurmJobs

    proc = tmp_path / "proc" / str(os.getpid())
    proc.mkdir(parents=True)
    (proc / "cgroup").write_text(cgroup)
    reader = AttributionReader(
        str(tmp_path / "proc"),
        docker_root=str(tmp_path / "docker"),
        kubelet_root=str(tmp_path / "kubelet"),
        containerd_tasks=str(tmp_path / "tasks"),
        containers_storage=(),
    )
    return ProcessEnricher(host_pids=True, attribution=reader, slurm=SlurmJobs(scontrol))


def fake_scontrol(tmp_path, user_id: str) -> str:
    """An ``scontrol`` that says every job is ``sft`` of ``user_id`` (``name(uid)``)."""
    script = tmp_path / "scontrol"
    script.write_text(f'#!/bin/sh\necho "JobId=$4 JobName=sft UserId={user_id} GroupId=x"\n')
    script.chmod(0o755)
    return str(script)


def me() -> str:
    """This test's own user as scontrol writes it: ``name(uid)``."""
    return f"{pwd.getpwuid(os.getuid()).pw_name}({os.getuid()})"


def test_enrich_attributes_the_slurm_job_and_adds_its_name_when_scontrol_answers(tmp_path) -> None:
    enricher = attributing_enricher(tmp_path, JOB_CGROUP, fake_scontrol(tmp_path, me()))
    row = ProcessSample(pid=os.getpid(), gpu_index=0, gpu_memory_bytes=5)
    (first,) = enricher.enrich([row])
    assert (first.slurm_job_id, first.slurm_step) == ("4242", "0")
    assert first.slurm_job_name is None  # the lookup runs in the background
    assert enricher.slurm.wait_idle(10)
    (second,) = enricher.enrich([row])
    assert (second.slurm_job_name, second.slurm_job_user) == ("sft", me().split("(")[0])
    assert second.name == psutil.Process().name()  # the host facts are still filled


def test_a_job_owned_by_another_user_is_no_attribution(tmp_path) -> None:
    """scontrol says job 4242 belongs to somebody else than the process's owner: the process is
    not counted as that job's (no id, step, name or user), once the answer is in."""
    other = "nobody(65534)" if os.getuid() != 65534 else "root(0)"
    enricher = attributing_enricher(tmp_path, JOB_CGROUP, fake_scontrol(tmp_path, other))
    row = ProcessSample(pid=os.getpid(), gpu_index=0, gpu_memory_bytes=5)
    enricher.enrich([row])
    assert enricher.slurm.wait_idle(10)
    (out,) = enricher.enrich([row])
    assert (out.slurm_job_id, out.slurm_step, out.slurm_job_name, out.slurm_job_user) == (
        None,
        None,
        None,
        None,
    )
    assert out.name == psutil.Process().name()


def test_the_owner_decides_about_a_rootless_container(tmp_path) -> None:
    """A container under the owner's own user@UID.service is its rootless container; under
    another user's subtree it is nothing (the enricher passes the process's user id on)."""
    uid, cid = os.getuid(), "ab" * 32

    def scope(owner: int) -> str:
        tree = f"/user.slice/user-{owner}.slice/user@{owner}.service"
        return f"0::{tree}/user.slice/libpod-{cid}.scope/container\n"

    (mine,) = attributing_enricher(tmp_path / "a", scope(uid)).enrich(
        [ProcessSample(pid=os.getpid(), gpu_index=0)]
    )
    assert (mine.container_id, mine.container_runtime) == (cid, "rootless podman")
    (theirs,) = attributing_enricher(tmp_path / "b", scope(uid + 1)).enrich(
        [ProcessSample(pid=os.getpid(), gpu_index=0)]
    )
    assert theirs.container_id is None and theirs.container_runtime is None


def test_enrich_reads_the_cgroup_once_per_process(tmp_path) -> None:
    cid = "e" * 64
    enricher = attributing_enricher(tmp_path, f"0::/system.slice/docker-{cid}.scope\n")
    row = ProcessSample(pid=os.getpid(), gpu_index=0)
    for _ in range(5):
        rows = enricher.enrich([row, ProcessSample(pid=os.getpid(), gpu_index=1)])
        assert [(r.container_id, r.container_runtime) for r in rows] == [(cid, "docker")] * 2
    # one cgroup read; the container's state was looked for once (not readable here)
    assert enricher.attribution.files_read == 1


def test_the_backends_attribution_wins_and_other_namespaces_are_not_read(tmp_path) -> None:
    enricher = attributing_enricher(tmp_path, JOB_CGROUP)
    given = ProcessSample(pid=os.getpid(), gpu_index=0, slurm_job_id="1", k8s_pod_name="p")
    (out,) = enricher.enrich([given])
    assert (out.slurm_job_id, out.k8s_pod_name) == ("1", "p")
    # in a nested PID namespace a PID names another process here: nothing is attributed
    nested = ProcessEnricher(host_pids=False, attribution=enricher.attribution)
    (out,) = nested.enrich([ProcessSample(pid=os.getpid(), gpu_index=0)])
    assert out.slurm_job_id is None and out.container_id is None


# -- host PIDs in a container; kernel threads --------------------------------------------------


def test_in_a_container_host_pids_are_shown_as_they_are(tmp_path) -> None:
    """A container that mounts its own /proc (NSpid lists one entry; the ns link is not the
    initial namespace's). The driver's PID collides with a process here (this test's own): no
    name, user, command, CPU, RSS or cgroup from it; a PID missing here is not 'exited'."""
    root = fake_proc(tmp_path / "proc", ns_inode=OTHER_NS_INODE, nspid="1")
    reader = attributing_enricher(tmp_path, JOB_CGROUP).attribution
    enricher = ProcessEnricher(proc_root=root, attribution=reader)
    assert enricher.pid_namespace == "container"
    colliding = ProcessSample(pid=os.getpid(), gpu_index=0, gpu_memory_bytes=5)
    gone = ProcessSample(pid=_dead_pid(), gpu_index=1, gpu_memory_bytes=6)
    for _ in range(2):  # the second reading would measure CPU %
        rows = enricher.enrich([colliding, gone])
        assert rows == [dataclasses.replace(r, not_visible=True) for r in (colliding, gone)]
    assert reader.files_read == 0


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_behind_hidepid_a_missing_pid_is_not_visible_not_exited(tmp_path) -> None:
    """/proc mounted with hidepid=2 lists no other user's process: a PID missing there may be
    somebody's live job holding the GPU, so it is not taken as exited."""
    hiding = "22 26 0:21 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw,hidepid=2\n"
    root = fake_proc(tmp_path / "proc", ns_inode=PROC_PID_INIT_INO, mountinfo=hiding)
    enricher = ProcessEnricher(proc_root=root)
    assert enricher.pid_namespace == "host"
    (row,) = enricher.enrich([ProcessSample(pid=_dead_pid(), gpu_index=0, gpu_memory_bytes=5)])
    assert row.not_visible and not row.exited
    # near miss: the same /proc without hidepid proves the PID gone
    plain = fake_proc(tmp_path / "plain", ns_inode=PROC_PID_INIT_INO, mountinfo=PLAIN_PROC)
    (row,) = ProcessEnricher(proc_root=plain).enrich([ProcessSample(pid=_dead_pid(), gpu_index=0)])
    assert row.exited and not row.not_visible
    # a process that is seen is looked up as ever
    (row,) = enricher.enrich([ProcessSample(pid=os.getpid(), gpu_index=0)])
    assert row.name == psutil.Process().name() and not row.not_visible


def test_on_the_host_kernel_threads_are_marked(tmp_path) -> None:
    root = fake_proc(tmp_path / "proc", ns_inode=PROC_PID_INIT_INO)
    (tmp_path / "proc" / str(os.getpid())).mkdir()
    stat = tmp_path / "proc" / str(os.getpid()) / "stat"
    stat.write_text(stat_line(os.getpid(), "kworker/0:2", ppid=2, flags=PF_KTHREAD | 0x40))
    row = ProcessSample(pid=os.getpid(), gpu_index=0)
    (out,) = ProcessEnricher(proc_root=root).enrich([row])
    assert out.kernel_thread and out.name == psutil.Process().name()
    stat.write_text(stat_line(os.getpid()))
    (out,) = ProcessEnricher(proc_root=root).enrich([row])
    assert not out.kernel_thread


def test_kthreadd_is_marked_for_real() -> None:
    if detect_pid_namespace() != "host" or not psutil.pid_exists(2):
        pytest.skip("no kthreadd in this PID namespace")
    (out,) = ProcessEnricher().enrich([ProcessSample(pid=2, gpu_index=0)])
    assert out.kernel_thread and out.name == "kthreadd" and out.command is None


# -- what any user can make huge -------------------------------------------------------------------


def _started(pid: int, marker: bytes) -> None:
    """Wait until ``pid`` has exec'd (its command line holds ``marker``)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker in f.read(4096):
                    return
        except OSError:
            pass
        time.sleep(0.01)
    raise AssertionError(f"{pid} did not start")


def test_a_huge_command_line_is_read_up_to_the_bound() -> None:
    """Any user can start a process whose argv is megabytes: its command is read up to
    MAX_COMMAND_CHARS bytes, and says it was cut."""
    code = "import time; time.sleep(60)"
    child = subprocess.Popen([sys.executable, "-c", code, *(["x" * 100_000] * 10)])
    try:
        _started(child.pid, code.encode())
        (row,) = ProcessEnricher(host_pids=True).enrich([ProcessSample(pid=child.pid, gpu_index=0)])
    finally:
        child.kill()
        child.wait()
    assert row.command is not None and row.command.startswith(f"{sys.executable} -c {code} xxx")
    assert row.command.endswith(CMDLINE_CUT)
    assert len(row.command) == MAX_COMMAND_CHARS + len(CMDLINE_CUT)


def test_a_huge_process_name_is_bounded(tmp_path) -> None:
    """A name of 15 characters or more is completed from argv[0], which its user chooses (up to
    128 KiB): at most MAX_NAME_CHARS of it are kept."""
    sleep = shutil.which("sleep")
    if sleep is None:
        pytest.skip("no sleep binary")
    program = tmp_path / ("s" * 20)
    program.symlink_to(sleep)
    child = subprocess.Popen(["s" * 20 + "x" * 100_000, "60"], executable=str(program))
    try:
        _started(child.pid, b"sssss")
        assert len(psutil.Process(child.pid).name()) > MAX_NAME_CHARS  # what psutil says
        (row,) = ProcessEnricher(host_pids=True).enrich([ProcessSample(pid=child.pid, gpu_index=0)])
    finally:
        child.kill()
        child.wait()
    assert row.name == ("s" * 20 + "x" * 100_000)[:MAX_NAME_CHARS]
