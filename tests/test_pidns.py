"""Which PID namespace gputui runs in (fake /proc roots, and a real child in a new PID namespace),
what /proc/PID/stat says about kernel threads, and what the node, `snapshot` text and JSON say
about it."""

from __future__ import annotations

import json
import os
import textwrap

import pytest
from tests.fakes.proc import (
    OTHER_NS_INODE,
    PLAIN_PROC,
    ROOT_FS,
    fake_proc,
    hidepid_proc,
    in_new_pid_namespace,
    stat_line,
)

from gputui.backends.base import Backend
from gputui.core.codec import snapshot_from_dict, snapshot_to_dict
from gputui.core.model import GpuInfo, GpuSample, NodeInfo, ProcessSample, Snapshot
from gputui.engine.sampler import Sampler
from gputui.host.pidns import (
    PROC_PID_INIT_INO,
    detect_pid_namespace,
    in_host_pid_namespace,
    proc_hides_processes,
)
from gputui.host.procstat import PF_KTHREAD, is_kernel_thread, parse_stat
from gputui.views.report import render_snapshot

KTHREADD = stat_line(2, "kthreadd", ppid=0, flags=0x208040)  # PF_KTHREAD set, as on this kernel


@pytest.mark.parametrize(
    ("proc", "expected"),
    [
        # the initial namespace's fixed inode: the host, whatever NSpid says
        ({"ns_inode": PROC_PID_INIT_INO, "nspid": "8650"}, "host"),
        # a container that mounts its own /proc: NSpid has one entry, the inode tells
        ({"ns_inode": OTHER_NS_INODE, "nspid": "1"}, "container"),
        # no ns link: a nested NSpid (host /proc seen from a child namespace)
        ({"nspid": "8650\t1"}, "container"),
        # no ns link, one NSpid entry: PID 2 a kernel thread (kthreadd) only on the host
        ({"nspid": "8650", "pid2": KTHREADD}, "host"),
        ({"nspid": "2", "pid2": stat_line(2, "bash")}, "container"),
        # nothing to go by: not the host as far as anyone can tell
        ({"nspid": "8650"}, "unknown"),
        ({}, "unknown"),
    ],
)
def test_pid_namespace_from_a_fake_proc(tmp_path, proc: dict, expected: str) -> None:
    root = fake_proc(tmp_path / "proc", **proc)
    assert detect_pid_namespace(root) == expected
    assert in_host_pid_namespace(root) is (expected == "host")


def test_without_any_proc_there_are_no_pid_namespaces(tmp_path) -> None:
    assert detect_pid_namespace(str(tmp_path / "no-proc")) == "host"


def test_this_machine_agrees_with_its_ns_link() -> None:
    link = os.readlink("/proc/self/ns/pid")
    expected = "host" if link == f"pid:[{PROC_PID_INIT_INO}]" else "container"
    assert detect_pid_namespace() == expected


# -- a real child in a new PID namespace with its own /proc ------------------------------------

CHILD = textwrap.dedent(
    """
    import json, os, signal
    from gputui.backends.base import Backend
    from gputui.host.processes import ProcessEnricher
    from gputui.core.model import ProcessSample
    from gputui.host.signals import ProcessRef, SignalRefused
    import psutil

    class Live(Backend):
        name = "live"
        def open(self): raise NotImplementedError
        def read_gpus(self, now, *, slow): return []
        def read_processes(self, now): return []

    got = []
    signal.signal(signal.SIGUSR1, lambda *a: got.append("SIGUSR1"))
    # The driver would report a host PID; here the same number is this very process.
    (row,) = ProcessEnricher().enrich([ProcessSample(pid=os.getpid(), gpu_index=0)])
    try:
        ref = ProcessRef(os.getpid(), psutil.Process().create_time())
        Live().signal_process(ref, signal.SIGUSR1)
        refused = None
    except SignalRefused as exc:
        refused = type(exc).__name__
    print(json.dumps({"name": row.name, "user": row.user, "command": row.command,
                      "refused": refused, "got": got}))
    """
)


