"""The newsletter digest: a period's kept items as one readable document
(``feedmd export --format html`` or ``--format digest-markdown``).

One story per event of the period (a kept item in no event is one story), newest first:
its canonical article (title, publisher, published time, first paragraph of its prose,
link) and "also covered by": the copies merged into it (publisher, link, the rule that
merged them), the event's other items (kind 'event', ``exports/events.py``) and the items
stage 2 found similar to it or it to them (a "similar" tier, kept as their own stories
too).

The templates are Jinja2, shipped in ``feedmd/delivery/exports/templates`` and replaceable with
``--template FILE``; they get ``title``, ``period``, ``generated`` and ``stories`` (a list
of ``Story``). The shipped HTML is email-safe: inline styles only, no script, no external
stylesheet or image; every value is autoescaped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, PackageLoader, StrictUndefined
from markdown_it import MarkdownIt

from feedmd.delivery.reading import display_title, human_time
from feedmd.store import OutputItem
from feedmd.timeutil import iso

TEMPLATES = {"html": "digest.html.j2", "markdown": "digest.md.j2"}
# A first paragraph longer than this is cut at a word (a digest entry is a teaser).
LEAD_CHARS = 600


@dataclass(frozen=True)
class Coverage:
    """Another article on a story: a merged copy or a similar item."""

    publisher: str
    url: str
    title: str
    kind: str  # 'copy' (merged into the story), 'event' (same event) or 'similar'
    rule: str | None


@dataclass(frozen=True)
class Story:
    """One entry of the digest."""

    id: int
    title: str
    url: str
    publisher: str
    published: str  # 'Mon 12 Oct 2026, 21:25 CEST': in the reader's zone
    lead: str
    also_covered_by: tuple[Coverage, ...]


_INLINE = MarkdownIt("commonmark", {"html": False})
# What would start Markdown syntax in a digest-markdown title or name.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>#|])")


def plain_text(markdown: str) -> str:
    """Inline Markdown as the text a reader sees (links' text, no emphasis marks)."""
    text = "".join(
        " " if child.type in {"softbreak", "hardbreak"} else child.content
        for token in _INLINE.parseInline(markdown)
        for child in token.children or ()
        if child.type in {"text", "code_inline", "softbreak", "hardbreak"}
    )
    return " ".join(text.split())


def markdown_text(text: str) -> str:
    """``text`` escaped for Markdown (a title in a link, a publisher)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def markdown_url(url: str) -> str:
    """``url`` safe inside Markdown's ``(...)``."""
    return url.replace(" ", "%20").replace("(", "%28").replace(")", "%29")


def first_paragraph(item: OutputItem) -> str:
    """The first paragraph of the prose (not a heading, list, table or quote line) with at
    least eight words, else the feed's summary; cut at a word past ``LEAD_CHARS``."""
    paragraphs = [p.strip() for p in item.markdown.split("\n\n")]
    text = next(
        (
            " ".join(p.split())
            for p in paragraphs
            if len(p.split()) >= 8 and not p.startswith(("#", "|", ">", "-", "*", "!["))
        ),
        " ".join(item.summary.split()),
    )
    text = plain_text(text)
    if len(text) > LEAD_CHARS:
        text = text[:LEAD_CHARS].rsplit(" ", 1)[0].rstrip(",;:") + " …"
    return text


def stories(items: Sequence[OutputItem], zone: tzinfo | None = UTC) -> list[Story]:
    """The digest's stories, in the items' order: titles without their outlet suffix,
    times as a reader in ``zone`` says them."""
    similar: dict[int, list[Coverage]] = {item.item_id: [] for item in items}
    for item in items:
        related = item.verdict.possible_duplicate_of
        if related is None:
            continue
        similar[item.item_id].append(
            Coverage(
                related.publisher,
                related.url,
                display_title(related.title, related.publisher),
                "similar",
                item.verdict.rule,
            )
        )
        if related.item_id in similar:
            similar[related.item_id].append(
                Coverage(
                    item.publisher,
                    item.url,
                    display_title(item.title, item.publisher),
                    "similar",
                    item.verdict.rule,
                )
            )
    return [
        Story(
            id=item.item_id,
            title=display_title(item.title, item.publisher),
            url=item.url,
            publisher=item.publisher,
            published=human_time(item.published, zone),
            lead=first_paragraph(item),
            also_covered_by=(
                *(
                    Coverage(
                        a.publisher, a.url, display_title(a.title, a.publisher), "copy", a.rule
                    )
                    for a in item.also_published_by
                ),
                *(
                    Coverage(m.publisher, m.url, display_title(m.title, m.publisher), "event", None)
                    for m in (item.event.others if item.event else ())
                ),
                *similar[item.item_id],
            ),
        )
        for item in items
    ]


def render_digest(
    items: Sequence[OutputItem],
    *,
    fmt: str,
    title: str,
    period: str,
    generated: datetime,
    template: str | Path | None = None,
    zone: tzinfo | None = UTC,
) -> str:
    """The digest of ``items`` as ``fmt`` ('html' or 'markdown'), from ``template`` (a
    file) or the shipped template of the format."""
    if template is not None:
        path = Path(template)
        loader: FileSystemLoader | PackageLoader = FileSystemLoader(str(path.parent))
        name = path.name
    else:
        loader, name = PackageLoader("feedmd.delivery.exports", "templates"), TEMPLATES[fmt]
    env = Environment(
        loader=loader,
        autoescape=fmt == "html",
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["md"] = markdown_text
    env.filters["mdurl"] = markdown_url
    return env.get_template(name).render(
        title=title, period=period, generated=iso(generated), stories=stories(items, zone)
    )
