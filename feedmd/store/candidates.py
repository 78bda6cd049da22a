"""The window as the deciders need it, read through the candidate keys (``keys.py``):
only the stored items that can match this run's entries, so a run costs what its new
entries cost, not what the window holds (issue 13).

The restricted snapshot decides exactly as the whole window would, because every
decider answers from the *matching* items, taken oldest first, and each candidate set
below holds every item that can match:

- entry ids and URL hashes: direct lookups of the batch's keys;
- headlines (Jaccard, containment): a match of a headline ``A`` of ``q`` tokens shares at
  least ``o = TitleIndex.min_overlap(q)`` of them, so it is filed under one of the token
  pairs of ``A``'s prefix (``title_pairs``, whose rows carry the tokens that decide);
  under settings the stored pairs do not serve, the postings of all its tokens, counted
  per item, name exactly the items sharing ``o`` (only those rows are read);
- headlines (simhash within ``k <= 3`` bits): one of the four 16-bit blocks is equal;
- CJK: the lead-token bucket (the gate: other leads never match);
- bodies: on TLSH, the earliest body within the reprint distance and the closest within
  the similar-tier radius (every digest of the window, read as packed columns from
  ``digest_packs`` and scored by ``tlsh_scan.scan``: at radius 100 a good share of any
  window is "within", so only those two are read); and the bodies sharing a sampled
  shingle hash: the shingle matcher's own candidates (``ShingleIndex``).

Two statistics are over the whole window, not over matches: the subject gate's casing
sightings and the CJK gram frequencies. They come as sums over the window for just the
words and grams the run's comparisons can look up (``WindowAggregates``).

Settings no key can serve (a zero threshold, ``simhash_max_bits`` above 3) read the whole
window, as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from feedmd.fingerprints import cjk
from feedmd.fingerprints.headlines import Headline, as_fraction, match_headlines, normalize_headline
from feedmd.fingerprints.subject_gate import cased_tokens
from feedmd.fingerprints.title_index import TitleIndex
from feedmd.fingerprints.urls import normalize_url, publisher_host, url_hash
from feedmd.models import (
    Entry,
    StoredHeadline,
    WindowAggregates,
    WindowSnapshot,
)
from feedmd.settings import Settings
from feedmd.store import title_pairs
from feedmd.store.keys import (
    CAPITAL,
    GRAM,
    LEAD,
    LOWER,
    SIMHASH,
    TOKEN,
    simhash_blocks,
    stored_key,
)
from feedmd.store.schema import Connection, chunks, to_unsigned64
from feedmd.timeutil import iso, parse_iso

_MAX_BLOCKED_BITS = len(SIMHASH) - 1
# A headline's candidates come from its rarest tokens' postings when those hold at most
# this many items (each costs a row read, ~30x a counted posting); otherwise from counting
# every token's postings. Rarity is counted up to RARITY_CAP, so telling "few" from "many"
# reads at most that many index entries a token.
FEW_CANDIDATES = 256
RARITY_CAP = FEW_CANDIDATES + 1
# Headline candidates through the stored token pairs when the settings allow it (False:
# through the token postings, as stores before migration 0017 did; the tests run both).
PAIRS = True


def needs_whole_window(settings: Settings) -> bool:
    """True for settings the keys cannot serve: a match sharing no token (a zero
    threshold) or simhash distances the four blocks do not cover."""
    jaccard = as_fraction(settings.jaccard_threshold)
    containment = as_fraction(settings.containment_threshold)
    smallest = min(
        -(-jaccard.numerator * max(settings.headline_min_tokens, 0) // jaccard.denominator),
        -(-containment.numerator * settings.containment_min_tokens // containment.denominator),
    )
    return smallest <= 0 or settings.simhash_max_bits > _MAX_BLOCKED_BITS


def _marks(values: Sequence[object]) -> str:
    return ",".join("?" * len(values))


class _Keys:
    """Lookups in ``title_keys`` inside one window (cutoff) for one org."""

    def __init__(self, conn: Connection, org_id: int, cutoff: str) -> None:
        self._conn, self._org, self._cutoff = conn, org_id, cutoff
        self._postings: dict[tuple[int, object], list[int]] = {}
        self._rarity: dict[str, int] = {}

    def postings(self, kind: int, key: object) -> list[int]:
        found = self._postings.get((kind, key))
        if found is None:
            found = [
                row[0]
                for row in self._conn.execute(
                    "SELECT item_id FROM title_keys WHERE org_id = ? AND kind = ? AND key = ?"
                    " AND published_at >= ?",
                    (self._org, kind, stored_key(self._conn, key), self._cutoff),
                )
            ]
            self._postings[(kind, key)] = found
        return found

    def rarity(self, token: str) -> int:
        """How many window items hold the token, counted up to ``RARITY_CAP``."""
        found = self._rarity.get(token)
        if found is None:
            row = self._conn.execute(
                "SELECT COUNT(*) FROM (SELECT 1 FROM title_keys WHERE org_id = ? AND kind = ?"
                " AND key = ? AND published_at >= ? LIMIT ?) AS capped",
                (self._org, TOKEN, token, self._cutoff, RARITY_CAP),
            ).fetchone()
            found = self._rarity[token] = int(row[0])
        return found

    def sharing(self, kind: int, keys: Sequence[object], at_least: int) -> list[int]:
        """The items holding at least ``at_least`` of these keys (counted by SQLite
        from the index alone: ~3x faster than counting the postings in Python)."""
        return [
            row[0]
            for row in self._conn.execute(
                f"SELECT item_id FROM title_keys WHERE org_id = ? AND kind = ?"
                f" AND key IN ({_marks(keys)}) AND published_at >= ?"
                f" GROUP BY item_id HAVING COUNT(*) >= ?",
                (
                    self._org,
                    kind,
                    *(stored_key(self._conn, key) for key in keys),
                    self._cutoff,
                    at_least,
                ),
            )
        ]

    def sums(self, kind: int, keys: Iterable[object]) -> dict[object, int]:
        found: dict[object, int] = {}
        for chunk in chunks(sorted(set(keys), key=str)):
            for key, total in self._conn.execute(
                f"SELECT key, SUM(n) FROM title_keys WHERE org_id = ? AND kind = ?"
                f" AND key IN ({_marks(chunk)}) AND published_at >= ? GROUP BY key",
                (self._org, kind, *chunk, self._cutoff),
            ):
                found[key] = int(total)
        return found

    def count(self, kind: int) -> int:
        row = self._conn.execute(
            "SELECT COUNT(*) FROM title_keys WHERE org_id = ? AND kind = ? AND published_at >= ?",
            (self._org, kind, self._cutoff),
        ).fetchone()
        return int(row[0])


def _headline_candidates(
    keys: _Keys, tokens: frozenset[str], value: int, settings: Settings, pairs: bool
) -> set[int]:
    """Every window item whose headline can match one of these tokens and simhash (with
    ``pairs``, by simhash only: the token matches come from ``_pair_matches``)."""
    size = len(tokens)
    if size < settings.headline_min_tokens:
        return set()  # match_headlines refuses short headlines
    found: set[int] = set()
    overlap = TitleIndex[object](settings).min_overlap(size)
    if overlap <= size and not pairs:
        # Two exact ways: the postings of any q - o + 1 tokens hold every match (cheap
        # when they are rare: names, numbers), and the items sharing o tokens, counted
        # over every token's postings, are the matches' superset without reading a
        # single item row (cheap when every token is common: the benchmark's closed
        # vocabulary gave ~5,400 candidates an entry at 300k, ~7 s of row reads a run,
        # against ~1.5 s of counting).
        ranked = sorted(tokens, key=lambda token: (keys.rarity(token), token))
        rarest = ranked[: size - overlap + 1]
        if sum(keys.rarity(token) for token in rarest) <= FEW_CANDIDATES:
            for token in rarest:
                found.update(keys.postings(TOKEN, token))
        else:
            found.update(keys.sharing(TOKEN, sorted(tokens), overlap))
    if settings.simhash_max_bits >= 0:
        for kind, block in zip(SIMHASH, simhash_blocks(value), strict=True):
            found.update(keys.postings(kind, block))
    return found


def _org_ids(conn: Connection, orgs: Iterable[str]) -> dict[str, int]:
    names = sorted(set(orgs))
    return dict(
        conn.execute(f"SELECT name, id FROM orgs WHERE name IN ({_marks(names)})", names).fetchall()
    )


def _feed_ids(conn: Connection, feeds: Iterable[str]) -> dict[str, int]:
    names = sorted(set(feeds))
    return dict(
        conn.execute(
            f"SELECT name, id FROM feeds WHERE name IN ({_marks(names)})", names
        ).fetchall()
    )


_ITEM_COLUMNS = (
    "SELECT i.id, f.name, o.name, i.entry_id, i.url_hash, i.title_raw, i.title_norm,"
    " i.simhash, i.published_at, i.decision, i.matched_item_id, i.url"
    " FROM items i {hint} JOIN feeds f ON f.id = i.feed_id JOIN orgs o ON o.id = i.org_id"
)
# The key lookups go through their own index, never a scan of the window (items_window
# looks as good to the planner on a store without statistics).
_BY_KEY = {"i.entry_id": "INDEXED BY items_entry_id", "i.url_hash": "INDEXED BY items_url_hash"}


def candidate_snapshot(
    conn: Connection, entries: Sequence[Entry], settings: Settings, now: datetime
) -> WindowSnapshot:
    """The window items that can match these entries at stage 1, oldest-first order left
    to the decider, with the window's casing and CJK sums (see the module docstring)."""
    org_ids = _org_ids(conn, (entry.org for entry in entries))
    if not org_ids:
        return WindowSnapshot(aggregates=WindowAggregates())
    cutoff = iso(now - timedelta(hours=settings.dedup_window_hours))
    ids_of = sorted({entry.entry_id for entry in entries})
    hashes: set[str] = set()
    wanted: set[int] = set()
    probes: list[tuple[Headline, set[int]]] = []
    cjk_ids: set[int] = set()
    batch_words: set[str] = set()
    batch_grams: set[str] = set()
    cjk_batch = False
    keys = {org: _Keys(conn, org_id, cutoff) for org, org_id in org_ids.items()}
    pairs = PAIRS and title_pairs.serves(settings)
    paired: dict[str, list[Headline]] = {}
    for entry in entries:
        if entry.link_resolution != "unresolved":
            normalized = normalize_url(entry.url)
            if normalized:
                hashes.add(url_hash(normalized))
        if entry.org not in keys:
            continue
        if cjk.is_cjk(entry.title):
            cjk_batch = True
            batch_grams.update(cjk.char_grams(entry.title))
            bucket = keys[entry.org].postings(LEAD, cjk.lead_token(entry.title))
            cjk_ids.update(bucket)
            wanted.update(bucket)
            continue
        tokens = normalize_headline(entry.title)
        batch_words.update(casing_words(entry.title))
        headline = Headline.from_tokens(tokens)
        found = _headline_candidates(
            keys[entry.org], headline.tokens, headline.simhash, settings, pairs
        )
        probes.append((headline, found))
        if pairs and len(headline.tokens) >= settings.headline_min_tokens:
            paired.setdefault(entry.org, []).append(headline)
        wanted.update(found)
    names = sorted(org_ids)
    exact: list[tuple[object, ...]] = []
    for column, values in (("i.entry_id", ids_of), ("i.url_hash", sorted(hashes))):
        for chunk in chunks(values):
            exact += conn.execute(
                f"{_ITEM_COLUMNS.format(hint=_BY_KEY[column])}"
                f" WHERE o.name IN ({_marks(names)}) AND {column} IN"
                f" ({_marks(chunk)}) AND i.published_at >= ?"
                f" AND i.decision IN ('kept', 'duplicate')",
                (*names, *chunk, cutoff),
            ).fetchall()
    exact.sort(key=lambda row: row[0])  # type: ignore[arg-type, return-value]
    entry_ids, url_hashes = [], []
    seen: set[tuple[int, str]] = set()
    wanted_ids, wanted_hashes = set(ids_of), hashes
    for item_id, feed, org, entry_id, hashed, *_, decision, matched, _url in exact:
        canonical = matched if decision == "duplicate" and matched else item_id
        if entry_id in wanted_ids and (item_id, "id") not in seen:
            seen.add((item_id, "id"))
            entry_ids.append((feed, org, entry_id, canonical))
        if hashed and hashed in wanted_hashes and (item_id, "hash") not in seen:
            seen.add((item_id, "hash"))
            url_hashes.append((feed, org, hashed, canonical))
    matched = _matching(conn, wanted, cutoff, probes, settings)
    for org, headlines in paired.items():
        matched |= _pair_matches(conn, org_ids[org], cutoff, headlines, settings)
    headlines = _headlines(conn, matched | cjk_ids, cutoff)
    words, grams = set(batch_words), set(batch_grams)
    for stored in headlines:
        if stored.item_id in cjk_ids:
            grams.update(cjk.char_grams(stored.title))
        else:
            words.update(casing_words(stored.title))
    casing: dict[tuple[str, bool], int] = {}
    frequency: dict[str, int] = {}
    documents = 0
    for org_keys in keys.values():
        for kind, capital in ((CAPITAL, True), (LOWER, False)):
            for word, total in org_keys.sums(kind, words).items():
                casing[(str(word), capital)] = casing.get((str(word), capital), 0) + total
        if cjk_batch:
            documents += org_keys.count(LEAD)
            for gram, total in org_keys.sums(GRAM, grams).items():
                frequency[str(gram)] = frequency.get(str(gram), 0) + total
    return WindowSnapshot(
        entry_ids=tuple(entry_ids),
        url_hashes=tuple(url_hashes),
        headlines=tuple(headlines),
        aggregates=WindowAggregates(
            casing=tuple((word, capital, n) for (word, capital), n in sorted(casing.items())),
            cjk_documents=documents,
            cjk_frequency=tuple(sorted(frequency.items())),
        ),
    )