def test_in_a_container_with_its_own_proc_nothing_is_looked_up_or_signalled() -> None:
    """Where NSpid shows one entry (its own /proc mounted) and the PID given collides with a
    local process: no name, user or command from it, and no signal to it."""
    done = in_new_pid_namespace(CHILD)
    if done is None:
        pytest.skip("cannot make a PID namespace here (no unshare, or not allowed)")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert (result["name"], result["user"], result["command"]) == (None, None, None)
    assert result["refused"] == "OtherPidNamespace" and result["got"] == []


# -- /proc mounted with hidepid ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("mountinfo", "expected"),
    [
        (ROOT_FS + PLAIN_PROC, False),
        (ROOT_FS + hidepid_proc("hidepid=2"), True),
        (ROOT_FS + hidepid_proc("hidepid=invisible"), True),
        (ROOT_FS + hidepid_proc("hidepid=noaccess"), True),
        (ROOT_FS + hidepid_proc("hidepid=1"), True),
        (ROOT_FS + hidepid_proc("hidepid=ptraceable"), True),
        (ROOT_FS + hidepid_proc("hidepid=invisible,gid=1001"), True),
        # near misses: hidepid off, and subset=pid (which leaves out files, not processes)
        (ROOT_FS + hidepid_proc("hidepid=off"), False),
        (ROOT_FS + hidepid_proc("hidepid=0"), False),
        (ROOT_FS + hidepid_proc("subset=pid"), False),
        # mounted twice over /proc: the last mount is the one that shows
        (ROOT_FS + PLAIN_PROC + hidepid_proc("hidepid=2").replace("22 26", "63 22"), True),
        (ROOT_FS + hidepid_proc("hidepid=2") + PLAIN_PROC.replace("22 26", "63 22"), False),
        # no procfs mount listed: cannot be told
        (ROOT_FS, None),
    ],
)
def test_proc_mounted_with_hidepid_hides_processes(tmp_path, mountinfo: str, expected) -> None:
    root = fake_proc(tmp_path / "proc", ns_inode=PROC_PID_INIT_INO, mountinfo=mountinfo)
    assert proc_hides_processes(root) is expected


def test_hidepid_from_proc_mounts_and_unreadable_mounts(tmp_path) -> None:
    root = fake_proc(tmp_path / "proc", ns_inode=PROC_PID_INIT_INO)
    assert proc_hides_processes(root) is None  # neither mountinfo nor mounts to read
    # /proc/mounts (fstab format: SOURCE POINT TYPE OPTIONS DUMP PASS) where mountinfo is absent
    mounts = tmp_path / "proc" / "mounts"
    mounts.write_text("/dev/nvme0n1p2 / ext4 rw 0 0\nproc /proc proc rw,relatime,hidepid=2 0 0\n")
    assert proc_hides_processes(root) is True
    mounts.write_text("proc /proc proc rw,relatime 0 0\n")
    assert proc_hides_processes(root) is False
    assert proc_hides_processes(str(tmp_path / "none")) is False  # no procfs at all: not Linux


# -- /proc/PID/stat ----------------------------------------------------------------------------


def test_stat_fields_are_counted_after_the_last_parenthesis() -> None:
    stat = parse_stat("4242 (a (b) c) S 2 4242 4242 0 -1 2129984 0 0\n")
    assert stat is not None
    assert (stat.comm, stat.ppid, stat.flags) == ("a (b) c", 2, 2129984)
    assert parse_stat("garbage") is None


