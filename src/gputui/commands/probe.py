"""``gputui probe``: measured bandwidth and matmul TFLOPS against the spec sheet; progress on
stderr, the table and summary (or JSON) on stdout.

It probes real GPUs only: with no usable GPU, a simulated node (``--demo``) or a recording it
exits 2 and says why. The CPU is probed only when asked (``--cpu``), and that run says so."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gputui.commands.common import Common, UsageError
from gputui.commands.output import emit, error
from gputui.commands.session_open import open_or_report
from gputui.core.frozen import frozen
from gputui.core.selection import select_gpus
from gputui.engine.session import BackendSpec, NoGpuError, SessionError

if TYPE_CHECKING:
    from gputui.probe.report import ProbeReport

TELEMETRY_INTERVAL_S = 0.5
CPU_HINT = "`gputui probe --cpu` probes this machine's CPU instead (values only, no spec)."


@frozen
class ProbeOptions:
    spec: BackendSpec
    seed: int = 0
    gpus: tuple[str, ...] = ()
    """``--gpu`` as given (each may list several, ``0,1``)."""
    tests: tuple[str, ...] | None = None
    """None: every test."""
    as_json: bool = False
    long: bool = False
    force: bool = False
    python: str | None = None
    cpu: bool = False


def options(args: argparse.Namespace, common: Common) -> ProbeOptions:
    return ProbeOptions(
        common.spec(),
        seed=common.seed,
        gpus=tuple(args.gpu),
        tests=_test_list(args.tests),
        as_json=args.json,
        long=args.long,
        force=args.force,
        python=args.python,
        cpu=args.cpu,
    )


def _test_list(text: str | None) -> tuple[str, ...] | None:
    if not text:
        return None
    from gputui.probe.protocol import TEST_IDS

    tests = tuple(t.strip() for t in text.split(",") if t.strip())
    bad = [t for t in tests if t not in TEST_IDS]
    if bad:
        raise UsageError(f"--tests: unknown {', '.join(bad)} (valid: {', '.join(TEST_IDS)})")
    return tests


def _no_gpu(exc: SessionError) -> str:
    """Why there is nothing to probe: each backend tried and why it was not usable."""
    if isinstance(exc, NoGpuError):
        head = "no usable GPU to probe." if exc.spec.kind == "auto" else f"cannot use {exc.spec}."
        lines = [f"gputui probe: {head}"]
        lines += [f"  {label}: {reason}" for label, reason in exc.reasons]
    else:
        lines = [str(exc)]
    return "\n".join([*lines, CPU_HINT])


def run(options: ProbeOptions) -> int:
    from gputui.probe.runner import (
        EXIT_CANNOT,
        REPLAY_NOTE,
        SIM_NOTE,
        probe_node,
        progress_printer,
    )

    spec, python, gpus = options.spec, options.python, options.gpus
    if python and not (os.path.isfile(python) and os.access(python, os.X_OK)):
        error(f"gputui probe: --python {python}: not an executable file")
        return EXIT_CANNOT
    as_json, tests, long = options.as_json, options.tests, options.long
    on_event = None if as_json else progress_printer(sys.stderr)
    if options.cpu:
        report = probe_node(node=None, tests=tests, python=python, long=long, on_event=on_event)
        return _report(report, as_json)
    if spec.simulated or spec.replayed:
        error(f"gputui probe: {SIM_NOTE if spec.simulated else REPLAY_NOTE}.")
        return EXIT_CANNOT
    session = open_or_report(
        spec,
        describe=_no_gpu,
        seed=options.seed,
        interval=TELEMETRY_INTERVAL_S,
        slow_interval=TELEMETRY_INTERVAL_S,
        judge="none",
    )
    if session is None:
        return EXIT_CANNOT
    with session:
        node, sampler = session.node, session.sampler
        if node.simulated:
            error(f"gputui probe: {SIM_NOTE}.")
            return EXIT_CANNOT
        try:
            selection = select_gpus(node, ",".join(gpus) if gpus else None)
        except ValueError as exc:
            error(f"gputui probe: {exc}".replace("--gpus", "--gpu"))
            return EXIT_CANNOT
        indices = None if selection.indices is None else sorted(selection.indices)
        if not node.gpus or indices == []:
            why = selection.none_visible or "the node has no GPU"
            error(f"gputui probe: no GPU to probe: {why}.\n{CPU_HINT}")
            return EXIT_CANNOT
        for note in selection.notes:
            error(f"gputui probe: {note}")
        snapshot = sampler.poll(deadline=sampler.deadline)
        if snapshot.stall is not None:  # loading GPUs behind a wedged driver helps nobody
            error(
                f"gputui probe: {node.backend} is not answering (a driver call hangs); not probing"
            )
            return EXIT_CANNOT
        report = probe_node(
            node=snapshot.node,  # the wiring is filled in at the first reading
            snapshot=snapshot,
            gpus=indices,
            tests=tests,
            force=options.force,
            python=python,
            long=long,
            sampler=sampler,
            on_event=on_event,
        )
        report.notes = list(selection.notes) + report.notes
    return _report(report, as_json, shown=selection.notes)


def _report(report: ProbeReport, as_json: bool, shown: Sequence[str] = ()) -> int:
    """The report on stdout (a table and summary, or JSON); refusals and errors on stderr."""
    from gputui.probe.report import CPU_RUN, render_table

    if as_json:
        from gputui.core.codec import to_json
        from gputui.probe.output import probe_output

        emit(to_json(probe_output(report), indent=2))
        return report.exit_code
    for line in report.refused + report.errors:
        error(f"gputui probe: {line}")
    for line in report.notes:
        if line not in shown:
            error(f"gputui probe: note: {line}")
    if report.judged:
        title = [CPU_RUN + "."] if report.mode == "cpu" else []
        emit("\n".join([*title, render_table(report.judged), "", *report.summary()]))
    return report.exit_code


__all__ = ["ProbeOptions", "options", "run"]
