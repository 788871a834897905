"""Health rules: each reading (plus the events and timers the monitor keeps) to findings.

Every rule is a small pure function ``(RuleContext) -> Iterable[Finding]``, registered in
:data:`RULES` under its id (the id ``--ignore`` takes). :class:`HealthMonitor` runs them after
each reading (it is the sampler's ``HealthEvaluator``) and keeps state across readings:

- each finding's ``first_seen`` / ``last_seen`` by ``key``;
- a condition that clears stays listed with ``active=False`` until acknowledged;
- events (XID, ECC, GPU lost) stay listed, with the time of the first and last occurrence, until
  acknowledged;
- per-process idle timers for the "memory held with no utilization" rule.

Notify once: :meth:`HealthMonitor.update` returns every listed finding;
:meth:`HealthMonitor.take_new` returns (and forgets) the findings that appeared since the last call,
or whose severity rose, so a UI shows one notification per new finding however many readings list
it. A cleared finding that comes back before it is acknowledged is not new again.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gputui.format import command_text, fmt_bytes, fmt_duration, fmt_temp, fmt_watts
from gputui.history import History
from gputui.model import (
    SEVERITY_ORDER,
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

GIB = 1024**3

LOAD_UTIL_PCT = 30.0
"""GPU utilization from which a GPU counts as under load (PCIe link judged only then)."""
IDLE_PCT = 1.0
"""SM / GPU utilization at or below which a process counts as idle."""
IDLE_INFO_AFTER_S = 60.0
"""Idle memory is an ``info`` finding after this long, ``warn`` after ``idle_memory_minutes``."""
TEMP_MARGIN_C = 5.0
"""Warn this close to the slowdown temperature; fail at or above it."""
UNEXPLAINED_MEMORY_BYTES = GIB
"""GPU memory in use beyond what the listed processes hold that counts as "in use"."""
MAX_EVENTS = 1000
"""Events kept (oldest dropped first), so an XID storm cannot grow memory without bound."""


def effective_user() -> str | None:
    """Name of the effective user, or None where it cannot be told."""
    try:
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError, AttributeError, OSError):
        try:
            import getpass

            return getpass.getuser()
        except Exception:
            return None


@dataclass(frozen=True, slots=True)
class HealthConfig:
    """What the monitor judges and how."""

    expect_gpus: int | None = None
    """GPUs that must be present; None: what Slurm allocated (see :func:`slurm_expected_gpus`)."""
    gpus: frozenset[int] | None = None
    """Only judge these GPU indices; None: all."""
    ignore: frozenset[str] = frozenset()
    """Rule ids not to run."""
    pre_job: bool = False
    """A pre-job check: other users' processes or memory in use are ``fail`` (else ``info``)."""
    idle_memory_minutes: float = 10
    idle_memory_min_bytes: int = GIB
    current_user: str | None = field(default_factory=effective_user)
    torch_cuda_version: str | None = None
    """CUDA version torch was built for (see :func:`torch_cuda_version`); None: unknown."""


# -- helpers ---------------------------------------------------------------------------------------


def worst(findings: Iterable[Finding]) -> Severity:
    """The highest severity among ``findings`` (listed cleared ones included); ``ok`` if none."""
    best: Severity = "ok"
    for finding in findings:
        if SEVERITY_ORDER[finding.severity] > SEVERITY_ORDER[best]:
            best = finding.severity
    return best


def gpu_severity(findings: Iterable[Finding], index: int) -> Severity:
    """The badge of GPU ``index``: the worst of the findings on that GPU."""
    return worst(f for f in findings if f.gpu_index == index)


def slurm_expected_gpus(env: Mapping[str, str]) -> int | None:
    """GPUs Slurm allocated on this node: ``SLURM_GPUS_ON_NODE``, else the count of
    ``SLURM_JOB_GPUS`` (``0,1,4-7``); None outside a Slurm job (no ``SLURM_JOB_ID``)."""
    if not env.get("SLURM_JOB_ID"):
        return None
    on_node = env.get("SLURM_GPUS_ON_NODE", "").strip()
    if on_node.isdigit():
        return int(on_node)
    job_gpus = env.get("SLURM_JOB_GPUS", "").strip()
    if not job_gpus:
        return None
    count = 0
    for part in job_gpus.split(","):
        part = part.strip()
        lo, dash, hi = part.partition("-")
        if dash and lo.isdigit() and hi.isdigit():
            count += max(int(hi) - int(lo) + 1, 0)
        elif part:
            count += 1
    return count or None


