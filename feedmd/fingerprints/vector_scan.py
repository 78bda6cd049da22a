"""A blocked exact scan: the nearest stored vectors to a run's new vectors, one block of the
window at a time.

The store keeps each item's vector as ``to_stored`` bytes (int8 codes and a float32 inverse
length) and hands the window as ``StoredBlock`` columns: packs of many vectors read as one
blob each, and the newest rows (``feedmd/store/event_packs.py``). Each block is multiplied
by all the run's query vectors at once, and only the best ``k`` per query above
``min_score`` are kept, so memory is one block whatever the window's size.

**Exact and order-free.** A cosine is the integer dot product of the two vectors' int8
codes (computed in float32, where every partial sum is an integer below 2**24, so the
result is exact whatever order BLAS adds in) times both inverse lengths, in float64. A
pair therefore gets the same score bit for bit whichever block, pack or row path holds
the stored vector, and ties are broken by (publication time, item id), the order the
window was read in before packs: decisions do not depend on how the window is cut.

**Only candidate rows get float64 scores.** A float32 test on each stored row's best
query (``candidate_rows``) drops the rows that cannot reach ``min_score``, with a slack
above its rounding error; the rows left are scored exactly as above, so the hits are
the same bits as scoring every pair (``tests/fingerprints/test_vector_scan_exact.py``). Measured by
``python benchmarks/run.py events`` (docs/events.md "Cost").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from feedmd.fingerprints.vectors import INT8_MAX, split_stored

# Rows of the row path decoded at once (a block of stored bytes from the database).
BLOCK_ROWS = 16_384

# The largest matrix product OpenBLAS runs on one thread (rows x queries x dimensions:
# 65,536 x its GEMM_MULTITHREAD_THRESHOLD of 4). Each block is multiplied in slices of
# rows below it: on the shared 2-core machine a threaded product waits for a second core
# that other processes hold, and single-threaded small products are also the fastest
# when it is free. Measured (100k vectors x 20 queries, load average 7): slices of 32
# rows 74-82 ms; of 1,024 rows 390-2,400 ms threaded (150-250 ms with one BLAS thread).
# The slices go to numpy as one stacked product (its C loop calls BLAS per slice): 1.07 ms
# per 4,096 vectors against 2.07 ms for a Python loop over the same slices (load 4.5).
SINGLE_THREAD_PRODUCT = 65_536 * 4


@dataclass(frozen=True)
class StoredBlock:
    """Stored vectors as columns: item ids (int64), publication times (fixed-width ASCII
    bytes, compared as the database compares the text), int8 codes (rows x dimensions)
    and float32 inverse lengths."""

    item_ids: np.ndarray
    published: np.ndarray
    codes: np.ndarray
    inverses: np.ndarray

    def __len__(self) -> int:
        return len(self.item_ids)

    def select(self, mask: np.ndarray) -> StoredBlock:
        """The rows where ``mask`` is true."""
        if bool(mask.all()):
            return self
        return StoredBlock(
            self.item_ids[mask], self.published[mask], self.codes[mask], self.inverses[mask]
        )


def block_of(ids: Sequence[int], blobs: Sequence[bytes], published: Sequence[str]) -> StoredBlock:
    """Rows of (item id, stored bytes, publication time) as one ``StoredBlock``."""
    codes, inverses = split_stored(list(blobs))
    return StoredBlock(
        np.asarray(ids, dtype=np.int64),
        np.array([p.encode("ascii") for p in published], dtype=bytes),
        codes,
        inverses,
    )


def query_codes(queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Query vectors in their stored form, as float32 integer codes (rows) and float64
    inverse lengths. A vector already in stored form (``as_stored``) gets back exactly its
    stored codes: the largest value of each row is code 127."""
    matrix = np.atleast_2d(np.asarray(queries, dtype=np.float32))
    peak = np.max(np.abs(matrix), axis=1, keepdims=True).astype(np.float64)
    peak[peak == 0] = 1.0
    codes = np.clip(np.rint(matrix * (INT8_MAX / peak)), -INT8_MAX, INT8_MAX)
    lengths = np.sqrt(np.sum(codes * codes, axis=1))
    lengths[lengths == 0] = np.inf
    return codes.astype(np.float32), 1.0 / lengths


