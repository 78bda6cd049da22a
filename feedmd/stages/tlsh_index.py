"""An exact, fast lookup of TLSH digests for stage 2.

``TlshIndex.first_within`` returns exactly what stage 2's loop returns (the earliest-added
digest with ``tlsh.diff(query, digest) <= max_distance``, and that distance) without calling
``tlsh.diff`` on every stored digest. ``tlsh_distance`` is the same distance in Python.

The distance (``tlsh.diff``, length included; checked against py-tlsh 5.0.0 and the TLSH C++
``totalDiff``): after ``T1`` the 70 hex digits are 35 bytes. Byte 0 is a checksum, byte 1 the
length code L with its nibbles swapped, byte 2 the Q1 and Q2 ratios (one nibble each), bytes
3-34 the body: 128 two-bit codes.

- Length: ``d = |L1 - L2|`` on the ring mod 256; cost ``d`` if ``d <= 1``, else ``12 * d``.
- Q1 and Q2: ``d`` on the ring mod 16 each; cost ``d`` if ``d <= 1``, else ``12 * (d - 1)``.
- Checksum: 1 if the bytes differ.
- Body: per code pair, a difference of 0, 1, 2 or 3 costs 0, 1, 2 or 6.

Every term is non-negative, so any subset of terms is a lower bound, which gives an exact
candidate filter in two steps:

1. **Length buckets.** Records are kept in 256 buckets by length code. A query only visits
   buckets whose length cost alone is within the threshold: at 40, ``|dL| <= 3``.
2. **High-bit bound.** A code pair whose high bits differ (one code in {0, 1}, the other in
   {2, 3}) costs at least 1. So ``length cost + popcount(high bits XOR)`` is a lower bound;
   each bucket keeps its records' 128 high bits as two uint64 words and a vectorised
   popcount discards the records whose bound exceeds the threshold (unrelated digests
   differ in about 64 high bits).
3. **Exact distance** of the survivors: header terms plus a body lookup table of the cost
   of every byte pair (four codes), summed. Equal to ``tlsh.diff`` by construction and by
   test (tests/stages/test_tlsh_index.py).

Within a bucket records are in insertion order, so the first survivor within the threshold
is the bucket's earliest; ``first_within`` takes the earliest over the buckets and, once it
has one, only scans the part of the other buckets added before it. Measured figures are in
benchmarks/stage2.py's docstring.

Needs numpy >= 2.0 (``np.bitwise_count``). Records are never removed: stage 2 builds a fresh
index per run from the window snapshot.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

T = TypeVar("T")

DIGEST_PREFIX = "T1"
DIGEST_LENGTH = 72  # "T1" and 35 bytes in hex
_BODY_BYTES = 32
_LENGTH_MULT = 12  # TLSH's LENGTH_MULT
_QRATIO_MULT = 12  # TLSH's QRATIO_MULT
_CODE_COST = (0, 1, 2, 6)  # by difference of two 2-bit codes
# Above this many records a bucket is scored in chunks, so temporaries stay small.
_CHUNK = 1 << 16

U8 = npt.NDArray[np.uint8]
U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]


def _ring(a: int, b: int, modulus: int) -> int:
    """The distance of ``a`` and ``b`` on the ring of integers mod ``modulus``."""
    d = abs(a - b)
    return min(d, modulus - d)


def _length_cost(d: int) -> int:
    """TLSH's cost of a length-code distance ``d`` (already taken on the ring)."""
    return d if d <= 1 else d * _LENGTH_MULT


def _qratio_cost(d: int) -> int:
    """TLSH's cost of one Q-ratio distance ``d`` (already taken on the ring)."""
    return d if d <= 1 else (d - 1) * _QRATIO_MULT


def _swap(byte: int) -> int:
    """The byte with its two nibbles swapped (how TLSH writes the length code)."""
    return ((byte & 0x0F) << 4) | (byte >> 4)


