"""Markdown -> prose -> TLSH digest: what stage 2 fingerprints.

Raw page text does not work: a big publisher's navigation can be longer than the story and
would make every article of that site look alike (seed 003). So the Markdown is reduced to
prose, in four steps:

1. Lines. Rules and code are structure and never prose; a heading is never prose on its
   own (step 3 keeps a story's sub-heading between two paragraphs). A table row is
   structure, but its cells are text like any other line: older and regional sites lay
   whole articles out in HTML tables, and trafilatura returns such an article as one cell
   (``| | <the whole article> |``), which must give its prose; a row none of whose cells
   is prose is read as one line (a row of the story's own table reads as a sentence); a
   row is its own context (rows never join), so a table of short cells (a calendar, a
   list of scores) still gives none. Inline HTML tags and Markdown escapes are
   removed; list marks and emphasis too.
2. Each line on its own: prose when it has at least ``prose_min_words`` words (CJK
   characters count as half a word) or is a short sentence (ends in sentence punctuation,
   at least ``prose_short_min_words`` words); never when more than ``prose_max_link_share``
   of its words are link text, or when it is a short boilerplate line ("Follow us on",
   "Sign up for our newsletter", "All rights reserved", ...).
3. Paragraph context: a short line that sits between two prose lines (with only other
   short lines in between) is kept too: short paragraphs, quotes, list items of the story,
   the pieces of a paragraph that trafilatura wrapped over several lines, and a heading
   between two paragraphs (the story's own sub-heading, "What happens next").
   A table, link list or boilerplate line breaks the context, and so does a heading that
   no paragraph precedes, so menus, bylines and related-story rails stay out. A line that
   is mostly link text breaks it too, except inside a sentence: trafilatura puts an inline
   link on a line of its own ("... predicted that Apple will" / "[transition its entire
   lineup](...)" / ", including all models."), so a link line between two text lines is
   read as a short line when the text before it does not end a sentence or the text after
   it goes on in lower case or punctuation (a rail's headline between two whole
   paragraphs still breaks context).
4. Junk pages (consent walls, anti-bot pages, paywalls, error pages, in twelve languages:
   ``walls.py``) give the same text for unrelated articles: when such text dominates,
   there is no digest. Under
   ``prose_min_chars`` of prose there is no digest either, and the item can only be
   matched by its headline.

Measured on the 111 real pages of eval/pages (``feedmd eval pages``, the benchmark's
4-gram shingle metric): seed 003's line rule (prose-v1) P 0.971 R 0.876 F1 0.921, 3 pages
without digest; prose-v2 P 0.982 R 0.922 F1 0.951, 1 page without digest (a
360-character paywalled WSJ teaser); trafilatura's own plain text P 0.948 R 0.978 F1 0.963;
prose-v5 (sub-headings, a table row read as one line, 8-word lines) P 0.984 R 0.946 F1
0.964; prose-v6 (a link line inside a sentence) and this rule (prose-v7: escaped angle
brackets are text) in docs/accuracy.md.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import tlsh

from feedmd.settings import Settings
from feedmd.stages.walls import wall_kind

# The tunables of the rule are Settings (prose_short_min_words, prose_cjk_chars_per_word,
# prose_boilerplate_max_words, prose_junk_min_share), documented with their measurements.

_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_EMPHASIS = re.compile(r"[*_`~]+")
# An inline HTML tag left in the Markdown; "\<The Palace: Tale of Jang Noksu>" is not one:
# trafilatura escapes a literal "<" in the text (titles in angle brackets, common in Korean
# releases), and removing it as a tag lost the title (two pages of eval/pages, prose-v7).
_HTML_TAG = re.compile(r"(?<!\\)</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?/?>")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")
_RULE = re.compile(r"[-=*_ ]{3,}")
_NO_SPACE_SCRIPT = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_SENTENCE_END = re.compile(r"[.!?…。！？]['\"”’»)\]]*$")
_STRUCTURE = ("#", "|", ">|", "---", "===")
# An ATX heading: one to six marks and a space ("#hashtag" is text, not a heading).
_HEADING = re.compile(r"^#{1,6}\s+")
_TABLE_ROW = ("|", ">|")
# A Markdown table's header separator row: | --- | :---: |
_TABLE_RULE = re.compile(r">?[\s|:-]*-[\s|:-]*")
# Cell borders (an escaped pipe is cell text) and line breaks inside a cell.
_CELL_BORDER = re.compile(r"(?<!\\)\|")
_CELL_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)

# Furniture lines of article pages, English, German, French and Spanish. A block matches
# when one of these occurs in it; it is dropped when short (setting prose_boilerplate_max_words).
_BOILERPLATE = re.compile(
    r"""
    ^(?:read\ more|related(?:\ (?:stories|articles|coverage))?:|see\ also|also\ read|more:
       |you\ may\ also\ like|like\ this\ (?:story|article)|have\ a\ tip\b|advertisement$
       |updated\ (?:at|on)\b
       |lesen\ sie\ (?:auch|mehr)|mehr\ zum\ thema|weiterlesen|anzeige$|aktualisiert\ am\b
       |lire\ aussi|à\ lire\ aussi|voir\ aussi|publicité$|mis\ à\ jour\ le\b
       |lee\ también|leer\ más|ver\ también|publicidad$|actualizado\ el\b)
    |all\ rights\ reserved|alle\ rechte\ vorbehalten|tous\ droits\ réservés
      |todos\ los\ derechos\ reservados
    |(?:sign\ up|subscribe)\b.{0,60}\b(?:newsletters?|inbox)
      |\bnewsletters?\b.{0,60}\b(?:sign\ up|subscribe|inbox)
      |newsletter\ (?:abonnieren|bestellen)|abonnez-vous|inscrivez-vous|suscríbete
    |^(?:follow|folgen\ sie|suivez|sigue|síguenos)\b.{0,60}
      \b(?:twitter|facebook|instagram|youtube|tiktok|linkedin)\b
    |click\ here|klicken\ sie\ hier|cliquez\ ici|haga\ clic\ aquí|haz\ clic\ aquí
    |share\ (?:it|this\ (?:story|article))\ with
    """,
    re.IGNORECASE | re.VERBOSE,
)


@dataclass(frozen=True)
class Prose:
    """The prose of a page and its digest, or the reason there is no digest."""

    text: str
    digest: str | None
    no_digest_reason: str | None
    line_keys: tuple[str, ...] = ()


def line_key(line: str) -> str:
    """A short stable key of a prose line (case and spacing folded), to count where a line
    recurs across one host's pages."""
    folded = " ".join(line.lower().split())
    return hashlib.blake2b(folded.encode("utf-8"), digest_size=8).hexdigest()


