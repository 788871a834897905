"""Host facts via psutil, on this very process (the tests' own PID is a real process)."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil

from gputui.host import ProcessEnricher, container_id_of, read_host
from gputui.model import ProcessSample


def test_read_host_reports_this_machine() -> None:
    host = read_host(123.0)
    assert host.timestamp == 123.0
    assert host.memory_total_bytes and host.memory_total_bytes > 0
    assert 0 <= host.memory_used_bytes <= host.memory_total_bytes
    assert len(host.per_core_pct) == os.cpu_count()
    assert host.uptime_s and host.uptime_s > 0


def test_enrich_fills_host_fields_and_keeps_gpu_fields() -> None:
    enricher = ProcessEnricher()
    row = ProcessSample(pid=os.getpid(), gpu_index=3, gpu_memory_bytes=5, sm_pct=40.0)
    (first,) = enricher.enrich([row])
    assert first.gpu_index == 3 and first.gpu_memory_bytes == 5 and first.sm_pct == 40.0
    assert first.name == psutil.Process().name()
    assert first.command and "pytest" in first.command
    assert first.host_rss_bytes and first.host_rss_bytes > 0
    assert first.cpu_pct is None  # no interval measured yet: unknown, not 0
    (second,) = enricher.enrich([row])
    assert second.cpu_pct is not None and second.cpu_pct >= 0


def test_vanished_pid_keeps_gpu_facts_without_error() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    enricher = ProcessEnricher()
    (row,) = enricher.enrich([ProcessSample(pid=child.pid, gpu_index=0, gpu_memory_bytes=9)])
    assert row.gpu_memory_bytes == 9
    assert row.command is None and row.host_rss_bytes is None


def test_container_id_parsed_from_cgroup(tmp_path, monkeypatch) -> None:
    cid = "a" * 64
    cgroup = tmp_path / "cgroup"
    cgroup.write_text(f"0::/system.slice/docker-{cid}.scope\n")
    real_open = open

    def fake_open(path, *args, **kwargs):
        if path == "/proc/999999/cgroup":
            return real_open(cgroup, *args, **kwargs)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", fake_open)
    assert container_id_of(999999) == cid
    cgroup.write_text("0::/user.slice/user-1000.slice/session-3.scope\n")
    assert container_id_of(999999) is None