_TORCH_CUDA = re.compile(r"^cuda\s*(?::[^=]*)?=\s*['\"]([0-9][0-9.]*)['\"]", re.MULTILINE)


def torch_cuda_version() -> str | None:
    """The CUDA version the installed torch was built for (``"12.4"``), read from
    ``torch/version.py`` without importing torch; None without torch or for a CPU build."""
    try:
        spec = importlib.util.find_spec("torch")
        if spec is None or not spec.origin:
            return None
        text = (Path(spec.origin).parent / "version.py").read_text(encoding="utf-8")
    except Exception:
        return None
    match = _TORCH_CUDA.search(text)
    return match.group(1) if match else None


def _version(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    parts = re.findall(r"\d+", text)
    return tuple(int(p) for p in parts[:3]) if parts else None


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


def _gb(value: float | None) -> str:
    text = fmt_bytes(value, space=True)
    return text if text.endswith("B") else text + "B"


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
    if not node.gpus:
        yield _finding(
            "not_responding",
            "fail",
            f"no GPUs found by the {node.backend} backend",
            "check that the driver is loaded (nvidia-smi / amd-smi) and the devices are visible",
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
            "the management library is not answering: check nvidia-smi / amd-smi; restart the "
            "driver or reboot if it hangs",
            None,
        )
        return
    for _info, sample in ctx.samples():
        if sample.error is not None and not sample.lost:
            yield _finding(
                "not_responding",
                "fail",
                f"GPU {sample.index} not responding: {sample.error}",
                "check nvidia-smi / amd-smi and the kernel log; reset the GPU or reboot",
                sample.index,
            )


def rule_gpu_lost(ctx: RuleContext) -> Iterable[Finding]:
    hint = "drain the node and reset the GPU (nvidia-smi -r) or reboot; RMA if it recurs"
    for _info, sample in ctx.samples():
        if sample.lost:
            # Backends say "GPU is lost (fell off the bus)"; anything else is worth quoting.
            error = sample.error or ""
            said = ("lost", "fell off")
            detail = "" if not error or any(w in error.lower() for w in said) else f": {error}"
            message = f"GPU {sample.index} is lost (fell off the bus){detail}"
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


def _event_key(event: GpuEvent) -> str:
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
            groups.setdefault(_event_key(event), []).append(event)
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
        "drain the node and reset the GPU (nvidia-smi -r); RMA if it recurs",
    ),
    "ecc_single_bit": (
        "info",
        "single-bit ECC error (corrected)",
        "nothing to do unless they become frequent",
    ),
    "gpu_lost": (
        "fail",
        "GPU fell off the bus",
        "drain the node and reset the GPU (nvidia-smi -r) or reboot; RMA if it recurs",
    ),
}


def rule_gpu_event(ctx: RuleContext) -> Iterable[Finding]:
    for key, group in _grouped(ctx.events, lambda e: e.kind != "xid").items():
        first = group[0]
        known = _EVENT_KINDS.get(first.kind)
        severity, words, hint = known or (
            "warn",
            first.kind.replace("_", " "),
            "check the kernel log and nvidia-smi -q",
        )
        where = "" if first.gpu_index is None else f"GPU {first.gpu_index}: "
        detail = f" ({group[-1].message})" if group[-1].message and known is None else ""
        yield _event_finding("gpu_event", key, severity, where + words + detail, hint, group)


