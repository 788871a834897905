"""Human formatting of readings, and "n/a" for what the hardware does not report."""

from __future__ import annotations

import math

import pytest

from gputui.core.command_text import command_text, fit_around, fit_command, short_command, window
from gputui.core.format import (
    NA,
    cell_width,
    clip,
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
    one_cell_each,
    pad,
    sanitize,
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


# -- command lines shortened to a width ------------------------------------------------------------

TRAIN = "/opt/conda/bin/python -u train.py --config llama-8b.yaml --local-rank=3"
VLLM = (
    "python3 /usr/local/bin/vllm serve meta-llama/Llama-3.1-8B-Instruct --port 8001 "
    "--gpu-memory-utilization 0.8"
)


@pytest.mark.parametrize(
    ("command", "width", "shown"),
    [
        # The middle gives way first; the rank that tells the six processes apart stays.
        (TRAIN, 40, "python train.py … --local-rank=3"),
        (TRAIN, 30, "train.py … --local-rank=3"),  # then the interpreter
        (TRAIN, 80, TRAIN),  # it fits: unchanged
        (TRAIN, 60, "python -u train.py --config llama-8b.yaml --local-rank=3"),
        # A value given as the next word, a port, a subcommand, a model name.
        ("python train.py --data /d --rank 5 --seed 1", 26, "train.py … --rank 5 …"),
        (VLLM, 30, "vllm serve … --port 8001 …"),
        (VLLM, 60, "vllm serve meta-llama/Llama-3.1-8B-Instruct --port 8001 …"),
        # Paths lose their directories, long file names in arguments their middle; the module
        # a Python runs is its program, kept whole.
        (
            "python -m ipykernel_launcher -f /home/ana/.local/share/jupyter/runtime/"
            "kernel-a311c399-1193-4f6f-a608-a5384fc0a486.json",
            60,
            "python -m ipykernel_launcher -f …/kernel-a311c…86.json",
        ),
        (
            "python3 -m torch.distributed.run --nproc-per-node 8 finetune.py --rank 5",
            44,
            "torch.distributed.run … finetune.py --rank 5",
        ),
        (
            "torchrun --nproc-per-node 8 train.py --local_rank 2 --bf16",
            40,
            "torchrun … train.py --local_rank 2 …",
        ),
        (
            "/usr/bin/tritonserver --model-repository=/models --http-port 8005",
            40,
            "tritonserver … --http-port 8005",
        ),
        (
            "/opt/serve/venv/bin/python -m serve.worker --model BAAI/bge-large-en-v1.5 "
            "--dtype bfloat16 --max-num-seqs 16 --local-rank=67 --port=22867",
            44,
            "serve.worker … --local-rank=67 --port=22867",
        ),
        # A generic script name keeps the directory that names it.
        (
            "/opt/tritonserver/backends/python/triton_python_backend_stub "
            "/models/bge-small-en-v1.5/1/model.py triton_python_backend_shm_region_39_11 "
            "1048576 1048576 47762 /opt/tritonserver/backends/python 336 bge-small-en-v1.5_0_11",
            60,
            "triton_python_backend_stub bge-small-en-v1.5/1/model.py …",
        ),
        (
            "/opt/serve/venv/bin/celery -A tasks worker --pool=solo --hostname=gpu-w79@%h",
            39,
            "celery -A tasks … --hostname=gpu-w79@%h",
        ),
        # Tighter: the options keep their dashes and the end is cut; the program's name is
        # never cut in its middle.
        (
            "/opt/serve/venv/bin/python -m serve.worker --model BAAI/bge-large-en-v1.5 "
            "--dtype bfloat16 --max-num-seqs 16 --local-rank=67 --port=22867",
            39,
            "serve.worker … --local-rank=67 --port=…",
        ),
        (
            "python3 /srv/embed_server.py --config a.yaml --local-rank=7",
            30,
            "embed_server.py … --local-ran…",
        ),
        (
            "python3 /srv/embed_server.py --config a.yaml --local-rank=7",
            16,
            "embed_server.py…",
        ),
        (
            "python3 /srv/a_very_long_embedding_server_name.py --local-rank=7",
            24,
            "a_very_long_embedding_s…",
        ),
        (
            "python -m serve.worker --local-rank=123 --port 9000 --model /models/bge",
            27,
            "serve.worker --local-rank=…",
        ),
        # Whatever fits is shown unchanged (whitespace collapsed).
        ("python  train.py", 40, "python train.py"),
        # When even the essentials do not fit, the end is cut.
        ("train.py --local-rank=3", 12, "train.py --…"),
        ("x" * 50, 10, "x" * 9 + "…"),
    ],
)
def test_fit_command_keeps_what_tells_processes_apart(command: str, width: int, shown: str) -> None:
    assert fit_command(command, width) == shown
    assert cell_width(fit_command(command, width)) <= width


def test_fit_command_never_exceeds_the_width() -> None:
    for command in (TRAIN, VLLM, "名前 --rank 3 " * 5, "a " * 100, "--rank"):
        for width in range(1, 90):
            assert cell_width(fit_command(command, width)) <= width
    assert fit_command(TRAIN, 0) == ""


def test_command_text_fits_a_width_and_drops_the_container_tag_first() -> None:
    cid = "5e277ec3818f"
    assert (
        command_text(TRAIN, None, cid, width=60)
        == "[ctr 5e277ec3] python train.py … --local-rank=3"
    )
    assert command_text(TRAIN, None, cid, width=40) == "[ctr 5e277ec3] train.py … --local-rank=3"
    # The tag would leave too little room for the rank: the command wins.
    assert command_text(TRAIN, None, cid, width=30) == "train.py … --local-rank=3"
    assert command_text(None, "Xorg", cid, width=30) == "[ctr 5e277ec3] Xorg"
    assert command_text(None, None, None, width=2) == NA
    # Without a width nothing changes (the detail screen shows the whole command).
    assert command_text(TRAIN, None, None) == TRAIN


@pytest.mark.parametrize(
    ("text", "one_each"),
    [
        ("GPU 0 ▕███▏ 97% ✔ healthy — ▲ 2 warnings …", True),
        ("café · Ωmega", True),
        ("", True),
        ("名前", False),
        ("e\u0301", False),  # a combining mark takes no cell
        ("名\u0301", False),  # two characters, two cells, but not one cell each
    ],
)
def test_one_cell_each_is_sure_or_says_no(text: str, one_each: bool) -> None:
    assert one_cell_each(text) is one_each
    if one_each:
        assert cell_width(text) == len(text)


def test_fit_around_keeps_a_filter_match_in_view() -> None:
    """A filter's match in a part of the command that shortening leaves out is shown: the
    program, a mark, and the command from the word that holds the match, cut at the right."""
    command = (
        "/opt/serve/venv/bin/python -m serve.worker --model BAAI/bge-large-en-v1.5 "
        "--dtype bfloat16 --max-num-seqs 16 --local-rank=67 --port=22867"
    )
    assert "bfloat16" not in fit_command(command, 30)
    # In an option's value: from the option on.
    assert fit_around(command, 30, "bfloat") == "serve.worker … --dtype bfloat…"
    assert fit_around(command, 30, "local-rank") == fit_command(command, 30)  # already shown
    assert fit_around(command, 12, "bfloat") == "…bfloat16 -…"  # no room for the program
    assert fit_around(command, 30, "nowhere") == fit_command(command, 30)
    # In the interpreter's name: it goes before what fit_command keeps.
    assert fit_around(TRAIN, 25, "python") == "python train.py … --loca…"
    assert fit_around(TRAIN, 33, "python") == "python train.py … --local-rank=3"
    for width in range(1, 60):
        assert cell_width(fit_around(command, width, "max-num")) <= width
    # Through command_text, the container tag goes first when it would hide the match.
    shown = command_text(command, None, "5e277ec3818f", width=40, around="bfloat")
    assert "bfloat16" in shown and not shown.startswith("[ctr")


def test_window_scrolls_a_command_sideways() -> None:
    text = "python train.py --config x.yaml"
    assert window(text, 0, 12) == "python trai…"
    assert window(text, 7, 12) == "…rain.py --…"
    assert window(text, 20, 12) == "…fig x.yaml"  # the end
    assert window(text, 40, 12) == "…"  # scrolled past it
    assert window("名前 --rank 3", 1, 6) == "…前 -…"  # a wide character under the mark goes
    for start in range(0, 40):
        assert cell_width(window(text, start, 9)) <= 9
