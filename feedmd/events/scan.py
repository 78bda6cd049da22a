"""A blocked exact scan: the nearest stored vectors to a run's new vectors, one block of the
window at a time.

The store keeps each item's vector as ``to_stored`` bytes. A run's new items are compared
with the window in one pass: the store hands blocks of (item ids, stored bytes) in any order,
each block is decoded to float32 and multiplied by all the run's query vectors at once, and
only the best ``k`` per query above ``min_score`` are kept, so memory is one block whatever
the window's size. Measured by ``python benchmarks/run.py events`` (docs/events.md).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from feedmd.events.vectors import stored_cosines

# Rows decoded at once: 16,384 x 384 float32 is 25 MB, large enough that the matrix
# product dominates the Python overhead (see the benchmark's lookup figures).
BLOCK_ROWS = 16_384


def scan_blocks(
    queries: np.ndarray,
    blocks: Iterable[tuple[Sequence[Any], Sequence[bytes]] | tuple[Any, ...]],
    k: int,
    min_score: float,
    limits: Sequence[tuple[Any, Any]] | None = None,
) -> list[list[tuple[Any, float]]]:
    """For each query row, up to ``k`` (item id, cosine) with cosine >= ``min_score``, best
    first, over every block of stored vectors (ids, stored bytes).

    With ``limits`` (one ``(low, high)`` per query), each block also carries its rows'
    sort keys, ascending across blocks, and a query only sees the rows whose key is
    ``>= low`` and ``< high`` (an item caught up later sees the window as of its own
    publication time, ``feedmd/events/catchup.py``)."""
    queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
    best: list[list[tuple[float, Any]]] = [[] for _ in range(len(queries))]
    for block in blocks:
        ids, blobs = block[0], block[1]
        if not len(ids):
            continue
        scores = stored_cosines(blobs, queries)  # rows: stored, columns: queries
        if limits is not None:
            keys = block[2]
            for column, (low, high) in enumerate(limits):
                scores[: bisect_left(keys, low), column] = -np.inf
                scores[bisect_left(keys, high) :, column] = -np.inf
        rows, columns = np.nonzero(scores >= min_score)
        for row, column in zip(rows.tolist(), columns.tolist(), strict=True):
            best[column].append((float(scores[row, column]), ids[row]))
        for column in set(columns.tolist()):
            best[column] = sorted(best[column], key=lambda hit: -hit[0])[:k]
    return [[(item_id, score) for score, item_id in hits] for hits in best]


def blocks_of(
    ids: Sequence[str], blobs: Sequence[bytes], rows: int = BLOCK_ROWS
) -> Iterable[tuple[Sequence[str], Sequence[bytes]]]:
    """Cut parallel lists of ids and stored vectors into blocks of ``rows``."""
    for start in range(0, len(ids), rows):
        yield ids[start : start + rows], blobs[start : start + rows]
