"""``gputui topo``: the GPU connection matrix (NVLink / XGMI / PCIe), CPU affinity and link
state, as text or JSON."""

from __future__ import annotations

import argparse

from gputui.commands.common import Common
from gputui.commands.output import emit, error
from gputui.commands.session_open import open_or_report
from gputui.core.exitcodes import EXIT_FAILED, EXIT_NO_GPU, EXIT_OK, EXIT_USAGE
from gputui.core.frozen import frozen
from gputui.core.record import RecordingError
from gputui.engine.session import BackendSpec

SETTLE_S = 0.5


@frozen
class TopoOptions:
    spec: BackendSpec
    seed: int = 0
    as_json: bool = False


def options(args: argparse.Namespace, common: Common) -> TopoOptions:
    return TopoOptions(common.spec(), seed=common.seed, as_json=args.json)


def run(options: TopoOptions) -> int:
    """One reading (the first is a slow-tier one, so link states are real), then the matrix."""
    from gputui.core.topology import render_text

    session = open_or_report(options.spec, seed=options.seed, interval=SETTLE_S)
    if session is None:
        return EXIT_NO_GPU
    with session:
        try:
            snapshot = session.sampler.poll(deadline=session.sampler.deadline)
        except RecordingError as exc:  # a replayed reading that does not fit, naming its line
            error(f"gputui topo: cannot replay: {exc}")
            return EXIT_USAGE
    if options.as_json:
        from gputui.core.codec import to_json
        from gputui.core.topology_output import topology_output

        emit(to_json(topology_output(snapshot.node, snapshot), indent=2))
    else:
        emit(render_text(snapshot.node, snapshot))
    if snapshot.stall is not None:  # the wiring is known, the link state is not
        error(f"gputui topo: {session.backend.name} is not answering (a driver call hangs)")
        return EXIT_FAILED
    return EXIT_OK


__all__ = ["TopoOptions", "options", "run"]
