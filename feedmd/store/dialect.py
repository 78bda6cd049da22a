"""The two backends behind one connection interface: SQLite (the default) and PostgreSQL.

The store modules write one SQL text, in the portable subset both servers run (``?``
placeholders, ``ON CONFLICT``, ``RETURNING id``, ``COALESCE``, ISO text timestamps
compared as text). On SQLite the text runs as written on a ``sqlite3`` connection. On
PostgreSQL ``PgConnection`` gives the same surface (``execute``, ``executemany``,
``in_transaction``, cursors with ``fetchone`` / ``fetchall`` / iteration) and translates on
the way:

- ``?`` -> ``%s`` outside string literals, ``%`` -> ``%%`` everywhere (psycopg's format);
  ``?1`` (SQLite's numbered form) -> ``%s`` with the parameters reordered; SQLite's
  planner hints (``INDEXED BY``) dropped; ``IN ()`` -> an empty subquery;
- ``BEGIN IMMEDIATE`` (a writer: SQLite holds one writer at a time) -> ``BEGIN`` plus a
  transaction-level advisory lock, so PostgreSQL serialises the store's writers exactly as
  SQLite does (a lease is taken, a run persisted, a message claimed by one writer at a
  time); ``BEGIN`` (a reader's snapshot) -> ``BEGIN ISOLATION LEVEL REPEATABLE READ``;
- parameters: ``bool`` -> ``int`` (SQLite stores booleans as 0 / 1 in INTEGER columns);
- results: ``numeric`` (what ``SUM`` of BIGINT returns) -> ``int`` when whole, else
  ``float``, as SQLite returns them.

Migrations are written once in SQLite's DDL; ``translate_ddl`` maps it to PostgreSQL
(INTEGER -> BIGINT, REAL -> DOUBLE PRECISION, BLOB -> BYTEA, ``INTEGER PRIMARY KEY`` ->
an identity key, ``WITHOUT ROWID`` dropped, TEXT -> ``TEXT COLLATE "C"``: SQLite compares
and orders text by its bytes, and so does the C collation, whatever the database's locale,
so names sort and ISO timestamps compare the same on both). A migration that cannot be
translated (triggers, SQLite functions) has its PostgreSQL text in
``migrations/postgresql/``.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from typing import Any

SQLITE = "sqlite"
POSTGRESQL = "postgresql"
_PG_SCHEMES = ("postgresql://", "postgres://")
_SQLITE_SCHEME = "sqlite:///"
# The advisory lock every PostgreSQL writer takes: the store's one-writer-at-a-time rule
# (SQLite's BEGIN IMMEDIATE). Any constant works; this one spells "feedmd" in ASCII.
WRITER_LOCK = 0x666565646D64
# How long a PostgreSQL statement waits for a lock: SQLite's busy timeout (schema.py).
LOCK_TIMEOUT_MS = 30_000


def backend_of(database: str) -> str:
    """``postgresql`` for a ``postgresql://`` (or ``postgres://``) URL, else ``sqlite``."""
    return POSTGRESQL if str(database).startswith(_PG_SCHEMES) else SQLITE


def sqlite_path(database: str) -> str:
    """The file of a SQLite database given as a path or as a URL, as SQLAlchemy writes
    them: ``sqlite:///feedmd.db`` (relative), ``sqlite:////var/lib/feedmd/feedmd.db``."""
    text = str(database)
    return text[len(_SQLITE_SCHEME) :] if text.startswith(_SQLITE_SCHEME) else text


def database_errors() -> tuple[type[BaseException], ...]:
    """The exception classes of both drivers (psycopg only when it is installed)."""
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is a dependency
        return (sqlite3.Error,)
    return (sqlite3.Error, psycopg.Error)


def dialect_of(conn: Any) -> str:
    """The backend of a connection the store holds."""
    return POSTGRESQL if isinstance(conn, PgConnection) else SQLITE


# ---- SQL text ----------------------------------------------------------------------------

