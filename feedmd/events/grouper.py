"""The event grouper: which earlier item's event does each new item join?

Pure: it takes the new items (id, title, unit vector) in publication order, a window that
answers "the stored vectors nearest to this one" and the settings, and returns one
``EventDecision`` per item; storing the decisions is the caller's job. An item joins the
event of the most similar earlier item whose cosine is at least the pair's threshold and
that no veto keeps apart (feedmd/events/vetoes.py); the candidates are tried best first, so
a templated near-twin vetoed on its numbers does not hide a real rewrite one place below it.
The pair's threshold is ``event_threshold``, or ``event_threshold_cross_language`` when the
two headlines are told to be in two languages (``fingerprints/language.py``), or the
language's or pair's own entry in ``event_thresholds_by_language`` (the model puts two
French headlines closer together than two English ones of the same meanings); across
languages the subject veto is off (its name-like leads are words of each language:
"Papst" / "Pope"), the numbers and directions vetoes stay.
Items of the same batch see each other, oldest first, as the store would after each item.
An item that joins nothing opens its own event and is its canonical item.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from feedmd.events.vetoes import veto
from feedmd.fingerprints.language import pair_languages
from feedmd.fingerprints.subject_gate import CasingStats
from feedmd.fingerprints.vectors import as_stored
from feedmd.models import Neighbour
from feedmd.settings import Settings
from feedmd.settings.events import language_thresholds

# How many nearest stored vectors to try, best first. On the development headlines the
# joined candidate is the first in 98% of joins and within the first 3 in all but a few;
# 8 is headroom for vetoed templates at no measurable cost.
MAX_CANDIDATES = 8


@dataclass(frozen=True)
class EventItem:
    """A new kept item to place: its id, its headline and its unit vector."""

    item_id: str
    title: str
    vector: np.ndarray = field(repr=False, compare=False)


class EventWindow(Protocol):
    """The earlier items a new item may join (the window and scope are the implementer's:
    the store answers from its window; ``MemoryWindow`` from a matrix in memory)."""

    def nearest(self, vector: np.ndarray, k: int, min_score: float) -> list[Neighbour]:
        """Up to ``k`` stored items with cosine >= ``min_score`` to ``vector``, best first."""
        ...


@dataclass(frozen=True)
class EventDecision:
    """Where one item goes. ``joined`` is the item it matched (None when it opens an event);
    ``event_id`` is the event's id, which is the id of the event's first (canonical) item.
    ``score`` and ``threshold`` are the cosine to the item joined and its pair's threshold;
    when the item opened its own event, those of the best refused candidate, or of the best
    one below its pair's threshold (an Arabic pair at 0.957 against the Arabic entry 0.96,
    so ``feedmd explain`` can say which threshold kept it apart); 0.0 and
    ``event_threshold`` when no earlier item came within the lowest threshold of any pair.
    ``veto`` says why the best candidate at or above its threshold was refused, when the
    item opened its own event because of it."""

    item_id: str
    event_id: str
    joined: str | None
    score: float
    threshold: float
    model: str
    veto: str | None = None

    @property
    def is_canonical(self) -> bool:
        """The item opened its event."""
        return self.joined is None


class MemoryWindow:
    """An ``EventWindow`` over vectors in memory: an exact scan (one matrix-vector product),
    used by the tests, the evaluation and the batch itself."""

    def __init__(self, dimensions: int = 384, capacity: int = 1024) -> None:
        self._matrix = np.zeros((capacity, dimensions), dtype=np.float32)
        self._size = 0
        self.item_ids: list[str] = []
        self.event_ids: list[str] = []
        self.titles: list[str] = []

    def __len__(self) -> int:
        return self._size

    def add(self, item_id: str, event_id: str, title: str, vector: np.ndarray) -> None:
        """Store one item's vector with its event."""
        if self._size == len(self._matrix):
            grown = np.zeros((2 * len(self._matrix), self._matrix.shape[1]), dtype=np.float32)
            grown[: self._size] = self._matrix[: self._size]
            self._matrix = grown
        self._matrix[self._size] = vector
        self._size += 1
        self.item_ids.append(item_id)
        self.event_ids.append(event_id)
        self.titles.append(title)

    def drop_oldest(self, count: int) -> None:
        """Forget the first ``count`` items added (they left the window)."""
        if count <= 0:
            return
        keep = self._size - count
        self._matrix[:keep] = self._matrix[count : self._size]
        self._size = max(keep, 0)
        del self.item_ids[:count], self.event_ids[:count], self.titles[:count]

    def nearest(self, vector: np.ndarray, k: int, min_score: float) -> list[Neighbour]:
        """Exact nearest stored items, best first (ties: the older item first)."""
        if not self._size:
            return []
        scores = self._matrix[: self._size] @ np.asarray(vector, dtype=np.float32)
        hits = np.flatnonzero(scores >= min_score)
        if len(hits) > k:
            hits = hits[np.argpartition(-scores[hits], k - 1)[:k]]
        order = sorted(hits.tolist(), key=lambda i: (-float(scores[i]), i))
        return [
            Neighbour(self.item_ids[i], self.event_ids[i], self.titles[i], float(scores[i]))
            for i in order
        ]


