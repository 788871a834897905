"""Health rules: each a small pure function ``(RuleContext) -> Iterable[Finding]``, registered in
:data:`RULES` under its id (the id ``--ignore`` takes). The order of :data:`RULES` is the order
findings of one severity are listed in (hardware faults before busy GPUs). Thresholds that the
dashboard colours too live in :mod:`gputui.health.levels`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from gputui.format import command_text, fmt_bytes, fmt_duration, fmt_temp, fmt_watts
from gputui.health import hints
from gputui.health.config import GIB, HealthConfig, version_tuple
from gputui.health.levels import LOAD_UTIL_PCT, pcie_level, temperature_level
from gputui.history import History
from gputui.model import (
    THROTTLE_TROUBLE,
    Finding,
    GpuEvent,
    GpuInfo,
    GpuSample,
    ProcessSample,
    Severity,
    Snapshot,
    describe_throttle,
)
from gputui.xid import XID_TABLE, describe_xid, xid_hint

IDLE_PCT = 1.0
"""SM / GPU utilization at or below which a process counts as idle."""
IDLE_INFO_AFTER_S = 60.0
"""Idle memory is an ``info`` finding after this long, ``warn`` after ``idle_memory_minutes``."""
UNEXPLAINED_MEMORY_BYTES = GIB
"""GPU memory in use beyond what the listed processes hold that counts as "in use"."""

_CONSUMER = re.compile(r"\b(GeForce|RTX|Quadro|TITAN|Radeon)\b", re.IGNORECASE)
_HBM_CLASS = re.compile(
    r"\b(HBM\w*|G?[AHB]\d{2,3}\w*|[PV]100\w*|MI\d{2,3}\w*)\b",
    re.IGNORECASE,
)


def is_datacenter_gpu(info: GpuInfo) -> bool:
    """Name heuristic: a datacenter GPU with HBM-class memory, where ECC should be on.

    True for names of HBM parts (P100, V100, A100/A800/A30, H100/H200/H800/H20, GH200, B100/B200,
    GB200, AMD Instinct MI100+) or names that say ``HBM``; False for anything GeForce / RTX /
    Quadro / TITAN / Radeon (consumer or workstation, GDDR) and for GDDR datacenter parts
    (T4, A10, A40, L4, L40), where ECC off is a legitimate choice."""
    name = info.name
    if _CONSUMER.search(name):
        return False
    if re.search(r"\b(T4|A10G?|A16|A2|A40|L4|L40S?|L20)\b", name, re.IGNORECASE):
        return False
    return bool(_HBM_CLASS.search(name))


def _gib(value: float | None) -> str:
    """Binary sizes with binary units: ``1.25 GiB`` (never "GB" for a GiB figure)."""
    text = fmt_bytes(value, space=True)
    return text if text.endswith("B") else text + "iB"


def _link(gen: int | None, width: int | None) -> str:
    return f"Gen{gen if gen is not None else '?'} x{width if width is not None else '?'}"


# -- the context rules read ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RuleContext:
    """Everything a rule may look at: the reading, the config, and the monitor's state."""

    snapshot: Snapshot
    config: HealthConfig = field(default_factory=HealthConfig)
    expected_gpus: int | None = None
    """From the config, else from Slurm (resolved by the monitor)."""
    events: tuple[GpuEvent, ...] = ()
    """Every event seen so far and not acknowledged (not only this reading's)."""
    idle_since: Mapping[tuple[int, int], float] = field(default_factory=dict)
    """(pid, gpu) -> when that process started holding memory with no utilization."""
    ecc_baseline: Mapping[int, int] = field(default_factory=dict)
    """GPU -> aggregate uncorrected ECC count at the first reading the monitor saw."""
    history: History | None = None
    platform: str = sys.platform

    @property
    def now(self) -> float:
        return self.snapshot.timestamp

    def judged(self, index: int | None) -> bool:
        return index is None or self.config.gpus is None or index in self.config.gpus

    def samples(self) -> Iterator[tuple[GpuInfo | None, GpuSample]]:
        """(static info, reading) of each judged GPU."""
        for sample in self.snapshot.gpus:
            if self.judged(sample.index):
                yield self.snapshot.node.gpu(sample.index), sample

    def live(self) -> Iterator[tuple[GpuInfo | None, GpuSample]]:
        """Like :meth:`samples`, without lost or erroring GPUs."""
        for info, sample in self.samples():
            if not sample.lost and sample.error is None:
                yield info, sample


