"""Promises the code makes to the next person who changes it (see docs/architecture.md): no
import circles, a core that does not need Textual, small modules, one version number."""

from __future__ import annotations

import ast
import importlib.metadata
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import gputui

SRC = Path(gputui.__file__).resolve().parent
MAX_LINES = 700


def module_names() -> dict[str, Path]:
    """Dotted name -> file of every module in the package."""
    names: dict[str, Path] = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def run_time_imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The gputui modules ``name`` imports when it runs: at the top, in functions, anywhere but
    under ``if TYPE_CHECKING:``."""
    found: set[str] = set()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]

    def statements(node: ast.AST) -> Iterator[ast.AST]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    yield other
                    yield from statements(other)
                continue
            yield child
            yield from statements(child)

    for node in statements(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "gputui")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package[: len(package) - (node.level - 1)]
                base = ".".join([*parent, base] if base else parent)
            if base.split(".")[0] != "gputui":
                continue
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.add(submodule if submodule in modules else base)
    found.discard(name)
    return found


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for v in graph:
        if v not in index:
            visit(v)
    return cycles


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == [["a", "b", "c"]]


def test_no_run_time_import_circle() -> None:
    modules = module_names()
    graph = {name: run_time_imports(name, path, modules) for name, path in modules.items()}
    assert "gputui.engine.session" in graph["gputui.commands.check"]  # the walk sees imports at all
    assert import_cycles(graph) == []


def test_the_core_does_not_import_textual() -> None:
    """Every module outside ``gputui.tui`` imports without Textual (the exporter, ``check`` and
    ``snapshot`` stay light); reported is the first module whose import pulled it in."""
    core = [
        name
        for name in module_names()
        if not name.startswith("gputui.tui") and name not in ("gputui.__main__",)
    ]
    script = (
        "import importlib, sys\n"
        f"for name in {core!r}:\n"
        "    importlib.import_module(name)\n"
        "    if 'textual' in sys.modules:\n"
        "        print(name)\n"
        "        break\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"{result.stdout.strip()} imports Textual"


def test_no_source_file_over_the_limit() -> None:
    sizes = {
        str(path.relative_to(SRC)): len(path.read_text(encoding="utf-8").splitlines())
        for path in module_names().values()
    }
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def test_the_version_is_written_once() -> None:
    assert importlib.metadata.version("gputui") == gputui.__version__
    pyproject = (SRC.parent.parent / "pyproject.toml").read_text(encoding="utf-8")
    assert gputui.__version__ not in pyproject


def test_no_test_module_imports_another() -> None:
    """Shared builders live in tests/factories.py and fakes in tests/fakes/: a test module that
    imports another runs that module's import-time work and ties the two files together."""
    tests = Path(__file__).resolve().parent
    found: dict[str, list[str]] = {}
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            for name in names:
                if name.startswith("tests.test_") or name.startswith("test_"):
                    found.setdefault(str(path.relative_to(tests)), []).append(name)
    assert found == {}


LAYERS: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "specs": frozenset({"core"}),  # core.frozen only
    "host": frozenset({"core"}),
    "health": frozenset({"core"}),
    "backends": frozenset({"core", "host", "specs"}),
    "settings": frozenset({"core", "health"}),
    "engine": frozenset({"core", "host", "backends", "health", "settings"}),
    "views": frozenset({"core", "host", "health"}),
    "probe": frozenset({"core", "specs"}),
    "fleet": frozenset({"core", "health"}),
    "export": frozenset({"core", "host", "health", "engine"}),
    "tui": frozenset(
        {"core", "host", "engine", "health", "fleet", "probe", "specs", "views", "settings"}
    ),
    "commands": frozenset(
        {"core", "host", "engine", "health", "backends", "views", "probe", "fleet", "export"}
        | {"specs", "tui", "settings"}
    ),
}
"""Each package and the packages it may import at run time, bottom up (docs/architecture.md
draws them): the model knows nothing of the machine, host facts nothing of drivers, backends
nothing of health rules, views and exporters nothing of commands. ``cli`` and ``__main__`` sit on
top and may import anything."""

TOP = frozenset({"gputui", "gputui.cli", "gputui.__main__"})


def package_of(name: str) -> str:
    return name.split(".")[1]


def layer_breaches(graph: dict[str, set[str]]) -> list[str]:
    breaches = []
    for name, imports in sorted(graph.items()):
        if name in TOP:
            continue
        layer = package_of(name)
        allowed = LAYERS[layer] | {layer}
        for target in sorted(imports - {"gputui"}):
            if (target not in TOP and package_of(target) not in allowed) or target in TOP:
                breaches.append(f"{name} -> {target}")
    return breaches


def test_the_layer_checker_finds_a_breach() -> None:
    graph = {"gputui.core.model": {"gputui.tui.app"}, "gputui.tui.app": {"gputui.core.model"}}
    assert layer_breaches(graph) == ["gputui.core.model -> gputui.tui.app"]


def test_every_module_sits_in_a_layer_and_imports_only_below_it() -> None:
    modules = module_names()
    loose = sorted(n for n in modules if n not in TOP and package_of(n) not in LAYERS)
    assert loose == [], "modules outside every layer: add them to a package and to LAYERS"
    graph = {name: run_time_imports(name, path, modules) for name, path in modules.items()}
    assert layer_breaches(graph) == []


def import_time_imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The gputui modules importing ``name`` imports: those of its own top level, not those in
    its functions (run when called), nor those under ``if TYPE_CHECKING:``."""

    def statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            yield node
            if isinstance(node, ast.If):
                if not _is_type_checking(node):
                    yield from statements(node.body)
                yield from statements(node.orelse)
            elif isinstance(node, ast.Try):
                for block in (node.body, node.orelse, node.finalbody):
                    yield from statements(block)
                for handler in node.handlers:
                    yield from statements(handler.body)

    found: set[str] = set()
    for node in statements(ast.parse(path.read_text(encoding="utf-8")).body):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "gputui")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "gputui":
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in modules else str(node.module))
    found.discard(name)
    return found


COMMAND_LINE = frozenset(
    {
        "gputui.commands",
        "gputui.commands.args",
        "gputui.commands.common",
        "gputui.commands.output",
        "gputui.commands.parsers",
        "gputui.commands.settings_from_args",
    }
)
"""The modules of ``gputui.commands`` the command line is built from; every other one is a
command's implementation (or its helpers), imported when that command runs."""


def test_the_command_line_imports_no_command_implementation() -> None:
    """``gputui.cli`` and the parsers (``commands/parsers/``) import a command's module only
    when it runs (``cli.COMMANDS`` holds :class:`LazyCommand`s): ``gputui --help`` and the
    dashboard do not load ``check``, ``export``, ``fleet``, ``probe`` ... and what they import
    (``tests/test_startup.py`` checks what a start loads)."""
    modules = module_names()
    builders = ["gputui.cli", *(n for n in modules if n.startswith("gputui.commands.parsers."))]
    loaded = {
        name: {
            target
            for target in import_time_imports(name, modules[name], modules)
            if target.startswith("gputui.commands")
            and target not in COMMAND_LINE
            and not target.startswith("gputui.commands.parsers.")
        }
        for name in builders
    }
    assert {name: sorted(found) for name, found in loaded.items() if found} == {}
    pick = import_time_imports("gputui.commands.pick", modules["gputui.commands.pick"], modules)
    assert "gputui.commands.pick_wait" in pick  # the walk sees imports at all
