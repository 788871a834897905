"""Human formatting of readings, shared by the TUI and the text report: bytes, rates, watts, °C,
MHz, %, durations, process command lines.

Every function takes ``None`` for "not supported / unknown" and returns :data:`NA` for it, so a
widget never has to special-case a missing field. Nothing here imports Textual (the display width
of text comes from ``rich.cells``, which imports nothing else of Rich).

Text from a reading (host and GPU names, users, commands, messages) can hold anything, and a
recording can come from anywhere: :func:`sanitize` is the one filter between such text and a
terminal, and :func:`cell_width` / :func:`pad` / :func:`clip` measure it in terminal cells.

Conventions: memory sizes are binary (GiB shown as ``G``, the way nvitop and ``free -h`` do);
transfer rates are decimal (``GB/s``, the way PCIe and NVLink are specified).
"""

from __future__ import annotations

import math
import re
import time
import unicodedata

from rich.cells import cell_len

from gputui.core.model import MAX_COMMAND_CHARS

NA = "n/a"
"""What a widget shows for a value the hardware or driver does not report."""

_BINARY_UNITS = ("B", "K", "M", "G", "T", "P")
_DECIMAL_UNITS = ("B", "KB", "MB", "GB", "TB", "PB")


def _is_missing(value: float | None) -> bool:
    """None, NaN, or an infinity (no reading is infinite: a recording can say anything)."""
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def _scaled(value: float, base: float, units: tuple[str, ...]) -> tuple[float, str]:
    unit = 0
    value = float(value)
    while abs(value) >= base and unit < len(units) - 1:
        value /= base
        unit += 1
    return value, units[unit]


def _short_number(value: float) -> str:
    """Three significant figures, so widths stay steady: 1.23, 12.3, 123."""
    if abs(value) >= 99.95:
        return f"{value:.0f}"
    if abs(value) >= 9.995:
        return f"{value:.1f}"
    return f"{value:.2f}"


def fmt_bytes(value: float | None, *, space: bool = False) -> str:
    """Binary size: ``512B``, ``1.50K``, ``12.3M``, ``72.1G``; :data:`NA` when unknown."""
    if _is_missing(value):
        return NA
    assert value is not None
    scaled, unit = _scaled(value, 1024.0, _BINARY_UNITS)
    number = f"{scaled:.0f}" if unit == "B" else _short_number(scaled)
    return f"{number}{' ' if space else ''}{unit}"


def fmt_bytes_pair(used: float | None, total: float | None) -> str:
    """``used/total``, sharing the unit when both have the same one: ``72.1/79.6G``,
    ``301G/1.97T``; ``n/a`` for an unknown part."""
    if _is_missing(total):
        return f"{fmt_bytes(used)}/{NA}" if not _is_missing(used) else NA
    if _is_missing(used):
        return f"{NA}/{fmt_bytes(total)}"
    assert used is not None and total is not None
    used_text, total_text = fmt_bytes(used), fmt_bytes(total)
    if used_text[-1] == total_text[-1] and used_text[-1] != "B":
        return f"{used_text[:-1]}/{total_text}"
    return f"{used_text}/{total_text}"


def fmt_rate(value: float | None, *, space: bool = False, suffix: str = "/s") -> str:
    """Decimal transfer rate: ``0B/s``, ``12.3MB/s``, ``25.1GB/s``; :data:`NA` when unknown."""
    if _is_missing(value):
        return NA
    assert value is not None
    scaled, unit = _scaled(max(float(value), 0.0), 1000.0, _DECIMAL_UNITS)
    number = f"{scaled:.0f}" if unit == "B" else _short_number(scaled)
    return f"{number}{' ' if space else ''}{unit}{suffix}"


def fmt_watts(value: float | None) -> str:
    """``612W``; :data:`NA` when unknown."""
    if _is_missing(value):
        return NA
    assert value is not None
    return f"{value:.0f}W"


def fmt_power_pair(draw: float | None, limit: float | None) -> str:
    """``612/700W``; ``612W`` without a limit; :data:`NA` without a reading."""
    if _is_missing(draw):
        return NA if _is_missing(limit) else f"{NA}/{limit:.0f}W"
    assert draw is not None
    if _is_missing(limit):
        return f"{draw:.0f}W"
    assert limit is not None
    return f"{draw:.0f}/{limit:.0f}W"


def fmt_temp(value: float | None) -> str:
    """``67°C``; :data:`NA` when unknown."""
    if _is_missing(value):
        return NA
    assert value is not None
    return f"{value:.0f}°C"


