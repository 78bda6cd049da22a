"""Migrations: applied in order on open, a re-open is a no-op, a failure leaves nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import make_config

from feedmd.cli.main import main
from feedmd.errors import MigrationError, StoreError
from feedmd.store import Store
from feedmd.store.dialect import backend_of
from feedmd.store.schema import (
    Migration,
    applied_migrations,
    available_migrations,
    connect,
    open_database,
    split_statements,
)

pytestmark = pytest.mark.both_backends


def tables(database: str | Path) -> set[str]:
    """The tables of the store at ``database`` (either backend)."""
    db = connect(database)
    try:
        if backend_of(str(database)) == "sqlite":
            sql = "SELECT name FROM sqlite_master WHERE type = 'table'"
        else:
            sql = "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        return {row[0] for row in db.conn.execute(sql)}
    finally:
        db.close()


def test_fresh_store_has_every_table(database: str, backend: str) -> None:
    db = open_database(database)
    if backend == "sqlite":
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
        "title_keys",
        "visibility",
    } <= tables(database)


def test_reopening_applies_nothing(database: str) -> None:
    first = open_database(database)
    applied = applied_migrations(first)
    first.close()
    again = open_database(database)
    assert applied_migrations(again) == applied
    assert list(applied) == [m.name for m in available_migrations()]
    again.close()


def test_failing_migration_leaves_nothing_half_applied(database: str) -> None:
    good = Migration("0001_good", "CREATE TABLE a (x INTEGER);")
    bad = Migration("0002_bad", "CREATE TABLE b (x INTEGER);\nINSERT INTO nowhere VALUES (1);")
    with pytest.raises(MigrationError, match="0002_bad failed and was rolled back"):
        open_database(database, [good, bad])
    assert "a" in tables(database)
    assert "b" not in tables(database)
    db = connect(database)
    assert list(applied_migrations(db)) == ["0001_good"]
    db.close()
    fixed = Migration("0002_bad", "CREATE TABLE b (x INTEGER);")
    open_database(database, [good, fixed]).close()
    assert "b" in tables(database)


def test_split_statements_keeps_semicolons_inside_strings() -> None:
    sql = "-- c\nCREATE TABLE t (x TEXT DEFAULT ';');\n\nINSERT INTO t VALUES ('a;b');\n"
    assert len(split_statements(sql)) == 2


def test_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError):
        open_database(path)


def test_migrate_list_shows_pending_then_applied(database: str) -> None:
    runner = CliRunner()
    db = database
    listed = runner.invoke(main, ["migrate", "--db", db, "--list"])
    assert listed.exit_code == 0
    assert "pending  0001_initial" in listed.output
    applied = runner.invoke(main, ["migrate", "--db", db])
    names = [m.name for m in available_migrations()]
    assert f"applied {len(names)} migration(s): {', '.join(names)}" in applied.output
    listed = runner.invoke(main, ["migrate", "--db", db, "--list"])
    assert "applied  0001_initial" in listed.output
    assert runner.invoke(main, ["migrate", "--db", db]).output.startswith("applied 0 migration(s)")


@pytest.mark.both_backends(slow_on_postgresql=True)
def test_processes_opening_one_new_store_together_all_succeed(database: str) -> None:
    import subprocess
    import sys
    import time

    db = database
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


def test_feed_specs_come_in_the_order_named_and_leave_out_unknown_names(store: Store) -> None:
    config = make_config([("o1", "a", "http://127.0.0.1:9/a"), ("o2", "b", "http://127.0.0.1:9/b")])
    store.sync_feeds(config)
    specs = store.feed_specs(["b", "missing", "a"])
    assert [(spec.name, spec.org, spec.url) for spec in specs] == [
        ("b", "o2", "http://127.0.0.1:9/b"),
        ("a", "o1", "http://127.0.0.1:9/a"),
    ]
    assert store.feed_specs([]) == []
