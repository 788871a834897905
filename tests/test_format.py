"""Human formatting of readings, and "n/a" for what the hardware does not report."""

from __future__ import annotations

import math

import pytest

from gputui.format import (
    NA,
    cell_width,
    clip,
    command_text,
    fmt_bytes,
    fmt_bytes_pair,
    fmt_clock,
    fmt_duration,
    fmt_elapsed,
    fmt_interval,
    fmt_load,
    fmt_mhz,
    fmt_pcie,
    fmt_pct,
    fmt_power_pair,
    fmt_rate,
    fmt_temp,
    fmt_watts,
    pad,
    sanitize,
    short_command,
    short_gpu_name,
)

GiB = 1024**3


@pytest.mark.parametrize(
    "fn",
    [fmt_bytes, fmt_rate, fmt_watts, fmt_temp, fmt_mhz, fmt_pct, fmt_duration, fmt_clock],
)
def test_none_and_nan_are_na(fn) -> None:
    assert fn(None) == NA
    assert fn(math.nan) == NA


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, "0B"),
        (512, "512B"),
        (1536, "1.50K"),
        (12.3 * 1024**2, "12.3M"),
        (72.1 * GiB, "72.1G"),
        (80 * GiB, "80.0G"),
        (192 * GiB, "192G"),
        (2 * 1024**4, "2.00T"),
    ],
)
def test_bytes_are_binary_with_three_figures(value: float, expected: str) -> None:
    assert fmt_bytes(value) == expected


def test_bytes_pair_shares_the_unit_when_it_can() -> None:
    assert fmt_bytes_pair(72.1 * GiB, 79.6 * GiB) == "72.1/79.6G"
    assert fmt_bytes_pair(301 * GiB, 1.97 * 1024**4) == "301G/1.97T"
    assert fmt_bytes_pair(None, 80 * GiB) == f"{NA}/80.0G"
    assert fmt_bytes_pair(5 * GiB, None) == f"5.00G/{NA}"
    assert fmt_bytes_pair(None, None) == NA


def test_rates_are_decimal_per_second() -> None:
    assert fmt_rate(0) == "0B/s"
    assert fmt_rate(1.23e9) == "1.23GB/s"
    assert fmt_rate(25.1e9) == "25.1GB/s"
    assert fmt_rate(604e3) == "604KB/s"
    assert fmt_rate(-5) == "0B/s"  # a counter reset never shows as negative


def test_power_temperature_clock_percent() -> None:
    assert fmt_watts(612.4) == "612W"
    assert fmt_power_pair(612.4, 700) == "612/700W"
    assert fmt_power_pair(612.4, None) == "612W"
    assert fmt_power_pair(None, 700) == f"{NA}/700W"
    assert fmt_power_pair(None, None) == NA
    assert fmt_temp(67.4) == "67°C"
    assert fmt_mhz(1980) == "1980MHz"
    assert fmt_mhz(1980, unit=False) == "1980"
    assert fmt_pct(97.4) == "97%"
    assert fmt_pct(7, width=4) == "  7%"
    assert fmt_pct(None, width=5) == "  n/a"


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (0, "0s"),
        (45.9, "45s"),
        (723, "12m03s"),
        (3 * 3600 + 12 * 60, "3h12m"),
        (5 * 86400 + 3 * 3600, "5d03h"),
    ],
)
def test_durations(seconds: float, expected: str) -> None:
    assert fmt_duration(seconds) == expected


def test_clock_follows_local_time(utc: None) -> None:
    assert fmt_clock(1_700_000_000.0) == "22:13:20"


def test_interval_pcie_load() -> None:
    assert fmt_interval(0.25) == "250ms"
    assert fmt_interval(1.0) == "1s"
    assert fmt_interval(2.5) == "2.5s"
    assert fmt_pcie(5, 16) == "5×16"
    assert fmt_pcie(None, 8) == "?×8"
    assert fmt_pcie(None, None) == NA
    assert fmt_load((12.34, 3.0, 0.5)) == "12.3 3.00 0.50"
    assert fmt_load(None) == NA


