"""Worker claims on a real store, in-process: which org is claimable, when a claim expires,
when a dead worker's claim is taken over, and the pure choice of due orgs and feeds.
On SQLite and on PostgreSQL. (tests/service/test_worker.py runs real worker processes.)"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from feedmd.models import FeedSpec
from feedmd.service.worker import due_orgs, feeds_to_run
from feedmd.settings.config import Config, FeedConfig
from feedmd.store import OrgClaim, Store, open_store
from feedmd.store.schema import connect
from feedmd.timeutil import utcnow

pytestmark = pytest.mark.both_backends

NOW = datetime(2026, 10, 12, 12, tzinfo=UTC)
ORGS = ("a", "b", "c")
SECONDS = 60.0


@pytest.fixture
def claims(store: Store) -> Store:
    """A store with orgs a, b, c (one feed each) and their claim rows."""
    feeds = tuple(
        FeedConfig(name=f"{org}-feed", url=f"http://{org}.example/f", org=org) for org in ORGS
    )
    store.sync_feeds(Config(feeds=feeds))
    assert store.add_claim_rows() == 3
    assert store.add_claim_rows() == 0
    return store


def claim(
    store: Store, due: tuple[str, ...] = ORGS, now: datetime = NOW, worker: str = "w1"
) -> OrgClaim | None:
    return store.claim_org(ORGS, due, worker, now, SECONDS, pid=_live_pid())


def _live_pid() -> int:
    return os.getpid()


def _dead_pid() -> int:
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(child.stdout)


def _set(store: Store, org: str, **columns: object) -> None:
    """Change one org's claim row (another host, another pid) as a test arranges it."""
    assignments = ", ".join(f"{name} = ?" for name in columns)
    store._conn.execute(
        f"UPDATE org_claims SET {assignments} WHERE org_id = (SELECT id FROM orgs WHERE name = ?)",
        (*columns.values(), org),
    )


def test_each_due_org_is_claimed_once_and_only_due_ones(claims: Store) -> None:
    first = claim(claims, due=("b", "c"))
    second = claim(claims, due=("b", "c"))
    assert first is not None and second is not None
    assert {first.org, second.org} == {"b", "c"}
    assert not first.recovering and not second.recovering
    # a is free but not due; b and c are held
    assert claim(claims, due=("b", "c")) is None
    assert claim(claims, due=("a",)).org == "a"
    rows = {row.org: row for row in claims.org_claim_rows()}
    assert rows["b"].worker == "w1" and rows["b"].expires_at is not None


def test_an_org_outside_the_workers_configuration_is_never_claimed(claims: Store) -> None:
    assert claims.claim_org(("a",), ("b", "c"), "w1", NOW, SECONDS, pid=_live_pid()) is None
    assert claims.claim_org((), ORGS, "w1", NOW, SECONDS, pid=_live_pid()) is None


def test_a_released_org_is_claimable_again_and_the_least_recently_claimed_goes_first(
    claims: Store,
) -> None:
    taken = [claim(claims, now=NOW + timedelta(seconds=n)) for n in range(3)]
    assert [c.org for c in taken] == ["a", "b", "c"]  # never claimed: by id
    for held in taken:
        assert claims.release_claim(held, recovered=True)
    assert not claims.release_claim(taken[0], recovered=True)  # given back already
    later = NOW + timedelta(minutes=1)
    assert [claim(claims, now=later).org for _ in range(3)] == ["a", "b", "c"]


def test_a_claim_held_on_another_host_is_taken_over_only_once_it_expires(claims: Store) -> None:
    held = claim(claims, due=("a",))
    assert held is not None and held.expires_at == NOW + timedelta(seconds=SECONDS)
    _set(claims, "a", host="elsewhere")
    just_before = held.expires_at - timedelta(seconds=1)
    assert claim(claims, due=("a",), now=just_before, worker="w2") is None
    taken = claim(claims, due=("a",), now=held.expires_at, worker="w2")
    assert taken is not None and taken.org == "a" and taken.recovering
    # the dead holder cannot give back (or renew) what it lost
    assert not claims.release_claim(held, recovered=True)
    assert not claims.renew_claim(held, NOW + timedelta(hours=1))
    # an expired claim is taken over even when its org is not due: its run may have died
    assert claims.release_claim(taken, recovered=False)
    row = {r.org: r for r in claims.org_claim_rows()}["a"]
    assert row.owner is None and row.pending_recovery


def test_a_claim_whose_process_is_gone_on_this_host_is_taken_over_at_once(claims: Store) -> None:
    held = claim(claims, due=("a",))
    assert held is not None
    _set(claims, "a", pid=_live_pid())
    assert claim(claims, due=("a",), worker="w2") is None  # alive: held
    _set(claims, "a", pid=_dead_pid())
    taken = claim(claims, due=(), worker="w2")  # not due, but its holder died mid-run
    assert taken is not None and taken.org == "a" and taken.recovering


