"""A backend spec (``auto``, ``nvml``, ``amd``, ``sim:SCENARIO``, ``replay:FILE``), parsed once.

Everything downstream asks the spec (``spec.simulated``, ``spec.replayed``) instead of looking at
strings.
"""

from __future__ import annotations

from typing import Literal, get_args

from gputui.core.frozen import frozen

BackendKind = Literal["auto", "nvml", "amd", "sim", "replay"]
BACKEND_KINDS: tuple[str, ...] = get_args(BackendKind)
DEFAULT_SIM_SCENARIO = "dgx-h100"
_ALIASES = {"amdsmi": "amd", "amd-smi": "amd", "demo": "sim"}
SPEC_HELP = "auto, nvml, amd, sim[:SCENARIO] or replay:FILE"


@frozen
class BackendSpec:
    """What to read: ``kind`` and its argument (a scenario for ``sim``, a file for ``replay``)."""

    kind: BackendKind = "auto"
    arg: str = ""

    @classmethod
    def parse(cls, text: str) -> BackendSpec:
        """``auto``, ``nvml``, ``amd``, ``sim``, ``sim:SCENARIO``, ``replay:FILE``; ValueError
        naming the choices otherwise. A simulated scenario's name is checked here too."""
        kind, _, arg = text.strip().partition(":")
        kind = _ALIASES.get(kind.lower(), kind.lower())
        if kind == "sim":
            return cls.sim(arg.strip() or DEFAULT_SIM_SCENARIO)
        if kind == "replay":
            if not arg:
                raise ValueError("replay:FILE needs the path of a recording")
            return cls("replay", arg)
        if not arg:
            if kind == "auto":
                return cls("auto")
            if kind == "nvml":
                return cls("nvml")
            if kind == "amd":
                return cls("amd")
        raise ValueError(f"unknown backend {text!r} (choose from: {SPEC_HELP})")

    @classmethod
    def sim(cls, scenario: str = DEFAULT_SIM_SCENARIO) -> BackendSpec:
        from gputui.backends.sim import SCENARIOS

        if scenario not in SCENARIOS:
            raise ValueError(
                f"unknown simulated scenario {scenario!r} (choose from: {', '.join(SCENARIOS)})"
            )
        return cls("sim", scenario)

    @classmethod
    def replay(cls, path: str) -> BackendSpec:
        return cls("replay", path)

    @property
    def simulated(self) -> bool:
        return self.kind == "sim"

    @property
    def replayed(self) -> bool:
        return self.kind == "replay"

    @property
    def live(self) -> bool:
        """Reads real GPUs (NVML / AMD-SMI)."""
        return self.kind in ("auto", "nvml", "amd")

    def candidates(self) -> tuple[BackendSpec, ...]:
        """The specs ``auto`` tries, in order; a concrete spec is its own only candidate."""
        if self.kind == "auto":
            return (BackendSpec("nvml"), BackendSpec("amd"))
        return (self,)

    def __str__(self) -> str:
        return f"{self.kind}:{self.arg}" if self.arg else self.kind


__all__ = ["BACKEND_KINDS", "DEFAULT_SIM_SCENARIO", "SPEC_HELP", "BackendKind", "BackendSpec"]