RuleFn = Callable[[RuleContext], Iterable[Finding]]


def _finding(
    rule: str, severity: Severity, message: str, hint: str, gpu: int | None, subject: str = ""
) -> Finding:
    key = f"{rule}:{'node' if gpu is None else gpu}" + (f":{subject}" if subject else "")
    return Finding(rule=rule, severity=severity, message=message, hint=hint, gpu_index=gpu, key=key)


# -- rules ---------------------------------------------------------------------------------------


def rule_not_responding(ctx: RuleContext) -> Iterable[Finding]:
    node = ctx.snapshot.node
    vendor = hints.vendor_of(None, node)
    stall = ctx.snapshot.stall
    if stall is not None:
        waited = fmt_duration(max(ctx.now - stall.since, 0.0))
        where = f"reading GPU {stall.gpu_index}, " if stall.gpu_index is not None else ""
        library = node.backend.split(":", 1)[0]
        seen = (
            f"; values shown are from {fmt_duration(max(ctx.now - stall.last_reading, 0.0))} ago"
            if stall.last_reading is not None
            else ""
        )
        yield Finding(
            rule="not_responding",
            severity="fail",
            message=f"{library} not responding for {waited} ({where}a driver call hangs){seen}",
            hint=f"check {hints.smi(vendor)} (it may hang too) and the "
            f"kernel log (dmesg) for GPU errors; drain the node, then reset the GPU or reboot",
            gpu_index=None,  # the driver's lock is node-wide: every GPU waits behind it
            key="not_responding:stall",
        )
        return
    if not node.gpus:
        yield _finding(
            "not_responding",
            "fail",
            f"no GPUs found by the {node.backend} backend",
            f"check that the driver is loaded ({hints.smi(vendor)}, lsmod | grep "
            f"{hints.driver_module(vendor)}) and the devices are visible",
            None,
        )
        return
    judged = [i.index for i in node.gpus if ctx.judged(i.index)]
    readings = {s.index: s for s in ctx.snapshot.gpus}
    if judged and not any(i in readings for i in judged):
        yield _finding(
            "not_responding",
            "fail",
            f"{node.backend} returned no readings",
            f"the management library is not answering: check {hints.smi(vendor)}; restart the "
            "driver or reboot if it hangs",
            None,
        )
        return
    for info, sample in ctx.samples():
        if sample.error is not None and not sample.lost:
            v = hints.vendor_of(info)
            yield _finding(
                "not_responding",
                "fail",
                f"GPU {sample.index} not responding: {sample.error}",
                f"check {hints.smi(v)}, that the {hints.driver_module(v)} driver is loaded, and "
                f"the kernel log; reset the GPU ({hints.reset(v, sample.index)}) or reboot",
                sample.index,
            )


def rule_gpu_lost(ctx: RuleContext) -> Iterable[Finding]:
    for info, sample in ctx.samples():
        if not sample.lost:
            continue
        v = hints.vendor_of(info)
        # Backends say "GPU is lost (fell off the bus)"; anything else is worth quoting.
        error = sample.error or ""
        said = ("lost", "fell off")
        detail = "" if not error or any(w in error.lower() for w in said) else f": {error}"
        message = f"GPU {sample.index} is lost (fell off the bus){detail}"
        hint = (
            f"drain the node and reset the GPU ({hints.reset(v, sample.index)}) or reboot; "
            "reseat or RMA it if it recurs"
        )
        yield _finding("gpu_lost", "fail", message, hint, sample.index)


def rule_gpu_count(ctx: RuleContext) -> Iterable[Finding]:
    expected = ctx.expected_gpus
    if expected is None:
        return
    present = [i.index for i in ctx.snapshot.node.gpus if ctx.judged(i.index)]
    if len(present) < expected:
        yield _finding(
            "gpu_count",
            "fail",
            f"{len(present)} GPU(s) visible, {expected} expected",
            "a GPU is missing (fallen off the bus, not bound to the driver, or hidden): check "
            "lspci and the kernel log, then reboot or drain the node",
            None,
        )


