"""Attribution of GPU processes to Slurm jobs, Kubernetes pods and containers: every cgroup form
(v1 and v2), the engines' state files for names, and the background Slurm job lookup. Each test
builds a fake ``/proc`` (and engine state) tree under tmp_path; the reader takes its roots as
parameters."""

from __future__ import annotations

import json
import os
import stat
import time
from dataclasses import replace
from pathlib import Path

import pytest
from tests.fakes.clock import fake_clock_sampler

from gputui.core.model import MAX_NAME_CHARS, ProcessSample
from gputui.host.attribution import Attribution, AttributionReader, parse_cgroup
from gputui.host.slurmjobs import SlurmJobs, parse_show_job
from gputui.host.workload import (
    attribution_rows,
    has_workloads,
    usage_by,
    workload_label,
    workload_of,
    workload_words,
)
from gputui.views.report import render_snapshot

CID = "5e277ec3818f2aa40af6b887e5098fb0052d5c0e364326dd100038455d7fc3fb"
CID2 = "0177f041ab0f" + "b" * 52
POD = "1f2e3d4c-5b6a-4789-9abc-def012345678"
POD_SYSTEMD = POD.replace("-", "_")
STATIC_POD = "6e8f4f8e2b8a4d3c9f1e0d2c3b4a5968"

V1_CONTROLLERS = ("cpuset", "cpu,cpuacct", "memory", "devices", "freezer", "pids")


def v1(path: str, systemd: str = "/system.slice/slurmd.service") -> str:
    """A cgroup v1 file: every controller in ``path``, the systemd hierarchy elsewhere."""
    lines = [f"{i + 2}:{c}:{path}" for i, c in enumerate(V1_CONTROLLERS)]
    return "\n".join([f"1:name=systemd:{systemd}", *lines]) + "\n"


def v2(path: str) -> str:
    return f"0::{path}\n"


# -- cgroup forms ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Slurm, cgroup v1 (task/cgroup plugin), and with a per-node prefix
        (v1("/slurm/uid_1000/job_4242/step_0/task_0"), Attribution("4242", "0")),
        (v1("/slurm_node01/uid_1000/job_77/step_batch"), Attribution("77", "batch")),
        # Slurm, cgroup v2 (slurmstepd's scope), and a multi-slurmd node's scope
        (
            v2("/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0"),
            Attribution("4242", "0"),
        ),
        (
            v2("/system.slice/node07_slurmstepd.scope/job_9/step_extern/user/task_special"),
            Attribution("9", "extern"),
        ),
        (
            v2("/system.slice/slurmstepd.scope/job_5/step_interactive/user/task_0"),
            Attribution("5", "interactive"),
        ),
        # the job's cgroup itself (no step yet)
        (v2("/system.slice/slurmstepd.scope/job_12"), Attribution("12", None)),
        # not a job: slurmd itself, a login session
        (v2("/system.slice/slurmd.service"), Attribution()),
        (v2("/user.slice/user-1000.slice/session-3.scope"), Attribution()),
        (v2("/"), Attribution()),
        ("", Attribution()),
    ],
)
def test_slurm_forms(text: str, expected: Attribution) -> None:
    assert parse_cgroup(text) == expected


