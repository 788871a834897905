"""Shared fixtures: a simulated sampler on a fake clock, and switches that make TUI tests and SVG
snapshots deterministic (no cursor blink, UTC clock labels)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

import pytest
from tests.fakes.clock import T0, FakeClock, fake_clock_sampler

from gputui.backends.nvml import NvmlBackend
from gputui.engine.sampler import Sampler

__all__ = ["T0", "FakeClock", "advance"]

SimSamplerFactory = Callable[..., Sampler]


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: two workers for each CPU this run may use, from 2 to 8. Most of the suite's
    time is spent waiting (on child processes, a Prometheus server, timeouts it tests), so more
    workers than cores pay: on 2 cores, 4 workers ran it in 150 s, 2 in 234 s, 6 in 153 s.
    PYTEST_XDIST_AUTO_NUM_WORKERS, when set, decides instead."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return min(max(2 * cpus, 2), 8)


@pytest.fixture
def sim_sampler() -> SimSamplerFactory:
    """``sim_sampler(scenario="dgx-h100", polls=0, t=T0, interval=1.0, seed=0)``: see
    :func:`tests.fakes.clock.fake_clock_sampler`."""
    return fake_clock_sampler


def advance(sampler: Sampler, seconds: float = 1.0) -> None:
    """Move a :func:`sim_sampler`'s fake clock on."""
    sampler.clock.now += seconds  # type: ignore[attr-defined]


@pytest.fixture
def no_cursor_blink(monkeypatch: pytest.MonkeyPatch) -> None:
    """Input cursors do not blink (a blinking cursor makes snapshots flaky)."""
    monkeypatch.setattr("textual.widgets._input.Input.cursor_blink", False)


@pytest.fixture
def utc() -> Iterator[None]:
    """Local time is UTC, so clock labels ("22:13:20") are the same on every machine."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = old
        time.tzset()


@pytest.fixture
def tui_env(no_cursor_blink: None, utc: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Everything a deterministic TUI test needs; NO_COLOR is cleared so colour is on."""
    monkeypatch.delenv("NO_COLOR", raising=False)


@pytest.fixture(autouse=True)
def _no_host_numa_nodes(monkeypatch: pytest.MonkeyPatch, tmp_path_factory) -> None:
    """The machine's own NUMA layout never decides a test (see gputui.core.pci.numa_node)."""
    monkeypatch.setattr(
        "gputui.core.pci.SYSFS_NUMA_NODES", tmp_path_factory.getbasetemp() / "no-numa"
    )


@pytest.fixture(autouse=True)
def _no_user_settings(monkeypatch: pytest.MonkeyPatch, tmp_path_factory) -> None:
    """The user's own config file and GPUTUI_* settings never decide a test."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.getbasetemp() / "no-config"))
    for name in ("GPUTUI_CONFIG", "GPUTUI_INTERVAL", "GPUTUI_GPU_HOUR_PRICE", "GPUTUI_THEME",
                 "GPUTUI_RECORD_DIR", "GPUTUI_READONLY"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def nvml_backends(monkeypatch: pytest.MonkeyPatch, tmp_path) -> Iterator[list[NvmlBackend]]:
    """Every NVML backend the test opens, closed after it (no event thread left running), with
    short event waits; and no sysfs PCI tree (the fakes' bus ids may exist on this machine)."""
    monkeypatch.setattr("gputui.core.pci.SYSFS_PCI_DEVICES", tmp_path / "no-sysfs")
    monkeypatch.setattr(NvmlBackend, "event_wait_ms", 20)
    opened: list[NvmlBackend] = []
    real_open = NvmlBackend.open

    def tracking_open(self: NvmlBackend):
        opened.append(self)
        return real_open(self)

    monkeypatch.setattr(NvmlBackend, "open", tracking_open)
    yield opened
    for backend in opened:
        backend.close()
