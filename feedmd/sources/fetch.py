"""Fetch: feeds -> entries.

Each due feed is requested with its stored ETag / Last-Modified (conditional GET; a 304
costs nothing), parsed with feedparser, and turned into ``Entry`` rows: links resolved to
publisher URLs (``links.resolve_offline``), entries older than the history window skipped
and counted, and an entry id listed twice in one response kept once and counted. A feed
that cannot be fetched or parsed becomes a ``FeedResult`` with status "error" and a
readable reason; the other feeds go on.
"""

from __future__ import annotations

import asyncio
import calendar
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import feedparser

from feedmd.errors import FetchError
from feedmd.models import Entry, FeedResult, FeedSpec, LinkResolution
from feedmd.settings import Settings
from feedmd.sources.http import Fetcher
from feedmd.sources.links import resolve_offline
from feedmd.sources.resolve import needs_http, resolve_links
from feedmd.timeutil import iso

# An entry's summary is kept for display and webhooks only; 20,000 characters is several
# screens, and the article itself comes from the page.
MAX_SUMMARY_CHARS = 20_000


def due_feeds(feeds: Sequence[FeedSpec], now: datetime, force: bool = False) -> list[FeedSpec]:
    """The feeds whose poll interval has passed since their last fetch, or whose retry
    after a failed fetch is due (all with force)."""
    return [feed for feed in feeds if force or next_due(feed) <= now]


def next_due(feed: FeedSpec) -> datetime:
    """When a feed is due: its retry time after a failed fetch, else its last fetch plus
    its poll interval (a feed never fetched is due at once)."""
    if feed.last_fetched_at is None:
        return datetime.min.replace(tzinfo=UTC)
    polled = feed.last_fetched_at + timedelta(minutes=feed.poll_minutes)
    return min(polled, feed.next_due_at) if feed.next_due_at is not None else polled


def not_due(feeds: Sequence[FeedSpec], now: datetime, force: bool = False) -> dict[str, str]:
    """The feeds a run leaves alone because they are not due, with their next due time
    (what the run report names)."""
    if force:
        return {}
    return {feed.name: iso(next_due(feed)) for feed in feeds if next_due(feed) > now}


def links_to_resolve(entries: Sequence[Entry]) -> list[str]:
    """Links that did not resolve offline and that Google's servers can resolve."""
    return sorted(
        {e.link for e in entries if e.link_resolution == "unresolved" and needs_http(e.link)}
    )


def resolve_entries(
    entries: Sequence[Entry], cached: Mapping[str, LinkResolution], settings: Settings
) -> tuple[list[Entry], list[LinkResolution]]:
    """Give entries with new-format Google News links their publisher URL, from the cache
    or over HTTP. Returns the entries and the resolutions learned in this call. An entry
    whose link cannot be resolved goes on unresolved (deduplicated by headline only)."""
    pending = [link for link in links_to_resolve(entries) if link not in cached]
    learned = asyncio.run(_resolve(pending, settings)) if pending else {}
    known = {**cached, **learned}
    resolved = []
    for entry in entries:
        found = known.get(entry.link)
        if entry.link_resolution == "unresolved" and found and found.method != "unresolved":
            entry = replace(entry, url=found.url, link_resolution=found.method)
        resolved.append(entry)
    return resolved, list(learned.values())


async def _resolve(links: Sequence[str], settings: Settings) -> dict[str, LinkResolution]:
    async with Fetcher(settings) as fetcher:
        return await resolve_links(fetcher, links, settings.google_news_base_url)


def fetch_feeds(feeds: Sequence[FeedSpec], settings: Settings, now: datetime) -> list[FeedResult]:
    """Fetch and parse every feed concurrently; one FeedResult per feed, in input order."""
    return asyncio.run(_fetch_all(feeds, settings, now))


async def _fetch_all(
    feeds: Sequence[FeedSpec], settings: Settings, now: datetime
) -> list[FeedResult]:
    async with Fetcher(settings) as fetcher:
        return list(
            await asyncio.gather(*(fetch_feed(fetcher, feed, settings, now) for feed in feeds))
        )


async def fetch_feed(
    fetcher: Fetcher, feed: FeedSpec, settings: Settings, now: datetime
) -> FeedResult:
    """Fetch one feed with a conditional GET and parse it into entries."""
    headers: dict[str, str] = {}
    if feed.etag:
        headers["If-None-Match"] = feed.etag
    if feed.last_modified:
        headers["If-Modified-Since"] = feed.last_modified
    try:
        response = await fetcher.get(feed.url, headers)
    except FetchError as exc:
        return FeedResult(feed=feed.name, status="error", error=f"fetch failed: {exc}")
    if response.status == 304:
        return FeedResult(
            feed=feed.name,
            status="not-modified",
            http_status=304,
            etag=feed.etag,
            last_modified=feed.last_modified,
        )
    if response.status >= 400:
        return FeedResult(
            feed=feed.name,
            status="error",
            http_status=response.status,
            error=f"HTTP {response.status}",
        )
    return parse_feed(
        feed, response.body, response.headers, settings, now, http_status=response.status
    )


