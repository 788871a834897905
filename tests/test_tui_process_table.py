"""ProcessTable: rows in place, cursor stability, sorting, filtering, cheap no-op refreshes,
selection, thousands of rows, commands shortened to the column."""

from __future__ import annotations

from typing import Any

import pytest
from tests.fakes.table_app import TableApp, pids

from gputui.core.format import fmt_bytes
from gputui.core.model import GpuInfo, GpuSample, MigDeviceInfo, NodeInfo, ProcessSample, Snapshot
from gputui.tui.widgets.process_table import (
    COLUMN_KEYS,
    MIN_COMMAND_WIDTH,
    ProcessTable,
    sort_processes,
)

GiB = 1024**3
MiB = 1024**2
T0 = 1_700_000_000.0

NODE = NodeInfo(
    hostname="node1",
    backend="fake",
    gpus=tuple(GpuInfo(index=i, name="Fake GPU", uuid=f"GPU-{i}", vendor="nvidia") for i in (0, 1)),
)


def proc(pid: int, gpu: int = 0, mem: int | None = GiB, **kw: Any) -> ProcessSample:
    kw.setdefault("user", "alice")
    kw.setdefault("command", f"python train_{pid}.py")
    kw.setdefault("name", "python")
    kw.setdefault("start_time", T0 - 100.0)
    return ProcessSample(pid=pid, gpu_index=gpu, gpu_memory_bytes=mem, **kw)


def snap(*processes: ProcessSample, ts: float = T0) -> Snapshot:
    gpus = tuple(GpuSample(index=i, timestamp=ts) for i in (0, 1))
    return Snapshot(timestamp=ts, node=NODE, gpus=gpus, processes=processes)


def shown_pids(table: ProcessTable) -> list[int]:
    """PIDs of the rows drawn on screen, read back from the lines the table drew."""
    pid_x = table.header_x("pid")
    return [int(line[pid_x : pid_x + 7]) for line in table.plain_lines[1:] if line[pid_x:].strip()]


def cell(table: ProcessTable, key: str, column: str) -> str:
    return table.cell_text(key, column).strip()


async def test_rows_added_updated_removed() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(snap(proc(10, mem=2 * GiB), proc(20, mem=GiB)))
        await pilot.pause()
        assert pids(table) == [10, 20]
        assert cell(table, "10:0", "gpu_mem") == fmt_bytes(2 * GiB)

        table.update_processes(snap(proc(10, mem=512 * MiB), proc(30, gpu=1, mem=3 * GiB)))
        await pilot.pause()
        assert pids(table) == [10, 30]  # grouped by GPU: GPU 0's first
        assert cell(table, "10:0", "gpu_mem") == fmt_bytes(512 * MiB)
        assert cell(table, "30:1", "gpu") == "1"
        assert table.row_count == 2  # PID 20 vanished without fuss
        assert shown_pids(table) == [10, 30]


async def test_cell_texts() -> None:
    app = TableApp()
    async with app.run_test(size=(140, 40)) as pilot:  # room for every column and JOB / POD
        table = app.query_one(ProcessTable)
        table.update_processes(
            snap(
                proc(
                    1,
                    type="compute+graphics",
                    sm_pct=None,
                    cpu_pct=None,
                    host_rss_bytes=None,
                    start_time=T0 - (2 * 3600 + 3 * 60 + 11),
                    container_id="0123456789abcdef0123",
                ),
                proc(2, command=None, name="Xorg", type="graphics", start_time=T0 - 3.2 * 86400),
                proc(3, user=None, mem=None, sm_pct=42.4, cpu_pct=99.6, start_time=None),
            )
        )
        await pilot.pause()
        assert cell(table, "1:0", "type") == "C+G"
        assert cell(table, "1:0", "sm") == "-"
        assert cell(table, "1:0", "cpu") == "n/a"
        assert cell(table, "1:0", "rss") == "n/a"
        assert cell(table, "1:0", "time") == "2:03:11"
        # The JOB / POD column names the container; the command does not say it again.
        assert cell(table, "1:0", "workload") == "ctr 0123456789ab"
        assert cell(table, "1:0", "command") == "python train_1.py"
        assert cell(table, "2:0", "workload") == "-"
        assert cell(table, "2:0", "type") == "G"
        assert cell(table, "2:0", "command") == "Xorg"
        assert cell(table, "2:0", "time") == "3d04h"
        assert cell(table, "3:0", "user") == "n/a"
        assert cell(table, "3:0", "gpu_mem") == "n/a"
        assert cell(table, "3:0", "sm") == "42%"
        assert cell(table, "3:0", "cpu") == "100%"
        assert cell(table, "3:0", "time") == "n/a"

        # TIME comes from the snapshot's timestamp, not the wall clock.
        table.update_processes(snap(proc(2, start_time=T0 - 3.2 * 86400), ts=T0 + 86400))
        await pilot.pause()
        assert cell(table, "2:0", "time") == "4d04h"


