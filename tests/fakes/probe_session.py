"""A probe session for the probe screen that feeds canned protocol messages (two H100s running
three tests) instead of starting a worker."""

from __future__ import annotations

from typing import ClassVar

from gputui.probe import protocol
from gputui.tui.screens.probe import ProbeEvent, ProbeScreen

TESTS = ["memory_copy", "h2d", "matmul_bf16"]


def hello(index: int | None, tests: list[str] = TESTS) -> protocol.Hello:
    kind, name = ("cpu", "CPU: test") if index is None else ("cuda", "NVIDIA H100 80GB HBM3")
    return protocol.Hello("0.1", "2.5.0", kind, name, index, 80 << 30, 79 << 30, list(tests))


def result(test: str, value: float, unit: str, method: str = "canned") -> protocol.Result:
    return protocol.Result(test, value, unit, method, {}, 10, 1.0)


CANNED: dict[int, list[protocol.ProbeMessage]] = {
    0: [
        hello(0),
        protocol.Progress("memory_copy", 0.5, "8 GiB buffers"),
        result("memory_copy", 2900.0, "GB/s", "copy 2x8 GiB, read+write"),
        result("h2d", 54.1, "GB/s", "pinned 1 GiB"),
        result("matmul_bf16", 780.0, "TFLOPS", "8192³ bf16, CUDA events"),
        protocol.Done(12.0),
    ],
    1: [
        hello(1),
        result("memory_copy", 2880.0, "GB/s", "copy 2x8 GiB, read+write"),
        result("h2d", 53.8, "GB/s", "pinned 1 GiB"),
        result("matmul_bf16", 640.0, "TFLOPS", "8192³ bf16, CUDA events"),
        protocol.Done(12.5),
    ],
}


class FakeSession:
    """Records start/cancel; :meth:`feed` posts canned messages the way a session does."""

    instances: ClassVar[list[FakeSession]] = []

    def __init__(self, screen: ProbeScreen, *, auto: bool = False) -> None:
        self.screen = screen
        self.auto = auto
        self.started: tuple[list[int], list[str]] | None = None
        self.cancelled = 0
        FakeSession.instances.append(self)

    def start(self, gpus: list[int], tests: list[str]) -> None:
        self.started = (gpus, tests)
        if self.auto:
            for gpu in gpus:
                self.feed(gpu, CANNED[gpu])

    def cancel(self) -> None:
        self.cancelled += 1

    def feed(self, gpu: int | None, messages: list[protocol.ProbeMessage]) -> None:
        for msg in messages:
            protocol.encode(msg)  # canned messages are valid protocol lines
            self.screen.post_message(ProbeEvent(gpu, msg))


def canned_session(screen: ProbeScreen) -> FakeSession:
    return FakeSession(screen, auto=True)


def manual_session(screen: ProbeScreen) -> FakeSession:
    return FakeSession(screen)
