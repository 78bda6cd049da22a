"""The second body matcher: containment of word shingles, and its candidate index.

TLSH alone misses lightly edited wire copy (seed 003: NPR / OPB at 92) and its distance
grows with any length change (measured with py-tlsh: an added header and footer paragraph
costs 120 at 1 KB). A reprint with a trimmed or extended tail, a dateline or a copyright line still
carries most of the shorter text's word 5-grams, so the share of the shorter prose's
shingles found in the longer one (containment) catches it.

Measured on the development reprint set (``feedmd eval make-reprints eval/pages``, seed 7: 309
reprints, 102 different stories in the same furniture): containment is >= 0.5 for 308 of
309 reprints and at most 0.299 for the different pairs; TLSH <= 40 finds 179.

Each body keeps its shingle hashes as a sorted array of unsigned 32-bit ints (``pack``).
The candidate index files each stored body under the hashes divisible by
``SAMPLE_MODULUS`` (a sample by value, so a shared shingle is sampled in both texts, a
short brief and the long article it was cut from alike) and probes with the same sample
of the query; candidates are then verified exactly on the full arrays (numpy), which stay
packed: 4 bytes a shingle.
"""

from __future__ import annotations

import hashlib
import re
from array import array
from collections import defaultdict
from collections.abc import Iterable
from fractions import Fraction
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

T = TypeVar("T")

SHINGLE_WORDS = 5
# A shingle hash divisible by this is a key of the candidate index: one in 8. Two texts
# sharing k shingles share no key with probability (7/8)**k: below 0.0003 for the ~60
# shingles of the shortest prose that gets a digest (400 characters), whatever the lengths.
SAMPLE_MODULUS = 8
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


class ShingleIndex(Generic[T]):
    """Stored bodies' shingle sets, found again through a sample of their hashes."""

    def __init__(self) -> None:
        self._records: list[tuple[npt.NDArray[np.uint32], T]] = []
        self._postings: defaultdict[int, list[int]] = defaultdict(list)

    def __len__(self) -> int:
        return len(self._records)

    def add(self, hashes: array[int], payload: T) -> None:
        """Add a body (its sorted shingle hashes) in insertion order."""
        values = np.frombuffer(hashes.tobytes(), dtype=np.uint32)
        number = len(self._records)
        self._records.append((values, payload))
        for key in sample_keys(values):
            self._postings[key].append(number)

    def best(self, hashes: array[int], threshold: float) -> tuple[T, Fraction] | None:
        """The earliest-added body whose containment with ``hashes`` reaches ``threshold``,
        else the candidate with the highest containment below it (for the 'similar'
        tier), with its score; None without candidates."""
        query = np.frombuffer(hashes.tobytes(), dtype=np.uint32)
        numbers: set[int] = set()
        for key in sample_keys(query):
            numbers.update(self._postings.get(key, ()))
        if not numbers:
            return None
        scored = []
        for number in sorted(numbers):
            values, payload = self._records[number]
            shared = int(np.intersect1d(query, values, assume_unique=True).size)
            score = Fraction(shared, min(len(query), len(values)))
            if reaches(score, threshold):
                return payload, score
            scored.append((score, -number, payload))
        score, _, payload = max(scored, key=lambda item: (item[0], item[1]))
        return payload, score

    def extend(self, records: Iterable[tuple[array[int], T]]) -> None:
        """Add many bodies in order."""
        for hashes, payload in records:
            self.add(hashes, payload)


def sample_keys(values: npt.NDArray[np.uint32]) -> list[int]:
    """The hashes a body is filed and looked up under: every hash divisible by
    SAMPLE_MODULUS, plus the smallest. Sampling by value (not by rank) means a shingle two
    texts share is sampled in both, whatever their lengths."""
    if values.size == 0:
        return []
    keys = values[values % SAMPLE_MODULUS == 0]
    found: list[int] = np.union1d(keys, values[values.argmin(keepdims=True)]).tolist()
    return found  # sorted, distinct, Python ints (tolist: ~2x faster than int() each)
