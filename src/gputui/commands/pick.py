"""``gputui pick``: which GPUs are free, as a value for ``CUDA_VISIBLE_DEVICES``.

``gputui pick -n 2 [--min-free 40G] [--max-util 10] [--idle-for 5m] [--format indices|uuids|env]``

Reads the GPUs over a short window (``--window``, default 2 s: a reading every 0.5 s, the health
rules judging each) and chooses with :mod:`gputui.choosing` (what qualifies, and which of those lie
closest together). Candidates are ``--gpus``, else ``CUDA_VISIBLE_DEVICES``, else every GPU.

Output (stdout): NVML indices in increasing order (``2,3``), UUIDs (``--format uuids``), or
``export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=2,3`` (``--format env``; on AMD
``export HIP_VISIBLE_DEVICES=2,3``). The indices are NVML's: CUDA numbers devices the same way
only with ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (otherwise fastest first), so the ``env`` form sets it,
and ``indices`` says so on stderr when the environment does not.

Exit codes: 0 found ``n``; 1 fewer qualify (stdout has the ones that do, stderr why the others
do not); 2 no GPU, a driver that does not answer, or a bad argument.
"""

from __future__ import annotations

import argparse
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TextIO

from gputui.choosing import DEFAULT_MAX_UTIL_PCT, Criteria, Pick, pick
from gputui.commands.output import emit, error
from gputui.exitcodes import EXIT_FAILED, EXIT_NO_GPU, EXIT_OK, EXIT_USAGE
from gputui.model import NodeInfo, Snapshot
from gputui.sampler import Sampler
from gputui.selection import CUDA_ORDER_NOTE, select_gpus
from gputui.session import BackendSpec, SessionError, open_session

Format = Literal["indices", "uuids", "env"]
FORMATS: tuple[Format, ...] = ("indices", "uuids", "env")
EXIT_TOO_FEW = 1
DEFAULT_WINDOW_S = 2.0
MAX_WINDOW_S = 60.0
READING_GAP_S = 0.5
READING_WAIT_S = 5.0
"""How long one reading may take before the driver counts as not responding."""

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """Bytes in ``40G`` / ``40GiB`` (binary), ``40GB`` (decimal), ``512M``, ``1.5T``; a bare
    number is GiB. ValueError otherwise."""
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a size (e.g. 40G, 40GiB, 40GB, 512M)")
    number, prefix, suffix = float(match.group(1)), match.group(2).lower(), match.group(3).lower()
    power = "kmgt".index(prefix) + 1 if prefix else 3  # a bare number is GiB
    if suffix == "b" and prefix:  # "GB": decimal
        return int(number * 1000**power)
    if suffix and not prefix:
        raise ValueError(f"{text!r} is not a size (give a unit: 40G, 40GiB, 40GB)")
    return int(number * 1024**power)


def render_pick(node: NodeInfo, chosen: Sequence[int], fmt: Format) -> str:
    """What goes to stdout ('' when nothing was picked)."""
    if not chosen:
        return ""
    if fmt == "uuids":
        return ",".join(info.uuid for i in chosen if (info := node.gpu(i)) is not None)
    indices = ",".join(str(i) for i in chosen)
    if fmt == "env":
        if _vendor(node) == "amd":
            return f"export HIP_VISIBLE_DEVICES={indices}"
        return f"export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES={indices}"
    return indices


def explain(result: Pick, node: NodeInfo) -> list[str]:
    """One line per judged GPU: picked, qualifies, or why not."""
    lines = []
    for j in sorted(result.judged, key=lambda j: j.index):
        if j.index in result.chosen:
            state = "picked"
        elif j.qualifies:
            state = "qualifies (not needed, or farther from the others)"
        else:
            state = "; ".join(j.reasons)
        extra = f" ({'; '.join(j.warnings)})" if j.warnings and j.qualifies else ""
        lines.append(f"  GPU {j.index}: {state}{extra}")
    return lines


def _vendor(node: NodeInfo) -> str:
    return node.gpus[0].vendor if node.gpus else "nvidia"


