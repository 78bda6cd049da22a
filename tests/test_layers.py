"""The layers of feedmd, checked on the source (like tests/test_api.py guards the public API).

- SQL and the SQLite modules live in ``feedmd/store/`` only: a schema change is one
  migration plus a change inside that folder.
- No import cycle among feedmd's modules, counting imports inside functions (they hide a
  cycle, they do not break it).
- No module grows past ``MAX_LINES``: small modules with one job.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "feedmd"
STORE = PACKAGE / "store"
MAX_LINES = 500
# Modules allowed past MAX_LINES, each with its reason (the last assertion of the size test
# keeps the list shrinking).
OVERSIZED: dict[str, int] = {
    # one frozen dataclass holds every setting, each field with its help text and the
    # measurement behind its default: the one list users read (feedmd settings); the code
    # around it (coercion, layers) lives in setting_values.py and config.py
    "feedmd/settings.py": 565,  # + the two worker settings (claim expiry, poll)
}
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
            yield prefix
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
    over = {name: lines for name, lines in sizes.items() if lines > OVERSIZED.get(name, MAX_LINES)}
    assert over == {}
    # an allowance no longer needed is removed, so the list only shrinks
    assert all(sizes.get(name, 0) > MAX_LINES for name in OVERSIZED)
