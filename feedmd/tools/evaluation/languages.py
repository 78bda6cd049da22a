"""`feedmd eval languages`: a language's event threshold carried over from the measured ones.

An entry in ``event_thresholds_by_language`` is chosen on labelled hard pairs (the STS
headline pairs machine-translated, docs/events.md), and such pairs exist for few languages.
What does exist for many is the same news in several languages (NTREX-128's human
translations, ``eval/news-sentences``). On it the model places sentences of two different
articles closer together in some languages than in others (median cosine 0.77 in English,
0.85 in Arabic), and the entries chosen on labelled pairs sit at about the same share of the
way from that median to 1: ``share = (entry - median) / (1 - median)`` is 0.70-0.73 for
English, German, Spanish, French, Polish and Turkish within one language, and 0.51-0.63 for
those languages against English. So a language with translations but no labelled pairs is
given ``median + mean share * (1 - median)``, in steps of 0.005, and each measured entry is
checked the same way with itself left out (``left_out``): the rule is trusted as far as it
predicts the entries it was not fitted on.

The sentences are aligned by position: the n-th sentence of each language is the same
sentence (the file holds each language's translation line by line, possibly fewer lines in
some languages; only the positions every language has are used, and they must belong to the
same article in every language). Vectors are compared in their stored form, as the grouper
compares them.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from feedmd.errors import EvalDataError
from feedmd.fingerprints.vectors import as_stored
from feedmd.model.encoder import E5Encoder, Encoder
from feedmd.settings import Settings
from feedmd.settings.events import CARRIED_LANGUAGE_ENTRIES, language_thresholds
from feedmd.tools.evaluation.events import encode_cached
from feedmd.tools.evaluation.headlines import read_jsonl

# Entries are read and written in steps of this cosine, as they were chosen on labelled
# pairs (docs/events.md, "Each language at its own threshold").
STEP = 0.005


@dataclass(frozen=True)
class Baseline:
    """How close the model puts unrelated news in one language ("ar") or across two
    ("ar-en", codes in alphabetical order): the median cosine of sentences of two
    different articles."""

    key: str
    median: float
    pairs: int


@dataclass(frozen=True)
class CarriedThreshold:
    """One language's (or pair's) entry carried over from the others: ``carried`` is the
    rule's threshold fitted on every measured entry; ``left_out`` the same with this key's
    own entry left out of the fit (None without an entry)."""

    key: str
    pairs: int
    median: float
    entry: float | None
    share: float | None
    carried: float
    left_out: float | None


def share_of(entry: float, median: float) -> float:
    """How far ``entry`` sits from the unrelated median towards 1 (0 at the median, 1 at 1)."""
    return (entry - median) / (1.0 - median)


def on_step(cosine: float, step: float = STEP) -> float:
    """``cosine`` rounded to the nearest step (0.9577 -> 0.96)."""
    return round(round(cosine / step) * step, 6)


def across_languages(key: str) -> bool:
    """Whether a key names a pair across two languages ("de-en") rather than one ("de")."""
    return "-" in key


def carried_thresholds(
    baselines: Sequence[Baseline], entries: Mapping[str, float], step: float = STEP
) -> list[CarriedThreshold]:
    """Each baseline's threshold by the share rule (module docstring), fitted on the
    baselines that have an entry: pairs in one language and pairs across two are fitted
    apart (their shares differ, 0.71 against 0.56 on NTREX). A group with no entry gets
    no fit and is left out; an entry alone in its group has no ``left_out``."""
    out: list[CarriedThreshold] = []
    for across in (False, True):
        group = [b for b in baselines if across_languages(b.key) == across]
        shares = {b.key: share_of(entries[b.key], b.median) for b in group if b.key in entries}
        if not shares:
            continue
        mean_share = statistics.fmean(shares.values())
        for baseline in group:
            others = [s for key, s in shares.items() if key != baseline.key]
            left_out = None
            if baseline.key in shares and others:
                others_share = statistics.fmean(others)
                left_out = on_step(baseline.median + others_share * (1 - baseline.median), step)
            out.append(
                CarriedThreshold(
                    key=baseline.key,
                    pairs=baseline.pairs,
                    median=baseline.median,
                    entry=entries.get(baseline.key),
                    share=shares.get(baseline.key),
                    carried=on_step(baseline.median + mean_share * (1 - baseline.median), step),
                    left_out=left_out,
                )
            )
    return out


def aligned_sentences(path: str | Path) -> dict[str, list[tuple[str, str]]]:
    """Each language's (article, text) by position, cut to the positions every language
    has; raises EvalDataError when a position's article differs between languages."""
    by_language: dict[str, list[tuple[str, str]]] = {}
    for row in read_jsonl(path, ("lang", "article", "text")):
        by_language.setdefault(str(row["lang"]), []).append((str(row["article"]), str(row["text"])))
    if len(by_language) < 2:
        raise EvalDataError(f"{path}: sentences in at least two languages are needed")
    length = min(len(rows) for rows in by_language.values())
    aligned = {language: rows[:length] for language, rows in sorted(by_language.items())}
    for position in range(length):
        articles = {rows[position][0] for rows in aligned.values()}
        if len(articles) > 1:
            raise EvalDataError(
                f"{path}: sentence {position + 1} of each language is not from one article "
                f"({', '.join(sorted(articles))}): the languages are not aligned line by line"
            )
    return aligned