async def test_cursor_follows_process_when_rows_reorder() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(snap(proc(1, mem=3 * GiB), proc(2, mem=2 * GiB), proc(3, mem=GiB)))
        await pilot.pause()
        await pilot.press("down")
        assert table.selected_process is not None and table.selected_process.pid == 2

        # PID 2 grows to the top: the cursor moves with it.
        table.update_processes(snap(proc(1, mem=3 * GiB), proc(2, mem=5 * GiB), proc(3, mem=GiB)))
        await pilot.pause()
        assert pids(table) == [2, 1, 3]
        assert table.cursor_row == 0
        assert table.selected_process.pid == 2
        assert table.selected_process.gpu_memory_bytes == 5 * GiB  # the fresh sample


async def test_cursor_follows_process_when_another_row_goes() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(
            snap(proc(1, mem=3 * GiB), proc(2, mem=2 * GiB), proc(3, mem=GiB), proc(4, mem=1))
        )
        await pilot.pause()
        await pilot.press("down", "down")
        assert table.selected_process.pid == 3

        table.update_processes(snap(proc(2, mem=2 * GiB), proc(3, mem=GiB), proc(4, mem=1)))
        await pilot.pause()
        assert pids(table) == [2, 3, 4]
        assert table.cursor_row == 1
        assert table.selected_process.pid == 3

        table.update_processes(snap(proc(2, mem=2 * GiB), proc(3, mem=GiB)))
        await pilot.pause()
        assert table.selected_process.pid == 3

        # The selected process itself goes: the cursor stays in range, no error.
        table.update_processes(snap(proc(2, mem=2 * GiB)))
        await pilot.pause()
        assert table.selected_process.pid == 2


async def test_sort_keys_numeric_with_none_last_and_reverse() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(
            snap(
                proc(9, mem=9 * MiB, sm_pct=5.0),
                proc(100, mem=None, sm_pct=None),
                proc(10, mem=10 * GiB, sm_pct=80.0),
                proc(7, mem=100 * MiB, sm_pct=40.0),
            )
        )
        await pilot.pause()
        # Default: GPU memory, biggest first, unknown last (as strings "9.00M" would lead).
        assert (table.sort_column, table.sort_reverse) == ("gpu_mem", True)
        assert pids(table) == [10, 7, 9, 100]
        await pilot.press("down")
        assert table.selected_process.pid == 7

        await pilot.press("s")  # next column: SM%, descending
        await pilot.pause()
        assert (table.sort_column, table.sort_reverse) == ("sm", True)
        assert pids(table) == [10, 7, 9, 100]
        await pilot.press("S")  # reversed: ascending, unknown still last
        await pilot.pause()
        assert pids(table) == [9, 7, 10, 100]
        assert table.selected_process.pid == 7  # the cursor stayed on its process

        table.sort_by("pid")  # ascending, numeric: 7, 9, 10, 100 (as text: 10, 100, 7, 9)
        await pilot.pause()
        assert pids(table) == [7, 9, 10, 100]
        assert "PID ▲" in table.plain_lines[0]
        assert "GPU MEM ▼" not in table.plain_lines[0]