# Stored rows converted from int8 to float32 at once, into one buffer reused for the whole
# scan (rounded down to whole slices of ``SINGLE_THREAD_PRODUCT``). Converting a whole pack
# at once writes a 6 MB temporary per 4,096 vectors that falls out of the cache before the
# products read it back; 256 rows (384 KB) stay in it. Measured per pack of 4,096 vectors
# x 20 queries (load 2-3, means of 300): the whole pack converted, then multiplied,
# 1.3 ms; 256 rows at a time 0.85 ms; 128, 512 or 1,024 rows at a time 1.6-2.0 ms
# against 1.6-1.8 ms for 256 at load 3.
CHUNK_ROWS = 256


class _Products:
    """Integer dot products of stored int8 codes with a run's query codes, in float32
    (exact, module docstring), a chunk of rows at a time through one reused float32
    buffer, each chunk as one stacked product of single-threaded slices.

    The products come out as (slices, queries, rows of a slice): queries by rows, the
    layout in which the best query of each row is an elementwise maximum over contiguous
    rows (per pack of 4,096 x 20: 0.12 ms against 0.26 ms for rows by queries, and the
    products 0.96 ms against 1.19 ms; load 2.8)."""

    def __init__(self, codes: np.ndarray) -> None:
        self.codes = np.ascontiguousarray(codes, dtype=np.float32)
        self.width, dimensions = self.codes.shape
        self.rows = max(1, SINGLE_THREAD_PRODUCT // max(1, self.width * dimensions))
        self.chunk = max(1, CHUNK_ROWS // self.rows) * self.rows
        self.buffer = np.empty((self.chunk, dimensions), dtype=np.float32)

    def dots(self, stored: np.ndarray) -> np.ndarray:
        """float32 integer dot products of ``stored`` (int8 codes, rows) with the queries,
        as (slices, queries, rows of a slice); the last slice is padded with zero rows."""
        count, rows = len(stored), self.rows
        slices = -(-count // rows)
        out = np.empty((slices, self.width, rows), dtype=np.float32)
        for start in range(0, count, self.chunk):
            part = stored[start : start + self.chunk]
            size = len(part)
            padded = -(-size // rows) * rows
            buffer = self.buffer[:padded]
            np.copyto(buffer[:size], part, casting="unsafe")  # int8 -> float32 is exact
            buffer[size:] = 0
            first = start // rows
            np.matmul(
                self.codes,
                buffer.reshape(-1, rows, buffer.shape[1]).transpose(0, 2, 1),
                out=out[first : first + padded // rows],
            )
        return out

    def take(self, dots: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The products of the stored rows ``rows`` (indices) as (rows, queries)."""
        return dots[rows // self.rows, :, rows % self.rows]

    def best(self, dots: np.ndarray, count: int, scale: np.ndarray) -> np.ndarray:
        """Each of the ``count`` stored rows' largest product times ``scale`` (one float32
        per query), as float32."""
        return (dots * scale[None, :, None]).max(axis=1).ravel()[:count]


def _scores(dots: np.ndarray, stored_inverses: np.ndarray, inverses: np.ndarray) -> np.ndarray:
    """Cosines from integer dot products (rows, queries): times the stored inverse lengths,
    then the queries', in float64 (one order for every path, so a pair scores the same bit
    for bit)."""
    return dots * stored_inverses.astype(np.float64)[:, None] * inverses[None, :]


def block_scores(block: StoredBlock, codes: np.ndarray, inverses: np.ndarray) -> np.ndarray:
    """Cosines of the block's vectors (rows) with the queries (columns) of ``query_codes``,
    float64, exact as the module docstring says."""
    products = _Products(codes)
    dots = products.take(products.dots(block.codes), np.arange(len(block)))
    return _scores(dots, block.inverses, inverses)


# Relative slack of the candidate test (``candidate_rows``): its float32 products carry at
# most three roundings (~1.3e-7 relative) against the exact float64 score's two; 1e-6
# leaves room and admits no measurable extra rows (a cosine within 1e-6 of the threshold).
CANDIDATE_SLACK = 1e-6


def candidate_rows(best: np.ndarray, stored_inverses: np.ndarray, min_score: float) -> np.ndarray:
    """Indices of the stored rows that may score ``>= min_score`` against some query: a
    superset of them, found without the float64 product of every pair.

    ``best`` is each row's largest ``dot x query inverse`` in float32 (``_Products.best``);
    times the row's stored inverse length it is within ~1.3e-7 (relative) of the row's best
    exact score, so a row below ``min_score x (1 - CANDIDATE_SLACK)`` has no score
    ``>= min_score`` (for ``min_score`` > 0 and query inverses finite and >= 0:
    ``scan_blocks`` checks). Rows with a negative or non-finite stored inverse are always
    candidates (the bound assumes >= 0)."""
    bound = best.astype(np.float64) * stored_inverses.astype(np.float64)
    sane = (stored_inverses >= 0) & (stored_inverses < np.inf)
    return np.flatnonzero((bound >= min_score * (1 - CANDIDATE_SLACK)) | ~sane)


Limit = tuple[tuple[str, int], tuple[str, int]]


def _visible(block: StoredBlock, rows: np.ndarray, limit: Limit) -> np.ndarray:
    """Of the block's ``rows``, those whose (publication time, item id) is ``>= low`` and
    ``< high``."""
    (low, low_id), (high, high_id) = limit
    low_b, high_b = low.encode("ascii"), high.encode("ascii")
    published, ids = block.published[rows], block.item_ids[rows]
    above = (published > low_b) | ((published == low_b) & (ids >= low_id))
    below = (published < high_b) | ((published == high_b) & (ids < high_id))
    return above & below


def scan_blocks(
    queries: np.ndarray,
    blocks: Iterable[StoredBlock],
    k: int,
    min_score: float,
    limits: Sequence[Limit] | None = None,
) -> list[list[tuple[int, float]]]:
    """For each query row, up to ``k`` (item id, cosine) with cosine >= ``min_score``, best
    first (ties: the earlier (publication time, item id) first), over every block.

    With ``limits`` (one ``((low time, low id), (high time, high id))`` per query), a query
    only sees the rows whose (publication time, item id) is ``>= low`` and ``< high`` (an
    item caught up later sees the window as of its own publication time,
    ``feedmd/events/catchup.py``)."""
    codes, inverses = query_codes(queries)
    products = _Products(codes)
    scale = inverses.astype(np.float32)
    prune = bool(min_score > 0) and bool(np.all((inverses >= 0) & (inverses < np.inf)))
    best: list[list[tuple[float, bytes, int]]] = [[] for _ in range(len(codes))]
    for block in blocks:
        if not len(block):
            continue
        dots = products.dots(block.codes)
        if prune:
            best_dots = products.best(dots, len(block), scale)
            rows = candidate_rows(best_dots, block.inverses, min_score)
            if not len(rows):
                continue
        else:
            rows = np.arange(len(block))
        scores = _scores(products.take(dots, rows), block.inverses[rows], inverses)
        if limits is not None:
            for column, limit in enumerate(limits):
                scores[~_visible(block, rows, limit), column] = -np.inf
        found, columns = np.nonzero(scores >= min_score)
        for place, column in zip(found.tolist(), columns.tolist(), strict=True):
            row = int(rows[place])
            hit = (
                float(scores[place, column]),
                bytes(block.published[row]),
                int(block.item_ids[row]),
            )
            best[column].append(hit)
        for column in set(columns.tolist()):
            best[column] = sorted(best[column], key=lambda h: (-h[0], h[1], h[2]))[:k]
    return [[(item_id, score) for score, _, item_id in hits] for hits in best]


def blocks_of(
    ids: Sequence[int], blobs: Sequence[bytes], published: Sequence[str], rows: int = BLOCK_ROWS
) -> Iterable[StoredBlock]:
    """Cut parallel lists of ids, stored vectors and publication times into blocks."""
    for start in range(0, len(ids), rows):
        end = start + rows
        yield block_of(ids[start:end], blobs[start:end], published[start:end])
