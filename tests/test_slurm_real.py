"""Allocated but idle against a real Slurm: a throwaway cluster on loopback (``slurmctld`` and
``slurmd`` in the foreground, ``auth/none``, state, spool and logs in a temporary directory, four
GPUs whose gres.conf devices are character devices made with ``mknod``, major 195, minors 0-3) and
gputui on a node whose NVML (the fake ``pynvml``) numbers its GPUs' device nodes 2, 3, 0, 1.

A job takes two GPUs and starts no process on them (``sleep``): Slurm gives it GRES indices 0 and
1, the device minors 0 and 1, which are NVML's GPUs 2 and 3, not 0 and 1. ``snapshot --json``,
``check --json`` and the exporter's collector must all say so, with the state "allocated, no
process". A second job's comment carries a newline and a made-up line of a job 999 claiming every
GPU (scontrol prints comments as written): nothing of it may show.

Needs root (``mknod``, ``SlurmUser=root``) and Slurm's daemons (Debian's ``slurm-wlm``). Skipped
without them, unless GPUTUI_REQUIRE_SLURM is set (CI sets it): then it fails.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REQUIRE_ENV = "GPUTUI_REQUIRE_SLURM"
TOOLS = ("slurmctld", "slurmd", "sbatch", "scontrol", "squeue", "scancel")
MINORS = (2, 3, 0, 1)
"""The device minor of NVML's GPU 0, 1, 2, 3 on the faked node."""
FORGED_JOB = "999"

pytestmark = pytest.mark.xdist_group("slurm")


def _need_slurm() -> None:
    missing = [t for t in TOOLS if shutil.which(t) is None]
    why = None
    if missing:
        why = f"Slurm is not installed ({', '.join(missing)} missing: apt-get install slurm-wlm)"
    elif os.geteuid() != 0:
        why = "a throwaway Slurm cluster needs root (mknod for its GPU devices, SlurmUser=root)"
    if why is not None:
        if os.environ.get(REQUIRE_ENV):
            pytest.fail(f"{why}, and {REQUIRE_ENV} is set")
        pytest.skip(why)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _waited(check: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.25)
    return True


def wait_for(what: str, check: Callable[[], bool], timeout: float = 60.0) -> None:
    if not _waited(check, timeout):
        raise AssertionError(f"timed out waiting for {what}")


