"""`feedmd eval events` (and its `--pairs`): event grouping measured on labelled data.

Headlines (the format of `eval headlines`) are replayed oldest first, in batches of
``batch_minutes`` as a poller would see them, through the real encoder and the real grouper
(feedmd/events/grouper.py) over an in-memory window of ``dedup_window_hours``. Each join is
a merge; it is right when the item and the item it joined carry the same story, so the
figures read like those of `eval headlines` (merge precision is the one that matters; the
story labels are events and somewhat noisy).

Pairs (the format of `eval pairs`, with optional ``lang_a`` / ``lang_b``) are "predicted
same" when the two headlines' cosine reaches the pair's threshold and no veto keeps them
apart, as the grouper decides; figures are also given per language pair.

Vectors are cached for the life of the process (by model path and text), so `feedmd sweep`
encodes each headline once whatever the number of grid points.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from feedmd.events.grouper import (
    EventDecision,
    EventItem,
    MemoryWindow,
    assign_events,
    languages_rule,
)
from feedmd.events.vetoes import veto
from feedmd.fingerprints.language import language_of, pair_languages
from feedmd.fingerprints.subject_gate import CasingStats
from feedmd.fingerprints.vectors import as_stored
from feedmd.model.encoder import E5Encoder, Encoder
from feedmd.settings import Settings
from feedmd.timeutil import parse_iso
from feedmd.tools.evaluation.headlines import (
    LabelledHeadline,
    load_headlines,
    read_jsonl,
    score_headlines,
)

_CACHE: dict[tuple[str, str], np.ndarray] = {}
ENCODE_BATCH = 64


def encode_cached(encoder: Encoder, texts: Sequence[str]) -> tuple[np.ndarray, float]:
    """Vectors for ``texts`` (cached per process) and the seconds spent encoding the ones
    not cached."""
    key = getattr(encoder, "model_path", "") or encoder.name
    missing = list(dict.fromkeys(t for t in texts if (key, t) not in _CACHE))
    started = time.perf_counter()
    for start in range(0, len(missing), ENCODE_BATCH):
        chunk = missing[start : start + ENCODE_BATCH]
        for text, vector in zip(chunk, encoder.encode(chunk), strict=True):
            _CACHE[(key, text)] = vector
    seconds = time.perf_counter() - started
    if not texts:
        return np.zeros((0, 384), dtype=np.float32), seconds
    return np.stack([_CACHE[(key, t)] for t in texts]), seconds


def replay_events(
    rows: Sequence[LabelledHeadline],
    vectors: np.ndarray,
    settings: Settings,
    model: str,
    batch_minutes: float = 60.0,
) -> dict[str, EventDecision]:
    """Replay the headlines oldest first through the grouper, in batches of
    ``batch_minutes`` over a window of ``dedup_window_hours``; return each id's decision."""
    order = sorted(range(len(rows)), key=lambda i: (rows[i].published, rows[i].id))
    when = [parse_iso(rows[i].published).timestamp() for i in order]
    window = MemoryWindow(dimensions=vectors.shape[1], capacity=max(len(rows), 1))
    casing = CasingStats()
    decisions: dict[str, EventDecision] = {}
    added_at: list[float] = []
    start = 0
    while start < len(order):
        end = start
        while end < len(order) and when[end] - when[start] < batch_minutes * 60:
            end += 1
        horizon = when[start] - settings.dedup_window_hours * 3600
        old = sum(1 for t in added_at if t < horizon)
        window.drop_oldest(old)
        del added_at[:old]
        batch_stats = CasingStats.build(rows[i].title for i in order[start:end])
        casing.capitalised.update(batch_stats.capitalised)
        casing.lowercase.update(batch_stats.lowercase)
        items = [EventItem(rows[i].id, rows[i].title, vectors[i]) for i in order[start:end]]
        for item, decision in zip(
            items, assign_events(items, window, settings, model, casing), strict=True
        ):
            decisions[item.item_id] = decision
            window.add(item.item_id, decision.event_id, item.title, item.vector)
            added_at.append(when[start])
        start = end
    return decisions


