"""Host links that are not PCIe: the data file ``host_links.csv`` (one row per spec-table model).

A Grace Hopper or Grace Blackwell GPU reaches its CPU over NVLink-C2C; the PCIe generation and
width it reports are placeholders (Gen1 x1), so its host copies are judged against the C2C
bandwidth instead. Only models whose per-GPU C2C figure is published have a row: a GB200's
900 GB/s is the whole superchip's (one Grace, two GPUs), so it has none.
"""

from __future__ import annotations

import csv
import functools
import io
from importlib import resources

from gputui.core.frozen import frozen

DATA_FILE = "host_links.csv"


@frozen
class HostLink:
    """A model's host link: its kind (``nvlink-c2c``), GB/s per direction and the source."""

    model: str
    link: str
    gbs_per_direction: float
    source: str


@functools.cache
def load_host_links() -> dict[str, HostLink]:
    """Every row of the packaged ``host_links.csv`` by model (read once)."""
    text = resources.files("gputui.specs").joinpath(DATA_FILE).read_text(encoding="utf-8")
    rows = csv.DictReader(io.StringIO(text))
    return {
        row["model"]: HostLink(
            row["model"], row["link"], float(row["gbs_per_direction"]), row["source"]
        )
        for row in rows
    }


def host_link_for(model: str) -> HostLink | None:
    """The published host link of a spec-table model, or None (PCIe, or not published)."""
    return load_host_links().get(model)


__all__ = ["DATA_FILE", "HostLink", "host_link_for", "load_host_links"]