@pytest.mark.parametrize(
    ("text", "pod", "cid", "runtime"),
    [
        # cgroupfs driver, v1 and v2: QoS level, pod, bare container id
        (v1(f"/kubepods/burstable/pod{POD}/{CID}"), POD, CID, None),
        (v2(f"/kubepods/besteffort/pod{POD}/{CID}"), POD, CID, None),
        (v2(f"/kubepods/pod{POD}/{CID}"), POD, CID, None),  # guaranteed: no QoS level
        # systemd driver: the UID's dashes as underscores, the runtime in the scope name
        (
            v2(
                "/kubepods.slice/kubepods-burstable.slice/"
                f"kubepods-burstable-pod{POD_SYSTEMD}.slice/cri-containerd-{CID}.scope"
            ),
            POD,
            CID,
            "containerd",
        ),
        (
            v1(
                "/kubepods.slice/kubepods-besteffort.slice/"
                f"kubepods-besteffort-pod{POD_SYSTEMD}.slice/crio-{CID}.scope"
            ),
            POD,
            CID,
            "cri-o",
        ),
        (
            v2(f"/kubepods.slice/kubepods-pod{POD_SYSTEMD}.slice/docker-{CID}.scope"),
            POD,
            CID,
            "docker",
        ),
        # kubelet in a systemd slice of its own (kind, rootless), cgroup v2
        (
            v2(
                "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/"
                f"kubelet-kubepods-burstable-pod{POD_SYSTEMD}.slice/cri-containerd-{CID}.scope"
            ),
            POD,
            CID,
            "containerd",
        ),
        # a static (mirror) pod: its UID is a 32-hex hash
        (v2(f"/kubepods/burstable/pod{STATIC_POD}/{CID}"), STATIC_POD, CID, None),
        # the pod's sandbox slice without a container yet
        (v2(f"/kubepods.slice/kubepods-pod{POD_SYSTEMD}.slice"), POD, None, None),
    ],
)
def test_kubernetes_forms(text: str, pod: str, cid: str | None, runtime: str | None) -> None:
    found = parse_cgroup(text)
    assert (found.k8s_pod_uid, found.container_id, found.container_runtime) == (pod, cid, runtime)
    assert found.slurm_job_id is None


@pytest.mark.parametrize(
    ("text", "cid", "runtime"),
    [
        (v1(f"/docker/{CID}", systemd=f"/docker/{CID}"), CID, "docker"),
        (v2(f"/system.slice/docker-{CID}.scope"), CID, "docker"),
        (v2(f"/system.slice/containerd.service/default/{CID}"), CID, None),
        (v2(f"/system.slice/cri-containerd-{CID}.scope"), CID, "containerd"),
        (v2(f"/machine.slice/libpod-{CID}.scope/container"), CID, "podman"),
        (v1(f"/machine.slice/libpod-{CID}.scope"), CID, "podman"),
        (v2(f"/libpod_parent/libpod-{CID}"), CID, "podman"),
        # the runtime's monitor (conmon) is not the container
        (v2(f"/machine.slice/libpod-conmon-{CID}.scope"), None, None),
        (v2(f"/system.slice/crio-conmon-{CID}.scope"), None, None),
        # an id that is not 64 hex characters is not a container id
        (v2("/system.slice/docker-abc123.scope"), None, None),
    ],
)
def test_container_forms(text: str, cid: str | None, runtime: str | None) -> None:
    found = parse_cgroup(text)
    assert (found.container_id, found.container_runtime) == (cid, runtime)
    assert found.k8s_pod_uid is None and found.slurm_job_id is None


def test_a_container_inside_a_slurm_job_has_both() -> None:
    text = v2(f"/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0/{CID}")
    found = parse_cgroup(text)
    assert (found.slurm_job_id, found.slurm_step, found.container_id) == ("4242", "0", CID)


def test_hybrid_v1_file_reads_the_controller_lines() -> None:
    text = "0::/\n" + v1("/slurm/uid_0/job_31/step_2/task_1", systemd="/user.slice")
    assert parse_cgroup(text) == Attribution("31", "2")


# -- spoofed forms: a user's own subtree, or a form away from where it lives -----------------------

