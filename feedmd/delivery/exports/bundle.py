"""The LLM bundle as Markdown files within a token budget (``feedmd export --format
markdown``).

Each item is a front-matter header (YAML: id, url, title, publisher, published, language,
tokens, tier, event, also_published_by, also_covered_by) and its prose; an export holds
one entry per event (``exports/events.py``), the event's other members under
``also_covered_by``. Items go into ``bundle-001.md``,
``bundle-002.md``, ... in order, each file holding as many whole items as fit in
``max_tokens`` (the estimate of ``text.py``, headers included); an item is never split, and
one larger than the budget alone gets a file of its own (the only way a file exceeds it).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, tzinfo

from feedmd.delivery import render
from feedmd.delivery.exports.jsonl import record
from feedmd.delivery.exports.text import estimate_tokens
from feedmd.delivery.reading import human_time
from feedmd.store import OutputItem


@dataclass(frozen=True)
class BundleFile:
    """One file of the bundle: its name, text, estimated tokens and item ids."""

    name: str
    text: str
    tokens: int
    ids: tuple[str, ...]


def _scalar(value: object) -> str:
    # JSON strings and numbers are valid YAML scalars: no YAML escaping rules to get wrong
    return json.dumps(value, ensure_ascii=False)


def item_markdown(item: OutputItem, zone: tzinfo | None = UTC) -> str:
    """One item as front matter and its prose, under a heading with its publisher and
    its time as a reader in ``zone`` says it (the front matter's stays UTC ISO 8601)."""
    data = record(item)
    lines = ["---"]
    for key in ("id", "url", "title", "publisher", "published", "language", "tokens", "tier"):
        lines.append(f"{key}: {_scalar(data[key])}")
    if data["also_published_by"]:
        lines.append("also_published_by:")
        for copy in data["also_published_by"]:
            lines.append(f"  - publisher: {_scalar(copy['publisher'])}")
            for key in ("url", "rule", "score"):
                lines.append(f"    {key}: {_scalar(copy[key])}")
    else:
        lines.append("also_published_by: []")
    event = data["event"]
    lines.append(f"event: {_scalar(event['id'] if event else None)}")
    if data["also_covered_by"]:
        lines.append("also_covered_by:")
        for other in data["also_covered_by"]:
            lines.append(f"  - publisher: {_scalar(other['publisher'])}")
            for key in ("url", "title", "score"):
                lines.append(f"    {key}: {_scalar(other[key])}")
    else:
        lines.append("also_covered_by: []")
    byline = f"*{data['publisher']} · {human_time(item.published, zone)}*"
    lines += ["---", "", f"# {data['title']}", "", byline, "", data["text"], ""]
    return "\n".join(lines) + "\n"


def split_bundle(
    items: Sequence[OutputItem], max_tokens: int, zone: tzinfo | None = UTC
) -> list[BundleFile]:
    """The items' Markdown in files of at most ``max_tokens`` estimated tokens each."""
    files: list[BundleFile] = []
    parts: list[str] = []
    ids: list[str] = []
    used = 0

    def close() -> None:
        nonlocal parts, ids, used
        if parts:
            name = f"bundle-{len(files) + 1:03d}.md"
            files.append(BundleFile(name, "".join(parts), used, tuple(ids)))
        parts, ids, used = [], [], 0

    for item in items:
        text = item_markdown(item, zone)
        tokens = estimate_tokens(text)
        if parts and used + tokens > max_tokens:
            close()
        parts.append(text)
        ids.append(render.item_id(item))
        used += tokens
    close()
    return files
