"""Builders the test modules share: readings to judge (a GPU's static info and sample, a
snapshot, one rule's findings), recordings of the simulated node, scrapes of the exporter, an
NVML backend opened on the fake ``pynvml`` and a sysfs PCI tree, and the ``gputui`` command run
as a user runs it. Fakes of what gputui talks to live in :mod:`tests.fakes`."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.clock import fake_clock_sampler
from tests.fakes.fake_pynvml import FakeGpu, FakeNvml, make_fake_nvml

from gputui.backends.nvml import NvmlBackend
from gputui.core.model import GpuEvent, GpuInfo, GpuSample, NodeInfo, ProcessSample, Snapshot
from gputui.core.record import Recorder
from gputui.health import RULES, HealthConfig, HealthMonitor, RuleContext

# -- readings to judge -----------------------------------------------------------------------------

T = 1_700_000_000.0
GIB = 1024**3


def info(index: int = 0, **kw: Any) -> GpuInfo:
    """A healthy H100's static facts; ``kw`` sets any field."""
    base: dict[str, Any] = dict(
        index=index,
        name="NVIDIA H100 80GB HBM3",
        uuid=f"GPU-{index}",
        vendor="nvidia",
        pci_bus_id=f"00000000:{0x18 + index:02X}:00.0",
        pcie_max_gen=5,
        pcie_max_width=16,
        temperature_slowdown_c=89.0,
        ecc_enabled=True,
        persistence_mode=True,
        power_default_limit_w=700.0,
    )
    base.update(kw)
    return GpuInfo(**base)


def sample(index: int = 0, **kw: Any) -> GpuSample:
    """A reading of a healthy, half-busy GPU at :data:`T`; ``kw`` sets any field."""
    base: dict[str, Any] = dict(
        index=index,
        timestamp=T,
        utilization_gpu_pct=50.0,
        memory_used_bytes=0,
        memory_free_bytes=80 * GIB,
        temperature_gpu_c=60.0,
        pcie_gen=5,
        pcie_width=16,
        power_limit_w=700.0,
        throttle_reasons=frozenset(),
        ecc_volatile_uncorrected=0,
        ecc_aggregate_uncorrected=0,
        retired_pages_pending=False,
        remapped_rows_pending=False,
        remapped_rows_failure=False,
    )
    base.update(kw)
    return GpuSample(**base)


def snap(
    samples: tuple[GpuSample, ...] = (),
    infos: tuple[GpuInfo, ...] | None = None,
    *,
    t: float = T,
    processes: tuple[ProcessSample, ...] = (),
    events: tuple[GpuEvent, ...] = (),
    runtime: str | None = "12.4",
) -> Snapshot:
    """A node of ``samples`` (one healthy GPU by default) read at ``t``, each GPU with
    :func:`info` unless ``infos`` are given."""
    samples = samples or (sample(),)
    infos = infos if infos is not None else tuple(info(s.index) for s in samples)
    node = NodeInfo(hostname="n", backend="nvml", gpus=infos, runtime_version=runtime)
    samples = tuple(dataclasses.replace(s, timestamp=t) for s in samples)
    return Snapshot(timestamp=t, node=node, gpus=samples, processes=processes, events=events)


def run(rule: str, snapshot: Snapshot, config: HealthConfig | None = None, **kw: Any) -> list:
    """The findings the real rule ``rule`` makes of ``snapshot``."""
    ctx = RuleContext(snapshot=snapshot, config=config or HealthConfig(current_user="me"), **kw)
    return list(RULES[rule][0](ctx))


def proc(pid: int = 100, gpu: int = 0, user: str = "bob", mem: int = 10 * GIB, **kw: Any):
    """A GPU process row: ``user``'s python holding ``mem`` bytes on ``gpu``."""
    return ProcessSample(
        pid=pid, gpu_index=gpu, user=user, gpu_memory_bytes=mem, name="python", **kw
    )


# -- schedulers ------------------------------------------------------------------------------------