def test_a_pending_recovery_is_claimed_without_a_due_feed_until_a_run_completes(
    claims: Store,
) -> None:
    held = claim(claims, due=("a",))
    _set(claims, "a", host="elsewhere")
    taken = claim(claims, due=(), now=held.expires_at, worker="w2")
    assert taken is not None and taken.recovering
    assert claims.release_claim(taken, recovered=False)  # e.g. the run lease was held
    again = claim(claims, due=(), now=held.expires_at, worker="w3")
    assert again is not None and again.org == "a" and again.recovering
    assert claims.release_claim(again, recovered=True)
    assert claim(claims, due=(), now=held.expires_at, worker="w4") is None


def test_renewing_moves_the_expiry(claims: Store) -> None:
    held = claim(claims, due=("a",))
    _set(claims, "a", host="elsewhere")
    assert claims.renew_claim(held, held.expires_at + timedelta(minutes=5))
    assert claim(claims, due=("a",), now=held.expires_at, worker="w2") is None
    later = held.expires_at + timedelta(minutes=5)
    assert claim(claims, due=("a",), now=later, worker="w2") is not None


def test_a_failed_run_holds_its_org_back_until_not_before(claims: Store) -> None:
    held = claim(claims, due=("a",))
    back = NOW + timedelta(minutes=15)
    assert claims.release_claim(held, recovered=False, not_before=back)
    assert claim(claims, due=("a",), now=back - timedelta(seconds=1)) is None
    assert claim(claims, due=("a",), now=back).org == "a"


def test_the_claim_is_renewed_from_a_thread_while_the_block_runs(database: str) -> None:
    store = open_store(database)
    try:
        store.sync_feeds(Config(feeds=(FeedConfig(name="f", url="http://a.example/f", org="a"),)))
        store.add_claim_rows()
        held = store.claim_org(("a",), ("a",), "w1", utcnow(), 1.5, pid=_live_pid())
        assert held is not None
        with store.claim_renewed(held, 1.5):
            time.sleep(2.5)  # past the first expiry: renewed every 0.5 s
            row = store.org_claim_rows()[0]
            assert row.owner == held.owner
            assert row.expires_at > held.expires_at.isoformat().replace("+00:00", "Z")
            assert store.claim_org(("a",), ("a",), "w2", utcnow(), 1.5, pid=_live_pid()) is None
    finally:
        store.close()


def spec(name: str, org: str, fetched_minutes_ago: float | None, poll: float = 15.0) -> FeedSpec:
    fetched = None if fetched_minutes_ago is None else NOW - timedelta(minutes=fetched_minutes_ago)
    return FeedSpec(
        name=name, org=org, url="http://x.example/", poll_minutes=poll, last_fetched_at=fetched
    )


def test_due_orgs_follow_each_feeds_poll_interval_longest_waiting_first() -> None:
    specs = [
        spec("a1", "a", 14.9),  # due in 6 s
        spec("b1", "b", 15.0),  # due now
        spec("c1", "c", 30.0),  # due 15 min ago
        spec("c2", "c", 1.0),
        spec("d1", "d", None),  # never fetched: due at once, first
    ]
    assert due_orgs(specs, NOW) == ["d", "c", "b"]
    assert due_orgs(specs, NOW + timedelta(seconds=6)) == ["d", "c", "b", "a"]


def test_feeds_to_run_are_the_due_ones_longest_waiting_first_up_to_the_limit() -> None:
    specs = [spec("x", "a", 16.0), spec("y", "a", 40.0), spec("z", "a", 5.0), spec("w", "a", None)]
    assert feeds_to_run(specs, NOW, None) == ["w", "y", "x"]
    assert feeds_to_run(specs, NOW, 2) == ["w", "y"]
    assert feeds_to_run(specs, NOW - timedelta(minutes=2), None) == ["w", "y"]


def test_on_postgresql_claims_skip_locked_rows_and_never_wait_for_the_writer_lock(
    postgres_server: Any,
) -> None:
    """Another claimer holding org a's row (mid-claim) makes this claim take b at once,
    not wait; a writer holding the store's writer lock (another worker storing its run)
    does not delay a claim either."""
    url = postgres_server.fresh_database(migrated=True)
    store, locker = open_store(url), connect(url)
    try:
        feeds = tuple(FeedConfig(name=f"{o}-feed", url="http://x.example/f", org=o) for o in ORGS)
        store.sync_feeds(Config(feeds=feeds))
        store.add_claim_rows()
        locker.conn.execute("BEGIN IMMEDIATE")  # the writer lock, as a run's store step
        locker.conn.execute(
            "SELECT org_id FROM org_claims WHERE org_id = (SELECT id FROM orgs WHERE name = ?)"
            " FOR UPDATE",
            ("a",),
        ).fetchall()
        started = time.monotonic()
        taken = claim(store)
        assert time.monotonic() - started < 2
        assert taken is not None and taken.org == "b"  # a comes first, but is locked
        locker.conn.execute("ROLLBACK")
        assert claim(store).org == "a"
    finally:
        store.close()
        locker.close()
        postgres_server.drop(url)
