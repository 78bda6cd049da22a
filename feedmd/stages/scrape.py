"""Scrape, the deciding half: which survivors need a page, and what a page becomes.

``plan_pages`` settles the survivors' pages that need no request (a page already scraped
by any feed of the same org is reused, ``known``; an unresolved redirect link is skipped)
and lists one URL per page key to fetch; ``feedmd.sources.pages`` fetches them and hands
each body to ``PageReduction``: the article's markup put together (``markup``) ->
trafilatura -> Markdown -> prose (``prose``) -> TLSH digest and shingles.
``without_furniture``, ``without_walls`` and ``settle`` are the step's later passes (a
host's furniture lines left out; short pages that read as a consent wall, by the sentence
model, left without a digest; the copies of a failed kept page decided again). No I/O
here: the conductor (``feedmd.pipeline``) wires the two halves.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace

import trafilatura
from lxml.html import HtmlElement

from feedmd.fingerprints.shingles import pack, shingle_hashes
from feedmd.fingerprints.urls import host_of
from feedmd.models import HTML_TYPES, Candidate, Page, Stage1Result
from feedmd.settings import Settings
from feedmd.settings.bodies import PROSE_RULE_VERSION
from feedmd.stages.markup import MARKUP_RULE_VERSION, prepared_tree
from feedmd.stages.prose import WallLines, markdown_to_prose, walls_by_meaning

EXTRACTOR = f"trafilatura-{trafilatura.__version__}+{MARKUP_RULE_VERSION}/{PROSE_RULE_VERSION}"
# One trafilatura extraction at a time in the process. Extraction runs in worker threads
# (off the event loop), and trafilatura / lxml are not safe to run concurrently in
# threads: native crashes (SIGSEGV, SIGABRT "munmap_chunk(): invalid pointer") are
# reported upstream for concurrent extract() calls (adbar/trafilatura issues 840 and 925,
# still open with 2.2.0). A run once died with SIGABRT "double free or corruption (out)"
# at 300k stored items (issue 13); not reproduced here (benchmarks/README.md), so this
# guards the known cause rather than a proven one. Extraction is CPU work under the GIL
# on 2 cores: the fetches still overlap, which is what concurrency buys.
_EXTRACTING = threading.Lock()

PageKey = tuple[str, str]  # (org, page key)


def page_keys(survivors: Sequence[Candidate]) -> list[PageKey]:
    """The (org, page key) of every survivor: what a page is stored and reused under."""
    return [(candidate.entry.org, candidate.page_key) for candidate in survivors]


def plan_pages(
    survivors: Sequence[Candidate], known: Mapping[PageKey, Page], settings: Settings
) -> tuple[dict[PageKey, Page], dict[PageKey, str]]:
    """Which survivors' pages need a request: returns the pages settled without one (a
    page the org already holds, reused; refingerprinted when its prose settings changed;
    an unresolved redirect link, skipped) and the URLs to fetch by (org, page key), one
    request per page key even when several survivors share it."""
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
    return pages, to_fetch


@dataclass(frozen=True)
class PageReduction:
    """How a fetched page is reduced (``feedmd.sources.pages.PageReducer``): trafilatura
    -> Markdown -> prose -> digest under ``settings``."""

    settings: Settings
    extractor: str = EXTRACTOR

    def extract(self, base: Page, body: bytes) -> Page:
        """A fresh HTML body reduced (``extract_page``)."""
        return extract_page(base, body, self.settings)

    def revalidated(self, copy: Page) -> Page:
        """A known copy confirmed by a 304: its stored Markdown fingerprinted again."""
        return fingerprint(copy, self.settings)


def extract_page(base: Page, body: bytes, settings: Settings) -> Page:
    """Run trafilatura on an HTML body and fingerprint its prose (pure, no network)."""
    if not body.strip():
        return replace(base, status="ok", no_digest_reason="empty page")
    try:
        with _EXTRACTING:
            tree = prepared_tree(body)
            # None: not HTML that trafilatura can read, so no text (trafilatura's own answer)
            markdown = "" if tree is None else _markdown(tree, base.url)
    except Exception as exc:  # trafilatura on hostile HTML must not stop the run
        return replace(base, error=f"extraction failed: {type(exc).__name__}: {exc}")
    if len(markdown) > settings.max_markdown_chars:
        return past_extraction_budget(replace(base, status="ok", markdown=markdown), settings)
    return fingerprint(replace(base, status="ok", markdown=markdown), settings)


def _markdown(tree: HtmlElement, url: str) -> str:
    """trafilatura's Markdown of a prepared page ('' when it finds no text)."""
    return (
        trafilatura.extract(
            tree,
            url=url or None,
            output_format="markdown",
            include_comments=False,
            include_links=True,
            include_tables=True,
            include_images=False,
        )
        or ""
    )


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


WALL_REASON = "junk page: consent wall"


def without_walls(
    pages: Mapping[PageKey, Page], walls: WallLines | None, settings: Settings
) -> dict[PageKey, Page]:
    """The pages whose prose reads as a consent wall (``prose.walls_by_meaning``, all the
    pages' lines in two batched calls of ``walls``) without their digest, and why: as the
    phrases' junk pages, so two articles behind one wall are never reprints."""
    keys = list(pages)
    return dict(zip(keys, walls_removed([pages[k] for k in keys], walls, settings), strict=True))


def walls_removed(pages: Sequence[Page], walls: WallLines | None, settings: Settings) -> list[Page]:
    """``without_walls`` for a list of pages (the stored bodies fingerprinted again)."""
    out = list(pages)
    if walls is None:
        return out
    # a page reused as stored was read under these settings already (they are part of
    # its prose settings version): only new, copied and refingerprinted pages are read
    fingerprinted = [
        n for n, page in enumerate(pages) if page.digest and (page.status != "reused" or page.stale)
    ]
    proses = [pages[n].prose.splitlines() for n in fingerprinted]
    for n, wall in zip(fingerprinted, walls_by_meaning(proses, settings, walls), strict=True):
        if wall:
            out[n] = replace(pages[n], digest=None, shingles=b"", no_digest_reason=WALL_REASON)
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