USER_TREE = "/user.slice/user-1000.slice/user@1000.service"
"""systemd delegates this subtree to user 1000, who can create any cgroup under it."""
SPOOFS = {
    "slurm v2": f"{USER_TREE}/app.slice/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0",
    "slurm v1": f"{USER_TREE}/slurm/uid_2000/job_4242/step_0/task_0",
    "slurm job only": f"{USER_TREE}/app.slice/slurm/job_4242/step_0",
    "pod (systemd)": (
        f"{USER_TREE}/kubepods.slice/kubepods-burstable.slice/"
        f"kubepods-burstable-pod{POD_SYSTEMD}.slice/cri-containerd-{CID}.scope"
    ),
    "pod (cgroupfs)": f"{USER_TREE}/kubepods/burstable/pod{POD}/{CID}",
    "docker (cgroupfs)": f"{USER_TREE}/app.slice/docker/{CID}",
    "bare id": f"{USER_TREE}/app.slice/{CID}",
}


@pytest.mark.parametrize("owner", [None, 1000, 2000])
@pytest.mark.parametrize("path", SPOOFS.values(), ids=SPOOFS.keys())
def test_a_users_own_subtree_is_no_job_pod_or_system_container(path: str, owner) -> None:
    """What user 1000 built under its user@1000.service is no Slurm job and no pod, whoever runs
    in it, and no other container than a rootless one of its own (none of these forms is)."""
    assert parse_cgroup(v2(path), owner) == Attribution()
    # cgroup v1: the spoof in the named systemd hierarchy, the controllers at the user's session
    text = v1("/user.slice/user-1000.slice/session-3.scope", systemd=path)
    assert parse_cgroup(text, owner) == Attribution()


@pytest.mark.parametrize(
    ("path", "runtime"),
    [
        (f"{USER_TREE}/user.slice/libpod-{CID}.scope/container", "podman"),
        (f"{USER_TREE}/app.slice/libpod-{CID}.scope", "podman"),
        (f"{USER_TREE}/user.slice/docker-{CID}.scope", "docker"),
        (f"{USER_TREE}/app.slice/docker-{CID}.scope", "docker"),
    ],
)
def test_a_rootless_container_is_its_owners_own(path: str, runtime: str) -> None:
    """Rootless Podman and Docker run containers under the user's own subtree: believed for a
    process of that user (its own container, no spoof of anybody else's), as ``rootless ...``,
    and for nobody else (nor when the owner is not known)."""
    mine = parse_cgroup(v2(path), owner_uid=1000)
    assert (mine.container_id, mine.container_runtime) == (CID, f"rootless {runtime}")
    assert mine.slurm_job_id is None and mine.k8s_pod_uid is None
    assert parse_cgroup(v2(path), owner_uid=2000) == Attribution()
    assert parse_cgroup(v2(path)) == Attribution()
    # user-1000.slice holding user@2000.service is no form systemd makes
    other = path.replace("user@1000.service", "user@2000.service")
    assert parse_cgroup(v2(other), owner_uid=1000) == Attribution()
    assert parse_cgroup(v2(other), owner_uid=2000) == Attribution()


@pytest.mark.parametrize(
    "path",
    [
        # a form is believed where it lives, not anywhere in the path
        "/system.slice/backup.service/slurm/uid_0/job_4242/step_0",
        "/system.slice/app.service/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0",
        "/machine.slice/machine-x.scope/payload/slurm/uid_0/job_4242/step_0",
        f"/system.slice/app.service/kubepods.slice/kubepods-pod{POD_SYSTEMD}.slice",
        f"/system.slice/app.service/kubepods/burstable/pod{POD}/{CID}",
        f"/machine.slice/machine-x.scope/payload/system.slice/docker-{CID}.scope",
        f"/system.slice/app.service/docker/{CID}",
        f"/system.slice/app.service/{CID}",
        f"/system.slice/app.service/machine.slice/libpod-{CID}.scope",
        f"/user.slice/user-1000.slice/session-3.scope/docker-{CID}.scope",
    ],
)
def test_forms_away_from_where_they_live_are_not_believed(path: str) -> None:
    assert parse_cgroup(v2(path), owner_uid=0) == Attribution()


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        # a Kubernetes node in a Docker container (kind): the pod and its container inside
        (
            f"/system.slice/docker-{CID2}.scope/kubelet.slice/kubelet-kubepods.slice/"
            f"kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod{POD_SYSTEMD}"
            f".slice/cri-containerd-{CID}.scope",
            Attribution(k8s_pod_uid=POD, container_id=CID, container_runtime="containerd"),
        ),
        # slurmd in a pod: the job inside the pod's container
        (
            f"/kubepods.slice/kubepods-pod{POD_SYSTEMD}.slice/cri-containerd-{CID}.scope"
            "/system.slice/slurmstepd.scope/job_77/step_0/user/task_0",
            Attribution(
                "77", "0", k8s_pod_uid=POD, container_id=CID, container_runtime="containerd"
            ),
        ),
        # but what a container's own processes made under it is no more than the container
        (
            f"/system.slice/docker-{CID}.scope/app/slurm/uid_0/job_4242/step_0",
            Attribution(container_id=CID, container_runtime="docker"),
        ),
    ],
)
def test_forms_nested_in_a_container_start_where_it_ends(path: str, expected) -> None:
    assert parse_cgroup(v2(path)) == expected


