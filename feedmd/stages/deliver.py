"""Deliver: each feed's kept items as JSON Feed 1.1 and Atom 1.0 files.

Rendering is pure (items in, document out); ``write_feed_files`` writes both documents
atomically (temporary file, then rename), so a reader never sees half a feed.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from feedgen.feed import FeedGenerator

from feedmd.stages.store import (
    FeedInfo,
    FeedItem,
    Store,
    feed_info,
    feed_items,
    feeds_of_items,
    record_deliveries,
)
from feedmd.timeutil import iso, utcnow

JSON_FEED_VERSION = "https://jsonfeed.org/version/1.1"


def item_id(item: FeedItem) -> str:
    """A stable, globally unique id for an item in every output."""
    return f"feedmd:{item.org}:{item.feed}:{item.item_id}"


def json_feed(feed: FeedInfo, items: Sequence[FeedItem], base_url: str) -> dict[str, Any]:
    """Render a JSON Feed 1.1 document for a feed's kept items (newest first)."""
    base = base_url.rstrip("/")
    return {
        "version": JSON_FEED_VERSION,
        "title": feed.title or feed.name,
        "home_page_url": feed.url,
        "feed_url": f"{base}/feeds/{feed.name}.json",
        "items": [_json_item(feed, item) for item in items],
    }


def _json_item(feed: FeedInfo, item: FeedItem) -> dict[str, Any]:
    document: dict[str, Any] = {
        "id": item_id(item),
        "url": item.url,
        "title": item.title,
        "content_text": item.markdown or item.summary or item.title,
        "date_published": iso(item.published),
        "_feedmd": {
            "canonical_item_id": item.item_id,
            "source_feed": feed.name,
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
        },
    }
    if item.publisher:
        document["authors"] = [{"name": item.publisher}]
    return document


def atom_feed(feed: FeedInfo, items: Sequence[FeedItem], base_url: str) -> bytes:
    """Render an Atom 1.0 document (RFC 4287) for a feed's kept items."""
    base = base_url.rstrip("/")
    generator = FeedGenerator()
    generator.id(f"{base}/feeds/{feed.name}.atom")
    generator.title(feed.title or feed.name)
    generator.link(href=f"{base}/feeds/{feed.name}.atom", rel="self")
    generator.link(href=feed.url, rel="alternate")
    generator.updated(max((item.published for item in items), default=utcnow()))
    generator.generator("feedmd")
    for item in reversed(items):  # feedgen prepends: add oldest first to list newest first
        entry = generator.add_entry()
        entry.id(item_id(item))
        entry.title(item.title or "(untitled)")
        entry.link(href=item.url, rel="alternate")
        entry.published(item.published)
        entry.updated(item.published)
        entry.author({"name": item.publisher or "unknown"})
        entry.content(item.markdown or item.summary or item.title, type="text")
    return generator.atom_str(pretty=True)


def write_feed_files(
    directory: str | os.PathLike[str], feed: FeedInfo, items: Sequence[FeedItem], base_url: str
) -> list[Path]:
    """Write ``<feed>.json`` and ``<feed>.atom`` into ``directory``; return their paths."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    json_path = folder / f"{feed.name}.json"
    atom_path = folder / f"{feed.name}.atom"
    _write_atomically(
        json_path,
        json.dumps(json_feed(feed, items, base_url), indent=2, ensure_ascii=False).encode("utf-8")
        + b"\n",
    )
    _write_atomically(atom_path, atom_feed(feed, items, base_url))
    return [json_path, atom_path]


def _write_atomically(path: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


FILES_TARGET = "files"


def publish(
    store: Store, run_id: int, kept: Sequence[int], directory: str, base_url: str, now: datetime
) -> int:
    """Rewrite the output files of every feed that gained items and record the deliveries.

    Returns how many items were delivered for the first time (0 without an output folder).
    """
    if not directory or not kept:
        return 0
    for name in feeds_of_items(store, kept):
        info = feed_info(store, name)
        if info is not None:
            write_feed_files(directory, info, feed_items(store, name), base_url)
    return record_deliveries(store, run_id, kept, FILES_TARGET, now)
