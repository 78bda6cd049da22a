"""What replay, the dry run and the evaluations read back from a store: every run's entries
as they arrived, the pages scraped for them, the feeds, and each item's outcome."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from feedmd.models import Entry, Page
from feedmd.settings.config import FeedConfig
from feedmd.store.dialect import POSTGRESQL, backend_of
from feedmd.store.schema import Connected
from feedmd.timeutil import parse_iso

# decision, rule, matched "feed/entry id" (None when unmatched)
Outcome = tuple[str, str | None, str | None]


@dataclass(frozen=True)
class StoredRun:
    """A stored run's time, its recorded settings and its entries, in stored order."""

    as_of: datetime
    settings: dict[str, Any]
    entries: list[Entry]


def copy_database(source: str | Path, target: str | Path) -> None:
    """Copy the store at ``source`` to the new SQLite file ``target``: SQLite's online
    backup (consistent even while another process writes), or from PostgreSQL a
    ``store copy`` (one snapshot read per table)."""
    if backend_of(str(source)) == POSTGRESQL:
        from feedmd.store.copy import copy_store  # copy.py reads the schema through here

        copy_store(source, target)
        return
    src = sqlite3.connect(source)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


class History(Connected):
    """Reads for replay, the dry run and the evaluations."""

    def stored_runs(self) -> list[StoredRun]:
        """Every run that stored items, oldest first, with its entries rebuilt."""
        cursor = self._conn.execute(
            "SELECT r.id, r.as_of, r.settings_json, f.name, o.name, i.entry_id, i.link,"
            " i.link_resolution, i.url_raw, i.title_raw, i.publisher, i.summary,"
            " i.published_at, i.fetched_at FROM items i JOIN runs r ON r.id = i.run_id"
            " JOIN feeds f ON f.id = i.feed_id JOIN orgs o ON o.id = i.org_id"
            " ORDER BY r.id, i.id"
        )
        runs: dict[int, StoredRun] = {}
        for (
            run_id,
            as_of,
            settings_json,
            feed,
            org,
            entry_id,
            link,
            resolution,
            url,
            title,
            publisher,
            summary,
            published,
            fetched,
        ) in cursor:
            runs.setdefault(
                run_id, StoredRun(parse_iso(as_of), json.loads(settings_json), [])
            ).entries.append(
                Entry(
                    feed=feed,
                    org=org,
                    entry_id=entry_id,
                    link=link,
                    url=url,
                    title=title,
                    publisher=publisher,
                    published=parse_iso(published),
                    fetched=parse_iso(fetched),
                    summary=summary,
                    link_resolution=resolution,
                )
            )
        return list(runs.values())

    def stored_pages(self) -> dict[tuple[str, str, str], Page]:
        """Scraped pages by (org, feed, entry_id), and failures by the same key."""
        pages: dict[tuple[str, str, str], Page] = {}
        rows = self._conn.execute(
            "SELECT o.name, f.name, i.entry_id, i.stage, i.decision, i.error, b.url_hash,"
            " b.url, b.markdown, b.content_type, b.http_status FROM items i JOIN feeds f"
            " ON f.id = i.feed_id JOIN orgs o ON o.id = i.org_id"
            " LEFT JOIN bodies b ON b.id = i.body_id"
        )
        for (
            org,
            feed,
            entry_id,
            stage,
            decision,
            error,
            hashed,
            url,
            markdown,
            kind,
            status,
        ) in rows:
            if hashed is not None:
                pages[(org, feed, entry_id)] = Page(
                    url_hash=hashed,
                    url=url,
                    org=org,
                    status="ok",
                    markdown=markdown,
                    content_type=kind,
                    http_status=status,
                )
            elif stage == "scrape" and decision == "failed":
                pages[(org, feed, entry_id)] = Page(
                    url_hash="", url="", org=org, status="failed", error=error
                )
        return pages

    def feed_configs(self) -> tuple[FeedConfig, ...]:
        """The stored feeds as configuration, in the order they were first configured."""
        return tuple(
            FeedConfig(name=name, url=url, org=org, poll_minutes=poll, title=title)
            for name, url, org, poll, title in self._conn.execute(
                "SELECT f.name, f.url, o.name, f.poll_minutes, f.title FROM feeds f"
                " JOIN orgs o ON o.id = f.org_id ORDER BY f.id"
            )
        )

    def outcomes(self) -> dict[tuple[str, str], Outcome]:
        """{(feed, entry id): (decision, rule, matched "feed/entry id")} of every item."""
        rows = self._conn.execute(
            "SELECT f.name, i.entry_id, i.decision, i.rule, mf.name, m.entry_id FROM items i"
            " JOIN feeds f ON f.id = i.feed_id LEFT JOIN items m ON m.id = i.matched_item_id"
            " LEFT JOIN feeds mf ON mf.id = m.feed_id"
        )
        return {
            (feed, entry): (decision, rule, f"{mfeed}/{mentry}" if mentry else None)
            for feed, entry, decision, rule, mfeed, mentry in rows
        }

    def entry_outcomes(self) -> dict[str, tuple[str, str | None, str | None, float | None]]:
        """{entry id: (decision, rule, matched entry id, score)}: a one-feed store's items
        (the headline evaluation's)."""
        rows = self._conn.execute(
            "SELECT i.entry_id, i.decision, i.rule, m.entry_id, i.score FROM items i"
            " LEFT JOIN items m ON m.id = i.matched_item_id"
        ).fetchall()
        return {row[0]: (row[1], row[2], row[3], row[4]) for row in rows}

    def newest_settings_record(self) -> dict[str, Any] | None:
        """The settings the newest run recorded, or None before any run."""
        row = self._conn.execute(
            "SELECT settings_json FROM runs ORDER BY id DESC LIMIT 1"
        ).fetchone()
        return json.loads(row[0]) if row else None

    def dropped_items(self, run_id: int) -> list[dict[str, Any]]:
        """Every item a run did not keep, with the item it matched (the dry run's list)."""
        cursor = self._conn.execute(
            "SELECT i.id, f.name, i.title_raw, i.publisher, i.url_raw, i.decision, i.stage,"
            " i.rule, i.score, i.threshold, i.error, m.title_raw, m.publisher FROM items i"
            " JOIN feeds f ON f.id = i.feed_id LEFT JOIN items m ON m.id = i.matched_item_id"
            " WHERE i.run_id = ? AND i.decision != 'kept' ORDER BY i.id",
            (run_id,),
        )
        keys = (
            "item",
            "feed",
            "title",
            "publisher",
            "url",
            "decision",
            "stage",
            "rule",
            "score",
            "threshold",
            "error",
            "matched_title",
            "matched_publisher",
        )
        return [dict(zip(keys, row, strict=True)) for row in cursor]

    def forget_leases(self) -> None:
        """Drop every run lease: for a copy of a store, whose leases belong to the runs of
        the original (the dry run's)."""
        self._conn.execute("DELETE FROM run_leases")
