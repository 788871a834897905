"""``gputui topo``: the GPU connection matrix (NVLink / XGMI / PCIe), CPU affinity and link
state, as text or JSON."""

from __future__ import annotations

from gputui.commands.output import emit, error
from gputui.exitcodes import EXIT_FAILED, EXIT_NO_GPU, EXIT_OK, EXIT_USAGE
from gputui.record import RecordingError
from gputui.session import BackendSpec, SessionError, open_session

SETTLE_S = 0.5


def run(spec: BackendSpec, *, seed: int = 0, as_json: bool = False) -> int:
    """One reading (the first is a slow-tier one, so link states are real), then the matrix."""
    from gputui.topology import render_text

    try:
        session = open_session(spec, seed=seed, interval=SETTLE_S)
    except SessionError as exc:
        error(str(exc))
        return EXIT_NO_GPU
    with session:
        try:
            snapshot = session.sampler.poll(deadline=session.sampler.deadline)
        except RecordingError as exc:  # a replayed reading that does not fit, naming its line
            error(f"gputui topo: cannot replay: {exc}")
            return EXIT_USAGE
    if as_json:
        from gputui.codec import to_json
        from gputui.topology_output import topology_output

        emit(to_json(topology_output(snapshot.node, snapshot), indent=2))
    else:
        emit(render_text(snapshot.node, snapshot))
    if snapshot.stall is not None:  # the wiring is known, the link state is not
        error(f"gputui topo: {session.backend.name} is not answering (a driver call hangs)")
        return EXIT_FAILED
    return EXIT_OK


__all__ = ["run"]
