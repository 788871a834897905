"""Reading which GPUs Slurm jobs hold on this node from ``scontrol show job -d -o``: hostlists,
every GRES form, jobs over several nodes, and lines a job's user can shape (a name or path that
imitates scontrol's fields, a newline in it). ``tests/data/slurm/`` holds the output of a real
Slurm 22.05 (two typed GRES, node renamed ``gpu07``); the other lines are built from it."""

from __future__ import annotations

import os
import stat
import sys
import textwrap
from pathlib import Path

import pytest

from gputui.host.allocations import SlurmSource
from gputui.host.slurmalloc import (
    gpu_indices,
    grants_of,
    hostlist_has,
    listed_jobs,
    node_name,
    parse_jobs,
)

DATA = Path(__file__).parent / "data" / "slurm"
REAL = (DATA / "show_job_d_o_typed-22.05.txt").read_text()
LINE = REAL.splitlines()[0]  # job 1: gpu:a100:1(IDX:2) on gpu07


def line(
    job_id: str = "5",
    *,
    name: str = "wrap",
    detail: str | None = None,
    state: str = "RUNNING",
    tail: str = "",
) -> str:
    """Job 1's real line with another id, name, state, detail (between CoreSpec and MinCPUsNode)
    and text added at its end (a path's)."""
    text = LINE.replace("JobId=1 JobName=wrap ", f"JobId={job_id} JobName={name} ", 1)
    text = text.replace("JobState=RUNNING", f"JobState={state}", 1)
    if detail is not None:
        head, _, rest = text.partition(" JOB_GRES=")
        text = head + " " + detail + " MinCPUsNode=" + rest.partition(" MinCPUsNode=")[2]
    return text + tail


# -- hostlists and GRES ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "name", "named"),
    [
        ("gpu07", "gpu07", True),
        ("gpu07", "gpu070", False),
        ("gpu[01-08]", "gpu07", True),
        ("gpu[01-08]", "gpu7", False),  # zero padding: 01-08 names gpu01 ... gpu08
        ("gpu[1-8]", "gpu07", False),
        ("gpu[1-12]", "gpu12", True),
        ("gpu[01-04,07,10-12]", "gpu07", True),
        ("gpu[01-04,08]", "gpu07", False),
        ("login1,gpu[05-07]", "gpu06", True),
        ("rack[1-2]-n[01-16]", "rack2-n16", True),
        ("rack[1-2]-n[01-16]", "rack3-n01", False),
        ("n[1-2]0", "n10", True),  # the digits run into what follows
        ("gpu[01-", "gpu01", False),  # malformed: names nothing
        ("gpu[0²-9]", "gpu07", False),
        ("[0-9]" * 40, "7" * 40, True),  # many groups: each split tried once, not exponentially
        ("[0-9]" * 40, "7" * 41, False),
    ],
)
def test_hostlists(expression: str, name: str, named: bool) -> None:
    assert hostlist_has(expression, name) is named


@pytest.mark.parametrize(
    ("gres", "indices"),
    [
        ("gpu:2(IDX:0-1)", (0, 1)),
        ("gpu:h100:2(IDX:0,2)", (0, 2)),
        ("gpu(IDX:0-3)", (0, 1, 2, 3)),  # GRES_IDX= of Slurm before 19.05
        ("gpu:h100:2(IDX:0-1),gpu:a100:0(IDX:)", (0, 1)),
        ("gpu:h100:4(IDX:0-1,4-5)", (0, 1, 4, 5)),
        ("gpu:1(IDX:N/A)", ()),
        ("shard:2(IDX:0),gpu:1(IDX:3)", (3,)),  # only the gpu GRES
        ("gpu:2(CNT:2)", ()),
        ("gpu:1(IDX:99999999999999999999999)", ()),  # no such index
        ("gpu:1(IDX:3-1)", ()),
        ("", ()),
    ],
)
def test_gpu_indices(gres: str, indices: tuple[int, ...]) -> None:
    assert gpu_indices(gres) == indices


