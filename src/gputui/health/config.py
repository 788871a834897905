"""What the health rules judge and how, and the facts of this machine they need: the effective
user, the GPUs Slurm allocated, the CUDA version torch was built for."""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path

from gputui.core.frozen import frozen

MIB = 1024**2
GIB = 1024**3

DEFAULT_XID_WINDOW_HOURS = 24.0
"""How long an XID from the kernel log counts when nothing in the log says the GPU was
initialised afresh since (a reset in place is not logged): a day, so a fault is still on the
next daily review, and a GPU fixed by a reset is judged healthy again the day after, not only
after a reboot."""


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


@frozen
class HealthConfig:
    """What the monitor judges and how."""

    expect_gpus: int | None = None
    """GPUs that must be present; None: what Slurm allocated (see :func:`slurm_expected_gpus`)."""
    gpus: frozenset[int] | None = None
    """Only judge these GPU indices; None: all."""
    ignore: frozenset[str] = frozenset()
    """Rule ids not to run."""
    require_idle: bool = False
    """The GPUs must be free (a Slurm prolog): any process on them, whoever runs it (root's
    too: a prolog runs as root, and container workloads show as root on the host), or memory
    in use by processes not visible here, is ``fail``. Otherwise other users' processes are
    ``info``: a busy GPU is not an unhealthy one."""
    idle_memory_minutes: float = 10
    idle_memory_min_bytes: int = GIB
    allocated_idle_minutes: float = 10
    """A GPU the scheduler allocated that does no work is ``info`` at once, ``warn`` after this
    many minutes (``allocated_idle``)."""
    current_user: str | None = field(default_factory=effective_user)
    own_pid: int | None = field(default_factory=os.getpid)
    """gputui's own process: a GPU context it holds itself is nobody else's use."""
    torch_cuda_version: str | None = None
    """CUDA version torch was built for (see :func:`torch_cuda_version`); None: unknown."""
    xid_window_hours: float | None = DEFAULT_XID_WINDOW_HOURS
    """An XID read from the kernel log longer ago than this is history (``info``); None: no
    window (only a driver load or the GPU's re-enumeration after it makes it history)."""
    straggler_pct: float = 10.0
    """A GPU this far (%) below its siblings' median clock, power or utilisation is a straggler
    (0: not judged)."""
    straggler_seconds: float = 30.0
    """... once it has stayed there this long (0: in every reading there is, as ``check``)."""


# -- helpers ---------------------------------------------------------------------------------------


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


def version_tuple(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    parts = re.findall(r"\d+", text)
    return tuple(int(p) for p in parts[:3]) if parts else None


__all__ = [
    "DEFAULT_XID_WINDOW_HOURS",
    "GIB",
    "MIB",
    "HealthConfig",
    "effective_user",
    "slurm_expected_gpus",
    "torch_cuda_version",
]
