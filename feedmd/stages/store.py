"""Store: the SQL that reads the window for the stages and writes a run's decisions.

A run's results (items, bodies, the feeds' new ETag / Last-Modified, the report) are
written in ONE transaction, so a run killed half-way leaves the store as it was before the
run and the next run simply does the work again: no half-stored batch, no feed whose ETag
says "seen" while its entries were lost.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlite_utils

from feedmd.config import Config, Settings
from feedmd.db import transaction
from feedmd.errors import RunLeaseHeld
from feedmd.models import (
    Decision,
    Entry,
    FeedResult,
    FeedSpec,
    Page,
    Stage1Result,
    StoredBody,
    StoredHeadline,
    WindowSnapshot,
)
from feedmd.stages.headlines import to_signed64, to_unsigned64
from feedmd.stages.prose import prose_settings_version
from feedmd.stages.resolve import LinkResolution
from feedmd.stages.urls import host_of
from feedmd.timeutil import iso, parse_iso, utcnow

# Values bound per IN (...) query: far under SQLite's 32,766 variables, and small enough
# that one query's plan stays an index lookup per value.
_CHUNK = 500
# Lease defaults until Settings has run_lease_seconds / run_lease_wait_seconds.
HOST = socket.gethostname()


@dataclass(frozen=True)
class StoredItems:
    """Ids given to this run's items, keyed by entry key, and the kept ones."""

    ids: dict[str, int]
    kept: list[int]