def event_key(event: GpuEvent) -> str:
    gpu = "node" if event.gpu_index is None else event.gpu_index
    if event.kind == "xid":
        return f"xid:{gpu}:{event.code}"
    return f"gpu_event:{gpu}:{event.kind}"


def _grouped(
    events: Iterable[GpuEvent], accept: Callable[[GpuEvent], bool]
) -> dict[str, list[GpuEvent]]:
    groups: dict[str, list[GpuEvent]] = {}
    for event in events:
        if accept(event):
            groups.setdefault(event_key(event), []).append(event)
    return groups


def _event_finding(
    rule: str, key: str, severity: Severity, message: str, hint: str, group: list[GpuEvent]
) -> Finding:
    times = [e.timestamp for e in group]
    count = f" (×{len(group)})" if len(group) > 1 else ""
    return Finding(
        rule=rule,
        severity=severity,
        message=message + count,
        hint=hint,
        gpu_index=group[0].gpu_index,
        key=key,
        first_seen=min(times),
        last_seen=max(times),
    )


def rule_xid(ctx: RuleContext) -> Iterable[Finding]:
    for key, group in _grouped(ctx.events, lambda e: e.kind == "xid").items():
        code = group[0].code if group[0].code is not None else -1
        severity, meaning = describe_xid(code)
        where = "" if group[0].gpu_index is None else f" on GPU {group[0].gpu_index}"
        if code in XID_TABLE:
            message = f"XID {code}{where}: {meaning}"
        else:
            message = f"XID {code}{where} (see NVIDIA's XID catalog)"
        yield _event_finding("xid", key, severity, message, xid_hint(code), group)


_EVENT_KINDS: dict[str, tuple[Severity, str, str]] = {
    "ecc_double_bit": (
        "fail",
        "double-bit (uncorrectable) ECC error",
        "drain the node and reset the GPU; RMA if it recurs",
    ),
    "ecc_single_bit": (
        "info",
        "single-bit ECC error (corrected)",
        "nothing to do unless they become frequent",
    ),
    "gpu_lost": (
        "fail",
        "GPU fell off the bus",
        "drain the node and reset the GPU or reboot; RMA if it recurs",
    ),
}


def rule_gpu_event(ctx: RuleContext) -> Iterable[Finding]:
    for key, group in _grouped(ctx.events, lambda e: e.kind != "xid").items():
        first = group[0]
        known = _EVENT_KINDS.get(first.kind)
        severity, words, hint = known or (
            "warn",
            first.kind.replace("_", " "),
            "check the kernel log and the vendor tool's report (nvidia-smi -q / amd-smi metric)",
        )
        where = "" if first.gpu_index is None else f"GPU {first.gpu_index}: "
        detail = f" ({group[-1].message})" if group[-1].message and known is None else ""
        if first.gpu_index is not None and "reset the GPU" in hint:
            v = hints.vendor_of(ctx.snapshot.node.gpu(first.gpu_index), ctx.snapshot.node)
            command = hints.reset(v, first.gpu_index)
            hint = hint.replace("reset the GPU", f"reset the GPU ({command})")
        yield _event_finding("gpu_event", key, severity, where + words + detail, hint, group)


def rule_ecc_uncorrected(ctx: RuleContext) -> Iterable[Finding]:
    for info, s in ctx.live():
        if s.ecc_volatile_uncorrected:
            yield _finding(
                "ecc_uncorrected",
                "fail",
                f"GPU {s.index}: {s.ecc_volatile_uncorrected} uncorrected ECC error(s) since the "
                "last driver load",
                f"drain the node and reset the GPU "
                f"({hints.reset(hints.vendor_of(info), s.index)}); RMA if errors return",
                s.index,
            )