def test_kernel_threads_from_a_fake_proc(tmp_path) -> None:
    def proc(pid: int, stat: str | None, cmdline: bytes | None = None) -> None:
        (tmp_path / str(pid)).mkdir()
        if stat is not None:
            (tmp_path / str(pid) / "stat").write_text(stat)
        if cmdline is not None:
            (tmp_path / str(pid) / "cmdline").write_bytes(cmdline)

    proc(100, stat_line(100, "kworker/0:1", ppid=2, flags=PF_KTHREAD | 0x8040))
    proc(101, stat_line(101, "python", ppid=1))
    proc(102, "102 (kworker/u8:2) I 2\n")  # no flags field: its parent, kthreadd
    proc(103, "103 (sleep) S 1\n")
    proc(104, None, b"")  # no stat: an empty command line
    proc(105, None, b"python\0train.py\0")
    root = str(tmp_path)
    assert [is_kernel_thread(pid, root) for pid in range(100, 107)] == [
        True,
        False,
        True,
        False,
        True,
        False,
        None,  # nothing to read
    ]


def test_kernel_threads_for_real() -> None:
    assert is_kernel_thread(os.getpid()) is False
    if detect_pid_namespace() != "host" or not os.path.exists("/proc/2"):
        pytest.skip("no kthreadd in this PID namespace")
    assert is_kernel_thread(2) is True


# -- the node, `snapshot` text and JSON say where gputui ran -----------------------------------


GPU = GpuInfo(index=0, name="GPU", uuid="G0", vendor="nvidia")


class NodeBackend(Backend):
    """A backend whose processes gputui looks up on the host (like NVML and AMD-SMI)."""

    name = "fake"

    def __init__(self, proc_root: str) -> None:
        self.proc_root = proc_root

    def open(self) -> NodeInfo:
        return NodeInfo("node1", "fake", (GPU,))

    def read_gpus(self, now: float, *, slow: bool) -> list[GpuSample]:
        return [GpuSample(index=0, timestamp=now)]

    def read_processes(self, now: float) -> list[ProcessSample]:
        return [ProcessSample(pid=os.getpid(), gpu_index=0, gpu_memory_bytes=1 << 30)]

    def read_host(self, now: float) -> None:
        return None


def test_the_sampler_puts_the_namespace_on_the_node(tmp_path) -> None:
    container = fake_proc(tmp_path / "c", ns_inode=OTHER_NS_INODE, nspid="1")
    sampler = Sampler(NodeBackend(container), clock=lambda: 1_700_000_000.0)
    assert sampler.open().pid_namespace == "container"
    snapshot = sampler.poll()
    assert snapshot.node.pid_namespace == "container"
    (row,) = snapshot.processes
    assert row.name is None and row.command is None and not row.exited  # this PID exists here
    host = fake_proc(tmp_path / "h", ns_inode=PROC_PID_INIT_INO)
    node = NodeBackend(host).open()
    assert Sampler(NodeBackend(host), node=node).node.pid_namespace == "host"  # type: ignore[union-attr]


def container_snapshot(pid_namespace: str | None) -> Snapshot:
    node = NodeInfo("node1", "NVML", (GPU,), pid_namespace=pid_namespace)  # type: ignore[arg-type]
    return Snapshot(
        timestamp=1_700_000_000.0,
        node=node,
        gpus=(GpuSample(index=0, timestamp=1_700_000_000.0),),
        processes=(ProcessSample(pid=31337, gpu_index=0, gpu_memory_bytes=1 << 30),),
    )


def test_snapshot_text_says_once_that_the_pids_are_host_pids() -> None:
    text = render_snapshot(container_snapshot("container"))
    assert text.count("Host PIDs: gputui runs in a container") == 1
    assert "31337" in text
    assert "Host PIDs" not in render_snapshot(container_snapshot("host"))
    assert "Host PIDs" not in render_snapshot(container_snapshot(None))
    assert "cannot tell" in render_snapshot(container_snapshot("unknown"))


def test_snapshot_json_carries_the_namespace() -> None:
    data = json.loads(json.dumps(snapshot_to_dict(container_snapshot("container"))))
    assert data["node"]["pid_namespace"] == "container"
    assert snapshot_from_dict(data).node.pid_namespace == "container"
    older = dict(data, node={k: v for k, v in data["node"].items() if k != "pid_namespace"})
    assert snapshot_from_dict(older).node.pid_namespace is None  # an older snapshot still loads