def take_readings(
    sampler: Sampler, *, window_s: float, sleep: Callable[[float], None]
) -> list[Snapshot]:
    """Readings every :data:`READING_GAP_S` over ``window_s`` (at least two); a reading the
    driver did not answer ends the series."""
    count = max(2, int(window_s / READING_GAP_S) + 1)
    readings = [sampler.poll(deadline=sampler.deadline)]
    for _ in range(count - 1):
        if readings[-1].stall is not None:
            break
        sleep(READING_GAP_S)
        readings.append(sampler.poll(deadline=sampler.deadline))
    return readings


def options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of :func:`run` from the command line's ``pick`` arguments."""
    return {
        "count": args.count,
        "min_free_bytes": args.min_free,
        "max_util_pct": args.max_util,
        "idle_for_s": args.idle_for,
        "fmt": args.pick_format,
        "gpus": args.gpus,
        "strict": args.strict,
        "window_s": args.pick_window,
        "verbose": args.verbose,
    }


def run(
    spec: BackendSpec,
    *,
    seed: int = 0,
    count: int = 1,
    min_free_bytes: int | None = None,
    max_util_pct: float = DEFAULT_MAX_UTIL_PCT,
    idle_for_s: float | None = None,
    fmt: Format = "indices",
    gpus: str | None = None,
    strict: bool = False,
    window_s: float = DEFAULT_WINDOW_S,
    verbose: bool = False,
    sleep: Callable[[float], None] = time.sleep,
    environ: Mapping[str, str] | None = None,
    out: TextIO | None = None,
) -> int:
    """Read the GPUs over the window, pick, print; the exit code (see the module doc)."""
    env = os.environ if environ is None else environ
    if count < 1:
        error("gputui pick: -n: pick at least 1 GPU")
        return EXIT_USAGE
    if spec.replayed:
        error("gputui pick: pick reads the GPUs as they are now; it cannot pick from a recording")
        return EXIT_USAGE
    criteria = Criteria(count, min_free_bytes, max_util_pct, idle_for_s, strict)
    window_s = min(max(window_s, 0.0), MAX_WINDOW_S)
    try:
        session = open_session(
            spec,
            seed=seed,
            interval=READING_GAP_S,
            slow_interval=READING_GAP_S,
            deadline=READING_WAIT_S,
        )
    except SessionError as exc:
        error(str(exc))
        return EXIT_NO_GPU
    with session:
        node = session.node
        try:
            selection = select_gpus(node, gpus, env)
        except ValueError as exc:
            error(f"gputui pick: {exc}")
            return EXIT_USAGE
        if not node.gpus or selection.none_visible:
            why = selection.none_visible or "the node lists no GPU"
            error(f"gputui pick: no GPU to pick from: {why}")
            return EXIT_NO_GPU
        readings = take_readings(session.sampler, window_s=window_s, sleep=sleep)
    if readings[-1].stall is not None:
        error(f"gputui pick: {session.backend.name} is not answering (a driver call hangs)")
        return EXIT_FAILED
    window = (len(readings) - 1) * READING_GAP_S
    result = pick(readings, criteria, selection.indices, window_s=window)
    text = render_pick(node, result.chosen, fmt)
    if text:
        emit(text, out)
    notes = [f"gputui pick: note: {n}" for n in selection.notes]
    if selection.source != "all":
        notes.append(f"gputui pick: candidates from {selection.source}")
    for token in selection.unknown:
        notes.append(f"gputui pick: {selection.source} names no GPU of this node: {token}")
    if (
        fmt == "indices"
        and result.chosen
        and _vendor(node) == "nvidia"
        and env.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID"
        and CUDA_ORDER_NOTE not in selection.notes
    ):
        notes.append(
            f"gputui pick: note: {CUDA_ORDER_NOTE}; --format env sets CUDA_DEVICE_ORDER too"
        )
    if not result.complete:
        got, asked = len(result.chosen), criteria.count
        head = (
            f"gputui pick: {got} GPU{'s' if got != 1 else ''} qualif{'y' if got != 1 else 'ies'}"
            f", {asked} asked for"
        )
        error("\n".join([head + ":", *explain(result, node), *notes]))
        return EXIT_TOO_FEW
    if verbose:
        notes = [*explain(result, node), *notes]
    if notes:
        error("\n".join(notes))
    return EXIT_OK


__all__ = [
    "DEFAULT_WINDOW_S",
    "EXIT_TOO_FEW",
    "FORMATS",
    "MAX_WINDOW_S",
    "explain",
    "options",
    "parse_size",
    "render_pick",
    "run",
    "take_readings",
]