def test_node_name_is_slurms_own_else_the_short_hostname(monkeypatch: pytest.MonkeyPatch) -> None:
    assert node_name({"SLURMD_NODENAME": "gpu07"}) == "gpu07"
    monkeypatch.setattr("socket.gethostname", lambda: "gpu07.cluster.example")
    assert node_name({}) == "gpu07"


# -- real output -----------------------------------------------------------------------------------


def test_real_typed_gres_output() -> None:
    parsed = parse_jobs(REAL, "gpu07", {"1", "2"})
    assert [(j.job_id, j.indices, j.user, j.name, j.state) for j in parsed.jobs] == [
        ("1", (2,), "root", "wrap", "RUNNING"),
        ("2", (0, 1), "root", "wrap", "RUNNING"),
    ]
    assert parsed.rejected == 0
    assert parsed.jobs[0].started is not None
    grants = grants_of(parsed.jobs)
    assert [(g.job_id, g.minor, g.device) for g in grants] == [
        ("1", 2, "IDX 2"),
        ("2", 0, "IDX 0"),
        ("2", 1, "IDX 1"),
    ]
    assert parse_jobs(REAL, "gpu08", {"1", "2"}).jobs == ()  # another node's


def test_a_job_over_several_nodes_holds_what_its_entry_for_this_node_says() -> None:
    detail = (
        "JOB_GRES=gpu:8   Nodes=gpu[01-06] CPU_IDs=0-63 Mem=0 GRES=gpu:8(IDX:0-7) "
        "Nodes=gpu07 CPU_IDs=0-31 Mem=0 GRES=gpu:4(IDX:4-7) "
        "Nodes=gpu[08-09] CPU_IDs=0-63 Mem=0 GRES=gpu:8(IDX:0-7)"
    )
    (job,) = parse_jobs(line("7", detail=detail), "gpu07", {"7"}).jobs
    assert job.indices == (4, 5, 6, 7)
    old = "Nodes=gpu07 CPU_IDs=0-1 Mem=0 GRES_IDX=gpu(IDX:0-1)"  # Slurm before 19.05
    (job,) = parse_jobs(line("8", detail=old), "gpu07", {"8"}).jobs
    assert job.indices == (0, 1)


def test_only_jobs_holding_gpus_count() -> None:
    text = "\n".join(
        [
            line("1", state="PENDING"),
            line("2", state="COMPLETED"),
            line("3", state="SUSPENDED"),
            line("4", state="COMPLETING"),
            line("5", detail="Nodes=gpu07 CPU_IDs=0 Mem=0 GRES="),  # no GPU
            "slurm_load_jobs error: Unable to contact slurm controller (connect failure)",
        ]
    )
    parsed = parse_jobs(text, "gpu07", {"1", "2", "3", "4", "5"})
    assert [j.job_id for j in parsed.jobs] == ["3", "4"]  # a suspended job keeps its GPUs
    assert parsed.rejected == 0


def test_names_with_spaces_and_equals_signs_are_names() -> None:
    (job,) = parse_jobs(line("9", name="my run=3 of 4"), "gpu07", {"9"}).jobs
    assert job.name == "my run=3 of 4" and job.indices == (2,)


# -- what a job's user can write -------------------------------------------------------------------

FAKE = "Nodes=gpu07 CPU_IDs=0 Mem=0 GRES=gpu:8(IDX:0-7)"


def test_detail_in_a_name_or_a_path_is_not_detail() -> None:
    in_name = line("11", name=f"x {FAKE}", detail="Nodes=gpu07 CPU_IDs=0 Mem=0 GRES=gpu:1(IDX:3)")
    in_path = line("12", tail=f" Comment=x {FAKE}")
    parsed = parse_jobs(in_name + "\n" + in_path, "gpu07", {"11", "12"})
    assert {j.job_id: j.indices for j in parsed.jobs} == {"11": (3,), "12": (2,)}


