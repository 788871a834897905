"""``gputui probe``: bandwidth, PCIe and matmul measured against the spec.

Its command line: the parser, the options and their defaults. Imported with every command line
(``gputui --help`` lists every command); the command's implementation,
:mod:`gputui.commands.probe`, is imported only when it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gputui.commands import args as arg

if TYPE_CHECKING:
    from gputui.commands.args import SubParsers


def add_parser(commands: SubParsers) -> None:
    probe = commands.add_parser(
        "probe",
        help="measure memory bandwidth, PCIe and matmul TFLOPS against the spec, and exit",
        description="Run the probe worker (PyTorch) on each GPU: memory copy / triad, host <-> "
        "device, GPU <-> GPU, FP32 / TF32 / FP16 / BF16 / FP8 matmul; compare with the spec "
        "sheet and the node's other GPUs. Exit 0 all OK/WARN, 1 any LOW, 2 could not run. "
        "Without a usable GPU (or with --demo / a recording) it exits 2; --cpu probes the CPU "
        "instead.",
    )
    arg.add_common(probe, suppress=True)
    probe.add_argument(
        "--gpu",
        action="append",
        default=[],
        metavar="N[,N]",
        help="probe these GPUs (NVML index or UUID; repeatable; default: CUDA_VISIBLE_DEVICES "
        "when set, else all)",
    )
    probe.add_argument("--tests", metavar="LIST", help="comma-separated subset of the tests")
    probe.add_argument("--json", action="store_true", help="one JSON object instead of text")
    probe.add_argument("--long", action="store_true", help="60 s sustained BF16 matmul")
    probe.add_argument(
        "--force", action="store_true", help="probe GPUs that have processes or memory in use"
    )
    probe.add_argument(
        "--python", metavar="PATH", help="run the worker with this Python (your torch build)"
    )
    probe.add_argument("--cpu", action="store_true", help="probe the CPU (no GPU needed)")


__all__ = ["add_parser"]
