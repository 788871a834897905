"""``gputui probe``: measured bandwidth and matmul TFLOPS against the spec sheet; progress on
stderr, the table and summary (or JSON) on stdout."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence

from gputui.commands.output import emit, error
from gputui.model import NodeInfo, Snapshot
from gputui.sampler import Sampler
from gputui.selection import select_gpus
from gputui.session import BackendSpec, Session, SessionError, open_session

TELEMETRY_INTERVAL_S = 0.5


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
    from gputui.probe.runner import EXIT_CANNOT, SIM_NOTE, probe_node, progress_printer

    if python and not (os.path.isfile(python) and os.access(python, os.X_OK)):
        error(f"gputui probe: --python {python}: not an executable file")
        return EXIT_CANNOT
    notes: list[str] = []
    session: Session | None = None
    if not cpu:
        try:
            opened = open_session(
                spec,
                seed=seed,
                interval=TELEMETRY_INTERVAL_S,
                slow_interval=TELEMETRY_INTERVAL_S,
                judge="none",
            )
        except SessionError as exc:
            if spec.kind != "auto":
                error(str(exc))
                return EXIT_CANNOT
            notes.append("no usable GPU backend: probing the CPU")
        else:
            if spec.simulated or opened.node.simulated:
                opened.close()
                notes.append(SIM_NOTE)
            else:
                session = opened
    node: NodeInfo | None = None
    snapshot: Snapshot | None = None
    sampler: Sampler | None = None
    indices = None
    try:
        if session is not None:
            node, sampler = session.node, session.sampler
            try:
                selection = select_gpus(node, ",".join(gpus) if gpus else None)
            except ValueError as exc:
                error(f"gputui probe: {exc}".replace("--gpus", "--gpu"))
                return EXIT_CANNOT
            notes += list(selection.notes)
            indices = None if selection.indices is None else sorted(selection.indices)
            snapshot = sampler.poll()
        for note in notes:
            error(f"gputui probe: {note}")
        report = probe_node(
            node=node,
            snapshot=snapshot,
            gpus=indices,
            tests=tests,
            force=force,
            python=python,
            long=long,
            sampler=sampler,
            on_event=None if as_json else progress_printer(sys.stderr),
        )
    finally:
        if session is not None:
            session.close()
    report.notes = notes + report.notes
    if as_json:
        emit(json.dumps(report.to_dict(), indent=2))
        return report.exit_code
    for line in report.refused + report.errors:
        error(f"gputui probe: {line}")
    if report.judged:
        from gputui.probe.runner import render_table

        lines = [render_table(report.judged), "", *report.summary()]
        emit("\n".join(lines))
    for note in notes:
        if note == SIM_NOTE:
            emit("Note: " + note)
    return report.exit_code


__all__ = ["run"]