def test_a_name_imitating_the_fields_makes_its_own_job_unreadable() -> None:
    forged = f"x UserId=alice(1000) JobState=RUNNING NumNodes=1 {FAKE} MinCPUsNode=1"
    parsed = parse_jobs(line("13", name=forged), "gpu07", {"13"})
    assert parsed.jobs == () and parsed.rejected == 1


def test_a_newline_in_a_name_or_path_cannot_make_up_a_job() -> None:
    """What scontrol prints for a job named ``evil\\nJobId=...`` (Slurm keeps the newline): a
    line that is not a job, and one that looks like one. Made up with an id squeue does not list
    on this node, it is left out; with the id of a real job here, that job has two lines and
    both are left out (never another job's GPUs to the wrong owner)."""
    head = "JobId=14 JobName=evil"
    made_up = line("99", detail=FAKE)[len("JobId=99 ") - 1 :]
    fresh = head + "\nJobId=99" + made_up
    parsed = parse_jobs(fresh, "gpu07", {"14"})
    assert parsed.jobs == () and parsed.rejected == 2  # job 14's cut line; the made-up job 99
    real = line("15", detail="Nodes=gpu07 CPU_IDs=0 Mem=0 GRES=gpu:1(IDX:5)")
    stolen = head + "\nJobId=15" + made_up
    parsed = parse_jobs(real + "\n" + stolen, "gpu07", {"14", "15"})
    assert parsed.jobs == () and parsed.rejected == 3
    via_path = line("16", tail="\n" + "JobId=16" + made_up)
    assert parse_jobs(via_path, "gpu07", {"16"}).jobs == ()


def test_squeue_ids_are_digits_only() -> None:
    assert listed_jobs("4242\n  17 \nfoo\n\n4243_1\n") == {"4242", "17"}


# -- asking the tools ---------------------------------------------------------------------------


def tool(tmp_path: Path, name: str, body: str) -> str:
    """An executable stand-in for ``name`` (a Python script: its argv and environment)."""
    path = tmp_path / name
    path.write_text(f"#!{sys.executable}\nimport sys, os\n" + textwrap.dedent(body))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_the_source_asks_squeue_for_this_node_then_scontrol(tmp_path: Path) -> None:
    log = tmp_path / "argv"
    squeue = tool(
        tmp_path,
        "squeue",
        f"open({str(log)!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n'); print('1'); print('2')",
    )
    scontrol = tool(
        tmp_path,
        "scontrol",
        f"sys.stdout.write(open({str(DATA / 'show_job_d_o_typed-22.05.txt')!r}).read())",
    )
    answer = SlurmSource(scontrol, squeue, "gpu07").ask()
    assert answer.grants is not None and len(answer.grants) == 3
    assert answer.message == "2 jobs with GPUs on node gpu07" and answer.node == "gpu07"
    assert "--nodelist=gpu07" in log.read_text() and "--format=%A" in log.read_text()


def test_the_source_says_why_a_tool_failed(tmp_path: Path) -> None:
    squeue = tool(
        tmp_path,
        "squeue",
        "sys.stderr.write('squeue: error: Invalid node name specified\\n'); sys.exit(1)",
    )
    answer = SlurmSource(os.devnull, squeue, "gpu07").ask()
    assert answer.grants is None
    assert answer.message == "squeue failed: squeue: error: Invalid node name specified"
    slow = tool(tmp_path, "slow", "import time; time.sleep(30)")
    answer = SlurmSource(slow, slow, "gpu07", timeout_s=0.5).ask()
    assert answer.grants is None and answer.message.startswith("slow did not answer within 0.5 s")
    big = tool(tmp_path, "big", "print('1'); sys.stdout.write('x' * 100000)")
    answer = SlurmSource(big, big, "gpu07", max_chars=1000).ask()
    assert answer.grants is None and "wrote too much" in answer.message
