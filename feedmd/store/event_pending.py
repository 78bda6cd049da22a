"""Kept items waiting for an event decision (migration 0016, docs/events.md "Caught up
later"): the items a run kept while the event model could not load or encode, and the
items a reviewer restored with "Not a duplicate". Later runs of the org with events on
decide them oldest first, a few per run, and remove their rows in the run's transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from feedmd.store.schema import Connected, Connection, chunks
from feedmd.timeutil import iso

# Why an item waits: its run could not place it, or a reviewer restored it.
MODEL_FAILED = "model"
RESTORED = "restored"


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
