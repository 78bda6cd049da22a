"""Copy a whole store from one backend to the other (``feedmd store copy SRC DST``).

Every table is copied row for row with its ids, in an order where every referenced row is
there before the rows that reference it (worked out from the schema's foreign keys, so a
table a later migration adds is copied without a change here). Two columns point into
their own table (an item's match, a run's recoverer): they are written after all the rows
of that table. The triggers of the destination fire while items are copied; what they
wrote (the visibility log, the list of items whose keys are due) is replaced by the
source's rows afterwards, so the copy holds exactly what the source held. On PostgreSQL
the identity sequences are then moved past the copied ids.

The destination must be empty (migrated, no rows): copying into a store that has data
would mix two histories. Both stores must be at the same migration.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from feedmd.errors import StoreError
from feedmd.store.dialect import POSTGRESQL, database_errors, dialect_of, redact
from feedmd.store.keys import SIMHASH
from feedmd.store.schema import (
    Connection,
    available_migrations,
    connect,
    open_database,
    table_order,
    transaction,
)

# Rows read and written per batch: bounded memory whatever the store's size (an item row
# with its Markdown is ~11 KB, NOTES.md, so a batch is ~11 MB at most).
BATCH = 1000
# Columns that reference their own table: written once every row of the table is there.
SELF_REFERENCES = {"items": ("matched_item_id",), "runs": ("recovered_by",)}
# Tables the triggers of the destination write while items are copied: emptied before
# the source's rows are copied into them.
TRIGGER_WRITTEN = ("visibility", "window_keys_dirty")


@dataclass(frozen=True)
class CopyResult:
    """Rows copied per table, in the order they were copied."""

    rows: dict[str, int]


def copy_store(source: str | Path, target: str | Path) -> CopyResult:
    """Copy every row of the store at ``source`` into the empty store at ``target``
    (created and migrated if needed); return the rows copied per table."""
    src = connect(source)
    try:
        _check_migrated(src.conn, str(source))
        dst = open_database(target)
        try:
            _check_empty(dst.conn, str(target))
            try:
                with transaction(dst) as conn:
                    rows = _copy_all(src.conn, conn)
            except database_errors() as exc:
                raise StoreError(f"the copy failed and was rolled back: {exc}") from None
        finally:
            dst.close()
    finally:
        src.close()
    return CopyResult(rows)


def _copy_all(src: Connection, dst: Connection) -> dict[str, int]:
    order = table_order()
    rows = {t: _copy_table(src, dst, t) for t in order if t not in TRIGGER_WRITTEN}
    for table in TRIGGER_WRITTEN:  # after the items whose triggers wrote into them
        dst.execute(f"DELETE FROM {table}")
        rows[table] = _copy_table(src, dst, table)
    for table, columns in SELF_REFERENCES.items():
        _copy_self_references(src, dst, table, columns)
    if dialect_of(dst) == POSTGRESQL:
        _reset_sequences(dst)
    return {table: rows[table] for table in order}


def table_counts(database: str | Path) -> dict[str, int]:
    """Rows per table of a store (what a copy is checked by)."""
    db = connect(database)
    try:
        return {
            table: int(db.conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
            for table in table_order()
        }
    finally:
        db.close()


def _check_migrated(conn: Connection, name: str) -> None:
    applied = {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}
    pending = [m.name for m in available_migrations() if m.name not in applied]
    if pending:
        raise StoreError(
            f"{redact(name)}: the source store lacks migrations {', '.join(pending)};"
            " run `feedmd migrate` on it first"
        )


def _check_empty(conn: Connection, name: str) -> None:
    for table in table_order():
        (count,) = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()
        if count:
            raise StoreError(
                f"{redact(name)} is not empty ({table} has {count} rows): copy into a new, empty"
                " database, so that two histories are never mixed"
            )


def _columns(conn: Connection, table: str) -> list[str]:
    cursor = conn.execute(f"SELECT * FROM {table} WHERE 1 = 0")
    names = [column[0] for column in cursor.description or ()]
    cursor.fetchall()
    return names


def _copy_table(src: Connection, dst: Connection, table: str) -> int:
    columns = _columns(src, table)
    later = SELF_REFERENCES.get(table, ())
    marks = ", ".join("?" * len(columns))
    insert = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"
    order = "id" if "id" in columns else ", ".join(columns[:1])
    cursor = src.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {order}")
    fix = _converter(table, columns, dialect_of(dst), later)
    copied = 0
    while True:
        batch = cursor.fetchmany(BATCH)
        if not batch:
            return copied
        dst.executemany(insert, [fix(row) for row in batch])
        copied += len(batch)


def _converter(table: str, columns: list[str], target: str, nulled: Iterable[str]):  # type: ignore[no-untyped-def]
    """Per row: self references written as NULL (set afterwards), a title key as the
    target backend stores it (text on PostgreSQL; on SQLite a simhash block is an
    integer), bytes from a memoryview."""
    nulls = {columns.index(name) for name in nulled}
    key = columns.index("key") if table == "title_keys" else None
    kind = columns.index("kind") if table == "title_keys" else None

    def fix(row: tuple[object, ...]) -> tuple[object, ...]:
        values = [
            None if index in nulls else bytes(v) if isinstance(v, memoryview) else v
            for index, v in enumerate(row)
        ]
        if key is not None and kind is not None:
            if target == POSTGRESQL:
                values[key] = str(values[key])
            elif values[kind] in SIMHASH:
                values[key] = int(str(values[key]))
        return tuple(values)

    return fix


def _copy_self_references(
    src: Connection, dst: Connection, table: str, columns: tuple[str, ...]
) -> None:
    for column in columns:
        rows = src.execute(
            f"SELECT {column}, id FROM {table} WHERE {column} IS NOT NULL ORDER BY id"
        ).fetchall()
        dst.executemany(f"UPDATE {table} SET {column} = ? WHERE id = ?", rows)


def _reset_sequences(conn: Connection) -> None:
    """Move each identity sequence past the copied ids (PostgreSQL)."""
    identities = conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND is_identity = 'YES'"
    ).fetchall()
    for table, column in identities:
        conn.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'),"
            f" COALESCE(MAX({column}), 0) + 1, false) FROM {table}"
        )
