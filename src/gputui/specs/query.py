"""A GPU name as a person types it (``rtx4090``, ``A100 80GB``, ``geforce-rtx-4090``), matched to
the rows of the spec table whatever its case, spacing, punctuation and vendor words.

A name is compared as words: lower case, punctuation as blanks, letters and digits apart
(``RTX4090`` is ``rtx 4090``, ``80GB`` is ``80 gb``), the vendor and brand words left out
(``NVIDIA``, ``GeForce``, ``AMD``, ``Instinct``, ``Tesla``, ``Radeon``). A row matches when the
typed words appear, in order, among the words of its model name or of one of the names a driver
reports for it, each word whole (``H10`` is not ``H100``). A row whose name is exactly the typed
one, brand words and all, wins over rows that only contain it (``L40``, not ``L40S``).

This is for names a person types (``gputui specs NAME``); a reported device name is matched by
:func:`gputui.specs.lookup`.
"""

from __future__ import annotations

import re

from gputui.specs import GpuSpec, load_specs

BRAND_WORDS = frozenset({"nvidia", "geforce", "amd", "instinct", "tesla", "radeon"})


def words(name: str, *, brands: bool = False) -> tuple[str, ...]:
    """The words of a name, compared as described in the module (``brands``: keep the vendor and
    brand words)."""
    text = re.sub(r"[^0-9a-z]+", " ", name.casefold())
    text = re.sub(r"(?<=[a-z])(?=[0-9])|(?<=[0-9])(?=[a-z])", " ", text)
    return tuple(w for w in text.split() if brands or w not in BRAND_WORDS)


def _names(spec: GpuSpec) -> list[str]:
    return [spec.model, f"{spec.vendor} {spec.model}", *spec.names]


def _in_order(wanted: tuple[str, ...], have: tuple[str, ...]) -> bool:
    """Every word of ``wanted`` among ``have``, in the same order."""
    it = iter(have)
    return all(any(w == h for h in it) for w in wanted)


def search(query: str) -> list[GpuSpec]:
    """The rows ``query`` names (see the module): the ones named exactly when there are any,
    else every row whose words contain the query's, in file order; [] for a query of no words."""
    wanted = words(query)
    if not wanted:
        return []
    exact_words = words(query, brands=True)
    specs = load_specs()
    exact = [s for s in specs if any(words(n, brands=True) == exact_words for n in _names(s))]
    if exact:
        return exact
    return [s for s in specs if any(_in_order(wanted, words(n)) for n in _names(s))]


__all__ = ["BRAND_WORDS", "search", "words"]
