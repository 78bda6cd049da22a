"""Crash safety: a run killed with SIGKILL at any moment leaves a consistent store, and the
next run finishes the work: no duplicate item, no lost item, every duplicate pointing at a
kept item, no run left 'running', every kept item delivered exactly once.

Each cycle runs the real pipeline on the fixture news day in a child process (through the
loopback fixture server), kills it with SIGKILL at a random moment or at a chosen point
(inside the store transaction, right after it, after delivery), runs again to completion
and checks the invariants against a clean reference run. A few cycles run in the default
set; ``-m slow`` runs 50 random kills.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import FIXTURES

from feedmd.store.schema import connect
from feedmd.tools.fixture_server import FixtureServer

pytestmark = pytest.mark.skipif(os.name == "nt", reason="SIGKILL is POSIX")

# A child process running pipeline.run once on the demo configuration, with the DIE and
# PAUSE hooks of tests/kill_hooks.py installed on the Store.
DRIVER = textwrap.dedent("""\
    import os, sys, json
    from pathlib import Path
    from feedmd.tools.demo import demo_config, FIRST_RUN_AT
    from feedmd.store import open_store
    from feedmd.pipeline import run
    from feedmd.errors import RunLeaseHeld
    from feedmd.store import Store

    fixtures, out, proxy, wait = sys.argv[1:5]
    overrides = {
        "allow_private_addresses": True,
        # not lower: extraction runs on the event loop, and a busy loop lets a shorter
        # deadline pass on a page that was answered in time
        "fetch_timeout_seconds": 1.5,
        "run_lease_wait_seconds": float(wait),
    }
    # DATABASE: a postgresql:// URL (or a SQLite file) instead of out/feedmd.db
    database = os.environ.get("DATABASE") or None
    config = demo_config(Path(fixtures), Path(out), proxy, overrides, database)
    sys.path.insert(0, str(Path(fixtures).parent / "tests"))
    from kill_hooks import install

    install(Store)
    store = open_store(config.database)
    print("ready", flush=True)
    try:
        report = run(store, config, now=FIRST_RUN_AT, force=True, output_dir=out)
    except RunLeaseHeld as exc:
        print(f"lease held: {exc}", file=sys.stderr, flush=True)
        sys.exit(4)
    print(json.dumps({"run_id": report.run_id, "new": report.new, "kept": report.kept}))
""")


@dataclass
class Harness:
    """Runs the driver against one fixture server."""

    driver: Path
    server: FixtureServer

    def start(
        self, out: Path, wait: float = 60.0, die: str = "", pause: str = "", database: str = ""
    ) -> subprocess.Popen[str]:
        """Start the driver on ``database`` (default ``out/feedmd.db``)."""
        out.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "DIE": die, "PAUSE": pause, "DATABASE": database}
        return subprocess.Popen(
            [
                sys.executable,
                str(self.driver),
                str(FIXTURES),
                str(out),
                self.server.proxy_url,
                str(wait),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )

    def complete(self, out: Path, wait: float = 60.0, database: str = "") -> dict[str, int]:
        child = self.start(out, wait, database=database)
        stdout, stderr = child.communicate(timeout=120)
        assert child.returncode == 0, stderr
        return dict(json.loads(stdout.splitlines()[-1]))

    def kill_at(self, out: Path, seconds: float, database: str = "") -> None:
        """Start a run, SIGKILL it ``seconds`` after it is ready (or let it end first)."""
        child = self.start(out, database=database)
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        time.sleep(seconds)
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
        child.communicate(timeout=60)  # reaps it: a zombie would still look alive

    def die(self, out: Path, where: str, database: str = "") -> int:
        child = self.start(out, die=where, database=database)
        child.communicate(timeout=120)
        return child.returncode


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    folder = tmp_path_factory.mktemp("driver")
    driver = folder / "driver.py"
    driver.write_text(DRIVER)
    with FixtureServer(FIXTURES) as server:
        yield Harness(driver, server)


@dataclass(frozen=True)
class Outcome:
    """What a finished store holds, to compare with the reference run."""

    decisions: frozenset[tuple[str, str, str, str | None]]
    seconds: float
    events: frozenset[tuple[str, str, str, str]] = frozenset()


@pytest.fixture(scope="module")
def reference(harness: Harness, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    out = tmp_path_factory.mktemp("reference")
    started = time.monotonic()
    harness.complete(out)
    seconds = time.monotonic() - started
    found = events(out / "feedmd.db")
    assert found, "the reference run placed no item in an event"
    return Outcome(decisions(out / "feedmd.db"), seconds, found)


def decisions(database: Path | str) -> frozenset[tuple[str, str, str, str | None]]:
    db = connect(database)
    try:
        rows = db.conn.execute(
            "SELECT f.name, i.entry_id, i.decision, i.rule FROM items i"
            " JOIN feeds f ON f.id = i.feed_id"
        ).fetchall()
    finally:
        db.close()
    return frozenset(tuple(row) for row in rows)


def events(database: Path | str) -> frozenset[tuple[str, str, str, str]]:
    """(feed, entry id) of every item with an event, and of its event's canonical item."""
    db = connect(database)
    try:
        rows = db.conn.execute(
            "SELECT f.name, i.entry_id, cf.name, c.entry_id FROM item_events e"
            " JOIN items i ON i.id = e.item_id JOIN feeds f ON f.id = i.feed_id"
            " JOIN items c ON c.id = e.event_id JOIN feeds cf ON cf.id = c.feed_id"
        ).fetchall()
    finally:
        db.close()
    return frozenset(tuple(row) for row in rows)


