"""An exact, sub-linear index of kept headlines for stage 1.

``TitleIndex.first_match`` returns exactly what stage 1's brute-force loop returns (the
earliest-added headline that ``match`` accepts, with that match) without comparing the new
headline with every earlier one. Candidates are generated so that no match can be missed,
then each is verified, earliest first:

1. **Jaccard and containment: prefix filtering on token pairs.** For a headline of ``n``
   tokens, ``min_overlap(n)`` is the fewest shared tokens any match of it can have: Jaccard
   needs ``inter >= t * union >= t * n``; containment applies only when both sides have
   ``>= containment_min_tokens`` tokens and then needs ``inter >= c * containment_min_tokens``.
   Thresholds are exact fractions (``as_fraction``), ceilings are integer ceilings. Tokens
   are put in one frozen global order (rarest first). If a pair shares ``o`` tokens and
   ``o`` is at least the minimum overlap ``a`` of each side, the first two shared tokens in
   that order lie in the first ``n - a + 2`` tokens of each side (the last ``a - 2`` tokens
   of a side can hold at most ``a - 2`` shared tokens, and those are the last shared ones).
   So every record is filed under each pair of its first ``r - a_r + 2`` tokens, and a query
   probes the pairs of its first ``q - a_q + 2``: a shared pair is always found. When some
   match could share a single token only (low thresholds), single tokens are used instead
   (prefix ``n - a + 1``). Rare pairs have short postings, which is what makes this fast
   even on a small vocabulary, where single-token postings run to thousands at 1M records.
2. **Simhash: Manku et al. (2007) block tables.** With ``k = simhash_max_bits`` the 64 bits
   are cut into ``k + 1`` blocks; Hamming distance ``<= k`` leaves one block equal.
3. **Verification.** Candidates are checked with exact integer arithmetic that mirrors
   ``match_headlines``, then with ``match`` itself, in insertion order; ``first_match``
   returns the first accepted one, ``matches`` yields them all lazily.

Degenerate settings (a zero threshold, which makes every pair of long-enough headlines
match, or ``simhash_max_bits >= 64``) fall back to a linear scan: still exact.

Records are never removed: stage 1 builds a fresh index per run from the window snapshot.
Memory is flat arrays of ints: the 1M-headline benchmark peaks at about 540 MB RSS in all
(benchmarks/README.md).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import combinations
from typing import Generic, TypeVar

from feedmd.fingerprints.headlines import Headline, HeadlineMatch, as_fraction, match_headlines
from feedmd.settings import Settings

T = TypeVar("T")
Matcher = Callable[[Headline, Headline, Settings], HeadlineMatch | None]

_MASK64 = (1 << 64) - 1
# Fibonacci hashing: multiply by 2**64 / golden ratio, keep the top bits.
_GOLDEN = 0x9E3779B97F4A7C15
# Above this many simhash blocks (blocks under 4 bits) the tables hold most records per
# probe; a straight Hamming scan over the packed simhashes is cheaper.
_MAX_SIMHASH_BLOCKS = 16
# Blocks this narrow have few distinct values: a dict of arrays per block stays small.
_NARROW_BLOCK_BITS = 16


def _ceil_times(value: float, count: int) -> int:
    """The exact integer ceiling of ``as_fraction(value) * count``."""
    fraction = as_fraction(value)
    return -(-fraction.numerator * count // fraction.denominator)


class _ChainTable:
    """A compact multimap from 64-bit keys to record numbers: chained hashing in flat arrays
    (16 bytes per entry), doubling when the load passes 2. Python dicts of arrays cost ~10x
    more per key, which matters with ~12 keys per headline at 1M headlines."""

    __slots__ = ("_bits", "_head", "_keys", "_next", "_values")

    def __init__(self, bits: int = 8) -> None:
        self._bits = bits
        self._head = array("i", [-1]) * (1 << bits)
        self._next = array("i")
        self._keys = array("Q")
        self._values = array("I")

    def add(self, key: int, value: int) -> None:
        """File ``value`` under ``key``."""
        if len(self._keys) >= 2 << self._bits:
            self._grow()
        slot = ((key * _GOLDEN) & _MASK64) >> (64 - self._bits)
        self._next.append(self._head[slot])
        self._head[slot] = len(self._keys)
        self._keys.append(key)
        self._values.append(value)

    def extend_into(self, key: int, out: set[int]) -> None:
        """Add every value filed under ``key`` to ``out``."""
        keys, values, chain = self._keys, self._values, self._next
        entry = self._head[((key * _GOLDEN) & _MASK64) >> (64 - self._bits)]
        while entry >= 0:
            if keys[entry] == key:
                out.add(values[entry])
            entry = chain[entry]

    def _grow(self) -> None:
        self._bits += 1
        shift = 64 - self._bits
        head = array("i", [-1]) * (1 << self._bits)
        chain = self._next
        for entry, key in enumerate(self._keys):
            slot = ((key * _GOLDEN) & _MASK64) >> shift
            chain[entry] = head[slot]
            head[slot] = entry
        self._head = head


class _PostingTable:
    """A multimap from small keys (simhash blocks of 16 bits or less, so at most 65,536
    keys) to record numbers: one ``array('I')`` per key, read in one C-level call. Twice
    as fast as walking chains, and compact while the keys are few."""

    __slots__ = ("_postings",)

    def __init__(self) -> None:
        self._postings: dict[int, array[int]] = {}

    def add(self, key: int, value: int) -> None:
        """File ``value`` under ``key``."""
        found = self._postings.get(key)
        if found is None:
            self._postings[key] = array("I", (value,))
        else:
            found.append(value)

    def extend_into(self, key: int, out: set[int]) -> None:
        """Add every value filed under ``key`` to ``out``."""
        found = self._postings.get(key)
        if found is not None:
            out.update(found)


class TitleIndex(Generic[T]):
    """Kept headlines in insertion order, answering "which is the first one this headline
    matches?" exactly as a linear scan would, in a small fraction of its time.

    ``match`` must never accept a pair that ``match_headlines`` rejects (it defaults to
    ``match_headlines``); candidate generation is complete for that rule set. ``token_counts``
    (how often each token occurs in the headlines about to be added, e.g. the window) freezes
    a rarest-first token order that keeps postings short; it changes speed, never results.
    Without it, tokens first seen later rank as rarer.
    """

    def __init__(
        self,
        settings: Settings,
        match: Matcher = match_headlines,
        *,
        token_counts: Mapping[str, int] | None = None,
    ) -> None:
        self._settings = settings
        self._match = match
        self._min_tokens = settings.headline_min_tokens
        self._counts = token_counts or {}
        self._token_ids: dict[str, int] = {}
        self._strings: list[str] = []
        self._rank = array("Q")  # per token id: sort key, rarest first
        self._flat = array("I")  # every record's token ids, back to back
        self._offsets = array("Q", [0])
        self._simhashes = array("Q")
        self._payloads: list[T] = []
        self._overlaps: dict[int, int] = {}
        self._rows: dict[int, list[int]] = {}
        self._longest = 0  # tokens in the longest record

        jaccard = as_fraction(settings.jaccard_threshold)
        containment = as_fraction(settings.containment_threshold)
        self._jaccard = (jaccard.numerator, jaccard.denominator)
        self._containment = (containment.numerator, containment.denominator)
        self._containment_min = settings.containment_min_tokens
        self._max_bits = settings.simhash_max_bits
        smallest = min(
            _ceil_times(settings.jaccard_threshold, max(self._min_tokens, 0)),
            _ceil_times(settings.containment_threshold, self._containment_min),
        )
        # A match sharing no token at all (or every pair, at simhash_max_bits >= 64) cannot
        # be found through an index: scan.
        self._linear = smallest <= 0 or self._max_bits >= 64
        # Pairs when every match shares at least two tokens, else single tokens.
        self._group = 2 if smallest >= 2 else 1
        self._tokens_table = _ChainTable()
        self._blocks: list[tuple[int, int]] = []
        self._block_tables: list[_ChainTable | _PostingTable] = []
        if not self._linear and 0 <= self._max_bits < _MAX_SIMHASH_BLOCKS:
            count = self._max_bits + 1
            shift = 0
            for block in range(count):
                width = 64 // count + (1 if block < 64 % count else 0)
                self._blocks.append((shift, (1 << width) - 1))
                narrow = width <= _NARROW_BLOCK_BITS
                self._block_tables.append(_PostingTable() if narrow else _ChainTable())
                shift += width

    @classmethod
    def from_records(
        cls,
        settings: Settings,
        records: Sequence[tuple[Headline, T]],
        match: Matcher = match_headlines,
    ) -> TitleIndex[T]:
        """Build an index of ``records`` (oldest first), with the token order frozen from
        their own token counts: the way to load a window snapshot."""
        counts: dict[str, int] = {}
        for headline, _ in records:
            for token in headline.tokens:
                counts[token] = counts.get(token, 0) + 1
        index = cls(settings, match, token_counts=counts)
        for headline, payload in records:
            index.add(headline, payload)
        return index

    def __len__(self) -> int:
        """Headlines held: those added with at least ``headline_min_tokens`` tokens (shorter
        ones never match anything, so they are not kept)."""
        return len(self._payloads)

    def records(self) -> Iterator[tuple[Headline, T]]:
        """Every kept headline with its payload, in insertion order (for checks and scans)."""
        for number in range(len(self._payloads)):
            yield self._headline(number), self._payloads[number]

    def add(self, headline: Headline, payload: T) -> None:
        """Keep ``headline`` after every earlier one; ``payload`` is returned on a match."""
        size = len(headline.tokens)
        if size < self._min_tokens:
            return
        number = len(self._payloads)
        ids = [self._intern(token) for token in headline.tokens]
        self._flat.extend(ids)
        self._offsets.append(len(self._flat))
        self._simhashes.append(headline.simhash)
        self._payloads.append(payload)
        self._longest = max(self._longest, size)
        if self._linear:
            return
        rank = self._rank
        ids.sort(key=rank.__getitem__)
        for key in self._keys(ids, size):
            self._tokens_table.add(key, number)
        value = headline.simhash
        for (shift, mask), table in zip(self._blocks, self._block_tables, strict=True):
            table.add(value >> shift & mask, number)

    def first_match(self, headline: Headline) -> tuple[T, HeadlineMatch] | None:
        """The earliest kept headline that ``match`` accepts against ``headline``, with the
        match: the same answer as comparing with every kept headline in order."""
        return next(self.matches(headline), None)

    def matches(self, headline: Headline) -> Iterator[tuple[T, HeadlineMatch]]:
        """Every kept headline that ``match`` accepts against ``headline``, with the match,
        in insertion order, lazily: for a caller that applies a further gate needing the
        payload (stage 1's subject gate) and moves on to the next match when it blocks.
        Do not ``add`` while iterating."""
        size = len(headline.tokens)
        if size < self._min_tokens or not self._payloads:
            return iter(())
        if self._linear:
            return self._accepted(headline, range(len(self._payloads)), None)
        token_ids = self._token_ids
        known = [token_ids[token] for token in headline.tokens if token in token_ids]
        rank = self._rank
        known.sort(key=rank.__getitem__)
        # Unseen tokens can be shared with no record: they head the order, filling prefix
        # slots without a probe.
        ordered = [-1] * (size - len(known)) + known
        candidates: set[int] = set()
        table = self._tokens_table
        for key in self._keys(ordered, size):
            table.extend_into(key, candidates)
        self._simhash_candidates(headline.simhash, candidates)
        return self._accepted(headline, sorted(candidates), set(known))

    def _keys(self, ordered: list[int], size: int) -> Iterator[int]:
        """The table keys of a headline whose token ids are ``ordered`` rarest first (-1 for
        a token the index has never seen)."""
        prefix = size - self.min_overlap(size) + self._group
        if prefix < self._group:
            return
        if self._group == 1:
            yield from (token for token in ordered[:prefix] if token >= 0)
            return
        for first, second in combinations(ordered[:prefix], 2):
            if first >= 0 and second >= 0:
                yield (first << 32 | second) if first < second else (second << 32 | first)

    def min_overlap(self, size: int) -> int:
        """The fewest tokens a headline of ``size`` tokens shares with anything it matches
        by Jaccard or containment (more than ``size`` when neither rule can fire)."""
        found = self._overlaps.get(size)
        if found is None:
            settings = self._settings
            found = _ceil_times(settings.jaccard_threshold, size)
            if size >= self._containment_min:
                found = min(
                    found, _ceil_times(settings.containment_threshold, self._containment_min)
                )
            self._overlaps[size] = found
        return found

    def _simhash_candidates(self, value: int, out: set[int]) -> None:
        """Add every record within ``simhash_max_bits`` of ``value`` to ``out``."""
        limit = self._max_bits
        if limit < 0:
            return
        simhashes = self._simhashes
        if not self._blocks:
            out.update(
                n for n, other in enumerate(simhashes) if (value ^ other).bit_count() <= limit
            )
            return
        near: set[int] = set()
        for (shift, mask), table in zip(self._blocks, self._block_tables, strict=True):
            table.extend_into(value >> shift & mask, near)
        out.update(n for n in near if (value ^ simhashes[n]).bit_count() <= limit)

    def _accepted(
        self, headline: Headline, candidates: Iterable[int], known: set[int] | None
    ) -> Iterator[tuple[T, HeadlineMatch]]:
        """The ``candidates`` (in order) that ``match`` accepts. Given the query's known
        token ids, each is first checked exactly as ``match_headlines`` decides, on token
        ids (cheap), and only then rebuilt and passed to ``match``; without, all are."""
        settings, match = self._settings, self._match
        needed = self._needed(len(headline.tokens)) if known is not None else []
        value, max_bits = headline.simhash, self._max_bits
        flat, offsets, simhashes = self._flat, self._offsets, self._simhashes
        for number in candidates:
            start, end = offsets[number], offsets[number + 1]
            if (
                known is not None
                and len(known.intersection(flat[start:end])) < needed[end - start]
                and (value ^ simhashes[number]).bit_count() > max_bits
            ):
                continue
            found = match(headline, self._headline(number), settings)
            if found is not None:
                yield self._payloads[number], found

    def _needed(self, size: int) -> list[int]:
        """For a query of ``size`` tokens, the shared tokens a record of each size needs to
        match by Jaccard or containment: ``inter * den >= num * (q + r - inter)`` is
        ``inter >= num * (q + r) / (num + den)``; containment is ``inter >= c * min(q, r)``
        once ``min(q, r) >= containment_min_tokens``. Exact integer ceilings."""
        row = self._rows.get(size)
        if row is None or len(row) <= self._longest:
            j_num, j_den = self._jaccard
            c_num, c_den = self._containment
            row = []
            for other in range(self._longest + 1):
                need = -(-j_num * (size + other) // (j_num + j_den))
                smaller = min(size, other)
                if smaller >= self._containment_min:
                    need = min(need, -(-c_num * smaller // c_den))
                row.append(need)
            self._rows[size] = row
        return row

    def _headline(self, number: int) -> Headline:
        strings = self._strings
        start, end = self._offsets[number], self._offsets[number + 1]
        return Headline(
            frozenset(strings[token] for token in self._flat[start:end]),
            self._simhashes[number],
        )

    def _intern(self, token: str) -> int:
        found = self._token_ids.get(token)
        if found is None:
            found = len(self._strings)
            self._token_ids[token] = found
            self._strings.append(token)
            # Fewer occurrences first; among equals (and all unseen ones) the newest first.
            count = min(self._counts.get(token, 0), 0xFFFFFFFF)
            self._rank.append(count << 32 | (0xFFFFFFFF - found))
        return found
