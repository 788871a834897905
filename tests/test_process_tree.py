"""GPU processes as a tree: under their GPU-using parents, and under a row for a parent that
uses no GPU when they share it; in the order given; garbled parent ids never loop."""

from __future__ import annotations

from gputui.core.model import ProcessSample
from gputui.core.process_tree import LAUNCHER_GPU, process_tree


def p(pid: int, ppid: int | None, gpu: int = 0, **kw) -> ProcessSample:
    return ProcessSample(pid=pid, gpu_index=gpu, ppid=ppid, **kw)


def shape(rows) -> list[str]:
    return [f"{r.prefix}{r.process.pid}{'*' if r.launcher else ''}" for r in rows]


def test_ranks_go_under_their_launcher_and_children_under_their_parent() -> None:
    rows = process_tree(
        [
            p(11, 10, parent_name="torchrun", user="svc"),
            p(30, 1),
            p(12, 10, gpu=1, parent_name="torchrun", user="svc"),
            p(31, 30),
            p(32, 31),
            p(33, 30),
        ]
    )
    assert shape(rows) == ["10*", "├─ 11", "└─ 12", "30", "├─ 31", "│  └─ 32", "└─ 33"]
    launcher = rows[0]
    assert launcher.process.gpu_index == LAUNCHER_GPU and launcher.process.name == "torchrun"
    assert launcher.process.user == "svc" and launcher.children == 2
    assert rows[3].children == 3 and rows[4].children == 1


def test_a_lone_process_is_not_put_under_its_parent() -> None:
    """A parent row only where processes share it (a shell above one python says little)."""
    assert shape(process_tree([p(5, 4, parent_name="bash"), p(7, 6)])) == ["5", "7"]


def test_the_same_pid_on_two_gpus_and_unknown_parents() -> None:
    rows = process_tree([p(5, None), p(5, None, gpu=1), p(6, 5, gpu=1)])
    assert shape(rows) == ["5", "└─ 6", "5"]


def test_parents_in_a_cycle_are_each_shown_once() -> None:
    rows = process_tree([p(1, 2), p(2, 1), p(3, 3)])
    assert sorted(r.process.pid for r in rows) == [1, 2, 3]
    assert len(rows) == 3
