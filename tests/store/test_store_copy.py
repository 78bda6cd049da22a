"""`feedmd store copy`: a store moved from SQLite into PostgreSQL and back holds the same
rows (ids included), a replay of the copy reproduces every stored decision, and a copy
never goes into a store that already has data."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import DemoStores
from pg_server import PostgresServer

from feedmd.cli.main import main
from feedmd.errors import StoreError
from feedmd.store import connect_store, open_store
from feedmd.store.copy import copy_store, table_counts
from feedmd.store.schema import table_order
from feedmd.tools.replay import replay


@pytest.fixture(scope="module")
def demo_db(demo_stores: DemoStores) -> Path:
    """The demo's store (two runs of the fixture news day), with a reviewer's override."""
    from feedmd.delivery.overrides import restore
    from feedmd.timeutil import utcnow

    database = demo_stores.copy()
    store = connect_store(database)
    try:
        (item_id,) = store._conn.execute(
            "SELECT id FROM items WHERE decision = 'duplicate' ORDER BY id LIMIT 1"
        ).fetchone()
        restore(store, item_id, "tester", utcnow())
    finally:
        store.close()
    return database


@pytest.fixture
def pg_url(postgres_server: PostgresServer) -> Iterator[str]:
    url = postgres_server.fresh_database()
    yield url
    postgres_server.drop(url)


def rows(database: str | Path, table: str) -> list[tuple[object, ...]]:
    """Every row of a table in a stable order, values as both backends return them."""
    store = connect_store(database)
    try:
        cursor = store._conn.execute(f"SELECT * FROM {table}")
        return sorted(
            (tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in cursor),
            key=repr,
        )
    finally:
        store.close()


def test_every_table_is_placed_after_the_tables_it_references() -> None:
    order = table_order()
    assert order.index("orgs") < order.index("feeds") < order.index("items")
    assert order.index("runs") < order.index("items") < order.index("deliveries")
    assert order.index("overrides") < order.index("deliveries")
    assert "schema_migrations" not in order


def test_sqlite_to_postgresql_and_back_keeps_every_row(
    demo_db: Path, pg_url: str, tmp_path: Path
) -> None:
    source = table_counts(demo_db)
    assert source["items"] == 48 and source["overrides"] == 1 and source["title_keys"] > 0
    copied = copy_store(demo_db, pg_url)
    assert copied.rows == source
    assert table_counts(pg_url) == source
    back = tmp_path / "back.db"
    copy_store(pg_url, back)
    assert table_counts(back) == source
    for table in table_order():
        assert rows(back, table) == rows(demo_db, table), table
    # ids carry on after the copied ones on PostgreSQL (the sequences were moved)
    store = open_store(pg_url)
    try:
        (new_id,) = store._conn.execute(
            "INSERT INTO orgs (name, created_at) VALUES ('new', 'x') RETURNING id"
        ).fetchone()
        (most,) = store._conn.execute("SELECT MAX(id) FROM orgs WHERE name != 'new'").fetchone()
        assert new_id == most + 1
    finally:
        store.close()


def test_a_replay_of_the_copy_decides_everything_the_same(demo_db: Path, pg_url: str) -> None:
    copy_store(demo_db, pg_url)
    result = replay(pg_url)
    assert result.items == 48 and result.changes == []


def test_a_store_with_data_is_never_a_destination(demo_db: Path, pg_url: str) -> None:
    copy_store(demo_db, pg_url)
    with pytest.raises(StoreError, match=r"is not empty \(\w+ has \d+ rows\)"):
        copy_store(demo_db, pg_url)
    with pytest.raises(StoreError, match="is not empty"):
        copy_store(pg_url, demo_db)


def test_the_command_copies_and_counts(demo_db: Path, pg_url: str, tmp_path: Path) -> None:
    runner = CliRunner()
    done = runner.invoke(main, ["store", "copy", str(demo_db), pg_url, "--replay"])
    assert done.exit_code == 0, done.output
    assert "replay of the copy: 0 items decided differently" in done.output
    assert f"from {demo_db} to {pg_url}" in done.output
    again = runner.invoke(main, ["store", "copy", str(demo_db), pg_url])
    assert again.exit_code == 1 and "is not empty" in again.output
    back = runner.invoke(main, ["store", "copy", pg_url, f"sqlite:///{tmp_path}/back.db"])
    assert back.exit_code == 0, back.output
    assert table_counts(tmp_path / "back.db") == table_counts(demo_db)
