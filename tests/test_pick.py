"""`gputui pick`: which GPUs qualify and why not, topology-aware choice, output formats and
exit codes (0 found n, 1 fewer qualify, 2 no GPU)."""

from __future__ import annotations

import pytest

from gputui import cli
from gputui.backends import NoBackend
from gputui.commands import pick
from gputui.commands.common import Seams
from gputui.commands.pick import PickOptions, parse_size, render_pick
from gputui.core.choosing import Criteria, choose, distance, judge
from gputui.core.model import (
    Finding,
    GpuInfo,
    GpuPath,
    GpuSample,
    LinkInfo,
    NodeInfo,
    ProcessSample,
    Snapshot,
    Topology,
)
from gputui.engine.session import BackendSpec

GIB = 1024**3
T = 1_700_000_000.0


def node(n: int = 4, topology: Topology | None = None, **info) -> NodeInfo:
    gpus = tuple(
        GpuInfo(index=i, name="NVIDIA H100 80GB HBM3", uuid=f"GPU-{i:08d}", vendor="nvidia", **info)
        for i in range(n)
    )
    return NodeInfo(hostname="n1", backend="test", gpus=gpus, topology=topology)


def pcie_pairs(n: int, close: set[tuple[int, int]], level: str = "PIX") -> Topology:
    """PCIe paths: ``close`` pairs behind one switch, the rest across NUMA nodes."""
    paths = tuple(
        GpuPath(a, b, pcie_level=level if (a, b) in close else "SYS")
        for a in range(n)
        for b in range(a + 1, n)
    )
    return Topology(paths=paths)


def sample(i: int, util: float | None = 0.0, used: int = 300 << 20, total: int = 80 * GIB,
           t: float = T, lost: bool = False) -> GpuSample:  # fmt: skip
    return GpuSample(
        index=i,
        timestamp=t,
        lost=lost,
        utilization_gpu_pct=util,
        memory_used_bytes=used,
        memory_free_bytes=total - used,
    )


def snap(the_node: NodeInfo, gpus, processes=(), findings=(), t: float = T) -> Snapshot:
    return Snapshot(
        timestamp=t,
        node=the_node,
        gpus=tuple(gpus),
        processes=tuple(processes),
        findings=tuple(findings),
    )


def reasons(judged, index: int) -> str:
    return " | ".join(next(j for j in judged if j.index == index).reasons)


# -- sizes ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("40G", 40 * GIB),
        ("40GiB", 40 * GIB),
        ("40g", 40 * GIB),
        ("40GB", 40 * 10**9),
        ("512M", 512 << 20),
        ("1.5T", int(1.5 * 1024**4)),
        ("40", 40 * GIB),
    ],
)
def test_sizes(text: str, value: int) -> None:
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["", "lots", "40X", "GB", "40 B", "-1G"])
def test_bad_sizes(text: str) -> None:
    with pytest.raises(ValueError):
        parse_size(text)


# -- judging --------------------------------------------------------------------------------------


def test_each_criterion_says_why_a_gpu_does_not_qualify() -> None:
    n = node(6)
    first = snap(n, [sample(0), sample(1, util=3), sample(2), sample(3), sample(4), sample(5)])
    last = snap(
        n,
        [
            sample(0, t=T + 2),
            sample(1, util=45, t=T + 2),  # busy in one reading is busy
            sample(2, used=30 * GIB, t=T + 2),  # held by somebody
            sample(3, lost=True, t=T + 2),
            sample(4, util=None, t=T + 2),
            sample(5, t=T + 2),
        ],
        processes=[ProcessSample(pid=9, gpu_index=2, gpu_memory_bytes=30 * GIB, user="bob")],
        findings=[
            Finding("xid", "fail", "GPU 5: XID 79", gpu_index=5, key="x"),
            Finding("other_processes", "info", "GPU 2: bob", gpu_index=2, key="o"),
        ],
        t=T + 2,
    )
    judged = judge([first, last], Criteria(count=2), window_s=2.0)
    assert [j.index for j in judged if j.qualifies] == [0]
    assert "busy: utilization up to 45 % over 2.0 s (--max-util 10)" in reasons(judged, 1)
    assert "held: 30.0G in use by 1 process" in reasons(judged, 2)
    assert reasons(judged, 3).startswith("lost")
    assert "utilization not reported" in reasons(judged, 4)
    assert "unhealthy: GPU 5: XID 79 [xid]" in reasons(judged, 5)
    # --min-free allows sharing a GPU whose holder leaves enough memory
    shared = judge([first, last], Criteria(count=2, min_free_bytes=40 * GIB))
    assert shared[2].qualifies
    assert "50.0G free, needs 60.0G" in reasons(
        judge([first, last], Criteria(min_free_bytes=60 * GIB)), 2
    )
    # --max-util 100 accepts a GPU that does not report utilization
    assert judge([last], Criteria(max_util_pct=100))[4].qualifies


