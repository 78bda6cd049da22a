"""Headline token-pair keys (migration 0017): stage 1's Jaccard and containment candidates
of a new headline, read with the stored headlines' tokens, without counting postings.

Why: with a small vocabulary every token of a headline is common, and the items sharing
``min_overlap`` of its tokens could only be found by counting every token's postings
(``candidates._Keys.sharing``): ~75,000 posting rows an entry at 740,000 stored items,
~2.1 s of a 20-entry run, growing with the window (benchmarks/README.md).

Prefix filtering on pairs (``TitleIndex``'s scheme, with a frozen order): tokens are put in
one fixed global order, longest first, then by code point (``order``; a proxy for rarity
that SQL can compute, so migration 0017 backfills existing stores in SQL). If two headlines
of ``q`` and ``r`` tokens share ``o >= 2`` tokens and ``o`` is at least ``a(q)`` and
``a(r)``, their first two shared tokens in that order lie in the first ``n - a(n) + 2``
tokens of each side (the last ``a - 2`` tokens of a side hold at most ``a - 2`` shared
tokens, the last ones). Every kept item is filed under each pair of its first
``r - a(r) + 2`` tokens, with its tokens and simhash, so a run reads a query's prefix pairs
and checks the rows it gets without reading an item.

``a(n)`` is frozen (``rule_overlap``: the minimum overlap of the default thresholds,
Jaccard 3/5, containment 17/20 over 5 tokens), because stored keys cannot follow a
setting. ``serves(settings)`` tells whether the settings' own minimum overlap is at least
``a(n)`` (and 2) for every size that can match: then the pairs find every match; otherwise
(lower thresholds) the candidates come from the token postings as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations

from feedmd.fingerprints.headlines import Headline
from feedmd.fingerprints.title_index import TitleIndex
from feedmd.settings import Settings
from feedmd.store.schema import Connection, chunks, to_unsigned64

# The frozen rule of the stored prefixes: ceil(3n/5) shared tokens (Jaccard 0.6, the
# default), at most 5 once n >= 5 (containment 0.85 of 5 tokens, the default). Changing
# it needs a migration that rebuilds title_pairs (and 0017's backfill says the same).
RULE_JACCARD = (3, 5)
RULE_CONTAINMENT_MIN = 5
RULE_CONTAINMENT_OVERLAP = 5
# Sizes above this have rule_overlap(n) == RULE_CONTAINMENT_OVERLAP (ceil(3 * 8 / 5) = 5).
_RULE_FLAT_FROM = 8

PairRow = tuple[int, str, str, int, str, int]  # org, key, published, item, tokens, simhash


def rule_overlap(size: int) -> int:
    """The fewest shared tokens of any match of a ``size``-token headline under the frozen
    rule (the default thresholds)."""
    numerator, denominator = RULE_JACCARD
    found = -(-numerator * size // denominator)
    if size >= RULE_CONTAINMENT_MIN:
        found = min(found, RULE_CONTAINMENT_OVERLAP)
    return found


def order(token: str) -> tuple[int, str]:
    """The frozen global token order: longer first (long words are rarer), then by code
    point (SQLite's BINARY and PostgreSQL's "C" collation order UTF-8 text so too)."""
    return -len(token), token


def pair_keys(tokens: Iterable[str]) -> list[str]:
    """The pair keys of a headline's distinct tokens: ``"first second"`` for each pair of
    its first ``n - rule_overlap(n) + 2`` tokens in ``order``."""
    ordered = sorted(set(tokens), key=order)
    prefix = len(ordered) - rule_overlap(len(ordered)) + 2
    return [f"{first} {second}" for first, second in combinations(ordered[:prefix], 2)]


def serves(settings: Settings) -> bool:
    """True when every Jaccard or containment match under these settings shares at least
    ``rule_overlap`` (and 2) tokens on each side, so the stored pairs find it. Sizes from
    ``max(containment_min_tokens, 8)`` on need no check: both minimums are then
    non-decreasing (the settings') and constant (the rule's)."""
    index = TitleIndex[object](settings)
    last = max(settings.containment_min_tokens, _RULE_FLAT_FROM) + 1
    return all(
        index.min_overlap(size) >= max(rule_overlap(size), 2)
        for size in range(max(settings.headline_min_tokens, 1), last + 1)
    )


def rows(org_id: int, published: str, item_id: int, norm: str, simhash: int) -> list[PairRow]:
    """The pair rows of one kept (non-CJK) item: its normalised title and stored simhash
    ride along, so a lookup needs no item row."""
    return [(org_id, key, published, item_id, norm, simhash) for key in pair_keys(norm.split())]


def insert(conn: Connection, found: Sequence[PairRow]) -> None:
    """Insert computed pair rows (a row already there is left as it is)."""
    conn.executemany(
        "INSERT INTO title_pairs (org_id, key, published_at, item_id, tokens, simhash)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        sorted(found),  # in key order, as keys.insert_rows
    )


def delete(conn: Connection, found: Sequence[PairRow]) -> None:
    """Delete these pair rows (recomputed from the stored title)."""
    conn.executemany(
        "DELETE FROM title_pairs WHERE org_id = ? AND key = ? AND published_at = ? AND item_id = ?",
        [row[:4] for row in found],
    )


def lookup(
    conn: Connection, org_id: int, cutoff: str, keys: Iterable[str]
) -> dict[str, list[tuple[int, Headline]]]:
    """For each pair key, the window items filed under it with their headline (tokens and
    unsigned simhash), one query per chunk of keys."""
    found: dict[str, list[tuple[int, Headline]]] = {}
    headlines: dict[int, Headline] = {}
    for chunk in chunks(sorted(set(keys))):
        marks = ",".join("?" * len(chunk))
        for key, item_id, tokens, value in conn.execute(
            f"SELECT key, item_id, tokens, simhash FROM title_pairs WHERE org_id = ?"
            f" AND key IN ({marks}) AND published_at >= ?",
            (org_id, *chunk, cutoff),
        ):
            headline = headlines.get(item_id)
            if headline is None:
                headline = headlines[item_id] = Headline(
                    frozenset(tokens.split()), to_unsigned64(value)
                )
            found.setdefault(key, []).append((item_id, headline))
    return found