# -- gputui in a cgroup namespace of its own ------------------------------------------------------

# gputui in a container with a private cgroup namespace at /system.slice/docker-<id>.scope (two
# levels below the root; Docker's default on cgroup v2, even with --pid=host): the kernel writes
# other processes' paths relative to that, "/.." for each level up to where they part.
IN_DOCKER = {"0": 2}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        # up to the root: the path below is absolute, and read as such
        (
            "/../../system.slice/slurmstepd.scope/job_7/step_0/user/task_0",
            Attribution("7", "0"),
        ),
        (
            f"/../../kubepods.slice/kubepods-pod{POD_SYSTEMD}.slice/cri-containerd-{CID}.scope",
            Attribution(k8s_pod_uid=POD, container_id=CID, container_runtime="containerd"),
        ),
        (f"/../../{SPOOFS['slurm v2']}", Attribution()),
        (f"/../../{SPOOFS['docker (cgroupfs)']}", Attribution()),
        # siblings under gputui's own parent (/system.slice: root's): where they live is known
        ("/../slurmstepd.scope/job_7/step_batch", Attribution("7", "batch")),
        (f"/../docker-{CID}.scope", Attribution(container_id=CID, container_runtime="docker")),
        # beyond the root: no such path
        ("/../../../system.slice/slurmstepd.scope/job_7/step_0", Attribution()),
    ],
)
def test_paths_outside_gputuis_cgroup_namespace(path: str, expected: Attribution) -> None:
    assert parse_cgroup(v2(path.replace("//", "/")), owner_uid=1000, ns_depths=IN_DOCKER) == (
        expected
    )
    # where the namespace's depth is not known, a relative path proves nothing
    assert parse_cgroup(v2(path.replace("//", "/")), owner_uid=1000) == Attribution()


def test_the_reader_learns_its_namespace_depth_from_pid_1(tmp_path: Path) -> None:
    write(tmp_path / "proc" / "1" / "cgroup", "0::/../../init.scope\n")
    write(tmp_path / "proc" / "9" / "cgroup", v2("/../slurmstepd.scope/job_7/step_0"))
    write(tmp_path / "proc" / "10" / "cgroup", v2(f"/../../{SPOOFS['slurm v1']}"))
    reader = reader_for(tmp_path)
    assert reader.read(9, owner_uid=1000) == Attribution("7", "0")
    assert reader.read(10, owner_uid=1000) == Attribution()
    assert reader.read(9, owner_uid=1000) == Attribution("7", "0")
    assert reader.files_read == 4  # PID 1's cgroup once


