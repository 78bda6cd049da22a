"""Markdown -> prose -> TLSH digest: what stage 2 fingerprints.

Raw page text does not work: a big publisher's navigation can be longer than the story and
would make every article of that site look alike (seed 003). So the Markdown is reduced to
prose: lines of at least ``prose_min_words`` words that are not mostly link text; headings,
tables, images and link lists go. Under ``prose_min_chars`` of prose there is no digest
and the item can only be matched by its headline.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import tlsh

from feedmd.config import Settings

PROSE_RULE_VERSION = "prose-v1"

_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_EMPHASIS = re.compile(r"[*_`~]+")


@dataclass(frozen=True)
class Prose:
    """The prose of a page and its digest, or the reason there is no digest."""

    text: str
    digest: str | None
    no_digest_reason: str | None


def prose_settings_version(settings: Settings) -> str:
    """A short tag of the settings that shape prose and digests; a change makes stored
    digests stale."""
    key = (
        f"{PROSE_RULE_VERSION}:{settings.prose_min_words}:"
        f"{settings.prose_max_link_share!r}:{settings.prose_min_chars}"
    )
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def prose_line(line: str, settings: Settings) -> str | None:
    """Return the line as plain prose if it qualifies, else None."""
    text = line.strip()
    if not text or text.startswith(("#", "|", ">|", "---", "===", "```")):
        return None
    text = _LIST_MARK.sub("", text.lstrip("> ").strip())
    link_words = sum(
        len(m.group(1).split()) for m in _LINK.finditer(text) if not m.group(0).startswith("!")
    )
    plain = _EMPHASIS.sub(
        "", _LINK.sub(lambda m: "" if m.group(0).startswith("!") else m.group(1), text)
    )
    plain = " ".join(plain.split())
    words = plain.split()
    if len(words) < settings.prose_min_words:
        return None
    if link_words > settings.prose_max_link_share * len(words):
        return None
    return plain


def markdown_to_prose(markdown: str, settings: Settings) -> Prose:
    """Reduce Markdown to prose and fingerprint it (TLSH of the UTF-8 prose)."""
    lines = [
        kept for line in markdown.splitlines() if (kept := prose_line(line, settings)) is not None
    ]
    text = "\n".join(lines)
    if len(text) < settings.prose_min_chars:
        return Prose(text, None, f"prose too short: {len(text)} chars < {settings.prose_min_chars}")
    digest = tlsh.hash(text.encode("utf-8"))
    if not digest or digest == "TNULL":
        return Prose(text, None, "no TLSH digest: prose too uniform")
    return Prose(text, digest, None)
