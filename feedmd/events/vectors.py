"""Headline vectors: unit-length float32 for deciding, int8 bytes for storing.

Cosine similarity is a dot product of unit vectors, so every vector is normalised once, when
it is made. Stored with the item, a vector is 4 + d bytes: a float32 scale and d int8 codes
(388 bytes for the 384-d model instead of 1,536 as float32), so a 48 h window of 100k items
is 39 MB. The rounding moves a cosine by at most 0.0015 on the development headlines. The grouper
decides on the rounded form (``as_stored``), so what it decides now is what a replay from
the stored bytes decides; ``tests/events/test_vectors.py`` checks that.
"""

from __future__ import annotations

import numpy as np

INT8_MAX = 127


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, as float32 (a zero row stays zero)."""
    matrix = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32)


def to_stored(vector: np.ndarray) -> bytes:
    """One unit vector as bytes: a little-endian float32 scale, then one int8 per value.
    The scale maps the largest absolute value to 127, so each vector uses the full range."""
    values = np.asarray(vector, dtype=np.float32).ravel()
    peak = float(np.max(np.abs(values))) if values.size else 0.0
    scale = peak / INT8_MAX if peak else 1.0
    codes = np.clip(np.rint(values / scale), -INT8_MAX, INT8_MAX).astype(np.int8)
    return np.float32(scale).astype("<f4").tobytes() + codes.tobytes()


def from_stored(blob: bytes) -> np.ndarray:
    """The unit float32 vector back from ``to_stored`` bytes (renormalised after rounding)."""
    scale = np.frombuffer(blob[:4], dtype="<f4")[0]
    codes = np.frombuffer(blob[4:], dtype=np.int8).astype(np.float32)
    return normalise(codes * scale)[0]


def as_stored(vectors: np.ndarray) -> np.ndarray:
    """Vectors as they come back from storage (rounded to int8 and back). Decisions are made
    on this form, so a decision taken now and one replayed later from the stored bytes are
    the same (float32 and stored form differ by up to 0.0015 in cosine on the development
    headlines, which flips 5 of 3,819 decisions within 0.0005 of the threshold)."""
    matrix = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
    return stack_stored([to_stored(row) for row in matrix]) if len(matrix) else matrix


def stack_stored(blobs: list[bytes]) -> np.ndarray:
    """Many stored vectors as one float32 matrix, one row each (for a window scan)."""
    if not blobs:
        return np.zeros((0, 0), dtype=np.float32)
    raw = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), -1)
    scales = raw[:, :4].copy().view("<f4").astype(np.float32)
    codes = raw[:, 4:].view(np.int8).astype(np.float32)
    return normalise(codes * scales)
