"""The review page's template filters: numbers, times, safe links, and an item's evidence
in words with item references as links (``feedmd explain --json`` keeps the raw keys)."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from feedmd.tools import explain


def number(value: float | None) -> str:
    """A score or threshold as short text; a dash for none."""
    return "–" if value is None else f"{value:g}"


def when(stamp: str) -> str:
    """A stored ISO time, shorter for tables: '2026-10-12 05:30' (UTC)."""
    return stamp.replace("T", " ")[:16] if len(stamp) >= 16 else stamp


def href(url: str) -> str:
    """Only http(s) URLs become links: an entry link comes from a stranger's feed."""
    return url if url.lower().startswith(("http://", "https://")) else "#"


# Evidence keys in words (feedmd explain --json keeps the raw keys).
EVIDENCE_LABELS = {
    "where": "matched",
    "verdict": "body verdict",
    "decided_by": "decided by",
    "tlsh_distance": "TLSH distance",
    "tlsh_match": "closest body by TLSH",
    "containment": "shared passages (shingle containment)",
    "containment_match": "closest body by shared passages",
    "possible_duplicate_of": "possible duplicate of",
    "digest": "TLSH digest",
    "prose_chars": "prose length (characters)",
    "shared_tokens": "shared headline words",
    "headline_tokens": "headline words",
    "matched_title": "matched headline",
    "matched_through": "matched through",
    "normalized_url": "normalised URL",
    "entry_id": "entry id",
    "http_status": "HTTP status",
    "subject_gate_blocked": "subject gate blocked",
    "shared_grams": "shared character 3-grams",
    "replaced_representative": "replaced representative",
    "shared_with": "the same body as",
    "unrelated_stories": "unrelated stories under this body",
    "furniture_of": "the same body as",
}
EVIDENCE_WORDS = {
    "where": {
        "run": "an earlier item of the same run",
        "window": "a stored item of the dedup window",
    },
    "verdict": {
        "reprint": "reprint: the same body, so dropped",
        "similar": "similar body: kept and marked “possible duplicate”",
        "different": "a different body",
        "no digest": "no digest: too little prose to compare",
        "shared block": "shared block: the same body under unrelated stories, so kept",
        "host furniture": "host furniture: the same body under an unrelated headline, so kept",
    },
    "decided_by": {
        "tlsh": "TLSH distance",
        "containment": "shared passages (shingle containment)",
    },
}


def evidence_label(key: str) -> str:
    """An evidence key in words."""
    return EVIDENCE_LABELS.get(key, key.replace("_", " "))


def evidence_value(value: Any, key: str = "") -> Markup:
    """An evidence value in words, item references as links; autoescaped like any text."""
    if isinstance(value, dict) and isinstance(value.get("item_id"), int):
        return Markup('<a href="/review/items/{0}">item {0}</a>').format(value["item_id"])
    if isinstance(value, dict) and "run_key" in value:
        return Markup("an entry of the same run")
    if key in EVIDENCE_WORDS and isinstance(value, str):
        return Markup.escape(EVIDENCE_WORDS[key].get(value, value))
    if key == "matched_through" and isinstance(value, list):
        return Markup.escape(f"{len(value)} dropped item(s) of the same run")
    if isinstance(value, bool):
        return Markup("yes" if value else "no")
    if isinstance(value, float):
        return Markup.escape(number(value))
    if isinstance(value, list):
        shown = [evidence_value(v, key) for v in value[: explain.EXCERPT_ITEMS]]
        more = len(value) - explain.EXCERPT_ITEMS
        text = Markup(", ").join(shown)
        return text + (f", and {more} more" if more > 0 else "")
    if isinstance(value, dict):
        return Markup("; ").join(
            Markup("{}: {}").format(evidence_label(k), evidence_value(v, k))
            for k, v in value.items()
        )
    return Markup.escape(explain.excerpt(value))
