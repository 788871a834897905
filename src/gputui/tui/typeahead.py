"""Keys typed ahead keep their order: Esc followed quickly by another key is Esc, then that key.

A terminal sends Esc as the byte ESC, which also starts every escape sequence (cursor keys, F
keys) and, followed by a character, means Alt+that character. Textual's input parser waits for
what follows an ESC (``ESCDELAY``, 100 ms), and its input thread notices that the wait is over
only when it next wakes (every 100 ms, or at the next byte): a key typed within 100 to 200 ms
after Esc is read with it as one unknown sequence, which the parser gives as Alt+key (or, for a
key such as ``?`` or space, as the key alone). Either way the Esc is lost, and Alt+key is bound to
nothing: ``h``, Esc, ``t`` typed 100 ms apart ended on the health screen, not the topology. Over
SSH, keys typed apart can arrive together, and then they always merge.

gputui binds no Alt keys, so :class:`TypeAheadParser` gives such an ESC-and-character as what
was typed: Esc, then the character (an Alt key the keymap binds stays Alt). Sequences the parser
knows (cursor keys, F keys, Alt+Backspace) are not touched, and a terminal that speaks the kitty
keyboard protocol sends an unambiguous Esc that never reaches this path.

:class:`TypeAheadDriver` is Textual's Linux driver with this parser. It builds on Textual's
private parser and driver internals (Textual is pinned exactly): :func:`driver_class` gives the
stock driver when they are not what this module was written for.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Collection, Iterable, Iterator
from functools import cache, partial
from types import CodeType

from textual import events
from textual._xterm_parser import XTermParser
from textual.driver import Driver
from textual.drivers import linux_driver
from textual.drivers.linux_driver import LinuxDriver

log = logging.getLogger(__name__)

_PARSER = "XTermParser"
"""The name LinuxDriver.run_input_thread builds its parser from."""


class TypeAheadParser(XTermParser):
    """Textual's xterm parser; an ESC it could not read as a known sequence is Esc, then the key
    that followed it (not Alt+key), unless that Alt key is in ``keep``."""

    def __init__(self, debug: bool = False, *, keep: Collection[str] = ()) -> None:
        super().__init__(debug)
        self.keep = frozenset(keep)

    def _sequence_to_key_events(self, sequence: str, alt: bool = False) -> Iterable[events.Key]:
        # alt is True only where the parser re-reads an unknown sequence that began with ESC.
        if not alt:
            yield from super()._sequence_to_key_events(sequence)
            return
        keys = list(super()._sequence_to_key_events(sequence, alt=True))
        if any(key.key in self.keep for key in keys):
            yield from keys
            return
        yield events.Key("escape", "\x1b")
        yield from super()._sequence_to_key_events(sequence)


class TypeAheadDriver(LinuxDriver):
    """Textual's Linux driver, reading keys with :class:`TypeAheadParser`."""

    keep_alt: Collection[str] = ()
    """Alt keys bound in the keymap: these stay Alt keys (set by :func:`driver_class`)."""

    def run_input_thread(self) -> None:
        # The stock loop builds its parser from the module's XTermParser, once, at its start.
        setattr(linux_driver, _PARSER, partial(TypeAheadParser, keep=self.keep_alt))
        try:
            super().run_input_thread()
        finally:
            setattr(linux_driver, _PARSER, XTermParser)


@cache
def private_api_problem() -> str | None:
    """Why Textual's parser or driver is not what this module was written for (None: it is).

    Read from the functions' code objects (the names they look up, the keywords they pass), not
    their source: reading and tokenizing Textual's source files cost ~25 ms of every start."""
    if getattr(linux_driver, _PARSER, None) is not XTermParser:
        return "textual.drivers.linux_driver builds its parser otherwise"
    if _PARSER not in _code(LinuxDriver.run_input_thread).co_names:
        return "LinuxDriver.run_input_thread does not build an XTermParser"
    method = getattr(XTermParser, "_sequence_to_key_events", None)
    if not callable(method) or list(inspect.signature(method).parameters) != [
        "self",
        "sequence",
        "alt",
    ]:
        return "XTermParser._sequence_to_key_events(sequence, alt) has changed"
    if not any(("alt",) in code.co_consts for code in _codes(_code(XTermParser.parse))):
        return "XTermParser.parse no longer re-reads unknown sequences with alt"
    return None


def _code(function: Callable[..., object]) -> CodeType:
    return function.__code__


def _codes(code: CodeType) -> Iterator[CodeType]:
    """``code`` and the code of the functions defined in it (a call's keyword names are a tuple
    among the constants of the code that makes the call)."""
    yield code
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            yield from _codes(constant)


def driver_class(stock: type[Driver], keymap_keys: Iterable[str]) -> type[Driver]:
    """The driver for the app: :class:`TypeAheadDriver` where Textual would use its Linux
    driver, keeping the Alt keys among ``keymap_keys`` (comma-separated Textual key names);
    ``stock`` otherwise, or when Textual's internals differ (logged)."""
    if stock is not LinuxDriver:
        return stock
    problem = private_api_problem()
    if problem is not None:
        log.warning("keys typed right after Esc may be read as Alt keys: %s", problem)
        return stock
    keep = frozenset(
        key.strip()
        for keys in keymap_keys
        for key in keys.split(",")
        if key.strip().startswith("alt+")
    )
    return type("TypeAheadDriver", (TypeAheadDriver,), {"keep_alt": keep})


__all__ = ["TypeAheadDriver", "TypeAheadParser", "driver_class", "private_api_problem"]
