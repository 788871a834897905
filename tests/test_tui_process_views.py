"""The process table's ways of showing processes: grouped by GPU with the cursor's place in the
header, as a tree, tagged, commands scrolled sideways, filter matches highlighted and brought into
view, exited and signalled processes, and the sort column kept in view in a narrow table."""

from __future__ import annotations

from typing import Any

from tests.fakes.table_app import TableApp, pids

from gputui.core.model import GpuInfo, GpuSample, NodeInfo, ProcessSample, Snapshot
from gputui.tui.widgets.line_widget import DIM, MATCH, TAGGED, VALUE
from gputui.tui.widgets.process_table import ProcessTable

GiB = 1024**3
T0 = 1_700_000_000.0
NODE = NodeInfo(
    hostname="node1",
    backend="fake",
    gpus=tuple(GpuInfo(index=i, name="Fake GPU", uuid=f"GPU-{i}", vendor="nvidia") for i in (0, 1)),
)
LONG = (
    "/opt/serve/venv/bin/python -m serve.worker --model BAAI/bge-large-en-v1.5 "
    "--dtype bfloat16 --max-num-seqs 16 --local-rank=67 --port=22867"
)


def proc(pid: int, gpu: int = 0, mem: float = 1, **kw: Any) -> ProcessSample:
    kw.setdefault("user", "alice")
    kw.setdefault("command", f"python train_{pid}.py")
    kw.setdefault("name", "python")
    kw.setdefault("start_time", T0 - 100.0)
    kw.setdefault("cpu_pct", 50.0)
    kw.setdefault("host_rss_bytes", GiB)
    return ProcessSample(pid=pid, gpu_index=gpu, gpu_memory_bytes=int(mem * GiB), **kw)


def snap(*processes: ProcessSample, ts: float = T0) -> Snapshot:
    gpus = tuple(GpuSample(index=i, timestamp=ts) for i in (0, 1))
    return Snapshot(timestamp=ts, node=NODE, gpus=gpus, processes=processes)


def row_line(table: ProcessTable, pid: int) -> str:
    return next(line for line in table.plain_lines[1:] if f" {pid} " in line)


def row_pieces(table: ProcessTable, pid: int) -> list[tuple[str, str]]:
    index = next(i for i, line in enumerate(table.plain_lines) if i and f" {pid} " in line)
    return table.line_pieces[index]


def cell(table: ProcessTable, pid: int, column: str, gpu: int = 0) -> str:
    return table.cell_text(f"{pid}:{gpu}", column).strip()


# -- grouped by GPU, and where the cursor is ------------------------------------------------------


async def test_rows_are_grouped_by_gpu_and_sorted_within_each() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(
            snap(proc(1, 0, 1), proc(2, 1, 9), proc(3, 0, 5), proc(4, 1, 2), proc(5, 0, 3))
        )
        await pilot.pause()
        # GPU 0's processes by GPU memory, then GPU 1's (not 2, 3, 5, 4, 1 across both).
        assert pids(table) == [3, 5, 1, 2, 4]
        assert "by GPU · 1 of 5" in table.plain_lines[0]
        # The GPU's index is bright on its group's first row, dim on the others.
        gpu_classes = [row_pieces(table, pid)[1][1] for pid in (5, 1, 4)]
        assert gpu_classes == [DIM, DIM, DIM]
        assert row_pieces(table, 2)[1][1] == VALUE  # GPU 1's first row (not the cursor's)

        await pilot.press("g")  # one key away: not grouped
        await pilot.pause()
        assert pids(table) == [2, 3, 5, 4, 1]
        assert "by GPU" not in table.plain_lines[0]
        assert table.plain_lines[0].rstrip().endswith("2 of 5")  # the cursor stayed on PID 3
        await pilot.press("g")
        await pilot.pause()
        assert pids(table) == [3, 5, 1, 2, 4]


async def test_the_header_says_where_the_cursor_is() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 20)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(snap(*(proc(1000 + i, i % 2, (i + 1) / 1024) for i in range(2000))))
        await pilot.pause()
        assert table.plain_lines[0].rstrip().endswith("by GPU · 1 of 2,000")
        await pilot.press("down", "down")
        assert table.plain_lines[0].rstrip().endswith("3 of 2,000")
        await pilot.press("end")
        assert table.plain_lines[0].rstrip().endswith("2,000 of 2,000")
        table.gpu_filter = 1
        await pilot.pause()
        assert "of 1,000 · 2,000 in all" in table.plain_lines[0]
        await pilot.resize_terminal(100, 20)  # less room: the place stays, the rest goes
        await pilot.pause()
        assert table.plain_lines[0].rstrip().endswith("COMMAND  1000/1000")