class Store:
    """The SQLite store as the pipeline uses it."""

    def __init__(self, db: sqlite_utils.Database) -> None:
        self.db = db
        self.conn: sqlite3.Connection = db.conn

    # ---- feeds and runs -------------------------------------------------------------

    def sync_feeds(self, config: Config) -> None:
        """Create or update the orgs and feeds declared in the config."""
        now = iso(datetime.now().astimezone())
        with transaction(self.db) as conn:
            for org in config.orgs:
                conn.execute(
                    "INSERT OR IGNORE INTO orgs (name, created_at) VALUES (?, ?)", (org, now)
                )
            for feed in config.feeds:
                org_id = self._org_id(feed.org)
                conn.execute(
                    "INSERT INTO feeds (org_id, name, url, title, poll_minutes)"
                    " VALUES (?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET"
                    " org_id = excluded.org_id, url = excluded.url, title = excluded.title,"
                    " poll_minutes = excluded.poll_minutes",
                    (org_id, feed.name, feed.url, feed.title, feed.poll_minutes),
                )

    def _org_id(self, name: str) -> int:
        row = self.conn.execute("SELECT id FROM orgs WHERE name = ?", (name,)).fetchone()
        return int(row[0])

    def feed_specs(self, names: Iterable[str]) -> list[FeedSpec]:
        """The stored state (ETag, Last-Modified, last fetch) of the named feeds."""
        specs = []
        for name in names:
            row = self.conn.execute(
                "SELECT f.name, o.name, f.url, f.poll_minutes, f.title, f.etag,"
                " f.last_modified, f.last_fetched_at FROM feeds f JOIN orgs o"
                " ON o.id = f.org_id WHERE f.name = ?",
                (name,),
            ).fetchone()
            if row is None:
                continue
            specs.append(
                FeedSpec(
                    name=row[0],
                    org=row[1],
                    url=row[2],
                    poll_minutes=row[3],
                    title=row[4],
                    etag=row[5],
                    last_modified=row[6],
                    last_fetched_at=parse_iso(row[7]) if row[7] else None,
                )
            )
        return specs

    def start_run(self, now: datetime, started: datetime, settings: Settings) -> int:
        """Record a run as started (committed at once, so a crash leaves a trace)."""
        with transaction(self.db) as conn:
            cursor = conn.execute(
                "INSERT INTO runs (started_at, as_of, status, settings_json)"
                " VALUES (?, ?, 'running', ?)",
                (iso(started), iso(now), json.dumps(settings.describe(), sort_keys=True)),
            )
            return int(cursor.lastrowid or 0)

    def fail_run(self, run_id: int, finished: datetime, error: str) -> None:
        """Mark a run failed (an unexpected error; nothing of its batch was stored)."""
        with transaction(self.db) as conn:
            conn.execute(
                "UPDATE runs SET status = 'failed', finished_at = ?, report_json = ? WHERE id = ?",
                (iso(finished), json.dumps({"error": error}), run_id),
            )

    # ---- run leases: one run per org at a time, and recovery after a crash ------------

    @contextmanager
    def run_lease(
        self, orgs: Sequence[str], now: datetime, settings: Settings
    ) -> Iterator[RunLease]:
        """Start a run holding the lease on ``orgs`` for as long as the block runs.

        Waits up to ``run_lease_wait_seconds`` for another live run of any of these orgs,
        then raises RunLeaseHeld. The lease is renewed from a background thread every third
        of ``run_lease_seconds`` and released at the end; when the block ends without an
        error, the dead runs whose items it delivered again are marked recovered."""
        lease = self.start_leased_run(orgs, now, settings)
        stop = threading.Event()
        beat = threading.Thread(
            target=self._renew_lease,
            args=(lease, self.path, stop),
            name=f"feedmd-lease-{lease.run_id}",
            daemon=True,
        )
        beat.start()
        completed = False
        try:
            yield lease
            completed = True
        finally:
            stop.set()
            beat.join()
            self.release_lease(lease, completed)

    def start_leased_run(self, orgs: Sequence[str], now: datetime, settings: Settings) -> RunLease:
        """Take the lease on ``orgs`` and record the run as started, in one IMMEDIATE
        transaction, waiting up to ``run_lease_wait_seconds`` for a live holder."""
        wait = settings.run_lease_wait_seconds
        deadline = time.monotonic() + wait
        pause = 0.05
        while True:
            try:
                return self._try_lease(orgs, now, settings)
            except RunLeaseHeld as held:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RunLeaseHeld(f"{held}; waited {wait:g} s", held.holder) from None
                time.sleep(min(pause, left))
                pause = min(pause * 2, 1.0)

    def _try_lease(self, orgs: Sequence[str], now: datetime, settings: Settings) -> RunLease:
        ttl = settings.run_lease_seconds
        owner = f"{HOST}:{os.getpid()}:{secrets.token_hex(6)}"
        clock = utcnow()  # leases run on the real clock, never on a replayed ``now``
        with transaction(self.db) as conn:
            org_ids = {name: self._org_id(name) for name in dict.fromkeys(orgs)}
            holders = [
                holder
                for holder in _lease_holders(conn)
                if holder.org in org_ids and holder.alive(clock)
            ]
            if holders:
                first = holders[0]
                raise RunLeaseHeld(
                    f"another feedmd run holds the lease on org {first.org!r}"
                    f" (run {first.run_id}, process {first.pid} on {first.host},"
                    f" until {first.expires_at})",
                    first,
                )
            cursor = conn.execute(
                "INSERT INTO runs (started_at, as_of, status, settings_json)"
                " VALUES (?, ?, 'running', ?)",
                (iso(clock), iso(now), json.dumps(settings.describe(), sort_keys=True)),
            )
            run_id = int(cursor.lastrowid or 0)
            ids = tuple(org_ids.values())
            marks = ",".join("?" * len(ids))
            conn.execute(f"DELETE FROM run_leases WHERE org_id IN ({marks})", ids)
            conn.executemany(
                "INSERT INTO run_leases (org_id, run_id, owner, host, pid, acquired_at,"
                " expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        org_id,
                        run_id,
                        owner,
                        HOST,
                        os.getpid(),
                        iso(clock),
                        iso(clock + timedelta(seconds=ttl)),
                    )
                    for org_id in ids
                ],
            )
            abandoned = self._abandon_dead_runs(conn, run_id, clock)
            recovered = tuple(
                row[0]
                for row in conn.execute(
                    f"SELECT i.id FROM items i JOIN runs r ON r.id = i.run_id"
                    f" WHERE r.status IN ('abandoned', 'failed') AND r.recovered_by IS NULL"
                    f" AND i.decision = 'kept' AND i.org_id IN ({marks}) ORDER BY i.id",
                    ids,
                )
            )
            recovered_runs = tuple(
                row[0]
                for row in conn.execute(
                    f"SELECT r.id FROM runs r WHERE r.status IN ('abandoned', 'failed')"
                    f" AND r.recovered_by IS NULL AND NOT EXISTS (SELECT 1 FROM items i"
                    f" WHERE i.run_id = r.id AND i.org_id NOT IN ({marks}))",
                    ids,
                )
            )
        return RunLease(
            run_id=run_id,
            owner=owner,
            orgs=tuple(org_ids),
            ttl_seconds=ttl,
            abandoned=abandoned,
            recovered_items=recovered,
            recovered_runs=recovered_runs,
        )

    def _abandon_dead_runs(
        self, conn: sqlite3.Connection, run_id: int, clock: datetime
    ) -> tuple[int, ...]:
        """Mark 'abandoned' every run left 'running' that no live lease holds: its process
        was killed (SIGKILL, power loss) before it could record an end."""
        live = {holder.run_id for holder in _lease_holders(conn) if holder.alive(clock)}
        dead = tuple(
            row[0]
            for row in conn.execute(
                "SELECT id FROM runs WHERE status = 'running' AND id != ?", (run_id,)
            )
            if row[0] not in live
        )
        note = json.dumps({"error": f"abandoned: its process ended; found by run {run_id}"})
        conn.executemany(
            "UPDATE runs SET status = 'abandoned', finished_at = ?, report_json = ? WHERE id = ?",
            [(iso(clock), note, dead_id) for dead_id in dead],
        )
        return dead

    def _renew_lease(self, lease: RunLease, path: str, stop: threading.Event) -> None:
        """Push the lease's expiry forward until ``stop`` (a thread: a long scrape step
        must not lose the lease). Uses its own connection; a busy store skips one beat."""
        if not path:
            return  # an in-memory store cannot be shared with another process anyway
        conn = sqlite3.connect(path, timeout=30, isolation_level=None)
        try:
            while not stop.wait(lease.ttl_seconds / 3):
                expires = iso(utcnow() + timedelta(seconds=lease.ttl_seconds))
                try:
                    conn.execute(
                        "UPDATE run_leases SET expires_at = ? WHERE owner = ?",
                        (expires, lease.owner),
                    )
                except sqlite3.Error:
                    continue
        finally:
            conn.close()

    def release_lease(self, lease: RunLease, completed: bool) -> None:
        """Give the lease back; after a completed run, record which dead runs it recovered."""
        with transaction(self.db) as conn:
            conn.execute("DELETE FROM run_leases WHERE owner = ?", (lease.owner,))
            if completed and lease.recovered_runs:
                conn.executemany(
                    "UPDATE runs SET recovered_by = ? WHERE id = ? AND recovered_by IS NULL",
                    [(lease.run_id, dead) for dead in lease.recovered_runs],
                )

    @property
    def path(self) -> str:
        """The store's file path ('' for an in-memory store)."""
        row = self.conn.execute("PRAGMA database_list").fetchone()
        return str(row[2] or "")

    # ---- what the stages read -------------------------------------------------------

    def known_entries(self, entries: Sequence[Entry]) -> set[tuple[str, str]]:
        """The (feed, entry_id) pairs of ``entries`` already stored."""
        known: set[tuple[str, str]] = set()
        by_feed: dict[str, list[str]] = {}
        for entry in entries:
            by_feed.setdefault(entry.feed, []).append(entry.entry_id)
        for feed, ids in by_feed.items():
            for chunk in _chunks(ids):
                marks = ",".join("?" * len(chunk))
                rows = self.conn.execute(
                    f"SELECT i.entry_id FROM items i JOIN feeds f ON f.id = i.feed_id"
                    f" WHERE f.name = ? AND i.entry_id IN ({marks})",
                    (feed, *chunk),
                )
                known.update((feed, row[0]) for row in rows)
        return known

    def snapshot(
        self, entries: Sequence[Entry], settings: Settings, now: datetime
    ) -> WindowSnapshot:
        """What the window holds for the orgs of these entries: the stages' only view of
        history. Duplicates are represented by their canonical item."""
        orgs = sorted({entry.org for entry in entries})
        if not orgs:
            return WindowSnapshot()
        cutoff = iso(now - timedelta(hours=settings.dedup_window_hours))
        marks = ",".join("?" * len(orgs))
        rows = self.conn.execute(
            f"SELECT i.id, f.name, o.name, i.entry_id, i.url_hash, i.title_raw, i.title_norm,"
            f" i.simhash, i.published_at, i.decision, i.matched_item_id, b.digest, b.shingles"
            f" FROM items i JOIN feeds f ON f.id = i.feed_id JOIN orgs o ON o.id = i.org_id"
            f" LEFT JOIN bodies b ON b.id = i.body_id"
            f" WHERE o.name IN ({marks}) AND i.published_at >= ?"
            f" AND i.decision IN ('kept', 'duplicate')",
            (*orgs, cutoff),
        ).fetchall()
        entry_ids, url_hashes, headlines, bodies = [], [], [], []
        for (
            item_id,
            feed,
            org,
            entry_id,
            hashed,
            title,
            norm,
            simhash,
            published,
            decision,
            matched,
            digest,
            shingles,
        ) in rows:
            canonical = matched if decision == "duplicate" and matched else item_id
            entry_ids.append((feed, org, entry_id, canonical))
            if hashed:
                url_hashes.append((feed, org, hashed, canonical))
            if decision != "kept":
                continue
            when = parse_iso(published)
            headlines.append(
                StoredHeadline(
                    item_id=item_id,
                    feed=feed,
                    org=org,
                    title=title,
                    tokens=tuple(norm.split()),
                    simhash=to_unsigned64(simhash),
                    published=when,
                )
            )
            if digest:
                bodies.append(
                    StoredBody(
                        item_id=item_id,
                        feed=feed,
                        org=org,
                        digest=digest,
                        published=when,
                        shingles=shingles or b"",
                    )
                )
        return WindowSnapshot(
            entry_ids=tuple(entry_ids),
            url_hashes=tuple(url_hashes),
            headlines=tuple(headlines),
            bodies=tuple(bodies),
        )

    def known_pages(
        self, keys: Iterable[tuple[str, str]], settings: Settings
    ) -> dict[tuple[str, str], Page]:
        """Bodies already scraped in the org for these (org, page key) pairs: reused, not
        fetched again. One fingerprinted under other prose settings comes back ``stale``,
        for the scrape step to fingerprint again from its stored Markdown."""
        version = prose_settings_version(settings)
        pages: dict[tuple[str, str], Page] = {}
        for org, page_key in set(keys):
            row = self.conn.execute(
                "SELECT b.id, b.url, b.http_status, b.content_type, b.markdown, b.prose,"
                " b.digest, b.no_digest_reason, b.etag, b.last_modified, b.extractor,"
                " b.shingles, b.settings_version"
                " FROM bodies b JOIN orgs o ON o.id = b.org_id"
                " WHERE o.name = ? AND b.url_hash = ?",
                (org, page_key),
            ).fetchone()
            if row is None:
                continue
            pages[(org, page_key)] = Page(
                url_hash=page_key,
                url=row[1],
                org=org,
                status="ok",
                http_status=row[2],
                content_type=row[3],
                markdown=row[4],
                prose=row[5],
                digest=row[6],
                no_digest_reason=row[7],
                etag=row[8],
                last_modified=row[9],
                extractor=row[10],
                body_id=row[0],
                shingles=row[11] or b"",
                stale=row[12] != version,
            )
        return pages

    def pages_elsewhere(self, keys: Iterable[tuple[str, str]]) -> dict[str, Page]:
        """For page keys an org has not stored, the newest copy another org stored (with its
        ETag / Last-Modified), so the request can be conditional."""
        found: dict[str, Page] = {}
        for org, page_key in set(keys):
            row = self.conn.execute(
                "SELECT b.url, b.content_type, b.markdown, b.etag, b.last_modified, o.name"
                " FROM bodies b JOIN orgs o ON o.id = b.org_id"
                " WHERE b.url_hash = ? AND o.name != ?"
                " AND (b.etag IS NOT NULL OR b.last_modified IS NOT NULL)"
                " ORDER BY b.fetched_at DESC LIMIT 1",
                (page_key, org),
            ).fetchone()
            if row is not None:
                found[page_key] = Page(
                    url_hash=page_key,
                    url=row[0],
                    org=row[5],
                    status="ok",
                    content_type=row[1],
                    markdown=row[2],
                    etag=row[3],
                    last_modified=row[4],
                )
        return found

    def stored_page_keys(self, keys: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
        """Which (org, page key) pairs have a stored body: what the page budget counts as
        reused, without loading the bodies themselves."""
        found: set[tuple[str, str]] = set()
        for org, page_key in set(keys):
            row = self.conn.execute(
                "SELECT 1 FROM bodies b JOIN orgs o ON o.id = b.org_id"
                " WHERE o.name = ? AND b.url_hash = ?",
                (org, page_key),
            ).fetchone()
            if row is not None:
                found.add((org, page_key))
        return found

    def stale_bodies(self, settings: Settings, now: datetime) -> list[Page]:
        """Bodies of kept items in the dedup window fingerprinted under other prose
        settings: their digests would not compare with fresh ones."""
        version = prose_settings_version(settings)
        cutoff = iso(now - timedelta(hours=settings.dedup_window_hours))
        rows = self.conn.execute(
            "SELECT DISTINCT b.id, b.url_hash, b.url, o.name, b.markdown, b.content_type"
            " FROM bodies b JOIN orgs o ON o.id = b.org_id JOIN items i ON i.body_id = b.id"
            " WHERE b.settings_version != ? AND i.published_at >= ? AND i.decision = 'kept'",
            (version, cutoff),
        ).fetchall()
        return [
            Page(
                url_hash=row[1],
                url=row[2],
                org=row[3],
                status="reused",
                markdown=row[4],
                content_type=row[5],
                body_id=row[0],
                stale=True,
            )
            for row in rows
        ]

    def update_fingerprints(self, pages: Iterable[Page], settings: Settings) -> int:
        """Store recomputed prose, digests and shingles of existing bodies; return how many."""
        version = prose_settings_version(settings)
        rows = [
            (
                p.prose,
                len(p.prose),
                p.digest,
                p.no_digest_reason,
                p.shingles,
                p.extractor,
                version,
                p.body_id,
            )
            for p in pages
            if p.body_id is not None
        ]
        if not rows:
            return 0
        with transaction(self.db) as conn:
            conn.executemany(
                "UPDATE bodies SET prose = ?, prose_chars = ?, digest = ?, no_digest_reason = ?,"
                " shingles = ?, extractor = ?, settings_version = ? WHERE id = ?",
                rows,
            )
        return len(rows)

    def cached_resolutions(self, links: Iterable[str]) -> dict[str, LinkResolution]:
        """Resolutions of these redirect links learned in earlier runs."""
        found: dict[str, LinkResolution] = {}
        for chunk in _chunks(sorted(set(links))):
            marks = ",".join("?" * len(chunk))
            for link, url, method in self.conn.execute(
                f"SELECT link, url, method FROM link_resolutions WHERE link IN ({marks})",
                tuple(chunk),
            ):
                found[link] = LinkResolution(link=link, url=url, method=method)
        return found

    def save_resolutions(self, resolutions: Iterable[LinkResolution], now: datetime) -> None:
        """Remember successful resolutions (failures are retried when the link comes back)."""
        rows = [
            (r.link, r.url, r.method, iso(now)) for r in resolutions if r.method != "unresolved"
        ]
        if not rows:
            return
        with transaction(self.db) as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO link_resolutions (link, url, method, resolved_at)"
                " VALUES (?, ?, ?, ?)",
                rows,
            )

    def line_counts(self, pages: Iterable[Page]) -> dict[tuple[str, str, str], int]:
        """On how many stored pages of the same org and host each prose line of these pages
        was printed: the evidence for furniture."""
        wanted: dict[tuple[str, str], set[str]] = {}
        for page in pages:
            if page.status == "ok" and page.line_keys:
                wanted.setdefault((page.org, host_of(page.url)), set()).update(page.line_keys)
        counts: dict[tuple[str, str, str], int] = {}
        for (org, host), keys in wanted.items():
            for chunk in _chunks(sorted(keys)):
                marks = ",".join("?" * len(chunk))
                rows = self.conn.execute(
                    f"SELECT l.line_key, COUNT(*) FROM body_lines l JOIN orgs o ON o.id = l.org_id"
                    f" WHERE o.name = ? AND l.host = ? AND l.line_key IN ({marks})"
                    f" GROUP BY l.line_key",
                    (org, host, *chunk),
                )
                counts.update(((org, host, key), count) for key, count in rows)
        return counts

    # ---- writing a run --------------------------------------------------------------

    def persist(
        self,
        run_id: int,
        feeds: Sequence[FeedResult],
        stage1: Stage1Result,
        pages: Mapping[tuple[str, str], Page],
        stage2: Mapping[str, Decision],
        settings: Settings,
        now: datetime,
    ) -> StoredItems:
        """Write the run's feeds state, bodies and items in one transaction."""
        version = prose_settings_version(settings)
        ids: dict[str, int] = {}
        kept: list[int] = []
        with transaction(self.db) as conn:
            for result in feeds:
                self._update_feed(conn, result, now)
            body_ids = {
                key: self._upsert_body(conn, page, version, now)
                for key, page in pages.items()
                if page.status not in ("failed", "skipped")
            }
            self._record_lines(conn, pages, body_ids)
            feed_ids = dict(conn.execute("SELECT name, id FROM feeds").fetchall())
            org_ids = dict(conn.execute("SELECT name, id FROM orgs").fetchall())
            for candidate in stage1.candidates:
                entry = candidate.entry
                decision = stage2.get(candidate.key) or stage1.decisions[candidate.key]
                matched_id = decision.matched.item_id if decision.matched else None
                body_id = body_ids.get((entry.org, candidate.page_key))
                cursor = conn.execute(
                    "INSERT INTO items (run_id, feed_id, org_id, entry_id, link,"
                    " link_resolution, url_raw, url, url_hash, title_raw, title_norm, simhash,"
                    " publisher, summary, published_at, fetched_at, stage, decision, rule,"
                    " score, threshold, matched_item_id, evidence_json, error, window_hours,"
                    " scope, body_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
                    " ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        run_id,
                        feed_ids[entry.feed],
                        org_ids[entry.org],
                        entry.entry_id,
                        entry.link,
                        entry.link_resolution,
                        entry.url,
                        candidate.url or None,
                        candidate.url_hash or None,
                        entry.title,
                        " ".join(candidate.tokens),
                        to_signed64(candidate.headline.simhash),
                        entry.publisher,
                        entry.summary,
                        iso(entry.published),
                        iso(entry.fetched),
                        decision.stage,
                        decision.decision,
                        decision.rule,
                        decision.score,
                        decision.threshold,
                        matched_id,
                        json.dumps(
                            {**stage1.decisions[candidate.key].evidence, **decision.evidence},
                            ensure_ascii=False,
                            sort_keys=True,
                        ),
                        decision.error,
                        settings.dedup_window_hours,
                        settings.dedup_scope,
                        body_id if decision.stage != "stage1" else None,
                    ),
                )
                item_id = int(cursor.lastrowid or 0)
                ids[candidate.key] = item_id
                if decision.decision == "kept":
                    kept.append(item_id)
            # matches inside the run point at items inserted in this same transaction
            for candidate in stage1.candidates:
                decision = stage2.get(candidate.key) or stage1.decisions[candidate.key]
                if decision.matched is not None and decision.matched.batch_key:
                    conn.execute(
                        "UPDATE items SET matched_item_id = ? WHERE id = ?",
                        (ids[decision.matched.batch_key], ids[candidate.key]),
                    )
                if _has_run_refs(decision.evidence):
                    evidence = {**stage1.decisions[candidate.key].evidence, **decision.evidence}
                    conn.execute(
                        "UPDATE items SET evidence_json = ? WHERE id = ?",
                        (
                            json.dumps(
                                _item_refs(evidence, ids), ensure_ascii=False, sort_keys=True
                            ),
                            ids[candidate.key],
                        ),
                    )
        return StoredItems(ids=ids, kept=kept)

    def _update_feed(self, conn: sqlite3.Connection, result: FeedResult, now: datetime) -> None:
        if result.status == "deferred":
            return  # left for the next run: its fetch state stays as it was
        if result.status == "error":
            conn.execute(
                "UPDATE feeds SET last_fetched_at = ?, last_status = 'error',"
                " last_http_status = ?, last_error = ? WHERE name = ?",
                (iso(now), result.http_status, result.error, result.feed),
            )
            return
        conn.execute(
            "UPDATE feeds SET etag = ?, last_modified = ?, last_fetched_at = ?,"
            " last_status = ?, last_http_status = ?, last_error = NULL"
            " WHERE name = ?",
            (
                result.etag,
                result.last_modified,
                iso(now),
                result.status,
                result.http_status,
                result.feed,
            ),
        )

    def _record_lines(
        self,
        conn: sqlite3.Connection,
        pages: Mapping[tuple[str, str], Page],
        body_ids: Mapping[tuple[str, str], int],
    ) -> None:
        rows = []
        for key, page in pages.items():
            if page.status != "ok" or key not in body_ids:
                continue
            org_id = conn.execute("SELECT id FROM orgs WHERE name = ?", (page.org,)).fetchone()[0]
            host = host_of(page.url)
            rows += [(body_ids[key], org_id, host, line) for line in set(page.line_keys)]
        conn.executemany(
            "INSERT OR IGNORE INTO body_lines (body_id, org_id, host, line_key)"
            " VALUES (?, ?, ?, ?)",
            rows,
        )

    def _upsert_body(
        self, conn: sqlite3.Connection, page: Page, version: str, now: datetime
    ) -> int:
        if page.body_id is not None:
            if page.stale:
                conn.execute(
                    "UPDATE bodies SET prose = ?, prose_chars = ?, digest = ?,"
                    " no_digest_reason = ?, shingles = ?, extractor = ?, settings_version = ?"
                    " WHERE id = ?",
                    (
                        page.prose,
                        len(page.prose),
                        page.digest,
                        page.no_digest_reason,
                        page.shingles,
                        page.extractor,
                        version,
                        page.body_id,
                    ),
                )
            return page.body_id
        org_id = conn.execute("SELECT id FROM orgs WHERE name = ?", (page.org,)).fetchone()[0]
        conn.execute(
            "INSERT INTO bodies (org_id, url_hash, url, fetched_at, http_status, content_type,"
            " etag, last_modified, markdown, prose, prose_chars, digest, no_digest_reason,"
            " extractor, settings_version, shingles)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT(org_id, url_hash) DO UPDATE SET url = excluded.url,"
            " fetched_at = excluded.fetched_at, http_status = excluded.http_status,"
            " content_type = excluded.content_type, etag = excluded.etag,"
            " last_modified = excluded.last_modified, markdown = excluded.markdown,"
            " prose = excluded.prose, prose_chars = excluded.prose_chars,"
            " digest = excluded.digest, no_digest_reason = excluded.no_digest_reason,"
            " extractor = excluded.extractor, settings_version = excluded.settings_version,"
            " shingles = excluded.shingles",
            (
                org_id,
                page.url_hash,
                page.url,
                iso(now),
                page.http_status,
                page.content_type,
                page.etag,
                page.last_modified,
                page.markdown,
                page.prose,
                len(page.prose),
                page.digest,
                page.no_digest_reason,
                page.extractor,
                version,
                page.shingles,
            ),
        )
        row = conn.execute(
            "SELECT id FROM bodies WHERE org_id = ? AND url_hash = ?", (org_id, page.url_hash)
        ).fetchone()
        return int(row[0])

    def finish_run(
        self, run_id: int, finished: datetime, status: str, report: Mapping[str, Any]
    ) -> None:
        """Record the run's end, status and report."""
        with transaction(self.db) as conn:
            conn.execute(
                "UPDATE runs SET status = ?, finished_at = ?, report_json = ? WHERE id = ?",
                (status, iso(finished), json.dumps(report, sort_keys=True), run_id),
            )


