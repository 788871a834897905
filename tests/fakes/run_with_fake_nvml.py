"""Run ``gputui`` in a subprocess against the fake pynvml, for tests of what a wedged driver does
to whole commands (check, export, record, the dashboard).

    python -m tests.fakes.run_with_fake_nvml GPUTUI-ARGS...

``FAKE_NVML_GPUS`` (default 2) sets the GPU count. ``FAKE_NVML_HANG`` makes the driver wedge:
``init`` (nvmlInit never returns), or ``GPU:CALLS`` (every call on GPU ``GPU`` blocks once it has
answered ``CALLS`` calls). Nothing ever releases it, and no signal interrupts it (a driver call in
C runs no Python signal handler until it returns): the process must cope on its own. With
``FAKE_NVML_HANG_MARK=PATH`` the first call that hangs creates the file PATH.
``FAKE_NVML_COLD_OPEN=SECONDS`` turns persistence mode off on every GPU and makes the first
call on each take that long (the driver initialising a GPU on first open).
``FAKE_NVML_SLURM_JOB=ID`` lists this process on GPU 0, in the cgroup of Slurm job ID (so
gputui asks ``scontrol`` for the job's name). ``FAKE_NVML_MINORS=2,3,0,1`` gives the GPUs those
device minor numbers (``/dev/nvidiaN``); ``FAKE_NVML_IDLE=1`` leaves every GPU idle and empty (no
utilization, 0 B used: an idle H100 on R580 with its reserved memory apart reads that).
"""

from __future__ import annotations

import os
import signal
import sys
import threading

from tests.fakes.fake_pynvml import FakeGpu, FakeProcess, make_fake_nvml

from gputui.host.attribution import AttributionReader


class Wedged(threading.Event):
    """Never set; waiting on it is a driver call that never returns, whatever signal arrives."""

    def wait(self, timeout: float | None = None) -> bool:
        mark = os.environ.get("FAKE_NVML_HANG_MARK")
        if mark:
            with open(mark, "a", encoding="utf-8"):
                pass
        while True:
            try:
                super().wait()
            except KeyboardInterrupt:
                continue  # the signal is noted; the call goes on


def main() -> int:
    # Ctrl-C as at a terminal, also where the test run was started as a background job (which
    # starts with SIGINT ignored, and Python then leaves it ignored in every child).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    count = int(os.environ.get("FAKE_NVML_GPUS", "2"))
    hang = os.environ.get("FAKE_NVML_HANG", "")
    wedged = Wedged()
    gpus = [FakeGpu() for _ in range(count)]
    cold = float(os.environ.get("FAKE_NVML_COLD_OPEN", "0") or 0)
    for gpu in gpus:
        if cold:
            gpu.persistence_mode = 0
            gpu.cold_open_s = cold
        if os.environ.get("FAKE_NVML_IDLE"):
            gpu.util_gpu, gpu.util_memory, gpu.memory_used = 0, 0, 0
    minors = os.environ.get("FAKE_NVML_MINORS", "")
    for gpu, minor in zip(gpus, (int(m) for m in minors.split(",") if m), strict=False):
        gpu.minor_number = minor
    kwargs = {}
    if hang == "init":
        kwargs["init_hang"] = wedged
    elif hang:
        gpu, _, calls = hang.partition(":")
        gpus[int(gpu)].hang = wedged
        gpus[int(gpu)].hang_after = int(calls or 0)
    job = os.environ.get("FAKE_NVML_SLURM_JOB")
    if job:
        gpus[0].compute_processes = [FakeProcess(pid=os.getpid())]
        cgroup = f"0::/system.slice/slurmstepd.scope/job_{job}/step_0/user/task_0\n"
        AttributionReader.cgroup_text = lambda self, pid: cgroup  # type: ignore[method-assign]
    fake = make_fake_nvml(gpus, **kwargs)
    fake.__file__ = "fake/pynvml.py"  # looks like nvidia-ml-py's module, not the old shim
    sys.modules["pynvml"] = fake  # type: ignore[assignment]

    from gputui.cli import main as gputui_main

    return gputui_main(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