# -- the tree -------------------------------------------------------------------------------------


def job() -> Snapshot:
    """A torchrun job of three ranks (their parent uses no GPU), a worker a GPU process
    started, and a process of its own."""
    return snap(
        proc(11, 0, 9, ppid=10, parent_name="torchrun", user="svc"),
        proc(12, 1, 8, ppid=10, parent_name="torchrun", user="svc"),
        proc(13, 1, 7, ppid=10, parent_name="torchrun", user="svc"),
        proc(20, 0, 6, ppid=1, parent_name="bash"),
        proc(21, 0, 1, ppid=20, parent_name="python"),
    )


async def test_the_tree_puts_processes_under_their_parents() -> None:
    app = TableApp()
    async with app.run_test(size=(140, 30)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(job())
        await pilot.pause()
        await pilot.press("f", "home")
        await pilot.pause()
        assert table.tree_view
        assert pids(table) == [10, 11, 12, 13, 20, 21]
        commands = [cell(table, pid, "command", gpu) for pid, gpu in
                    ((11, 0), (12, 1), (13, 1), (20, 0), (21, 0))]  # fmt: skip
        assert [c[:3] for c in commands] == ["├─ ", "├─ ", "└─ ", "pyt", "└─ "]
        launcher = row_line(table, 10)
        assert "torchrun · 3 GPU processes" in launcher
        assert "svc" in launcher and "n/a" not in launcher
        assert table.plain_lines[0].rstrip().endswith("tree · 1 of 5")  # processes counted
        # On the parent's row there is no process to open; space there tags its three.
        assert table.selected_process is None and table.selected_launcher is not None
        await pilot.press("enter")
        await pilot.pause()
        assert app.selected == []
        table.toggle_tag()
        assert sorted(p.pid for p in table.tagged_processes) == [11, 12, 13]
        await pilot.press("f")
        await pilot.pause()
        assert not table.tree_view and 10 not in pids(table)


# -- tags -----------------------------------------------------------------------------------------


async def test_tagged_rows_are_marked_and_dropped_when_gone() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(snap(proc(1, mem=3), proc(2, mem=2), proc(3, mem=1)))
        await pilot.pause()
        table.toggle_tag()  # PID 1; the cursor moves on, as in htop
        assert table.selected_process.pid == 2
        await pilot.press("down")
        table.toggle_tag()  # PID 3
        await pilot.pause()
        assert [p.pid for p in table.tagged_processes] == [1, 3]
        assert row_line(table, 1).startswith("●") and row_line(table, 3).startswith("●")
        assert not row_line(table, 2).startswith("●")
        assert row_pieces(table, 1)[0] == ("●", TAGGED)
        assert "2 tagged" in table.plain_lines[0]
        table.update_processes(snap(proc(2, mem=2), proc(3, mem=1)))  # PID 1 exited
        await pilot.pause()
        assert [p.pid for p in table.tagged_processes] == [3]
        table.clear_tags()
        await pilot.pause()
        assert table.tagged_processes == [] and "tagged" not in table.plain_lines[0]


# -- commands scrolled sideways -------------------------------------------------------------------


async def test_commands_scroll_sideways_and_jump_to_start_and_end() -> None:
    app = TableApp()
    async with app.run_test(size=(100, 20)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(snap(proc(7, command=LONG), proc(8, mem=0.5)))
        await pilot.pause()
        fitted = cell(table, 7, "command")
        assert fitted.startswith("serve.worker")
        await pilot.press("right")
        await pilot.pause()
        scrolled = cell(table, 7, "command")
        assert "COMMAND +8" in table.plain_lines[0]
        # The whole line (its directory too), from its ninth cell on.
        assert scrolled == "…" + LONG[9 : 9 + len(scrolled) - 2] + "…"
        await pilot.press("dollar_sign")
        await pilot.pause()
        assert cell(table, 7, "command").endswith("--port=22867")
        await pilot.press("circumflex_accent")
        await pilot.pause()
        assert cell(table, 7, "command") == fitted and "COMMAND +" not in table.plain_lines[0]
        await pilot.press("left")  # at the start already
        assert cell(table, 7, "command") == fitted


# -- the filter: what matched, in view ------------------------------------------------------------


async def test_the_filter_match_is_highlighted_and_brought_into_view() -> None:
    app = TableApp()
    async with app.run_test(size=(100, 20)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(
            snap(
                proc(7, command=LONG),
                proc(
                    8,
                    command="python app.py",
                    name="python",
                    k8s_pod_name="embed-7",
                    k8s_namespace="ml",
                    k8s_pod_uid="0f1e",
                ),
            )
        )
        await pilot.pause()
        assert "bfloat16" not in cell(table, 7, "command")
        table.text_filter = "BFLOAT"
        await pilot.pause()
        assert pids(table) == [7]
        assert "bfloat16" in cell(table, 7, "command")  # the part shortening left out
        matched = [
            text for text, cls in row_pieces(table, 7) if cls in (MATCH, "meter--match-selected")
        ]
        assert matched == ["bfloat"]
        table.text_filter = "embed-7"  # the pod: its column is not shown at this width
        await pilot.pause()
        assert "workload" not in table.column_keys
        assert cell(table, 8, "command").startswith("[pod embed-7] ")
        table.text_filter = "app"  # in the command: nothing added
        await pilot.pause()
        assert not cell(table, 8, "command").startswith("[")


# -- exited and signalled processes ---------------------------------------------------------------


async def test_an_exited_process_reads_exited_not_na() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 20)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(snap(proc(5, user="bob", command="python train.py --rank 3")))
        await pilot.pause()
        gone = ProcessSample(pid=5, gpu_index=0, gpu_memory_bytes=GiB, exited=True)
        table.update_processes(snap(gone, ts=T0 + 3))
        await pilot.pause()
        line = row_line(table, 5)
        assert "n/a" not in line
        assert cell(table, 5, "command") == "exited · python train.py --rank 3"
        assert cell(table, 5, "user") == "bob"  # who it was
        assert [cell(table, 5, c) for c in ("cpu", "rss", "time")] == ["-", "-", "-"]
        # Never seen alive: it says exited all the same.
        table.update_processes(
            snap(ProcessSample(pid=6, gpu_index=0, gpu_memory_bytes=GiB, exited=True))
        )
        await pilot.pause()
        assert cell(table, 6, "command") == "exited" and "n/a" not in row_line(table, 6)


async def test_a_signalled_process_says_so_until_it_is_gone() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 20)) as pilot:
        table = app.query_one(ProcessTable)
        first = proc(5, mem=69)
        table.update_processes(snap(first, proc(6)))
        await pilot.pause()
        await pilot.press("down")  # the cursor off its row, to see its colours
        table.mark_signalled(first, "SIGTERM")
        await pilot.pause()
        assert cell(table, 5, "command").startswith("SIGTERM sent · ")
        assert {cls for _, cls in row_pieces(table, 5) if cls} == {DIM}
        table.update_processes(snap(first, proc(6), ts=T0 + 1))  # still running
        await pilot.pause()
        assert cell(table, 5, "command").startswith("SIGTERM sent · ")
        # The PID now names another process (another start time): no mark.
        table.update_processes(snap(proc(5, start_time=T0 - 5), proc(6), ts=T0 + 2))
        await pilot.pause()
        assert not cell(table, 5, "command").startswith("SIGTERM")


# -- the sort column in a narrow table ------------------------------------------------------------


async def test_the_sort_column_stays_in_view_when_the_table_narrows() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 20)) as pilot:
        table = app.query_one(ProcessTable)
        table.update_processes(snap(proc(1, start_time=T0 - 50), proc(2, start_time=T0 - 900)))
        await pilot.pause()
        table.sort_by("time")
        await pilot.resize_terminal(80, 20)
        await pilot.pause()
        assert "time" in table.column_keys and not {"type", "rss"} & set(table.column_keys)
        assert "TIME ▼" in table.plain_lines[0]
        assert "command" in table.column_keys
        assert pids(table) == [2, 1]
        table.sort_by("gpu_mem")  # a column every width shows: TIME goes again
        await pilot.pause()
        assert "time" not in table.column_keys
