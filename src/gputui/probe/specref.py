"""The spec a probed device is judged against: its GPU's row of the spec table, scaled to the
MIG slice the probe ran on, and the host link its host copies cross.

* A GPU in MIG mode is probed on one slice (:func:`gputui.probe.devices.probed_slice`), so it is
  judged against that slice: compute peaks x the slice's SMs / the whole GPU's SMs, memory
  bandwidth x the slice's share of the memory (a MIG GPU instance owns whole memory slices and
  their controllers). A share that cannot be worked out leaves that peak unknown: not judged,
  never the whole GPU's number.
* A GPU whose host link is NVLink-C2C (Grace Hopper / Grace Blackwell) reports placeholder PCIe
  numbers (Gen1 x1): its host copies are judged against ``GpuInfo.host_link_bandwidth_gbs`` (per
  direction), else the spec data's C2C figure (:mod:`gputui.specs.hostlinks`), else not judged.

Pure functions over the model and the spec table; no torch.
"""

from __future__ import annotations

from typing import NamedTuple

from gputui.core.mig import mig_profile
from gputui.core.model import GpuInfo, MigDeviceInfo
from gputui.probe.devices import probed_slice
from gputui.specs import PEAK_FIELDS, SpecMatch, lookup, scaled_peaks
from gputui.specs.expected import form_of
from gputui.specs.hostlinks import host_link_for

NVLINK_C2C = "nvlink-c2c"

Peaks = dict[str, "float | None"]
"""Spec peaks by name (``bf16_tflops``, ``memory_bw_gbs`` ...), scaled to the device's share."""


class SpecRef(NamedTuple):
    """A probed device's spec: the table row it matched and its peaks, scaled to the MIG slice
    the probe ran on (``mig``), with the scaling in words for the judgement."""

    match: SpecMatch | None
    peaks: Peaks | None
    mig: MigDeviceInfo | None = None
    compute_share: str = ""
    """How the compute peaks were scaled, in words (empty for a whole GPU)."""
    memory_share: str = ""
    """How the memory bandwidth was scaled, in words (empty for a whole GPU)."""

    @property
    def form(self) -> str:
        """The board's form factor as an expectation key (:func:`~gputui.specs.expected.
        form_of`); ``""`` without a spec row."""
        return form_of(self.match.spec.form_factor) if self.match is not None else ""

    @property
    def model(self) -> str:
        return self.match.spec.model if self.match is not None else ""


def spec_for(info: GpuInfo) -> SpecRef:
    """The spec ``info`` is judged against: its row (or an estimate) and its peaks, scaled to
    the MIG slice the probe runs on when MIG is on."""
    match = lookup(
        info.name,
        sm_count=info.sm_count,
        clock_mhz=info.sm_clock_max_mhz,
        compute_capability=info.compute_capability,
    )
    if match is None:
        return SpecRef(None, None)
    peaks = scaled_peaks(match)
    mig = probed_slice(info)
    if mig is None:
        return SpecRef(match, peaks)
    return _slice_spec(info, match, peaks, mig)


def _slice_spec(info: GpuInfo, match: SpecMatch, peaks: Peaks, mig: MigDeviceInfo) -> SpecRef:
    what = f"the MIG slice {mig_profile(mig.name)} the probe ran on"
    whole_sms = _whole_sms(info, match, mig)
    scaled = dict(peaks)
    if mig.sm_count and whole_sms:
        share = mig.sm_count / whole_sms
        compute = f"x {mig.sm_count}/{whole_sms} SMs ({what})"
        for name in PEAK_FIELDS:
            value = peaks.get(name)
            scaled[name] = None if value is None else value * share
    else:
        compute = f"not judged: the SM count of {what} is not known"
        for name in PEAK_FIELDS:
            scaled[name] = None
    mib = 1 << 20
    total, own = info.memory_total_bytes, mig.memory_total_bytes
    bandwidth = peaks.get("memory_bw_gbs")
    if total and own and 0 < own <= total and bandwidth is not None:
        memory = f"x {own // mib:,}/{total // mib:,} MiB memory share ({what})"
        scaled["memory_bw_gbs"] = bandwidth * own / total
    else:
        memory = f"not judged: the memory share of {what} is not known"
        scaled["memory_bw_gbs"] = None
    return SpecRef(match, scaled, mig, compute, memory)


def _whole_sms(info: GpuInfo, match: SpecMatch, mig: MigDeviceInfo) -> int | None:
    """The whole GPU's SMs: what the GPU reports when that is more than the slice has, else the
    spec row's."""
    if info.sm_count and (mig.sm_count is None or info.sm_count > mig.sm_count):
        return info.sm_count
    return match.spec.sm_count


def host_link_spec(info: GpuInfo, match: SpecMatch | None) -> tuple[float | None, str] | None:
    """The spec of a host copy when the host link is not PCIe: (GB/s per direction or None,
    where it comes from in words); None for a PCIe GPU (judged by its link's gen and width)."""
    if info.host_link != NVLINK_C2C:
        return None
    if info.host_link_bandwidth_gbs:
        return (
            info.host_link_bandwidth_gbs,
            f"NVLink-C2C host link, {info.host_link_bandwidth_gbs:g} GB/s per direction as the "
            "driver reports it",
        )
    link = host_link_for(match.spec.model) if match is not None else None
    if link is not None:
        return (
            link.gbs_per_direction,
            f"NVLink-C2C host link of {link.model}, {link.gbs_per_direction:g} GB/s per "
            f"direction ({link.source})",
        )
    return None, (
        "NVLink-C2C host link of unknown bandwidth (the driver does not say and the spec data "
        "has no figure for this GPU); its PCIe numbers are placeholders"
    )


__all__ = ["NVLINK_C2C", "Peaks", "SpecRef", "host_link_spec", "spec_for"]
