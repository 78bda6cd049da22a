"""The blocked scan over stored vectors finds what an exact scan of the same vectors finds,
whatever the block size, with exact scores that do not depend on how the window is cut."""

from __future__ import annotations

import numpy as np
import pytest

from feedmd.fingerprints.vector_scan import block_scores, blocks_of, query_codes, scan_blocks
from feedmd.fingerprints.vectors import (
    as_stored,
    normalise,
    split_stored,
    stack_stored,
    stored_cosines,
    to_stored,
)


def _stored(count: int, seed: int) -> tuple[np.ndarray, list[bytes]]:
    rng = np.random.default_rng(seed)
    vectors = normalise(rng.normal(size=(count, 384)))
    return vectors, [to_stored(v) for v in vectors]


@pytest.mark.parametrize("rows", [1, 7, 64, 1000])
def test_blocked_scan_equals_the_exact_scan(rows: int) -> None:
    rng = np.random.default_rng(13)
    stored, blobs = _stored(300, 3)
    queries = normalise(stored[[5, 50, 250]] + rng.normal(scale=0.02, size=(3, 384)))
    queries = as_stored(np.vstack([queries, normalise(rng.normal(size=(1, 384)))]))
    ids = list(range(1000, 1300))
    published = [f"2026-12-01T{n % 24:02d}:00:00Z" for n in range(300)]
    found = scan_blocks(queries, blocks_of(ids, blobs, published, rows), k=2, min_score=0.5)
    exact = stack_stored(blobs) @ queries.T
    for column, hits in enumerate(found[:3]):
        assert hits[0][0] == ids[int(np.argmax(exact[:, column]))]
        assert hits[0][1] == pytest.approx(float(exact[:, column].max()), abs=1e-5)
    assert found[3] == []  # a random vector is near nothing
    # the same scores bit for bit whatever the block size
    again = scan_blocks(queries, blocks_of(ids, blobs, published, 300), k=2, min_score=0.5)
    assert found == again


@pytest.mark.parametrize(("count", "queries_count", "rows"), [(50, 3, 7), (500, 60, 500)])
def test_scores_are_exact_integer_dot_products_of_the_codes(
    count: int, queries_count: int, rows: int
) -> None:
    """Exact whatever the block: small blocks, and blocks cut into stacked slices with a
    remainder (60 queries: slices of 11 rows)."""
    _, blobs = _stored(count, 4)
    queries = as_stored(normalise(np.random.default_rng(5).normal(size=(queries_count, 384))))
    codes, inverses = split_stored(blobs)
    qcodes, qinverses = query_codes(queries)
    # a query in stored form gives back exactly its stored codes
    stored_q, _ = split_stored([to_stored(q) for q in queries])
    assert np.array_equal(qcodes.astype(np.int8), stored_q)
    dots = codes.astype(np.int64) @ qcodes.astype(np.int64).T
    expected = dots * inverses.astype(np.float64)[:, None] * qinverses[None, :]
    blocks = list(blocks_of(list(range(count)), blobs, ["t"] * count, rows))
    got = np.concatenate([block_scores(b, qcodes, qinverses) for b in blocks])
    assert np.array_equal(got, expected)
    assert np.allclose(got, stack_stored(blobs) @ queries.T, atol=1e-6)


def test_equal_scores_keep_the_earlier_publication_then_the_smaller_id() -> None:
    _, blobs = _stored(1, 6)
    query = as_stored(stack_stored(blobs))
    ids = [9, 3, 7, 5]
    published = ["2026-12-01T02:00:00Z", "2026-12-01T03:00:00Z", "2026-12-01T01:00:00Z"]
    published.append("2026-12-01T01:00:00Z")
    for rows in (1, 2, 4):
        found = scan_blocks(query, blocks_of(ids, blobs * 4, published, rows), 3, 0.9)
        assert [item for item, _ in found[0]] == [5, 7, 9]


def test_limits_bound_each_query_by_publication_time_and_id() -> None:
    _, blobs = _stored(1, 7)
    query = as_stored(stack_stored(blobs))
    ids, published = [1, 2, 3], ["2026-12-01T01:00:00Z"] * 2 + ["2026-12-01T02:00:00Z"]
    low, high = ("2026-12-01T01:00:00Z", 2), ("2026-12-01T02:00:00Z", 3)
    found = scan_blocks(query, blocks_of(ids, blobs * 3, published), 8, 0.9, [(low, high)])
    assert [item for item, _ in found[0]] == [2]  # 1 below the low key, 3 at the high one


def test_stored_cosines_are_the_unit_matrix_product() -> None:
    vectors, blobs = _stored(20, 4)
    assert np.allclose(stored_cosines(blobs, vectors[:3]), stack_stored(blobs) @ vectors[:3].T)
