"""A run's writes: the configured feeds, a run's start and end, and ONE transaction of its
results (items, bodies, the feeds' new ETag / Last-Modified), so a run killed half-way leaves
the store as it was before the run and the next run simply does the work again: no
half-stored batch, no feed whose ETag says "seen" while its entries were lost."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from feedmd.errors import ConfigError
from feedmd.fingerprints.urls import host_of
from feedmd.models import (
    Candidate,
    Decision,
    FeedResult,
    LinkResolution,
    Page,
    RetryBatch,
    Stage1Result,
)
from feedmd.settings import Settings
from feedmd.settings.bodies import prose_settings_version
from feedmd.settings.config import Config
from feedmd.store.event_pending import MODEL_FAILED, add_pending, resolve_pending
from feedmd.store.events import EventRow, write_events
from feedmd.store.keys import add_item_keys, bodies_changing, sync_dirty
from feedmd.store.schema import Connected, Connection, inserted_id, to_signed64, transaction
from feedmd.timeutil import iso

# How long after its n-th failed fetch in a row a feed polled every p minutes is due again:
# the retry policy's (``feedmd.stages.retry.feed_due_after_error``), given by the caller.
FeedRetryAfter = Callable[[int, float], timedelta]


@dataclass(frozen=True)
class StoredItems:
    """Ids given to this run's items, keyed by entry key, and the kept ones (recovered
    failed items now kept included); how many retries stopped because their item left its
    dedup window."""

    ids: dict[str, int]
    kept: list[int]
    retries_expired: int = 0


# A body fingerprinted again (other prose settings): the one statement both the scrape's
# stale pages and the window refresh use.
_UPDATE_FINGERPRINTS = (
    "UPDATE bodies SET prose = ?, prose_chars = ?, digest = ?, no_digest_reason = ?,"
    " shingles = ?, extractor = ?, settings_version = ? WHERE id = ?"
)


def _fingerprints(page: Page, version: str) -> tuple[Any, ...]:
    """The parameters of ``_UPDATE_FINGERPRINTS`` for one page."""
    return (
        page.prose,
        len(page.prose),
        page.digest,
        page.no_digest_reason,
        page.shingles,
        page.extractor,
        version,
        page.body_id,
    )


class RunWrites(Connected):
    """Everything a run writes."""

    def sync_feeds(self, config: Config) -> None:
        """Create or update the orgs and feeds declared in the config.

        A feed stays in the org that first stored it: a config (or a second config on the
        same store) that names it under another org raises ConfigError naming both, since
        runs hold leases per org, and two runs of two orgs must never work on one feed."""
        now = iso(datetime.now().astimezone())
        with transaction(self._db) as conn:  # checked inside: a second process waits
            for feed in config.feeds:
                owner = self.feed_org(feed.name)
                if owner is not None and owner != feed.org:
                    raise ConfigError(
                        f"{config.source}: feed {feed.name!r} is declared in org {feed.org!r}"
                        f" but the store has it in org {owner!r}; feed names are unique across"
                        " orgs (give the feed another name to start it afresh in this org)"
                    )
            for org in config.orgs:
                conn.execute(
                    "INSERT INTO orgs (name, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                    (org, now),
                )
            for feed in config.feeds:
                org_id = self._org_id(feed.org)
                conn.execute(
                    "INSERT INTO feeds (org_id, name, url, title, poll_minutes)"
                    " VALUES (?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET"
                    " url = excluded.url, title = excluded.title,"
                    " poll_minutes = excluded.poll_minutes",
                    (org_id, feed.name, feed.url, feed.title, feed.poll_minutes),
                )

    def feed_org(self, name: str) -> str | None:
        """The org a stored feed belongs to, or None when no feed has that name."""
        row = self._conn.execute(
            "SELECT o.name FROM feeds f JOIN orgs o ON o.id = f.org_id WHERE f.name = ?", (name,)
        ).fetchone()
        return str(row[0]) if row else None

    def start_run(self, now: datetime, started: datetime, settings: Settings) -> int:
        """Record a run as started (committed at once, so a crash leaves a trace)."""
        with transaction(self._db) as conn:
            return (
                inserted_id(
                    conn,
                    "INSERT INTO runs (started_at, as_of, status, settings_json)"
                    " VALUES (?, ?, 'running', ?)",
                    (iso(started), iso(now), json.dumps(settings.describe(), sort_keys=True)),
                )
                or 0
            )

    def fail_run(self, run_id: int, finished: datetime, error: str) -> None:
        """Mark a run failed (an unexpected error; nothing of its batch was stored)."""
        with transaction(self._db) as conn:
            conn.execute(
                "UPDATE runs SET status = 'failed', finished_at = ?, report_json = ? WHERE id = ?",
                (iso(finished), json.dumps({"error": error}), run_id),
            )

    def finish_run(
        self, run_id: int, finished: datetime, status: str, report: Mapping[str, Any]
    ) -> None:
        """Record the run's end, status and report."""
        with transaction(self._db) as conn:
            conn.execute(
                "UPDATE runs SET status = ?, finished_at = ?, report_json = ? WHERE id = ?",
                (status, iso(finished), json.dumps(report, sort_keys=True), run_id),
            )

    def persist(
        self,
        run_id: int,
        feeds: Sequence[FeedResult],
        stage1: Stage1Result,
        pages: Mapping[tuple[str, str], Page],
        stage2: Mapping[str, Decision],
        settings: Settings,
        now: datetime,
        feed_retry_after: FeedRetryAfter,
        retries: RetryBatch | None = None,
        events: Sequence[EventRow] = (),
        event_pending: Sequence[str] = (),
        events_resolved: Sequence[int] = (),
    ) -> StoredItems:
        """Write the run's feeds state, bodies and items in one transaction (a feed whose
        fetch failed is due again after ``feed_retry_after(failures in a row, its poll
        minutes)``, the retry policy's answer); with
        ``retries``, also the attempts and the recovered items' decisions (``stage2`` then
        holds the decisions of the items fetched again, by their entry keys); with
        ``events``, the kept items' event decisions (``feedmd/store/events.py``; rows keyed
        by ``str(item id)`` are waiting items caught up); ``event_pending``, the entry keys
        of kept items left waiting for an event; ``events_resolved``, the ids of waiting
        items whose wait ends (``feedmd/store/event_pending.py``)."""
        version = prose_settings_version(settings)
        # the items fetched again keep their ids: this run's matches may point at them
        ids: dict[str, int] = {d.key: d.item_id for d in retries.due} if retries else {}
        kept: list[int] = []
        expired = 0
        with transaction(self._db) as conn:
            for result in feeds:
                self._update_feed(conn, result, now, feed_retry_after)
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
                item_id = (
                    inserted_id(
                        conn,
                        f"INSERT INTO items (run_id, feed_id, org_id, {ENTRY_COLUMNS}, stage,"
                        " decision, rule, score, threshold, matched_item_id, evidence_json, error,"
                        " window_hours, scope, body_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
                        " ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            run_id,
                            feed_ids[entry.feed],
                            org_ids[entry.org],
                            *entry_values(candidate),
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
                    or 0
                )
                ids[candidate.key] = item_id
                if decision.decision == "kept":
                    kept.append(item_id)
            add_item_keys(conn, kept)
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
            if retries is not None:
                again = {c.key: c for c in retries.candidates}
                recovered, expired = self._write_retries(  # type: ignore[attr-defined]
                    conn, run_id, retries, stage2, again, ids, body_ids, now
                )
                kept += recovered
            caught = {str(item_id): item_id for item_id in events_resolved}
            write_events(conn, events, {**caught, **ids})
            add_pending(conn, [ids[k] for k in event_pending if k in ids], MODEL_FAILED, now)
            resolve_pending(conn, events_resolved)
            sync_dirty(conn)  # the keys of whatever else this transaction changed
        return StoredItems(ids=ids, kept=kept, retries_expired=expired)

    def _update_feed(
        self, conn: Connection, result: FeedResult, now: datetime, retry_after: FeedRetryAfter
    ) -> None:
        if result.status == "deferred":
            return  # left for the next run: its fetch state stays as it was
        if result.status == "error":
            # one more failure in a row: due again after a backoff, sooner than its poll
            row = conn.execute(
                "SELECT error_streak, poll_minutes FROM feeds WHERE name = ?", (result.feed,)
            ).fetchone()
            streak = (row[0] if row else 0) + 1
            due = now + retry_after(streak, row[1] if row else 0)
            conn.execute(
                "UPDATE feeds SET last_fetched_at = ?, last_status = 'error',"
                " last_http_status = ?, last_error = ?, error_streak = ?, next_due_at = ?"
                " WHERE name = ?",
                (iso(now), result.http_status, result.error, streak, iso(due), result.feed),
            )
            return
        conn.execute(
            "UPDATE feeds SET etag = ?, last_modified = ?, last_fetched_at = ?,"
            " last_status = ?, last_http_status = ?, last_error = NULL, error_streak = 0,"
            " next_due_at = NULL WHERE name = ?",
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
        conn: Connection,
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
            "INSERT INTO body_lines (body_id, org_id, host, line_key)"
            " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            rows,
        )

    def _upsert_body(self, conn: Connection, page: Page, version: str, now: datetime) -> int:
        if page.body_id is not None:
            if page.stale:
                with bodies_changing(conn, [page.body_id]):
                    conn.execute(_UPDATE_FINGERPRINTS, _fingerprints(page, version))
            return page.body_id
        org_id = conn.execute("SELECT id FROM orgs WHERE name = ?", (page.org,)).fetchone()[0]
        existing = conn.execute(
            "SELECT id FROM bodies WHERE org_id = ? AND url_hash = ?", (org_id, page.url_hash)
        ).fetchall()
        with bodies_changing(conn, [row[0] for row in existing]):
            self._write_body(conn, org_id, page, version, now)
        return int(
            conn.execute(
                "SELECT id FROM bodies WHERE org_id = ? AND url_hash = ?", (org_id, page.url_hash)
            ).fetchone()[0]
        )

    def _write_body(
        self, conn: Connection, org_id: int, page: Page, version: str, now: datetime
    ) -> None:
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

    def update_fingerprints(self, pages: Iterable[Page], settings: Settings) -> int:
        """Store recomputed prose, digests and shingles of existing bodies; return how many."""
        version = prose_settings_version(settings)
        rows = [_fingerprints(p, version) for p in pages if p.body_id is not None]
        if not rows:
            return 0
        with (
            transaction(self._db) as conn,
            bodies_changing(conn, [row[-1] for row in rows]),
        ):
            conn.executemany(_UPDATE_FINGERPRINTS, rows)
        return len(rows)

    def save_resolutions(self, resolutions: Iterable[LinkResolution], now: datetime) -> None:
        """Remember successful resolutions (failures are retried when the link comes back)."""
        rows = [
            (r.link, r.url, r.method, iso(now)) for r in resolutions if r.method != "unresolved"
        ]
        if not rows:
            return
        with transaction(self._db) as conn:
            conn.executemany(
                "INSERT INTO link_resolutions (link, url, method, resolved_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (link) DO UPDATE SET url = excluded.url,"
                " method = excluded.method, resolved_at = excluded.resolved_at",
                rows,
            )


# The columns of an item that come from its entry and stage 1's keys, in this order: what
# persist and the bulk loader (seed.py) write alike.
ENTRY_COLUMNS = (
    "entry_id, link, link_resolution, url_raw, url, url_hash, title_raw, title_norm, simhash,"
    " publisher, summary, published_at, fetched_at"
)


def entry_values(candidate: Candidate) -> tuple[Any, ...]:
    """The values of ``ENTRY_COLUMNS`` for a candidate."""
    entry = candidate.entry
    return (
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
