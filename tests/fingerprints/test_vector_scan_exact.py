"""The scan's shortcuts (chunked float32 products, the candidate test before the float64
scores) give exactly what the plain float64 computation gives: the same items, the same
scores bit for bit, the same order, at and around the threshold, on ties, on empty and
ragged blocks and under time limits."""

from __future__ import annotations

import numpy as np
import pytest

from feedmd.fingerprints.vector_scan import (
    CHUNK_ROWS,
    SINGLE_THREAD_PRODUCT,
    StoredBlock,
    _Products,
    blocks_of,
    candidate_rows,
    query_codes,
    scan_blocks,
)
from feedmd.fingerprints.vectors import as_stored, normalise, split_stored, to_stored

Hits = list[list[tuple[int, float]]]


def _window(count: int, queries: np.ndarray, seed: int) -> tuple[list[int], list[str], list[bytes]]:
    """Random stored vectors with noisy copies of the queries at several distances, and
    repeated publication times (ties on time broken by id)."""
    rng = np.random.default_rng(seed)
    vectors = normalise(rng.normal(size=(count, 384)))
    for n, query in enumerate(queries):
        for copy, noise in enumerate((0.0, 0.01, 0.02, 0.03, 0.05)):
            place = (n * 7 + copy * 13) % count
            vectors[place] = normalise(query + rng.normal(scale=noise, size=384))[0]
    ids = list(rng.permutation(np.arange(10, 10 + count)).tolist())
    published = [f"2026-12-01T{(n * 5) % 24:02d}:00:00Z" for n in range(count)]
    return ids, published, [to_stored(v) for v in vectors]


def _plain(
    queries: np.ndarray,
    ids: list[int],
    published: list[str],
    blobs: list[bytes],
    k: int,
    min_score: float,
    limits: list[tuple[tuple[str, int], tuple[str, int]]] | None = None,
) -> Hits:
    """Every pair in float64 from int64 dot products, sorted by (-score, time, id)."""
    codes, inverses = split_stored(blobs)
    return _plain_codes(queries, ids, published, codes, inverses, k, min_score, limits)


def _plain_codes(
    queries: np.ndarray,
    ids: list[int],
    published: list[str],
    codes: np.ndarray,
    inverses: np.ndarray,
    k: int,
    min_score: float,
    limits: list[tuple[tuple[str, int], tuple[str, int]]] | None = None,
) -> Hits:
    """``_plain`` on int8 codes and inverse lengths."""
    qcodes, qinverses = query_codes(queries)
    dots = (codes.astype(np.int64) @ qcodes.astype(np.int64).T).astype(np.float64)
    scores = dots * inverses.astype(np.float64)[:, None] * qinverses[None, :]
    out: Hits = []
    for column in range(len(qcodes)):
        hits = []
        for row in range(len(ids)):
            if limits is not None:
                (low, low_id), (high, high_id) = limits[column]
                key = (published[row], ids[row])
                if not (low, low_id) <= key < (high, high_id):
                    continue
            if scores[row, column] >= min_score:
                hits.append((-float(scores[row, column]), published[row], ids[row]))
        out.append([(item, -score) for score, _, item in sorted(hits)[:k]])
    return out


def _queries(seed: int, count: int = 4) -> np.ndarray:
    return as_stored(normalise(np.random.default_rng(seed).normal(size=(count, 384))))


@pytest.mark.parametrize(
    "rows", [1, 33, 34, 35, CHUNK_ROWS - 1, CHUNK_ROWS, CHUNK_ROWS + 1, 700, 5000]
)
def test_ragged_blocks_give_the_plain_float64_result(rows: int) -> None:
    queries = _queries(1)
    ids, published, blobs = _window(700, queries, 2)
    found = scan_blocks(queries, blocks_of(ids, blobs, published, rows), 3, 0.9)
    assert found == _plain(queries, ids, published, blobs, 3, 0.9)
    assert all(len(hits) == 3 for hits in found)  # the copies at noise 0-0.02 are found


def test_at_and_around_the_threshold() -> None:
    """A pair scoring exactly ``min_score`` is found; one float above it, it is not; one
    below, it still is (the candidate test's slack never drops it)."""
    queries = _queries(3)
    ids, published, blobs = _window(300, queries, 4)
    plain = _plain(queries, ids, published, blobs, 8, 0.5)
    for column, hits in enumerate(plain):
        for _, score in hits:
            for threshold in (score, np.nextafter(score, 2.0), np.nextafter(score, 0.0)):
                found = scan_blocks(queries, blocks_of(ids, blobs, published, 64), 8, threshold)
                assert found == _plain(queries, ids, published, blobs, 8, threshold)
                assert (ids[0], 0.0) not in found[column]
                at = [s for _, s in found[column] if s == score]
                assert bool(at) == (threshold <= score)


def test_low_and_negative_thresholds_skip_the_candidate_test() -> None:
    queries = _queries(5, 2)
    ids, published, blobs = _window(120, queries, 6)
    for min_score in (0.0, -0.05, -1.0):
        found = scan_blocks(queries, blocks_of(ids, blobs, published, 50), 5, min_score)
        assert found == _plain(queries, ids, published, blobs, 5, min_score)


