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
            duplicate then points at a kept item; then the kept items' events (headline
            vectors against the stored event window, ``feedmd/events/step.py``; skipped
            when ``events`` is off)
5. store    one transaction: items, bodies, feed state, event decisions
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
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from feedmd.delivery import deliver
from feedmd.events.step import group_events
from feedmd.model.walls import walls_for
from feedmd.models import (
    Candidate,
    Decision,
    Delivered,
    DueRetry,
    Entry,
    FeedResult,
    Page,
    RetryBatch,
    Stage1Result,
    WindowSnapshot,
)
from feedmd.report import RunReport, build_report, with_event_counts, with_retry_counts
from feedmd.settings import Settings
from feedmd.settings.config import Config
from feedmd.sources import fetch
from feedmd.sources import pages as article_pages
from feedmd.stages import retry, scrape, stage1, stage2
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
    deadline = time.monotonic() + settings.run_deadline_seconds
    store.sync_feeds(config)
    with store.run_lease(config.orgs, now, settings) as lease:
        run_id = lease.run_id
        timer = _Timer()
        try:
            with timer.step("fetch"):  # 1
                specs = store.feed_specs(f.name for f in config.feeds)
                fetched, entries = _fetch(store, config, now, force)
                due = _due_retries(store, config, now)
            with timer.step("stage1"):  # 2
                fetched, entries, window, first = _stage1(
                    store, fetched, entries, settings, now, due
                )
            with timer.step("scrape"):  # 3
                source = web_pages(store, settings, on_page, deadline)
                first, pages = scrape_step(store, entries, window, first, settings, now, source)
                fetched, entries, first = past_deadline(
                    fetched, entries, window, first, pages, settings, now
                )
                pages = retry_pages(store, due, pages, settings, source)
                due = [d for d in due if _page_key(d) in pages]  # the others wait
            with timer.step("stage2"):  # 4
                with_retries = retry.with_retries(first, due)
                bodies = store.body_snapshot(with_retries.survivors, pages, settings, now)
                final = decide_bodies(with_retries, pages, bodies, settings, now)
                retries = _retry_batch(config, first, due, final, now)
            with timer.step("events"):  # 4, the kept items' events
                events = group_events(store, with_retries, final, settings, now, orgs=config.orgs)
            with timer.step("store"):  # 5
                stored = store.persist(
                    run_id,
                    fetched,
                    first,
                    pages,
                    final,
                    settings,
                    now,
                    retry.feed_retry_after(settings),
                    retries=retries,
                    events=events.rows,
                    event_pending=events.pending,
                    events_resolved=events.resolved,
                )
            with timer.step("deliver"):  # 6
                items = [*lease.recovered_items, *stored.kept]
                delivered = (
                    deliver.deliver(store, config, run_id, items, now, output_dir=output_dir)
                    if deliver_outputs
                    else Delivered(0)
                )
                if deliver_outputs:  # files whose items' events changed (caught up)
                    deliver.refresh_files(store, config, events.caught_up_ids, output_dir)
            report = build_report(
                run_id, iso(now), fetched, first, pages, final, delivered, timer.seconds
            )
            report = with_retry_counts(report, retries, stored.retries_expired)
            report = with_event_counts(report, events)
            report = dataclasses.replace(report, feeds_not_due=fetch.not_due(specs, now, force))
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
    store: Store,
    entries: list[Entry],
    settings: Settings,
    now: datetime,
    retried: Sequence[Entry] = (),
) -> tuple[Window, Stage1Result]:
    """Step 2 proper: refresh window fingerprints made under other prose settings, load
    the window (of the orgs of ``entries`` and of the failed items fetched again,
    ``retried``), decide on metadata."""
    stale = store.stale_bodies(settings, now)
    if stale:
        refreshed = [scrape.refingerprint(p, settings) for p in stale]
        store.update_fingerprints(
            scrape.walls_removed(refreshed, walls_for(settings), settings), settings
        )
    snapshot = store.snapshot([*entries, *retried], settings, now)
    window = Window(snapshot, store.known_entries(entries))
    return window, stage1.decide(entries, window.snapshot, window.known, settings, now)


def _stage1(
    store: Store,
    fetched: list[FeedResult],
    entries: list[Entry],
    settings: Settings,
    now: datetime,
    due: Sequence[DueRetry] = (),
) -> tuple[list[FeedResult], list[Entry], Window, Stage1Result]:
    """Step 2: ``decide_metadata``; feeds past the run's page budget are left for the next
    run (``scrape.over_budget``)."""
    window, first = decide_metadata(store, entries, settings, now, [d.entry for d in due])
    stored = store.stored_page_keys(scrape.page_keys(first.survivors))
    deferred = scrape.over_budget(first, stored, settings.max_pages_per_run)
    if deferred:
        entries = [e for e in entries if e.feed not in deferred]
        fetched = _defer(fetched, deferred)
        first = stage1.decide(entries, window.snapshot, window.known, settings, now)
    return fetched, entries, window, first


def _defer(fetched: list[FeedResult], deferred: Collection[str]) -> list[FeedResult]:
    """The feed results with the ``deferred`` feeds left for the next run: no entries,
    fetch state untouched (``RunWrites.persist`` skips them)."""
    return [
        dataclasses.replace(r, status="deferred", entries=()) if r.feed in deferred else r
        for r in fetched
    ]


