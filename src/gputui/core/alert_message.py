"""What an alert says: one health finding as one JSON object, the same for ``--notify`` (on the
command's stdin) and ``--webhook`` (the request's body). Its ``text`` is one line a chat tool
shows as it is (Slack, Mattermost and Teams' incoming webhooks read a top-level ``text``):
``gputui dgx-h100-07: fail XID 79 on GPU 3: GPU has fallen off the bus → reboot``."""

from __future__ import annotations

import datetime
import json
from typing import Any

from gputui import __version__
from gputui.core.format import sanitize
from gputui.core.model import Finding

FIELDS = (
    "text",
    "rule",
    "severity",
    "action",
    "message",
    "hint",
    "gpu",
    "key",
    "host",
    "time",
    "first_seen",
    "gputui_version",
)
"""The payload's keys, in the order they are written."""


def iso_time(timestamp: float | None) -> str | None:
    """``2023-11-14T22:13:20Z`` (UTC, to the second); None for None."""
    if timestamp is None:
        return None
    moment = datetime.datetime.fromtimestamp(timestamp, tz=datetime.timezone.utc)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def alert_text(finding: Finding, host: str) -> str:
    """One line: ``gputui HOST: SEVERITY [GPU n: ]MESSAGE[ → ACTION]``. The GPU is named
    before the message unless the message names it already."""
    message = finding.message
    gpu = finding.gpu_index
    if gpu is not None and f"GPU {gpu}" not in message:
        message = f"GPU {gpu}: {message}"
    action = "" if finding.action == "none" else f" → {finding.action}"
    return sanitize(f"gputui {host}: {finding.severity} {message}{action}")


def alert_payload(finding: Finding, *, host: str, now: float) -> dict[str, Any]:
    """The alert for ``finding``, found on ``host`` in the reading taken at ``now``."""
    payload: dict[str, Any] = {
        "text": alert_text(finding, host),
        "rule": finding.rule,
        "severity": finding.severity,
        "action": finding.action,
        "message": finding.message,
        "hint": finding.hint,
        "gpu": finding.gpu_index,
        "key": finding.key,
        "host": host,
        "time": iso_time(now),
        "first_seen": iso_time(finding.first_seen),
        "gputui_version": __version__,
    }
    return payload


def encode_payload(payload: dict[str, Any]) -> bytes:
    """The payload as UTF-8 JSON on one line (``ensure_ascii``: any receiver reads it)."""
    return json.dumps(payload, ensure_ascii=True, separators=(",", ":")).encode("ascii")


__all__ = ["FIELDS", "alert_payload", "alert_text", "encode_payload", "iso_time"]