async def test_sort_cycles_through_every_column() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(ProcessTable)
        seen = [table.sort_column]
        for _ in COLUMN_KEYS:
            await pilot.press("s")
            seen.append(table.sort_column)
        assert seen[-1] == seen[0]
        assert sorted(set(seen)) == sorted(COLUMN_KEYS)


async def test_sort_by_header_click() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(
            snap(
                proc(1, cpu_pct=150.0),
                proc(2, cpu_pct=None),
                proc(3, cpu_pct=12.0),
                proc(4, cpu_pct=9.0),
            )
        )
        await pilot.pause()
        assert await pilot.click(ProcessTable, offset=(table.header_x("cpu") + 1, 0))
        await pilot.pause()
        assert (table.sort_column, table.sort_reverse) == ("cpu", True)
        assert pids(table) == [1, 3, 4, 2]
        # A second click on the same header reverses it.
        assert await pilot.click(ProcessTable, offset=(table.header_x("cpu") + 1, 0))
        await pilot.pause()
        assert (table.sort_column, table.sort_reverse) == ("cpu", False)
        assert pids(table) == [4, 3, 1, 2]

        assert await pilot.click(ProcessTable, offset=(table.header_x("user") + 1, 0))
        await pilot.pause()
        assert table.sort_column == "user"
        # A click on a row moves the cursor there; a second click on it selects it.
        assert await pilot.click(ProcessTable, offset=(3, 2))
        await pilot.pause()
        assert table.cursor_row == 1 and app.selected == []
        assert await pilot.click(ProcessTable, offset=(3, 2))
        await pilot.pause()
        assert [p.pid for p in app.selected] == [table.visible_processes[1].pid]


async def test_gpu_and_text_filters() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(
            snap(
                proc(11, gpu=0, user="alice", command="Python train.py"),
                proc(12, gpu=1, user="bob", command="/usr/bin/vllm serve", name="vllm"),
                proc(13, gpu=1, user="carol", command=None, name="Xorg"),
            )
        )
        await pilot.pause()
        assert sorted(pids(table)) == [11, 12, 13]
        assert table.empty_text == ""

        table.gpu_filter = 1
        await pilot.pause()
        assert sorted(pids(table)) == [12, 13]

        table.text_filter = "XORG"  # case-insensitive, matches the name
        await pilot.pause()
        assert pids(table) == [13]
        table.gpu_filter = None
        table.text_filter = "python"
        await pilot.pause()
        assert pids(table) == [11]
        table.text_filter = "bob"  # user
        await pilot.pause()
        assert pids(table) == [12]
        table.text_filter = "13"  # PID
        await pilot.pause()
        assert pids(table) == [13]

        table.text_filter = "foo"
        await pilot.pause()
        assert pids(table) == []
        assert table.empty_text == "no processes match “foo”"
        assert table.plain_lines[1].strip() == "no processes match “foo”"
        table.text_filter = "[b"  # not markup
        await pilot.pause()
        assert table.plain_lines[1].strip() == "no processes match “[b”"
        table.text_filter = "it's \\x"  # as typed: no escaping
        await pilot.pause()
        assert table.plain_lines[1].strip() == "no processes match “it's \\x”"
        table.text_filter = ""
        table.gpu_filter = 3
        await pilot.pause()
        assert table.empty_text == "no processes on GPU 3"
        table.gpu_filter = None
        await pilot.pause()
        assert sorted(pids(table)) == [11, 12, 13]
        assert table.empty_text == ""