@dataclass
class Cluster:
    root: Path
    node: str
    env: dict[str, str]
    daemons: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    jobs_ended: bool | None = None

    def run(self, *argv: str, check: bool = True) -> str:
        done = subprocess.run(
            argv, env=self.env, capture_output=True, text=True, timeout=30, check=False
        )
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)}: {done.returncode} {done.stderr}")
        return done.stdout

    def submit(self, *args: str) -> str:
        out = self.run("sbatch", "--parsable", "--mem=10", "-o", "/dev/null", *args)
        return out.strip().split(";")[0]

    def state(self, job: str) -> str:
        return self.run("squeue", "--noheader", "-j", job, "--format=%T", check=False).strip()

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
            for p in sorted((self.root / "log").glob("*.log"))
        )

    def stop(self) -> None:
        """Cancel every job, wait for them to go, then end the daemons (TERM, then KILL)."""
        controller = self.daemons.get("slurmctld")
        if controller is not None and controller.poll() is None:
            self.run("scancel", "--full", f"--nodelist={self.node}", check=False)
            self.jobs_ended = _waited(lambda: not self.run("squeue", "--noheader").strip(), 30)
        for name in ("slurmd", "slurmctld"):
            proc = self.daemons.get(name)
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.daemons.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def write_config(root: Path, node: str) -> Path:
    for sub in ("state", "spool", "log", "dev"):
        (root / sub).mkdir()
    for minor in range(4):
        os.mknod(root / "dev" / f"nvidia{minor}", 0o600 | 0o020000, os.makedev(195, minor))
    conf = root / "slurm.conf"
    conf.write_text(
        f"""ClusterName=gputuitest
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
NodeName={node} NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 Gres=gpu:4 State=UNKNOWN
PartitionName=test Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""
    )
    (root / "gres.conf").write_text(f"NodeName={node} Name=gpu File={root}/dev/nvidia[0-3]\n")
    return conf


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    _need_slurm()
    root = tmp_path_factory.mktemp("slurm")
    node = socket.gethostname().split(".")[0]
    conf = write_config(root, node)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
    env["SLURM_CONF"] = str(conf)
    bed = Cluster(root, node, env)
    try:
        for daemon in ("slurmctld", "slurmd"):
            bed.daemons[daemon] = subprocess.Popen(
                [daemon, "-D", "-f", str(conf)],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            if daemon == "slurmctld":
                wait_for("slurmctld", lambda: "UP" in bed.run("scontrol", "ping", check=False), 30)
        wait_for(
            "the node to be idle",
            lambda: "idle" in bed.run("sinfo", "--noheader", "--format=%t", check=False),
            60,
        )
        yield bed
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{bed.logs()}") from None
    finally:
        bed.stop()
    leftovers = subprocess.run(
        ["pgrep", "-f", str(root)], capture_output=True, text=True, check=False
    ).stdout.split()
    assert leftovers == [], f"processes of the test cluster left running: {leftovers}"
    assert bed.jobs_ended is not False, "the test cluster's jobs did not end"
    assert all(p.returncode is not None for p in bed.daemons.values())


@pytest.fixture(scope="module")
def job(cluster: Cluster) -> str:
    """Two GPUs, no process on them; and a job whose comment forges a job 999 on every GPU."""
    held = cluster.submit("--gres=gpu:2", "-J", "idle-train", "--wrap", "sleep 300")
    forged = (
        f"x\nJobId={FORGED_JOB} JobName=x UserId=root(0) JobState=RUNNING "
        f"StartTime=2026-01-01T00:00:00 NumNodes=1 Nodes={cluster.node} CPU_IDs=0 Mem=0 "
        "GRES=gpu:4(IDX:0-3) MinCPUsNode=1"
    )
    other = cluster.submit("--comment", forged, "--wrap", "sleep 300")
    for one in (held, other):
        wait_for(f"job {one} to run", lambda one=one: cluster.state(one) == "RUNNING", 60)
    shown = cluster.run("scontrol", "show", "job", "-d", "-o")
    assert f"\nJobId={FORGED_JOB} " in shown  # scontrol printed the forged line: it is a real test
    return held


def gputui(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    """``gputui ARGS`` on the faked NVML node, with the cluster's scontrol on PATH."""
    env = dict(
        cluster.env,
        PYTHONPATH=os.pathsep.join(sys.path),
        FAKE_NVML_GPUS="4",
        FAKE_NVML_MINORS=",".join(map(str, MINORS)),
        FAKE_NVML_IDLE="1",
    )
    return subprocess.run(
        [sys.executable, "-m", "tests.fakes.run_with_fake_nvml", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_snapshot_shows_the_jobs_gpus_by_minor_number(cluster: Cluster, job: str) -> None:
    done = gputui(cluster, "snapshot", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    (status,) = data["schedulers"]
    assert status["scheduler"] == "slurm" and status["state"] == "ok", status
    assert status["node"] == cluster.node
    assert "left out as ambiguous" in status["message"]  # the forged job 999
    allocations = data["allocations"]
    print(json.dumps([a for a in allocations if a["state"] != "free"], indent=1))
    held = {a["gpu_index"]: a for a in allocations if a["job_id"] == job}
    assert sorted(held) == [2, 3]  # IDX 0, 1 = /dev/nvidia0, 1 = NVML GPUs 2, 3
    assert {a["device"] for a in held.values()} == {"IDX 0", "IDX 1"}
    for a in held.values():
        assert a["state"] == "no_process"
        assert a["job_name"] == "idle-train" and a["user"] == "root"
        assert a["started"] is not None and abs(a["started"] - time.time()) < 600
    assert [a["gpu_index"] for a in allocations if a["state"] == "free"] == [0, 1]
    assert FORGED_JOB not in {a["job_id"] for a in allocations}


def test_check_reports_allocated_idle(cluster: Cluster, job: str) -> None:
    done = gputui(cluster, "check", "--json")
    data = json.loads(done.stdout)
    idle = [f for f in data["findings"] if f["rule"] == "allocated_idle"]
    assert sorted(f["gpu_index"] for f in idle) == [2, 3], done.stdout
    for f in idle:
        assert f["severity"] == "info" and f["action"] == "none"
        assert f"job {job} idle-train (root)" in f["message"]
        assert f"scancel {job}" in f["hint"]
    assert done.returncode == 0, done.stdout  # information, not a fault


def test_the_exporter_publishes_the_jobs_idle_gpus(
    cluster: Cluster, job: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The collector over a sampler that found the scheduler itself (SLURM_CONF set)."""
    pytest.importorskip("prometheus_client")
    from tests.factories import scrape
    from tests.fakes.fake_pynvml import FakeGpu, make_fake_nvml

    from gputui import export
    from gputui.backends.nvml import NvmlBackend
    from gputui.engine.sampler import Sampler

    for key in [k for k in os.environ if k.startswith("SLURM")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("SLURM_CONF", cluster.env["SLURM_CONF"])
    gpus = [FakeGpu(minor_number=m, util_gpu=0, util_memory=0, memory_used=0) for m in MINORS]
    backend = NvmlBackend(make_fake_nvml(gpus))
    sampler = Sampler(backend, node=backend.open(), gpu_hour_price=4.0)
    try:
        assert sampler.allocations is not None  # found: scontrol, squeue and SLURM_CONF
        collector = export.GpuCollector(sampler)
        sampler.poll()
        assert sampler.wait_for_schedulers(30)
        sampler.poll()
        time.sleep(1.0)
        sampler.poll()
        text, families = scrape(collector)
    finally:
        sampler.close()
    allocated = {
        s.labels["gpu"]: s.labels
        for s in families["gputui_gpu_allocated"].samples
        if s.labels["slurm_job"] == job
    }
    assert sorted(allocated) == ["2", "3"] and allocated["2"]["user"] == "root"
    idle = {s.labels["gpu"]: s.value for s in families["gputui_gpu_allocated_idle"].samples}
    assert idle == {"2": 1.0, "3": 1.0}
    seconds = [
        s.value
        for s in families["gputui_gpu_allocated_idle_seconds"].samples
        if s.name.endswith("_total")
    ]
    assert len(seconds) == 2 and all(v >= 0.9 for v in seconds)
    (cost,) = families["gputui_allocation_idle_cost"].samples
    assert cost.labels["slurm_job"] == job and cost.value > 0
    assert 'gputui_scheduler_up{scheduler="slurm"} 1.0' in text
    assert f'slurm_job="{FORGED_JOB}"' not in text
