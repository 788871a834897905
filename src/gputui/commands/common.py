"""What every command gets besides its own options, and what a command module provides.

- :class:`Common`: the options given before or after any sub-command (``--backend``, ``--demo``,
  ``--replay``, ``--seed``) and the run's :class:`~gputui.settings.model.Settings` (interval,
  price, theme, read-only, health thresholds: config file, environment and options in one),
  read from the command line in one place (:meth:`Common.from_args`).
- :class:`Seams`: the outside world a command reads and writes (clocks, sleep, environment,
  output stream, kernel log ...), the real ones by default; tests pass their own.
- :class:`Runner`: the module of a command, ``options`` / ``run``; :class:`Command` a sub-command,
  which also adds its parser. :class:`LazyCommand` is the sub-command :mod:`gputui.cli` lists: the
  parser from :mod:`gputui.commands.parsers`, the implementation imported when it runs.
"""

from __future__ import annotations

import argparse
import importlib
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any, Protocol, TextIO, cast

from gputui.backends.spec import BackendSpec
from gputui.core.frozen import frozen
from gputui.settings.model import Settings

if TYPE_CHECKING:
    from gputui.commands.args import SubParsers

KernelLogReader = Callable[[], "list[str] | None"]
"""The kernel log's lines, or None when it cannot be read."""


class UsageError(Exception):
    """An option the command cannot use: the command line prints its usage line and this
    message, and exits 2 (as argparse does for a malformed one)."""


@frozen
class Common:
    """The options every command shares, as given on the command line."""

    backend: str = "auto"
    demo: bool = False
    replay: str | None = None
    seed: int = 0
    settings: Settings = field(default_factory=Settings)
    """The run's settings: defaults < config file < environment < these options."""

    @property
    def interval(self) -> float:
        return self.settings.interval

    @classmethod
    def from_args(cls, args: argparse.Namespace, settings: Settings | None = None) -> Common:
        return cls(
            backend=args.backend,
            demo=args.demo,
            replay=getattr(args, "replay", None),
            seed=args.seed,
            settings=settings if settings is not None else Settings(),
        )

    def spec(self) -> BackendSpec:
        """``--backend``, ``--demo`` and ``--replay`` as one spec. Called only by the commands
        that read GPUs (``gputui --backend x fleet`` is no error); :class:`UsageError` when they
        do not go together."""
        try:
            spec = BackendSpec.parse(self.backend)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if self.demo:
            if spec.kind not in ("auto", "sim"):
                raise UsageError("--demo cannot be combined with --backend " + self.backend)
            spec = spec if spec.simulated else BackendSpec.sim()
        if self.replay is not None:
            if self.demo or spec.kind != "auto":
                raise UsageError("--replay cannot be combined with --demo or --backend")
            spec = BackendSpec.replay(self.replay)
        return spec


@frozen
class Seams:
    """Where a command meets the world outside its options."""

    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic
    """What deadlines are measured by (a wall clock may be set back)."""
    environ: Mapping[str, str] | None = None
    """None: ``os.environ``."""
    out: TextIO | None = None
    """Where results go; None: ``sys.stdout`` as it is when written."""
    kernel_log: KernelLogReader | bool | None = True
    """``check``: True reads the kernel log (not for a simulated node), a callable reads it that
    way, None / False skips it."""
    stop: threading.Event | None = None
    """``export``: serve until it is set (None: until Ctrl-C / SIGTERM)."""
    stderr_is_terminal: bool | None = None
    """Whether messages go to a person (progress is then said); None: ``sys.stderr.isatty()``."""


REAL = Seams()


class Runner(Protocol):
    """The module that runs a command: its options from the command line, then ``run``."""

    def options(self, args: argparse.Namespace, common: Common, /) -> Any:
        """The command's frozen options from the parsed command line; :class:`UsageError`."""

    def run(self, options: Any, /) -> int:
        """Run the command; the exit status (:mod:`gputui.core.exitcodes`)."""


class Command(Runner, Protocol):
    """A sub-command: it also adds its parser (name, help, options)."""

    def add_parser(self, commands: SubParsers, /) -> None: ...


@frozen
class LazyCommand:
    """A :class:`Command` whose parser is at hand and whose implementation, ``module`` (with
    ``options`` and ``run``), is imported the first time the command is chosen: building the
    whole command line imports no command's implementation."""

    add_parser: Callable[[SubParsers], None]
    module: str
    """e.g. ``gputui.commands.check``."""

    def runner(self) -> Runner:
        return cast(Runner, importlib.import_module(self.module))

    def options(self, args: argparse.Namespace, common: Common, /) -> Any:
        return self.runner().options(args, common)

    def run(self, options: Any, /) -> int:
        return self.runner().run(options)


__all__ = [
    "REAL",
    "Command",
    "Common",
    "KernelLogReader",
    "LazyCommand",
    "Runner",
    "Seams",
    "UsageError",
]