def _has_run_refs(evidence: Mapping[str, Any]) -> bool:
    return any(isinstance(v, dict) and "run_key" in v for v in evidence.values())


def _item_refs(evidence: Mapping[str, Any], ids: Mapping[str, int]) -> dict[str, Any]:
    """Evidence with references to entries of this run ({"run_key": k}) turned into the
    stored item ids ({"item_id": n}), now that the items have ids."""
    return {
        key: {"item_id": ids[value["run_key"]]}
        if isinstance(value, dict) and "run_key" in value and value["run_key"] in ids
        else value
        for key, value in evidence.items()
    }


def _chunks(values: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(values), _CHUNK):
        yield values[start : start + _CHUNK]


@dataclass(frozen=True)
class LeaseHolder:
    """One row of ``run_leases``: who holds an org, and until when."""

    org: str
    run_id: int
    owner: str
    host: str
    pid: int
    expires_at: str

    def alive(self, clock: datetime) -> bool:
        """Held by a live run: not expired, and on this host, by a process that exists
        (a run killed here is taken over at once, not after its expiry)."""
        if parse_iso(self.expires_at) <= clock:
            return False
        return self.host != HOST or _process_exists(self.pid)


def _process_exists(pid: int) -> bool:
    if os.name == "nt":  # os.kill(pid, 0) would terminate it there: trust the expiry
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, another user's
    return True


