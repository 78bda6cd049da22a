"""The LLM bundle as JSON Lines: one object per kept item (``feedmd export --format jsonl``).

Each object: ``id`` (the stable id of every feedmd output, ``feedmd:ORG:FEED:ITEM``),
``url`` (canonical), ``title`` (without a trailing " - Publisher" naming its publisher,
``feedmd.delivery.reading``), ``publisher``, ``published`` (ISO 8601 UTC), ``feed``,
``org``, ``text`` (the article's full prose as Markdown; the feed's summary, else the title,
when the page gave none), ``tokens`` (``text.estimate_tokens`` of ``text``), ``language``,
``tier`` (stage 2's verdict: ``different``, ``similar``, ``no digest``, ``host furniture``,
``shared block``, or null for an item nothing came near or a reviewer restored),
``possible_duplicate_of`` (for ``similar``: the item it resembles), ``also_published_by``
(the merged copies: publisher, url, title, rule, score), ``event`` (the JSON Feed's
``_feedmd.event``: id, canonical, size, members) and ``also_covered_by`` (the event's
other members: publisher, url, title, score). An export holds one entry per event
(``exports/events.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from feedmd.delivery import render
from feedmd.delivery.exports.text import detect_language, estimate_tokens
from feedmd.delivery.reading import display_title
from feedmd.store import OutputItem
from feedmd.timeutil import iso


def item_text(item: OutputItem) -> str:
    """The prose a model reads: the stored Markdown, else the summary, else the title."""
    return (item.markdown or item.summary or item.title).strip()


def record(item: OutputItem) -> dict[str, Any]:
    """One kept item as the bundle's JSON object."""
    text = item_text(item)
    related = item.verdict.possible_duplicate_of
    return {
        "id": render.item_id(item),
        "url": item.url,
        "title": display_title(item.title, item.publisher),
        "publisher": item.publisher,
        "published": iso(item.published),
        "feed": item.feed,
        "org": item.org,
        "text": text,
        "tokens": estimate_tokens(text),
        "language": detect_language(f"{item.title}\n{text}", item.feed_url),
        "tier": item.verdict.tier,
        "possible_duplicate_of": (
            {
                "id": f"feedmd:{related.org}:{related.feed}:{related.item_id}",
                "url": related.url,
                "title": display_title(related.title, related.publisher),
                "publisher": related.publisher,
                "rule": item.verdict.rule,
                "score": item.verdict.score,
            }
            if related is not None
            else None
        ),
        "also_published_by": [
            {
                "publisher": a.publisher,
                "url": a.url,
                "title": display_title(a.title, a.publisher),
                "rule": a.rule,
                "score": a.score,
            }
            for a in item.also_published_by
        ],
        "event": render.event_object(item),
        "also_covered_by": [
            {
                "publisher": m.publisher,
                "url": m.url,
                "title": display_title(m.title, m.publisher),
                "score": m.score,
            }
            for m in (item.event.others if item.event else ())
        ],
    }


def jsonl_bytes(items: Iterable[OutputItem]) -> bytes:
    """The items as JSON Lines (UTF-8, one object and a newline each)."""
    return b"".join(
        json.dumps(record(item), ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        for item in items
    )