def test_ties_keep_the_earlier_time_then_the_smaller_id_across_blocks() -> None:
    queries = _queries(7, 1)
    blob = to_stored(queries[0])
    ids = [40, 12, 33, 5, 21, 8]
    published = ["2026-12-01T03:00:00Z", "2026-12-01T02:00:00Z", "2026-12-01T02:00:00Z"] * 2
    for rows in (1, 2, 5, 6):
        found = scan_blocks(queries, blocks_of(ids, [blob] * 6, published, rows), 4, 0.99)
        assert found == _plain(queries, ids, published, [blob] * 6, 4, 0.99)
        assert [item for item, _ in found[0]] == [8, 12, 21, 33]  # the 02:00 ones by id


def test_empty_blocks_and_no_candidates() -> None:
    queries = _queries(8, 2)
    ids, published, blobs = _window(100, queries, 9)
    empty = StoredBlock(
        np.zeros(0, dtype=np.int64),
        np.zeros(0, dtype="S20"),
        np.zeros((0, 384), dtype=np.int8),
        np.zeros(0, dtype=np.float32),
    )
    blocks = [empty, *blocks_of(ids, blobs, published, 40), empty]
    assert scan_blocks(queries, blocks, 3, 0.9) == _plain(queries, ids, published, blobs, 3, 0.9)
    far = as_stored(normalise(-queries))  # opposite of every planted copy
    assert scan_blocks(far, blocks_of(ids, blobs, published, 40), 3, 0.9) == [[], []]
    assert scan_blocks(queries, [empty], 3, 0.9) == [[], []]


def test_time_limits_per_query() -> None:
    queries = _queries(10, 3)
    ids, published, blobs = _window(400, queries, 11)
    order = sorted(zip(published, ids, strict=True))
    limits = [
        (order[0], order[-1]),  # all but the last key
        (order[100], order[300]),
        (order[399], ("2026-12-02T00:00:00Z", 0)),  # only the last key
    ]
    for rows in (7, 400):
        found = scan_blocks(queries, blocks_of(ids, blobs, published, rows), 8, 0.5, limits)
        assert found == _plain(queries, ids, published, blobs, 8, 0.5, limits)


def test_a_row_with_a_negative_or_infinite_inverse_is_still_scored_plainly() -> None:
    """The candidate test's bound assumes inverse lengths >= 0: rows holding anything else
    are always scored in full, whatever the stored bytes hold."""
    queries = _queries(12, 2)
    ids, published, blobs = _window(60, queries, 13)
    codes, inverses = split_stored(blobs)
    odd = inverses.copy()
    odd[[0, 7]] = -odd[[0, 7]]  # the exact copies of query 0 and query 1
    odd[3] = np.inf
    block = StoredBlock(
        np.asarray(ids, dtype=np.int64), np.array([p.encode() for p in published]), codes, odd
    )
    assert candidate_rows(np.ones(60, np.float32), odd, 2.0).tolist() == [0, 3, 7]
    found = scan_blocks(-queries, [block], 3, 0.5)
    assert found == _plain_codes(-queries, ids, published, codes, odd, 3, 0.5)
    # the copies are found through their negative inverse; row 3 scores inf or nothing
    assert [ids[0], ids[7]] == [hits[1][0] for hits in found]
    assert [hits[0] for hits in found] == [(ids[3], np.inf)] * 2


def test_candidate_rows_are_a_superset_of_the_rows_at_their_own_best_score() -> None:
    queries = _queries(14, 20)
    _, _, blobs = _window(2000, queries, 15)
    codes, inverses = split_stored(blobs)
    qcodes, qinverses = query_codes(queries)
    products = _Products(qcodes)
    dots = products.dots(codes)
    exact = products.take(dots, np.arange(2000)) * inverses.astype(np.float64)[:, None]
    exact = exact * qinverses[None, :]
    best = products.best(dots, 2000, qinverses.astype(np.float32))
    for row in np.argsort(-exact.max(axis=1))[:50]:
        threshold = float(exact[row].max())  # this row exactly at the threshold
        assert row in candidate_rows(best, inverses, threshold)
        assert set(np.flatnonzero(exact.max(axis=1) >= threshold)) <= set(
            candidate_rows(best, inverses, threshold).tolist()
        )


@pytest.mark.parametrize("width", [1, 20, 50, 700])
def test_each_product_stays_under_the_single_thread_size(width: int) -> None:
    """OpenBLAS multiplies a product of at most SINGLE_THREAD_PRODUCT on one thread; the
    scan's slices stay under it for any number of queries, and a chunk is whole slices."""
    products = _Products(np.zeros((width, 384), dtype=np.float32))
    assert products.rows * width * 384 <= SINGLE_THREAD_PRODUCT or products.rows == 1
    assert products.chunk % products.rows == 0 and products.chunk <= max(CHUNK_ROWS, products.rows)
    assert products.buffer.shape == (products.chunk, 384)
