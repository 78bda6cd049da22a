"""The conductor: one run of every due feed, as six numbered steps.

1. fetch    due feeds -> entries (conditional GET, redirect links resolved, with the
            store's cache of resolutions; old entries skipped)
2. stage 1  entries + the window snapshot -> decisions on metadata alone (window bodies
            fingerprinted under other prose settings are fingerprinted again first, from
            their stored Markdown)
3. scrape   stage-1 survivors only -> pages, Markdown, prose, digests (pages reused within
            the org, a host's furniture lines left out; when a kept entry's page fails,
            stage 1 decides its copies again so the story is not lost)
4. stage 2  survivors + pages + the window snapshot -> decisions on bodies; every
            duplicate then points at a kept item
5. store    one transaction: items, bodies, feed state
6. deliver  each touched feed's JSON Feed and Atom files, then webhooks

``run`` only calls the steps in order and times them; the step functions below are the
glue between a stage and the store. Replay and the headline evaluation call the same step
functions (``decide_metadata``, ``scrape_step``, ``decide_bodies``), with their own page
source instead of the web; the dry run calls ``run`` itself.

The run holds a lease on its orgs from start to end (``Store.run_lease``): a second run of
the same orgs waits for it or stops with RunLeaseHeld, and a run killed half-way is found
by the next one, which marks it abandoned and delivers in step 6 the items it had stored
but not delivered.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from feedmd.config import Config
from feedmd.models import (
    Candidate,
    Decision,
    Entry,
    FeedResult,
    Page,
    Stage1Result,
    WindowSnapshot,
)
from feedmd.report import RunReport, build_report
from feedmd.settings import Settings
from feedmd.stages import deliver, fetch, scrape, stage1, stage2
from feedmd.store import Store
from feedmd.timeutil import iso, utcnow

PageKey = tuple[str, str]


class _Timer:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = time.perf_counter() - start


def run(
    store: Store,
    config: Config,
    now: datetime | None = None,
    *,
    force: bool = False,
    output_dir: str | None = None,
    on_page: Callable[[int, int], None] | None = None,
    deliver_outputs: bool = True,
) -> RunReport:
    """Run every due feed once (all feeds with ``force``) and return the run report.

    ``now`` is the time windows are measured from (default: the clock); replaying an
    archived day passes that day's time. It is cut to whole seconds, as it is stored, so
    a replay measures windows exactly as the run did. ``deliver_outputs=False`` skips
    step 6 (the dry run).
    """
    now = (now or utcnow()).replace(microsecond=0)
    settings = config.settings
    store.sync_feeds(config)
    with store.run_lease(config.orgs, now, settings) as lease:
        run_id = lease.run_id
        timer = _Timer()
        try:
            with timer.step("fetch"):  # 1
                fetched, entries = _fetch(store, config, now, force)
            with timer.step("stage1"):  # 2
                fetched, entries, window, first = _stage1(store, fetched, entries, settings, now)
            with timer.step("scrape"):  # 3
                source = web_pages(store, settings, on_page)
                first, pages = scrape_step(store, entries, window, first, settings, now, source)
            with timer.step("stage2"):  # 4
                bodies = store.body_snapshot(first.survivors, pages, settings, now)
                final = decide_bodies(first, pages, bodies, settings, now)
            with timer.step("store"):  # 5
                stored = store.persist(run_id, fetched, first, pages, final, settings, now)
            with timer.step("deliver"):  # 6
                items = [*lease.recovered_items, *stored.kept]
                delivered = (
                    deliver.deliver(store, config, run_id, items, now, output_dir=output_dir)
                    if deliver_outputs
                    else deliver.Delivered(0)
                )
            report = build_report(
                run_id, iso(now), fetched, first, pages, final, delivered, timer.seconds
            )
        except BaseException as exc:
            store.fail_run(run_id, utcnow(), f"{type(exc).__name__}: {exc}")
            raise
        store.finish_run(run_id, utcnow(), report.status, report.as_dict())
    return report


def _fetch(
    store: Store, config: Config, now: datetime, force: bool
) -> tuple[list[FeedResult], list[Entry]]:
    """Step 1: fetch the due feeds and resolve redirect links (cached in the store)."""
    settings = config.settings
    feeds = fetch.due_feeds(store.feed_specs(f.name for f in config.feeds), now, force)
    fetched = fetch.fetch_feeds(feeds, settings, now)
    entries = [entry for result in fetched for entry in result.entries]
    cached = store.cached_resolutions(fetch.links_to_resolve(entries))
    entries, learned = fetch.resolve_entries(entries, cached, settings)
    store.save_resolutions(learned, now)
    return fetched, entries


@dataclass(frozen=True)
class Window:
    """What steps 2-4 know of history: the window snapshot, and which entries are stored."""

    snapshot: WindowSnapshot
    known: set[tuple[str, str]]


# Pages for the survivors given the pages the store already holds (``known``): the web for
# a run, the stored Markdown for a replay.
PageSource = Callable[[list[Candidate], dict[PageKey, Page]], dict[PageKey, Page]]


def decide_metadata(
    store: Store, entries: list[Entry], settings: Settings, now: datetime
) -> tuple[Window, Stage1Result]:
    """Step 2 proper: refresh window fingerprints made under other prose settings, load
    the window, decide on metadata."""
    stale = store.stale_bodies(settings, now)
    store.update_fingerprints([scrape.refingerprint(p, settings) for p in stale], settings)
    window = Window(store.snapshot(entries, settings, now), store.known_entries(entries))
    return window, stage1.decide(entries, window.snapshot, window.known, settings, now)


def _stage1(
    store: Store,
    fetched: list[FeedResult],
    entries: list[Entry],
    settings: Settings,
    now: datetime,
) -> tuple[list[FeedResult], list[Entry], Window, Stage1Result]:
    """Step 2: ``decide_metadata``; feeds past the run's page budget are left for the next
    run (``scrape.over_budget``)."""
    window, first = decide_metadata(store, entries, settings, now)
    stored = store.stored_page_keys(scrape.page_keys(first.survivors))
    deferred = scrape.over_budget(first, stored, settings.max_pages_per_run)
    if deferred:
        entries = [e for e in entries if e.feed not in deferred]
        fetched = [
            dataclasses.replace(r, status="deferred", entries=()) if r.feed in deferred else r
            for r in fetched
        ]
        first = stage1.decide(entries, window.snapshot, window.known, settings, now)
    return fetched, entries, window, first


def web_pages(
    store: Store, settings: Settings, on_page: Callable[[int, int], None] | None = None
) -> PageSource:
    """A run's page source: the known pages reused, the others fetched (conditionally
    when another org stored a copy)."""

    def source(survivors: list[Candidate], known: dict[PageKey, Page]) -> dict[PageKey, Page]:
        keys = scrape.page_keys(survivors)
        elsewhere = store.pages_elsewhere(k for k in keys if k not in known)
        return scrape.scrape(survivors, known, settings, on_page, elsewhere)

    return source


def scrape_step(
    store: Store,
    entries: list[Entry],
    window: Window,
    first: Stage1Result,
    settings: Settings,
    now: datetime,
    source: PageSource,
) -> tuple[Stage1Result, dict[PageKey, Page]]:
    """Step 3: pages for the survivors from ``source`` (reusing the org's stored pages),
    furniture lines left out; when a kept entry's page fails, its copies are decided again."""
    # the entries stage 1 found stored already (no second query for them)
    known_entries = {(e.feed, e.entry_id) for e in first.seen_before}

    def fetch_pages(survivors: list[Candidate]) -> dict[PageKey, Page]:
        known = store.known_pages(scrape.page_keys(survivors), settings)
        pages = source(survivors, known)
        return scrape.without_furniture(pages, store.line_counts(pages.values()), settings)

    def redecide(unavailable: frozenset[str]) -> Stage1Result:
        return stage1.decide(entries, window.snapshot, known_entries, settings, now, unavailable)

    return scrape.settle(first, fetch_pages(first.survivors), redecide, fetch_pages)


def decide_bodies(
    first: Stage1Result,
    pages: dict[PageKey, Page],
    snapshot: WindowSnapshot,
    settings: Settings,
    now: datetime,
) -> dict[str, Decision]:
    """Step 4: stage 2 on the survivors' pages; every duplicate then points at a kept item."""
    return stage2.finalize(first, stage2.decide(first.survivors, pages, snapshot, settings, now))
