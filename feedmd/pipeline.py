"""The conductor: one run of every due feed, as six numbered steps.

1. fetch    due feeds -> entries (conditional GET, links resolved, old entries skipped)
2. stage 1  entries + the window snapshot -> decisions on metadata alone (window bodies
            fingerprinted under other prose settings are fingerprinted again first, from
            their stored Markdown)
3. scrape   stage-1 survivors only -> pages, Markdown, prose, digests
4. stage 2  survivors + pages + the window snapshot -> decisions on bodies
5. store    one transaction: items, bodies, feed state
6. deliver  each touched feed's JSON Feed and Atom files

The steps own all the logic; this module only calls them in order and times them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime

from feedmd.config import Config
from feedmd.report import RunReport, build_report
from feedmd.stages import deliver, fetch, scrape, stage1, stage2
from feedmd.stages.store import Store
from feedmd.timeutil import iso, utcnow


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
) -> RunReport:
    """Run every due feed once (all feeds with ``force``) and return the run report.

    ``now`` is the time windows are measured from (default: the clock); replaying an
    archived day passes that day's time.
    """
    now = now or utcnow()
    settings = config.settings
    store.sync_feeds(config)
    run_id = store.start_run(now, utcnow(), settings)
    timer = _Timer()
    try:
        feeds = fetch.due_feeds(store.feed_specs(f.name for f in config.feeds), now, force)
        with timer.step("fetch"):
            fetched = fetch.fetch_feeds(feeds, settings, now)
            entries = [entry for result in fetched for entry in result.entries]
            cached = store.cached_resolutions(fetch.links_to_resolve(entries))
            entries, learned = fetch.resolve_entries(entries, cached, settings)
            store.save_resolutions(learned, now)
        with timer.step("stage1"):
            stale = store.stale_bodies(settings, now)
            store.update_fingerprints([scrape.refingerprint(p, settings) for p in stale], settings)
            snapshot = store.snapshot(entries, settings, now)
            first = stage1.decide(entries, snapshot, store.known_entries(entries), settings, now)
        with timer.step("scrape"):
            keys = scrape.page_keys(first.survivors)
            known = store.known_pages(keys, settings)
            elsewhere = store.pages_elsewhere(k for k in keys if k not in known)
            pages = scrape.scrape(first.survivors, known, settings, on_page, elsewhere)
            pages = scrape.without_furniture(pages, store.line_counts(pages.values()), settings)
        with timer.step("stage2"):
            second = stage2.decide(first.survivors, pages, snapshot, settings, now)
        with timer.step("store"):
            stored = store.persist(run_id, fetched, first, pages, second, settings, now)
        with timer.step("deliver"):
            delivered = deliver.publish(
                store,
                run_id,
                stored.kept,
                output_dir or config.output.directory,
                config.output.base_url,
                now,
            )
        report = build_report(
            run_id, iso(now), fetched, first, pages, second, delivered, timer.seconds
        )
    except BaseException as exc:
        store.fail_run(run_id, utcnow(), f"{type(exc).__name__}: {exc}")
        raise
    store.finish_run(run_id, utcnow(), report.status, report.as_dict())
    return report