_TOKENS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/|[^'\"/-]+|.", re.S)


def _segments(sql: str) -> Iterator[tuple[str, str]]:
    """(kind, text) pieces of ``sql``: ``literal`` (quoted), ``comment`` or ``code``."""
    for match in _TOKENS.finditer(sql):
        text = match.group(0)
        if text[0] in "'\"":
            yield "literal", text
        elif text.startswith(("--", "/*")):
            yield "comment", text
        else:
            yield "code", text


_MARK = re.compile(r"\?(\d*)")
# SQLite's planner hints (``INDEXED BY name``): PostgreSQL plans on its own
_HINT = re.compile(r"\s+(?:INDEXED\s+BY\s+\w+|NOT\s+INDEXED)\b", re.I)
# SQLite takes an empty list (``IN ()``), PostgreSQL an empty subquery with the same truth
_EMPTY_IN = re.compile(r"\bIN\s*\(\s*\)", re.I)


@lru_cache(maxsize=2048)
def translate(sql: str) -> tuple[str, tuple[int, ...] | None]:
    """A statement in the portable subset, in psycopg's placeholder format, and for
    numbered placeholders (``?1``, SQLite's) the parameter index of each ``%s`` in order
    (None for plain ``?``)."""
    out: list[str] = []
    order: list[int] = []
    numbered = False

    def mark(match: re.Match[str]) -> str:
        nonlocal numbered
        if match.group(1):
            numbered = True
            order.append(int(match.group(1)) - 1)
        else:
            order.append(len(order))
        return "%s"

    for kind, text in _segments(sql):
        text = text.replace("%", "%%")
        if kind == "code":
            text = _EMPTY_IN.sub("IN (SELECT NULL WHERE FALSE)", _HINT.sub("", text))
            text = _MARK.sub(mark, text)
        out.append(text)
    return "".join(out), tuple(order) if numbered else None


_DDL_RULES: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"\bINTEGER\s+PRIMARY\s+KEY(\s+AUTOINCREMENT)?(?!\s+REFERENCES)", re.I),
        "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
    ),
    (re.compile(r"\bINTEGER\b", re.I), "BIGINT"),
    (re.compile(r"(?<!AS )\bTEXT\b", re.I), 'TEXT COLLATE "C"'),
    (re.compile(r"\bREAL\b", re.I), "DOUBLE PRECISION"),
    (re.compile(r"\bBLOB\b", re.I), "BYTEA"),
    (re.compile(r"\)\s*WITHOUT\s+ROWID", re.I), ")"),
    (re.compile(r"\bINSERT\s+OR\s+IGNORE\b([^;]*)", re.I), r"INSERT\1 ON CONFLICT DO NOTHING"),
]
_HEX_BLOB = re.compile(r"\b[xX]$")
_SQLITE_ONLY = re.compile(
    r"\b(CREATE\s+TRIGGER|json_extract|json_set|json_each|julianday|strftime|group_concat"
    r"|GLOB|INSERT\s+OR\s+REPLACE|PRAGMA|AUTOINCREMENT\s+\w)\b",
    re.I,
)
_LITERAL_MARK = re.compile("\x00(\\d+)\x00")


def translate_ddl(sql: str, name: str = "") -> str:
    """A migration script written for SQLite, as PostgreSQL runs it.

    Comments are dropped; the rules apply outside string literals. Raises ``ValueError``
    for SQLite-only text the rules cannot map (the migration then needs its own file in
    ``migrations/postgresql/``)."""
    code: list[str] = []
    literals: list[str] = []
    for kind, text in _segments(sql):
        if kind == "comment":
            continue
        if kind == "code":
            code.append(text)
            continue
        if text.startswith("'") and code and _HEX_BLOB.search(code[-1]):
            code[-1] = _HEX_BLOB.sub("", code[-1])
            text = f"'\\x{text[1:-1]}'::bytea"
        code.append(f"\x00{len(literals)}\x00")
        literals.append(text)
    masked = "".join(code)
    found = _SQLITE_ONLY.search(masked)
    if found:
        raise ValueError(
            f"migration {name}: {found.group(0)!r} has no PostgreSQL translation;"
            f" add migrations/postgresql/{name}.sql"
        )
    for pattern, replacement in _DDL_RULES:
        masked = pattern.sub(replacement, masked)
    return _LITERAL_MARK.sub(lambda match: literals[int(match.group(1))], masked)


# ---- PostgreSQL connection ----------------------------------------------------------------


def _plain(value: Any) -> Any:
    return int(value) if isinstance(value, bool) else value


def _params(params: Sequence[Any] | None, order: tuple[int, ...] | None) -> tuple[Any, ...]:
    values = tuple(_plain(value) for value in (params or ()))
    return values if order is None else tuple(values[index] for index in order)