def rule_ecc_uncorrected(ctx: RuleContext) -> Iterable[Finding]:
    for _info, s in ctx.live():
        if s.ecc_volatile_uncorrected:
            yield _finding(
                "ecc_uncorrected",
                "fail",
                f"GPU {s.index}: {s.ecc_volatile_uncorrected} uncorrected ECC error(s) since the "
                "last driver load",
                "drain the node and reset the GPU (nvidia-smi -r); RMA if errors return",
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
                "reset the GPU (nvidia-smi -r) or reboot so the page retirement takes effect",
                s.index,
            )


def rule_row_remap(ctx: RuleContext) -> Iterable[Finding]:
    for _info, s in ctx.live():
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
                "reset the GPU (nvidia-smi -r) at the next opportunity; work can go on until then",
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
                "enable it (nvidia-smi -e 1) and reboot; memory errors go undetected without it",
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
                f"restore it with nvidia-smi -i {s.index} -pl {default:.0f} (root) unless the cap "
                "is intended",
                s.index,
            )


def rule_temperature(ctx: RuleContext) -> Iterable[Finding]:
    for info, s in ctx.live():
        limit = info.temperature_slowdown_c if info is not None else None
        temp = s.temperature_gpu_c
        if limit is None or temp is None or temp < limit - TEMP_MARGIN_C:
            continue
        severity: Severity = "fail" if temp >= limit else "warn"
        where = "at or above" if temp >= limit else "near"
        yield _finding(
            "temperature",
            severity,
            f"GPU {s.index} at {fmt_temp(temp)}, {where} its slowdown temperature "
            f"{fmt_temp(limit)}",
            "check fans, airflow and inlet temperature; the GPU will slow down to cool off",
            s.index,
        )


def rule_pcie_link(ctx: RuleContext) -> Iterable[Finding]:
    for info, s in ctx.live():
        if info is None or s.utilization_gpu_pct is None or s.utilization_gpu_pct < LOAD_UTIL_PCT:
            continue
        low_gen = s.pcie_gen is not None and info.pcie_max_gen is not None
        low_gen = low_gen and s.pcie_gen < info.pcie_max_gen  # type: ignore[operator]
        low_width = s.pcie_width is not None and info.pcie_max_width is not None
        low_width = low_width and s.pcie_width < info.pcie_max_width  # type: ignore[operator]
        if low_gen or low_width:
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
        if not s.links:
            continue
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
                "reset the GPU (amd-smi reset -G) and check the XGMI bridge / hive; reseat or RMA "
                "if it persists"
                if xgmi
                else "reset the GPU (nvidia-smi -r) and check the NVSwitch fabric manager "
                "(systemctl status nvidia-fabricmanager); reseat or RMA if it persists"
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
    severity: Severity = "fail" if ctx.config.pre_job else "info"
    me = ctx.config.current_user
    hint = (
        "wait for them to finish or ask their owners; in a prolog, drain the node"
        if ctx.config.pre_job
        else "shared GPU: expect less memory and compute for your work"
    )
    for _info, s in ctx.live():
        procs = ctx.snapshot.processes_on(s.index)
        others = [p for p in procs if p.user is None or p.user != me]
        held = sum(p.gpu_memory_bytes or 0 for p in procs)
        unexplained = (s.memory_used_bytes or 0) - held
        parts = []
        if others:
            listed = ", ".join(
                f"{_describe_proc(p)} {_gb(p.gpu_memory_bytes)}"
                if p.gpu_memory_bytes is not None
                else _describe_proc(p)
                for p in others[:3]
            )
            more = f" and {len(others) - 3} more" if len(others) > 3 else ""
            parts.append(f"{len(others)} process(es) of other users: {listed}{more}")
        if unexplained >= UNEXPLAINED_MEMORY_BYTES:
            parts.append(f"{_gb(unexplained)} in use by processes not visible here")
        if parts:
            yield _finding(
                "other_processes", severity, f"GPU {s.index}: " + "; ".join(parts), hint, s.index
            )


