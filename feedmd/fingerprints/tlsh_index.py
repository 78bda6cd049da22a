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
candidate filter:

1. **Length buckets.** Records are kept in buckets by length code. A query only visits
   buckets whose length cost alone is within the threshold: at 40, ``|dL| <= 3`` (about
   23% of a window of 1-20 KB articles).
2. **Differing-codes bound.** Every code that differs costs at least 1, so ``length cost +
   number of differing codes`` is a lower bound. Each bucket keeps its bodies as bit planes
   (the codes' high bits and low bits, four uint64 rows), so the count is two XORs, an OR
   and a popcount per 64 codes, vectorised. Unrelated English texts differ in 65-95 of the
   128 codes; at 40 about 2 records in a million survive (benchmarks/stage2.py: median 1.5
   survivors of 232k visited records per query).
   (Counting only the high bits, 35-55 for unrelated texts, let 40% through.)
3. **Exact distance** of the survivors: the header terms plus the body cost from the same
   planes (``_body_costs``). Equal to ``tlsh.diff`` by construction and by test
   (tests/fingerprints/test_tlsh_index.py, which also checks ``tlsh_distance``, an independent
   byte-table implementation).

Within a bucket records are in insertion order, so the first survivor within the threshold
is the bucket's earliest; ``first_within`` takes the earliest over the buckets and, once it
has one, only scans the part of the other buckets added before it. Measured at 1M digests
(2 cores): ~0.5 ms per query against ~240 ms for the ``tlsh.diff`` loop (benchmarks/stage2.py).
Memory: 42 bytes of arrays per digest, plus the payloads; digests are not kept as strings.

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
# Records decoded, or scored within a bucket, per numpy pass: bounds the temporaries.
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

    Exists as a readable reference of the arithmetic the index relies on, tested against
    py-tlsh; it is about 12x slower than ``tlsh.diff`` (13 us a pair), so callers comparing
    one pair should keep using that.
    """
    x, y = decode_digest(a), decode_digest(b)
    distance = _length_cost(_ring(_swap(x[1]), _swap(y[1]), 256))
    distance += _Q_COST_FLAT[x[2] << 8 | y[2]]
    distance += x[0] != y[0]
    table = _BODY_COST_FLAT
    distance += sum(table[p << 8 | q] for p, q in zip(x[3:], y[3:], strict=True))
    return distance


def _planes(bodies: U8) -> U64:
    """For ``(n, 32)`` body bytes, the 128 codes as bit planes, ``(4, n)`` uint64: rows hold
    the high bits of codes 0-63, their low bits, the high bits of codes 64-127, their low
    bits. Row-major planes keep every vectorised pass contiguous (a ``(n, 4)`` layout
    measured 20x slower for the bound at 230k records)."""
    bits = np.unpackbits(bodies, axis=1)  # MSB first: high, low, high, low, ...
    high, low = bits[:, 0::2], bits[:, 1::2]
    planes = np.concatenate([high[:, :64], low[:, :64], high[:, 64:], low[:, 64:]], axis=1)
    return np.ascontiguousarray(np.packbits(planes, axis=1)).view(np.uint64).T


def _differing_codes(planes: U64, query: U64) -> npt.NDArray[np.uint8]:
    """How many of the 128 codes differ between each column of ``planes`` and ``query``:
    a lower bound of the body cost (every differing code costs at least 1)."""
    count: npt.NDArray[np.uint8] = np.bitwise_count((planes[0] ^ query[0]) | (planes[1] ^ query[1]))
    count += np.bitwise_count((planes[2] ^ query[2]) | (planes[3] ^ query[3]))
    return count


def _body_costs(planes: U64, query: U64) -> npt.NDArray[np.int64]:
    """The exact body cost of each column of ``planes`` (``(4, k)``) against ``query``.

    With ``h``/``l`` the XOR of the high/low planes, a code pair costs: 1 when the codes
    differ at all (``h | l``); 1 more when only the high bits differ (differences of 2);
    5 more when both differ and one code is 3 (a difference of 3: codes 0 and 3).
    """
    costs = np.zeros(planes.shape[1], dtype=np.int64)
    for row in (0, 2):
        high = planes[row] ^ query[row]
        low = planes[row + 1] ^ query[row + 1]
        threes = (planes[row] & planes[row + 1]) | (query[row] & query[row + 1])
        costs += np.bitwise_count(high | low)
        costs += np.bitwise_count(high & ~low)
        costs += 5 * np.bitwise_count(high & low & threes).astype(np.int64)
    return costs


class _Bucket:
    """The records of one length code, in insertion order, in growable numpy arrays."""

    __slots__ = ("checksum", "ids", "planes", "qbyte", "size")

    def __init__(self, capacity: int = 16) -> None:
        self.size = 0
        self.ids: I64 = np.empty(capacity, dtype=np.int64)
        self.planes: U64 = np.empty((4, capacity), dtype=np.uint64)
        self.checksum: U8 = np.empty(capacity, dtype=np.uint8)
        self.qbyte: U8 = np.empty(capacity, dtype=np.uint8)

    def append(self, ids: I64, raw: U8, planes: U64) -> None:
        """Append records: ``raw`` their ``(n, 35)`` decoded bytes, ``planes`` their bodies
        (``(4, n)``, see ``_planes``)."""
        end = self.size + len(ids)
        if end > len(self.ids):
            self._grow(max(end, 2 * len(self.ids)))
        start, self.size = self.size, end
        self.ids[start:end] = ids
        self.planes[:, start:end] = planes
        self.checksum[start:end] = raw[:, 0]
        self.qbyte[start:end] = raw[:, 2]

    def _grow(self, capacity: int) -> None:
        for name in ("ids", "checksum", "qbyte"):
            old = getattr(self, name)
            new = np.empty(capacity, dtype=old.dtype)
            new[: self.size] = old[: self.size]
            setattr(self, name, new)
        planes = np.empty((4, capacity), dtype=np.uint64)
        planes[:, : self.size] = self.planes[:, : self.size]
        self.planes = planes


class _Query:
    """A decoded query digest and its lookup rows, computed once per query."""

    __slots__ = ("checksum", "length", "planes", "q_costs")

    def __init__(self, digest: str) -> None:
        raw = np.frombuffer(decode_digest(digest), dtype=np.uint8)
        self.checksum = raw[0]
        self.length = int(_SWAP[raw[1]])
        self.q_costs: U8 = _Q_COST[raw[2]]  # cost against every possible Q byte
        self.planes: U64 = _planes(raw[3:].reshape(1, _BODY_BYTES))[:, 0].copy()


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
        if budget < 128:  # some records differ in more codes than the budget
            bound = _differing_codes(bucket.planes[:, start:stop], query.planes)
            positions = np.flatnonzero(bound <= budget) + start
        else:
            positions = np.arange(start, stop)
        if not len(positions):
            continue
        distances = _body_costs(bucket.planes[:, positions], query.planes)
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

    ``max_distance`` must be an int (``Settings.tlsh_max_distance``); a negative one matches
    nothing, as in the loop. Digests must be ``T1`` digests (``decode_digest``).
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
        """``add`` every ``(digest, payload)`` in order, decoded by numpy in chunks (loading
        1M digests takes ~1.5 s this way, against ~16 s one ``add`` at a time). Every digest is
        checked before any is added."""
        digests: list[str] = []
        payloads: list[T] = []
        for digest, payload in records:
            decode_digest(digest)
            digests.append(digest)
            payloads.append(payload)
        for start in range(0, len(digests), _CHUNK):
            self._append(digests[start : start + _CHUNK], payloads[start : start + _CHUNK])

    def extend_raw(self, raw: bytes, payloads: list[T]) -> None:
        """``extend`` with digests already decoded (``decode_digest``) and joined: 35 bytes
        each, in the order of ``payloads`` (the store keeps them so)."""
        if len(raw) != 35 * len(payloads):
            raise ValueError(f"{len(raw)} bytes do not hold {len(payloads)} TLSH digests")
        for start in range(0, len(payloads), _CHUNK):
            stop = min(start + _CHUNK, len(payloads))
            self._append_raw(raw[35 * start : 35 * stop], payloads[start:stop])

    def _append(self, digests: list[str], payloads: list[T]) -> None:
        """Decode checked digests in one numpy pass and file them in their buckets."""
        self._append_raw(bytes.fromhex("".join(digest[2:] for digest in digests)), payloads)

    def _append_raw(self, joined: bytes, payloads: list[T]) -> None:
        # a copy: the arrays filed below must never view a buffer their caller may free
        raw = np.frombuffer(joined, dtype=np.uint8).reshape(len(payloads), 35).copy()
        planes = _planes(raw[:, 3:])
        ids = np.arange(len(self._payloads), len(self._payloads) + len(payloads), dtype=np.int64)
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
            bucket.append(ids[rows], raw[rows], planes[:, rows])
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

    def _candidates(self, digest: str, max_distance: int) -> list[tuple[_Bucket, _Query, int]]:
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