def rule_ecc_aggregate(ctx: RuleContext) -> Iterable[Finding]:
    for _info, s in ctx.live():
        count = s.ecc_aggregate_uncorrected
        if not count:
            continue
        base = ctx.ecc_baseline.get(s.index, count)
        growth = f", up from {base} when monitoring started" if count > base else ""
        yield _finding(
            "ecc_aggregate",
            "warn",
            f"GPU {s.index}: {count} uncorrected ECC error(s) over its lifetime{growth}",
            "watch the count; if it grows, check row remapping and plan an RMA",
            s.index,
        )


def rule_retired_pages(ctx: RuleContext) -> Iterable[Finding]:
    for _info, s in ctx.live():
        if s.retired_pages_pending:
            yield _finding(
                "retired_pages",
                "fail",
                f"GPU {s.index}: retired memory pages pending",
                f"reset the GPU ({hints.reset('nvidia', s.index)}) or reboot so the page "
                "retirement takes effect",
                s.index,
            )


def rule_row_remap(ctx: RuleContext) -> Iterable[Finding]:
    for info, s in ctx.live():
        if s.remapped_rows_failure:
            yield _finding(
                "row_remap",
                "fail",
                f"GPU {s.index}: row remapping failed (no spare rows left)",
                "drain the node; the GPU needs an RMA",
                s.index,
                "failure",
            )
        elif s.remapped_rows_pending:
            yield _finding(
                "row_remap",
                "warn",
                f"GPU {s.index}: row remap pending, reset needed",
                f"reset the GPU ({hints.reset(hints.vendor_of(info), s.index)}) at the next "
                "opportunity; work can go on until then",
                s.index,
                "pending",
            )


def rule_ecc_disabled(ctx: RuleContext) -> Iterable[Finding]:
    for info, s in ctx.live():
        if info is not None and info.ecc_enabled is False and is_datacenter_gpu(info):
            yield _finding(
                "ecc_disabled",
                "warn",
                f"GPU {s.index}: ECC is disabled on a datacenter GPU ({info.name})",
                f"{hints.enable_ecc(info.vendor)}; memory errors go undetected without it",
                s.index,
            )


def rule_throttle(ctx: RuleContext) -> Iterable[Finding]:
    for _info, s in ctx.live():
        trouble = (s.throttle_reasons or frozenset()) & THROTTLE_TROUBLE
        if not trouble:
            continue
        severity: Severity = "warn" if trouble == {"sw_thermal"} else "fail"
        temp = f" at {fmt_temp(s.temperature_gpu_c)}" if s.temperature_gpu_c is not None else ""
        hint = (
            "check cooling (fans, airflow, inlet temperature) and the power supply; a GPU that "
            "keeps slowing down under normal cooling needs service"
        )
        if "hw_power_brake" in trouble:
            hint = "the power brake is asserted: check the PSU / power cables and the BMC logs"
        yield _finding(
            "throttle",
            severity,
            f"GPU {s.index} clocks held down: {describe_throttle(trouble)}{temp}",
            hint,
            s.index,
        )


def rule_power_limit(ctx: RuleContext) -> Iterable[Finding]:
    for info, s in ctx.live():
        default = info.power_default_limit_w if info is not None else None
        if default is None or s.power_limit_w is None:
            continue
        if s.power_limit_w < default - 1.0:
            yield _finding(
                "power_limit",
                "warn",
                f"GPU {s.index} power limit {fmt_watts(s.power_limit_w)} is below the default "
                f"{fmt_watts(default)}",
                f"restore it with {hints.set_power_limit(hints.vendor_of(info), s.index, default)} "
                "(root) unless the cap is intended",
                s.index,
            )


TEMPERATURE_SENSORS: tuple[tuple[str, str, str, str], ...] = (
    ("gpu", "temperature_gpu_c", "temperature_slowdown_c", "slowdown temperature"),
    ("hotspot", "temperature_hotspot_c", "temperature_hotspot_limit_c", "hotspot limit"),
    ("memory", "temperature_memory_c", "temperature_memory_limit_c", "memory temperature limit"),
)
"""(subject, reading field, limit field, words): each sensor is judged against its own limit."""