@dataclass(frozen=True)
class _Heading:
    """A Markdown heading line's text: never prose on its own, kept like a short line when
    it sits between two prose lines (a story's own sub-heading), else it breaks context."""

    text: str


@dataclass(frozen=True)
class _Row:
    """The text pieces of one table row (``_cells``): each piece a line when one of them is
    prose on its own (an article laid out in a cell, beside its menu), else the row read
    as one line (a row of a story's own table: "Kyle Busch | Toyota | 5,040 points")."""

    pieces: tuple[str, ...]


def _blocks(markdown: str) -> Iterator[str | _Heading | _Row | None]:
    """The text lines of Markdown; a ``_Heading`` for a heading, a ``_Row`` for a table
    row; None for other structure (a rule or code, and the borders of a row), which is
    never prose and breaks paragraph context.

    Lines are not joined into paragraphs: when trafilatura falls back to its baseline
    extraction it puts menu items on consecutive lines ("Section 1\nSection 2\n..."), and
    joined they read as one long paragraph. A paragraph wrapped over several lines comes
    back whole through paragraph context instead."""
    in_code = False
    for raw in markdown.splitlines():
        line = raw.strip()
        if line.startswith("```"):
            in_code = not in_code
            yield None
        elif in_code:
            yield None
        elif line.startswith(_TABLE_ROW):
            yield None  # a row is its own context: cells of one row may join, rows never
            pieces = tuple(_cells(line))
            if pieces:
                yield _Row(pieces)
            yield None
        elif _HEADING.match(line):
            yield _Heading(_HEADING.sub("", line))
        elif line.startswith(_STRUCTURE) or _RULE.fullmatch(line):
            yield None
        elif line:
            yield line.lstrip("> ").strip()


def _cells(row: str) -> Iterator[str]:
    """The text pieces of a Markdown table row: each cell, split at its line breaks."""
    if _TABLE_RULE.fullmatch(row):
        return
    for cell in _CELL_BORDER.split(row.lstrip(">").strip()):
        for piece in _CELL_BREAK.split(cell):
            if piece.strip():
                yield piece.strip()


def _plain(block: str) -> tuple[str, int]:
    """A Markdown block as plain text, and how many of its words are link text."""
    text = _ESCAPE.sub(r"\1", _HTML_TAG.sub("", _LIST_MARK.sub("", block)))
    link_words = sum(
        len(m.group(1).split()) for m in _LINK.finditer(text) if not m.group(0).startswith("!")
    )
    plain = _EMPHASIS.sub(
        "", _LINK.sub(lambda m: "" if m.group(0).startswith("!") else m.group(1), text)
    )
    return " ".join(plain.split()), link_words