def _byte_pair_costs() -> U8:
    """A 256 x 256 table: the body cost of two bytes (four code pairs each)."""
    values = np.arange(256)
    total = np.zeros((256, 256), dtype=np.int64)
    cost = np.array(_CODE_COST)
    for shift in (0, 2, 4, 6):
        codes = (values >> shift) & 3
        total += cost[np.abs(codes[:, None] - codes[None, :])]
    return total.astype(np.uint8)


def _qbyte_pair_costs() -> U8:
    """A 256 x 256 table: the Q1 + Q2 cost of two Q bytes (one ratio per nibble)."""
    table = np.zeros((256, 256), dtype=np.uint8)
    for a in range(256):
        for b in range(256):
            table[a, b] = _qratio_cost(_ring(a >> 4, b >> 4, 16)) + _qratio_cost(
                _ring(a & 15, b & 15, 16)
            )
    return table


_BODY_COST = _byte_pair_costs()
_BODY_COST_FLAT = _BODY_COST.tobytes()  # row-major: cost of (a, b) at a * 256 + b
_Q_COST = _qbyte_pair_costs()
_Q_COST_FLAT = _Q_COST.tobytes()
_SWAP = np.array([_swap(b) for b in range(256)], dtype=np.uint8)


def decode_digest(digest: str) -> bytes:
    """The 35 bytes of a ``T1`` TLSH digest, or ValueError naming what is wrong with it.

    Accepts what ``tlsh.diff`` accepts among 72-character digests (``T1`` then hex digits of
    either case); ``"TNULL"`` (py-tlsh's answer for short or low-variance input) and the old
    70-character form without ``T1`` are refused, so bad input fails where it is stored.
    """
    if not isinstance(digest, str):
        raise ValueError(f"a TLSH digest must be a str, not {type(digest).__name__}")
    if digest == "TNULL":
        raise ValueError("TLSH digest 'TNULL' (input too short or too uniform) cannot be compared")
    if len(digest) != DIGEST_LENGTH or not digest.startswith(DIGEST_PREFIX):
        raise ValueError(f"not a T1 TLSH digest of {DIGEST_LENGTH} characters: {digest!r}")
    hex_digits = digest[2:]
    if not (hex_digits.isascii() and hex_digits.isalnum()):  # fromhex would skip spaces
        raise ValueError(f"not a T1 TLSH digest (non-hex characters): {digest!r}")
    try:
        return bytes.fromhex(hex_digits)
    except ValueError:
        raise ValueError(f"not a T1 TLSH digest (non-hex characters): {digest!r}") from None


def tlsh_distance(a: str, b: str) -> int:
    """``tlsh.diff(a, b)`` (length included) computed in Python from the digest fields.

    Exists so the index's arithmetic has a readable reference and a test against py-tlsh;
    it is about as fast as ``tlsh.diff`` for one pair, so callers should keep using that.
    """
    x, y = decode_digest(a), decode_digest(b)
    distance = _length_cost(_ring(_swap(x[1]), _swap(y[1]), 256))
    distance += _Q_COST_FLAT[x[2] << 8 | y[2]]
    distance += x[0] != y[0]
    table = _BODY_COST_FLAT
    distance += sum(table[p << 8 | q] for p, q in zip(x[3:], y[3:], strict=True))
    return distance


def _high_bits(bodies: U8) -> U64:
    """For ``(n, 32)`` body bytes, the high bit of each of the 128 codes packed in two
    uint64 words per row ``(n, 2)``: the words the high-bit bound is counted on."""
    bits = np.unpackbits(bodies, axis=1)[:, 0::2]  # MSB first: each code's high bit
    return np.ascontiguousarray(np.packbits(bits, axis=1)).view(np.uint64)


