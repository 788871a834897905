"""How the probe screen runs a probe: a :class:`ProbeSession` starts and cancels it, and every
protocol message a worker sends reaches the screen as a :class:`ProbeEvent`.

The default :class:`SubprocessProbeSession` is a thin adapter over
:class:`gputui.probe.runner.ProbeRunner`, run in a Textual thread worker so nothing blocks the UI
thread. It sees its screen only through :class:`ProbeHost`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from textual.message import Message
from textual.worker import Worker

from gputui.core.model import NodeInfo
from gputui.probe.devices import DevicePlan, plan_devices
from gputui.probe.protocol import Done, Error, Hello, ProbeMessage
from gputui.probe.runner import ProbeRunner, Target

CPU_SIZE_SCALE = 0.01
CPU_LABEL = "CPU"


class ProbeEvent(Message):
    """One protocol message from the worker probing ``gpu_index`` (None: the CPU)."""

    def __init__(self, gpu_index: int | None, msg: ProbeMessage) -> None:
        super().__init__()
        self.gpu_index = gpu_index
        self.msg = msg


class ProbeSession(Protocol):
    """What the screen needs from a probe run. Events arrive as :class:`ProbeEvent` s posted to
    the screen; every probed device ends with a ``done`` message (synthesised if the child
    died without one)."""

    def start(self, gpus: list[int], tests: list[str]) -> None: ...

    def cancel(self) -> None: ...


class ProbeHost(Protocol):
    """What a session needs from the screen it reports to."""

    @property
    def node(self) -> NodeInfo: ...

    def post_message(self, message: Message) -> bool: ...

    def run_worker(
        self,
        work: Callable[[], None],
        *,
        group: str = ...,
        exit_on_error: bool = ...,
        thread: bool = ...,
    ) -> Worker[None]: ...


class SubprocessProbeSession:
    """A :class:`ProbeSession` over :class:`ProbeRunner`: one worker child per GPU (one CPU child
    with a small size scale when ``cpu``), run to the end in a Textual thread worker. The
    children see only the probed GPUs and each one's hello is checked against its GPU, as for
    the command (:func:`gputui.probe.devices.plan_devices`). Every
    runner event is posted to the screen as a :class:`ProbeEvent`; each device gets exactly one
    ``done`` (the runner starts a GPU's PCIe/P2P tests in a second child, and a crashed or
    cancelled child sends none: the adapter posts it when :meth:`ProbeRunner.run` returns)."""

    def __init__(self, screen: ProbeHost, *, cpu: bool = False, python: str | None = None):
        self.screen = screen
        self.cpu = cpu
        self.python = python
        self.runner: ProbeRunner | None = None
        self._children: dict[int | None, int] = {}
        self._hello: set[int | None] = set()
        self._done: set[int | None] = set()

    def plan(self, gpus: list[int]) -> DevicePlan | None:
        return None if self.cpu else plan_devices(self.screen.node, gpus)

    def targets(self, gpus: list[int]) -> list[Target]:
        plan = self.plan(gpus)
        return [Target(None, "cpu", CPU_LABEL)] if plan is None else list(plan.targets)

    def start(self, gpus: list[int], tests: list[str]) -> None:
        plan = self.plan(gpus)
        runner = ProbeRunner(
            [Target(None, "cpu", CPU_LABEL)] if plan is None else list(plan.targets),
            tests=tests,
            python=self.python,
            size_scale=CPU_SIZE_SCALE if self.cpu else None,
            on_event=self._event,
            plan=plan,
            node=None if self.cpu else self.screen.node,
        )
        self.runner = runner
        children: dict[int | None, int] = {}
        for phase in runner.phases():
            for target, _ in phase:
                children[target.gpu] = children.get(target.gpu, 0) + 1
        self._children = children
        self._hello = set()
        self._done = set()
        self.screen.run_worker(
            lambda: self._run(runner), thread=True, group="probe", exit_on_error=False
        )

    def _post(self, gpu: int | None, msg: ProbeMessage) -> None:
        self.screen.post_message(ProbeEvent(gpu, msg))

    def _event(self, gpu: int | None, msg: ProbeMessage) -> None:
        """From the runner's thread: one hello and one done per device reach the screen."""
        match msg:
            case Hello():
                if gpu in self._hello:
                    return
                self._hello.add(gpu)
            case Done():
                self._children[gpu] = self._children.get(gpu, 1) - 1
                if self._children[gpu] > 0 or gpu in self._done:
                    return
                self._done.add(gpu)
        self._post(gpu, msg)

    def _run(self, runner: ProbeRunner) -> None:
        """In a worker thread: run to the end, then end every device that got no done."""
        try:
            runs = runner.run()
        except Exception as exc:  # the screen must never wait forever
            runs = {}
            for target in runner.targets:
                self._post(target.gpu, Error(None, str(exc)))
        for target in runner.targets:
            if target.gpu in self._done:
                continue
            run = runs.get(target.gpu)
            if run is not None and run.error_kind == "start":
                for error in run.errors:
                    self._post(target.gpu, Error(None, error))
            self._done.add(target.gpu)
            cancelled = runner.cancelled or (run is not None and run.cancelled)
            seconds = run.seconds if run is not None else 0.0
            self._post(target.gpu, Done(seconds, cancelled=cancelled))

    def cancel(self) -> None:
        """SIGTERM to every child now, SIGKILL after a grace period (the runner's)."""
        if self.runner is not None:
            self.runner.cancel()
