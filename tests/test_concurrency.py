"""Two runs on one store at once (two cron jobs overlapping, `run` beside `serve`): the run
lease lets one work on an org at a time; the other waits for it, or stops with exit code 4
and a message naming the holder. No corruption, no double delivery, no lost run."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from conftest import FIXTURES
from test_crash_safety import DRIVER, Harness, Outcome, check_invariants, decisions, events

from feedmd.errors import RunLeaseHeld
from feedmd.settings import Settings
from feedmd.store import database_exists, open_store
from feedmd.store.schema import connect
from feedmd.tools.demo import FIRST_RUN_AT
from feedmd.tools.fixture_server import FixtureServer

pytestmark = pytest.mark.skipif(os.name == "nt", reason="uses POSIX process checks")

# A store step a run takes while it holds its lease: the holder pauses there.
HELD_STEP = "feed_specs"


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    driver = tmp_path_factory.mktemp("driver") / "driver.py"
    driver.write_text(DRIVER)
    with FixtureServer(FIXTURES) as server:
        yield Harness(driver, server)


def _leases(database: str) -> int:
    """Leases held in ``database`` (0 before it exists or is migrated)."""
    if not database_exists(database):
        return 0
    db = connect(database)
    try:
        return int(db.conn.execute("SELECT COUNT(*) FROM run_leases").fetchone()[0])
    except (sqlite3.Error, psycopg.Error):
        return 0  # not migrated yet
    finally:
        db.close()


def _wait_for_lease(database: str, timeout: float = 30.0) -> None:
    """Until a run holds a lease in ``database``."""
    ends = time.monotonic() + timeout
    while time.monotonic() < ends:
        if _leases(database):
            return
        time.sleep(0.01)
    raise AssertionError("no run took the lease")


@pytest.mark.both_backends(slow_on_postgresql=True)
def test_two_runs_at_once_take_turns(harness: Harness, tmp_path: Path, database: str) -> None:
    out = tmp_path / "out"
    first = harness.start(out, wait=60, database=database)
    second = harness.start(out, wait=60, database=database)
    results = [child.communicate(timeout=120) for child in (first, second)]
    assert [first.returncode, second.returncode] == [0, 0], results
    db = connect(database)
    try:
        runs = db.conn.execute("SELECT status FROM runs ORDER BY id").fetchall()
    finally:
        db.close()
    # the first fails the slow page (partial); the second finds it all stored
    assert sorted(status for (status,) in runs) == ["ok", "partial"]
    # one of them stored the day; the other found it all known
    reference = Outcome(decisions(database), 0.0, events(database))
    assert len(reference.decisions) == 47
    check_invariants(database, reference, "two runs at once")


@pytest.mark.both_backends(slow_on_postgresql=True)
def test_a_second_run_that_may_not_wait_stops_with_exit_code_4(
    harness: Harness, tmp_path: Path, database: str
) -> None:
    out = tmp_path / "out"
    release = tmp_path / "release"
    # the holder keeps its lease until the refused run has finished, however slow its start
    holder = harness.start(out, pause=f"{HELD_STEP}:{release}", database=database)
    _wait_for_lease(database)
    refused = harness.start(out, wait=0, database=database)
    _, stderr = refused.communicate(timeout=60)
    release.touch()
    assert refused.returncode == 4
    assert "another feedmd run holds the lease on org 'newsroom'" in stderr
    assert f"process {holder.pid} on" in stderr
    holder.communicate(timeout=120)
    assert holder.returncode == 0


@pytest.mark.both_backends(slow_on_postgresql=True)
def test_the_cli_exits_4_when_another_run_holds_the_lease(
    harness: Harness, tmp_path: Path, database: str
) -> None:
    out = tmp_path / "out"
    release = tmp_path / "release"
    holder = harness.start(out, pause=f"{HELD_STEP}:{release}", database=database)
    _wait_for_lease(database)
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "feedmd",
            "run",
            "--config",
            str(FIXTURES / "demo.toml"),
            "--db",
            database,
            "--proxy",
            harness.server.proxy_url,
            "--allow-private-addresses",
            "--run-lease-wait-seconds",
            "0",
            "--now",
            "2026-10-12T20:00:00Z",
            "--force",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    release.touch()
    holder.communicate(timeout=120)
    assert cli.returncode == 4, cli.stderr
    assert "another feedmd run holds the lease on org 'newsroom'" in cli.stderr
    assert "Traceback" not in cli.stderr


@pytest.mark.both_backends
def test_a_dead_holder_is_taken_over_at_once_and_a_live_one_only_after_expiry(
    database: str,
) -> None:
    """In-process: the lease logic itself, with a pid that is gone and a host that is not
    this one (whose only way to end is the expiry)."""
    store = open_store(database)
    try:
        store._conn.execute("INSERT INTO orgs (name, created_at) VALUES ('o', 'x')")
        settings = Settings(run_lease_wait_seconds=0, run_lease_seconds=60)
        lease = store.start_leased_run(["o"], FIRST_RUN_AT, settings)
        with pytest.raises(RunLeaseHeld, match="holds the lease on org 'o'"):
            store.start_leased_run(["o"], FIRST_RUN_AT, settings)
        dead = subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"],
            capture_output=True,
            text=True,
            check=True,
        )
        store._conn.execute("UPDATE run_leases SET pid = ?", (int(dead.stdout),))
        taken = store.start_leased_run(["o"], FIRST_RUN_AT, settings)
        assert taken.abandoned == (lease.run_id,)
        store._conn.execute("UPDATE run_leases SET host = 'elsewhere'")
        with pytest.raises(RunLeaseHeld, match="on elsewhere"):
            store.start_leased_run(["o"], FIRST_RUN_AT, settings)
        store._conn.execute("UPDATE run_leases SET expires_at = '2000-01-01T00:00:00Z'")
        again = store.start_leased_run(["o"], FIRST_RUN_AT, settings)
        assert again.abandoned == (taken.run_id,)
        store.release_lease(again, completed=True)
        assert store._conn.execute("SELECT COUNT(*) FROM run_leases").fetchone()[0] == 0
    finally:
        store.close()


@pytest.mark.both_backends
def test_a_waiting_run_gets_the_lease_when_the_holder_ends(database: str) -> None:
    store = open_store(database)
    other = open_store(database)
    try:
        store._conn.execute("INSERT INTO orgs (name, created_at) VALUES ('o', 'x')")
        holder = store.start_leased_run(["o"], FIRST_RUN_AT, Settings())
        store._conn.execute(
            "UPDATE run_leases SET expires_at = ?",
            ((time_in(2.0)),),
        )
        started = time.monotonic()
        waited = other.start_leased_run(["o"], FIRST_RUN_AT, Settings(run_lease_wait_seconds=10))
        assert 0.5 < time.monotonic() - started < 5
        assert waited.abandoned == (holder.run_id,)
    finally:
        store.close()
        other.close()


def time_in(seconds: float) -> str:
    """An ISO time ``seconds`` from now on the real clock (leases never use --now)."""
    from datetime import timedelta

    from feedmd.timeutil import iso, utcnow

    return iso(utcnow() + timedelta(seconds=seconds))
