"""Rules about the GPU's links: the PCIe link under load and NVLink / XGMI links."""

from __future__ import annotations

from collections.abc import Iterable

from gputui.health import hints
from gputui.health.levels import LOAD_UTIL_PCT, pcie_level
from gputui.health.rules.context import RuleContext, finding, link_text
from gputui.model import Finding


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
