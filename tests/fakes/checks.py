"""``gputui check`` run in-process against a fake ``pynvml``: the whole path (backend, sampler,
health rules, verdict) as a user's command takes it, with the fake standing in for
nvidia-ml-py."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tests.fakes.fake_pynvml import FakeNvml


@contextmanager
def fake_driver(fake: FakeNvml) -> Iterator[FakeNvml]:
    """``import pynvml`` gives ``fake`` while the block runs."""
    saved = sys.modules.get("pynvml")
    fake.__file__ = "fake/pynvml.py"  # type: ignore[attr-defined]  # nvidia-ml-py's file name
    sys.modules["pynvml"] = fake  # type: ignore[assignment]
    try:
        yield fake
    finally:
        if saved is None:
            sys.modules.pop("pynvml", None)
        else:
            sys.modules["pynvml"] = saved


def check_json(
    fake: FakeNvml,
    *,
    sleep: Callable[[float], None] | None = None,
    **options: Any,
) -> tuple[int, dict[str, Any]]:
    """(exit code, ``check --json`` document) of ``gputui check`` on ``fake`` (no kernel log,
    no real sleeping unless ``sleep`` says otherwise)."""
    from gputui.commands.check import run_check

    out = io.StringIO()
    options.setdefault("kernel_log", None)
    options.setdefault("environ", {})
    with fake_driver(fake):
        code = run_check("nvml", as_json=True, out=out, sleep=sleep or (lambda _s: None), **options)
    return code, json.loads(out.getvalue())


def findings_of(document: dict[str, Any], rule: str) -> list[dict[str, Any]]:
    return [f for f in document["findings"] if f["rule"] == rule]