def _word_count(plain: str, settings: Settings) -> float:
    """Words of a plain text; characters of scripts without spaces count as a fraction."""
    dense = len(_NO_SPACE_SCRIPT.findall(plain))
    if not dense:
        return len(plain.split())
    per_word = settings.prose_cjk_chars_per_word
    return len(_NO_SPACE_SCRIPT.sub(" ", plain).split()) + dense / per_word


def _classify(block: str, settings: Settings) -> tuple[str, str]:
    """('prose' | 'short' | 'link' | 'drop', plain text) for one text block: 'link' when
    more than ``prose_max_link_share`` of its words are link text."""
    plain, link_words = _plain(block)
    words = _word_count(plain, settings)
    if not plain:
        return "drop", plain
    if link_words > settings.prose_max_link_share * words:
        return "link", plain
    boilerplate_max = settings.prose_boilerplate_max_words
    if words < boilerplate_max and _BOILERPLATE.search(plain):
        return "drop", plain
    if words >= settings.prose_min_words:
        return "prose", plain
    short_min = settings.prose_short_min_words
    if words >= short_min and _SENTENCE_END.search(plain):
        return "prose", plain
    return "short", plain


def prose_line(line: str, settings: Settings) -> str | None:
    """Return a line (or paragraph) as plain prose if it qualifies on its own, else None.

    Short lines that only qualify by sitting between prose lines are decided by
    ``markdown_to_prose``, which sees the context."""
    text = line.strip()
    if not text or text.startswith((*_STRUCTURE, "```")) or _RULE.fullmatch(text):
        return None
    kind, plain = _classify(text, settings)
    return plain if kind == "prose" else None


def _classified(markdown: str, settings: Settings) -> Iterator[tuple[str, str]]:
    """(kind, plain text) of every block: 'prose', 'short', 'heading', 'link', 'drop',
    'structure'."""
    for block in _blocks(markdown):
        if block is None:
            yield "structure", ""
        elif isinstance(block, _Heading):
            plain, link_words = _plain(block.text)
            linked = link_words > settings.prose_max_link_share * _word_count(plain, settings)
            yield ("heading", plain) if plain and not linked else ("structure", "")
        elif isinstance(block, _Row):
            pieces = [_classify(piece, settings) for piece in block.pieces]
            if any(kind == "prose" for kind, _ in pieces):
                yield from pieces
            else:
                yield _classify(" ".join(block.pieces), settings)
        else:
            yield _classify(block, settings)


# Text that goes on a sentence: it starts in lower case or with punctuation that never
# opens one (", including all models.").
_CONTINUES = re.compile(r"^[a-z,.;:)\]'’”-]")
_TEXT = ("prose", "short")


def _links_in_sentences(blocks: Sequence[tuple[str, str]]) -> Iterator[tuple[str, str]]:
    """The blocks, a link line inside a sentence read as a short line: one between two
    text lines where the text before does not end a sentence or the text after goes on
    (``_CONTINUES``). An inline link that trafilatura put on a line of its own; a linked
    headline between two whole paragraphs (a rail, "Read: ...") still breaks context."""
    for n, (kind, plain) in enumerate(blocks):
        if kind == "link" and 0 < n < len(blocks) - 1:
            (before, text_before), (after, text_after) = blocks[n - 1], blocks[n + 1]
            open_sentence = not _SENTENCE_END.search(text_before) or _CONTINUES.match(text_after)
            if before in _TEXT and after in _TEXT and open_sentence:
                kind = "short"
        yield kind, plain


def _prose_blocks(markdown: str, settings: Settings) -> list[str]:
    """The plain text of every block kept as prose, in order (steps 1-3)."""
    classified = _links_in_sentences(list(_classified(markdown, settings)))
    kept: list[str] = []
    run: list[str] = []  # short blocks since the last prose block
    after_prose = False
    for kind, plain in classified:
        if kind == "prose":
            if after_prose:
                kept.extend(run)
            kept.append(plain)
            run = []
            after_prose = True
        elif kind in ("short", "heading") and after_prose:
            run.append(plain)
        else:
            run = []
            after_prose = False
    return kept