def _matching(
    conn: Connection,
    item_ids: set[int],
    cutoff: str,
    probes: Sequence[tuple[Headline, set[int]]],
    settings: Settings,
) -> set[int]:
    """The kept window candidates that a headline of the batch matches by seed 003's
    rules (before the subject gate): no other stored headline can decide anything, and
    only their words are looked up in the casing sums. Only the tokens and simhash of the
    candidates are read for this (most candidates do not match)."""
    rows: dict[int, Headline] = {}
    for chunk in chunks(sorted(item_ids)):
        for item_id, norm, value in conn.execute(
            f"SELECT id, title_norm, simhash FROM items WHERE id IN ({_marks(chunk)})"
            f" AND published_at >= ? AND decision = 'kept'",
            (*chunk, cutoff),
        ):
            rows[item_id] = Headline(frozenset(norm.split()), to_unsigned64(value))
    keep: set[int] = set()
    overlaps = TitleIndex[object](settings)
    for headline, found in probes:
        candidates = [(item_id, rows[item_id]) for item_id in found - keep if item_id in rows]
        keep |= _accepted(headline, candidates, overlaps, settings)
    return keep


def _accepted(
    headline: Headline,
    candidates: Iterable[tuple[int, Headline]],
    overlaps: TitleIndex[object],
    settings: Settings,
) -> set[int]:
    """The candidates ``match_headlines`` accepts for ``headline``, after a necessary
    condition checked first (~5x cheaper): a Jaccard or containment match shares
    ``min_overlap`` tokens, a simhash one is near."""
    overlap = overlaps.min_overlap(len(headline.tokens))
    tokens, value = headline.tokens, headline.simhash
    return {
        item_id
        for item_id, stored in candidates
        if (
            len(tokens & stored.tokens) >= overlap
            or (value ^ stored.simhash).bit_count() <= settings.simhash_max_bits
        )
        and match_headlines(headline, stored, settings)
    }