class PgCursor:
    """A psycopg cursor as the store modules use a sqlite3 cursor."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor

    def fetchone(self) -> Any:
        """The next row, or None."""
        return self._cursor.fetchone() if self._cursor.description is not None else None

    def fetchall(self) -> list[Any]:
        """The remaining rows."""
        return self._cursor.fetchall() if self._cursor.description is not None else []

    def fetchmany(self, size: int = 1) -> list[Any]:
        """Up to ``size`` more rows."""
        return self._cursor.fetchmany(size) if self._cursor.description is not None else []

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cursor) if self._cursor.description is not None else iter(())

    @property
    def rowcount(self) -> int:
        """Rows changed by the statement (as sqlite3's ``rowcount``)."""
        return max(int(self._cursor.rowcount), 0)

    @property
    def description(self) -> Any:
        """Column descriptions of the result."""
        return self._cursor.description


class PgConnection:
    """One psycopg connection with the sqlite3 connection surface the store uses."""

    def __init__(self, url: str) -> None:
        import psycopg

        self.url = url
        try:
            self._raw = psycopg.connect(
                url, autocommit=True, options=f"-c lock_timeout={LOCK_TIMEOUT_MS}"
            )
        except psycopg.Error as exc:
            from feedmd.errors import StoreError

            raise StoreError(f"{redact(url)}: cannot connect to PostgreSQL: {exc}") from None
        _register_loaders(self._raw)

    @property
    def in_transaction(self) -> bool:
        """True inside an explicit BEGIN ... COMMIT."""
        from psycopg.pq import TransactionStatus

        return self._raw.info.transaction_status != TransactionStatus.IDLE

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> PgCursor:
        """Run one statement (``?`` placeholders) and return its cursor."""
        cursor = self._raw.cursor()
        head = sql.strip().upper()
        if head == "BEGIN IMMEDIATE":
            cursor.execute("BEGIN")
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", (WRITER_LOCK,))
            return PgCursor(cursor)
        if head == "BEGIN":
            cursor.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            return PgCursor(cursor)
        text, order = translate(sql)
        cursor.execute(text, _params(params, order))
        return PgCursor(cursor)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> PgCursor:
        """Run one statement once per row of parameters."""
        cursor = self._raw.cursor()
        text, order = translate(sql)
        batch = [_params(row, order) for row in rows]
        if batch:
            cursor.executemany(text, batch)
        return PgCursor(cursor)

    def __enter__(self) -> PgConnection:
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        """As sqlite3's ``with conn:``: commit an open transaction, or roll it back."""
        if self.in_transaction:
            self._raw.execute("ROLLBACK" if kind else "COMMIT")

    def execute_script(self, script: str) -> None:
        """Run a whole script (several statements, no parameters) as one call."""
        self._raw.execute(script.encode("utf-8"))

    def close(self) -> None:
        """Close the connection."""
        self._raw.close()


class PgDatabase:
    """What ``Connected`` holds for PostgreSQL: the connection (``conn``), closable, and
    the small part of ``sqlite_utils.Database`` read by hand (``execute``, ``query``)."""

    def __init__(self, url: str) -> None:
        self.conn = PgConnection(url)

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> PgCursor:
        """Run one statement on the connection."""
        return self.conn.execute(sql, params)

    def query(self, sql: str, params: Sequence[Any] | None = None) -> Iterator[dict[str, Any]]:
        """The rows of a query as {column: value} dicts."""
        cursor = self.conn.execute(sql, params)
        names = [column.name for column in cursor.description or ()]
        for row in cursor:
            yield dict(zip(names, row, strict=True))

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


def _register_loaders(raw: Any) -> None:
    """numeric (SUM of BIGINT, AVG) -> int when whole, else float: what SQLite returns."""
    from psycopg.adapt import Loader

    class _NumberLoader(Loader):
        def load(self, data: Any) -> Any:
            text = bytes(data).decode("ascii")
            if "." in text or "e" in text.lower() or text in ("NaN", "Infinity", "-Infinity"):
                return float(text)
            return int(text)

    raw.adapters.register_loader("numeric", _NumberLoader)


def redact(url: str) -> str:
    """A database name as messages show it: a URL without its password."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)
