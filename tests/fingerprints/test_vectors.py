"""The stored form of a vector (int8 codes and a scale) gives the decisions of the float32
form it came from."""

from __future__ import annotations

import numpy as np
import pytest

from feedmd.events.grouper import EventItem, MemoryWindow, assign_events
from feedmd.fingerprints.vectors import from_stored, normalise, stack_stored, to_stored
from feedmd.model.encoder import E5Encoder
from feedmd.settings import Settings


@pytest.fixture(scope="module")
def encoder() -> E5Encoder:
    return E5Encoder()


def test_normalise_gives_unit_rows_and_keeps_zero_rows() -> None:
    rows = normalise(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert rows.dtype == np.float32
    assert np.allclose(rows, [[0.6, 0.8], [0.0, 0.0]])


def test_round_trip_is_close_and_compact() -> None:
    rng = np.random.default_rng(7)
    vectors = normalise(rng.normal(size=(200, 384)))
    blobs = [to_stored(v) for v in vectors]
    assert {len(b) for b in blobs} == {4 + 384}
    back = stack_stored(blobs)
    assert np.allclose(back, np.stack([from_stored(b) for b in blobs]))
    cosines = np.einsum("ij,ij->i", vectors, back)
    assert cosines.min() > 0.9999
    # pairwise cosines move by a few thousandths at most
    assert np.abs(vectors @ vectors.T - back @ back.T).max() < 3e-3


def test_stored_vectors_give_the_same_decisions(encoder: E5Encoder) -> None:
    titles = [
        "Pope Leo to have surgery on Friday",
        "Pope Leo will undergo surgery, Vatican says",
        "Vatican: the Pope will be operated on",
        "Apple unveils a new iPhone",
        "Apple shows off its latest iPhone at event",
        "Oil prices steady as traders weigh supply",
        "Bayern München gewinnt gegen Dortmund",
        "Bayern schlägt Dortmund im Topspiel",
    ]
    vectors = encoder.encode(titles)
    stored = stack_stored([to_stored(v) for v in vectors])
    settings = Settings()
    decisions = []
    for matrix in (vectors, stored):
        items = [EventItem(str(i), t, matrix[i]) for i, t in enumerate(titles)]
        decisions.append(
            [(d.event_id, d.joined) for d in assign_events(items, MemoryWindow(), settings, "m")]
        )
    assert decisions[0] == decisions[1]
