"""What steps 1-4 read from the store, as plain data: feed specs, the entries already
stored, the window snapshot, stored pages, cached link resolutions, furniture counts."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta

from feedmd.fingerprints.urls import host_of, publisher_host
from feedmd.models import (
    Candidate,
    Entry,
    FeedSpec,
    LinkResolution,
    Page,
    StoredBody,
    StoredHeadline,
    WindowSnapshot,
)
from feedmd.settings import Settings
from feedmd.settings.bodies import prose_settings_version
from feedmd.store import digest_packs, headline_tokens
from feedmd.store.body_candidates import ECHO_WHERE, Echoes, add_echo, body_candidates
from feedmd.store.candidates import candidate_snapshot, needs_whole_window
from feedmd.store.keys import keys_dirty, sync_dirty
from feedmd.store.schema import Connected, Connection, chunks, to_unsigned64, transaction
from feedmd.timeutil import iso, parse_iso


class WindowReads(Connected):
    """The stages' only view of history."""

    def feed_specs(self, names: Iterable[str]) -> list[FeedSpec]:
        """The stored state (ETag, Last-Modified, last fetch) of the named feeds, in the
        order named (names not stored are left out). One query for all feeds: a worker asks
        before every claim, for every configured feed (hundreds for a large setup)."""
        rows = self._conn.execute(
            "SELECT f.name, o.name, f.url, f.poll_minutes, f.title, f.etag,"
            " f.last_modified, f.last_fetched_at, f.error_streak, f.next_due_at"
            " FROM feeds f JOIN orgs o ON o.id = f.org_id"
        ).fetchall()
        by_name = {row[0]: row for row in rows}
        specs = []
        for name in names:
            row = by_name.get(name)
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
                    error_streak=row[8],
                    next_due_at=parse_iso(row[9]) if row[9] else None,
                )
            )
        return specs

    def known_entries(self, entries: Sequence[Entry]) -> set[tuple[str, str]]:
        """The (feed, entry_id) pairs of ``entries`` already stored."""
        known: set[tuple[str, str]] = set()
        by_feed: dict[str, list[str]] = {}
        for entry in entries:
            by_feed.setdefault(entry.feed, []).append(entry.entry_id)
        for feed, ids in by_feed.items():
            for chunk in chunks(ids):
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT i.entry_id FROM items i JOIN feeds f ON f.id = i.feed_id"
                    f" WHERE f.name = ? AND i.entry_id IN ({marks})",
                    (feed, *chunk),
                )
                known.update((feed, row[0]) for row in rows)
        return known

    def snapshot(
        self, entries: Sequence[Entry], settings: Settings, now: datetime
    ) -> WindowSnapshot:
        """What stage 1 needs of the window for these entries: the stored items that can
        match them, read through their candidate keys, and the window's sums
        (``candidates.py``). Decides exactly as ``full_snapshot``; settings the keys cannot
        serve get the full snapshot."""
        if needs_whole_window(settings):
            return self.full_snapshot(entries, settings, now)
        self.sync_window_keys()
        return candidate_snapshot(self._conn, entries, settings, now)

    def body_snapshot(
        self,
        survivors: Sequence[Candidate],
        pages: Mapping[tuple[str, str], Page],
        settings: Settings,
        now: datetime,
    ) -> WindowSnapshot:
        """What stage 2 needs of the window for these survivors' pages: the kept bodies
        they can match (``candidates.body_candidates``)."""
        self.sync_window_keys()
        return body_candidates(self._conn, survivors, pages, settings, now)

    def sync_window_keys(self) -> int:
        """Recompute the candidate keys of the items stored or changed since they were
        computed (all kept items, the first time after migration 0012), in one
        transaction; return how many."""
        if (
            not keys_dirty(self._conn)
            and not digest_packs.behind(self._conn)
            and not headline_tokens.behind(self._conn)
        ):
            return 0  # the usual case: no write lock taken
        if self._conn.in_transaction:
            return self._sync(self._conn)
        with transaction(self._db) as conn:
            return self._sync(conn)

    @staticmethod
    def _sync(conn: Connection) -> int:
        if headline_tokens.behind(conn):  # a newer tokeniser than the stored tokens'
            headline_tokens.retokenise(conn)
        done = sync_dirty(conn)
        for org_id in digest_packs.behind(conn):  # digests stored before migration 0013
            digest_packs.seal(conn, org_id)
        return done

    def full_snapshot(
        self, entries: Sequence[Entry], settings: Settings, now: datetime
    ) -> WindowSnapshot:
        """Everything the window holds for the orgs of these entries (the reference the
        candidate reads are tested against). Duplicates are represented by their
        canonical item."""
        orgs = sorted({entry.org for entry in entries})
        if not orgs:
            return WindowSnapshot()
        cutoff = iso(now - timedelta(hours=settings.dedup_window_hours))
        marks = ",".join("?" * len(orgs))
        rows = self._conn.execute(
            f"SELECT i.id, f.name, o.name, i.entry_id, i.url_hash, i.title_raw, i.title_norm,"
            f" i.simhash, i.published_at, i.decision, i.matched_item_id, b.digest, b.shingles,"
            f" i.url, {ECHO_WHERE}, i.rule"
            f" FROM items i JOIN feeds f ON f.id = i.feed_id JOIN orgs o ON o.id = i.org_id"
            f" LEFT JOIN bodies b ON b.id = i.body_id"
            f" WHERE o.name IN ({marks}) AND i.published_at >= ?"
            f" AND i.decision IN ('kept', 'duplicate') ORDER BY i.id",
            (*orgs, cutoff),
        ).fetchall()
        entry_ids, url_hashes, headlines, bodies = [], [], [], []
        echoes: dict[int, Echoes] = {}
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
            url,
            echo,
            rule,
        ) in rows:
            if echo and matched:
                add_echo(echoes.setdefault(matched, Echoes()), norm, rule)
            canonical = matched if decision == "duplicate" and matched else item_id
            entry_ids.append((feed, org, entry_id, canonical))
            if hashed:
                url_hashes.append((feed, org, hashed, canonical))
            if decision != "kept":
                continue
            when = parse_iso(published)
            host = publisher_host(url) if url else ""
            headlines.append(
                StoredHeadline(
                    item_id=item_id,
                    feed=feed,
                    org=org,
                    title=title,
                    tokens=tuple(norm.split()),
                    simhash=to_unsigned64(simhash),
                    published=when,
                    host=host,
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
                        host=host,
                        tokens=tuple(norm.split()),
                    )
                )
        bodies = [  # the echoes of a body come after it, in id order
            dataclasses.replace(
                body,
                echoes=tuple(echoes[body.item_id].headlines),
                shared_block=echoes[body.item_id].shared_block,
            )
            if body.item_id in echoes
            else body
            for body in bodies
        ]
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
            row = self._conn.execute(
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
            row = self._conn.execute(
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
            row = self._conn.execute(
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
        rows = self._conn.execute(
            "SELECT DISTINCT b.id, b.url_hash, b.url, o.name, b.markdown, b.content_type"
            # from the (usually no) bodies of other settings to their items: never a scan
            # of the window's items
            " FROM bodies b INDEXED BY bodies_settings_version CROSS JOIN items i"
            " INDEXED BY items_body JOIN orgs o ON o.id = b.org_id"
            " WHERE (b.settings_version < ? OR b.settings_version > ?) AND i.body_id = b.id"
            " AND i.published_at >= ? AND i.decision = 'kept'",
            (version, version, cutoff),
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

    def cached_resolutions(self, links: Iterable[str]) -> dict[str, LinkResolution]:
        """Resolutions of these redirect links learned in earlier runs."""
        found: dict[str, LinkResolution] = {}
        for chunk in chunks(sorted(set(links))):
            marks = ",".join("?" * len(chunk))
            for link, url, method in self._conn.execute(
                f"SELECT link, url, method FROM link_resolutions WHERE link IN ({marks})",
                tuple(chunk),
            ):
                found[link] = LinkResolution(link=link, url=url, method=method)
        return found

    def line_counts(self, pages: Iterable[Page]) -> dict[tuple[str, str, str], int]:
        """On how many stored pages of the same org and host each prose line of these pages
        was printed: the evidence for furniture."""
        wanted: dict[tuple[str, str], set[str]] = {}
        for page in pages:
            if page.status == "ok" and page.line_keys:
                wanted.setdefault((page.org, host_of(page.url)), set()).update(page.line_keys)
        counts: dict[tuple[str, str, str], int] = {}
        for (org, host), keys in wanted.items():
            for chunk in chunks(sorted(keys)):
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT l.line_key, COUNT(*) FROM body_lines l JOIN orgs o ON o.id = l.org_id"
                    f" WHERE o.name = ? AND l.host = ? AND l.line_key IN ({marks})"
                    f" GROUP BY l.line_key",
                    (org, host, *chunk),
                )
                counts.update(((org, host, key), count) for key, count in rows)
        return counts