def past_deadline(
    fetched: list[FeedResult],
    entries: list[Entry],
    window: Window,
    first: Stage1Result,
    pages: dict[PageKey, Page],
    settings: Settings,
    now: datetime,
) -> tuple[list[FeedResult], list[Entry], Stage1Result]:
    """Step 3 after the run's deadline (``run_deadline_seconds``): a survivor whose page is
    not done leaves its feed for the next run, whole, like the page budget does; stage 1
    decides the other feeds' entries again (a copy of a left entry may now survive: it
    needs its page, or its feed is left too). The pages done stay (stored, reused next
    time)."""
    deferred: set[str] = set()
    while True:
        late = {c.entry.feed for c in first.survivors if (c.entry.org, c.page_key) not in pages}
        if not late:
            break
        deferred |= late
        entries = [e for e in entries if e.feed not in deferred]
        failed = frozenset(
            c.key
            for c in first.survivors
            if (page := pages.get((c.entry.org, c.page_key))) and page.status == "failed"
        )
        first = stage1.decide(entries, window.snapshot, window.known, settings, now, failed)
    return (_defer(fetched, deferred) if deferred else fetched), entries, first


def _page_key(due: DueRetry) -> PageKey:
    candidate = stage1.prepare(due.entry)
    return candidate.entry.org, candidate.page_key


def web_pages(
    store: Store,
    settings: Settings,
    on_page: Callable[[int, int], None] | None = None,
    deadline: float | None = None,
) -> PageSource:
    """A run's page source: the known pages reused, the others fetched (conditionally
    when another org stored a copy); pages not done by ``deadline`` are left out."""

    def source(survivors: list[Candidate], known: dict[PageKey, Page]) -> dict[PageKey, Page]:
        keys = scrape.page_keys(survivors)
        elsewhere = store.pages_elsewhere(k for k in keys if k not in known)
        return scrape_pages(survivors, known, settings, on_page, elsewhere, deadline)

    return source


def scrape_pages(
    survivors: Sequence[Candidate],
    known: Mapping[PageKey, Page],
    settings: Settings,
    on_page: Callable[[int, int], None] | None = None,
    elsewhere: Mapping[str, Page] | None = None,
    deadline: float | None = None,
) -> dict[PageKey, Page]:
    """A Page for every survivor's (org, page key): the ones ``scrape.plan_pages`` settles
    without a request, then the others fetched (``sources.pages``; conditionally with a
    copy from ``elsewhere``) and reduced (``scrape.PageReduction``); fetches not done by
    ``deadline`` are left out."""
    pages, targets = scrape.plan_pages(survivors, known, settings)
    reduction = scrape.PageReduction(settings)
    pages.update(
        article_pages.fetch_pages(targets, settings, reduction, on_page, elsewhere, deadline)
    )
    return pages


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
    furniture lines left out, consent walls told by meaning (``scrape.without_walls``);
    when a kept entry's page fails, its copies are decided again."""
    # the entries stage 1 found stored already (no second query for them)
    known_entries = {(e.feed, e.entry_id) for e in first.seen_before}

    def fetch_pages(survivors: list[Candidate]) -> dict[PageKey, Page]:
        known = store.known_pages(scrape.page_keys(survivors), settings)
        pages = source(survivors, known)
        pages = scrape.without_furniture(pages, store.line_counts(pages.values()), settings)
        return scrape.without_walls(pages, walls_for(settings), settings)

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


def _due_retries(store: Store, config: Config, now: datetime) -> list[DueRetry]:
    """The failed items of the configured feeds whose retry is due (``stages/retry.py``),
    at most ``item_retries_per_run``, the longest waiting first."""
    settings = config.settings
    if settings.item_retries_per_run <= 0:
        return []
    starts = now - timedelta(hours=settings.dedup_window_hours)
    feeds = [f.name for f in config.feeds]
    return store.due_retries(feeds, now, starts, settings.item_retries_per_run)


def retry_pages(
    store: Store,
    due: Sequence[DueRetry],
    pages: dict[PageKey, Page],
    settings: Settings,
    source: PageSource,
) -> dict[PageKey, Page]:
    """Step 3 for the failed items fetched again: their pages from ``source`` (a page this
    run or the org already holds is reused), furniture lines and consent walls left out."""
    survivors = [c for c in retry.candidates(due) if (c.entry.org, c.page_key) not in pages]
    if not survivors:
        return pages
    known = store.known_pages(scrape.page_keys(survivors), settings)
    fetched = source(survivors, known)
    fetched = scrape.without_furniture(fetched, store.line_counts(fetched.values()), settings)
    return {**pages, **scrape.without_walls(fetched, walls_for(settings), settings)}


def _retry_batch(
    config: Config,
    first: Stage1Result,
    due: Sequence[DueRetry],
    final: dict[str, Decision],
    now: datetime,
) -> RetryBatch:
    """What step 5 records of retries: every failed or recovering attempt with the
    policy's verdict, and the window start before which waiting retries are given up."""
    settings = config.settings
    return RetryBatch(
        due=tuple(due),
        candidates=tuple(retry.candidates(due)),
        attempts=tuple(retry.attempts_of(first, due, final, settings, now)),
        feeds=tuple(f.name for f in config.feeds),
        window_starts=now - timedelta(hours=settings.dedup_window_hours),
    )