def _pair_matches(
    conn: Connection,
    org_id: int,
    cutoff: str,
    headlines: Sequence[Headline],
    settings: Settings,
) -> set[int]:
    """The kept window items one of these headlines matches by seed 003's rules through
    a shared prefix pair (every Jaccard or containment match, ``title_pairs``), checked
    on the tokens and simhash the pair rows carry: one query per chunk of keys, no item
    row read."""
    wanted = {headline: title_pairs.pair_keys(headline.tokens) for headline in headlines}
    filed = title_pairs.lookup(conn, org_id, cutoff, (k for ks in wanted.values() for k in ks))
    overlaps = TitleIndex[object](settings)
    keep: set[int] = set()
    for headline, pair_keys in wanted.items():
        candidates = {
            item_id: stored for key in pair_keys for item_id, stored in filed.get(key, ())
        }
        candidates = {k: v for k, v in candidates.items() if k not in keep}
        keep |= _accepted(headline, candidates.items(), overlaps, settings)
    return keep


def casing_words(title: str) -> set[str]:
    """The words the subject gate asks the casing sums about for one title: its words
    lowercased as written (the sums count words, while the tokens may be numerals,
    countries or stems: "Williams" is the token "william")."""
    return {word.lower() for word in cased_tokens(title)}


def _headlines(conn: Connection, item_ids: Iterable[int], cutoff: str) -> list[StoredHeadline]:
    """The kept window items among ``item_ids`` as stage 1 compares against them."""
    found: list[StoredHeadline] = []
    for chunk in chunks(sorted(set(item_ids))):
        rows = conn.execute(
            f"{_ITEM_COLUMNS.format(hint='')} WHERE i.id IN ({_marks(chunk)})"
            f" AND i.published_at >= ?"
            f" AND i.decision = 'kept'",
            (*chunk, cutoff),
        )
        for item_id, feed, org, _, _, title, norm, value, published, _, _, url in rows:
            found.append(
                StoredHeadline(
                    item_id=item_id,
                    feed=feed,
                    org=org,
                    title=title,
                    tokens=tuple(norm.split()),
                    simhash=to_unsigned64(value),
                    published=parse_iso(published),
                    host=publisher_host(url) if url else "",
                )
            )
    return found
