"""`feedmd eval make-reprints`: labelled reprint pairs built from real pages.

No public data set labels "the same wire copy on two sites", so we make one from pages whose
article body a person has checked (``PAGES_DIR/truth.jsonl`` and ``html/<id>.html.gz``, the
layout of ``eval/pages``). A wire story lands on many sites: the same paragraphs inside
another site's navigation, rails and footer, with light edits. We reproduce that by moving
bodies between real layouts:

- **reprint**: page A as published, against A's checked body placed inside page B's layout
  with wire edits (a dateline, a trimmed last paragraph or two, a copyright line);
- **different**: page A as published, against A's own layout carrying another page's body:
  the same furniture around two different stories, which a matcher must keep apart.

Every page gives up to ``per_body`` pairs of each label, partners taken in id order after it,
so the set is the same for the same pages and seed. A layout is usable only when its body's
paragraphs sit as ``<p>`` children of one element; a layout that would still show its own
story after the swap (a JSON-LD ``articleBody``, an AMP or hidden copy) is skipped, so a
"different" pair never hides a real reprint.

Output: ``OUT/html/*.html`` (UTF-8) and ``OUT/pairs.jsonl`` with
``{"id", "a_html", "b_html", "label"}``, paths relative to ``OUT``: the input of
``feedmd eval reprints``.
"""

from __future__ import annotations

import gzip
import json
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lxml import etree
from lxml import html as lxml_html

from feedmd.tools.evaluation.headlines import EvalDataError, read_jsonl

# A paragraph shorter than this is a caption, byline or label: too short to locate the body
# in a layout reliably.
MIN_LOCATING_CHARS = 40
# How much of a paragraph's start identifies it in a layout (the benchmark's bodies and the
# pages differ in whitespace and trailing punctuation, rarely in the first 60 characters).
PREFIX_CHARS = 60
# A paragraph this long that survives the swap means the layout still shows its own story.
LEFTOVER_CHARS = 60
# Pairs of each label made from each page (3 x 111 pages gives ~300 reprints; the partner
# loop stops earlier when layouts run out).
DEFAULT_PER_BODY = 3
DEFAULT_SEED = 7

# Wire edits: the kinds of change a syndicated copy really carries, with how often each is
# applied. The strings are typical agency furniture, not taken from the pages.
DATELINES = ("WASHINGTON (AP) — ", "LONDON (Reuters) - ", "NEW YORK — ")
SIGN_OFFS = (
    "Copyright 2019 The Associated Press. All rights reserved. This material may not be "
    "published, broadcast, rewritten or redistributed.",
    "Reporting by staff; editing by the news desk. Our standards: the Thomson Reuters Trust "
    "Principles.",
)
DATELINE_CHANCE = 0.6
TRIM_CHANCE = 0.5
TRIM_MIN_PARAGRAPHS = 5
SIGN_OFF_CHANCE = 0.5

_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class SourcePage:
    """A page with a checked body: its id, raw HTML and the body's text."""

    id: str
    html: str
    body: str


@dataclass(frozen=True)
class ReprintPair:
    """One labelled pair: two HTML files (relative to the set's folder) and the label."""

    id: str
    a_html: str
    b_html: str
    label: str


@dataclass(frozen=True)
class ReprintSet:
    """What the builder made: how many pages had a usable layout, and the pairs."""

    pages: int
    usable_pages: int
    pairs: tuple[ReprintPair, ...]

    def counts(self) -> dict[str, int]:
        """Pairs by label, for the summary line."""
        return dict(Counter(pair.label for pair in self.pairs))


def squash(text: str | None) -> str:
    """Whitespace collapsed to single spaces, ends trimmed."""
    return _SPACE.sub(" ", text or "").strip()


def paragraphs(body: str) -> list[str]:
    """The non-empty paragraphs (lines) of a checked body, whitespace collapsed."""
    return [line for line in (squash(raw) for raw in body.split("\n")) if line]


def body_container(
    document: lxml_html.HtmlElement, body: str
) -> tuple[lxml_html.HtmlElement | None, list[lxml_html.HtmlElement]]:
    """The element whose ``<p>`` children carry most of ``body``, and those ``<p>``s.

    A ``<p>`` belongs to the body when its first characters start a body paragraph or a body
    paragraph's start is inside it. The parent holding most such ``<p>``s is the container;
    fewer than two means the layout cannot be used (no clear article block).
    """
    wanted = [line for line in paragraphs(body) if len(line) > MIN_LOCATING_CHARS]
    if not wanted:
        return None, []
    hits = []
    for element in document.iter("p"):
        text = squash(element.text_content())
        if len(text) > MIN_LOCATING_CHARS and any(
            text[:PREFIX_CHARS] in line or line[:PREFIX_CHARS] in text for line in wanted
        ):
            hits.append(element)
    parents = Counter(element.getparent() for element in hits)
    if not parents:
        return None, []
    container, count = max(parents.items(), key=lambda item: item[1])
    if count < 2:
        return None, []
    return container, [element for element in hits if element.getparent() is container]


def parse_html(text: str) -> lxml_html.HtmlElement | None:
    """The page's element tree, or None when lxml cannot make one."""
    try:
        return lxml_html.fromstring(text)
    except (etree.ParserError, ValueError):
        return None


