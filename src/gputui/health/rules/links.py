"""Rules about the GPU's links: the PCIe link under load and NVLink / XGMI links."""

from __future__ import annotations

from collections.abc import Iterable

from gputui.core.model import Finding
from gputui.health import hints
from gputui.health.levels import LOAD_UTIL_PCT, pcie_level
from gputui.health.rules.context import RuleContext, finding, link_text


def rule_pcie_link(ctx: RuleContext) -> Iterable[Finding]:
    for info, s in ctx.live():
        if info is not None and pcie_level(s, info) == "warn":
            yield finding(
                "pcie_link",
                "warn",
                f"GPU {s.index} PCIe link at {link_text(s.pcie_gen, s.pcie_width)} under load, "
                f"below its maximum {link_text(info.pcie_max_gen, info.pcie_max_width)}",
                "reseat the card, check the riser / slot and BIOS PCIe settings (judged only under "
                f"load, ≥{LOAD_UTIL_PCT:.0f}% util, since idle links down-train to save power)",
                s.index,
            )


def rule_nvlink_down(ctx: RuleContext) -> Iterable[Finding]:
    """A discovered NVLink / XGMI link that the latest reading says is down (links not read,
    ``None``, or a link whose state is unknown are not judged)."""
    topology = ctx.snapshot.node.topology
    for info, s in ctx.live():
        if not s.links or all(r.up is not False for r in s.links):
            continue  # the usual case, read every second: nothing to say
        discovered = topology.links_of(s.index) if topology is not None else ()
        kinds = {x.link: x.kind for x in discovered}
        total = len({x.link for x in discovered} | {r.link for r in s.links})
        up = sum(1 for r in s.links if r.up)
        amd = (info is not None and info.vendor == "amd") or "xgmi" in kinds.values()
        for r in sorted(s.links, key=lambda r: r.link):
            if r.up is not False:
                continue
            xgmi = kinds.get(r.link, "xgmi" if amd else "nvlink") == "xgmi"
            word = "XGMI link" if xgmi else "NVLink"
            hint = (
                f"reset the GPU ({hints.reset('amd', s.index)}) and check the XGMI bridge / hive; "
                "reseat or RMA if it persists"
                if xgmi
                else f"reset the GPU ({hints.reset('nvidia', s.index)}) and check the NVSwitch "
                "fabric manager (systemctl status nvidia-fabricmanager); reseat or RMA if it "
                "persists"
            )
            yield finding(
                "nvlink_down",
                "fail",
                f"GPU {s.index} {word} {r.link} is down ({up}/{total} up)",
                hint,
                s.index,
                f"link{r.link}",
            )


def rule_nvlink_unused(ctx: RuleContext) -> Iterable[Finding]:
    """Links inactive since gputui started, with no remote end: not wired or not set up (a
    one-GPU VM carved out of an HGX board, an HGX partition without the fabric). Worth knowing
    (no GPU-to-GPU NVLink here), not a fault."""
    for _info, s in ctx.live():
        unused = [r.link for r in s.links or () if r.unused]
        if not unused:
            continue
        total = len(s.links or ())
        if len(unused) == total:
            what = f"NVLink not in use: {total} link{'s' if total != 1 else ''} inactive"
        else:
            what = f"{len(unused)} of {total} NVLinks not in use ({_ids(unused)})"
        yield finding(
            "nvlink_unused",
            "info",
            f"GPU {s.index}: {what} since start, with no remote end",
            "nothing to do unless this GPU should talk to others over NVLink (then check the "
            "NVSwitch fabric manager and the VM / partition's NVLink assignment)",
            s.index,
        )


def rule_nvlink_fabric(ctx: RuleContext) -> Iterable[Finding]:
    """The NVSwitch fabric's set-up of a GPU: failed (fail), or not finished (warn: NVLink
    GPU-to-GPU traffic is unavailable until it is)."""
    for info, s in ctx.live():
        if info is None or info.fabric_state is None:
            continue
        hint = (
            "check the fabric manager (systemctl status nvidia-fabricmanager, its log) and "
            "nvidia-smi -q (Fabric section); restart it or reset the GPUs"
        )
        if info.fabric_state == "completed" and info.fabric_error:
            yield finding(
                "nvlink_fabric",
                "fail",
                f"GPU {s.index}: NVLink fabric set-up failed: {info.fabric_error}",
                hint,
                s.index,
            )
        elif info.fabric_state in ("not_started", "in_progress") and s.links:
            state = info.fabric_state.replace("_", " ")
            yield finding(
                "nvlink_fabric",
                "warn",
                f"GPU {s.index}: NVLink fabric set-up {state}: no NVLink traffic until it ends",
                hint,
                s.index,
            )


def _ids(links: list[int]) -> str:
    return "link" + ("s " if len(links) > 1 else " ") + ", ".join(map(str, links))
