"""Worker child processes: start one, read its two streams, signal it, reap it.

Each worker runs in its own session (its own process group), so a signal reaches anything it
started too. A reader thread per child decodes stdout into protocol messages and puts them on the
runner's queue; another keeps the last lines of stderr for error reports.
"""

from __future__ import annotations

import collections
import contextlib
import os
import queue
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from gputui.core.frozen import frozen
from gputui.probe import protocol
from gputui.probe.protocol import ProbeMessage
from gputui.probe.runs import Target

STDERR_TAIL = 20
BAD_LINE_CHARS = 200


@frozen
class BadLine:
    """A stdout line that is not a probe message: why, and the start of the line."""

    reason: str


@frozen
class EndOfStream:
    """The worker closed its stdout (it has exited or is about to)."""


StreamEvent = ProbeMessage | BadLine | EndOfStream
EventQueue = queue.Queue["tuple[WorkerProcess, StreamEvent] | None"]
"""What the reader threads put for the runner; None only wakes the runner up."""


def gputui_pythonpath() -> str:
    """The folder that holds the ``gputui`` package (what a foreign Python needs to import it)."""
    import gputui

    return str(Path(gputui.__file__).resolve().parent.parent)


TF32_OVERRIDE_VARS = ("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "NVIDIA_TF32_OVERRIDE")
"""Variables that change float32 matmul precision behind torch's back, removed from the workers'
environment: ``TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1`` turns TF32 on for cuBLAS whatever the
program sets (pytorch/pytorch#77114; read once at start-up, #85859), and ``NVIDIA_TF32_OVERRIDE``
overrides the CUDA libraries' TF32 choice (``0`` turns TF32 off everywhere). NVIDIA's PyTorch
containers and serving stacks set them (e.g. lightseekorg/tokenspeed#35 sets both to 1), which
would time the FP32 test as TF32 or the TF32 test as FP32. On the first real GPU (an H100 SXM5,
torch 2.11.0+cu130, whose ``fp32_precision`` API wins) the override changed nothing (FP32 51.6
TFLOPS with it, 52.0 without: tests/data/real/h100-sxm5-580.159.04), but older torch builds
honour it."""


def child_env(
    base: Mapping[str, str] | None = None, visible: Mapping[str, str | None] | None = None
) -> dict[str, str]:
    """The worker's environment: gputui importable, CUDA devices in PCI bus order, TF32 allowed
    for hipBLASLt (``HIPBLASLT_ALLOW_TF32=1`` unless the caller set it: without it torch on ROCm
    runs "TF32" matmuls as FP32), and no TF32 override (:data:`TF32_OVERRIDE_VARS`).

    ``visible``: the device visibility variables to set (a value) or remove (None), from
    :func:`gputui.probe.devices.plan_devices`; without it every GPU is visible
    (``CUDA_VISIBLE_DEVICES`` removed)."""
    env = dict(os.environ if base is None else base)
    path = gputui_pythonpath()
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = path if not old else path + os.pathsep + old
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    for name, value in (visible if visible is not None else {"CUDA_VISIBLE_DEVICES": None}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    env.setdefault("HIPBLASLT_ALLOW_TF32", "1")
    for name in TF32_OVERRIDE_VARS:
        env.pop(name, None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


class WorkerProcess:
    """One running worker child and the threads that read it."""

    def __init__(self, target: Target, proc: subprocess.Popen[bytes]) -> None:
        self.target = target
        self.proc = proc
        self.done = False
        """It sent ``done``: whatever status it exits with, it finished."""
        self.rejected = False
        """Its hello named another GPU than its target: everything it sends is dropped."""
        self.bad_lines = 0
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL)
        self._stdout_reader: threading.Thread | None = None
        self._stderr_reader: threading.Thread | None = None

    @classmethod
    def start(
        cls, target: Target, argv: Sequence[str], env: Mapping[str, str], events: EventQueue
    ) -> WorkerProcess:
        """Start the child and its readers; raises OSError when it cannot be started."""
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            start_new_session=True,
        )
        child = cls(target, proc)
        child._stdout_reader = threading.Thread(
            target=child._read_stdout, args=(events,), daemon=True
        )
        child._stderr_reader = threading.Thread(target=child._read_stderr, daemon=True)
        child._stdout_reader.start()
        child._stderr_reader.start()
        return child

    @property
    def stderr_tail(self) -> list[str]:
        """The last lines the child wrote on stderr."""
        return list(self._stderr)

    def _read_stdout(self, events: EventQueue) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            if not raw.strip():
                continue
            event: StreamEvent
            try:
                event = protocol.decode(raw)
            except protocol.ProtocolError as exc:
                text = raw.decode("utf-8", "replace").strip()[:BAD_LINE_CHARS]
                event = BadLine(f"{exc}: {text!r}")
            events.put((self, event))
        events.put((self, EndOfStream()))

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            text = raw.decode("utf-8", "replace").rstrip()
            if text:
                self._stderr.append(text)

    def signal(self, sig: int) -> None:
        """Signal the child's process group (it runs in its own session), else the child."""
        if self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError, OSError):
            with contextlib.suppress(ProcessLookupError, OSError):
                self.proc.send_signal(sig)

    def reap(self, grace: float) -> int:
        """Wait up to ``grace`` seconds for the child to exit, then SIGKILL it; its status."""
        try:
            return self.proc.wait(timeout=max(0.0, grace))
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            return self.proc.wait()

    def finish_reading(self, timeout: float = 1.0) -> None:
        """Let the stderr reader catch the last lines (call after the child exited)."""
        if self._stderr_reader is not None:
            self._stderr_reader.join(timeout=timeout)

    def close_streams(self) -> None:
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
