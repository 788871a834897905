"""``gputui pick``: which GPUs are free, as a value for ``CUDA_VISIBLE_DEVICES``.

``gputui pick -n 2 [--min-free 40G] [--max-util 10] [--idle-for 5m] [--format indices|uuids|env]
[--wait 30m [--poll 5]]``

Reads the GPUs over a short window (``--window``, default 2 s: a reading every 0.5 s, the health
rules judging each) and chooses with :mod:`gputui.core.choosing` (what qualifies, and which of those
lie closest together). Candidates are ``--gpus``, else ``CUDA_VISIBLE_DEVICES``, else every GPU.

Output (stdout): NVML indices in increasing order (``2,3``), UUIDs (``--format uuids``), or
``export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=2,3`` (``--format env``; on AMD
``export HIP_VISIBLE_DEVICES=2,3``). The indices are NVML's: CUDA numbers devices the same way
only with ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (otherwise fastest first), so the ``env`` form sets it,
and ``indices`` says so on stderr when the environment does not.

``--wait DURATION``: while fewer qualify, read again every ``--poll`` seconds (default 5) on the
same session until ``n`` do or the time runs out (:mod:`gputui.commands.pick_wait`); the output is
then as without it. Ctrl-C and SIGTERM end it at once (:mod:`gputui.commands.interrupt`).

Exit codes: 0 found ``n``; 1 fewer qualify (stdout has the ones that do, stderr why the others
do not), with ``--wait`` when the time ran out; 2 no GPU, a driver that does not answer (also
one that stops answering while waiting), or a bad argument; 130 Ctrl-C, 143 SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Literal

from gputui.commands.common import REAL, Common, Seams, UsageError
from gputui.commands.interrupt import Stopped, stop_on_signals
from gputui.commands.output import emit, error
from gputui.commands.pick_wait import (
    DEFAULT_POLL_S,
    Judgement,
    Reader,
    wait_for_pick,
    waiting_line,
)
from gputui.commands.session_open import open_or_report
from gputui.core.choosing import DEFAULT_MAX_UTIL_PCT, Criteria, Pick, pick
from gputui.core.exitcodes import EXIT_FAILED, EXIT_NO_GPU, EXIT_OK, EXIT_USAGE
from gputui.core.format import fmt_duration
from gputui.core.frozen import frozen
from gputui.core.model import NodeInfo, Snapshot
from gputui.core.selection import CUDA_ORDER_NOTE, Selection, select_gpus
from gputui.engine.sampler import Sampler
from gputui.engine.session import BackendSpec

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


@frozen
class PickOptions:
    """``gputui pick``'s options (see :func:`options` for the command line's)."""

    spec: BackendSpec
    seed: int = 0
    count: int = 1
    min_free_bytes: int | None = None
    max_util_pct: float = DEFAULT_MAX_UTIL_PCT
    idle_for_s: float | None = None
    fmt: Format = "indices"
    gpus: str | None = None
    strict: bool = False
    window_s: float = DEFAULT_WINDOW_S
    verbose: bool = False
    wait_s: float | None = None
    """``--wait``: how long to wait for ``count`` GPUs to qualify (None: not at all)."""
    poll_s: float = DEFAULT_POLL_S


def options(args: argparse.Namespace, common: Common) -> PickOptions:
    if args.poll is not None and args.wait is None:
        raise UsageError("--poll is how often --wait reads the GPUs: give --wait DURATION too")
    return PickOptions(
        spec=common.spec(),
        seed=common.seed,
        count=args.count,
        min_free_bytes=args.min_free,
        max_util_pct=args.max_util,
        idle_for_s=args.idle_for,
        fmt=args.pick_format,
        gpus=args.gpus,
        strict=args.strict,
        window_s=args.pick_window,
        verbose=args.verbose,
        wait_s=args.wait,
        poll_s=DEFAULT_POLL_S if args.poll is None else args.poll,
    )


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
    sampler: Sampler,
    *,
    window_s: float,
    sleep: Callable[[float], None],
    first: Snapshot | None = None,
) -> list[Snapshot]:
    """Readings every :data:`READING_GAP_S` over ``window_s`` (at least two), begun with
    ``first`` when given; a reading the driver did not answer ends the series."""
    count = max(2, int(window_s / READING_GAP_S) + 1)
    readings = [first if first is not None else sampler.poll(deadline=sampler.deadline)]
    for _ in range(count - 1):
        if readings[-1].stall is not None:
            break
        sleep(READING_GAP_S)
        readings.append(sampler.poll(deadline=sampler.deadline))
    return readings


def run(options: PickOptions, seams: Seams = REAL) -> int:
    """Read the GPUs over the window (and with ``--wait``, until enough qualify), pick, print;
    the exit code (see the module doc)."""
    if options.count < 1:
        error("gputui pick: -n: pick at least 1 GPU")
        return EXIT_USAGE
    if options.spec.replayed:
        error("gputui pick: pick reads the GPUs as they are now; it cannot pick from a recording")
        return EXIT_USAGE
    try:
        with stop_on_signals():
            return _run(options, seams)
    except (Stopped, KeyboardInterrupt) as exc:
        stop = exc if isinstance(exc, Stopped) else Stopped(signal.SIGINT)
        error(f"gputui pick: {stop.what}; no GPU picked")
        return stop.exit_code


def _run(options: PickOptions, seams: Seams) -> int:
    env = os.environ if seams.environ is None else seams.environ
    criteria = Criteria(
        options.count,
        options.min_free_bytes,
        options.max_util_pct,
        options.idle_for_s,
        options.strict,
    )
    session = open_or_report(
        options.spec,
        seed=options.seed,
        interval=READING_GAP_S,
        slow_interval=READING_GAP_S,
        deadline=READING_WAIT_S,
        clock=seams.clock,
    )
    if session is None:
        return EXIT_NO_GPU
    with session:
        node = session.node
        try:
            selection = select_gpus(node, options.gpus, env)
        except ValueError as exc:
            error(f"gputui pick: {exc}")
            return EXIT_USAGE
        if not node.gpus or selection.none_visible:
            why = selection.none_visible or "the node lists no GPU"
            error(f"gputui pick: no GPU to pick from: {why}")
            return EXIT_NO_GPU
        started = seams.monotonic()
        reader = _reader(session.sampler, criteria, selection, options, seams)
        window = tuple(reader.window(reader.probe()))
        judgement = Judgement(window, reader.judge(window))
        waited = None
        if _should_wait(judgement, options):
            judgement = _wait(judgement, reader, options, seams, started=started)
            waited = seams.monotonic() - started
    if judgement.stalled:
        name = session.backend.name
        during = (
            "; it stopped answering while pick waited for free GPUs" if waited is not None else ""
        )
        error(f"gputui pick: {name} is not answering (a driver call hangs){during}")
        return EXIT_FAILED
    return _report(judgement.result, node, selection, options, seams, waited=waited)


def _wait(
    first: Judgement, reader: Reader, options: PickOptions, seams: Seams, *, started: float
) -> Judgement:
    """``--wait``: say so (to a person), then read until the pick is complete or time is up."""
    assert options.wait_s is not None
    if _talkative(options, seams):
        error(waiting_line(first.result, options.wait_s))
    return wait_for_pick(
        first,
        reader,
        until=started + options.wait_s,
        poll_s=options.poll_s,
        monotonic=seams.monotonic,
        sleep=seams.sleep,
    )


def _reader(
    sampler: Sampler,
    criteria: Criteria,
    selection: Selection,
    options: PickOptions,
    seams: Seams,
) -> Reader:
    """One reading, a window begun with one, and the judgement of readings, by the options."""
    window_s = min(max(options.window_s, 0.0), MAX_WINDOW_S)

    def judge(readings: Sequence[Snapshot]) -> Pick:
        window = (len(readings) - 1) * READING_GAP_S
        return pick(readings, criteria, selection.indices, window_s=window)

    return Reader(
        probe=lambda: sampler.poll(deadline=sampler.deadline),
        window=lambda first: take_readings(
            sampler, window_s=window_s, sleep=seams.sleep, first=first
        ),
        judge=judge,
    )


def _should_wait(judgement: Judgement, options: PickOptions) -> bool:
    """``--wait`` was given, fewer qualify, and enough GPUs are candidates for waiting to help."""
    result = judgement.result
    return (
        options.wait_s is not None
        and not judgement.stalled
        and not result.complete
        and len(result.judged) >= result.wanted
    )


def _talkative(options: PickOptions, seams: Seams) -> bool:
    """Whether progress is said: ``--verbose``, or messages go to a terminal."""
    if options.verbose:
        return True
    if seams.stderr_is_terminal is not None:
        return seams.stderr_is_terminal
    stream = sys.stderr
    return stream is not None and stream.isatty()


def _report(
    result: Pick,
    node: NodeInfo,
    selection: Selection,
    options: PickOptions,
    seams: Seams,
    *,
    waited: float | None,
) -> int:
    """Print the pick (stdout) and the notes and reasons (stderr); the exit code."""
    env = os.environ if seams.environ is None else seams.environ
    text = render_pick(node, result.chosen, options.fmt)
    if text:
        emit(text, seams.out)
    notes = [f"gputui pick: note: {n}" for n in selection.notes]
    if selection.source != "all":
        notes.append(f"gputui pick: candidates from {selection.source}")
    for token in selection.unknown:
        notes.append(f"gputui pick: {selection.source} names no GPU of this node: {token}")
    if (
        options.fmt == "indices"
        and result.chosen
        and _vendor(node) == "nvidia"
        and env.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID"
        and CUDA_ORDER_NOTE not in selection.notes
    ):
        notes.append(
            f"gputui pick: note: {CUDA_ORDER_NOTE}; --format env sets CUDA_DEVICE_ORDER too"
        )
    if not result.complete:
        got, asked = len(result.chosen), result.wanted
        head = (
            f"gputui pick: {got} GPU{'s' if got != 1 else ''} qualif{'y' if got != 1 else 'ies'}"
            f", {asked} asked for"
        )
        if waited is not None:
            head += f", after waiting {fmt_duration(waited)}"
        elif options.wait_s is not None and len(result.judged) < asked:
            head += f" (not waiting: only {len(result.judged)} candidate GPUs)"
        error("\n".join([head + ":", *explain(result, node), *notes]))
        return EXIT_TOO_FEW
    if waited is not None and _talkative(options, seams):
        notes.insert(0, f"gputui pick: free after waiting {fmt_duration(waited)}")
    if options.verbose:
        notes = [*explain(result, node), *notes]
    if notes:
        error("\n".join(notes))
    return EXIT_OK


__all__ = [
    "DEFAULT_WINDOW_S",
    "EXIT_TOO_FEW",
    "FORMATS",
    "MAX_WINDOW_S",
    "PickOptions",
    "explain",
    "options",
    "parse_size",
    "render_pick",
    "run",
    "take_readings",
]