async def test_unchanged_snapshot_touches_nothing() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(snap(proc(1, mem=2 * GiB, cpu_pct=10.2), proc(2, mem=GiB)))
        await pilot.pause()
        spans_before = table.spans_refreshed
        lines_before = table.plain_lines

        # New objects, a later timestamp, values that format the same: nothing to repaint.
        table.update_processes(
            snap(proc(1, mem=2 * GiB, cpu_pct=10.4), proc(2, mem=GiB), ts=T0 + 0.5)
        )
        await pilot.pause()
        assert table.spans_refreshed == spans_before
        assert table.plain_lines == lines_before

        # One visible change: one span of one line is repainted, no re-sort, no cursor move.
        table.update_processes(
            snap(proc(1, mem=2 * GiB, cpu_pct=55.0), proc(2, mem=GiB), ts=T0 + 0.7)
        )
        await pilot.pause()
        assert table.spans_refreshed == spans_before + 1
        assert cell(table, "1:0", "cpu") == "55%"
        after = table.plain_lines
        changed = [i for i, (a, b) in enumerate(zip(lines_before, after, strict=True)) if a != b]
        assert changed == [1]


async def test_enter_posts_selected() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(snap(proc(1, mem=2 * GiB), proc(2, mem=GiB)))
        await pilot.pause()
        await pilot.press("down", "enter")
        await pilot.pause()
        assert [p.pid for p in app.selected] == [2]


async def test_empty_table_has_no_selection() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(snap())
        await pilot.pause()
        assert table.selected_process is None
        await pilot.press("enter")
        await pilot.pause()
        assert app.selected == []
        assert table.empty_text == "no GPU processes"
        assert table.plain_lines[1].strip() == "no GPU processes"


def test_sort_processes_orders_text_case_insensitively_with_none_last() -> None:
    procs = [proc(1, user="bob"), proc(2, user=None), proc(3, user="Alice")]
    assert [p.pid for p in sort_processes(procs, "user", False, T0)] == [3, 1, 2]
    assert [p.pid for p in sort_processes(procs, "user", True, T0)] == [1, 3, 2]
    with pytest.raises(KeyError):
        sort_processes(procs, "nope", False, T0)


async def test_narrow_table_keeps_the_command_and_the_selection() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(snap(proc(10, mem=2 * GiB), proc(20, mem=GiB)))
        await pilot.pause()
        await pilot.press("down")  # select PID 20
        assert table.selected_process.pid == 20
        assert "time" in table.column_keys

        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        keys = table.column_keys
        assert "command" in keys and not {"type", "rss", "time"} & set(keys)
        assert table.selected_process.pid == 20
        assert cell(table, "10:0", "command") == "python train_10.py"

        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert "time" in table.column_keys
        assert table.selected_process.pid == 20


# -- many processes --------------------------------------------------------------------------------


def crowd(n: int, ts: float = T0) -> Snapshot:
    """``n`` processes on two GPUs: distinct memory sizes, ranks in their command lines."""
    processes = tuple(
        proc(
            1000 + i,
            gpu=i % 2,
            mem=(i + 1) * MiB,
            command=f"/opt/conda/bin/python -u /home/a/train.py --config big.yaml --local-rank={i}",
            container_id="5e277ec3818f",
        )
        for i in range(n)
    )
    return snap(*processes, ts=ts)


