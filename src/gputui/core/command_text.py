"""A process's command line made short enough to show: the executable's directory dropped, the
script or program name kept whole, the words between the program and the flags that tell
replicas apart (ranks, ports, device ids) given up first, and what is cut marked with an
ellipsis; when even that does not fit, the end is cut, never a name in its middle.

Also the two other ways the process table shows a command: a window of it scrolled sideways
(:func:`window`), and a form that keeps a filter's match in view (:func:`fit_around`)."""

from __future__ import annotations

import re

from gputui.core.format import NA, cell_width, clip, sanitize
from gputui.core.model import MAX_COMMAND_CHARS


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


def _script_name(path: str) -> tuple[str, str]:
    """A script by its file name, whole (``embed_server.py``), or with the directory that names
    it when the file name is generic (``model.py``; version directories such as ``1`` kept on
    the way), the shorter form being that directory alone."""
    parts = [p for p in path.split("/") if p]
    if not parts:
        return path, path
    if parts[-1] not in _GENERIC_SCRIPTS or len(parts) == 1:
        return parts[-1], parts[-1]
    start = len(parts) - 2
    while start > 0 and parts[start].isdigit():
        start -= 1
    return "/".join(parts[start:]), parts[start]


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
                module = words[i + 1]  # the program: kept whole (torch.distributed.run)
                short = module if word == "-m" else _middle(module)
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
    head = _Group(exe, _FILLER if program_seen else _MUST)
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
    program or script, whole, and options such as ``--local-rank=3`` or ``--port 8001``;
    interpreter and file paths lose their directories, the middle gives way first (marked
    ``…``), then the interpreter, then long file names in arguments lose their middle, then the
    end is cut::

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
        # Even the essentials do not fit: the end is cut, never a name in its middle.
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


def _program(groups: list[_Group]) -> str:
    """The program or script a command runs, as :func:`fit_command` shows it first."""
    for group in groups:
        if group.rank == _MUST:
            return group.full.split(" ", 1)[1] if group.module else group.full
    return groups[0].full


def _word_start(text: str, at: int) -> int:
    """Where the word holding ``text[at]`` starts."""
    return text.rfind(" ", 0, at) + 1


def fit_around(command: str, width: int, needle: str) -> str:
    """``command`` in ``width`` cells with the first match of ``needle`` (lower case) in view: as
    :func:`fit_command` when that shows it; else the program, ``…`` and the command from the
    word that holds the match, or from its option when it is an option's value
    (``embed_server.py … --local-rank=29 --port 9000``), cut at the
    right; or, with no room for the program, ``…`` and the command from that word. A match in
    the first word (the interpreter) puts it before the fitted command (``python train.py …
    --local-rank=3``)."""
    fitted = fit_command(command, width)
    text = " ".join(command.split())
    at = text.lower().find(needle) if needle else -1
    if at < 0 or needle in fitted.lower():
        return fitted
    start = _word_start(text, at)
    if start == 0:  # in the program's own name (the interpreter): it, then the rest as fitted
        head = text.split(" ", 1)[0]
        name = head.rsplit("/", 1)[-1]
        head = name if needle in name.lower() else head  # the match may be in its directory
        return _cut(f"{head} {fit_command(text, max(width - cell_width(head) - 1, 1))}", width)
    starts = [start]
    option = _word_start(text, start - 1) if start > 1 else start
    if text.startswith("-", option) and not text.startswith("-", start):
        starts.insert(0, option)  # a value: from its option (--max-model-len 8192) if it fits
    program = _program(_word_groups(text.split(" ")))
    lead = f"{program} {_ELLIPSIS} "
    if not text.startswith(program) and text.find(program) >= start:
        lead = ""  # the program comes after the match (a launcher's options): no need to repeat
    end = at + len(needle)
    for first in starts:  # the option with its value, even without the program, if it fits
        if lead and cell_width(lead) + cell_width(text[first:end]) <= width:
            return _cut(lead + text[first:], width)
        if 1 + cell_width(text[first:end]) <= width or first == starts[-1]:
            return _cut(_ELLIPSIS + text[first:], width)
    return fitted  # pragma: no cover - the loop returns on its last start


def _cut(text: str, width: int) -> str:
    """``text`` in ``width`` cells, its end cut (marked ``…``) when it is longer."""
    if cell_width(text) <= width:
        return text
    return clip(text, width - 1) + _ELLIPSIS if width > 0 else ""


def _drop_cells(text: str, skip: int) -> str:
    """``text`` without its first ``skip`` cells (a wide character cut in two is left out)."""
    if text.isascii():
        return text[skip:]
    for i in range(len(text) + 1):
        if cell_width(text[:i]) >= skip:
            return text[i:]
    return ""


def window(text: str, start: int, width: int) -> str:
    """``width`` cells of ``text`` from cell ``start`` on (a command scrolled sideways), with
    ``…`` at each edge beyond which more of it lies."""
    if width <= 0:
        return ""
    if start <= 0:
        return _cut(text, width)
    rest = _drop_cells(text, start + 1)  # the first cell shown is the mark
    if not rest:
        return _ELLIPSIS
    return _ELLIPSIS + _cut(rest, width - 1)


def command_text(
    command: str | None,
    name: str | None,
    container_id: str | None,
    *,
    short: bool = False,
    width: int | None = None,
    around: str = "",
) -> str:
    """What a process is, in one line: ``[ctr 5e277ec3] python -u train.py ...``; :data:`NA`
    when neither its command line nor its name could be read. At most
    :data:`~gputui.core.model.MAX_COMMAND_CHARS` characters of it, then ``…`` (a replayed or
    simulated row can hold megabytes, which would take seconds to lay out).

    ``short``: the executable without its directory. ``width``: at most this many cells, the
    distinguishing parts kept (:func:`fit_command`); the container tag goes first when the
    command does not fit beside it. ``around`` (lower case, with a ``width``): keep this text
    in view (a filter's match) as :func:`fit_around` does, when the command holds it."""
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
        if complete and (not around or around in beside.lower() or around not in text.lower()):
            return tag + beside
    if around:
        return fit_around(text, width, around)
    return fit_command(text, width)


__all__ = ["command_text", "fit_around", "fit_command", "short_command", "window"]
