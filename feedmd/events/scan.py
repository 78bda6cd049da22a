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
Measured by ``python benchmarks/run.py events`` (docs/events.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from feedmd.events.vectors import INT8_MAX, split_stored

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


def block_scores(block: StoredBlock, codes: np.ndarray, inverses: np.ndarray) -> np.ndarray:
    """Cosines of the block's vectors (rows) with the queries (columns) of ``query_codes``,
    float64, exact as the module docstring says."""
    count, width = len(block), len(codes)
    dots = np.empty((count, width), dtype=np.float32)
    stored = block.codes.astype(np.float32)
    rows = max(1, SINGLE_THREAD_PRODUCT // max(1, width * codes.shape[1]))
    whole = count // rows * rows
    if whole:  # one stacked product: numpy loops over the slices in C
        np.matmul(
            stored[:whole].reshape(-1, rows, stored.shape[1]),
            codes.T,
            out=dots[:whole].reshape(-1, rows, width),
        )
    if whole < count:
        np.matmul(stored[whole:], codes.T, out=dots[whole:])
    return dots * block.inverses.astype(np.float64)[:, None] * inverses[None, :]


Limit = tuple[tuple[str, int], tuple[str, int]]


def _visible(block: StoredBlock, limit: Limit) -> np.ndarray:
    """Rows whose (publication time, item id) is ``>= low`` and ``< high``."""
    (low, low_id), (high, high_id) = limit
    low_b, high_b = low.encode("ascii"), high.encode("ascii")
    published, ids = block.published, block.item_ids
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
    best: list[list[tuple[float, bytes, int]]] = [[] for _ in range(len(codes))]
    for block in blocks:
        if not len(block):
            continue
        scores = block_scores(block, codes, inverses)
        if limits is not None:
            for column, limit in enumerate(limits):
                scores[~_visible(block, limit), column] = -np.inf
        rows, columns = np.nonzero(scores >= min_score)
        for row, column in zip(rows.tolist(), columns.tolist(), strict=True):
            hit = (
                float(scores[row, column]),
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
