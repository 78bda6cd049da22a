"""The blocked scan over stored vectors finds what an exact scan of the same vectors finds,
whatever the block size."""

from __future__ import annotations

import numpy as np
import pytest

from feedmd.events.scan import blocks_of, scan_blocks
from feedmd.events.vectors import normalise, stack_stored, stored_cosines, to_stored


@pytest.mark.parametrize("rows", [1, 7, 64, 1000])
def test_blocked_scan_equals_the_exact_scan(rows: int) -> None:
    rng = np.random.default_rng(3)
    stored = normalise(rng.normal(size=(300, 384)))
    queries = normalise(stored[[5, 50, 250]] + rng.normal(scale=0.02, size=(3, 384)))
    queries = np.vstack([queries, normalise(rng.normal(size=(1, 384)))])
    ids = [f"item-{i}" for i in range(len(stored))]
    blobs = [to_stored(v) for v in stored]
    found = scan_blocks(queries, blocks_of(ids, blobs, rows), k=2, min_score=0.5)
    exact = stack_stored(blobs) @ queries.T
    for column, hits in enumerate(found[:3]):
        assert hits[0][0] == ids[int(np.argmax(exact[:, column]))]
        assert hits[0][1] == pytest.approx(float(exact[:, column].max()), abs=1e-5)
    assert found[3] == []  # a random vector is near nothing


def test_stored_cosines_are_the_unit_matrix_product() -> None:
    rng = np.random.default_rng(4)
    vectors = normalise(rng.normal(size=(20, 384)))
    blobs = [to_stored(v) for v in vectors]
    assert np.allclose(stored_cosines(blobs, vectors[:3]), stack_stored(blobs) @ vectors[:3].T)