def kubelet_checkpoint(
    path: Path, pods: dict[str, list[str]], *, flat: bool = False, resource: str = "nvidia.com/gpu"
) -> Path:
    """A kubelet device-plugin checkpoint at ``path`` as the kubelet writes it: pod UID ->
    device ids of its container ``main``, under NUMA node 0 (Kubernetes 1.20+), or as the flat
    list older kubelets wrote (``flat``)."""
    entries = [
        {
            "PodUID": uid,
            "ContainerName": "main",
            "ResourceName": resource,
            "DeviceIDs": ids if flat else {"0": ids},
            "AllocResp": "CiQKFk5WSURJQV9WSVNJQkxFX0RFVklDRVMSCkdQVS0wMDAwMDAw",
        }
        for uid, ids in pods.items()
    ]
    registered = {resource: [i for ids in pods.values() for i in ids]}
    document = {
        "Data": {"PodDeviceEntries": entries, "RegisteredDevices": registered},
        "Checksum": 3145912348,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


# -- recordings ------------------------------------------------------------------------------------


def record(path: Path, readings: int = 30, scenario: str = "faulty") -> list[Snapshot]:
    """Record ``readings`` readings of a simulated node (health findings included) on a fake
    clock; returns the snapshots as the sampler produced them."""
    sampler = fake_clock_sampler(scenario)
    sampler.health = HealthMonitor(HealthConfig(current_user="tester"), env={})
    originals: list[Snapshot] = []
    with Recorder(path) as recorder:
        sampler.add_listener(recorder)
        sampler.add_listener(originals.append)
        for _ in range(readings):
            sampler.poll()
            sampler.clock.now += 1.0  # type: ignore[attr-defined]
    return originals


def lines_of(path: Path) -> list[bytes]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.split(b"\n")


# -- the exporter ----------------------------------------------------------------------------------


def faulty_collector(polls: int = 6):
    """The faulty node after ``polls`` readings, with the dashboard's health monitor attached."""
    from gputui import export
    from gputui.engine.session import default_health

    sampler = fake_clock_sampler("faulty", polls=0)
    sampler.health = default_health()
    collector = export.GpuCollector(sampler)
    for _ in range(polls):
        sampler.poll()
        sampler.clock.now += sampler.interval
    return sampler, collector


def scrape(collector) -> tuple[str, dict]:
    """The exposition text of one scrape of ``collector``, and its metric families by name."""
    from prometheus_client import CollectorRegistry
    from prometheus_client.parser import text_string_to_metric_families

    from gputui import export

    registry = CollectorRegistry()
    registry.register(collector)
    text = export.render(registry).decode()
    return text, {f.name: f for f in text_string_to_metric_families(text)}


# -- NVML on the fake pynvml -----------------------------------------------------------------------


def open_nvml(gpus: list[FakeGpu] | int = 1, **knobs: Any) -> tuple[NvmlBackend, FakeNvml]:
    """An NVML backend opened on a fake ``pynvml`` of ``gpus`` (see
    :func:`tests.fakes.fake_pynvml.make_fake_nvml` for the knobs). Use with the ``nvml_backends``
    fixture, which closes it after the test."""
    fake = make_fake_nvml(gpus, **knobs)
    backend = NvmlBackend(fake)
    backend.open()
    return backend, fake


def fake_pci_sysfs(
    monkeypatch: pytest.MonkeyPatch, root: Path, devices: dict[str, dict[str, str]]
) -> None:
    """A sysfs PCI device tree under ``root``: bus id -> {attribute file: content}."""
    for bus_id, files in devices.items():
        device = root / bus_id
        device.mkdir(parents=True)
        for name, content in files.items():
            (device / name).write_text(content + "\n")
    monkeypatch.setattr("gputui.core.pci.SYSFS_PCI_DEVICES", root)


# -- the command line ------------------------------------------------------------------------------

REASONS = [  # why each backend did not open, on a machine without GPUs
    ("NVML", "libnvidia-ml.so.1 not found (no NVIDIA driver)"),
    ("AMD-SMI", "amdsmi not installed"),
]


def gputui_env(**overrides: str) -> dict[str, str]:
    """This process's environment, with its import path, for a ``gputui`` child."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), **overrides)


def start_gputui(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``gputui ARGS`` started in a child process (no stdin; stdout and stderr piped, as text),
    with this interpreter and ``env`` (default :func:`gputui_env`)."""
    return subprocess.Popen(
        [sys.executable, "-m", "gputui", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=gputui_env() if env is None else env,
    )


def run_gputui(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``gputui ARGS`` in a child process, with this interpreter and import path."""
    env = gputui_env()
    return subprocess.run(
        [sys.executable, "-m", "gputui", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
    )
