"""The layers of feedmd, checked on the source (like tests/test_api.py guards the public API).

- SQL and the SQLite modules live in ``feedmd/store/`` only: a schema change is one
  migration plus a change inside that folder.
- No import cycle among feedmd's modules, counting imports inside functions (they hide a
  cycle, they do not break it).
- No module grows past ``MAX_LINES``: small modules with one job; at most
  ``MAX_TOP_LEVEL`` modules sit beside the packages.
- The layers (``LAYERS``, lowest first): a module imports its own part and the layers
  below it, never a layer above, never another part of its own layer (the parts of one
  layer talk through ``feedmd.models`` and the store's interface); outside the store, only
  the ``feedmd.store`` package is imported, not a module inside it. Every package's
  ``__init__`` docstring says what it owns and what it may import.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "feedmd"
STORE = PACKAGE / "store"
MAX_LINES = 500
MAX_TOP_LEVEL = 12
# The parts of feedmd by layer, lowest first (README.md "Where things are"). Each part is
# a package or a top-level module.
LAYERS: list[tuple[str, ...]] = [
    ("feedmd.errors", "feedmd.timeutil", "feedmd.ids", "feedmd.resources"),
    ("feedmd.settings",),
    ("feedmd.fingerprints",),
    ("feedmd.model",),
    ("feedmd.models",),
    ("feedmd.report",),
    ("feedmd.store",),
    ("feedmd.sources", "feedmd.stages", "feedmd.events", "feedmd.delivery"),
    ("feedmd.pipeline",),
    ("feedmd.tools",),
    ("feedmd.service",),
    ("feedmd.cli",),
    ("feedmd", "feedmd.__main__"),
]
# the database drivers: SQLite's and PostgreSQL's (psycopg)
SQLITE_MODULES = {"sqlite3", "sqlite_utils", "psycopg", "psycopg_binary"}
# The start of an SQL statement inside a string (upper case, as all of feedmd's SQL is):
# what only the store may hold.
SQL = re.compile(
    r"\b(SELECT\s.+\sFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM"
    r"|CREATE\s+(TABLE|INDEX|UNIQUE|VIEW|TRIGGER)|DROP\s+(TABLE|INDEX)|ALTER\s+TABLE"
    r"|PRAGMA\s+\w+|BEGIN\s+(IMMEDIATE|EXCLUSIVE|DEFERRED)|JOIN\s+\w+\s+\w+\s+ON)\b",
    re.DOTALL,
)


def modules() -> Iterator[tuple[str, Path]]:
    """(dotted name, path) of every module of the feedmd package."""
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


def code_strings(tree: ast.AST) -> Iterator[str]:
    """The string constants of a module that are not docstrings, f-string parts joined."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            yield "".join(
                part.value if isinstance(part, ast.Constant) else "x" for part in node.values
            )
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            yield node.value