def score_events(
    rows: Sequence[LabelledHeadline], decisions: dict[str, EventDecision]
) -> dict[str, Any]:
    """Merges (an item joining an earlier item's event) and their precision against the
    story labels, judged on the pair the model matched; the false merges listed; the vetoes
    that opened an event, by kind. The events as clusters (each item with its event's first
    item) give ``canonical_precision`` (members sharing the first item's story: drift along
    a chain of joins shows here), pairwise and B-cubed figures and the largest event."""
    by_id = {row.id: row for row in rows}
    merges = [d for d in decisions.values() if d.joined is not None]
    false_merges = [
        {
            "id": d.item_id,
            "title": by_id[d.item_id].title,
            "story": by_id[d.item_id].story,
            "matched_id": d.joined,
            "matched_title": by_id[d.joined].title,
            "matched_story": by_id[d.joined].story,
            "event_id": d.event_id,
            "score": d.score,
        }
        for d in merges
        if d.joined is not None and by_id[d.item_id].story != by_id[d.joined].story
    ]
    clusters = score_headlines(
        rows,
        {
            d.item_id: ("duplicate", "event", d.event_id, d.score)
            if d.joined
            else ("kept", None, None, None)
            for d in decisions.values()
        },
    )
    vetoes = Counter(d.veto.split(" ", 2)[1] for d in decisions.values() if d.veto)
    right = len(merges) - len(false_merges)
    return {
        "items": len(rows),
        "merges": len(merges),
        "merge_precision": round(right / len(merges), 4) if merges else None,
        "canonical_precision": clusters["merge_precision"],
        "false_merges": false_merges,
        "vetoed": dict(sorted(vetoes.items())),
        "events": len(rows) - len(merges),
        **{k: clusters[k] for k in ("pairwise", "bcubed", "largest_cluster")},
    }


def evaluate_events(
    path: str | Path,
    settings: Settings,
    batch_minutes: float = 60.0,
    encoder: Encoder | None = None,
    limit: int | None = None,
) -> dict[str, Any]:
    """Run `feedmd eval events` on a file and return the report: items, merges, merge
    precision, false merges, vetoes, event figures and encoding throughput. ``limit`` keeps
    the first N headlines in time order (a deterministic subset)."""
    rows = sorted(load_headlines(path), key=lambda row: (row.published, row.id))
    if limit is not None:
        rows = rows[:limit]
    model = encoder or E5Encoder(settings.event_model_path)
    vectors, seconds = encode_cached(model, [row.title for row in rows])
    # the window holds what the store would: the stored form
    decisions = replay_events(rows, as_stored(vectors), settings, model.name, batch_minutes)
    return {
        "file": str(path),
        "model": model.name,
        "threshold": settings.event_threshold,
        **score_events(rows, decisions),
        "headlines_per_second": round(len(rows) / seconds, 1) if seconds > 0.01 else None,
    }


def pair_language(a: str, b: str) -> str:
    """A pair's languages as one key, English last: 'en-en', 'de-en', 'de-de', 'es-fr'
    ('und' for a side whose language cannot be told)."""
    sides = sorted((a or "und", b or "und"), key=lambda code: (code == "en", code))
    return "-".join(sides)


def labelled_languages(row: dict[str, Any]) -> str | None:
    """The pair's languages as the file gives them: ``lang_a`` and ``lang_b`` (or
    ``lang1`` and ``lang2``), or one ``lang`` / ``language`` such as "de_en" or "de-en";
    None when it gives none."""
    for first, second in (("lang_a", "lang_b"), ("lang1", "lang2")):
        if row.get(first) and row.get(second):
            return pair_language(str(row[first]).lower(), str(row[second]).lower())
    joint = str(row.get("lang") or row.get("language") or "").lower().replace("_", "-")
    if joint:
        sides = joint.split("-")
        return pair_language(sides[0], sides[-1])
    return None


def _counts(kinds: Sequence[str]) -> dict[str, Any]:
    counts = Counter(kinds)
    tp, fp, fn = counts["tp"], counts["fp"], counts["fn"]
    return {
        "pairs": len(kinds),
        **{k: counts[k] for k in ("tp", "fp", "fn", "tn")},
        "precision": round(tp / (tp + fp), 4) if tp + fp else None,
        "recall": round(tp / (tp + fn), 4) if tp + fn else None,
    }


# The cosines at which `eval events --pairs` reports each language pair's figures: the
# range in which every threshold of feedmd's has been chosen (docs/events.md).
CURVE_THRESHOLDS = tuple(round(0.85 + 0.005 * step, 3) for step in range(27))


@dataclass(frozen=True)
class CurvePoint:
    """One labelled pair as a language pair's threshold table sees it: its cosine (-1 when
    a veto keeps it apart), its label, and ``fixed``: the threshold it is decided at
    whatever the language pair's entry, or None when the entry decides it (the pair is
    told to be in that language pair)."""

    score: float
    same: bool
    fixed: float | None


