"""Prose wrapped to a width: continuation lines indented under their first, a number never split
from its unit nor a name from its number; and binary sizes written out as GiB outside the
panels."""

from __future__ import annotations

import pytest

from gputui.core.format import fmt_size, fmt_size_pair
from gputui.core.wrap import NBSP, keep_together, wrap_styled, wrap_text

GIB = 1 << 30

TEXT = "clocks held down by HW thermal slowdown at 91 °C on GPU 3 since 22:13:20, 71.4 GiB in use"


@pytest.mark.parametrize("width", range(18, 60))
def test_wrapping_never_splits_a_number_from_its_unit(width: int) -> None:
    lines = wrap_text(TEXT, width, indent="  ")
    assert all(len(line) <= width for line in lines)
    assert all(line.startswith("  ") for line in lines[1:])  # under the first line
    joined = " ".join(line.strip() for line in lines)
    assert joined == TEXT  # nothing lost, plain spaces again
    for together in ("91 °C", "GPU 3", "since 22:13:20", "71.4 GiB"):
        assert any(together in line for line in lines), (together, lines)


def test_what_is_kept_together() -> None:
    kept = keep_together("at 89 °C, 10 s, Gen3 x8, XID 48, PID 4242, 50 % and 3 more GPUs")
    for joined in ("89\xa0°C", "10\xa0s", "Gen3\xa0x8", "XID\xa048", "PID\xa04242", "50\xa0%"):
        assert joined in kept
    assert "3 more" in kept  # a number before a word that is no unit
    assert NBSP not in wrap_text(kept, 20)[0]


def test_styled_pieces_wrap_as_words_even_across_pieces() -> None:
    pieces = [("HW thermal slowdown at 89°C", "m"), ("   ", ""), ("since ", "d"), ("22:13", "")]
    lines = wrap_styled(pieces, 30)
    assert ["".join(t for t, _ in line) for line in lines] == [
        "HW thermal slowdown at 89°C",
        "since 22:13",
    ]
    assert lines[1] == [("since ", "d"), ("22:13", "")]  # each piece keeps its style


def test_sizes_outside_the_panels_say_gib() -> None:
    assert fmt_size(79.6 * GIB) == "79.6 GiB" and fmt_size(512) == "512 B"
    assert fmt_size(2.1 * 1024 * GIB) == "2.10 TiB" and fmt_size(None) == "n/a"
    assert fmt_size_pair(71.4 * GIB, 79.6 * GIB) == "71.4/79.6 GiB"
    assert fmt_size_pair(301 * GIB, 1.97 * 1024 * GIB) == "301 GiB/1.97 TiB"
    assert fmt_size_pair(None, 80 * GIB) == "n/a/80.0 GiB"
