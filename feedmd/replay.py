"""`feedmd replay`: re-decide stored items under other settings, without fetching.

Every entry ever seen is in the store with its metadata, and every scraped page with its
Markdown. A replay rebuilds each original run's entries, in the original order and at the
original time, and runs them through the real stage 1, the real fingerprinting (from the
stored Markdown) and the real stage 2 into a temporary store, so windows, scope and
canonical choice behave as in the real runs. Then it lists the items whose decision or
match changed. Nothing is fetched and the real store is only read; the same settings give
the same decisions every time.

Items a reviewer overrode (``rule = 'override'``) keep that decision: it is a human's,
not the settings'. An item stage 1 dropped in the original run was never scraped: if it
survives the replay, it has no body and can only be matched by its headline (its evidence
says so).
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlite_utils

from feedmd.config import Config, FeedConfig, Settings, settings_from_record
from feedmd.db import connect, open_store
from feedmd.models import Entry, Page
from feedmd.overrides import OVERRIDE_RULE
from feedmd.stages import scrape, stage1, stage2
from feedmd.stages.store import Store
from feedmd.timeutil import parse_iso

NOT_SCRAPED = "replay: this page was never scraped (stage 1 dropped it in the original run)"

Outcome = tuple[str, str | None, str | None]  # decision, rule, matched (feed, entry) key


@dataclass(frozen=True)
class Change:
    """One item decided differently by the replay."""

    feed: str
    entry_id: str
    title: str
    before: dict[str, Any]
    after: dict[str, Any]


@dataclass(frozen=True)
class ReplayResult:
    """How many items were replayed and which changed."""

    items: int
    runs: int
    changes: list[Change]
    decisions: dict[tuple[str, str], Outcome]

    def as_dict(self) -> dict[str, Any]:
        """Plain data for --json."""
        return {
            "items": self.items,
            "runs": self.runs,
            "changed": len(self.changes),
            "changes": [dataclasses.asdict(c) for c in self.changes],
        }


@dataclass(frozen=True)
class _Run:
    as_of: datetime
    settings: dict[str, Any]
    entries: list[Entry]


def _stored_runs(db: sqlite_utils.Database) -> Iterator[_Run]:
    cursor = db.conn.execute(
        "SELECT r.id, r.as_of, r.settings_json, f.name, o.name, i.entry_id, i.link,"
        " i.link_resolution, i.url_raw, i.title_raw, i.publisher, i.summary, i.published_at,"
        " i.fetched_at FROM items i JOIN runs r ON r.id = i.run_id JOIN feeds f"
        " ON f.id = i.feed_id JOIN orgs o ON o.id = i.org_id ORDER BY r.id, i.id"
    )
    runs: dict[int, _Run] = {}
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
            run_id, _Run(parse_iso(as_of), json.loads(settings_json), [])
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
    yield from runs.values()


def _stored_pages(db: sqlite_utils.Database) -> dict[tuple[str, str, str], Page]:
    """Scraped pages by (org, feed, entry_id), and failures by the same key."""
    pages: dict[tuple[str, str, str], Page] = {}
    rows = db.conn.execute(
        "SELECT o.name, f.name, i.entry_id, i.stage, i.decision, i.error, b.url_hash, b.url,"
        " b.markdown, b.content_type, b.http_status FROM items i JOIN feeds f ON f.id ="
        " i.feed_id JOIN orgs o ON o.id = i.org_id LEFT JOIN bodies b ON b.id = i.body_id"
    )
    for org, feed, entry_id, stage, decision, error, hashed, url, markdown, kind, status in rows:
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


def _feeds(db: sqlite_utils.Database) -> tuple[FeedConfig, ...]:
    return tuple(
        FeedConfig(name=name, url=url, org=org, poll_minutes=poll, title=title)
        for name, url, org, poll, title in db.conn.execute(
            "SELECT f.name, f.url, o.name, f.poll_minutes, f.title FROM feeds f"
            " JOIN orgs o ON o.id = f.org_id ORDER BY f.id"
        )
    )


def _outcomes(store: Store) -> dict[tuple[str, str], Outcome]:
    rows = store.conn.execute(
        "SELECT f.name, i.entry_id, i.decision, i.rule, mf.name, m.entry_id FROM items i"
        " JOIN feeds f ON f.id = i.feed_id LEFT JOIN items m ON m.id = i.matched_item_id"
        " LEFT JOIN feeds mf ON mf.id = m.feed_id"
    )
    return {
        (feed, entry): (decision, rule, f"{mfeed}/{mentry}" if mentry else None)
        for feed, entry, decision, rule, mfeed, mentry in rows
    }


def recorded_settings(database: str | Path) -> Settings:
    """The settings of the newest stored run (the base a replay changes), else defaults."""
    source = connect(database)
    try:
        row = source.conn.execute(
            "SELECT settings_json FROM runs ORDER BY id DESC LIMIT 1"
        ).fetchone()
    finally:
        source.close()
    return settings_from_record(json.loads(row[0])) if row else Settings()


def replay(
    database: str | Path,
    changes: Mapping[str, Any] | None = None,
    since: datetime | None = None,
) -> ReplayResult:
    """Re-decide every stored run, each under the settings it recorded with ``changes``
    laid over them, and compare with what the store recorded (see the module docstring).
    Every run is replayed, so the window before ``since`` is in place; only the runs from
    ``since`` on are compared and counted."""
    source = connect(database)
    try:
        runs = list(_stored_runs(source))
        stored_pages = _stored_pages(source)
        config = Config(feeds=_feeds(source))
        original = _outcomes(Store(source))
    finally:
        source.close()
    with tempfile.TemporaryDirectory(prefix="feedmd-replay-") as folder:
        store = Store(open_store(Path(folder) / "replay.db"))
        try:
            store.sync_feeds(config)
            for stored_run in runs:
                settings = dataclasses.replace(
                    settings_from_record(stored_run.settings), **(changes or {})
                )
                _replay_run(store, stored_run.entries, stored_pages, settings, stored_run.as_of)
            replayed = _outcomes(store)
        finally:
            store.db.close()
    compared = [r for r in runs if since is None or r.as_of >= since]
    # a reviewer's override ("not a duplicate", "merge") is a human decision: it stands
    # under any settings, so the replay keeps it rather than re-deciding the item
    for key, outcome in original.items():
        if outcome[1] == OVERRIDE_RULE and key in replayed:
            replayed[key] = outcome
    return ReplayResult(
        items=sum(len(r.entries) for r in compared),
        runs=len(compared),
        changes=_differences(compared, original, replayed),
        decisions=replayed,
    )


def _replay_run(
    store: Store,
    entries: list[Entry],
    stored_pages: dict[tuple[str, str, str], Page],
    settings: Settings,
    now: datetime,
) -> None:
    run_id = store.start_run(now, now, settings)
    snapshot = store.snapshot(entries, settings, now)
    first = stage1.decide(entries, snapshot, store.known_entries(entries), settings, now)
    # like the pipeline: a page this (replayed) store already holds is reused, not
    # fingerprinted again; only the others come from the stored Markdown, as a fresh scrape
    known = store.known_pages(scrape.page_keys(first.survivors), settings)
    pages: dict[tuple[str, str], Page] = {}
    for candidate in first.survivors:
        entry = candidate.entry
        key = (entry.org, candidate.page_key)
        stored = stored_pages.get((entry.org, entry.feed, entry.entry_id))
        if key in known:
            page = (
                scrape.refingerprint(known[key], settings)
                if known[key].stale
                else dataclasses.replace(known[key], status="reused")
            )
        elif stored is None:
            page = Page(
                url_hash=candidate.page_key,
                url=entry.url,
                org=entry.org,
                status="skipped",
                no_digest_reason=NOT_SCRAPED,
            )
        elif stored.status == "failed":
            page = dataclasses.replace(stored, url_hash=candidate.page_key)
        else:
            page = scrape.fingerprint(
                dataclasses.replace(stored, url_hash=candidate.page_key), settings
            )
        pages.setdefault(key, page)
    pages = scrape.without_furniture(pages, store.line_counts(pages.values()), settings)
    final = stage2.finalize(first, stage2.decide(first.survivors, pages, snapshot, settings, now))
    store.persist(run_id, [], first, pages, final, settings, now)


def _differences(
    runs: list[_Run],
    original: dict[tuple[str, str], Outcome],
    replayed: dict[tuple[str, str], Outcome],
) -> list[Change]:
    titles = {(e.feed, e.entry_id): e.title for r in runs for e in r.entries}
    changes = []
    for key, title in titles.items():
        before, after = original.get(key), replayed.get(key)
        if before != after and before is not None and after is not None:
            fields = ("decision", "rule", "matched")
            changes.append(
                Change(
                    feed=key[0],
                    entry_id=key[1],
                    title=title,
                    before=dict(zip(fields, before, strict=True)),
                    after=dict(zip(fields, after, strict=True)),
                )
            )
    return changes


def summarize(changes: list[Change]) -> dict[str, int]:
    """Counts of the kinds of change (kept -> duplicate, ...)."""
    counts: defaultdict[str, int] = defaultdict(int)
    for change in changes:
        counts[f"{change.before['decision']} -> {change.after['decision']}"] += 1
    return dict(counts)
