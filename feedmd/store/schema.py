"""Connect to the SQLite store, run transactions, apply migrations.

The store is one SQLite file in WAL mode with foreign keys on. Migrations are the files
``migrations/NNNN_name.sql``, applied in order when the store is opened, each inside one
explicit transaction together with its row in ``schema_migrations`` (``executescript``
would commit first, NOTES.md), so a failing migration leaves nothing half-applied.

SQL lives in ``feedmd/store/`` only (tests/test_layers.py checks it), so another backend can
replace this package without touching the deciding stages.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TypeVar

import sqlite_utils

from feedmd.errors import MigrationError, StoreError
from feedmd.resources import data_dir
from feedmd.timeutil import iso

# How long a write waits for another writer (serve beside run, two runs' leases): a run's
# one transaction of items takes well under a second at 20,000 items (219k rows/s,
# NOTES.md), so 30 s only runs out when something is stuck.
BUSY_TIMEOUT_MS = 30_000
# Values bound per IN (...) query: far under SQLite's 32,766 variables, and small enough
# that one query's plan stays an index lookup per value.
CHUNK = 500

T = TypeVar("T")


@dataclass(frozen=True)
class Migration:
    """One migration file: its name (file stem) and SQL text."""

    name: str
    sql: str


def available_migrations(folder: Path | None = None) -> list[Migration]:
    """Return the migrations shipped with feedmd, in the order they apply."""
    folder = folder or data_dir("migrations")
    return [
        Migration(path.stem, path.read_text(encoding="utf-8"))
        for path in sorted(folder.glob("[0-9][0-9][0-9][0-9]_*.sql"))
    ]


def connect(path: str | Path) -> sqlite_utils.Database:
    """Open (creating if needed) the SQLite file without migrating it."""
    path = Path(path)
    if str(path) != ":memory:" and not path.parent.exists():
        raise StoreError(f"{path}: the folder {path.parent} does not exist")
    try:
        conn = sqlite3.connect(str(path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        _enable_wal(conn)
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: cannot open as an SQLite database: {exc}") from None
    return sqlite_utils.Database(conn)


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL. Switching a new file needs it exclusively, and SQLite answers
    "database is locked" at once (no busy wait) while another process is opening the same
    new file (two runs started together): retry for the busy timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


# Page cache of a bulk load (the window benchmark's seeding): the key indexes of a 1M-item
# window (~3 GB) are written in random key order, so a small cache re-reads and rewrites
# the same pages for every transaction.
BULK_CACHE_KIB = 1_048_576


def bulk_load_mode(conn: sqlite3.Connection) -> None:
    """Settings for loading a new store that nothing else reads until it is complete (a
    crash loses it, and the loader starts again): no sync at commit, a large page cache."""
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")


def open_database(
    path: str | Path, migrations: list[Migration] | None = None
) -> sqlite_utils.Database:
    """Open the database and apply every pending migration; return it."""
    db = connect(path)
    apply_migrations(db, migrations)
    return db


def chunks(values: Sequence[T], size: int = CHUNK) -> Iterable[Sequence[T]]:
    """``values`` in slices of at most ``size``: one IN (...) query each."""
    for start in range(0, len(values), size):
        yield values[start : start + size]


def to_signed64(value: int) -> int:
    """Unsigned 64-bit -> signed, for SQLite INTEGER (NOTES.md: 2**63 overflows)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def to_unsigned64(value: int) -> int:
    """Signed 64-bit (as stored) -> unsigned."""
    return value + (1 << 64) if value < 0 else value


class Connected:
    """The one connection the parts of a ``Store`` share; private to ``feedmd/store/``."""

    def __init__(self, db: sqlite_utils.Database) -> None:
        self._db = db
        self._conn: sqlite3.Connection = db.conn

    @property
    def path(self) -> str:
        """The store's file path ('' for an in-memory store)."""
        row = self._conn.execute("PRAGMA database_list").fetchone()
        return str(row[2] or "")

    def close(self) -> None:
        """Close the connection; the store cannot be used afterwards."""
        self._db.close()

    def applied_migrations(self) -> dict[str, str]:
        """{migration name: applied_at} of the migrations already in this store."""
        return applied_migrations(self._db)

    def apply_migrations(self, migrations: list[Migration] | None = None) -> list[str]:
        """Apply the pending migrations in order; return their names."""
        return apply_migrations(self._db, migrations)

    def _org_id(self, name: str) -> int:
        row = self._conn.execute("SELECT id FROM orgs WHERE name = ?", (name,)).fetchone()
        return int(row[0])


@contextmanager
def transaction(db: sqlite_utils.Database) -> Iterator[sqlite3.Connection]:
    """Run the block in one IMMEDIATE transaction: all of it is committed or none of it."""
    conn = db.conn
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")


def _ensure_migrations_table(db: sqlite_utils.Database) -> None:
    db.conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
    )


def applied_migrations(db: sqlite_utils.Database) -> dict[str, str]:
    """Return {migration name: applied_at} for the migrations already in this store."""
    _ensure_migrations_table(db)
    return dict(db.conn.execute("SELECT name, applied_at FROM schema_migrations"))


def apply_migrations(
    db: sqlite_utils.Database, migrations: list[Migration] | None = None
) -> list[str]:
    """Apply pending migrations in order, each in its own transaction; return their names."""
    migrations = available_migrations() if migrations is None else migrations
    try:
        done = applied_migrations(db)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"cannot read the store: {exc}") from None
    applied: list[str] = []
    for migration in migrations:
        if migration.name in done:
            continue
        try:
            with transaction(db) as conn:
                # another process may have applied it while this one waited for the lock
                if conn.execute(
                    "SELECT 1 FROM schema_migrations WHERE name = ?", (migration.name,)
                ).fetchone():
                    continue
                for statement in split_statements(migration.sql):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
                    (migration.name, iso(datetime.now().astimezone())),
                )
        except sqlite3.DatabaseError as exc:
            raise MigrationError(
                f"migration {migration.name} failed and was rolled back: {exc}"
            ) from None
        applied.append(migration.name)
    return applied


def split_statements(sql: str) -> list[str]:
    """Split a migration script into complete SQL statements (comments kept inside)."""
    statements: list[str] = []
    current = ""
    for line in sql.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            if current.strip().strip(";").strip() and not _only_comments(current):
                statements.append(current.strip())
            current = ""
    if current.strip() and not _only_comments(current):
        raise MigrationError(f"unterminated SQL statement: {current.strip()[:80]!r}")
    return statements


def _only_comments(text: str) -> bool:
    return all(not line.strip() or line.strip().startswith("--") for line in text.splitlines())
