"""Rendering: kept items as JSON Feed 1.1 and Atom 1.0 documents.

Pure (items in, document out) and shared by the files of a run (``delivery/deliver.py``),
``feedmd export``, ``feedmd serve`` and the webhook payloads (``webhooks.py``), so a
webhook carries exactly the item object of the JSON Feed.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlsplit

from feedgen.feed import FeedGenerator
from lxml import etree
from markdown_it import MarkdownIt

from feedmd.store import EventMember, FeedRow, OutputItem
from feedmd.timeutil import iso

JSON_FEED_VERSION = "https://jsonfeed.org/version/1.1"
ATOM_NS = "http://www.w3.org/2005/Atom"
# The newest this many items make a JSON Feed / Atom page (and a run's files); older ones
# are reached through next_url. 100 is what the files held before pagination.
DEFAULT_PAGE_SIZE = 100
SUMMARY_CHARS = 300
# An empty feed's Atom <updated>: fixed, so its ETag does not change every second.
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# Raw HTML in scraped Markdown is escaped, never passed through: the Markdown comes from
# third-party pages and a reader may render content_html without sanitising it.
_MARKDOWN = MarkdownIt("commonmark", {"html": False})


@dataclass(frozen=True)
class FeedMeta:
    """What a document says about itself: title, links, and the next page if any."""

    title: str
    home_page_url: str
    json_url: str
    atom_url: str
    description: str
    next_before: int | None = None


def site_url(feed_url: str) -> str:
    """The human page a feed document links to as its home: the upstream site's front
    page (``https://host/``), not the upstream feed's XML, which a browser shows as code."""
    parts = urlsplit(feed_url)
    return f"{parts.scheme}://{parts.netloc}/" if parts.scheme and parts.netloc else feed_url


def feed_meta(feed: FeedRow, base_url: str) -> FeedMeta:
    """The metadata of one feed's documents."""
    base = base_url.rstrip("/")
    return FeedMeta(
        title=feed.title or feed.name,
        home_page_url=site_url(feed.url),
        json_url=f"{base}/feeds/{feed.name}.json",
        atom_url=f"{base}/feeds/{feed.name}.atom",
        description=f"De-duplicated full-text items of {feed.url}, by feedmd.",
    )


def file_meta(feed: FeedRow, base_url: str) -> FeedMeta:
    """The metadata of one feed's files in an output folder: the folder is served as it
    is at ``base_url``, so ``DIR/NAME.json`` is ``BASE/NAME.json``."""
    base = base_url.rstrip("/")
    return replace(
        feed_meta(feed, base_url),
        json_url=f"{base}/{feed.name}.json",
        atom_url=f"{base}/{feed.name}.atom",
    )


def org_meta(org: str, base_url: str) -> FeedMeta:
    """The metadata of an org's documents (every feed of the org in one)."""
    base = base_url.rstrip("/")
    return FeedMeta(
        title=org,
        home_page_url=f"{base}/",
        json_url=f"{base}/orgs/{org}.json",
        atom_url=f"{base}/orgs/{org}.atom",
        description=f"De-duplicated full-text items of every feed of {org}, by feedmd.",
    )


def page_meta(meta: FeedMeta, items: Sequence[OutputItem], page_size: int) -> FeedMeta:
    """``meta`` with the next page set when this page is full (keyset on the last item)."""
    if len(items) < page_size or not items:
        return meta
    return FeedMeta(**{**meta.__dict__, "next_before": items[-1].item_id})


def item_id(item: OutputItem) -> str:
    """A stable, globally unique id for an item in every output (never reused: it embeds
    the store's item id, and items are never deleted)."""
    return f"feedmd:{item.org}:{item.feed}:{item.item_id}"


def render_html(markdown: str) -> str:
    """The article's Markdown as HTML (CommonMark; raw HTML escaped)."""
    return _MARKDOWN.render(markdown)


def _content_text(item: OutputItem) -> str:
    return item.markdown or item.summary or item.title


class _TextOf(HTMLParser):
    """The text of an HTML fragment: tags dropped, entities decoded, scripts left out."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag in ("br", "p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6"):
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def plain_text(fragment: str) -> str:
    """An HTML fragment as one line of plain text (JSON Feed's ``summary`` is plain text)."""
    if "<" not in fragment and "&" not in fragment:
        return " ".join(fragment.split())
    parser = _TextOf()
    parser.feed(fragment)
    parser.close()
    return " ".join(html.unescape("".join(parser.parts)).split())


def _summary(item: OutputItem) -> str:
    """Plain text: the feed's own summary (its HTML stripped), else the article's first
    paragraph (not a heading), its Markdown rendered and stripped."""
    text = plain_text(item.summary) if item.summary else ""
    if not text:
        line = next(
            (
                line.strip()
                for line in item.markdown.splitlines()
                if len(line.split()) >= 8 and not line.lstrip().startswith(("#", "|", ">"))
            ),
            "",
        )
        text = plain_text(render_html(line)) if line else ""
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1].rstrip() + "…"


def tags(item: OutputItem) -> list[str]:
    """The source feed, and 'possible-duplicate' for items stage 2 found similar."""
    found = [item.feed]
    if item.verdict.tier == "similar":
        found.append("possible-duplicate")
    return found


def json_item(item: OutputItem) -> dict[str, Any]:
    """One item as a JSON Feed 1.1 item object (also the data of its webhook)."""
    document: dict[str, Any] = {
        "id": item_id(item),
        "url": item.url,
        "title": item.title,
        "content_html": render_html(_content_text(item)),
        "content_text": _content_text(item),
        "date_published": iso(item.published),
        "tags": tags(item),
        "_feedmd": _extension(item),
    }
    summary = _summary(item)
    if summary:
        document["summary"] = summary
    if item.publisher:
        document["authors"] = [{"name": item.publisher}]
    return document


def member_id(member: EventMember) -> str:
    """The output id of an event member (the same form as ``item_id``)."""
    return f"feedmd:{member.org}:{member.feed}:{member.item_id}"


def event_object(item: OutputItem) -> dict[str, Any] | None:
    """The item's event as JSON: its id, the canonical item, whether this item is it, how
    many kept items the event holds, and the other members (up to MEMBERS_SHOWN) with
    their cosine to the item each joined; None for an item in no event."""
    event = item.event
    if event is None:
        return None
    canonical = event.canonical
    return {
        "id": f"feedmd:{item.org}:event:{event.event_id}",
        "canonical": {"id": member_id(canonical), "url": canonical.url},
        "is_canonical": canonical.item_id == item.item_id,
        "size": event.size,
        "members": [
            {
                "id": member_id(m),
                "url": m.url,
                "title": m.title,
                "publisher": m.publisher,
                "score": m.score,
            }
            for m in event.others
        ],
    }


def _extension(item: OutputItem) -> dict[str, Any]:
    verdict = item.verdict
    duplicate_of = verdict.possible_duplicate_of
    return {
        "event": event_object(item),
        "canonical_item_id": item.item_id,
        "entry_id": item.entry_id,
        "org": item.org,
        "source_feed": {"name": item.feed, "title": item.feed_title, "url": item.feed_url},
        "also_published_by": [
            {
                "publisher": dup.publisher,
                "url": dup.url,
                "title": dup.title,
                "rule": dup.rule,
                "score": dup.score,
                "stage": dup.stage,
            }
            for dup in item.also_published_by
        ],
        "verdict": {
            "tier": verdict.tier,
            "rule": verdict.rule,
            "score": verdict.score,
            "possible_duplicate_of": None
            if duplicate_of is None
            else {
                "id": f"feedmd:{duplicate_of.org}:{duplicate_of.feed}:{duplicate_of.item_id}",
                "url": duplicate_of.url,
                "title": duplicate_of.title,
                "publisher": duplicate_of.publisher,
            },
            "note": None
            if duplicate_of is None
            else f"possible duplicate of {duplicate_of.title!r} ({duplicate_of.publisher})",
        },
    }


def json_feed(meta: FeedMeta, items: Sequence[OutputItem]) -> dict[str, Any]:
    """A JSON Feed 1.1 document: the items newest first, ``next_url`` when there is more."""
    document: dict[str, Any] = {
        "version": JSON_FEED_VERSION,
        "title": meta.title,
        "home_page_url": meta.home_page_url,
        "feed_url": meta.json_url,
        "description": meta.description,
        "items": [json_item(item) for item in items],
    }
    if meta.next_before is not None:
        document["next_url"] = f"{meta.json_url}?before={meta.next_before}"
    return document


def json_bytes(document: dict[str, Any]) -> bytes:
    """The JSON text as served and written (UTF-8, indented, newline-terminated)."""
    return json.dumps(document, indent=2, ensure_ascii=False).encode("utf-8") + b"\n"


def atom_feed(meta: FeedMeta, items: Sequence[OutputItem]) -> bytes:
    """An Atom 1.0 document (RFC 4287) with the same items, ids and full content."""
    generator = FeedGenerator()
    generator.id(meta.atom_url)
    generator.title(meta.title)
    generator.subtitle(meta.description)
    generator.link(href=meta.atom_url, rel="self")
    generator.link(href=meta.home_page_url, rel="alternate")
    if meta.next_before is not None:  # RFC 5005 paging
        generator.link(href=f"{meta.atom_url}?before={meta.next_before}", rel="next")
    generator.updated(max((item.stored for item in items), default=EPOCH))
    generator.generator("feedmd")
    for item in reversed(items):  # feedgen prepends: add oldest first to list newest first
        entry = generator.add_entry()
        entry.id(item_id(item))
        entry.title(item.title or "(untitled)")
        entry.link(href=item.url, rel="alternate")
        entry.published(item.published)
        entry.updated(item.published)
        entry.author({"name": item.publisher or "unknown"})
        summary = _summary(item)
        if summary:
            entry.summary(summary)
        entry.content(render_html(_content_text(item)), type="html")
        for tag in tags(item):
            entry.category(term=tag)
    return _with_related(bytes(generator.atom_str(pretty=True)), items)


def _with_related(document: bytes, items: Sequence[OutputItem]) -> bytes:
    """The Atom document with a ``<link rel="related">`` per other member of each entry's
    event (the other outlets' coverage of the same story). Added after feedgen, whose entry
    links lose their rel and title attributes (feedgen 1.0: the loop variable shadows the
    link's data), which would make them alternates."""
    related = {
        item_id(item): item.event.others for item in items if item.event and item.event.others
    }
    if not related:
        return document
    root = etree.fromstring(document)
    for entry in root.iter(f"{{{ATOM_NS}}}entry"):
        others = related.get(entry.findtext(f"{{{ATOM_NS}}}id") or "", ())
        for member in others:
            anchor = entry.find(f"{{{ATOM_NS}}}content")
            link = etree.Element(
                f"{{{ATOM_NS}}}link", href=member.url, rel="related", title=member.title
            )
            if anchor is not None:
                anchor.addprevious(link)
            else:
                entry.append(link)
    etree.indent(root, space="  ")
    return bytes(etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True))
