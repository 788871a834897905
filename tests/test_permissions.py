"""can_signal: root, own user, other user, unknown owner."""

from __future__ import annotations

import pytest

from gputui.core.model import ProcessSample
from gputui.tui import permissions
from gputui.tui.permissions import can_signal, signal_refusal


def proc(user: str | None) -> ProcessSample:
    return ProcessSample(pid=1234, gpu_index=0, user=user)


def test_own_process_allowed() -> None:
    assert can_signal(proc("bob"), euid=1000, current_user="bob") == (True, "")


def test_other_users_process_refused_with_reason() -> None:
    allowed, reason = can_signal(proc("alice"), euid=1000, current_user="bob")
    assert not allowed
    assert reason == (
        "PID 1234 belongs to alice; only your own processes can be signalled "
        "(run as root to signal others)"
    )


def test_root_may_signal_anyone() -> None:
    assert can_signal(proc("alice"), euid=0, current_user="root")[0]
    assert can_signal(proc(None), euid=0, current_user="root")[0]


def test_unknown_owner_refused() -> None:
    allowed, reason = can_signal(proc(None), euid=1000, current_user="bob")
    assert not allowed
    assert "1234" in reason and "unknown" in reason


def test_numeric_owner_matches_euid() -> None:
    # psutil reports a uid without a passwd entry as the number.
    assert can_signal(proc("1000"), euid=1000, current_user="bob")[0]
    assert not can_signal(proc("1001"), euid=1000, current_user="bob")[0]


def test_defaults_come_from_the_running_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(permissions.os, "geteuid", lambda: 4321)
    monkeypatch.setattr(permissions, "current_username", lambda euid=None: "carol")
    assert can_signal(proc("carol")) == (True, "")
    assert not can_signal(proc("dave"))[0]
    monkeypatch.setattr(permissions.os, "geteuid", lambda: 0)
    assert can_signal(proc("dave"))[0]


def test_current_username_is_a_name() -> None:
    name = permissions.current_username()
    assert name is None or (isinstance(name, str) and name)


# -- what gputui never signals, whoever runs it ----------------------------------------------------


@pytest.mark.parametrize("pid_namespace", ["container", "unknown"])
def test_host_pids_in_a_container_are_never_offered_a_signal(pid_namespace) -> None:
    reason = signal_refusal(proc("bob"), pid_namespace)
    assert reason is not None and reason.startswith("Host PIDs:")
    assert signal_refusal(None, pid_namespace) == reason  # says why even on an empty table


@pytest.mark.parametrize(
    ("process", "words"),
    [
        (ProcessSample(pid=1, gpu_index=0, user="root"), "PID 1 is init"),
        (ProcessSample(pid=2, gpu_index=0, user="root"), "PID 2 is kthreadd"),
        (ProcessSample(pid=87, gpu_index=0, user="root", kernel_thread=True), "kernel thread"),
    ],
)
def test_pid_1_pid_2_and_kernel_threads_are_never_offered_a_signal(process, words) -> None:
    for pid_namespace in ("host", None):
        reason = signal_refusal(process, pid_namespace)
        assert reason is not None and words in reason and "never signals" in reason
    assert can_signal(process, euid=0)[0]  # root's rights are not what stands in the way


def test_an_ordinary_process_on_the_host_may_be_signalled() -> None:
    assert signal_refusal(proc("bob"), "host") is None
    assert signal_refusal(proc("bob"), None) is None
    assert signal_refusal(None, "host") is None