async def test_two_thousand_processes_scroll_sort_and_filter(monkeypatch) -> None:
    from gputui.tui.widgets import process_table as module

    calls = []
    real = module.command_text
    monkeypatch.setattr(module, "command_text", lambda *a, **k: calls.append(a) or real(*a, **k))
    app = TableApp()
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.query_one(ProcessTable)
        table.grouped = False  # by GPU memory across both GPUs
        table.update_processes(crowd(2000))
        await pilot.pause()
        assert table.row_count == 2000
        page = table.size.height - 1
        assert shown_pids(table) == [1000 + i for i in range(1999, 1999 - page, -1)]
        # Only the rows in view were formatted.
        assert 0 < len(calls) <= page
        assert table.plain_lines[1].rstrip().endswith("┃")  # a scroll bar, at the top

        await pilot.press("end")
        assert table.selected_process.pid == 1000
        assert shown_pids(table)[-1] == 1000 and table.top_row == 2000 - page
        assert table.plain_lines[-1].rstrip().endswith("┃")
        await pilot.press("home", "pagedown")
        assert table.cursor_row == page - 1 and table.top_row == page - 1
        await pilot.press("pageup")
        assert table.cursor_row == 0 and table.top_row == 0

        table.gpu_filter = 1
        await pilot.pause()
        assert table.row_count == 1000 and all(p.gpu_index == 1 for p in table.visible_processes)
        table.text_filter = "rank=1999"
        await pilot.pause()
        assert pids(table) == [2999]
        table.gpu_filter = None
        table.text_filter = ""
        await pilot.press("s")  # SM%: all equal, ties by (GPU, PID)
        await pilot.pause()
        assert table.sort_column == "sm"
        assert table.visible_processes[0].pid == 1000 and table.visible_processes[1].pid == 1002


async def test_the_command_column_keeps_what_tells_processes_apart() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(crowd(8))
        await pilot.pause()
        commands = [cell(table, f"{1000 + i}:{i % 2}", "command") for i in range(8)]
        assert all(c.endswith(f"--local-rank={i}") for i, c in enumerate(commands))
        assert commands[3] == "train.py … --local-rank=3"  # the container is in JOB / POD
        assert cell(table, "1003:1", "workload") == "ctr 5e277ec3818f"
        for line in table.plain_lines:
            assert len(line) == table.size.width
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert cell(table, "1003:1", "command") == "train.py … --local-rank=3"


# -- who uses the GPUs: the JOB / POD column -------------------------------------------------------

POD_UID = "3f1c9a52-8d4e-4b7a-9c21-5e6f7a8b9c0d"
JUPYTER_ID = "9c3e" * 16


def workloads() -> Snapshot:
    """Two ranks of a Slurm job, a pod, a Docker container and a process of nobody's."""
    job = {
        "slurm_job_id": "4242",
        "slurm_step": "0",
        "slurm_job_name": "train-llama",
        "slurm_job_user": "svc-train",
    }
    return snap(
        proc(21, gpu=0, mem=70 * GiB, command="python train.py --local-rank=0", **job),
        proc(22, gpu=1, mem=69 * GiB, command="python train.py --local-rank=1", **job),
        proc(
            31,
            gpu=1,
            mem=60 * GiB,
            command="/usr/bin/python3 vllm serve llama --port 8001",
            container_id="ab" * 32,
            container_name="vllm",
            container_runtime="containerd",
            k8s_pod_uid=POD_UID,
            k8s_pod_name="vllm-0",
            k8s_namespace="ml",
        ),
        proc(
            41,
            gpu=0,
            mem=40 * GiB,
            command="python -m ipykernel_launcher",
            container_id=JUPYTER_ID,
            container_name="jupyter",
            container_runtime="docker",
        ),
        proc(51, gpu=0, mem=GiB, command="python notebook.py"),
    )


async def test_job_pod_column_shows_only_while_a_process_has_a_workload() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(snap(proc(1), proc(2, container_id=None)))
        await pilot.pause()
        assert "workload" not in table.column_keys
        assert "JOB / POD" not in table.plain_lines[0]
        assert "type" in table.column_keys  # nothing gave way

        table.update_processes(workloads())
        await pilot.pause()
        keys = table.column_keys
        assert keys.index("workload") == keys.index("command") - 1  # just before COMMAND
        assert table.plain_lines[0].index("JOB / POD") < table.plain_lines[0].index("COMMAND")
        assert cell(table, "21:0", "workload") == "job 4242 train-ll…"  # clipped to its column
        assert cell(table, "31:1", "workload") == "pod ml/vllm-0"
        assert cell(table, "41:0", "workload") == "ctr jupyter"
        assert cell(table, "51:0", "workload") == "-"
        drawn = next(line for line in table.plain_lines if " 31 " in line)
        assert "pod ml/vllm-0" in drawn

        table.update_processes(snap(proc(1)))  # the workloads are gone: so is the column
        await pilot.pause()
        assert "workload" not in table.column_keys
        assert "JOB / POD" not in table.plain_lines[0]


