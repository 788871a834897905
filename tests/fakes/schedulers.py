"""A scheduler reader that answers what a test says, at once (the sampler's ``allocations``), so
readings carry allocations without Slurm or a kubelet; :mod:`gputui.host.allocations` is the real
one."""

from __future__ import annotations

from gputui.core.allocation import Grant, SchedulerReading, SchedulerStatus


class FixedSchedulers:
    """Answers ``grants`` from ``statuses`` (default: Slurm, answering) until told otherwise."""

    def __init__(
        self, grants: tuple[Grant, ...] = (), statuses: tuple[SchedulerStatus, ...] | None = None
    ) -> None:
        self.grants = grants
        self.statuses = (
            statuses if statuses is not None else (SchedulerStatus("slurm", "ok", "test"),)
        )
        self.closed = False

    def reading(self) -> SchedulerReading:
        return SchedulerReading(self.statuses, self.grants)

    def wait_answered(self, timeout: float) -> bool:
        return True

    def close(self) -> None:
        self.closed = True


def slurm_job(
    job_id: str, *indices: int, user: str = "alice", name: str = "train"
) -> tuple[Grant, ...]:
    """The grants of a Slurm job holding GRES ``indices`` on this node."""
    return tuple(
        Grant("slurm", f"IDX {i}", minor=i, job_id=job_id, job_name=name, user=user)
        for i in indices
    )