# -- the reader: fake /proc and engine state ------------------------------------------------------


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A node with a Slurm job, a Kubernetes pod (containerd), a Docker container, a Podman
    container, a CRI-O pod and a plain process."""
    proc = tmp_path / "proc"
    write(proc / "100" / "cgroup", v1("/slurm/uid_1000/job_4242/step_0/task_0"))
    write(
        proc / "200" / "cgroup",
        v2(
            "/kubepods.slice/kubepods-burstable.slice/"
            f"kubepods-burstable-pod{POD_SYSTEMD}.slice/cri-containerd-{CID}.scope"
        ),
    )
    write(proc / "300" / "cgroup", v2(f"/system.slice/docker-{CID2}.scope"))
    write(proc / "400" / "cgroup", v2("/user.slice/user-1000.slice/session-3.scope"))
    podman_id = "c" * 64
    write(proc / "500" / "cgroup", v2(f"/machine.slice/libpod-{podman_id}.scope/container"))
    crio_pod = "99999999-8888-4777-8666-555555555555"
    crio_id = "d" * 64
    write(
        proc / "600" / "cgroup",
        v2(
            "/kubepods.slice/kubepods-besteffort.slice/"
            f"kubepods-besteffort-pod{crio_pod.replace('-', '_')}.slice/crio-{crio_id}.scope"
        ),
    )
    # kubelet: the pods' hosts files
    write(
        tmp_path / "kubelet" / "pods" / POD / "etc-hosts",
        "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n"
        "10.244.1.17\ttrainer-0\n",
    )
    write(
        tmp_path / "kubelet" / "pods" / crio_pod / "etc-hosts",
        "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n"
        "10.244.2.9\tweb-0.nginx.shop.svc.cluster.local\tweb-0\n",
    )
    # containerd's OCI bundle for the pod's container (namespace and container name)
    write(
        tmp_path / "tasks" / "k8s.io" / CID / "config.json",
        json.dumps(
            {
                "ociVersion": "1.1.0",
                "annotations": {
                    "io.kubernetes.cri.container-type": "container",
                    "io.kubernetes.cri.container-name": "pytorch",
                    "io.kubernetes.cri.sandbox-name": "trainer-0",
                    "io.kubernetes.cri.sandbox-namespace": "ml",
                    "io.kubernetes.cri.sandbox-uid": POD,
                },
            }
        ),
    )
    # Docker's state
    write(
        tmp_path / "docker" / "containers" / CID2 / "config.v2.json",
        json.dumps({"ID": CID2, "Name": "/vllm-server", "Config": {"Labels": {}}}),
    )
    # Podman's container list; CRI-O's bundle (no annotations: names from etc-hosts)
    write(
        tmp_path / "storage" / "overlay-containers" / "containers.json",
        json.dumps([{"id": podman_id, "names": ["notebook"]}]),
    )
    write(
        tmp_path / "storage" / "overlay-containers" / crio_id / "userdata" / "config.json",
        json.dumps({"annotations": {"io.kubernetes.container.name": "nginx"}}),
    )
    return tmp_path


def reader_for(tree: Path) -> AttributionReader:
    return AttributionReader(
        str(tree / "proc"),
        docker_root=str(tree / "docker"),
        kubelet_root=str(tree / "kubelet"),
        containerd_tasks=str(tree / "tasks"),
        containers_storage=(str(tree / "storage"),),
    )


def test_reader_names_each_kind(tree: Path) -> None:
    reader = reader_for(tree)
    assert reader.read(100) == Attribution(slurm_job_id="4242", slurm_step="0")
    pod = reader.read(200)
    assert (pod.k8s_pod_uid, pod.k8s_pod_name, pod.k8s_namespace) == (POD, "trainer-0", "ml")
    assert (pod.container_id, pod.container_runtime, pod.container_name) == (
        CID,
        "containerd",
        "pytorch",
    )
    docker = reader.read(300)
    assert (docker.container_name, docker.container_runtime) == ("vllm-server", "docker")
    assert reader.read(400) == Attribution()
    assert reader.read(500).container_name == "notebook"
    crio = reader.read(600)
    assert (crio.k8s_pod_name, crio.k8s_namespace, crio.container_name) == (
        "web-0",
        "shop",
        "nginx",
    )
    assert reader.read(999) == Attribution()  # no such process


def test_pod_name_from_etc_hosts_when_the_runtime_state_is_not_readable(tree: Path) -> None:
    (tree / "tasks" / "k8s.io" / CID / "config.json").unlink()
    found = reader_for(tree).read(200)
    assert (found.k8s_pod_name, found.k8s_namespace, found.container_name) == (
        "trainer-0",
        None,
        None,
    )


def test_host_network_pod_names_no_pod(tree: Path) -> None:
    (tree / "tasks" / "k8s.io" / CID / "config.json").unlink()
    write(
        tree / "kubelet" / "pods" / POD / "etc-hosts",
        "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n10.0.0.5 node01\n",
    )
    found = reader_for(tree).read(200)
    assert found.k8s_pod_uid == POD and found.k8s_pod_name is None


def test_docker_under_a_kubelet_names_the_pod_from_its_labels(tree: Path) -> None:
    labels = {
        "io.kubernetes.pod.name": "etl-7f9c",
        "io.kubernetes.pod.namespace": "data",
        "io.kubernetes.container.name": "spark",
    }
    write(
        tree / "docker" / "containers" / CID2 / "config.v2.json",
        json.dumps({"Name": "/k8s_spark_etl-7f9c_data_x_0", "Config": {"Labels": labels}}),
    )
    write(tree / "proc" / "301" / "cgroup", v2(f"/kubepods/burstable/pod{POD}/{CID2}"))
    found = reader_for(tree).read(301)
    assert (found.k8s_pod_name, found.k8s_namespace, found.container_name) == (
        "etl-7f9c",
        "data",
        "spark",
    )


def test_a_rootless_container_borrows_no_system_containers_name(tree: Path) -> None:
    """User 1000 names its own scope after the id of root's Docker container ``vllm-server``:
    it stays the user's rootless container, without the name (nor its pod labels)."""
    path = f"{USER_TREE}/user.slice/docker-{CID2}.scope"
    write(tree / "proc" / "700" / "cgroup", v2(path))
    reader = reader_for(tree)
    assert reader.read(700, owner_uid=1000) == Attribution(
        container_id=CID2, container_runtime="rootless docker"
    )
    assert reader.read(700, owner_uid=0) == Attribution()
    assert reader.read(700) == Attribution()
    assert reader.read(300).container_name == "vllm-server"  # root's container keeps its name