class _Bucket:
    """The records of one length code, in insertion order, in growable numpy arrays."""

    __slots__ = ("body", "checksum", "high0", "high1", "ids", "qbyte", "size")

    def __init__(self, capacity: int = 16) -> None:
        self.size = 0
        self.ids: I64 = np.empty(capacity, dtype=np.int64)
        self.high0: U64 = np.empty(capacity, dtype=np.uint64)
        self.high1: U64 = np.empty(capacity, dtype=np.uint64)
        self.checksum: U8 = np.empty(capacity, dtype=np.uint8)
        self.qbyte: U8 = np.empty(capacity, dtype=np.uint8)
        self.body: U8 = np.empty((capacity, _BODY_BYTES), dtype=np.uint8)

    def append(self, ids: I64, raw: U8, high: U64) -> None:
        """Append records: ``raw`` their ``(n, 35)`` decoded bytes, ``high`` their words."""
        count = len(ids)
        end = self.size + count
        if end > len(self.ids):
            self._grow(max(end, 2 * len(self.ids)))
        start, self.size = self.size, end
        self.ids[start:end] = ids
        self.high0[start:end] = high[:, 0]
        self.high1[start:end] = high[:, 1]
        self.checksum[start:end] = raw[:, 0]
        self.qbyte[start:end] = raw[:, 2]
        self.body[start:end] = raw[:, 3:]

    def _grow(self, capacity: int) -> None:
        for name in ("ids", "high0", "high1", "checksum", "qbyte", "body"):
            old = getattr(self, name)
            new = np.empty((capacity, *old.shape[1:]), dtype=old.dtype)
            new[: self.size] = old[: self.size]
            setattr(self, name, new)


class _Query:
    """A decoded query digest and its lookup rows, computed once per query."""

    __slots__ = ("body_costs", "checksum", "high0", "high1", "length", "q_costs")

    def __init__(self, digest: str) -> None:
        raw = np.frombuffer(decode_digest(digest), dtype=np.uint8)
        self.checksum = raw[0]
        self.length = int(_SWAP[raw[1]])
        self.q_costs: U8 = _Q_COST[raw[2]]  # cost against every possible Q byte
        # Row j: the cost of body byte j against each of the 256 values, flattened.
        self.body_costs: U8 = _BODY_COST[raw[3:]].ravel()
        high = _high_bits(raw[3:].reshape(1, _BODY_BYTES))
        self.high0 = high[0, 0]
        self.high1 = high[0, 1]


_COLUMN_OFFSETS = (np.arange(_BODY_BYTES, dtype=np.intp) * 256).reshape(1, _BODY_BYTES)


def _bucket_matches(
    bucket: _Bucket, query: _Query, length_cost: int, max_distance: int, end: int, first: bool
) -> tuple[I64, I64]:
    """Positions (< ``end``) and exact distances of the bucket's records within
    ``max_distance`` of the query, in insertion order; only the first one when ``first``."""
    budget = max_distance - length_cost
    found_positions: list[I64] = []
    found_distances: list[I64] = []
    for start in range(0, end, _CHUNK):
        stop = min(start + _CHUNK, end)
        if budget < 128:  # the high-bit bound can discard something
            bound = np.bitwise_count(bucket.high0[start:stop] ^ query.high0)
            bound += np.bitwise_count(bucket.high1[start:stop] ^ query.high1)
            positions = np.flatnonzero(bound <= budget) + start
        else:
            positions = np.arange(start, stop)
        if not len(positions):
            continue
        body = bucket.body[positions].astype(np.intp) + _COLUMN_OFFSETS
        distances = query.body_costs[body].sum(axis=1, dtype=np.int64)
        distances += query.q_costs[bucket.qbyte[positions]]
        distances += bucket.checksum[positions] != query.checksum
        distances += length_cost
        keep = distances <= max_distance
        if keep.any():
            if first:
                at = int(np.argmax(keep))
                return positions[at : at + 1], distances[at : at + 1]
            found_positions.append(positions[keep])
            found_distances.append(distances[keep])
    if not found_positions:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty
    return np.concatenate(found_positions), np.concatenate(found_distances)


