"""The spec a probed device is judged against: its GPU's row of the spec table (or an
estimate), its peaks scaled to the GPU's share, and its board's form factor and model, which pick
the expected share of spec (:func:`gputui.specs.expected.expected_for`).

Pure functions over the model and the spec table; no torch.
"""

from __future__ import annotations

from typing import NamedTuple

from gputui.model import GpuInfo
from gputui.specs import SpecMatch, lookup, scaled_peaks
from gputui.specs.expected import form_of

Peaks = dict[str, "float | None"]
"""Spec peaks by name (``bf16_tflops``, ``memory_bw_gbs`` ...), scaled to the device's share."""


class SpecRef(NamedTuple):
    """A probed device's spec: the table row it matched and its peaks."""

    match: SpecMatch | None
    peaks: Peaks | None

    @property
    def form(self) -> str:
        """The board's form factor as an expectation key (:func:`~gputui.specs.expected.
        form_of`); ``""`` without a spec row."""
        return form_of(self.match.spec.form_factor) if self.match is not None else ""

    @property
    def model(self) -> str:
        return self.match.spec.model if self.match is not None else ""


def spec_for(info: GpuInfo) -> SpecRef:
    """The spec ``info`` is judged against: its row (or an estimate) and its peaks."""
    match = lookup(
        info.name,
        sm_count=info.sm_count,
        clock_mhz=info.sm_clock_max_mhz,
        compute_capability=info.compute_capability,
    )
    if match is None:
        return SpecRef(None, None)
    return SpecRef(match, scaled_peaks(match))


__all__ = ["Peaks", "SpecRef", "spec_for"]