def imported(tree: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    """Every module name an import statement of ``module`` names, anywhere in it."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join([*base, *([node.module] if node.module else [])])
            else:
                prefix = node.module or ""
            # ``from a.b import c`` names ``a.b.c``: the module c, or else a name in a.b
            yield from (f"{prefix}.{alias.name}" for alias in node.names)


def test_only_the_store_holds_sql_or_imports_a_database_driver() -> None:
    offenders = []
    for name, path in modules():
        if path.is_relative_to(STORE):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for target in imported(tree, name, path.name == "__init__.py"):
            if target.split(".")[0] in SQLITE_MODULES:
                offenders.append(f"{name} imports {target}")
        for text in code_strings(tree):
            if SQL.search(text):
                offenders.append(f"{name} holds SQL: {text[:60]!r}")
    assert offenders == []


def test_the_sql_detector_sees_sql() -> None:
    for statement in (
        "SELECT id FROM items WHERE id = ?",
        "INSERT OR IGNORE INTO orgs (name) VALUES (?)",
        "UPDATE bodies SET prose = ?",
        "DELETE FROM run_leases",
        "CREATE TABLE t (a)",
        " FROM items i JOIN feeds f ON f.id = i.feed_id",
    ):
        assert SQL.search(statement), statement
    for prose in ("select the best match from the window", "update the files", "created at"):
        assert not SQL.search(prose), prose


def import_graph() -> dict[str, set[str]]:
    """{module: the feedmd modules it imports}, function-local imports included; importing
    ``a.b.c`` counts as importing ``a.b.c`` (or its package when it is a name in it)."""
    names = {name for name, _ in modules()}
    graph: dict[str, set[str]] = {}
    for name, path in modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        targets = set()
        for target in imported(tree, name, path.name == "__init__.py"):
            while target and target not in names:
                target = target.rpartition(".")[0]
            if target and target != name and target.startswith("feedmd"):
                targets.add(target)
        graph[name] = targets
    return graph


def cycle_in(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as a path (first module repeated at the end), or None.

    A package importing its own submodules (``feedmd.store`` -> ``feedmd.store.runs``) is
    how a facade is built, not a cycle: the edge from a submodule up to its own package is
    left out, as Python finishes the submodule before the package needs it."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if node.startswith(target + "."):
                continue
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state and (found := visit(target)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_there_is_no_import_cycle() -> None:
    assert cycle_in(import_graph()) is None


def test_the_cycle_finder_finds_a_hidden_cycle() -> None:
    graph = {"feedmd.a": {"feedmd.b"}, "feedmd.b": {"feedmd.c"}, "feedmd.c": {"feedmd.a"}}
    assert cycle_in(graph) == ["feedmd.a", "feedmd.b", "feedmd.c", "feedmd.a"]
    assert cycle_in({"feedmd.a": {"feedmd.b"}, "feedmd.b": set()}) is None


def test_no_module_is_over_the_size_limit() -> None:
    sizes = {
        path.relative_to(PACKAGE.parent).as_posix(): len(path.read_text().splitlines())
        for _, path in modules()
    }
    assert {name: lines for name, lines in sizes.items() if lines > MAX_LINES} == {}


def test_the_top_level_is_short() -> None:
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL, top


def part_of(module: str) -> tuple[int, str]:
    """(layer, part) of a feedmd module: the part that is the module or its package."""
    for layer, parts in enumerate(LAYERS):
        for part in parts:
            if module == part or (part != "feedmd" and module.startswith(part + ".")):
                return layer, part
    raise AssertionError(f"{module} is in no layer: add it to LAYERS")


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import of ``graph`` that goes up a layer, across to another part of the same
    layer, or into a module inside the store from outside it."""
    found = []
    for module, targets in sorted(graph.items()):
        layer, part = part_of(module)
        for target in sorted(targets):
            target_layer, target_part = part_of(target)
            if target_part == part:
                continue
            if target_layer > layer:
                found.append(f"{module} imports {target}: up from {part} to {target_part}")
            elif target_layer == layer:
                found.append(f"{module} imports {target}: across, {part} and {target_part}")
            elif target_part == "feedmd.store" and target != "feedmd.store":
                found.append(f"{module} imports {target}: inside the store, not its interface")
    return found


def test_every_import_keeps_to_the_layers() -> None:
    assert layer_violations(import_graph()) == []


def test_the_layer_check_sees_each_kind_of_violation() -> None:
    graph = {
        "feedmd.store.runs": {"feedmd.stages.retry", "feedmd.models", "feedmd.store.schema"},
        "feedmd.stages.scrape": {"feedmd.sources.http", "feedmd.stages.prose"},
        "feedmd.delivery.render": {"feedmd.store.outputs", "feedmd.store"},
        "feedmd.pipeline": {"feedmd.stages", "feedmd.store", "feedmd.delivery.deliver"},
    }
    assert layer_violations(graph) == [
        "feedmd.delivery.render imports feedmd.store.outputs: inside the store, not its interface",
        "feedmd.stages.scrape imports feedmd.sources.http: across, feedmd.stages and "
        "feedmd.sources",
        "feedmd.store.runs imports feedmd.stages.retry: up from feedmd.store to feedmd.stages",
    ]
    try:
        part_of("feedmd.newthing")
    except AssertionError as exc:
        assert "add it to LAYERS" in str(exc)
    else:
        raise AssertionError("a module in no layer must be refused")


def test_every_package_says_what_it_owns_and_what_it_may_import() -> None:
    for init in sorted(PACKAGE.rglob("__init__.py")):
        if init.parent == PACKAGE:
            continue  # the public API (tests/test_api.py)
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert len(doc.split()) >= 20 and "May import" in doc, init


# What doing I/O takes: the stages decide on plain data and never reach for these.
IO_MODULES = {"httpx", "asyncio", "socket", "urllib", "http", "sqlite3", "psycopg", "subprocess"}


def test_the_stages_do_no_io() -> None:
    offenders = []
    for name, path in modules():
        if name.startswith("feedmd.stages"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for target in imported(tree, name, path.name == "__init__.py"):
                if target.split(".")[0] in IO_MODULES:
                    offenders.append(f"{name} imports {target}")
    assert offenders == []
