"""Connect to the store, run transactions, apply migrations.

The store is one SQLite file in WAL mode with foreign keys on (the default), or a
PostgreSQL database named by a ``postgresql://`` URL (``dialect.py``). Migrations are the files
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
from feedmd.store.dialect import (
    POSTGRESQL,
    PgConnection,
    PgDatabase,
    backend_of,
    database_errors,
    dialect_of,
    sqlite_path,
    translate_ddl,
)
from feedmd.timeutil import iso

# How long a write waits for another writer (serve beside run, two runs' leases): a run's
# one transaction of items takes well under a second at 20,000 items (219k rows/s,
# NOTES.md), so 30 s only runs out when something is stuck.
BUSY_TIMEOUT_MS = 30_000
# Values bound per IN (...) query: far under SQLite's 32,766 variables, and small enough
# that one query's plan stays an index lookup per value.
CHUNK = 500

T = TypeVar("T")
# What the store modules execute SQL on: sqlite3's connection or its PostgreSQL twin.
Connection = sqlite3.Connection | PgConnection


@dataclass(frozen=True)
class Migration:
    """One migration file: its name (file stem) and SQL text, and the PostgreSQL text of
    ``migrations/postgresql/NAME.sql`` when the SQLite text cannot be translated
    (``dialect.translate_ddl``)."""

    name: str
    sql: str
    postgresql: str | None = None


def available_migrations(folder: Path | None = None) -> list[Migration]:
    """Return the migrations shipped with feedmd, in the order they apply."""
    folder = folder or data_dir("migrations")
    migrations = []
    for path in sorted(folder.glob("[0-9][0-9][0-9][0-9]_*.sql")):
        override = folder / POSTGRESQL / path.name
        postgresql = override.read_text(encoding="utf-8") if override.is_file() else None
        migrations.append(Migration(path.stem, path.read_text(encoding="utf-8"), postgresql))
    return migrations


Database = sqlite_utils.Database | PgDatabase


def connect(database: str | Path) -> Database:
    """Open the store without migrating it: a ``postgresql://`` URL on PostgreSQL, else
    the SQLite file at the path (or ``sqlite:///path``), created if needed."""
    if backend_of(str(database)) == POSTGRESQL:
        return PgDatabase(str(database))
    path = Path(sqlite_path(str(database)))
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
# window (~3 GB, ~4 GB with the title pairs of 0017) are written in random key order, so
# a small cache re-reads and rewrites the same pages for every transaction. Writing 20,000
# items onto a 300k-item store: 1.30 ms CPU an item with 1 GB, 1.10 ms with 4 GB (one
# sample each on a loaded machine, 2026-12-01). Only the seeder uses it, on a machine
# with room for it.
BULK_CACHE_KIB = 4_194_304


def bulk_load_mode(conn: Connection) -> None:
    """Settings for loading a new store that nothing else reads until it is complete (a
    crash loses it, and the loader starts again): no sync at commit, a large page cache.
    SQLite only: PostgreSQL's durability and cache are the server's."""
    if isinstance(conn, PgConnection):
        return
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")


# Page cache of a bulk load's side files (``bulk_load.py``): the second process's sort of
# 41M staged rows at 1M items keeps its runs in memory (with the store's 4 GB, the two
# processes then hold ~6 GB at most on a 24 GB machine).
SIDE_CACHE_KIB = 2_097_152


def attach(conn: sqlite3.Connection, path: Path, name: str) -> None:
    """Attach a bulk load's side file as schema ``name``, with the bulk settings."""
    conn.execute("ATTACH DATABASE ? AS " + name, (str(path),))
    _side_settings(conn, name)


def detach(conn: sqlite3.Connection, name: str) -> None:
    """Detach a side file attached by ``attach``."""
    conn.execute("DETACH DATABASE " + name)


def scratch_connection(path: Path) -> sqlite3.Connection:
    """A new SQLite file for a bulk load's second process, with the bulk settings."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    _side_settings(conn, "main")
    return conn


def _side_settings(conn: sqlite3.Connection, schema: str) -> None:
    """A side file's settings: no sync, the rollback journal in memory (the file is thrown
    away if the load dies), a large page cache."""
    conn.execute(f"PRAGMA {schema}.synchronous = OFF")
    conn.execute(f"PRAGMA {schema}.journal_mode = MEMORY")
    conn.execute(f"PRAGMA {schema}.cache_size = -{SIDE_CACHE_KIB}")


def open_database(database: str | Path, migrations: list[Migration] | None = None) -> Database:
    """Open the database and apply every pending migration; return it."""
    db = connect(database)
    try:
        apply_migrations(db, migrations)
    except BaseException:
        db.close()  # the caller gets no handle to close
        raise
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


def inserted_id(conn: Connection, sql: str, params: Sequence[object]) -> int | None:
    """Run an INSERT with ``RETURNING id`` appended; the new row's id, or None when the
    insert did nothing (``ON CONFLICT DO NOTHING``). Portable where ``lastrowid`` is not,
    and read to the end so no statement stays open in the transaction."""
    rows = conn.execute(f"{sql} RETURNING id", params).fetchall()
    return int(rows[0][0]) if rows else None


def has_table(conn: Connection, name: str) -> bool:
    """Whether the store has this table (a store opened before the migration that adds it)."""
    if isinstance(conn, PgConnection):
        sql = "SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = ?"
    else:
        sql = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
    return conn.execute(sql, (name,)).fetchone() is not None


class Connected:
    """The one connection the parts of a ``Store`` share; private to ``feedmd/store/``."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._conn: Connection = db.conn

    @property
    def backend(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return dialect_of(self._conn)

    @property
    def path(self) -> str:
        """The store's file path ('' for an in-memory store), or its PostgreSQL URL."""
        if isinstance(self._conn, PgConnection):
            return self._conn.url
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
def transaction(db: Database) -> Iterator[Connection]:
    """Run the block in one IMMEDIATE transaction: all of it is committed or none of it
    (on PostgreSQL: under the store's writer lock, ``dialect.PgConnection``)."""
    conn = db.conn
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")


def _ensure_migrations_table(db: Database) -> None:
    with transaction(db) as conn:  # serialised: two processes may create it together
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
        )