def test_warnings_rank_after_healthy_gpus_and_strict_excludes_them() -> None:
    n = node(2)
    reading = snap(
        n,
        [sample(0), sample(1)],
        findings=[Finding("persistence_mode", "warn", "GPU 0: persistence off", gpu_index=0)],
    )
    judged = judge([reading], Criteria())
    assert judged[0].qualifies and judged[0].warnings
    assert choose(n, judged, 1) == (1,)
    strict = judge([reading], Criteria(strict=True))
    assert "warning: GPU 0: persistence off" in reasons(strict, 0)


def test_mig_mode_and_recent_processes_do_not_qualify() -> None:
    mig = node(1, mig_enabled=True)
    assert "MIG mode" in reasons(judge([snap(mig, [sample(0)])], Criteria()), 0)
    n = node(2)
    started = [
        ProcessSample(
            pid=1, gpu_index=0, gpu_memory_bytes=200 << 20, user="eve", start_time=T - 60
        ),
        ProcessSample(pid=2, gpu_index=1, gpu_memory_bytes=200 << 20, start_time=T - 3600),
    ]
    reading = snap(n, [sample(0), sample(1)], processes=started)
    judged = judge([reading], Criteria(idle_for_s=300))
    assert "PID 1 (eve) started 1m00s ago (--idle-for 5m00s)" in reasons(judged, 0)
    assert judged[1].qualifies
    unknown = snap(n, [sample(0)], processes=[ProcessSample(pid=3, gpu_index=0)])
    assert "start time unknown" in reasons(judge([unknown], Criteria(idle_for_s=60)), 0)
    assert judge([reading], Criteria())[0].qualifies  # without --idle-for a new process is fine


# -- choosing -------------------------------------------------------------------------------------


def test_the_closest_gpus_are_picked() -> None:
    # 0-1 and 2-3 behind one PCIe switch each, everything else across NUMA nodes; 1 is busy
    n = node(4, pcie_pairs(4, {(0, 1), (2, 3)}))
    reading = snap(n, [sample(0), sample(1, util=90), sample(2), sample(3)])
    judged = judge([reading], Criteria(count=2))
    assert choose(n, judged, 2) == (2, 3)
    assert choose(n, judged, 3) == (0, 2, 3)
    assert choose(n, judged, 5) == (0, 2, 3)  # fewer qualify: all of them


def test_nvlink_beats_pcie_and_nvswitch_pairs_go_by_their_switch() -> None:
    links = (
        LinkInfo(0, 0, "nvlink", remote_type="gpu", remote_gpu_index=3),
        LinkInfo(3, 0, "nvlink", remote_type="gpu", remote_gpu_index=0),
    )
    n = node(4, Topology(paths=pcie_pairs(4, {(0, 1)}).paths, links=links))
    judged = judge([snap(n, [sample(i) for i in range(4)])], Criteria(count=2))
    assert choose(n, judged, 2) == (0, 3)
    # an NVSwitch board: every pair is NV18; the pair behind one PCIe switch is preferred
    switch = tuple(
        LinkInfo(g, k, "nvlink", remote_type="switch") for g in range(4) for k in range(18)
    )
    n = node(4, Topology(paths=pcie_pairs(4, {(2, 3)}, "PXB").paths, links=switch))
    judged = judge([snap(n, [sample(i) for i in range(4)])], Criteria(count=2))
    assert choose(n, judged, 2) == (2, 3)
    assert distance(n, 2, 3) < distance(n, 0, 1) < distance(node(2), 0, 1)


def test_with_one_gpu_the_most_free_memory_wins() -> None:
    n = node(3)
    reading = snap(n, [sample(0, used=900 << 20), sample(1, used=100 << 20), sample(2, util=5)])
    assert choose(n, judge([reading], Criteria()), 1) == (1,)


def test_output_formats() -> None:
    n = node(4)
    assert render_pick(n, (2, 3), "indices") == "2,3"
    assert render_pick(n, (2, 3), "uuids") == "GPU-00000002,GPU-00000003"
    assert render_pick(n, (2, 3), "env") == (
        "export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=2,3"
    )
    assert render_pick(n, (), "env") == ""


# -- the command ----------------------------------------------------------------------------------