def merge_neighbours(first: list[Neighbour], second: list[Neighbour], k: int) -> list[Neighbour]:
    """The best ``k`` of two candidate lists, best first, each item once."""
    seen: set[str] = set()
    out: list[Neighbour] = []
    for neighbour in sorted(first + second, key=lambda n: -n.score):
        if neighbour.item_id not in seen:
            seen.add(neighbour.item_id)
            out.append(neighbour)
    return out[:k]


def lowest_threshold(settings: Settings) -> float:
    """The least cosine any pair may join at: what a window is asked for."""
    return min(
        settings.event_threshold,
        settings.event_threshold_cross_language,
        *language_thresholds(settings.event_thresholds_by_language).values(),
    )


def pair_rule(title: str, other: str, settings: Settings) -> tuple[float, tuple[str, ...]]:
    """The threshold and the vetoes for one pair of headlines: ``languages_rule`` for the
    languages they are told to be in (``pair_languages``)."""
    return languages_rule(pair_languages(title, other, settings.event_language_overlap), settings)


def languages_rule(languages: tuple[str, ...], settings: Settings) -> tuple[float, tuple[str, ...]]:
    """The threshold and the vetoes for a pair told to be in ``languages``. Across two
    languages: the pair's entry in ``event_thresholds_by_language`` ("de-en"), else
    ``event_threshold_cross_language``, and no subject veto. In one language told apart:
    that language's entry ("fr"), else ``event_threshold``; in any other case
    ``event_threshold``. The subject veto only with ``subject_gate`` on."""
    by_language = language_thresholds(settings.event_thresholds_by_language)
    if len(languages) == 2:
        threshold = by_language.get("-".join(languages), settings.event_threshold_cross_language)
        return threshold, ("numbers", "direction")
    threshold = settings.event_threshold
    if languages:
        threshold = by_language.get(languages[0], threshold)
    if settings.subject_gate:
        return threshold, ("numbers", "direction", "subject")
    return threshold, ("numbers", "direction")


def assign_events(
    new_items: Sequence[EventItem],
    window: EventWindow,
    settings: Settings,
    model: str,
    casing: CasingStats | None = None,
) -> list[EventDecision]:
    """Place each new item (publication order) in an event: join the event of the nearest
    earlier item (window or this batch) whose cosine reaches the pair's threshold
    (``pair_rule``) and that no veto keeps apart, else open a new event. Vectors are
    compared in their stored form. ``casing`` is the corpus casing for the subject veto
    (default: the batch's titles)."""
    lowest = lowest_threshold(settings)
    batch = MemoryWindow(dimensions=new_items[0].vector.shape[0] if new_items else 384)
    stats = casing or CasingStats.build(item.title for item in new_items)
    decisions: list[EventDecision] = []
    vectors = as_stored(np.stack([item.vector for item in new_items])) if new_items else []
    for item, vector in zip(new_items, vectors, strict=True):
        candidates = merge_neighbours(
            window.nearest(vector, MAX_CANDIDATES, lowest),
            batch.nearest(vector, MAX_CANDIDATES, lowest),
            MAX_CANDIDATES,
        )
        threshold = settings.event_threshold
        decision = EventDecision(item.item_id, item.item_id, None, 0.0, threshold, model)
        first_veto: tuple[Neighbour, str, float] | None = None
        nearest_below: tuple[Neighbour, float] | None = None
        for neighbour in candidates:
            needed, vetoes = pair_rule(item.title, neighbour.title, settings)
            if neighbour.score < needed:
                if nearest_below is None:
                    nearest_below = (neighbour, needed)
                continue
            reason = veto(
                item.title, neighbour.title, stats, settings.subject_max_tokens, enabled=vetoes
            )
            if reason is None:
                decision = EventDecision(
                    item.item_id,
                    neighbour.event_id,
                    neighbour.item_id,
                    round(neighbour.score, 4),
                    needed,
                    model,
                )
                break
            if first_veto is None:
                first_veto = (neighbour, reason, needed)
        if decision.joined is None and first_veto is not None:
            neighbour, reason, needed = first_veto
            decision = EventDecision(
                item.item_id,
                item.item_id,
                None,
                round(neighbour.score, 4),
                needed,
                model,
                veto=f"{reason} (nearest {neighbour.item_id})",
            )
        elif decision.joined is None and nearest_below is not None:
            neighbour, needed = nearest_below
            decision = EventDecision(
                item.item_id, item.item_id, None, round(neighbour.score, 4), needed, model
            )
        batch.add(item.item_id, decision.event_id, item.title, vector)
        decisions.append(decision)
    return decisions
