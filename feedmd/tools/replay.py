"""`feedmd replay`: re-decide stored items under other settings, without fetching.

Every entry ever seen is in the store with its metadata, and every scraped page with its
Markdown. A replay rebuilds each original run's entries, in the original order and at the
original time, and runs them through the pipeline's own steps 2-5
(``pipeline.decide_metadata``, ``scrape_step`` with the stored Markdown as its page
source, ``decide_bodies``, then ``Store.persist``) into a temporary store, so windows,
scope, canonical choice and the re-deciding of a failed original's copies behave as in
the real runs. Then it lists the items whose decision or match changed. Nothing is
fetched and the real store is only read; the same settings give the same decisions every
time.

Items a reviewer overrode (``rule = 'override'``) keep that decision: it is a human's,
not the settings'. An item stage 1 dropped in the original run was never scraped: if it
survives the replay, it has no body and can only be matched by its headline (its evidence
says so).
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from feedmd import pipeline
from feedmd.models import Candidate, Entry, Page
from feedmd.settings import Settings
from feedmd.settings.config import Config
from feedmd.settings.values import settings_from_record
from feedmd.stages import retry, scrape
from feedmd.store import OVERRIDE_RULE, Outcome, Store, StoredRun, connect_store, open_store

NOT_SCRAPED = "replay: this page was never scraped (stage 1 dropped it in the original run)"


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


def recorded_settings(database: str | Path) -> Settings:
    """The settings of the newest stored run (the base a replay changes), else defaults."""
    source = connect_store(database)
    try:
        record = source.newest_settings_record()
    finally:
        source.close()
    return settings_from_record(record) if record else Settings()


def replay(
    database: str | Path,
    changes: Mapping[str, Any] | None = None,
    since: datetime | None = None,
) -> ReplayResult:
    """Re-decide every stored run, each under the settings it recorded with ``changes``
    laid over them, and compare with what the store recorded (see the module docstring).
    Every run is replayed, so the window before ``since`` is in place; only the runs from
    ``since`` on are compared and counted."""
    source = connect_store(database)
    try:
        runs = source.stored_runs()
        stored_pages = source.stored_pages()
        config = Config(feeds=source.feed_configs())
        original = source.outcomes()
    finally:
        source.close()
    with tempfile.TemporaryDirectory(prefix="feedmd-replay-") as folder:
        store = open_store(Path(folder) / "replay.db")
        try:
            store.sync_feeds(config)
            for stored_run in runs:
                settings = dataclasses.replace(
                    settings_from_record(stored_run.settings), **(changes or {})
                )
                _replay_run(store, stored_run.entries, stored_pages, settings, stored_run.as_of)
            replayed = store.outcomes()
        finally:
            store.close()
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
    """One stored run through the pipeline's steps 2-5, pages from the stored Markdown."""
    run_id = store.start_run(now, now, settings)
    window, first = pipeline.decide_metadata(store, entries, settings, now)
    source = _stored_page_source(stored_pages, settings)
    first, pages = pipeline.scrape_step(store, entries, window, first, settings, now, source)
    bodies = store.body_snapshot(first.survivors, pages, settings, now)
    final = pipeline.decide_bodies(first, pages, bodies, settings, now)
    store.persist(run_id, [], first, pages, final, settings, now, retry.feed_retry_after(settings))


def _stored_page_source(
    stored_pages: dict[tuple[str, str, str], Page], settings: Settings
) -> pipeline.PageSource:
    """The replay's page source: like the pipeline, a page this (replayed) store already
    holds is reused, not fingerprinted again; the others come from the stored Markdown,
    fingerprinted as a fresh scrape would; a page never scraped is skipped."""

    def source(
        survivors: list[Candidate], known: dict[tuple[str, str], Page]
    ) -> dict[tuple[str, str], Page]:
        pages: dict[tuple[str, str], Page] = {}
        for candidate in survivors:
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
        return pages

    return source


def _differences(
    runs: list[StoredRun],
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