def test_unreadable_or_broken_state_gives_the_ids_only(tree: Path) -> None:
    write(tree / "docker" / "containers" / CID2 / "config.v2.json", "{not json")
    found = reader_for(tree).read(300)
    assert (found.container_id, found.container_name) == (CID2, None)
    assert found.container_id is not None and found.container_id[:12] == "0177f041ab0f"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_a_state_file_without_permission_is_skipped(tree: Path) -> None:
    path = tree / "docker" / "containers" / CID2 / "config.v2.json"
    path.chmod(0)
    try:
        assert reader_for(tree).read(300).container_name is None
    finally:
        path.chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_names_are_read_once_per_container_and_pod(tree: Path) -> None:
    # four processes of the same pod container
    for pid in (201, 202, 203):
        (tree / "proc" / str(pid)).mkdir()
        (tree / "proc" / str(pid) / "cgroup").write_text((tree / "proc/200/cgroup").read_text())
    reader = reader_for(tree)
    reader.read(200)
    after_first = reader.files_read
    for pid in (201, 202, 203):
        assert reader.read(pid).k8s_pod_name == "trainer-0"
    assert reader.files_read == after_first + 3  # one cgroup file each, no state file again


# -- Slurm job names ------------------------------------------------------------------------------

SHOW_JOB = (
    "JobId=4242 JobName=llama 8b sft UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A "
    "Priority=1 Nice=0 Account=ml QOS=normal JobState=RUNNING Reason=None\n"
)


