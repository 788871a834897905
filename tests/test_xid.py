"""XID table, PCI bus id normalisation and kernel-log parsing."""

from __future__ import annotations

import errno
import os
import time

import pytest
from tests.fakes import kernel_log as klog

import gputui.core.xid as xid
from gputui.core.model import GpuInfo, NodeInfo
from gputui.core.xid import (
    XID_TABLE,
    _kmsg_line,
    describe_xid,
    kernel_log_xids,
    normalize_pci_bus_id,
    read_kernel_log,
    xid_hint,
)

REQUIRED = (13, 31, 43, 45, 46, 48, 54, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81)
REQUIRED += (92, 94, 95, 109, 110, 119, 120, 136, 140, 143, 154, 155, 156, 158)


def _node() -> NodeInfo:
    gpus = (
        GpuInfo(index=0, name="NVIDIA H100 80GB HBM3", uuid="GPU-0", vendor="nvidia",
                pci_bus_id="00000000:18:00.0"),
        GpuInfo(index=1, name="NVIDIA H100 80GB HBM3", uuid="GPU-1", vendor="nvidia",
                pci_bus_id="00000000:3B:00.0"),
        GpuInfo(index=2, name="NVIDIA H100 80GB HBM3", uuid="GPU-2", vendor="nvidia",
                pci_bus_id="00000001:3B:00.0"),
    )  # fmt: skip
    return NodeInfo(hostname="n", backend="nvml", gpus=gpus)


def test_table_covers_required_codes_with_words() -> None:
    for code in REQUIRED:
        severity, meaning = XID_TABLE[code]
        assert severity in ("info", "warn", "fail")
        assert len(meaning) > 8


@pytest.mark.parametrize(
    ("code", "severity"),
    [(13, "info"), (31, "info"), (43, "info"), (63, "warn"), (94, "warn"), (48, "fail"),
     (79, "fail"), (95, "fail"), (119, "fail"), (64, "fail"), (74, "fail"),
     # application errors for NVIDIA's device plugin (k8s-device-plugin issue #1340)
     (68, "warn"), (109, "warn")],
)  # fmt: skip
def test_grading(code: int, severity: str) -> None:
    assert describe_xid(code)[0] == severity


def test_unknown_code_is_warn_with_catalog_pointer() -> None:
    assert describe_xid(999) == ("warn", "XID 999 (see NVIDIA's XID catalog)")
    assert "reset" in xid_hint(999)
    assert "RMA" in xid_hint(79)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0000:3b:00", (0, 0x3B, 0)),
        ("00000000:3B:00.0", (0, 0x3B, 0)),
        ("PCI:0000:3b:00", (0, 0x3B, 0)),
        ("3b:00.0", (0, 0x3B, 0)),
        ("0001:3B:00.1", (1, 0x3B, 0)),
        ("garbage", None),
        ("zz:yy:xx", None),
    ],
)
def test_normalize_pci_bus_id(text: str, expected: tuple[int, int, int] | None) -> None:
    assert normalize_pci_bus_id(text) == expected


def test_kernel_log_xids_maps_bus_ids_and_times() -> None:
    lines = [
        "[ 4909.922970] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, "
        "GPU has fallen off the bus.",
        "May 6 00:38:27 host kernel: [ 10.5] NVRM: Xid (0000:18:00): 13, 0005 00000000",
        "[ 11.000000] NVRM: Xid (PCI:0001:3b:00): 48, pid=1, DBE",
        "[ 12.000000] NVRM: Xid (PCI:0000:99:00): 94, pid=2, contained",
        "[ 13.000000] NVRM: GPU at PCI:0000:3b:00: GPU-1 (not an XID line)",
        "[ 14.000000] nvidia-modeset: Xid-like text but not NVRM",
    ]
    events = kernel_log_xids(_node(), lines, boot_time=1000.0)
    assert [(e.gpu_index, e.code) for e in events] == [(1, 79), (0, 13), (2, 48), (None, 94)]
    assert events[0].timestamp == pytest.approx(1000.0 + 4909.92297)
    assert events[0].kind == "xid" and events[0].source == "kernel_log"
    assert events[0].message is not None and "fallen off the bus" in events[0].message


