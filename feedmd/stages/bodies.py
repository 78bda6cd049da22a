"""The second body matcher: containment of word shingles, and its candidate index.

TLSH alone misses lightly edited wire copy (seed 003: NPR / OPB at 92) and its distance
grows with any length change (NOTES.md: an added header and footer paragraph costs 120 at
1 KB). A reprint with a trimmed or extended tail, a dateline or a copyright line still
carries most of the shorter text's word 5-grams, so the share of the shorter prose's
shingles found in the longer one (containment) catches it.

Measured on the development reprint set (shared/tools/make_reprints.py, seed 7: 309
reprints, 102 different stories in the same furniture): containment is >= 0.5 for 308 of
309 reprints and at most 0.299 for the different pairs; TLSH <= 40 finds 179.

Each body keeps its shingle hashes as a sorted array of unsigned 32-bit ints (``pack``).
Sorted by hash value, its first entries are a bottom-k sample of its shingles, so the
candidate index keys each stored body by its ``INDEX_SAMPLE`` smallest hashes and probes
with the query's ``PROBE_SAMPLE`` smallest: two texts that share half the shorter one's
shingles share some of those with near certainty (no miss on the 616 directed reprint
pairs of the development set). Candidates are then verified exactly on the full arrays.
"""

from __future__ import annotations

import hashlib
import re
from array import array
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Generic, TypeVar

T = TypeVar("T")

SHINGLE_WORDS = 5
INDEX_SAMPLE = 32
PROBE_SAMPLE = 128
_WORD = re.compile(r"\w+")


def shingle_hashes(prose: str, size: int = SHINGLE_WORDS) -> array[int]:
    """Sorted distinct 32-bit hashes of the prose's lowercased word ``size``-grams."""
    words = [word.lower() for word in _WORD.findall(prose)]
    values = {
        int.from_bytes(
            hashlib.blake2b(" ".join(words[i : i + size]).encode("utf-8"), digest_size=4).digest(),
            "big",
        )
        for i in range(len(words) - size + 1)
    }
    return array("I", sorted(values))


def pack(hashes: array[int]) -> bytes:
    """Store form of a shingle array (little-endian uint32)."""
    return hashes.tobytes()


def unpack(blob: bytes) -> array[int]:
    """Inverse of ``pack``."""
    out = array("I")
    out.frombytes(blob)
    return out


def containment(a: array[int] | frozenset[int], b: array[int] | frozenset[int]) -> Fraction:
    """Share of the smaller set's shingles found in the other, exactly (0 when either is
    empty)."""
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    if not small:
        return Fraction(0)
    large_set = large if isinstance(large, frozenset) else frozenset(large)
    return Fraction(sum(1 for value in small if value in large_set), len(small))


def reaches(score: Fraction | float, threshold: float) -> bool:
    """``score >= threshold`` with the threshold as the exact decimal written (0.5 = 1/2),
    so a boundary case is decided the same way every time."""
    return Fraction(score) >= Fraction(repr(threshold))


@dataclass(frozen=True)
class _Record(Generic[T]):
    shingles: frozenset[int]
    payload: T


class ShingleIndex(Generic[T]):
    """Stored bodies' shingle sets, found again through their smallest hashes."""

    def __init__(self) -> None:
        self._records: list[_Record[T]] = []
        self._postings: defaultdict[int, list[int]] = defaultdict(list)

    def __len__(self) -> int:
        return len(self._records)

    def add(self, hashes: array[int], payload: T) -> None:
        """Add a body (its sorted shingle hashes) in insertion order."""
        number = len(self._records)
        self._records.append(_Record(frozenset(hashes), payload))
        for value in hashes[:INDEX_SAMPLE]:
            self._postings[value].append(number)

    def best(self, hashes: array[int], threshold: float) -> tuple[T, Fraction] | None:
        """The earliest-added body whose containment with ``hashes`` reaches ``threshold``,
        else the candidate with the highest containment below it (for the 'similar'
        tier), with its score; None without candidates."""
        numbers: set[int] = set()
        for value in hashes[:PROBE_SAMPLE]:
            numbers.update(self._postings.get(value, ()))
        if not numbers:
            return None
        query = frozenset(hashes)
        scored = [(n, containment(query, self._records[n].shingles)) for n in sorted(numbers)]
        for number, score in scored:
            if reaches(score, threshold):
                return self._records[number].payload, score
        number, score = max(scored, key=lambda item: (item[1], -item[0]))
        return self._records[number].payload, score

    def extend(self, records: Iterable[tuple[array[int], T]]) -> None:
        """Add many bodies in order."""
        for hashes, payload in records:
            self.add(hashes, payload)