def transplant(layout_html: str, layout_body: str, new_paragraphs: Sequence[str]) -> str | None:
    """The layout page with its own body's paragraphs replaced by ``new_paragraphs``.

    None when the layout has no usable body container or would still show its own story
    after the swap (a second copy elsewhere in the page, or a JSON-LD ``articleBody``).
    """
    document = parse_html(layout_html)
    if document is None:
        return None
    container, own = body_container(document, layout_body)
    if container is None:
        return None
    at = container.index(own[0])
    for element in own:
        container.remove(element)
    for offset, text in enumerate(new_paragraphs):
        element = lxml_html.Element("p")
        element.text = text
        container.insert(at + offset, element)
    result = lxml_html.tostring(document, encoding="unicode")
    if '"articleBody"' in result:
        return None
    flat = squash(lxml_html.fromstring(result).text_content())
    for line in paragraphs(layout_body):
        if len(line) > LEFTOVER_CHARS and line[:LEFTOVER_CHARS] in flat:
            return None
    return result


BARRIER = "\u2063"  # invisible separator: in no body line, so no match can cross it


def can_host(layout_html: str, layout_body: str) -> bool:
    """Whether any transplant into this layout can succeed, whatever the new paragraphs.

    ``transplant`` refuses a layout with no body container, with ``"articleBody"`` left after
    the swap, or with a line of its own body left elsewhere in the page. New paragraphs only
    add text where one ``BARRIER`` paragraph stands here, so a layout refused with the
    barrier is refused with any paragraphs. The builder asks once per layout instead of
    parsing it for each attempt: on the development pages most of the 8,003 attempts (411
    made pairs) went to layouts refused this way; `eval make-reprints` took 107 s, now 13 s,
    with byte-identical files.
    """
    return transplant(layout_html, layout_body, [BARRIER]) is not None


def wire_edits(lines: Sequence[str], rng: random.Random) -> list[str]:
    """The paragraphs as a syndicated copy might carry them: maybe a dateline, maybe the last
    one or two paragraphs trimmed, maybe an agency sign-off."""
    edited = list(lines)
    if rng.random() < DATELINE_CHANCE:
        edited[0] = rng.choice(DATELINES) + edited[0]
    if len(edited) >= TRIM_MIN_PARAGRAPHS and rng.random() < TRIM_CHANCE:
        edited = edited[: len(edited) - rng.randint(1, 2)]
    if rng.random() < SIGN_OFF_CHANCE:
        edited.append(rng.choice(SIGN_OFFS))
    return edited


def read_pages(pages_dir: Path) -> list[SourcePage]:
    """The pages of ``PAGES_DIR`` (truth.jsonl and html/<id>.html.gz, UTF-8), in file order."""
    pages = []
    for row in read_jsonl(pages_dir / "truth.jsonl", ("id", "body")):
        path = pages_dir / "html" / f"{row['id']}.html.gz"
        try:
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError, EOFError) as exc:
            raise EvalDataError(f"{path}: cannot read as gzipped UTF-8 HTML: {exc}") from None
        pages.append(SourcePage(id=str(row["id"]), html=text, body=str(row["body"])))
    return pages


def usable(page: SourcePage) -> bool:
    """Whether the page's layout has a body container we can swap."""
    document = parse_html(page.html)
    return document is not None and body_container(document, page.body)[0] is not None


def build_reprint_set(
    pages_dir: str | Path,
    out_dir: str | Path,
    seed: int = DEFAULT_SEED,
    per_body: int = DEFAULT_PER_BODY,
) -> ReprintSet:
    """Write ``out_dir/html/*.html`` and ``out_dir/pairs.jsonl`` and return what was made.

    The same pages, seed and ``per_body`` always give the same files.
    """
    source, out = Path(pages_dir), Path(out_dir)
    rng = random.Random(seed)
    pages = read_pages(source)
    layouts = {page.id: page for page in pages if usable(page)}
    ids = sorted(layouts)
    hosts = {page_id: can_host(page.html, page.body) for page_id, page in layouts.items()}
    (out / "html").mkdir(parents=True, exist_ok=True)

    def save(name: str, text: str) -> str:
        (out / "html" / name).write_text(text, encoding="utf-8")
        return f"html/{name}"

    made: list[tuple[str, str, str]] = []
    for index, a_id in enumerate(ids):
        a = layouts[a_id]
        a_lines = paragraphs(a.body)
        original = save(f"{a_id[:12]}-orig.html", a.html)
        reprints = differents = 0
        for step in range(1, len(ids)):
            if reprints >= per_body and differents >= per_body:
                break
            b = layouts[ids[(index + step) % len(ids)]]
            if reprints < per_body:
                edited = wire_edits(a_lines, rng)  # drawn even when b cannot host: same sequence
                copy = transplant(b.html, b.body, edited) if hosts[b.id] else None
                if copy is not None:
                    made.append(
                        (original, save(f"{a_id[:12]}-in-{b.id[:12]}.html", copy), "reprint")
                    )
                    reprints += 1
            if differents < per_body and hosts[a_id]:
                other = transplant(a.html, a.body, paragraphs(b.body))
                if other is not None:
                    made.append(
                        (original, save(f"{b.id[:12]}-in-{a_id[:12]}.html", other), "different")
                    )
                    differents += 1
    pairs = tuple(
        ReprintPair(id=f"reprint-{k}", a_html=a_path, b_html=b_path, label=label)
        for k, (a_path, b_path, label) in enumerate(made)
    )
    with (out / "pairs.jsonl").open("w", encoding="utf-8") as handle:
        for pair in pairs:
            handle.write(json.dumps(pair.__dict__) + "\n")
    return ReprintSet(pages=len(pages), usable_pages=len(ids), pairs=pairs)