def junk_verdict(markdown_or_prose: str, settings: Settings | None = None) -> str | None:
    """The kind of junk page ("consent wall", "anti-bot page", "paywall", "error page")
    when such boilerplate makes up at least ``prose_junk_min_share`` of the text's
    characters, else None. Works on Markdown or on plain prose."""
    min_share = (settings or Settings()).prose_junk_min_share
    lines = [
        _plain(line.strip().lstrip("#|> ").strip())[0] for line in markdown_or_prose.splitlines()
    ]
    total = sum(len(plain) for plain in lines)
    if not total:
        return None
    # Stop as soon as the lines that are not wall text outweigh what a wall may leave:
    # an article is then settled after about half its characters (the phrase search is
    # the costly part of a long page's prose).
    allowed_other = (1 - min_share) * total
    other = 0
    by_kind: dict[str, int] = {}
    for plain in lines:
        kind = wall_kind(plain) if plain else None
        if kind is None:
            other += len(plain)
            if other > allowed_other:
                return None
        else:
            by_kind[kind] = by_kind.get(kind, 0) + len(plain)
    if sum(by_kind.values()) < min_share * total:
        return None
    return max(by_kind.items(), key=lambda item: item[1])[0]


# Which lines are consent-wall text, by what they say (``feedmd.model.walls.ConsentWalls``:
# the sentence model is the run's, handed in; without one only the phrases decide).
WallLines = Callable[[Sequence[str]], Sequence[bool]]


def walls_by_meaning(
    proses: Sequence[Sequence[str]], settings: Settings, walls: WallLines
) -> list[bool]:
    """For each page's prose lines: a consent wall by meaning? Only a short page is read
    (``wall_model_max_chars``, ``wall_model_max_lines``); it is a wall when the lines
    ``walls`` reads as wall text carry ``wall_model_min_share`` of its characters.

    Every page's longest line is read first, all in one call: in an article it is not wall
    text and, when it holds more than the share leaves over, no other line can make the
    page a wall. Only the pages still open have their other lines read, in a second call.
    So a run pays about one encoding per short article, batched."""
    totals = [sum(len(line) for line in lines) for lines in proses]
    open_pages = [
        n
        for n, lines in enumerate(proses)
        if 0 < totals[n] <= settings.wall_model_max_chars
        and len(lines) <= settings.wall_model_max_lines
    ]
    ordered = {n: sorted(proses[n], key=len, reverse=True) for n in open_pages}
    first = walls([ordered[n][0] for n in open_pages]) if open_pages else []
    flagged = {
        n: len(ordered[n][0]) if hit else 0 for n, hit in zip(open_pages, first, strict=True)
    }
    needed = {n: settings.wall_model_min_share * totals[n] for n in open_pages}
    still = [n for n in open_pages if totals[n] - len(ordered[n][0]) + flagged[n] >= needed[n]]
    rest = [(n, line) for n in still for line in ordered[n][1:]]
    for (n, line), hit in zip(rest, walls([line for _, line in rest]) if rest else [], strict=True):
        flagged[n] += len(line) if hit else 0
    verdict = [False] * len(proses)
    for n in still:
        verdict[n] = flagged[n] >= needed[n]
    return verdict


def wall_verdict(
    lines: Sequence[str], settings: Settings, walls: WallLines | None = None
) -> str | None:
    """The junk kind of one page whose prose is ``lines``: the phrases (``junk_verdict``),
    then, with ``walls``, a consent wall by meaning (``walls_by_meaning``)."""
    kind = junk_verdict("\n".join(lines), settings)
    if kind is not None or walls is None:
        return kind
    return "consent wall" if walls_by_meaning([lines], settings, walls)[0] else None


def markdown_to_prose(
    markdown: str, settings: Settings, furniture: frozenset[str] = frozenset()
) -> Prose:
    """Reduce Markdown to prose and fingerprint it (TLSH of the UTF-8 prose).

    ``furniture`` holds the keys of lines this page's host prints on many pages (a
    standing disclaimer, a 'contributed to this report' line): they are left out of the
    prose. ``line_keys`` lists every prose line's key, furniture included, so the store can
    keep counting. (Walls told by meaning are a later pass over a run's pages:
    ``walls_by_meaning``, ``stages.scrape.without_walls``.)"""
    candidates = _prose_blocks(markdown, settings)
    keys = tuple(line_key(block) for block in candidates)
    blocks = [block for block, key in zip(candidates, keys, strict=True) if key not in furniture]
    text = "\n".join(blocks)
    # judged on the prose and on the whole Markdown: a wall's own short lines ("Accept all",
    # "Page not found") are not prose, but they are most of the page
    junk = junk_verdict(text, settings) or junk_verdict(markdown, settings)
    if junk is not None:
        return Prose(text, None, f"junk page: {junk}", keys)
    if len(text) < settings.prose_min_chars:
        reason = f"prose too short: {len(text)} chars < {settings.prose_min_chars}"
        return Prose(text, None, reason, keys)
    digest = tlsh.hash(text.encode("utf-8"))
    if not digest or digest == "TNULL":
        return Prose(text, None, "no TLSH digest: prose too uniform", keys)
    return Prose(text, digest, None, keys)
