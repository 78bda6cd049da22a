"""Kept items waiting for an event decision (migration 0016, docs/events.md "Caught up
later"): the items a run kept while the event model could not load or encode, the items
a reviewer restored with "Not a duplicate", and the kept items of the window a run with
events on finds without an event (kept while events were off, or before migration 0016).
Later runs of the org with events on decide them oldest first, a few per run, and remove
their rows in the run's transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from feedmd.store.schema import Connected, Connection, chunks, transaction
from feedmd.timeutil import iso

# Why an item waits: its run could not place it, a reviewer restored it, or it was kept
# with no event and never waited (kept while events were off, or before migration 0016).
MODEL_FAILED = "model"
RESTORED = "restored"
UNPLACED = "unplaced"


@dataclass(frozen=True)
class PendingItem:
    """A kept item waiting for its event: id, org, feed, publication time, headline."""

    item_id: int
    org: str
    feed: str
    published_at: str
    title: str
    kept: bool  # False when a reviewer merged it away since: it needs no event any more


def add_pending(conn: Connection, item_ids: Iterable[int], reason: str, now: datetime) -> None:
    """Record kept items as waiting for an event (an item with an event row already, or
    waiting already, is left as it is)."""
    conn.executemany(
        "INSERT INTO event_pending (item_id, org_id, published_at, reason, created_at)"
        " SELECT i.id, i.org_id, i.published_at, ?, ? FROM items i WHERE i.id = ?"
        " AND NOT EXISTS (SELECT 1 FROM item_events e WHERE e.item_id = i.id)"
        " ON CONFLICT (item_id) DO NOTHING",
        [(reason, iso(now), item_id) for item_id in item_ids],
    )


def resolve_pending(conn: Connection, item_ids: Sequence[int]) -> None:
    """Drop the rows of items decided (or no longer kept), in the caller's transaction."""
    for chunk in chunks(list(item_ids)):
        marks = ",".join("?" * len(chunk))
        conn.execute(f"DELETE FROM event_pending WHERE item_id IN ({marks})", list(chunk))


def _without_event(conn: Connection, item_ids: Sequence[int]) -> list[int]:
    """The items among ``item_ids`` that have no event and do not wait for one."""
    placed: set[int] = set()
    for chunk in chunks(list(item_ids)):
        marks = ",".join("?" * len(chunk))
        for table in ("item_events", "event_pending"):
            placed.update(
                int(row[0])
                for row in conn.execute(
                    f"SELECT item_id FROM {table} WHERE item_id IN ({marks})", list(chunk)
                )
            )
    return [item_id for item_id in item_ids if item_id not in placed]


class EventPending(Connected):
    """Reads of the items waiting for an event (the writes go with a run's or an
    override's transaction)."""

    def pending_events(self, orgs: Sequence[str], limit: int) -> list[PendingItem]:
        """Up to ``limit`` waiting items of ``orgs``, oldest first (publication time, id)."""
        out: list[PendingItem] = []
        if limit <= 0 or not orgs:
            return out
        marks = ",".join("?" * len(orgs))
        org_ids = [
            int(row[0])
            for row in self._conn.execute(
                f"SELECT id FROM orgs WHERE name IN ({marks}) ORDER BY id", list(orgs)
            )
        ]
        for org_id in org_ids:  # the index gives each org's oldest in order
            out += [
                PendingItem(int(r[0]), r[1], r[2], str(r[3]), str(r[4]), r[5] == "kept")
                for r in self._conn.execute(
                    "SELECT p.item_id, o.name, f.name, p.published_at, i.title_raw,"
                    " i.decision FROM event_pending p JOIN items i ON i.id = p.item_id"
                    " JOIN orgs o ON o.id = i.org_id JOIN feeds f ON f.id = i.feed_id"
                    " WHERE p.org_id = ? ORDER BY p.published_at, p.item_id LIMIT ?",
                    (org_id, limit),
                )
            ]
        out.sort(key=lambda p: (p.published_at, p.item_id))
        return out[:limit]

    def pending_event_count(self, orgs: Sequence[str]) -> int:
        """How many items of ``orgs`` wait for an event."""
        if not orgs:
            return 0
        marks = ",".join("?" * len(orgs))
        row = self._conn.execute(
            "SELECT COUNT(*) FROM event_pending p JOIN orgs o ON o.id = p.org_id"
            f" WHERE o.name IN ({marks})",
            list(orgs),
        ).fetchone()
        return int(row[0])

    def enqueue_unplaced(self, orgs: Sequence[str], since: str, now: datetime) -> int:
        """Record as waiting the kept items of ``orgs`` published at or after ``since``
        that have no event and do not wait (kept while events were off, or stored before
        migration 0016); return how many. Only the items stored since the org's last check
        are looked at (``event_checked``, migration 0018): items are read by id from the
        last checked one, so a run pays for the items stored since the last run with
        events on, not for the whole window. One transaction of its own: rows written
        before a run is killed only wait, which is what they were missing."""
        if not orgs:
            return 0
        added = 0
        with transaction(self._db) as conn:
            top = conn.execute("SELECT MAX(id) FROM items").fetchone()[0]
            if top is None:
                return 0
            marks = ",".join("?" * len(orgs))
            for (org_id,) in conn.execute(
                f"SELECT id FROM orgs WHERE name IN ({marks}) ORDER BY id", list(orgs)
            ).fetchall():
                row = conn.execute(
                    "SELECT item_id FROM event_checked WHERE org_id = ?", (org_id,)
                ).fetchone()
                checked = -1 if row is None else int(row[0])
                if checked >= int(top):
                    continue  # nothing stored since the last check
                # by the primary key alone (an org's index would walk its whole window)
                kept = [
                    int(item_id)
                    for item_id, item_org, decision, published in conn.execute(
                        "SELECT id, org_id, decision, published_at FROM items"
                        " WHERE id > ? AND id <= ?",
                        (checked, top),
                    )
                    if item_org == org_id and decision == "kept" and str(published) >= since
                ]
                found = _without_event(conn, kept)
                add_pending(conn, found, UNPLACED, now)
                added += len(found)
                conn.execute(
                    "INSERT INTO event_checked (org_id, item_id) VALUES (?, ?)"
                    " ON CONFLICT (org_id) DO UPDATE SET item_id = excluded.item_id",
                    (org_id, int(top)),
                )
        return added
