"""A blocked exact scan: the nearest stored vectors to a run's new vectors, one block of the
window at a time.

The store keeps each item's vector as ``to_stored`` bytes. A run's new items are compared
with the window in one pass: the store hands blocks of (item ids, stored bytes) in any order,
each block is decoded to float32 and multiplied by all the run's query vectors at once, and
only the best ``k`` per query above ``min_score`` are kept, so memory is one block whatever
the window's size. Measured by ``python benchmarks/run.py events`` (docs/events.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from feedmd.events.vectors import stored_cosines

# Rows decoded at once: 16,384 x 384 float32 is 25 MB, large enough that the matrix
# product dominates the Python overhead (see the benchmark's lookup figures).
BLOCK_ROWS = 16_384


def scan_blocks(
    queries: np.ndarray,
    blocks: Iterable[tuple[Sequence[str], Sequence[bytes]]],
    k: int,
    min_score: float,
) -> list[list[tuple[str, float]]]:
    """For each query row, up to ``k`` (item id, cosine) with cosine >= ``min_score``, best
    first, over every block of stored vectors."""
    queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
    best: list[list[tuple[float, str]]] = [[] for _ in range(len(queries))]
    for ids, blobs in blocks:
        if not len(ids):
            continue
        scores = stored_cosines(list(blobs), queries)  # rows: stored, columns: queries
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