async def test_job_pod_column_sorts_by_its_label() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(ProcessTable)
        table.grouped = False
        table.update_processes(workloads())
        await pilot.pause()
        table.sort_by("workload")
        await pilot.pause()
        # ctr jupyter, job 4242 (two ranks by GPU), pod ml/vllm-0; nobody's last.
        assert pids(table) == [41, 21, 22, 31, 51]
        assert "JOB / POD ▲" in table.plain_lines[0]
        table.sort_by("workload", reverse=True)
        await pilot.pause()
        assert pids(table) == [31, 21, 22, 41, 51]
        # A click on its header sorts by it too, and `s` passes through it.
        table.sort_by("pid")
        await pilot.pause()
        assert await pilot.click(ProcessTable, offset=(table.header_x("workload") + 1, 0))
        await pilot.pause()
        assert table.sort_column == "workload"
        seen = set()
        for _ in table.column_keys:
            await pilot.press("s")
            seen.add(table.sort_column)
        assert seen == set(table.column_keys)


@pytest.mark.parametrize(
    ("needle", "expected"),
    [
        ("vllm-0", [31]),  # pod name
        ("ml", [31]),  # namespace
        ("4242", [21, 22]),  # Slurm job id
        ("train-llama", [21, 22]),  # job name
        ("jupyter", [41]),  # container name
        ("9c3e9c3e", [41]),  # container id
        ("docker", [41]),  # runtime
    ],
)
async def test_filter_matches_the_job_pod_and_container(needle: str, expected: list[int]) -> None:
    app = TableApp()
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(workloads())
        await pilot.pause()
        table.text_filter = needle.upper()  # case-insensitive
        await pilot.pause()
        assert sorted(pids(table)) == expected


async def test_command_says_the_container_only_when_job_pod_does_not() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(
            snap(proc(7, command="/srv/serve", container_id="5e277ec3818f" + "0" * 52))
        )
        await pilot.pause()
        assert "workload" in table.column_keys
        assert cell(table, "7:0", "workload") == "ctr 5e277ec3818f"
        assert cell(table, "7:0", "command") == "serve"
        assert "[ctr" not in "".join(table.plain_lines)

        # Too narrow for the column (COMMAND would be squeezed): the tag comes back.
        await pilot.resize_terminal(100, 24)
        await pilot.pause()
        assert "workload" not in table.column_keys
        assert cell(table, "7:0", "command") == "[ctr 5e277ec3] serve"


@pytest.mark.parametrize(
    ("width", "shown", "left_out"),
    [
        (160, True, set()),
        (120, True, {"type"}),  # TYPE gives way to JOB / POD
        (110, True, {"type", "rss"}),
        (100, False, set()),  # not even then: the table as it is without workloads
        (95, True, {"type", "rss", "time"}),  # the narrow layout has room again
        (80, False, {"type", "rss", "time"}),
    ],
)
async def test_job_pod_column_leaves_the_command_room(
    width: int, shown: bool, left_out: set[str]
) -> None:
    app = TableApp()
    async with app.run_test(size=(width, 24)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(workloads())
        await pilot.pause()
        keys = set(table.column_keys)
        assert ("workload" in keys) is shown
        assert not keys & left_out
        assert keys | left_out | {"workload"} == set(COLUMN_KEYS) | {"workload"}
        if shown:
            assert width - table.header_x("command") >= MIN_COMMAND_WIDTH
        assert all(len(line) == width for line in table.plain_lines)


async def test_job_pod_column_widens_when_the_command_has_room_to_spare() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 24)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(workloads())
        await pilot.pause()
        assert cell(table, "21:0", "workload") == "job 4242 train-ll…"
        await pilot.resize_terminal(200, 24)
        await pilot.pause()
        assert cell(table, "21:0", "workload") == "job 4242 train-llama"
        assert 200 - table.header_x("command") >= 60


