"""Scrape: stage-1 survivors -> page -> Markdown (trafilatura) -> prose and digest.

Only survivors are fetched: every item stage 1 dropped is a page we never pay for. A page
already scraped by any feed of the same org is reused (``known``), and one URL listed by
two feeds of the org in one run is fetched once. Non-HTML responses are recorded as such
and not parsed; HTTP errors, timeouts and oversized bodies become failed pages with a
reason, and the run goes on.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace

import trafilatura

from feedmd.errors import FetchError
from feedmd.models import Candidate, Page, Stage1Result
from feedmd.settings import Settings
from feedmd.stages.bodies import pack, shingle_hashes
from feedmd.stages.http import Fetcher
from feedmd.stages.prose import PROSE_RULE_VERSION, markdown_to_prose
from feedmd.stages.urls import host_of

EXTRACTOR = f"trafilatura-{trafilatura.__version__}/{PROSE_RULE_VERSION}"
# One trafilatura extraction at a time in the process. Extraction runs in worker threads
# (off the event loop), and trafilatura / lxml are not safe to run concurrently in
# threads: native crashes (SIGSEGV, SIGABRT "munmap_chunk(): invalid pointer") are
# reported upstream for concurrent extract() calls (adbar/trafilatura issues 840 and 925,
# still open with 2.2.0). A run once died with SIGABRT "double free or corruption (out)"
# at 300k stored items (issue 13); not reproduced here (benchmarks/README.md), so this
# guards the known cause rather than a proven one. Extraction is CPU work under the GIL
# on 2 cores: the fetches still overlap, which is what concurrency buys.
_EXTRACTING = threading.Lock()
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml", ""})

PageKey = tuple[str, str]  # (org, page key)


def page_keys(survivors: Sequence[Candidate]) -> list[PageKey]:
    """The (org, page key) of every survivor: what a page is stored and reused under."""
    return [(candidate.entry.org, candidate.page_key) for candidate in survivors]


def scrape(
    survivors: Sequence[Candidate],
    known: Mapping[PageKey, Page],
    settings: Settings,
    on_page: Callable[[int, int], None] | None = None,
    elsewhere: Mapping[str, Page] | None = None,
    deadline: float | None = None,
) -> dict[PageKey, Page]:
    """Return a Page for every survivor's (org, page key): reused when known, else fetched.

    ``elsewhere`` maps page keys to copies another org stored: the request then carries
    their ETag / Last-Modified, and a 304 reuses that copy's Markdown. Fetches not done at
    ``deadline`` (``time.monotonic()``) are cancelled and their keys left out of the
    result: neither fetched nor failed (the conductor leaves their feeds for the next
    run)."""
    pages: dict[PageKey, Page] = {}
    to_fetch: dict[PageKey, str] = {}
    for candidate in survivors:
        key = (candidate.entry.org, candidate.page_key)
        if key in pages or key in to_fetch:
            continue
        if key in known:
            pages[key] = (
                refingerprint(known[key], settings)
                if known[key].stale
                else replace(known[key], status="reused")
            )
        elif candidate.entry.link_resolution == "unresolved":
            # a redirect page (Google's) says nothing about the article: not scraped
            pages[key] = Page(
                url_hash=candidate.page_key,
                url=candidate.entry.url,
                org=candidate.entry.org,
                status="skipped",
                extractor=EXTRACTOR,
                no_digest_reason="link not resolved to a publisher URL",
            )
        else:
            to_fetch[key] = candidate.entry.url
    fetched = asyncio.run(_fetch_pages(to_fetch, settings, on_page, elsewhere or {}, deadline))
    pages.update(fetched)
    return pages


async def _fetch_pages(
    targets: Mapping[PageKey, str],
    settings: Settings,
    on_page: Callable[[int, int], None] | None,
    elsewhere: Mapping[str, Page],
    deadline: float | None = None,
) -> dict[PageKey, Page]:
    done = 0

    async with Fetcher(settings) as fetcher:

        async def one(key: PageKey) -> tuple[PageKey, Page]:
            nonlocal done
            page = await fetch_page(fetcher, key, targets[key], settings, elsewhere.get(key[1]))
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
    fetcher: Fetcher, key: PageKey, url: str, settings: Settings, cached: Page | None = None
) -> Page:
    """Fetch one page and reduce it; failures become a failed Page with a reason. With a
    ``cached`` copy the request is conditional, and a 304 reuses the copy's Markdown."""
    org, page_key = key
    base = Page(url_hash=page_key, url=url, org=org, status="failed", extractor=EXTRACTOR)
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
        return fingerprint(copy, settings) if copy.content_type in HTML_TYPES else copy
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
    return await asyncio.to_thread(extract_page, base, response.body, settings)


def extract_page(base: Page, body: bytes, settings: Settings) -> Page:
    """Run trafilatura on an HTML body and fingerprint its prose (pure, no network)."""
    if not body.strip():
        return replace(base, status="ok", no_digest_reason="empty page")
    try:
        with _EXTRACTING:
            markdown = (
                trafilatura.extract(
                    body,
                    url=base.url or None,
                    output_format="markdown",
                    include_comments=False,
                    include_links=True,
                    include_tables=True,
                    include_images=False,
                )
                or ""
            )
    except Exception as exc:  # trafilatura on hostile HTML must not stop the run
        return replace(base, error=f"extraction failed: {type(exc).__name__}: {exc}")
    if len(markdown) > settings.max_markdown_chars:
        return past_extraction_budget(replace(base, status="ok", markdown=markdown), settings)
    return fingerprint(replace(base, status="ok", markdown=markdown), settings)