def run(scenario: str, capsys, **kw) -> tuple[int, str, str]:
    seams = Seams(sleep=lambda s: None, environ=kw.pop("environ", {}))
    code = pick.run(PickOptions(BackendSpec.parse(f"sim:{scenario}"), **kw), seams)
    out, err = capsys.readouterr()
    return code, out, err


def test_exit_0_when_n_qualify(capsys) -> None:
    # the MI300X node is idle for its first 15 s: every pair is one XGMI hop
    code, out, err = run("mi300x", capsys, count=2, fmt="env")
    assert (code, out, err) == (0, "export HIP_VISIBLE_DEVICES=0,1\n", "")
    code, out, err = run("dgx-h100", capsys, min_free_bytes=parse_size("30G"))
    assert (code, out) == (0, "7\n")  # the idle notebook leaves 40 GB on GPU 7
    assert "CUDA_DEVICE_ORDER=PCI_BUS_ID" in err  # the indices are NVML's: said once
    code, out, err = run(
        "dgx-h100",
        capsys,
        min_free_bytes=parse_size("30G"),
        environ={"CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
    )
    assert (code, out, err) == (0, "7\n", "")


def test_exit_1_prints_what_qualifies_and_why_the_rest_do_not(capsys) -> None:
    code, out, err = run("dgx-h100", capsys, count=2, min_free_bytes=parse_size("30G"))
    assert code == 1 and out == "7\n"
    assert err.startswith("gputui pick: 1 GPU qualifies, 2 asked for:\n")
    assert "  GPU 7: picked" in err
    assert "  GPU 0: busy: utilization up to" in err
    code, out, err = run("dgx-h100", capsys)
    assert code == 1 and out == ""
    assert "GPU 7: held: 39.3G in use by 1 process" in err


def test_candidates_come_from_gpus_or_cuda_visible_devices(capsys) -> None:
    code, out, err = run("mi300x", capsys, count=2, gpus="5,6,7")
    assert (code, out) == (0, "5,6\n") and "candidates from --gpus" in err
    code, out, err = run("mi300x", capsys, count=3, environ={"CUDA_VISIBLE_DEVICES": "2,3"})
    assert (code, out) == (1, "2,3\n")
    assert "GPU 0" not in err  # not a candidate: not judged
    code, out, err = run("mi300x", capsys, environ={"CUDA_VISIBLE_DEVICES": "-1"})
    assert code == 2 and "no GPU to pick from" in err
    code, out, err = run("mi300x", capsys, gpus="9")
    assert code == 2 and "no such GPU 9" in err


def test_exit_2_without_a_gpu(monkeypatch, capsys) -> None:
    def refuse(spec="auto", *, seed=0, **kw):
        raise NoBackend([("NVML", "libnvidia-ml.so.1 not found (no NVIDIA driver)")])

    monkeypatch.setattr("gputui.backends.open_backend", refuse)
    assert cli.main(["pick", "-n", "2"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "NVML: libnvidia-ml.so.1 not found" in err


def test_pick_from_the_command_line(capsys) -> None:
    assert cli.main(["pick", "--backend", "sim:mi300x", "-n", "2", "--window", "0"]) == 0
    assert capsys.readouterr().out == "0,1\n"
    code = cli.main(["--demo", "pick", "--min-free", "30G", "--format", "uuids", "--window", "0"])
    assert code == 0
    assert capsys.readouterr().out.startswith("GPU-")
    assert cli.main(["--demo", "pick", "-v", "--max-util", "100", "--min-free", "1G",
                     "--window", "0", "--idle-for", "1m"]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert "  GPU 7: picked" in err  # the most free memory
    assert "  GPU 0: qualifies" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["pick", "--min-free", "lots"], "is not a size"),
        (["pick", "--max-util", "120"], "between 0 and 100"),
        (["pick", "--idle-for", "soon"], "is not a duration"),
        (["pick", "--format", "json"], "invalid choice"),
        (["pick", "--window", "600"], "between 0 and 60"),
    ],
)
def test_bad_arguments_exit_2(capsys, argv, message) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_zero_gpus_is_a_usage_error(capsys) -> None:
    assert cli.main(["pick", "-n", "0", "--demo"]) == 2
    assert "pick at least 1 GPU" in capsys.readouterr().err


def test_a_recording_cannot_be_picked_from(tmp_path, capsys) -> None:
    code = pick.run(PickOptions(BackendSpec.replay(str(tmp_path / "x.jsonl"))), Seams(environ={}))
    assert code == 2 and "cannot pick from a recording" in capsys.readouterr().err