def _lease_holders(conn: sqlite3.Connection) -> list[LeaseHolder]:
    return [
        LeaseHolder(*row)
        for row in conn.execute(
            "SELECT o.name, l.run_id, l.owner, l.host, l.pid, l.expires_at"
            " FROM run_leases l JOIN orgs o ON o.id = l.org_id ORDER BY o.name"
        )
    ]


@dataclass(frozen=True)
class RunLease:
    """A started run and the lease it holds; what it found of runs that died."""

    run_id: int
    owner: str
    orgs: tuple[str, ...]
    ttl_seconds: float
    abandoned: tuple[int, ...]  # runs found 'running' with no live lease, now 'abandoned'
    recovered_items: tuple[int, ...]  # kept items of dead runs: delivered again (idempotent)
    recovered_runs: tuple[int, ...]  # dead runs whose every item belongs to these orgs


@dataclass(frozen=True)
class AlsoPublished:
    """A duplicate of a kept item, shown as "also published by"."""

    item_id: int
    publisher: str
    url: str
    title: str
    rule: str
    score: float | None
    stage: str


def feeds_of_items(store: Store, item_ids: Sequence[int]) -> list[str]:
    """Names of the feeds the given items belong to, sorted."""
    names: set[str] = set()
    for chunk in _chunks([str(i) for i in item_ids]):
        marks = ",".join("?" * len(chunk))
        names.update(
            row[0]
            for row in store.conn.execute(
                f"SELECT DISTINCT f.name FROM items i JOIN feeds f ON f.id = i.feed_id"
                f" WHERE i.id IN ({marks})",
                [int(i) for i in chunk],
            )
        )
    return sorted(names)


def record_deliveries(
    store: Store, run_id: int, item_ids: Sequence[int], target: str, now: datetime
) -> int:
    """Record items as delivered to ``target`` (once per item and target); return how many
    were new deliveries."""
    with transaction(store.db) as conn:
        before = conn.total_changes
        conn.executemany(
            "INSERT OR IGNORE INTO deliveries (item_id, run_id, target, status, attempts,"
            " created_at, delivered_at) VALUES (?, ?, ?, 'delivered', 1, ?, ?)",
            [(item_id, run_id, target, iso(now), iso(now)) for item_id in item_ids],
        )
        return conn.total_changes - before