def _a100_node() -> NodeInfo:
    gpu = GpuInfo(index=0, name="NVIDIA A100 80GB PCIe", uuid="GPU-a", vendor="nvidia",
                  pci_bus_id="00000000:17:00.0")  # fmt: skip
    return NodeInfo(hostname="n", backend="nvml", gpus=(gpu,))


def test_mig_xid_lines_keep_the_gpu_and_compute_instance() -> None:
    lines = [klog.stamped(10.0, klog.MIG_XID_GI_CI), klog.stamped(11.0, klog.MIG_XID_GI)]
    both, gi_only = kernel_log_xids(_a100_node(), lines, boot_time=100.0)
    assert (both.gpu_index, both.code) == (0, 94)
    assert (both.gpu_instance_id, both.compute_instance_id) == (5, 2)
    assert both.message is not None and both.message.startswith("pid=1234, name=python")
    assert (gi_only.gpu_index, gi_only.gpu_instance_id, gi_only.compute_instance_id) == (0, 5, None)
    assert gi_only.timestamp == pytest.approx(111.0)
    # near miss: a line without MIG attribution has no instance
    (plain,) = kernel_log_xids(_a100_node(), ["NVRM: Xid (PCI:0000:17:00): 94, pid=1, x"])
    assert plain.gpu_instance_id is None and plain.compute_instance_id is None


def test_driver_loads_and_gpu_reenumerations_are_markers_in_log_order() -> None:
    from gputui.core.xid import DRIVER_LOADED, GPU_REINITIALIZED, kernel_log_events

    lines = [
        klog.stamped(5.0, klog.PCI_ADDED_GPU_OLD),
        klog.stamped(9.0, klog.DRIVER_LOAD_PROPRIETARY),
        klog.stamped(50.0, "NVRM: Xid (PCI:0000:17:00): 79, pid=1, GPU has fallen off the bus."),
        klog.stamped(60.0, klog.PCI_ADDED_AUDIO),  # not a GPU
        klog.stamped(61.0, "pci 0000:99:00.0: [10de:20b5] type 00 class 0x030200"),  # not ours
        klog.stamped(62.0, klog.PCI_ADDED_GPU_NEW),
        klog.stamped(70.0, klog.DRIVER_LOAD_OPEN),
    ]
    events = kernel_log_events(_a100_node(), lines, boot_time=1000.0)
    assert [(e.kind, e.gpu_index, e.timestamp) for e in events] == [
        (GPU_REINITIALIZED, 0, 1005.0),
        (DRIVER_LOADED, None, 1009.0),
        ("xid", 0, 1050.0),
        (GPU_REINITIALIZED, 0, 1062.0),
        (DRIVER_LOADED, None, 1070.0),
    ]
    assert all(e.source == "kernel_log" for e in events)
    assert (
        events[1].message == "NVIDIA UNIX x86_64 Kernel Module 340.65 Tue Dec 2 09:50:34 PST 2014"
    )
    loaded = events[4].message or ""
    assert loaded.startswith("NVIDIA UNIX Open Kernel Module for x86_64 525.60.11 Release Build")
    # kernel_log_xids keeps its meaning: the XIDs alone
    assert [e.kind for e in kernel_log_xids(_a100_node(), lines, boot_time=1000.0)] == ["xid"]


def test_kernel_log_xids_without_boot_time_stamps_now() -> None:
    events = kernel_log_xids(_node(), ["NVRM: Xid (PCI:0000:18:00): 31, pid=5"], now=42.0)
    assert len(events) == 1 and events[0].timestamp == 42.0 and events[0].gpu_index == 0


