"""The bulk load of a new SQLite store (``Seeding.bulk_load_mode``): key rows staged in a
side file, sorted into the key tables at the end on both cores.

Inserted as they come, a load's key rows land on random pages of indexes larger than the
cache (the writer's CPU an item doubled from a 10k-item store to a 300k one,
benchmarks/README.md). So a bulk load:

- writes the key rows of ``title_keys``, ``title_pairs`` and ``body_keys`` to tables of a
  side file (``<store>.staging``) in arrival order, and ``body_digests`` straight to its
  table (its key order is publication order, the order a loader writes in);
- drops the secondary indexes of ``items`` and ``bodies`` (random keys such as URL hashes
  and entry ids) and builds them again at the end, each in one sorted pass;
- at ``finish``, sorts ``body_keys`` (57% of the key rows of a seeded window) into a
  scratch file in a second process while this one sorts the other two tables into the
  store, then copies the sorted table in whole (SQLite's transfer of an ``INSERT INTO t
  SELECT * FROM other.t`` into an empty table of the same shape copies records in order:
  4.1M rows of a 100k-item window in 1.1 s, against 6.2 s to sort and insert them).

Sorting a 1M-item window's 72M key rows on one core took ~4 minutes while the other core
was idle (the whole seeding then took 16.0 minutes, over the 15 the window issue allows);
on both cores the finish took ~1.5 minutes (benchmarks/README.md "Seeding").

The side files sit beside the store and are removed at ``finish``; a load that dies leaves
them and a store that is not complete (the benchmark loads under a temporary name and
starts again).
"""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

from feedmd.errors import StoreError
from feedmd.store.schema import attach, detach, scratch_connection

# The key tables staged, with their key order (their primary keys). body_digests is not
# staged: its key (org, publication time, item) is the order items are loaded in.
STAGED = {
    "title_keys": "org_id, kind, key, published_at, item_id",
    "title_pairs": "org_id, key, published_at, item_id",
    "body_keys": "org_id, key, published_at, item_id",
}
# The staged table sorted by the second process: the largest (41M of 72M rows at 1M
# items: about as long to sort as the other two together, 6.2 s against 5.8 s at 100k).
APART = "body_keys"
# Tables whose secondary indexes are built at the end rather than row by row.
REINDEXED = ("items", "bodies")
STAGING = "staging"
SCRATCH = "scratch"


def staging_path(store: Path) -> Path:
    """The side file holding a load's staged key rows."""
    return store.with_name(store.name + ".staging")


def scratch_path(store: Path) -> Path:
    """The scratch file the second process sorts ``APART`` into."""
    return store.with_name(store.name + ".sorted")


def begin(conn: sqlite3.Connection, store: Path) -> list[str]:
    """Attach a new staging file with an empty copy of each staged table, drop the
    secondary indexes of ``REINDEXED``; return their ``CREATE INDEX`` statements."""
    for leftover in (staging_path(store), scratch_path(store)):
        leftover.unlink(missing_ok=True)
    attach(conn, staging_path(store), STAGING)
    for table in STAGED:
        conn.execute(f"CREATE TABLE {STAGING}.staged_{table} AS SELECT * FROM {table} WHERE 0 = 1")
    marks = ",".join("?" * len(REINDEXED))
    indexes = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
        f" AND tbl_name IN ({marks}) ORDER BY name",
        REINDEXED,
    ).fetchall()
    for name, _ in indexes:
        conn.execute(f"DROP INDEX {name}")
    return [str(sql) for _, sql in indexes]


def stage(conn: sqlite3.Connection, table: str, rows: list[tuple[object, ...]]) -> None:
    """Append key rows to the staged copy of ``table``."""
    if rows:
        marks = ",".join("?" * len(rows[0]))
        conn.executemany(f"INSERT INTO {STAGING}.staged_{table} VALUES ({marks})", rows)


def finish(conn: sqlite3.Connection, store: Path, indexes: list[str]) -> None:
    """Sort the staged rows into the key tables (``APART`` in a second process), build the
    dropped indexes, remove the side files. Runs its own transactions."""
    create = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (APART,)
    ).fetchone()[0]
    # the platform's default start method: fork on Linux (no re-import of the caller's
    # main module; the child opens its own connections and never uses this one)
    apart = multiprocessing.get_context().Process(
        target=sort_apart,
        args=(str(staging_path(store)), str(scratch_path(store)), str(create)),
        name="feedmd-bulk-sort",
    )
    apart.start()
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            for table, order in STAGED.items():
                if table != APART:
                    conn.execute(
                        f"INSERT INTO {table} SELECT * FROM {STAGING}.staged_{table}"
                        f" ORDER BY {order}"
                    )
            for sql in indexes:
                conn.execute(sql)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    finally:
        apart.join()
    if apart.exitcode != 0:
        raise StoreError(f"sorting the staged {APART} rows failed (exit code {apart.exitcode})")
    detach(conn, STAGING)
    attach(conn, scratch_path(store), SCRATCH)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(f"INSERT INTO {APART} SELECT * FROM {SCRATCH}.{APART}")
    conn.execute("COMMIT")
    detach(conn, SCRATCH)
    staging_path(store).unlink()
    scratch_path(store).unlink()


def sort_apart(staging: str, scratch: str, create: str) -> None:
    """In the second process: ``APART``'s staged rows, sorted, into a new table of the
    same definition in the scratch file (the transfer into the store needs that)."""
    conn = scratch_connection(Path(scratch))
    try:
        conn.execute(create)
        attach(conn, Path(staging), STAGING)
        conn.execute("BEGIN")
        conn.execute(
            f"INSERT INTO {APART} SELECT * FROM {STAGING}.staged_{APART} ORDER BY {STAGED[APART]}"
        )
        conn.execute("COMMIT")
    finally:
        conn.close()
