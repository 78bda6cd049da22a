"""Consent walls told by what they say, in any language: the sentence model's vector of a
line, scored by a linear discriminant (``consent_walls.npz``).

A phrase list (``stages/walls.py``) knows the wording its authors met: on 590 real notices
of four consent libraries in 38 languages (eval/walls/, written by none of us) it caught 44.
A consent notice says the same thing in every language ("this site uses cookies ... you
consent ... manage your preferences"), and the multilingual model puts that meaning in one
region of its space, so a direction learned from two libraries' notices and from news
sentences finds the other libraries' notices too.

The discriminant is Fisher's: ``w = (S_wall + S_news + ridge I)^-1 (mean_wall - mean_news)``
over the vectors, ``score = w . v + bias`` with the bias at the midpoint of the two means.
It is built by ``feedmd.tools.evaluation.walls.build_discriminant`` from the notices of
klaro and tarteaucitron (417) against news sentences in seven languages and the fixture
news day's paragraphs (1,311); tests/model/test_walls.py rebuilds it from the repository's
data and compares. The file is derived from CC BY-SA 4.0 sentences (eval/SOURCES.md) and
carries their licence.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from feedmd.errors import EventModelMissing
from feedmd.model.encoder import Encoder, encoder_for
from feedmd.settings import Settings

log = logging.getLogger("feedmd.walls")

DISCRIMINANT_FILE = Path(__file__).with_name("consent_walls.npz")
# How many lines' verdicts a reader remembers: ~2 MB of lines at 200 characters.
SEEN_LINES = 10_000


@dataclass(frozen=True)
class Discriminant:
    """A direction of the vector space and the score's offset."""

    weights: np.ndarray  # (384,) float64
    bias: float

    def scores(self, vectors: np.ndarray) -> np.ndarray:
        """``w . v + bias`` per row: above 0 the row is nearer the walls' mean."""
        return np.asarray(vectors, dtype=np.float64) @ self.weights + self.bias


@lru_cache(maxsize=4)
def load_discriminant(path: str = str(DISCRIMINANT_FILE)) -> Discriminant:
    """The discriminant stored at ``path`` (the bundled one by default)."""
    with np.load(path) as data:
        return Discriminant(np.asarray(data["weights"], dtype=np.float64), float(data["bias"]))


class ConsentWalls:
    """Which lines are consent-wall text: ``lines -> [bool]``, what the page reduction
    (``stages/prose.py``) asks of a short page's prose."""

    def __init__(
        self, encoder: Encoder, threshold: float, discriminant: Discriminant | None = None
    ) -> None:
        self.encoder = encoder
        self.threshold = threshold
        self.discriminant = discriminant or load_discriminant()
        self.missing = False
        # lines read before, and their verdict: a host's notice recurs on its pages, a
        # pair's page in many pairs (bounded: cleared when full)
        self._seen: dict[str, bool] = {}

    def __call__(self, lines: Sequence[str]) -> list[bool]:
        """True for each line whose score reaches the threshold. Without the model (its
        package or weights missing) every line is False: the phrases still decide, and the
        missing model is logged once (a run with events on also reports it)."""
        if not lines or self.missing:
            return [False] * len(lines)
        known = {line: self._seen[line] for line in lines if line in self._seen}
        new = list(dict.fromkeys(line for line in lines if line not in known))
        if new:
            try:
                vectors = self.encoder.encode(new)
            except EventModelMissing as exc:
                self.missing = True
                log.warning("consent walls are told by their phrases only: %s", exc)
                return [False] * len(lines)
            scores = self.discriminant.scores(vectors)
            verdicts = (bool(score >= self.threshold) for score in scores)
            read = dict(zip(new, verdicts, strict=True))
            if len(self._seen) + len(read) > SEEN_LINES:
                self._seen.clear()
            self._seen.update(read)
            known.update(read)
        return [known[line] for line in lines]


def walls_for(settings: Settings) -> ConsentWalls | None:
    """The run's reader of consent walls by meaning, on the process's sentence model (None
    with ``wall_model`` off). One per model and threshold for the process, so a missing
    model is logged once, not on every run of ``serve``."""
    if not settings.wall_model:
        return None
    return _walls(settings.event_model_path, settings.wall_model_threshold)


@lru_cache(maxsize=4)
def _walls(model_path: str, threshold: float) -> ConsentWalls:
    return ConsentWalls(encoder_for(model_path), threshold)