def rule_temperature(ctx: RuleContext) -> Iterable[Finding]:
    for info, s in ctx.live():
        if info is None:
            continue
        for subject, reading, limit_field, words in TEMPERATURE_SENSORS:
            temp: float | None = getattr(s, reading)
            limit: float | None = getattr(info, limit_field)
            severity = temperature_level(temp, limit)
            if severity == "ok" or temp is None or limit is None:
                continue
            where = "at or above" if severity == "fail" else "near"
            sensor = "" if subject == "gpu" else f" {subject}"
            yield _finding(
                "temperature",
                severity,
                f"GPU {s.index}{sensor} at {fmt_temp(temp)}, {where} its {words} {fmt_temp(limit)}",
                "check fans, airflow and inlet temperature; the GPU will slow down to cool off",
                s.index,
                "" if subject == "gpu" else subject,
            )


def rule_pcie_link(ctx: RuleContext) -> Iterable[Finding]:
    for info, s in ctx.live():
        if info is not None and pcie_level(s, info) == "warn":
            yield _finding(
                "pcie_link",
                "warn",
                f"GPU {s.index} PCIe link at {_link(s.pcie_gen, s.pcie_width)} under load, below "
                f"its maximum {_link(info.pcie_max_gen, info.pcie_max_width)}",
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
            yield _finding(
                "nvlink_down",
                "fail",
                f"GPU {s.index} {word} {r.link} is down ({up}/{total} up)",
                hint,
                s.index,
                f"link{r.link}",
            )


def rule_persistence_mode(ctx: RuleContext) -> Iterable[Finding]:
    if not ctx.platform.startswith("linux"):
        return
    for info, s in ctx.live():
        if (
            info is not None
            and info.vendor == "nvidia"
            and info.persistence_mode is False
            and is_datacenter_gpu(info)
        ):
            yield _finding(
                "persistence_mode",
                "warn",
                f"GPU {s.index}: persistence mode is off",
                "enable nvidia-persistenced (or nvidia-smi -pm 1) so the driver stays loaded "
                "between jobs",
                s.index,
            )


def _describe_proc(p: ProcessSample) -> str:
    what = command_text(p.command, p.name, None, short=True)
    if len(what) > 40:
        what = what[:39] + "…"
    return f"PID {p.pid} ({p.user or '?'}, {what})"


def rule_other_processes(ctx: RuleContext) -> Iterable[Finding]:
    severity: Severity = "fail" if ctx.config.require_idle else "info"
    me = ctx.config.current_user
    hint = (
        "wait for them to finish or ask their owners; in a prolog, drain the node"
        if ctx.config.require_idle
        else "shared GPU: expect less memory and compute for your work"
    )
    for _info, s in ctx.live():
        procs = ctx.snapshot.processes_on(s.index)
        # A process that exited between the driver's listing and the host lookup is nobody's job.
        others = [p for p in procs if not p.exited and (p.user is None or p.user != me)]
        held = sum(p.gpu_memory_bytes or 0 for p in procs)
        unexplained = (s.memory_used_bytes or 0) - held
        parts = []
        if others:
            listed = ", ".join(
                f"{_describe_proc(p)} {_gib(p.gpu_memory_bytes)}"
                if p.gpu_memory_bytes is not None
                else _describe_proc(p)
                for p in others[:3]
            )
            more = f" and {len(others) - 3} more" if len(others) > 3 else ""
            parts.append(f"{len(others)} process(es) of other users: {listed}{more}")
        if unexplained >= UNEXPLAINED_MEMORY_BYTES:
            parts.append(f"{_gib(unexplained)} in use by processes not visible here")
        if parts:
            yield _finding(
                "other_processes", severity, f"GPU {s.index}: " + "; ".join(parts), hint, s.index
            )


def rule_driver_cuda(ctx: RuleContext) -> Iterable[Finding]:
    node = ctx.snapshot.node
    if not node.gpus or any(g.vendor != "nvidia" for g in node.gpus):
        return  # runtime_version is ROCm on AMD nodes
    torch_v = version_tuple(ctx.config.torch_cuda_version)
    driver_v = version_tuple(node.runtime_version)
    if torch_v is None or driver_v is None or driver_v[:2] >= torch_v[:2]:
        return
    severity: Severity = "fail" if driver_v[0] < torch_v[0] else "warn"
    yield _finding(
        "driver_cuda",
        severity,
        f"CUDA driver API {node.runtime_version} < torch built for {ctx.config.torch_cuda_version}",
        "update the NVIDIA driver, or install a torch build for the driver's CUDA version "
        "(minor-version compatibility runs most kernels, but not PTX-JIT ones; a lower major "
        "version does not run at all)",
        None,
    )


def rule_idle_memory(ctx: RuleContext) -> Iterable[Finding]:
    warn_after = ctx.config.idle_memory_minutes * 60.0
    for p in ctx.snapshot.processes:
        if not ctx.judged(p.gpu_index):
            continue
        since = ctx.idle_since.get((p.pid, p.gpu_index))
        if since is None:
            continue
        idle = ctx.now - since
        if idle < IDLE_INFO_AFTER_S:
            continue
        severity: Severity = "warn" if idle >= warn_after else "info"
        yield _finding(
            "idle_memory",
            severity,
            f"{_describe_proc(p)} holds {_gib(p.gpu_memory_bytes)} on GPU {p.gpu_index} and has "
            f"been idle for {fmt_duration(idle)}",
            "ask its owner to free it (e.g. shut down the notebook kernel) or end the process",
            p.gpu_index,
            str(p.pid),
        )


RULES: dict[str, tuple[RuleFn, str]] = {
    "not_responding": (rule_not_responding, "fail: NVML / AMD-SMI or a GPU not answering"),
    "gpu_lost": (rule_gpu_lost, "fail: GPU lost (fallen off the bus)"),
    "gpu_count": (rule_gpu_count, "fail: fewer GPUs than expected (--expect-gpus or Slurm)"),
    "xid": (rule_xid, "fail/warn/info: XID errors, graded by code, kept until acknowledged"),
    "gpu_event": (rule_gpu_event, "fail/info: ECC and GPU-lost events, kept until acknowledged"),
    "ecc_uncorrected": (rule_ecc_uncorrected, "fail: volatile uncorrected ECC errors"),
    "ecc_aggregate": (rule_ecc_aggregate, "warn: lifetime uncorrected ECC errors (nonzero)"),
    "retired_pages": (rule_retired_pages, "fail: retired pages pending (reset needed)"),
    "row_remap": (rule_row_remap, "fail: row remap failure (RMA); warn: remap pending (reset)"),
    "ecc_disabled": (rule_ecc_disabled, "warn: ECC disabled on an HBM datacenter GPU"),
    "throttle": (rule_throttle, "fail: HW slowdown / HW thermal / power brake; warn: SW thermal"),
    "power_limit": (rule_power_limit, "warn: power limit set below the default"),
    "temperature": (
        rule_temperature,
        "warn: within 5°C of a sensor's limit (GPU/edge, hotspot, memory); fail: at or above it",
    ),
    "pcie_link": (rule_pcie_link, "warn: PCIe link below max gen / width under load"),
    "nvlink_down": (rule_nvlink_down, "fail: an NVLink / XGMI link is down"),
    "persistence_mode": (rule_persistence_mode, "warn: persistence mode off (Linux, datacenter)"),
    "other_processes": (
        rule_other_processes,
        "info (fail with --require-idle): other users' processes or memory in use",
    ),
    "driver_cuda": (rule_driver_cuda, "warn: driver's CUDA older than torch's CUDA build"),
    "idle_memory": (
        rule_idle_memory,
        "info after 1 min, warn after idle_memory_minutes: memory held with no utilization",
    ),
}
"""Rule id -> (rule, one-line description)."""

EVENT_RULES = frozenset({"xid", "gpu_event"})
"""Rules whose findings come from events (listed until acknowledged, never "cleared")."""


__all__ = [
    "EVENT_RULES",
    "IDLE_INFO_AFTER_S",
    "IDLE_PCT",
    "RULES",
    "UNEXPLAINED_MEMORY_BYTES",
    "RuleContext",
    "RuleFn",
    "event_key",
    "is_datacenter_gpu",
]
