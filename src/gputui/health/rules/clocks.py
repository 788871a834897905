"""Rules about what holds a GPU back: clock slowdowns, power limits, temperatures, and the
persistence mode that keeps the driver ready."""

from __future__ import annotations

from collections.abc import Iterable

from gputui.core.format import fmt_temp, fmt_watts
from gputui.core.model import THROTTLE_TROUBLE, Finding, Severity, describe_throttle
from gputui.health import hints
from gputui.health.levels import temperature_level
from gputui.health.rules.context import (
    RuleContext,
    finding,
    is_datacenter_gpu,
    is_vgpu_guest,
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
        yield finding(
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
            yield finding(
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
            yield finding(
                "temperature",
                severity,
                f"GPU {s.index}{sensor} at {fmt_temp(temp)}, {where} its {words} {fmt_temp(limit)}",
                "check fans, airflow and inlet temperature; the GPU will slow down to cool off",
                s.index,
                "" if subject == "gpu" else subject,
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
            and not is_vgpu_guest(info)
        ):
            yield finding(
                "persistence_mode",
                "warn",
                f"GPU {s.index}: persistence mode is off",
                "enable nvidia-persistenced (or nvidia-smi -pm 1) so the driver stays loaded "
                "between jobs",
                s.index,
            )
