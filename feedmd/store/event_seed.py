"""Bulk loading of event vectors for the benchmarks (``benchmarks/event_runs.py``,
``benchmarks/events.py``): rows as a run writes them, in one transaction per call, packed
as a run packs them (``event_packs``)."""

from __future__ import annotations

from collections.abc import Sequence

from feedmd.store import event_packs
from feedmd.store.schema import Connected, transaction


class EventSeeding(Connected):
    """The benchmarks' bulk loaders of event vectors."""

    def kept_without_event(self, org: str) -> list[int]:
        """Ids of the org's kept items that have no event row, oldest first."""
        return [
            int(row[0])
            for row in self._conn.execute(
                "SELECT i.id FROM items i JOIN orgs o ON o.id = i.org_id"
                " LEFT JOIN item_events e ON e.item_id = i.id"
                " WHERE o.name = ? AND i.decision = 'kept' AND e.item_id IS NULL"
                " ORDER BY i.published_at, i.id",
                (org,),
            )
        ]

    def seed_event_vectors(
        self, vectors: Sequence[tuple[int, bytes]], model: str, threshold: float
    ) -> None:
        """Store prepared vectors for stored items, each opening its own event (what a run
        with no earlier match writes), in one transaction."""
        with transaction(self._db) as conn:
            conn.executemany(
                "INSERT INTO item_events (item_id, org_id, feed_id, published_at, event_id,"
                " joined_item_id, score, threshold, model, veto, vector)"
                " SELECT i.id, i.org_id, i.feed_id, i.published_at, i.id, NULL, 0.0, ?, ?,"
                " NULL, ? FROM items i WHERE i.id = ? ON CONFLICT (item_id) DO NOTHING",
                [(threshold, model, blob, item_id) for item_id, blob in vectors],
            )
            event_packs.refresh(conn, [item_id for item_id, _ in vectors])

    def seed_window_vectors(
        self,
        org: str,
        feed: str,
        model: str,
        rows: Sequence[tuple[int, str, bytes]],
        threshold: float,
    ) -> None:
        """Store vectors as (item id, publication time, stored bytes) in the window of a
        feed, each opening its own event, without their items (the lookup benchmark: a
        million vectors in seconds; a scan's hits among them name no kept item), packed as
        a run packs them, in one transaction."""
        with transaction(self._db) as conn:
            stamp = min((row[1] for row in rows), default="")
            conn.execute(
                "INSERT INTO orgs (name, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                (org, stamp),
            )
            org_id = int(conn.execute("SELECT id FROM orgs WHERE name = ?", (org,)).fetchone()[0])
            conn.execute(
                "INSERT INTO feeds (name, org_id, url, poll_minutes) VALUES (?, ?, ?, 60)"
                " ON CONFLICT DO NOTHING",
                (feed, org_id, f"https://{feed}.invalid/"),
            )
            feed_id = int(
                conn.execute("SELECT id FROM feeds WHERE name = ?", (feed,)).fetchone()[0]
            )
            conn.executemany(
                "INSERT INTO item_events (item_id, org_id, feed_id, published_at, event_id,"
                " joined_item_id, score, threshold, model, veto, vector)"
                " VALUES (?, ?, ?, ?, ?, NULL, 0.0, ?, ?, NULL, ?)",
                [(i, org_id, feed_id, p, i, threshold, model, blob) for i, p, blob in rows],
            )
            changed = {row[0] // event_packs.PACK_ITEMS for row in rows}
            event_packs.seal(conn, org_id, model, changed)