class TlshIndex(Generic[T]):
    """TLSH digests in insertion order, each with a payload, answering "which is the first
    one within this distance?" exactly as a linear scan over ``tlsh.diff`` would.

    About 70 bytes of arrays per digest plus the payload objects; digests are not kept as
    strings.
    """

    def __init__(self) -> None:
        self._buckets: dict[int, _Bucket] = {}
        self._payloads: list[T] = []

    def __len__(self) -> int:
        """Digests held."""
        return len(self._payloads)

    def add(self, digest: str, payload: T) -> None:
        """Keep ``digest`` after every earlier one; ``payload`` is returned on a match.
        Raises ValueError for ``"TNULL"`` or a malformed digest (nothing is added)."""
        self.extend([(digest, payload)])

    def extend(self, records: Iterable[tuple[str, T]]) -> None:
        """``add`` every ``(digest, payload)`` in order, decoding them in one numpy pass
        (loading a window of 1M digests this way takes seconds, not minutes). Every digest
        is checked before any is added."""
        digests: list[str] = []
        payloads: list[T] = []
        for digest, payload in records:
            decode_digest(digest)
            digests.append(digest)
            payloads.append(payload)
        if not digests:
            return
        joined = bytes.fromhex("".join(digest[2:] for digest in digests))
        raw = np.frombuffer(joined, dtype=np.uint8).reshape(len(digests), 35)
        high = _high_bits(raw[:, 3:])
        ids = np.arange(len(self._payloads), len(self._payloads) + len(digests), dtype=np.int64)
        lengths = _SWAP[raw[:, 1]]
        order = np.argsort(lengths, kind="stable")  # stable: insertion order within a code
        sorted_lengths = lengths[order]
        starts = np.flatnonzero(np.r_[True, sorted_lengths[1:] != sorted_lengths[:-1]])
        for start, stop in zip(starts, [*starts[1:], len(order)], strict=True):
            rows = order[start:stop]
            code = int(sorted_lengths[start])
            bucket = self._buckets.get(code)
            if bucket is None:
                bucket = self._buckets[code] = _Bucket()
            bucket.append(ids[rows], raw[rows], high[rows])
        self._payloads.extend(payloads)

    def first_within(self, digest: str, max_distance: int) -> tuple[T, int] | None:
        """The earliest-added record with ``tlsh.diff(digest, record) <= max_distance``, as
        ``(payload, distance)``, or None: the answer of stage 2's linear scan."""
        best_id = len(self._payloads)
        best_distance = 0
        for bucket, query, length_cost in self._candidates(digest, max_distance):
            end = int(np.searchsorted(bucket.ids[: bucket.size], best_id))
            positions, distances = _bucket_matches(
                bucket, query, length_cost, max_distance, end, first=True
            )
            if len(positions):
                best_id = int(bucket.ids[positions[0]])
                best_distance = int(distances[0])
        if best_id == len(self._payloads):
            return None
        return self._payloads[best_id], best_distance

    def within(self, digest: str, max_distance: int) -> list[tuple[T, int]]:
        """Every record with ``tlsh.diff(digest, record) <= max_distance``, as
        ``(payload, distance)`` in insertion order."""
        ids: list[I64] = []
        distances: list[I64] = []
        for bucket, query, length_cost in self._candidates(digest, max_distance):
            positions, found = _bucket_matches(
                bucket, query, length_cost, max_distance, bucket.size, first=False
            )
            ids.append(bucket.ids[positions])
            distances.append(found)
        if not ids:
            return []
        all_ids = np.concatenate(ids)
        all_distances = np.concatenate(distances)
        order = np.argsort(all_ids)
        payloads = self._payloads
        return [
            (payloads[number], distance)
            for number, distance in zip(
                all_ids[order].tolist(), all_distances[order].tolist(), strict=True
            )
        ]

    def _candidates(
        self, digest: str, max_distance: int
    ) -> list[tuple[_Bucket, _Query, int]]:
        """The buckets whose length cost alone is within ``max_distance``, nearest length
        first (where a match is likeliest, so ``first_within`` can cut the rest short)."""
        query = _Query(digest)
        max_distance = operator.index(max_distance)
        found = []
        for d in range(129):
            cost = _length_cost(d)
            if cost > max_distance:
                break
            codes = {(query.length + d) % 256, (query.length - d) % 256}
            for code in sorted(codes):
                bucket = self._buckets.get(code)
                if bucket is not None and bucket.size:
                    found.append((bucket, query, cost))
        return found