def parse_feed(
    feed: FeedSpec,
    body: bytes,
    headers: dict[str, str],
    settings: Settings,
    now: datetime,
    http_status: int | None = None,
) -> FeedResult:
    """Parse a feed document into a FeedResult (pure: no network, no store)."""
    etag = headers.get("etag")
    last_modified = headers.get("last-modified")
    try:
        parsed = feedparser.parse(
            body,
            response_headers={
                "content-type": headers.get("content-type", "application/xml"),
                "content-location": feed.url,
            },
        )
    except Exception as exc:  # feedparser is defensive, but a parser bug must not stop a run
        return FeedResult(
            feed=feed.name,
            status="error",
            http_status=http_status,
            error=f"feed could not be parsed: {type(exc).__name__}: {exc}",
        )
    if not parsed.entries and not parsed.get("version"):
        reason = parsed.get("bozo_exception") or "no RSS or Atom document found"
        return FeedResult(
            feed=feed.name,
            status="error",
            http_status=http_status,
            error=f"malformed feed: {reason}",
        )
    oldest = now - timedelta(hours=settings.history_window_hours)
    by_id: dict[str, Entry] = {}
    invalid = repeated = 0
    # feeds list newest first; past the limit a feed is broken or hostile, and every entry
    # costs stage-1 work and a stored row
    limit = settings.max_entries_per_feed
    listed = parsed.entries[:limit]
    for raw in listed:
        entry = _to_entry(feed, raw, now, settings)
        if entry is None:
            invalid += 1
            continue
        earlier = by_id.get(entry.entry_id)
        if earlier is not None and earlier.link != entry.link:
            # one id on different articles (some CMS feeds give every entry the same guid):
            # they are different entries, told apart by their link
            entry = replace(entry, entry_id=f"{entry.entry_id}#{_short_hash(entry.link)}")
            earlier = by_id.get(entry.entry_id)
        if earlier is not None:
            # one id listed twice (an edited entry, a sloppy feed): keep the earliest
            # published listing, like every other repeat
            repeated += 1
            if entry.published >= earlier.published:
                continue
        by_id[entry.entry_id] = entry
    entries = [e for e in by_id.values() if e.published >= oldest]
    skipped_old = len(by_id) - len(entries)
    if parsed.get("bozo") and invalid and not entries and not skipped_old and not repeated:
        return FeedResult(
            feed=feed.name,
            status="error",
            http_status=http_status,
            error=f"malformed feed: {parsed.get('bozo_exception')}",
        )
    result = FeedResult(
        feed=feed.name,
        status="ok",
        http_status=http_status,
        etag=etag,
        last_modified=last_modified,
        entries=tuple(entries),
        found=len(parsed.entries),
        skipped_old=skipped_old,
        repeated_in_feed=repeated,
        invalid=invalid,
    )
    return _with_over_limit(result, len(parsed.entries) - len(listed))


def _with_over_limit(result: FeedResult, over: int) -> FeedResult:
    """Count the entries left out by ``max_entries_per_feed``."""
    return replace(result, over_limit=over) if over else result


def _to_entry(feed: FeedSpec, raw: Any, fetched: datetime, settings: Settings) -> Entry | None:
    """An Entry from a feedparser entry, or None when it has no usable http(s) link."""
    link = _text(raw.get("link"))
    title = _text(raw.get("title"))[: settings.max_title_chars]
    max_link = settings.max_url_chars
    if not link.startswith(("http://", "https://")) or len(link) > max_link:
        return None  # nothing to scrape or deliver
    published = _entry_time(raw) or fetched
    entry_id = _text(raw.get("id")) or link
    resolution = resolve_offline(link)
    return Entry(
        feed=feed.name,
        org=feed.org,
        entry_id=entry_id[:2000],
        link=link,
        url=resolution.url,
        title=title,
        publisher=_publisher(raw),
        published=min(published, fetched),
        fetched=fetched,
        summary=_text(raw.get("summary"))[:MAX_SUMMARY_CHARS],
        link_resolution=resolution.method,
    )


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _entry_time(raw: Any) -> datetime | None:
    for key in ("published_parsed", "updated_parsed", "created_parsed"):
        # dict.get, not FeedParserDict.get: asking for a missing updated_parsed goes
        # through feedparser's deprecated fallback and warns (found by tests/test_fuzz.py)
        value = dict.get(raw, key) if isinstance(raw, dict) else raw.get(key)
        if value:
            try:
                return datetime.fromtimestamp(calendar.timegm(value), UTC)
            except (OverflowError, ValueError, TypeError):
                continue
    return None


def _publisher(raw: Any) -> str:
    source = raw.get("source") or {}
    for candidate in (
        source.get("title"),
        raw.get("author"),
        (raw.get("author_detail") or {}).get("name"),
    ):
        text = _text(candidate)
        if text:
            return text[:200]
    return ""


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
