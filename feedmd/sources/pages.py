"""The survivors' article pages over HTTP, for step 3 (scrape).

Only the pages ``stages.scrape.plan_pages`` lists are requested: every item stage 1
dropped is a page never paid for. A page another org stored is asked for conditionally
(its ETag / Last-Modified), and a 304 reuses that copy. Each response is handed, as it
arrives, to the caller's ``PageReducer`` (``stages.scrape.PageReduction``: trafilatura,
prose, digest) in a worker thread, so the other requests keep running. Non-HTML
responses are recorded as such and not parsed; HTTP errors, timeouts and oversized
bodies become failed pages with a reason, and the run goes on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Protocol

from feedmd.errors import FetchError
from feedmd.models import HTML_TYPES, Page
from feedmd.settings import Settings
from feedmd.sources.http import Fetcher

PageKey = tuple[str, str]  # (org, page key)


class PageReducer(Protocol):
    """What a fetched page becomes: the caller's reduction (the sources never parse)."""

    extractor: str  # stamped on every page, failed ones included

    def extract(self, base: Page, body: bytes) -> Page:
        """A fresh HTML body -> the page with its Markdown, prose and digest."""
        ...

    def revalidated(self, copy: Page) -> Page:
        """A known copy confirmed by a 304 -> fingerprinted again."""
        ...


def fetch_pages(
    targets: Mapping[PageKey, str],
    settings: Settings,
    reducer: PageReducer,
    on_page: Callable[[int, int], None] | None = None,
    elsewhere: Mapping[str, Page] | None = None,
    deadline: float | None = None,
) -> dict[PageKey, Page]:
    """Fetch and reduce the page of every target URL by its (org, page key).

    ``elsewhere`` maps page keys to copies another org stored: the request then carries
    their ETag / Last-Modified, and a 304 reuses that copy's Markdown. Fetches not done at
    ``deadline`` (``time.monotonic()``) are cancelled and their keys left out of the
    result: neither fetched nor failed (the conductor leaves their feeds for the next
    run)."""
    return asyncio.run(_fetch_pages(targets, settings, reducer, on_page, elsewhere or {}, deadline))


async def _fetch_pages(
    targets: Mapping[PageKey, str],
    settings: Settings,
    reducer: PageReducer,
    on_page: Callable[[int, int], None] | None,
    elsewhere: Mapping[str, Page],
    deadline: float | None = None,
) -> dict[PageKey, Page]:
    done = 0

    async with Fetcher(settings) as fetcher:

        async def one(key: PageKey) -> tuple[PageKey, Page]:
            nonlocal done
            page = await fetch_page(fetcher, key, targets[key], reducer, elsewhere.get(key[1]))
            done += 1
            if on_page is not None:
                on_page(done, len(targets))
            return key, page

        if deadline is None:
            return dict(await asyncio.gather(*(one(key) for key in targets)))
        tasks = [asyncio.create_task(one(key)) for key in targets]
        if not tasks:
            return {}
        finished, late = await asyncio.wait(tasks, timeout=max(0.0, deadline - time.monotonic()))
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        return dict(task.result() for task in tasks if task in finished)


async def fetch_page(
    fetcher: Fetcher, key: PageKey, url: str, reducer: PageReducer, cached: Page | None = None
) -> Page:
    """Fetch one page and reduce it; failures become a failed Page with a reason. With a
    ``cached`` copy the request is conditional, and a 304 reuses the copy's Markdown."""
    org, page_key = key
    base = Page(url_hash=page_key, url=url, org=org, status="failed", extractor=reducer.extractor)
    headers = {}
    if cached is not None and cached.etag:
        headers["If-None-Match"] = cached.etag
    if cached is not None and cached.last_modified:
        headers["If-Modified-Since"] = cached.last_modified
    try:
        response = await fetcher.get(url, headers)
    except FetchError as exc:
        return replace(base, error=f"scrape failed: {exc}")
    if response.status == 304 and cached is not None:
        copy = replace(
            cached, org=org, url=url, status="ok", body_id=None, stale=False, http_status=304
        )
        return reducer.revalidated(copy) if copy.content_type in HTML_TYPES else copy
    base = replace(
        base,
        http_status=response.status,
        content_type=response.content_type,
        etag=response.headers.get("etag"),
        last_modified=response.headers.get("last-modified"),
    )
    if response.status >= 400:
        return replace(base, error=f"scrape failed: HTTP {response.status}")
    if response.content_type not in HTML_TYPES:
        return replace(
            base, status="not-html", no_digest_reason=f"not HTML: {response.content_type}"
        )
    # trafilatura is CPU work: off the event loop, so other requests' deadlines keep running
    return await asyncio.to_thread(reducer.extract, base, response.body)
