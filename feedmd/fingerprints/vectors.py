"""Headline vectors: unit-length float32 for deciding, int8 bytes for storing.

Cosine similarity is a dot product of unit vectors, so every vector is normalised once, when
it is made. Stored with the item, a vector is 4 + d bytes: a float32 and d int8 codes
(388 bytes for the 384-d model instead of 1,536 as float32), so a 48 h window of 100k items
is 39 MB. The rounding moves a cosine by at most 0.0015 on the development headlines. The grouper
decides on the rounded form (``as_stored``), so what it decides now is what a replay from
the stored bytes decides; ``tests/fingerprints/test_vectors.py`` checks that.
"""

from __future__ import annotations

import numpy as np

INT8_MAX = 127
DIMENSIONS = 384
# Bytes of one stored vector: the float32 inverse length and one int8 code per dimension.
STORED_BYTES = 4 + DIMENSIONS


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, as float32 (a zero row stays zero)."""
    matrix = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32)


def to_stored(vector: np.ndarray) -> bytes:
    """One unit vector as bytes: a little-endian float32, then one int8 code per value. The
    codes map the largest absolute value to 127, so each vector uses the full range; the
    float is 1 / the codes' length, so codes times it is already a unit vector and a cosine
    is one dot product and one multiplication, with no scale to apply."""
    values = np.asarray(vector, dtype=np.float32).ravel()
    peak = float(np.max(np.abs(values))) if values.size else 0.0
    codes = np.rint(values * (INT8_MAX / peak)) if peak else np.zeros_like(values)
    codes = np.clip(codes, -INT8_MAX, INT8_MAX).astype(np.int8)
    length = float(np.linalg.norm(codes.astype(np.float32)))
    inverse = 1.0 / length if length else 0.0
    return np.float32(inverse).astype("<f4").tobytes() + codes.tobytes()


def from_stored(blob: bytes) -> np.ndarray:
    """The unit float32 vector of ``to_stored`` bytes."""
    inverse = np.frombuffer(blob[:4], dtype="<f4")[0]
    return np.frombuffer(blob[4:], dtype=np.int8).astype(np.float32) * inverse


def as_stored(vectors: np.ndarray) -> np.ndarray:
    """Vectors as they come back from storage (rounded to int8 and back). Decisions are made
    on this form, so a decision taken now and one replayed later from the stored bytes are
    the same (float32 and stored form differ by up to 0.0015 in cosine on the development
    headlines, which flips 5 of 3,819 decisions within 0.0005 of the threshold)."""
    matrix = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
    return stack_stored([to_stored(row) for row in matrix]) if len(matrix) else matrix


def split_stored(blobs: list[bytes] | bytes) -> tuple[np.ndarray, np.ndarray]:
    """Stored vectors (a list of ``to_stored`` bytes, or their concatenation) as columns:
    the int8 codes (one row each) and the float32 inverse lengths."""
    if not len(blobs):
        return np.zeros((0, DIMENSIONS), dtype=np.int8), np.zeros(0, dtype=np.float32)
    if isinstance(blobs, bytes | bytearray | memoryview):
        raw = np.frombuffer(blobs, dtype=np.uint8).reshape(-1, STORED_BYTES)
        return raw[:, 4:].view(np.int8), raw[:, :4].copy().view("<f4").astype(np.float32).ravel()
    raw = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), -1)
    inverses = raw[:, :4].copy().view("<f4").astype(np.float32).ravel()
    return raw[:, 4:].view(np.int8), inverses


def stack_stored(blobs: list[bytes]) -> np.ndarray:
    """Many stored vectors as one unit float32 matrix, one row each."""
    if not blobs:
        return np.zeros((0, 0), dtype=np.float32)
    codes, inverses = split_stored(blobs)
    return codes.astype(np.float32) * inverses[:, None]


def stored_cosines(blobs: list[bytes], queries: np.ndarray) -> np.ndarray:
    """Cosines of stored vectors (rows) with unit query vectors (columns), without building
    the unit matrix: (codes @ queries) scaled row by row."""
    codes, inverses = split_stored(blobs)
    return (codes.astype(np.float32) @ queries.T) * inverses[:, None]
