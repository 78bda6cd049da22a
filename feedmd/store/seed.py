"""Bulk loading of prepared items, for the window benchmark and the tests that check the
candidate reads against the whole window: rows as a run would store them (the keys a
stage computes, the body a scrape fingerprints), written in one transaction per call
without running the pipeline."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from feedmd.models import Candidate, Page
from feedmd.settings import Settings
from feedmd.settings.bodies import prose_settings_version
from feedmd.store import bulk_load, digest_packs, headline_tokens
from feedmd.store.dialect import POSTGRESQL, dialect_of
from feedmd.store.keys import add_item_keys, item_key_rows, keys_dirty
from feedmd.store.runs import ENTRY_COLUMNS, entry_values
from feedmd.store.schema import Connected, Connection, bulk_load_mode, inserted_id, transaction
from feedmd.timeutil import iso


@dataclass(frozen=True)
class SeedItem:
    """One item to store: its stage-1 keys (``stage1.prepare``), its decision and, for
    a scraped one, its fingerprinted page (``scrape.fingerprint``)."""

    candidate: Candidate
    decision: str = "kept"  # "kept", "duplicate" or "failed"
    matched_item_id: int | None = None
    page: Page | None = None


class Seeding(Connected):
    """``seed_items``: the benchmark's and the tests' bulk loader."""

    _reindex: list[str] | None = None  # in bulk-load mode: the indexes to build at the end

    def bulk_load_mode(self) -> None:
        """Load faster into a new store nothing else reads yet (``schema.bulk_load_mode``):
        the benchmark seeds its cached stores so, under a temporary name. On SQLite the key
        rows are staged and sorted in at ``finish_bulk_load`` on both cores, and the
        secondary indexes of items and bodies are built there (``bulk_load.py``)."""
        bulk_load_mode(self._conn)
        if dialect_of(self._conn) == POSTGRESQL or not self.path:
            return
        assert isinstance(self._conn, sqlite3.Connection)
        self._reindex = bulk_load.begin(self._conn, Path(self.path))

    def finish_bulk_load(self) -> None:
        """Sort the staged key rows into the key tables, build the indexes left out, and
        pack the digests (``digest_packs.seal``); a store is complete only after this."""
        if self._reindex is None:
            return
        assert isinstance(self._conn, sqlite3.Connection)
        bulk_load.finish(self._conn, Path(self.path), self._reindex)
        self._reindex = None
        with transaction(self._db) as conn:
            for (org_id,) in conn.execute("SELECT DISTINCT org_id FROM body_digests").fetchall():
                digest_packs.seal(conn, org_id)

    def seed_items(self, items: Sequence[SeedItem], settings: Settings, now: datetime) -> list[int]:
        """Store ``items`` (their feeds and orgs created as needed) under one run; return
        their item ids, in order. Keys of the kept ones are written as a run writes them."""
        version = prose_settings_version(settings)
        stamp = iso(now)
        ids: list[int] = []
        with transaction(self._db) as conn:
            if headline_tokens.behind(conn):  # the items it holds first (none, when new)
                headline_tokens.retokenise(conn)
            run_id = inserted_id(
                conn,
                "INSERT INTO runs (started_at, as_of, status, settings_json)"
                " VALUES (?, ?, 'ok', ?)",
                (stamp, stamp, json.dumps(settings.describe(), sort_keys=True)),
            )
            orgs: dict[str, int] = {}
            feeds: dict[str, int] = {}
            for item in items:
                entry = item.candidate.entry
                if entry.org not in orgs:
                    conn.execute(
                        "INSERT INTO orgs (name, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                        (entry.org, stamp),
                    )
                    orgs[entry.org] = self._org_id(entry.org)
                if entry.feed not in feeds:
                    conn.execute(
                        "INSERT INTO feeds (org_id, name, url, poll_minutes)"
                        " VALUES (?, ?, ?, 60) ON CONFLICT DO NOTHING",
                        (orgs[entry.org], entry.feed, f"https://{entry.feed}.invalid/feed"),
                    )
                    feeds[entry.feed] = int(
                        conn.execute(
                            "SELECT id FROM feeds WHERE name = ?", (entry.feed,)
                        ).fetchone()[0]
                    )
                body_id = None
                page = item.page
                if page is not None:
                    body_id = inserted_id(
                        conn,
                        "INSERT INTO bodies (org_id, url_hash, url, fetched_at, http_status,"
                        " content_type, markdown, prose, prose_chars, digest, no_digest_reason,"
                        " extractor, settings_version, shingles)"
                        " VALUES (?, ?, ?, ?, 200, 'text/html', ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            orgs[entry.org],
                            page.url_hash,
                            page.url,
                            stamp,
                            page.markdown,
                            page.prose,
                            len(page.prose),
                            page.digest,
                            page.no_digest_reason,
                            page.extractor or "seed",
                            version,
                            page.shingles,
                        ),
                    )
                ids.append(self._seed_one(run_id, feeds, orgs, item, body_id, settings))
            kept = [i for i, item in zip(ids, items, strict=True) if item.decision == "kept"]
            if self._reindex is not None:
                _stage_keys(conn, kept)
            else:
                add_item_keys(conn, kept)
            # new items, keys just written: nothing for the triggers' list to redo
            if keys_dirty(conn):
                conn.executemany(
                    "DELETE FROM window_keys_dirty WHERE item_id = ?", [(i,) for i in ids]
                )
        return ids

    def _seed_one(
        self,
        run_id: int | None,
        feeds: dict[str, int],
        orgs: dict[str, int],
        item: SeedItem,
        body_id: int | None,
        settings: Settings,
    ) -> int:
        candidate = item.candidate
        entry = candidate.entry
        stage = "stage2" if body_id is not None else "stage1"
        if item.decision == "failed":
            stage = "scrape"
        item_id = inserted_id(
            self._conn,
            f"INSERT INTO items (run_id, feed_id, org_id, {ENTRY_COLUMNS}, stage, decision,"
            " matched_item_id, window_hours, scope, body_id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                feeds[entry.feed],
                orgs[entry.org],
                *entry_values(candidate),
                stage,
                item.decision,
                item.matched_item_id,
                settings.dedup_window_hours,
                settings.dedup_scope,
                body_id,
            ),
        )
        return item_id or 0


def _stage_keys(conn: Connection, item_ids: list[int]) -> None:
    """The key rows of these kept items: staged (``bulk_load.stage``), the digest rows
    written (in publication order when items are loaded so; packed at the end)."""
    assert isinstance(conn, sqlite3.Connection)
    found = item_key_rows(conn, item_ids)
    bulk_load.stage(conn, "title_keys", list(found.titles))
    bulk_load.stage(conn, "body_keys", list(found.bodies))
    bulk_load.stage(conn, "title_pairs", list(found.pairs))
    conn.executemany(
        "INSERT INTO body_digests (org_id, published_at, item_id, feed_id, tlsh)"
        " VALUES (?, ?, ?, ?, ?)",
        found.digests,
    )
