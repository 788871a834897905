"""SVG snapshots of the dashboard (pytest-textual-snapshot). History is filled by polling the
simulated backend 60 times one fake second apart, so plots have data and every run is identical.

Update after a deliberate change with ``pytest tests/test_tui_snapshots.py --snapshot-update``
and look at ``snapshot_report.html`` (or the SVGs) before committing them.
"""

from __future__ import annotations

import pytest

from gputui.tui.app import GpuTuiApp

pytestmark = pytest.mark.usefixtures("tui_env")

POLLS = 60


def dashboard(sim_sampler, scenario: str, **kwargs) -> GpuTuiApp:
    sampler = sim_sampler(scenario, polls=POLLS)
    return GpuTuiApp(sampler, start_sampler=False, **kwargs)


def test_dgx_h100_120x40(snap_compare, sim_sampler) -> None:
    """Eight GPUs in two columns of framed panels, host strip, process table."""
    assert snap_compare(dashboard(sim_sampler, "dgx-h100"), terminal_size=(120, 40))


def test_dgx_h100_80x24(snap_compare, sim_sampler) -> None:
    """Eight compact rows, still every GPU, with the process table below."""
    assert snap_compare(dashboard(sim_sampler, "dgx-h100"), terminal_size=(80, 24))


def test_rtx4090_roomy_120x40(snap_compare, sim_sampler) -> None:
    """One GPU: every field with its label and multi-row history plots."""
    assert snap_compare(dashboard(sim_sampler, "rtx4090"), terminal_size=(120, 40))


def test_faulty_gpu_lost_120x40(snap_compare, sim_sampler) -> None:
    """GPU 3 fell off the bus; ECC errors, thermal throttling and a degraded PCIe link."""
    assert snap_compare(dashboard(sim_sampler, "faulty"), terminal_size=(120, 40))


def test_gpu_selected_120x40(snap_compare, sim_sampler) -> None:
    """Key 2: GPU 2's panel highlighted, the table lists only its processes."""
    assert snap_compare(dashboard(sim_sampler, "dgx-h100"), press=["2"], terminal_size=(120, 40))