def test_kmsg_record_format() -> None:
    assert _kmsg_line("4,1234,5678901,-;NVRM: Xid (PCI:0000:3b:00): 79\n SUBSYSTEM=pci\n") == (
        "[5.678901] NVRM: Xid (PCI:0000:3b:00): 79"
    )
    events = kernel_log_xids(_node(), [_kmsg_line("4,1,2000000,-;NVRM: Xid (0000:3b:00): 63")],
                             boot_time=100.0)  # fmt: skip
    assert events[0].timestamp == pytest.approx(102.0) and events[0].code == 63


class FakeKmsg:
    """Stands in for ``os`` in gputui.core.xid: /dev/kmsg hands out ``reads`` (records, or errors
    to raise) one per read, then would block; with ``denied`` it cannot be opened."""

    O_RDONLY, O_NONBLOCK = os.O_RDONLY, os.O_NONBLOCK

    def __init__(self, *reads: bytes | OSError, denied: bool = False) -> None:
        self.reads = list(reads)
        self.denied = denied
        self.opened: list[str] = []
        self.closed = 0

    def open(self, path: str, flags: int) -> int:
        if self.denied:
            raise PermissionError(path)
        if path != "/dev/kmsg":
            raise FileNotFoundError(path)
        assert flags & os.O_NONBLOCK, "a blocking read of /dev/kmsg waits for the next message"
        self.opened.append(path)
        return 99

    def read(self, fd: int, size: int) -> bytes:
        assert fd == 99
        if not self.reads:
            raise BlockingIOError
        item = self.reads.pop(0)
        if isinstance(item, OSError):
            raise item
        return item

    def close(self, fd: int) -> None:
        self.closed += 1


def fake_dmesg(monkeypatch: pytest.MonkeyPatch, tmp_path, script: str) -> None:
    """``dmesg`` on PATH is ``script`` (sh), and /dev/kmsg cannot be opened."""
    dmesg = tmp_path / "dmesg"
    dmesg.write_text(f"#!/bin/sh\n{script}\n")
    dmesg.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setattr(xid, "os", FakeKmsg(denied=True))


def test_read_kernel_log_reads_every_kmsg_record_without_blocking(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kmsg = FakeKmsg(
        b"4,1,2000000,-;NVRM: Xid (PCI:0000:3b:00): 79\n SUBSYSTEM=pci\n",
        OSError(errno.EPIPE, "overwritten while reading"),  # skipped, reading goes on
        b"6,2,3500000,-;pci 0000:3b:00.0: [10de:2330] type 00 class 0x030200\n",
    )
    monkeypatch.setattr(xid, "os", kmsg)
    assert read_kernel_log() == [
        "[2.000000] NVRM: Xid (PCI:0000:3b:00): 79",
        "[3.500000] pci 0000:3b:00.0: [10de:2330] type 00 class 0x030200",
    ]
    assert kmsg.opened == ["/dev/kmsg"] and kmsg.closed == 1


def test_read_kernel_log_falls_back_to_dmesg(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    fake_dmesg(monkeypatch, tmp_path, "echo '[   10.5] NVRM: Xid (0000:18:00): 13'; echo second")
    assert read_kernel_log() == ["[   10.5] NVRM: Xid (0000:18:00): 13", "second"]


def test_read_kernel_log_none_when_dmesg_fails(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    fake_dmesg(monkeypatch, tmp_path, "echo 'dmesg: read kernel buffer failed' >&2; exit 1")
    assert read_kernel_log() is None


def test_read_kernel_log_does_not_wait_for_a_hung_dmesg(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    fake_dmesg(monkeypatch, tmp_path, "exec sleep 30")
    started = time.monotonic()
    assert read_kernel_log(timeout=0.3) is None
    assert time.monotonic() - started < 5.0


def test_read_kernel_log_none_without_kmsg_or_dmesg(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    monkeypatch.setattr(xid, "os", FakeKmsg(denied=True))
    monkeypatch.setenv("PATH", str(tmp_path))  # no dmesg there
    assert read_kernel_log() is None