def fmt_mhz(value: float | None, *, unit: bool = True) -> str:
    """``1980MHz`` (or ``1980`` with ``unit=False``); :data:`NA` when unknown."""
    if _is_missing(value):
        return NA
    assert value is not None
    return f"{value:.0f}MHz" if unit else f"{value:.0f}"


def fmt_pct(value: float | None, *, width: int = 0) -> str:
    """``97%`` (right-aligned to ``width`` cells including the sign); :data:`NA` when unknown."""
    if _is_missing(value):
        text = NA
    else:
        assert value is not None
        text = f"{value:.0f}%"
    return text.rjust(width) if width else text


def _split_seconds(seconds: float) -> tuple[int, int, int, int]:
    """(days, hours, minutes, seconds) of a non-negative whole number of seconds."""
    days, rest = divmod(max(int(seconds), 0), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return days, hours, minutes, secs


def fmt_duration(seconds: float | None) -> str:
    """Compact elapsed time: ``45s``, ``12m03s``, ``3h12m``, ``5d03h``; :data:`NA` when unknown."""
    if _is_missing(seconds):
        return NA
    assert seconds is not None
    days, hours, minutes, secs = _split_seconds(seconds)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def fmt_clock(timestamp: float | None) -> str:
    """Local wall-clock time of a reading, ``HH:MM:SS``; :data:`NA` when unknown."""
    return _local_time(timestamp, "%H:%M:%S")


def fmt_datetime(timestamp: float | None) -> str:
    """Local date and time, ``2026-11-27 00:18:05``; :data:`NA` when unknown."""
    return _local_time(timestamp, "%Y-%m-%d %H:%M:%S")


def _local_time(timestamp: float | None, form: str) -> str:
    if _is_missing(timestamp):
        return NA
    assert timestamp is not None
    try:
        return time.strftime(form, time.localtime(timestamp))
    except (OverflowError, OSError, ValueError):  # beyond any date: not a real reading
        return NA


def fmt_interval(seconds: float) -> str:
    """A polling interval: ``250ms``, ``1s``, ``2.5s``."""
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    return f"{seconds:g}s"


def fmt_pcie(gen: int | None, width: int | None) -> str:
    """A PCIe link as ``Gen×width``: ``5×16``; ``?`` for an unknown half; :data:`NA` if both."""
    if gen is None and width is None:
        return NA
    return f"{gen if gen is not None else '?'}×{width if width is not None else '?'}"


def fmt_c2c(host_link: str | None, bandwidth_gbs: float | None) -> str | None:
    """The host link of a GPU without PCIe of its own (Grace Hopper / Grace Blackwell):
    ``C2C 450GB/s`` or ``C2C``; None for any other host link (show the PCIe link instead)."""
    if host_link != "nvlink-c2c":
        return None
    if bandwidth_gbs is None or _is_missing(bandwidth_gbs):
        return "C2C"
    return f"C2C {bandwidth_gbs:.0f}GB/s"


def fmt_load(load: tuple[float, float, float] | None) -> str:
    """``12.3 10.1 9.80`` (three significant figures); :data:`NA` when unknown."""
    if load is None:
        return NA
    return " ".join(f"{x:.2f}" if x < 10 else f"{x:.1f}" if x < 100 else f"{x:.0f}" for x in load)


_VENDOR_WORDS = re.compile(
    r"\b(NVIDIA|AMD|Advanced Micro Devices,? Inc\.?|GeForce|Instinct|Tesla|Radeon(?= Pro)|ATI)\b",
    re.IGNORECASE,
)
_SIZE_SUFFIX = re.compile(r"[-\s]?(\d+\s?GB|PCIE|SXM\d?|HBM\d?e?|NVL|OAM|\(.*\))$", re.IGNORECASE)


def short_gpu_name(name: str) -> str:
    """A short model name for compact rows: ``H100``, ``A100``, ``RTX 4090``, ``MI300X``."""
    text = _VENDOR_WORDS.sub("", name).strip(" -")
    text = " ".join(text.split())
    previous = None
    while previous != text:
        previous = text
        text = _SIZE_SUFFIX.sub("", text).strip(" -")
    if "-" in text and " " not in text:
        text = text.split("-", 1)[0]
    return text or name


def _safe_char(ch: str) -> str:
    if ch.isprintable():
        return ch
    if unicodedata.category(ch) == "Zs":  # a space other than U+0020 (no-break, thin, ...)
        return " "
    return "?"


def sanitize(text: str) -> str:
    """``text`` as one line that is safe to print: every printable character is kept, of any
    width (CJK names, "…", "≥"); control characters (C0 such as ESC and newline, DEL, C1), bidi
    controls (U+202A-U+202E, U+2066-U+2069, and the other format characters), line and paragraph
    separators, lone surrogates and unassigned code points each become ``?``; other spaces become
    a plain space. Measure the result with :func:`cell_width`, not ``len``."""
    if text.isprintable():  # the common case, at C speed (the bidi controls are not printable)
        return text
    return "".join(_safe_char(ch) for ch in text)


def sanitize_lines(text: str) -> str:
    """:func:`sanitize` for each line of a multi-line text (the newlines stay)."""
    if text.isprintable():
        return text
    return "\n".join(sanitize(line) for line in text.split("\n"))


_ONE_CELL = re.compile(
    "[\x20-\x7e\xa0-\u024f\u0370-\u03ff\u2010-\u2027\u2030-\u205e"
    "\u2190-\u21ff\u2200-\u22ff\u2500-\u25fc\u2713-\u2717]*"
)


def one_cell_each(text: str) -> bool:
    """Whether ``text`` is made only of characters one cell wide that gputui draws with (ASCII,
    Latin, Greek, punctuation such as — and …, arrows, math signs, box drawing, block elements,
    geometric shapes, ✓ ✔ ✖): then its width is its length and a cell's position is its index,
    known without a lookup per character. False says nothing (measure with :func:`cell_width`)."""
    return _ONE_CELL.fullmatch(text) is not None


def cell_width(text: str) -> int:
    """How many terminal cells ``text`` takes (2 for a CJK character, 0 for a combining mark)."""
    if text.isascii() or max(text) < "\u0300":  # Latin-1 and friends: one cell each
        return len(text)
    return int(cell_len(text))


def pad(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` cells (``str.ljust`` by display width)."""
    return text + " " * max(width - cell_width(text), 0)


def clip(text: str, width: int) -> str:
    """The longest start of ``text`` that fits in ``width`` cells (a wide character that would
    straddle the edge is left out)."""
    if cell_width(text) <= width:
        return text
    if text.isascii():
        return text[: max(width, 0)]
    lo, hi = 0, len(text)  # cell_width(text[:lo]) <= width < cell_width(text[:hi])
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if cell_width(text[:mid]) <= width:
            lo = mid
        else:
            hi = mid
    return text[:lo]


def fmt_elapsed(seconds: float | None) -> str:
    """A process's running time: ``0:03:11``, ``2:03:11``, then ``3d04h``; :data:`NA` if unknown."""
    if _is_missing(seconds):
        return NA
    assert seconds is not None
    days, hours, minutes, secs = _split_seconds(seconds)
    if days:
        return f"{days}d{hours:02d}h"
    return f"{hours}:{minutes:02d}:{secs:02d}"


def short_command(command: str) -> str:
    """A command line with the directory of its executable dropped: ``/opt/conda/bin/python -u
    train.py`` becomes ``python -u train.py`` (the part that tells processes apart)."""
    executable, sep, rest = command.partition(" ")
    if "/" in executable:
        executable = executable.rsplit("/", 1)[1] or executable
    return executable + sep + rest


_INTERPRETER = re.compile(
    r"(python|pypy|ipython)[\d.]*[mw]?|node|deno|bun|ruby|perl[\d.]*|bash|sh|zsh|julia|Rscript|lua"
)
_SCRIPT = re.compile(r".*\.(py|pyc|pyz|sh|js|mjs|ts|rb|pl|jl|r|lua|jar|ipynb)", re.IGNORECASE)
_INTERPRETER_ARG_OPTIONS = frozenset({"-W", "-X", "-Q", "--check-hash-based-pycs"})
"""Interpreter options that take the next word as their value (``python -X dev train.py``)."""
_ID_FLAG = re.compile(
    r"--?(local[-_]?rank|rank|node[-_]?rank|global[-_]?rank|port|http[-_]?port"
    r"|grpc[-_]?port|metrics[-_]?port|devices?|gpus?|gpu[-_]?ids?|cuda[-_]?devices?|worker[-_]?id"
    r"|replica[-_]?id|shard[-_]?id|instance[-_]?id|process[-_]?id|proc[-_]?id|job[-_]?id"
    r"|hostname|worker[-_]?name)",
    re.IGNORECASE,
)
"""Options that tell processes of one job apart (``--local-rank=3``, ``--port 8001``)."""
_NAME_FLAG = re.compile(
    r"--?(config|config[-_]?file|cfg|model|model[-_]?name|served[-_]?model[-_]?name|name"
    r"|run[-_]?name|exp|experiment|task|dataset|master[-_]?port)",
    re.IGNORECASE,
)
"""Options that say which job it is (``--config llama-8b.yaml``, the job's rendezvous port):
kept when there is room."""
_GENERIC_SCRIPTS = frozenset(
    {"model.py", "main.py", "app.py", "__main__.py", "run.py", "server.py", "serve.py"}
    | {"worker.py", "script.py", "handler.py", "cli.py", "start.py", "launch.py"}
)
"""Script names that say little alone: shown with the directory that names them
(``/models/bge-small/1/model.py`` -> ``bge-small/1/model.py``)."""
_ELLIPSIS = "…"
_LONG_NAME = 20
"""A file or module name longer than this has a short form (its middle left out)."""

# A word's rank: what is kept first when a command is shortened to fit.
_MUST, _USEFUL, _FILLER, _SILENT = 0, 1, 2, 3
"""_MUST: the script (or program) and the options that tell processes apart; _USEFUL: subcommands,
the job's name or config, the interpreter; _FILLER: other options; _SILENT: the interpreter's own
options, dropped without a mark (``-u``, ``-O``)."""


def _middle(name: str) -> str:
    """A long name with its middle left out: ``kernel-a311c399-1193…486.json``."""
    if len(name) <= _LONG_NAME:
        return name
    return f"{name[:12]}{_ELLIPSIS}{name[-7:]}"


def _short_module(module: str) -> str:
    """``torch.distributed.run`` -> ``torch…run`` (a dotted name of three parts or more)."""
    parts = module.split(".")
    if len(parts) < 3 or len(module) <= _LONG_NAME // 2:
        return module
    return f"{parts[0]}{_ELLIPSIS}{parts[-1]}"


def _script_name(path: str) -> tuple[str, str]:
    """A script by its file name (and a shorter form), or with the directory that names it
    when the file name is generic (``model.py``; version directories such as ``1`` kept on the
    way), the shorter form being that directory alone."""
    parts = [p for p in path.split("/") if p]
    if not parts:
        return path, path
    if parts[-1] not in _GENERIC_SCRIPTS or len(parts) == 1:
        return parts[-1], _middle(parts[-1])
    start = len(parts) - 2
    while start > 0 and parts[start].isdigit():
        start -= 1
    return "/".join(parts[start:]), _middle(parts[start])


def _short_path(word: str, *, short: bool = False) -> str:
    """``/home/ana/.local/share/x/kernel-1.json`` -> ``…/kernel-1.json``; ``--out=/data/a/b`` ->
    ``--out=…/b``; ``short``: a long last part loses its middle too. A word that is not a path
    with directories (``meta-llama/Llama-3``, a model name) is kept."""
    key, eq, value = word.partition("=")
    if not eq or key.startswith("/"):
        key, eq, value = "", "", word
    if not value.startswith(("/", "~/", "./", "../")):
        return word
    head, _, base = value.rstrip("/").rpartition("/")
    if not head.strip("/.~") or not base:
        return word  # "/models": nothing to shorten
    return f"{key}{eq}{_ELLIPSIS}/{_middle(base) if short else base}"


class _Group:
    """Words shown together (an option and its value), with a shorter form and a rank."""

    __slots__ = ("full", "module", "rank", "short")

    def __init__(self, full: str, rank: int, short: str | None = None, module: bool = False):
        self.full = full
        self.short = full if short is None else short
        self.rank = rank
        self.module = module  # "-m x": shown as "x" when the interpreter is left out


def _word_groups(words: list[str]) -> list[_Group]:
    """The words of a command line in groups: an option with its value is one group, the
    executable is shown without its directory and paths by their last part."""
    exe = words[0].rsplit("/", 1)[-1] or words[0]
    interpreter = _INTERPRETER.fullmatch(exe) is not None
    groups: list[_Group] = []
    i = 1
    program_seen = False
    if interpreter:
        # Interpreter options up to the script or module: silent, except -m/-c (the program).
        while i < len(words) and words[i].startswith("-") and words[i] != "-":
            word = words[i]
            if word in ("-m", "-c") and i + 1 < len(words):
                module = words[i + 1]
                short = _short_module(module) if word == "-m" else _middle(module)
                groups.append(_Group(f"{word} {module}", _MUST, f"{word} {short}", module=True))
                i += 2
                program_seen = True
                break
            takes = word in _INTERPRETER_ARG_OPTIONS and i + 1 < len(words)
            groups.append(_Group(f"{word} {words[i + 1]}" if takes else word, _SILENT))
            i += 2 if takes else 1
        if not program_seen and i < len(words):
            full, short = _script_name(words[i])
            groups.append(_Group(full, _MUST, short))
            program_seen = True
            i += 1
    # An interpreter whose script is shown matters less than the script's own words.
    head = _Group(exe, _FILLER if program_seen else _MUST, _middle(exe))
    positional_run = True  # subcommands right after the program: "serve", "launch"
    positional = 0
    while i < len(words):
        word = words[i]
        if word.startswith("-") and len(word) > 1:
            positional_run = False
            name = word.split("=", 1)[0]
            value = ""
            if "=" not in word and i + 1 < len(words) and not words[i + 1].startswith("-"):
                value = words[i + 1]
                i += 1
            full = _short_path(word) + (f" {_short_path(value)}" if value else "")
            short = _short_path(word, short=True)
            short += f" {_short_path(value, short=True)}" if value else ""
            if _ID_FLAG.fullmatch(name):
                rank = _MUST
                short = short.lstrip("-")  # "local-rank=3" still says what it is
            elif _NAME_FLAG.fullmatch(name):
                rank = _USEFUL
            else:
                rank = _FILLER
            groups.append(_Group(full, rank, short))
        elif _SCRIPT.fullmatch(word):  # the script a launcher runs (torchrun ... train.py)
            full, short = _script_name(word)
            groups.append(_Group(full, _MUST, short))
        else:
            # Subcommands right after the program, and the last word (often an instance's
            # name), say more than the words between them.
            rank = _USEFUL if positional_run or i == len(words) - 1 else _FILLER
            groups.append(_Group(_short_path(word), rank, _short_path(word, short=True)))
            positional += 1
            positional_run = positional_run and positional < 2
        i += 1
    return [head, *groups]


def _join_kept(groups: list[_Group], kept: dict[int, str]) -> str:
    """The kept groups in their order, with ``…`` where words were left out (the interpreter's
    own options, and the interpreter itself, leave no mark)."""
    out: list[str] = []
    gap = False
    with_interpreter = 0 in kept
    for index, group in enumerate(groups):
        text = kept.get(index)
        if text is not None:
            if gap and out:
                out.append(_ELLIPSIS)
            if group.module and not with_interpreter:
                text = text.split(" ", 1)[1]
            out.append(text)
            gap = False
        elif group.rank != _SILENT and not (index == 0 and group.rank == _FILLER):
            gap = True
    if gap:
        out.append(_ELLIPSIS)
    return " ".join(out)


def fit_command(command: str, width: int) -> str:
    """A command line in at most ``width`` cells, keeping what tells processes apart: the
    program or script and options such as ``--local-rank=3`` or ``--port 8001``; interpreter
    and file paths lose their directories, the middle gives way first (marked ``…``), then the
    interpreter, then long names lose their middle, then the end is cut::

        python -u train.py --config x.yaml --local-rank=3  ->  train.py … --local-rank=3
    """
    return _fit(command, width)[0]


def _fit(command: str, width: int) -> tuple[str, bool]:
    """:func:`fit_command`, and whether everything that tells processes apart was kept."""
    if width <= 0:
        return "", False
    text = " ".join(command.split())
    if cell_width(text) <= width:
        return text, True
    groups = _word_groups(text.split(" "))
    full = " ".join(g.full for g in groups)
    if cell_width(full) <= width:
        return full, True
    # What must stay, shortened one group at a time (the biggest saving first) until it fits.
    kept = {i: g.full for i, g in enumerate(groups) if g.rank == _MUST}
    result = _join_kept(groups, kept)
    savings = sorted(
        (i for i in kept if groups[i].short != groups[i].full),
        key=lambda i: cell_width(groups[i].short) - cell_width(groups[i].full),
    )
    for index in savings:
        if cell_width(result) <= width:
            break
        kept[index] = groups[index].short
        result = _join_kept(groups, kept)
    if cell_width(result) > width:
        # The options that tell processes apart come after the program: its name loses its
        # middle, then the last of them gives way (marked …), before a value is cut in two.
        fewer = dict(kept)
        while True:
            squeezed = _squeeze_program(groups, fewer, width)
            if squeezed is not None:
                return squeezed, False
            later = sorted(fewer)[1:]
            if len(later) <= 1:
                break
            del fewer[later[-1]]
            joined = _join_kept(groups, fewer)
            if cell_width(joined) <= width:
                return joined, False
        return clip(result, width - 1) + _ELLIPSIS, False
    for rank in (_USEFUL, _FILLER):
        for index, group in enumerate(groups):
            if group.rank != rank:
                continue
            for form in dict.fromkeys((group.full, group.short)):
                trial = _join_kept(groups, {**kept, index: form})
                if cell_width(trial) <= width:
                    kept[index] = form
                    result = trial
                    break
    return result, True


_MIN_PROGRAM = 6
"""Cells a squeezed program name keeps (``ser…er``: enough to recognise it beside its options)."""


def _squeeze_program(groups: list[_Group], kept: dict[int, str], width: int) -> str | None:
    """The kept groups in ``width`` cells with the first (the program) cut in its middle, when
    the others then fit whole; None when they do not, or the name is not plain ASCII."""
    if len(kept) < 2:
        return None  # nothing after the program to make room for
    first = min(kept)
    text, name = kept[first], groups[first].full  # cut from the whole name, not a short form
    prefix = ""
    if groups[first].module and 0 not in kept:
        prefix, text = text.split(" ", 1)
        prefix += " "
        name = name.split(" ", 1)[1]
    over = cell_width(_join_kept(groups, kept)) - width
    room = cell_width(text) - over
    text = name
    if not text.isascii() or room < _MIN_PROGRAM or room >= len(text):
        return None
    tail = (room - 1) // 2
    squeezed = f"{text[: room - 1 - tail]}{_ELLIPSIS}{text[len(text) - tail :] if tail else ''}"
    result = _join_kept(groups, {**kept, first: prefix + squeezed})
    return result if cell_width(result) <= width else None


def command_text(
    command: str | None,
    name: str | None,
    container_id: str | None,
    *,
    short: bool = False,
    width: int | None = None,
) -> str:
    """What a process is, in one line: ``[ctr 5e277ec3] python -u train.py ...``; :data:`NA`
    when neither its command line nor its name could be read. At most
    :data:`~gputui.core.model.MAX_COMMAND_CHARS` characters of it, then ``…`` (a replayed or
    simulated row can hold megabytes, which would take seconds to lay out).

    ``short``: the executable without its directory. ``width``: at most this many cells, the
    distinguishing parts kept (:func:`fit_command`); the container tag goes first when the
    command does not fit beside it."""
    known = command or name
    if not known:
        text = NA  # not shortened: "n/a" is no path
    else:
        text = sanitize(known[:MAX_COMMAND_CHARS])
        if len(known) > MAX_COMMAND_CHARS:
            text += "…"
        if short or width is not None:
            text = short_command(text)
    tag = f"[ctr {sanitize(container_id[:8])}] " if container_id else ""
    if width is None or cell_width(tag) + cell_width(text) <= width or not known:
        return tag + text
    if tag:
        beside, complete = _fit(text, width - cell_width(tag))
        if complete:
            return tag + beside
    return fit_command(text, width)


def finding_text(message: str, gpu_index: int | None) -> str:
    """A finding's message for a view that already shows its GPU: ``GPU 2: 1 uncorrected ECC
    error`` becomes ``1 uncorrected ECC error`` and ``GPU 3 lost`` becomes ``lost``. Messages
    name their GPU so they stand alone (JSON, a drain reason); tables need not repeat it."""
    text = sanitize(message)
    if gpu_index is None:
        return text
    for prefix in (f"GPU {gpu_index}: ", f"GPU {gpu_index} "):
        if text.startswith(prefix) and len(text) > len(prefix):
            return text[len(prefix) :]
    return text


__all__ = [
    "NA",
    "cell_width",
    "clip",
    "command_text",
    "finding_text",
    "fit_command",
    "fmt_bytes",
    "fmt_bytes_pair",
    "fmt_clock",
    "fmt_datetime",
    "fmt_duration",
    "fmt_elapsed",
    "fmt_interval",
    "fmt_load",
    "fmt_mhz",
    "fmt_pcie",
    "fmt_pct",
    "fmt_power_pair",
    "fmt_rate",
    "fmt_temp",
    "fmt_watts",
    "pad",
    "sanitize",
    "sanitize_lines",
    "short_command",
    "short_gpu_name",
]