def rule_driver_cuda(ctx: RuleContext) -> Iterable[Finding]:
    node = ctx.snapshot.node
    if not node.gpus or any(g.vendor != "nvidia" for g in node.gpus):
        return  # runtime_version is ROCm on AMD nodes
    torch_v = _version(ctx.config.torch_cuda_version)
    driver_v = _version(node.runtime_version)
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
            f"{_describe_proc(p)} holds {_gb(p.gpu_memory_bytes)} on GPU {p.gpu_index} and has "
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
    "temperature": (rule_temperature, "warn: within 5°C of slowdown; fail: at or above it"),
    "pcie_link": (rule_pcie_link, "warn: PCIe link below max gen / width under load"),
    "nvlink_down": (rule_nvlink_down, "fail: an NVLink / XGMI link is down"),
    "persistence_mode": (rule_persistence_mode, "warn: persistence mode off (Linux, datacenter)"),
    "other_processes": (
        rule_other_processes,
        "info (fail with pre_job): other users' processes or memory in use",
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


# -- the monitor ---------------------------------------------------------------------------------


def _event_ident(e: GpuEvent) -> tuple[object, ...]:
    return (e.timestamp, e.kind, e.gpu_index, e.code, e.message, e.source)


_RULE_RANK = {rule: rank for rank, rule in enumerate(RULES)}


def finding_sort_key(f: Finding) -> tuple[int, int, int, str]:
    """Worst first; within a severity, in RULES order (hardware faults before busy GPUs), so the
    first finding (the drain reason in a prolog) names the most telling problem."""
    return (
        -SEVERITY_ORDER[f.severity],
        _RULE_RANK.get(f.rule, len(_RULE_RANK)),
        -1 if f.gpu_index is None else f.gpu_index,
        f.key,
    )


class HealthMonitor:
    """Runs :data:`RULES` after each reading and keeps findings across readings.

    Thread-safe: the sampler thread calls :meth:`update`; the UI thread may call
    :meth:`acknowledge`, :meth:`take_new`, :meth:`add_events` and :attr:`findings` at any time."""

    def __init__(
        self,
        config: HealthConfig | None = None,
        *,
        env: Mapping[str, str] | None = None,
        rules: Mapping[str, tuple[RuleFn, str]] | None = None,
        platform: str = sys.platform,
    ) -> None:
        self.config = config if config is not None else HealthConfig()
        self.expected_gpus = (
            self.config.expect_gpus
            if self.config.expect_gpus is not None
            else slurm_expected_gpus(os.environ if env is None else env)
        )
        self.rules = dict(RULES if rules is None else rules)
        self.platform = platform
        self._lock = threading.Lock()
        self._findings: dict[str, Finding] = {}
        self._events: list[GpuEvent] = []
        self._event_ids: set[tuple[object, ...]] = set()
        self._idle_since: dict[tuple[int, int], float] = {}
        self._ecc_baseline: dict[int, int] = {}
        self._new: dict[str, Finding] = {}

    # -- input -----------------------------------------------------------------------------------

    def add_events(self, events: Iterable[GpuEvent]) -> None:
        """Events from outside the readings (e.g. XIDs from the kernel log); duplicates ignored.
        They are judged at the next :meth:`update`."""
        with self._lock:
            self._add_events(events)

    def _add_events(self, events: Iterable[GpuEvent]) -> None:
        for event in events:
            ident = _event_ident(event)
            if ident in self._event_ids:
                continue
            self._event_ids.add(ident)
            self._events.append(event)
        if len(self._events) > MAX_EVENTS:
            del self._events[: len(self._events) - MAX_EVENTS]
        if len(self._event_ids) > 10 * MAX_EVENTS:
            self._event_ids = {_event_ident(e) for e in self._events}

    def _track(self, snapshot: Snapshot) -> None:
        now = snapshot.timestamp
        util = {s.index: s.utilization_gpu_pct for s in snapshot.gpus}
        idle_now: set[tuple[int, int]] = set()
        for p in snapshot.processes:
            gpu_util = util.get(p.gpu_index)
            if (
                p.gpu_memory_bytes is not None
                and p.gpu_memory_bytes >= self.config.idle_memory_min_bytes
                and (p.sm_pct is None or p.sm_pct <= IDLE_PCT)
                and gpu_util is not None
                and gpu_util <= IDLE_PCT
            ):
                key = (p.pid, p.gpu_index)
                idle_now.add(key)
                self._idle_since.setdefault(key, now)
        for key in list(self._idle_since):
            if key not in idle_now:
                del self._idle_since[key]
        for s in snapshot.gpus:
            if s.ecc_aggregate_uncorrected is not None:
                self._ecc_baseline.setdefault(s.index, s.ecc_aggregate_uncorrected)

    # -- HealthEvaluator ---------------------------------------------------------------------------

    def update(self, snapshot: Snapshot, history: History | None = None) -> tuple[Finding, ...]:
        """Judge one reading; returns every listed finding, worst first."""
        with self._lock:
            self._add_events(snapshot.events)
            self._track(snapshot)
            ctx = RuleContext(
                snapshot=snapshot,
                config=self.config,
                expected_gpus=self.expected_gpus,
                events=tuple(self._events),
                idle_since=dict(self._idle_since),
                ecc_baseline=dict(self._ecc_baseline),
                history=history,
                platform=self.platform,
            )
            now = snapshot.timestamp
            current: dict[str, Finding] = {}
            for rule_id, (fn, _doc) in self.rules.items():
                if rule_id in self.config.ignore:
                    continue
                for finding in fn(ctx):
                    if ctx.judged(finding.gpu_index):
                        current[finding.key or f"{finding.rule}:{finding.gpu_index}"] = finding
            for key, finding in current.items():
                prev = self._findings.get(key)
                first = finding.first_seen
                if first is None:
                    first = prev.first_seen if prev is not None else now
                last = finding.last_seen if finding.last_seen is not None else now
                listed = dataclasses.replace(
                    finding, key=key, first_seen=first, last_seen=last, active=True
                )
                worse = (
                    prev is None or SEVERITY_ORDER[listed.severity] > SEVERITY_ORDER[prev.severity]
                )
                if worse or key in self._new:  # new, worse, or not yet taken: (re)queue it
                    self._new[key] = listed
                self._findings[key] = listed
            for key, prev in list(self._findings.items()):
                if key not in current and prev.active:
                    self._findings[key] = dataclasses.replace(prev, active=False)
                    if key in self._new:
                        self._new[key] = self._findings[key]
            return tuple(sorted(self._findings.values(), key=finding_sort_key))

    # -- output ----------------------------------------------------------------------------------

    @property
    def findings(self) -> tuple[Finding, ...]:
        """Every listed finding as of the last update, worst first."""
        with self._lock:
            return tuple(sorted(self._findings.values(), key=finding_sort_key))

    def take_new(self) -> list[Finding]:
        """Findings that appeared (or got worse) since the last call, worst first; each is
        returned once, so a UI can notify once per finding."""
        with self._lock:
            new = sorted(self._new.values(), key=finding_sort_key)
            self._new.clear()
            return new

    def acknowledge(self, key: str | None = None) -> int:
        """Drop acknowledged findings; returns how many were dropped.

        ``key=None`` drops every finding that is not a live condition: cleared ones
        (``active=False``) and event findings (XID, ECC, GPU-lost events). A key drops that
        finding if it is cleared or an event finding; a live condition cannot be acknowledged
        away (it would be listed again at the next reading), so it stays and counts 0."""
        with self._lock:
            if key is None:
                keys = [
                    k for k, f in self._findings.items() if not f.active or f.rule in EVENT_RULES
                ]
            else:
                f = self._findings.get(key)
                keys = [key] if f is not None and (not f.active or f.rule in EVENT_RULES) else []
            for k in keys:
                finding = self._findings.pop(k)
                self._new.pop(k, None)
                if finding.rule in EVENT_RULES:
                    # Their ids stay known, so re-reading the kernel log does not bring them back.
                    self._events = [e for e in self._events if _event_key(e) != k]
            return len(keys)


__all__ = [
    "EVENT_RULES",
    "RULES",
    "HealthConfig",
    "HealthMonitor",
    "RuleContext",
    "effective_user",
    "gpu_severity",
    "is_datacenter_gpu",
    "slurm_expected_gpus",
    "torch_cuda_version",
    "worst",
]