def applied_migrations(db: Database) -> dict[str, str]:
    """Return {migration name: applied_at} for the migrations already in this store."""
    _ensure_migrations_table(db)
    return dict(db.conn.execute("SELECT name, applied_at FROM schema_migrations"))


def _run_migration(conn: Connection, migration: Migration) -> None:
    """Execute one migration's statements on this connection's backend."""
    if isinstance(conn, PgConnection):
        script = migration.postgresql
        if script is None:
            try:
                script = translate_ddl(migration.sql, migration.name)
            except ValueError as exc:
                raise MigrationError(str(exc)) from None
        conn.execute_script(script)
        return
    for statement in split_statements(migration.sql):
        conn.execute(statement)


def apply_migrations(db: Database, migrations: list[Migration] | None = None) -> list[str]:
    """Apply pending migrations in order, each in its own transaction; return their names."""
    migrations = available_migrations() if migrations is None else migrations
    try:
        done = applied_migrations(db)
    except database_errors() as exc:
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
                _run_migration(conn, migration)
                conn.execute(
                    "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
                    (migration.name, iso(datetime.now().astimezone())),
                )
        except database_errors() as exc:
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


# Bookkeeping of each backend, not data of the store.
_NOT_DATA = {"schema_migrations", "sqlite_sequence"}


def table_order() -> list[str]:
    """The store's tables, each after every table it references: the shipped migrations'
    foreign keys, read from a scratch in-memory SQLite store (so a table a new migration
    adds is placed without a list to keep up to date). For copying a store."""
    db = open_database(":memory:")
    try:
        conn = db.conn
        names = [
            row[0]
            for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if row[0] not in _NOT_DATA
        ]
        needs = {
            name: {row[2] for row in conn.execute(f"PRAGMA foreign_key_list({name})")} - {name}
            for name in sorted(names)
        }
    finally:
        db.close()
    order: list[str] = []
    while len(order) < len(needs):
        ready = [name for name in needs if name not in order and needs[name] <= set(order)]
        if not ready:
            raise StoreError(f"the schema's foreign keys form a cycle among {sorted(needs)}")
        order += ready
    return order
