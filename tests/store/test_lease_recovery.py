"""Which items a new run re-delivers when it takes the lease: the kept items of its orgs
stored by runs that failed or were abandoned and that no run has recovered yet."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from feedmd.models import Entry
from feedmd.settings import Settings
from feedmd.stages import stage1
from feedmd.store import SeedItem, Store

pytestmark = pytest.mark.both_backends

NOW = datetime(2026, 10, 12, 12, tzinfo=UTC)


def _item(n: int, org: str, decision: str = "kept") -> SeedItem:
    url = f"https://recovery.example/{org}/{n}"
    entry = Entry(
        feed=f"feed-{org}",
        org=org,
        entry_id=url,
        link=url,
        url=url,
        title=f"Story number {n} of {org} about the harbour budget",
        publisher="recovery.example",
        published=NOW - timedelta(minutes=n),
        fetched=NOW,
    )
    return SeedItem(stage1.prepare(entry), decision=decision)


def _run_of(store: Store, item_id: int) -> int:
    return int(
        store._conn.execute("SELECT run_id FROM items WHERE id = ?", (item_id,)).fetchone()[0]
    )


def test_a_lease_recovers_the_kept_items_of_unrecovered_dead_runs_of_its_orgs(
    store: Store,
) -> None:
    settings = Settings()
    failed = store.seed_items(
        [_item(1, "a"), _item(2, "b"), _item(3, "a", "duplicate")], settings, NOW
    )
    abandoned = store.seed_items([_item(4, "a")], settings, NOW)
    recovered = store.seed_items([_item(5, "a")], settings, NOW)
    fine = store.seed_items([_item(6, "a")], settings, NOW)
    conn = store._conn
    conn.execute("UPDATE runs SET status = 'failed' WHERE id = ?", (_run_of(store, failed[0]),))
    conn.execute(
        "UPDATE runs SET status = 'abandoned' WHERE id = ?", (_run_of(store, abandoned[0]),)
    )
    conn.execute(
        "UPDATE runs SET status = 'failed', recovered_by = ? WHERE id = ?",
        (_run_of(store, fine[0]), _run_of(store, recovered[0])),
    )
    lease = store.start_leased_run(["a"], NOW, settings)
    try:
        # org a's kept items of the failed and the abandoned run; not org b's, not the
        # duplicate, not those of a recovered run or of a run that ended well
        assert lease.recovered_items == (failed[0], abandoned[0])
    finally:
        store.release_lease(lease, completed=False)
    lease = store.start_leased_run(["a", "b"], NOW, settings)
    try:
        assert lease.recovered_items == (failed[0], failed[1], abandoned[0])
    finally:
        store.release_lease(lease, completed=True)
    lease = store.start_leased_run(["a", "b"], NOW, settings)  # recorded as recovered now
    try:
        assert lease.recovered_items == ()
    finally:
        store.release_lease(lease, completed=False)