def baselines_of(
    articles: Sequence[str], vectors: Mapping[str, np.ndarray], reference: str
) -> list[Baseline]:
    """The unrelated median of each language and of each language against ``reference``,
    over the positions of two different ``articles`` (the same positions in every
    language, so only the language differs)."""
    unrelated = np.array([a != b for a, b in combinations(articles, 2)], dtype=bool)
    pairs = np.array(list(combinations(range(len(articles)), 2)), dtype=np.intp).reshape(-1, 2)
    first, second = pairs[unrelated, 0], pairs[unrelated, 1]
    out = []
    for language, matrix in vectors.items():
        within = np.einsum("ij,ij->i", matrix[first], matrix[second])
        out.append(Baseline(language, float(np.median(within)), len(within)))
        if language != reference:
            other = vectors[reference]
            # both orders: a language's sentence against the reference's of another article
            across = np.concatenate(
                [
                    np.einsum("ij,ij->i", matrix[first], other[second]),
                    np.einsum("ij,ij->i", matrix[second], other[first]),
                ]
            )
            key = "-".join(sorted((language, reference)))
            out.append(Baseline(key, float(np.median(across)), len(across)))
    return out


def evaluate_languages(
    path: str | Path,
    settings: Settings,
    reference: str = "en",
    encoder: Encoder | None = None,
    carried: Sequence[str] = CARRIED_LANGUAGE_ENTRIES,
) -> dict[str, Any]:
    """`feedmd eval languages FILE`: each language's and each pair's unrelated median on
    aligned news sentences, its measured entry (``reference`` alone: ``event_threshold``;
    the ``carried`` keys' entries are shown as ``set`` and left out of the fit), and the
    threshold the share rule carries over to it, with and without its own entry."""
    aligned = aligned_sentences(path)
    if reference not in aligned:
        raise EvalDataError(f"{path}: no sentences in the reference language {reference!r}")
    model = encoder or E5Encoder(settings.event_model_path)
    vectors = {
        language: as_stored(encode_cached(model, [text for _, text in rows])[0])
        for language, rows in aligned.items()
    }
    articles = [article for article, _ in aligned[reference]]
    entries = dict(language_thresholds(settings.event_thresholds_by_language))
    entries[reference] = settings.event_threshold
    # the carried entries are the rule's own output: shown as ``set``, never fitted on
    measured = {key: value for key, value in entries.items() if key not in carried}
    rows = carried_thresholds(baselines_of(articles, vectors, reference), measured)
    missing = [row for row in rows if row.entry is None]
    return {
        "sentences": len(articles),
        "languages": sorted(aligned),
        "reference": reference,
        "step": STEP,
        "thresholds": [
            {
                "key": c.key,
                "pairs": c.pairs,
                "median": round(c.median, 4),
                "entry": c.entry,
                "set": entries.get(c.key),
                "share": None if c.share is None else round(c.share, 3),
                "carried": c.carried,
                "left_out": c.left_out,
            }
            for c in rows
        ],
        "largest_left_out_error": {
            group: max(
                (
                    round(abs(c.left_out - c.entry), 6)
                    for c in rows
                    if across_languages(c.key) == across
                    and c.left_out is not None
                    and c.entry is not None
                ),
                default=None,
            )
            for group, across in (("one_language", False), ("two_languages", True))
        },
        "without_entry": " ".join(f"{c.key}={c.carried}" for c in missing),
    }