def threshold_curve(points: Sequence[CurvePoint]) -> dict[str, dict[str, Any]]:
    """tp, fp, precision and recall of one language pair with its entry in
    ``event_thresholds_by_language`` set to each of ``CURVE_THRESHOLDS`` (the pairs whose
    language is told otherwise keep their own threshold): the table an entry is chosen
    from, by the precision it buys (docs/events.md)."""
    positives = sum(1 for point in points if point.same)
    curve: dict[str, dict[str, Any]] = {}
    for threshold in CURVE_THRESHOLDS:
        predicted = [
            point
            for point in points
            if point.score >= (threshold if point.fixed is None else point.fixed)
        ]
        tp = sum(1 for point in predicted if point.same)
        fp = len(predicted) - tp
        curve[f"{threshold:.3f}"] = {
            "tp": tp,
            "fp": fp,
            "precision": round(tp / (tp + fp), 4) if tp + fp else None,
            "recall": round(tp / positives, 4) if positives else None,
        }
    return curve


def entry_key(languages: str) -> str:
    """The ``event_thresholds_by_language`` key of a language pair as reported ("de-de"
    -> "de", "fr-en" -> "en-fr")."""
    first, _, second = languages.partition("-")
    return first if first == second else "-".join(sorted((first, second)))


def evaluate_event_pairs(
    path: str | Path, settings: Settings, encoder: Encoder | None = None
) -> dict[str, Any]:
    """Score labelled pairs (`feedmd eval events HEADLINES --pairs FILE`): predicted same
    when the cosine reaches the pair's threshold (``grouper.languages_rule``: a language's own,
    or across two languages the cross-language one) and no veto keeps the two apart; tp,
    fp, fn, tn, precision, recall (unsure pairs left out), the same per language pair (the
    file's, ``labelled_languages``, else the languages told from the texts, 'und' where
    they cannot be) with each pair's figures along ``CURVE_THRESHOLDS``, and the errors
    listed."""
    rows = [
        row
        for row in read_jsonl(path, ("id", "a", "b", "label"))
        if row["label"] in ("same", "different")
    ]
    model = encoder or E5Encoder(settings.event_model_path)
    a_vectors = as_stored(encode_cached(model, [str(row["a"]) for row in rows])[0])
    b_vectors = as_stored(encode_cached(model, [str(row["b"]) for row in rows])[0])
    scores = np.einsum("ij,ij->i", a_vectors, b_vectors) if rows else np.zeros(0)
    casing = CasingStats.build(str(t) for row in rows for t in (row["a"], row["b"]))
    kinds: list[str] = []
    by_language: dict[str, list[str]] = {}
    errors: list[dict[str, Any]] = []
    same: list[str] = []
    curves: dict[str, list[CurvePoint]] = {}
    for row, score in zip(rows, scores.tolist(), strict=True):
        a, b = str(row["a"]), str(row["b"])
        told = pair_languages(a, b, settings.event_language_overlap)
        needed, vetoes = languages_rule(told, settings)
        reason = veto(a, b, casing, settings.subject_max_tokens, enabled=vetoes)
        predicted, actual = score >= needed and reason is None, row["label"] == "same"
        if predicted:
            same.append(str(row["id"]))
        kind = {(True, True): "tp", (True, False): "fp", (False, True): "fn", (False, False): "tn"}[
            (predicted, actual)
        ]
        kinds.append(kind)
        languages = labelled_languages(row) or pair_language(
            language_of(a) or "", language_of(b) or ""
        )
        by_language.setdefault(languages, []).append(kind)
        curves.setdefault(languages, []).append(
            CurvePoint(
                score if reason is None else -1.0,
                actual,
                None if "-".join(told) == entry_key(languages) else needed,
            )
        )
        if kind in ("fp", "fn"):
            errors.append(
                {
                    "id": row["id"],
                    "kind": kind,
                    "languages": languages,
                    "a": a,
                    "b": b,
                    "score": round(score, 4),
                    "threshold": needed,
                    "veto": reason if score >= needed else None,
                }
            )
    return {
        "file": str(path),
        "model": model.name,
        "threshold": settings.event_threshold,
        "threshold_cross_language": settings.event_threshold_cross_language,
        **_counts(kinds),
        "by_language_pair": {pair: _counts(k) for pair, k in sorted(by_language.items())},
        "by_language_pair_thresholds": {
            pair: threshold_curve(points) for pair, points in sorted(curves.items())
        },
        "predicted_same": same,
        "errors": errors,
    }