def test_parse_show_job() -> None:
    job = parse_show_job("4242", SHOW_JOB)
    assert job is not None and (job.name, job.user) == ("llama 8b sft", "alice")
    assert parse_show_job("4242", "slurm_load_jobs error: Invalid job id specified\n") is None
    array = "JobId=4243 ArrayJobId=4240 ArrayTaskId=3 JobName=sweep UserId=bob(1001) GroupId=x\n"
    job = parse_show_job("4243", array)
    assert job is not None and (job.name, job.user, job.uid) == ("sweep", "bob", 1001)
    # whose processes may be the job's: the uid decides, else the name
    assert (job.owned_by(1001, "x"), job.owned_by(1000, "bob"), job.owned_by(None, "bob")) == (
        True,
        False,
        True,
    )
    bare = parse_show_job("7", "JobId=7 JobName=x UserId=carol GroupId=x\n")
    assert bare is not None and (bare.user, bare.uid) == ("carol", None)
    assert (bare.owned_by(5, "carol"), bare.owned_by(5, "dave"), bare.owned_by(5, None)) == (
        True,
        False,
        None,
    )


def fake_scontrol(bin_dir: Path, body: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "scontrol"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)


def test_scontrol_is_asked_once_per_job_off_the_calling_thread(tmp_path, monkeypatch) -> None:
    log = tmp_path / "calls"
    fake_scontrol(
        tmp_path / "bin",
        f'echo "$@" >> {log}\n'
        'echo "JobId=$4 JobName=train-$4 UserId=alice(1000) GroupId=alice(1000)"\n',
    )
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    jobs = SlurmJobs()
    assert jobs.lookup("4242") is None  # not known yet: queued, never waited for
    assert jobs.lookup("4242") is None
    assert jobs.wait_idle(10)
    job = jobs.lookup("4242")
    assert job is not None and (job.name, job.user) == ("train-4242", "alice")
    assert jobs.lookup("4242") == job
    assert log.read_text().splitlines() == ["show job -o 4242"]


def test_a_hanging_scontrol_never_blocks_and_times_out(tmp_path, monkeypatch) -> None:
    fake_scontrol(tmp_path / "bin", "exec sleep 30\n")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    jobs = SlurmJobs(timeout_s=0.3)
    started = time.monotonic()
    for _ in range(100):
        assert jobs.lookup("7") is None
    assert time.monotonic() - started < 1.0  # answered from the cache, not by scontrol
    assert jobs.wait_idle(10)
    assert jobs.lookup("7") is None  # failed: asked again only after RETRY_S
    assert jobs.lookups == 1


