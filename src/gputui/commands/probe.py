"""``gputui probe``: measured bandwidth and matmul TFLOPS against the spec sheet; progress on
stderr, the table and summary (or JSON) on stdout.

It probes real GPUs only: with no usable GPU, a simulated node (``--demo``) or a recording it
exits 2 and says why. The CPU is probed only when asked (``--cpu``), and that run says so."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gputui.commands.output import emit, error
from gputui.selection import select_gpus
from gputui.session import BackendSpec, NoGpuError, Session, SessionError, open_session

if TYPE_CHECKING:
    from gputui.probe.report import ProbeReport

TELEMETRY_INTERVAL_S = 0.5
CPU_HINT = "`gputui probe --cpu` probes this machine's CPU instead (values only, no spec)."


def _no_gpu(exc: SessionError) -> None:
    """Why there is nothing to probe: each backend tried and why it was not usable."""
    if isinstance(exc, NoGpuError):
        head = "no usable GPU to probe." if exc.spec.kind == "auto" else f"cannot use {exc.spec}."
        lines = [f"gputui probe: {head}"]
        lines += [f"  {label}: {reason}" for label, reason in exc.reasons]
    else:
        lines = [str(exc)]
    error("\n".join([*lines, CPU_HINT]))


def run(
    spec: BackendSpec,
    *,
    seed: int = 0,
    gpus: Sequence[str] = (),
    tests: list[str] | None = None,
    as_json: bool = False,
    long: bool = False,
    force: bool = False,
    python: str | None = None,
    cpu: bool = False,
) -> int:
    from gputui.probe.runner import (
        EXIT_CANNOT,
        REPLAY_NOTE,
        SIM_NOTE,
        probe_node,
        progress_printer,
    )

    if python and not (os.path.isfile(python) and os.access(python, os.X_OK)):
        error(f"gputui probe: --python {python}: not an executable file")
        return EXIT_CANNOT
    on_event = None if as_json else progress_printer(sys.stderr)
    if cpu:
        report = probe_node(node=None, tests=tests, python=python, long=long, on_event=on_event)
        return _report(report, as_json)
    if spec.simulated or spec.replayed:
        error(f"gputui probe: {SIM_NOTE if spec.simulated else REPLAY_NOTE}.")
        return EXIT_CANNOT
    try:
        session: Session = open_session(
            spec,
            seed=seed,
            interval=TELEMETRY_INTERVAL_S,
            slow_interval=TELEMETRY_INTERVAL_S,
            judge="none",
        )
    except SessionError as exc:
        _no_gpu(exc)
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
            force=force,
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
        from gputui.codec import to_json
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


__all__ = ["run"]
