"""Every command on a PostgreSQL store: the demo writes the same feeds as on SQLite, and
run, explain, replay, the dry run, export, review, tokens, deliveries, serve and migrate
work with a ``postgresql://`` database."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from conftest import FIXTURES
from loopback import serving
from pg_server import PostgresServer

from feedmd.cli.main import main
from feedmd.service.server import create_app
from feedmd.store import connect_store
from feedmd.store.schema import available_migrations
from feedmd.tools.demo import run_demo
from feedmd.tools.fixture_server import FixtureServer


@pytest.fixture
def pg_url(postgres_server: PostgresServer) -> Iterator[str]:
    url = postgres_server.fresh_database()
    yield url
    postgres_server.drop(url)


def test_the_demo_writes_the_same_feeds_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    on_sqlite = run_demo(tmp_path / "sqlite", echo=lambda _: None)
    on_postgresql = run_demo(tmp_path / "pg", echo=lambda _: None, database=pg_url)
    assert on_postgresql.database == pg_url
    assert not (tmp_path / "pg" / "feedmd.db").exists()
    for sqlite_report, postgresql_report in (
        (on_sqlite.first, on_postgresql.first),
        (on_sqlite.second, on_postgresql.second),
    ):  # the same counts, every stage's drops by rule; only the timings differ
        assert {**sqlite_report.as_dict(), "seconds": {}} == {
            **postgresql_report.as_dict(),
            "seconds": {},
        }
    names = [p.name for p in on_sqlite.outputs]
    assert names == [p.name for p in on_postgresql.outputs] and len(names) >= 4
    for name in names:
        sqlite_text = (tmp_path / "sqlite" / name).read_text(encoding="utf-8")
        postgresql_text = (tmp_path / "pg" / name).read_text(encoding="utf-8")
        assert postgresql_text == sqlite_text, name


def test_the_demo_refuses_a_database_with_runs(demo_pg: str, tmp_path: Path) -> None:
    from feedmd.errors import ConfigError

    with pytest.raises(ConfigError, match="already holds runs"):
        run_demo(tmp_path / "two", echo=lambda _: None, database=demo_pg)
    assert not (tmp_path / "two" / "feedmd.db").exists()


@pytest.fixture(scope="module")
def demo_pg(
    postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A PostgreSQL store holding the demo (two runs of the fixture news day)."""
    url = postgres_server.fresh_database()
    run_demo(tmp_path_factory.mktemp("demo-pg"), echo=lambda _: None, database=url)
    yield url
    postgres_server.drop(url)


def invoke(*args: str) -> Result:
    """``feedmd ARGS`` through click's runner; the output of a failure in the message."""
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def test_migrate_lists_and_applies_on_postgresql(pg_url: str) -> None:
    listed = invoke("migrate", "--database", pg_url, "--list", "--json")
    assert {m["state"] for m in json.loads(listed.output)["migrations"]} == {"pending"}
    names = [m.name for m in available_migrations()]
    applied = invoke("migrate", "--database", pg_url)
    assert f"applied {len(names)} migration(s)" in applied.output
    listed = invoke("migrate", "--db", pg_url, "--list", "--json")
    assert {m["state"] for m in json.loads(listed.output)["migrations"]} == {"applied"}


def test_run_and_its_dry_run_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    with FixtureServer(FIXTURES) as server:
        common = [
            "--config",
            str(FIXTURES / "demo.toml"),
            "--database",
            pg_url,
            "--proxy",
            server.proxy_url,
            "--allow-private-addresses",
            "--now",
            "2026-10-12T20:00:00Z",
            "--json",
        ]
        dry = invoke("run", *common, "--dry-run")
        assert dry.exit_code in (0, 3), dry.output
        assert invoke("migrate", "--db", pg_url, "--list").output.count("pending") == len(
            available_migrations()
        )  # the dry run worked on a copy: the store itself is untouched
        done = invoke("run", *common, "--out", str(tmp_path / "out"))
        assert done.exit_code in (0, 3), done.output
        report = json.loads(done.output)
        assert report["kept"] > 0 and report["new"] > 0
        store = connect_store(pg_url)
        runs = len(store.recent_runs(10))
        store.close()
        dry_after = invoke("run", *common, "--dry-run", "--force")
        assert dry_after.exit_code in (0, 3), dry_after.output  # a copy of the stored day
        store = connect_store(pg_url)
        assert len(store.recent_runs(10)) == runs  # nothing stored by the dry run
        store.close()


def test_explain_replay_export_on_postgresql(demo_pg: str) -> None:
    store = connect_store(demo_pg)
    try:
        (duplicate,) = store._conn.execute(
            "SELECT id FROM items WHERE decision = 'duplicate' ORDER BY id LIMIT 1"
        ).fetchone()
    finally:
        store.close()
    (explained,) = json.loads(invoke("explain", str(duplicate), "--db", demo_pg, "--json").output)
    assert explained["item"]["decision"] == "duplicate" and explained["matched"]
    replayed = json.loads(invoke("replay", "--db", demo_pg, "--json").output)
    assert replayed["items"] == 48 and replayed["changed"] == 0
    exported = invoke("export", "--format", "json", "--org", "newsroom", "--db", demo_pg)
    assert exported.exit_code == 0, exported.output
    assert json.loads(exported.output)["items"]


def test_tokens_deliveries_and_serve_on_postgresql(demo_pg: str) -> None:
    created = invoke("tokens", "create", "--org", "newsroom", "--db", demo_pg)
    assert created.exit_code == 0, created.output
    listed = json.loads(invoke("tokens", "list", "--db", demo_pg, "--json").output)
    assert [t["org"] for t in listed] == ["newsroom"]
    deliveries = invoke("deliveries", "--db", demo_pg, "--json")
    assert deliveries.exit_code == 0 and json.loads(deliveries.output)["deliveries"] == []
    with serving(create_app(demo_pg)) as http:
        assert http.get("/health").status_code == 200
        feed = http.get("/orgs/newsroom.json")
        assert feed.status_code == 200 and feed.json()["items"]
        assert http.get("/review").status_code == 200
