"""Health: rules that turn readings into findings, the monitor that keeps them across readings,
and the one roll-up every view uses.

- :mod:`~gputui.health.config`: what is judged (HealthConfig) and the machine facts it needs;
- :mod:`~gputui.health.levels`: thresholds shared with the dashboard's colours;
- :mod:`~gputui.health.rules`: the rules, by id (:data:`RULES`);
- :mod:`~gputui.health.monitor`: :class:`HealthMonitor`, the sampler's health evaluator;
- :mod:`~gputui.health.rollup`: worst severity, counts, order, badges;
- :mod:`~gputui.health.verdict`: a check's verdict over the judged GPUs.
"""

from __future__ import annotations

from gputui.health.config import (
    HealthConfig,
    effective_user,
    slurm_expected_gpus,
    torch_cuda_version,
)
from gputui.health.monitor import HealthMonitor
from gputui.health.rollup import finding_sort_key, gpu_severity, worst
from gputui.health.rules import EVENT_RULES, RULES, RuleContext, is_datacenter_gpu

__all__ = [
    "EVENT_RULES",
    "RULES",
    "HealthConfig",
    "HealthMonitor",
    "RuleContext",
    "effective_user",
    "finding_sort_key",
    "gpu_severity",
    "is_datacenter_gpu",
    "slurm_expected_gpus",
    "torch_cuda_version",
    "worst",
]
