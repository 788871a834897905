"""The simulated backend (``gputui --demo``): a realistic, deterministic, cheap GPU node.

Modules, one job each: ``noise`` (hash-based noise), ``hardware`` (board models), ``workloads``
(activity tracks), ``scenarios`` (which node runs what), ``physics`` (power, heat, clocks),
``hostsim`` (the host), ``backend`` (the :class:`SimBackend` adapter).
"""

from __future__ import annotations

from gputui.backends.sim.backend import LOST_ERROR, SimBackend
from gputui.backends.sim.scenarios import SCENARIOS

__all__ = ["LOST_ERROR", "SCENARIOS", "SimBackend"]