# -- MIG instances under their GPU -----------------------------------------------------------------

MIG_NODE = NodeInfo(
    hostname="node1",
    backend="fake",
    gpus=(
        GpuInfo(
            index=0,
            name="NVIDIA H100 80GB HBM3",
            uuid="GPU-0",
            vendor="nvidia",
            mig_enabled=True,
            mig_devices=tuple(
                MigDeviceInfo(0, gi, 0, f"MIG-0-{gi}", "NVIDIA H100 80GB HBM3 MIG 1g.10gb")
                for gi in (7, 8, 13)
            ),
        ),
        GpuInfo(index=1, name="NVIDIA H100 80GB HBM3", uuid="GPU-1", vendor="nvidia"),
    ),
)


def mig_snap() -> Snapshot:
    procs = (
        proc(101, gpu=0, mem=8 * GiB, mig_uuid="MIG-0-13"),
        proc(102, gpu=0, mem=9 * GiB, mig_uuid="MIG-0-7"),
        proc(103, gpu=0, mem=7 * GiB, mig_uuid="MIG-0-8"),
        proc(104, gpu=1, mem=60 * GiB),
        proc(105, gpu=0, mem=GiB, mig_uuid="MIG-unknown"),
    )
    gpus = tuple(GpuSample(index=i, timestamp=T0) for i in (0, 1))
    return Snapshot(timestamp=T0, node=MIG_NODE, gpus=gpus, processes=procs)


async def test_mig_processes_show_their_instance_and_sort_under_their_gpu() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(mig_snap())
        await pilot.pause()
        assert cell(table, "102:0", "gpu") == "0·g7"
        assert cell(table, "101:0", "gpu") == "0·g13"
        assert cell(table, "104:1", "gpu") == "1"
        assert cell(table, "105:0", "gpu") == "0·?"  # an instance the node does not list
        drawn = next(line for line in table.plain_lines if " 101 " in line)
        assert drawn.split()[0] == "0·g13"  # whole: the GPU column is wide enough

        table.sort_by("gpu")
        await pilot.pause()
        # GPU 0's instances in the order of their ids (the unlisted one first), then GPU 1.
        assert pids(table) == [105, 102, 103, 101, 104]
        table.sort_by("gpu", reverse=True)
        await pilot.pause()
        assert pids(table) == [104, 101, 103, 102, 105]

        table.gpu_filter = 0  # the parent GPU: every process in its instances
        await pilot.pause()
        assert sorted(pids(table)) == [101, 102, 103, 105]
        table.gpu_filter = 1
        await pilot.pause()
        assert pids(table) == [104]


def test_sort_by_gpu_without_instances_keeps_the_index_order() -> None:
    procs = list(mig_snap().processes)
    ordered = sort_processes(procs, "gpu", False, T0)
    assert [p.gpu_index for p in ordered] == [0, 0, 0, 0, 1]
    assert [p.pid for p in ordered] == [101, 102, 103, 105, 104]  # ties by PID


async def test_empty_table_says_when_the_list_may_be_incomplete() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 20)) as pilot:
        table = app.query_one(ProcessTable)
        gpus = (
            GpuSample(index=0, timestamp=T0, process_list_incomplete=True),
            GpuSample(index=1, timestamp=T0, process_list_incomplete=False),
        )
        table.update_processes(Snapshot(timestamp=T0, node=NODE, gpus=gpus))
        await pilot.pause()
        note = "(the list may be incomplete: run as root)"
        assert table.empty_text == f"no processes listed {note}"
        assert table.plain_lines[1].strip() == f"no processes listed {note}"
        table.gpu_filter = 0
        await pilot.pause()
        assert table.empty_text == f"no processes on GPU 0 {note}"
        table.gpu_filter = 1
        await pilot.pause()
        assert table.empty_text == "no processes on GPU 1"