@pytest.mark.parametrize(
    ("name", "short"),
    [
        ("NVIDIA H100 80GB HBM3", "H100"),
        ("NVIDIA A100-SXM4-80GB", "A100"),
        ("NVIDIA A100 80GB PCIe", "A100"),
        ("NVIDIA GeForce RTX 4090", "RTX 4090"),
        ("AMD Instinct MI300X", "MI300X"),
        ("Tesla V100-SXM2-16GB", "V100"),
        ("NVIDIA RTX A6000", "RTX A6000"),
        ("NVIDIA H200", "H200"),
    ],
)
def test_short_gpu_names(name: str, short: str) -> None:
    assert short_gpu_name(name) == short


def test_sanitize_keeps_one_printable_line() -> None:
    assert sanitize("python\ttrain.py\n--x") == "python?train.py?--x"
    assert sanitize("plain -m x") == "plain -m x"


def test_sanitize_keeps_every_printable_character_of_any_width() -> None:
    """CJK names, "…" and "≥" are text, not a danger: they stay (measured by cell_width)."""
    assert sanitize("名前") == "名前"
    assert sanitize("田中 太郎 … ≥ 67°C é") == "田中 太郎 … ≥ 67°C é"
    assert cell_width("名前") == 4 and cell_width("…≥°") == 3 and cell_width("e\u0301") == 1


@pytest.mark.parametrize(
    ("text", "safe"),
    [
        ("a\x1b[2Jb", "a?[2Jb"),  # C0: ESC
        ("a\x7fb", "a?b"),  # DEL
        ("a\x9b31mb", "a?31mb"),  # C1: CSI
        ("a\x85b", "a?b"),  # C1: next line
        ("user\u202egnp.exe", "user?gnp.exe"),  # right-to-left override
        ("\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069", "????????"),  # the other bidi
        ("a\u2028b", "a?b"),  # line separator
        ("a\ud800b", "a?b"),  # a lone surrogate (JSON "\\ud800" decodes to one)
        ("a\u00a0b", "a b"),  # a no-break space is a space
    ],
)
def test_sanitize_replaces_controls_and_bidi_overrides(text: str, safe: str) -> None:
    assert sanitize(text) == safe


def test_pad_and_clip_count_terminal_cells() -> None:
    assert pad("名前", 6) == "名前  " and pad("abc", 2) == "abc"
    assert clip("名前abc", 3) == "名"  # the second character would straddle the edge
    assert clip("名前abc", 5) == "名前a"
    assert clip("abcdef", 4) == "abcd" and clip("ab", 4) == "ab"


def test_fmt_elapsed_shows_seconds_under_a_day_and_days_after() -> None:
    assert fmt_elapsed(None) == NA
    assert fmt_elapsed(191) == "0:03:11"
    assert fmt_elapsed(2 * 3600 + 191) == "2:03:11"
    assert fmt_elapsed(3 * 86400 + 4 * 3600 + 59) == "3d04h"


def test_short_command_drops_the_executables_directory_only() -> None:
    assert short_command("/opt/conda/bin/python -u train.py --out=/data/x") == (
        "python -u train.py --out=/data/x"
    )
    assert short_command("python train.py") == "python train.py"
    assert short_command("/usr/bin/Xorg") == "Xorg"


def test_command_text_tags_containers_and_falls_back_to_the_name() -> None:
    cid = "5e277ec3818f" + "0" * 52
    assert command_text("/usr/bin/python3 a.py", None, cid, short=True) == (
        "[ctr 5e277ec3] python3 a.py"
    )
    assert command_text(None, "Xorg", None) == "Xorg"
    assert command_text(None, None, None) == NA
    assert command_text("a\x1b[2Jb", None, None) == "a?[2Jb"  # no escape codes reach the screen


def test_a_command_that_cannot_be_read_is_na_even_when_shortened() -> None:
    assert command_text(None, None, None, short=True) == NA  # was "a": "n/a" cut as a path
    assert command_text("", "", None, short=True) == NA
    assert command_text(None, None, "5e277ec3818f", short=True) == f"[ctr 5e277ec3] {NA}"
    assert command_text("/bin/x", None, "\x1b[2J\x1b]0;x", short=True) == "[ctr ?[2J?]0;] x"