def past_extraction_budget(page: Page, settings: Settings) -> Page:
    """A page past the extraction budget: its Markdown cut at the last line break within
    ``max_markdown_chars`` (so the store holds a bounded text), no digest, and why."""
    limit = settings.max_markdown_chars
    cut = page.markdown[:limit]
    cut = cut[: cut.rfind("\n")] if "\n" in cut else cut
    reason = (
        f"over the extraction budget: {len(page.markdown)} characters of Markdown > "
        f"max_markdown_chars {limit}"
    )
    return replace(page, markdown=cut, prose="", digest=None, no_digest_reason=reason)


def fingerprint(page: Page, settings: Settings, furniture: frozenset[str] = frozenset()) -> Page:
    """Prose, TLSH digest and shingle hashes of a page's Markdown (pure), leaving out the
    lines known as its host's furniture."""
    prose = markdown_to_prose(page.markdown, settings, furniture)
    shingles = pack(shingle_hashes(prose.text)) if prose.digest else b""
    return replace(
        page,
        prose=prose.text,
        digest=prose.digest,
        no_digest_reason=prose.no_digest_reason,
        shingles=shingles,
        extractor=EXTRACTOR,
        line_keys=prose.line_keys,
    )


def refingerprint(page: Page, settings: Settings) -> Page:
    """A stored body fingerprinted again from its stored Markdown after the prose settings
    or rules changed: no new request to the publisher."""
    if page.content_type not in HTML_TYPES:
        return replace(page, status="reused")
    return replace(fingerprint(page, settings), status="reused", stale=True)


def page_host(page: Page) -> str:
    """The host a page's furniture is learned for."""
    return host_of(page.url)


def without_furniture(
    pages: Mapping[PageKey, Page],
    stored_counts: Mapping[tuple[str, str, str], int],
    settings: Settings,
) -> dict[PageKey, Page]:
    """Fingerprint again, without them, the pages that print a line their host prints on
    ``furniture_min_pages`` pages or more, counting the stored pages
    (``stored_counts[(org, host, line_key)]``) and this run's newly scraped ones."""
    batch: Counter[tuple[str, str, str]] = Counter()
    for page in pages.values():
        if page.status == "ok":
            host = page_host(page)
            batch.update((page.org, host, key) for key in set(page.line_keys))
    out = dict(pages)
    for key, page in pages.items():
        if page.status != "ok" or not page.line_keys:
            continue
        host = page_host(page)
        furniture = frozenset(
            line
            for line in page.line_keys
            if stored_counts.get((page.org, host, line), 0) + batch[(page.org, host, line)]
            >= settings.furniture_min_pages
        )
        if furniture:
            out[key] = replace(fingerprint(page, settings, furniture), line_keys=page.line_keys)
    return out


def settle(
    first: Stage1Result,
    pages: dict[PageKey, Page],
    redecide: Callable[[frozenset[str]], Stage1Result],
    fetch: Callable[[Sequence[Candidate]], dict[PageKey, Page]],
    rounds: int = 3,
) -> tuple[Stage1Result, dict[PageKey, Page]]:
    """When a kept entry's page failed, the entries stage 1 dropped as its copies would be
    lost with it (and it is recorded as failed). So stage 1 decides again with the failed
    entries as no one's match, and the entries that now survive are scraped; a few rounds
    at most, each fetching only pages not fetched yet."""
    unavailable: frozenset[str] = frozenset()
    for _ in range(rounds):
        failed = frozenset(
            c.key
            for c in first.survivors
            if (page := pages.get((c.entry.org, c.page_key))) and page.status == "failed"
        )
        orphaned = any(
            d.matched is not None and d.matched.batch_key in failed
            for d in first.decisions.values()
        )
        if not orphaned or failed <= unavailable:
            break
        unavailable |= failed
        first = redecide(unavailable)
        missing = [c for c in first.survivors if (c.entry.org, c.page_key) not in pages]
        pages = {**pages, **fetch(missing)}
    return first, pages


def over_budget(first: Stage1Result, known: Collection[PageKey], budget: int) -> frozenset[str]:
    """Feeds to leave for the next run so that this one fetches at most ``budget`` pages.

    Survivors are walked oldest first; a feed whose new pages would pass the budget is
    deferred whole (none of its entries decided or stored), so the next run reads it
    again from the start rather than half of it being lost."""
    pages_of: dict[str, set[PageKey]] = {}
    for candidate in first.survivors:
        key = (candidate.entry.org, candidate.page_key)
        if key not in known and candidate.entry.link_resolution != "unresolved":
            pages_of.setdefault(candidate.entry.feed, set()).add(key)
    taken: set[PageKey] = set()
    deferred: set[str] = set()
    for feed, keys in pages_of.items():
        if len(taken | keys) > budget:
            deferred.add(feed)
        else:
            taken |= keys
    return frozenset(deferred)