def test_without_scontrol_nothing_is_started(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    jobs = SlurmJobs()
    assert jobs.lookup("4242") is None
    assert not jobs.available and jobs.lookups == 0


# -- labels and aggregates ------------------------------------------------------------------------


def proc(pid: int, gpu: int = 0, mem: int | None = 1 << 30, sm: float | None = 10.0, **kw):
    return ProcessSample(pid=pid, gpu_index=gpu, gpu_memory_bytes=mem, sm_pct=sm, **kw)


def test_one_label_per_process_job_first_then_pod_then_container() -> None:
    job = proc(1, slurm_job_id="4242", slurm_job_name="train", container_id=CID)
    pod = proc(2, k8s_pod_uid=POD, k8s_pod_name="trainer-0", k8s_namespace="ml", container_id=CID)
    uid_only = proc(3, k8s_pod_uid=POD)
    ctr = proc(4, container_id=CID2)
    named = proc(5, container_id=CID2, container_name="vllm-server")
    plain = proc(6)
    assert [workload_label(p) for p in (job, pod, uid_only, ctr, named, plain)] == [
        "job 4242 train",
        "pod ml/trainer-0",
        "pod 1f2e3d4c",
        "ctr 0177f041ab0f",
        "ctr vllm-server",
        "",
    ]
    assert has_workloads([plain, ctr]) and not has_workloads([plain])
    assert "alice" in workload_words(proc(7, slurm_job_id="1", slurm_job_user="alice"))
    assert "trainer-0" in workload_words(pod) and CID in workload_words(pod)
    assert ("Pod", "ml/trainer-0") in attribution_rows(pod)
    workload = workload_of(job)
    assert workload is not None and workload.kind == "slurm"


def test_usage_is_summed_per_workload_and_gpu() -> None:
    rows = usage_by(
        [
            proc(1, 0, 10, 40.0, slurm_job_id="4242"),
            proc(2, 0, 5, 20.0, slurm_job_id="4242"),
            proc(3, 1, 7, None, slurm_job_id="4242"),
            proc(4, 1, None, 5.0, k8s_pod_uid=POD, k8s_pod_name="trainer-0"),
            proc(5, 2),
        ]
    )
    got = [(r.workload.kind, r.workload.key, r.gpu_index, r.processes, r.gpu_memory_bytes, r.sm_pct)
           for r in rows]  # fmt: skip
    assert got == [
        ("pod", POD, 1, 1, None, 5.0),
        ("slurm", "4242", 0, 2, 15, 60.0),
        ("slurm", "4242", 1, 1, 7, None),
    ]


def test_a_rootless_container_never_adds_to_a_system_containers_usage() -> None:
    """A user's rootless container that took the id of root's container is another workload:
    its usage is its own, and the system container's keeps its name."""
    system = proc(
        1, 0, 10, 40.0, container_id=CID, container_runtime="docker", container_name="vllm"
    )
    rootless = proc(2, 0, 5, 20.0, container_id=CID, container_runtime="rootless docker")
    rows = usage_by([system, rootless])
    summed = {(r.workload.label, r.gpu_memory_bytes, r.processes) for r in rows}
    assert summed == {("ctr vllm", 10, 1), (f"ctr {CID[:12]}", 5, 1)}
    assert ("Container", f"{CID[:12]} (rootless docker)") in attribution_rows(rootless)


def test_names_from_outside_are_bounded(tree: Path) -> None:
    """Container, pod and job names are whatever their users chose, megabytes included: each
    enters the model as at most MAX_NAME_CHARS characters."""
    long = "n" * 100_000
    write(
        tree / "docker" / "containers" / CID2 / "config.v2.json",
        json.dumps({"ID": CID2, "Name": "/" + long, "Config": {"Labels": {}}}),
    )
    write(
        tree / "kubelet" / "pods" / POD / "etc-hosts",
        f"# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n10.0.0.1\t{long}\n",
    )
    write(tree / "tasks" / "k8s.io" / CID / "config.json", "{}")
    reader = reader_for(tree)
    assert reader.read(300).container_name == long[:MAX_NAME_CHARS]
    assert reader.read(200).k8s_pod_name == long[:MAX_NAME_CHARS]
    job = parse_show_job("7", f"JobId=7 JobName={long} UserId={long}(5) GroupId=x\n")
    assert job is not None and (job.name, job.user) == (long[:MAX_NAME_CHARS],) * 2


def test_snapshot_text_clips_the_job_pod_column() -> None:
    """The text report pads its columns to their longest cell: a job name of megabytes made
    every row that wide. The JOB / POD cell is clipped as the dashboard clips it."""
    sampler = fake_clock_sampler("dgx-h100", polls=2)
    snap = sampler.latest
    name = "j" * 1_000_000
    procs = [replace(p, slurm_job_name=name) if p.slurm_job_id else p for p in snap.processes]
    assert sum(1 for p in procs if p.slurm_job_id) > 1
    text = render_snapshot(replace(snap, processes=tuple(procs)))
    assert len(text) < 20_000
    rows = [line for line in text.splitlines() if " job 4242 " in line]
    assert rows and all(f"job 4242 {'j' * 10}" in line and "… " in line for line in rows)
    assert len({line.index("…") for line in rows}) == 1  # one column, one width
