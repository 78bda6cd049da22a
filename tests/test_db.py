"""Migrations: applied in order on open, a re-open is a no-op, a failure leaves nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from feedmd.cli import main
from feedmd.errors import MigrationError, StoreError
from feedmd.store.schema import (
    Migration,
    applied_migrations,
    available_migrations,
    connect,
    open_database,
    split_statements,
)


def tables(db_path: Path) -> set[str]:
    conn = sqlite3.connect(db_path)
    try:
        return {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
    finally:
        conn.close()


def test_fresh_store_has_every_table_and_wal(tmp_path: Path) -> None:
    db = open_database(tmp_path / "f.db")
    assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    db.close()
    assert {
        "orgs",
        "feeds",
        "runs",
        "items",
        "bodies",
        "deliveries",
        "schema_migrations",
    } <= tables(tmp_path / "f.db")


def test_reopening_applies_nothing(tmp_path: Path) -> None:
    first = open_database(tmp_path / "f.db")
    applied = applied_migrations(first)
    first.close()
    again = open_database(tmp_path / "f.db")
    assert applied_migrations(again) == applied
    assert list(applied) == [m.name for m in available_migrations()]
    again.close()


def test_failing_migration_leaves_nothing_half_applied(tmp_path: Path) -> None:
    good = Migration("0001_good", "CREATE TABLE a (x INTEGER);")
    bad = Migration("0002_bad", "CREATE TABLE b (x INTEGER);\nINSERT INTO nowhere VALUES (1);")
    with pytest.raises(MigrationError, match="0002_bad failed and was rolled back"):
        open_database(tmp_path / "f.db", [good, bad])
    assert "a" in tables(tmp_path / "f.db")
    assert "b" not in tables(tmp_path / "f.db")
    db = connect(tmp_path / "f.db")
    assert list(applied_migrations(db)) == ["0001_good"]
    db.close()
    fixed = Migration("0002_bad", "CREATE TABLE b (x INTEGER);")
    open_database(tmp_path / "f.db", [good, fixed]).close()
    assert "b" in tables(tmp_path / "f.db")


def test_split_statements_keeps_semicolons_inside_strings() -> None:
    sql = "-- c\nCREATE TABLE t (x TEXT DEFAULT ';');\n\nINSERT INTO t VALUES ('a;b');\n"
    assert len(split_statements(sql)) == 2


def test_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError):
        open_database(path)


def test_migrate_list_shows_pending_then_applied(tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "m.db")
    listed = runner.invoke(main, ["migrate", "--db", db, "--list"])
    assert listed.exit_code == 0
    assert "pending  0001_initial" in listed.output
    applied = runner.invoke(main, ["migrate", "--db", db])
    names = [m.name for m in available_migrations()]
    assert f"applied {len(names)} migration(s): {', '.join(names)}" in applied.output
    listed = runner.invoke(main, ["migrate", "--db", db, "--list"])
    assert "applied  0001_initial" in listed.output
    assert runner.invoke(main, ["migrate", "--db", db]).output.startswith("applied 0 migration(s)")


def test_processes_opening_one_new_store_together_all_succeed(tmp_path: Path) -> None:
    import subprocess
    import sys
    import time

    db = tmp_path / "shared.db"
    start = time.time() + 2.0  # every process opens at the same moment (imports done)
    code = (
        "import time; from feedmd.store.schema import open_database; "
        f"time.sleep(max(0.0, {start} - time.time())); open_database({str(db)!r}).close()"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(8)
    ]
    results = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, results
    opened = connect(db)
    assert list(applied_migrations(opened)) == [m.name for m in available_migrations()]
    opened.close()
