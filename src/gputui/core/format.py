"""Human formatting of readings, shared by the TUI and the text report: bytes, rates, watts, °C,
MHz, %, durations, process command lines.

Every function takes ``None`` for "not supported / unknown" and returns :data:`NA` for it, so a
widget never has to special-case a missing field. Nothing here imports Textual (the display width
of text comes from ``rich.cells``, which imports nothing else of Rich).

Text from a reading (host and GPU names, users, commands, messages) can hold anything, and a
recording can come from anywhere: :func:`sanitize` is the one filter between such text and a
terminal, and :func:`cell_width` / :func:`pad` / :func:`clip` measure it in terminal cells.

Conventions: memory sizes are binary: the panels and tables of the dashboard write GiB as ``G``,
the way nvitop and ``free -h`` do (:func:`fmt_bytes`), everything else writes ``GiB``
(:func:`fmt_size`); transfer rates are decimal (``GB/s``, the way PCIe and NVLink are
specified).
"""

from __future__ import annotations

import math
import re
import time
import unicodedata

from rich.cells import cell_len

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


def fmt_size(value: float | None) -> str:
    """A binary size with its binary unit, for prose and reports (the panels write the short
    ``G``): ``512 B``, ``7.71 GiB``, ``1.97 TiB``; :data:`NA` when unknown."""
    text = fmt_bytes(value, space=True)
    return text if text == NA or text.endswith("B") else text + "iB"


def fmt_size_pair(used: float | None, total: float | None) -> str:
    """``used/total`` with binary units, sharing the unit when both have it: ``72.1/79.6 GiB``,
    ``301 GiB/1.97 TiB``; ``n/a`` for an unknown part."""
    if _is_missing(used) and _is_missing(total):
        return NA
    used_text, total_text = fmt_size(used), fmt_size(total)
    unit = total_text.rpartition(" ")[2]
    if used_text.endswith(f" {unit}") and unit not in ("B", NA):
        return f"{used_text.rpartition(' ')[0]}/{total_text}"
    return f"{used_text}/{total_text}"


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
    "finding_text",
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
    "fmt_size",
    "fmt_size_pair",
    "fmt_temp",
    "fmt_watts",
    "pad",
    "sanitize",
    "sanitize_lines",
    "short_gpu_name",
]