def check_invariants(database: Path | str, reference: Outcome, context: str) -> None:
    """Everything a recovered store must satisfy; ``context`` names the kill in failures.
    (On PostgreSQL the server enforces the foreign keys; SQLite is checked for them.)"""
    db = connect(database)
    conn = db.conn
    try:
        if isinstance(conn, sqlite3.Connection):
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok", context
            assert conn.execute("PRAGMA foreign_key_check").fetchall() == [], context
        repeated = conn.execute(
            "SELECT feed_id, entry_id, COUNT(*) FROM items GROUP BY feed_id, entry_id"
            " HAVING COUNT(*) > 1"
        ).fetchall()
        assert repeated == [], context
        # every fixture entry is there, with the decision a clean run takes
        assert decisions(database) == reference.decisions, context
        dangling = conn.execute(
            "SELECT d.id FROM items d LEFT JOIN items k ON k.id = d.matched_item_id"
            " WHERE d.decision = 'duplicate' AND (k.id IS NULL OR k.decision != 'kept')"
        ).fetchall()
        assert dangling == [], context
        statuses = dict(conn.execute("SELECT status, COUNT(*) FROM runs GROUP BY status"))
        assert "running" not in statuses, (context, statuses)
        assert set(statuses) <= {"ok", "partial", "abandoned"}, (context, statuses)
        assert conn.execute("SELECT COUNT(*) FROM run_leases").fetchone()[0] == 0, context
        twice = conn.execute(
            "SELECT item_id, target FROM deliveries GROUP BY item_id, target HAVING COUNT(*) > 1"
        ).fetchall()
        assert twice == [], context
        kept = {row[0] for row in conn.execute("SELECT id FROM items WHERE decision = 'kept'")}
        delivered = {
            row[0] for row in conn.execute("SELECT item_id FROM deliveries WHERE target = 'files'")
        }
        assert delivered == kept, (context, sorted(kept - delivered))
        unrecovered = conn.execute(
            "SELECT r.id FROM runs r WHERE r.status = 'abandoned' AND r.recovered_by IS NULL"
            " AND EXISTS (SELECT 1 FROM items i WHERE i.run_id = r.id)"
        ).fetchall()
        assert unrecovered == [], context
        # events: every kept item has one, decided as a clean run decides it
        without = conn.execute(
            "SELECT i.id FROM items i LEFT JOIN item_events e ON e.item_id = i.id"
            " WHERE i.decision = 'kept' AND e.item_id IS NULL"
        ).fetchall()
        assert without == [], context
        assert events(database) == reference.events, context
    finally:
        db.close()


# Kill points a random moment rarely hits: inside the one store transaction (before and
# after the items, before their events), right after it committed (items stored, nothing
# delivered), after delivery but before the run ended.
POINTS = [
    "before:_upsert_body:3",
    # inside the transaction, the items written, their events not yet
    "after:_write_retries:1",
    "after:persist:1",
    pytest.param("before:finish_run:1", marks=pytest.mark.slow),
    pytest.param("after:finish_run:1", marks=pytest.mark.slow),
    pytest.param("after:start_leased_run:1", marks=pytest.mark.slow),
    pytest.param("after:save_resolutions:1", marks=pytest.mark.slow),
]


# On PostgreSQL the chosen points are in the slow set (the default run has its random
# kill test, below, on both backends).
@pytest.mark.both_backends(slow_on_postgresql=True)
@pytest.mark.parametrize("point", POINTS)
def test_a_kill_at_a_chosen_point_is_recovered(
    harness: Harness, reference: Outcome, tmp_path: Path, point: str, database: str
) -> None:
    out = tmp_path / "out"
    assert harness.die(out, point, database) == -signal.SIGKILL
    harness.complete(out, database=database)
    check_invariants(database, reference, point)


def _random_kills(
    harness: Harness,
    reference: Outcome,
    folder: Path,
    cycles: int,
    seed: int,
    fresh: Callable[[Path], str] = lambda out: str(out / "feedmd.db"),
) -> int:
    """``cycles`` fresh stores (``fresh(out)`` names each), each killed 1-3 times at random
    moments of a run and then run to completion; return the number of kills."""
    rng = random.Random(seed)
    kills = 0
    for cycle in range(cycles):
        out = folder / f"cycle-{cycle}"
        database = fresh(out)
        moments = [rng.uniform(0, reference.seconds) for _ in range(rng.randint(1, 3))]
        for moment in moments:
            harness.kill_at(out, moment, database)
            kills += 1
        harness.complete(out, database=database)
        check_invariants(database, reference, f"seed {seed}, cycle {cycle}, kills at {moments}")
    return kills


@pytest.mark.both_backends
def test_random_kills_are_recovered(
    harness: Harness, reference: Outcome, tmp_path: Path, database: str
) -> None:
    kills = _random_kills(
        harness, reference, tmp_path, cycles=1, seed=20261012, fresh=lambda out: database
    )
    assert kills >= 1


@pytest.mark.slow
def test_fifty_random_kills_are_recovered(
    harness: Harness, reference: Outcome, tmp_path: Path
) -> None:
    seed = int(os.environ.get("FEEDMD_CRASH_SEED", "6"))
    kills = 0
    cycle_seed = seed
    while kills < 50:
        kills += _random_kills(harness, reference, tmp_path / str(cycle_seed), 5, cycle_seed)
        cycle_seed += 1
    assert kills >= 50
