"""Stores on disk as the tests read them: a private copy, a demo item's id, a raw query,
and the output of a successful ``feedmd export``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from click.testing import CliRunner

from feedmd.cli.main import main
from feedmd.store import open_store
from feedmd.store.schema import connect


def copy_db(source: Path, target: Path) -> Path:
    """A private copy of a store (SQLite's backup API: consistent, WAL included)."""
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    return target


def item_id(db_path: Path | str, publisher: str, title_start: str) -> int:
    """The id of the demo item of ``publisher`` whose title starts with ``title_start``."""
    db = open_store(db_path)
    try:
        row = db._conn.execute(
            "SELECT id FROM items WHERE publisher = ? AND title_raw LIKE ?",
            (publisher, f"{title_start}%"),
        ).fetchone()
    finally:
        db.close()
    assert row is not None, (publisher, title_start)
    return int(row[0])


def query(db: Path | str, sql: str, *params: object) -> list[tuple[object, ...]]:
    store = connect(db)
    try:
        return [tuple(row) for row in store.conn.execute(sql, params).fetchall()]
    finally:
        store.close()


def export(db: Path | str, *args: str) -> tuple[str, str]:
    """(stdout, the cursor printed on stderr) of a successful `feedmd export`."""
    result = CliRunner().invoke(main, ["export", "--db", str(db), *args])
    assert result.exit_code == 0, result.output + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("cursor: ")]
    assert len(lines) == 1, result.stderr
    return result.stdout, lines[0].removeprefix("cursor: ")
