"""A run's event step (between stage 2 and the store, ``feedmd/pipeline.py``): the run's
kept items placed in events against the store's window.

The kept items' headlines are encoded in one call, then each scope (an org, or a feed in
the feed scope, as ``dedup_scope`` says) is compared with its stored window in one blocked
pass (``Store.event_scan``) and ``assign_events`` decides. The decisions are returned as
rows for ``Store.persist`` to write in the run's one transaction with the items, so a run
killed at any point stores both or neither.

With ``events`` off nothing here runs and the model is never loaded. When the model cannot
be loaded (``EventModelMissing``: the package or its weights absent) or encode, the run
keeps its items without an event: the error goes into the run report (the run ends
``partial``, exit code 3) and the log, and the items are recorded as waiting for their
event; later runs with events on catch them up, oldest first, a capped number per run
(``feedmd/events/catchup.py``, docs/events.md).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from feedmd.errors import EventModelMissing
from feedmd.events.catchup import catch_up
from feedmd.events.grouper import (
    MAX_CANDIDATES,
    EventItem,
    EventWindow,
    MemoryWindow,
    Neighbour,
    assign_events,
    lowest_threshold,
    merge_neighbours,
)
from feedmd.fingerprints.vectors import as_stored, to_stored
from feedmd.model.encoder import Encoder, encoder_for
from feedmd.models import Candidate, Decision, Stage1Result
from feedmd.settings import Settings
from feedmd.store import EventRow, Ref, Store
from feedmd.timeutil import iso

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EventOutcome:
    """What the event step decided: one row per kept item to store (this run's, keyed by
    entry key, and the caught-up ones, keyed by ``str(item id)``), how many of the run's
    items joined an earlier item's event, the run's kept items left waiting for an event
    (``pending``: entry keys, when the model could not load or encode), the waiting rows
    to drop (``resolved``), how many waiting items were caught up and how many still wait,
    and the error that kept the step from running (None when it ran or was off)."""

    rows: tuple[EventRow, ...] = ()
    joined: int = 0
    error: str | None = None
    pending: tuple[str, ...] = ()
    resolved: tuple[int, ...] = ()
    caught_up: int = 0
    caught_up_joined: int = 0
    remaining: int = 0

    @property
    def caught_up_ids(self) -> list[int]:
        """The ids of the waiting items this run placed in events."""
        return [int(row.key) for row in self.rows[: self.caught_up]]

    @property
    def opened(self) -> int:
        """The run's own items that opened an event of their own."""
        return len(self.rows) - self.caught_up - self.joined


def kept_candidates(stage: Stage1Result, final: Mapping[str, Decision]) -> list[Candidate]:
    """The candidates kept after stage 2 (items fetched again included), oldest first."""
    kept = [
        c
        for c in stage.candidates
        if (final.get(c.key) or stage.decisions[c.key]).decision == "kept"
    ]
    return sorted(kept, key=lambda c: c.entry.published)


def group_events(
    store: Store,
    stage: Stage1Result,
    final: Mapping[str, Decision],
    settings: Settings,
    now: datetime,
    encoder: Encoder | None = None,
    orgs: Sequence[str] = (),
) -> EventOutcome:
    """Place the run's kept items in events, after catching up the waiting items of
    ``orgs`` (``feedmd/events/catchup.py``; see the module docstring)."""
    if not settings.events:
        return EventOutcome()
    kept = kept_candidates(stage, final)
    encoder = encoder or encoder_for(settings.event_model_path)
    since = now - timedelta(hours=settings.dedup_window_hours)
    # kept items of the window that never got an event (kept while events were off) wait
    store.enqueue_unplaced(orgs, iso(since), now)
    try:
        caught = catch_up(store, orgs, settings, encoder, iso(since))
        vectors = encoder.encode([c.entry.title for c in kept]) if kept else None
    except (EventModelMissing, OSError, RuntimeError) as exc:
        waiting = store.pending_event_count(orgs) + len(kept)
        log.error(
            "events: %s; %d kept items stored without an event, %d now wait for one",
            exc,
            len(kept),
            waiting,
        )
        pending = tuple(c.key for c in kept)
        return EventOutcome(error=str(exc), pending=pending, remaining=waiting)
    rows = list(caught.rows)
    joined = 0
    scopes: dict[tuple[str, str | None], list[int]] = {}
    for n, candidate in enumerate(kept):
        feed = candidate.entry.feed if settings.dedup_scope == "feed" else None
        scopes.setdefault((candidate.entry.org, feed), []).append(n)
    for (org, feed), members in scopes.items():
        assert vectors is not None
        items = [EventItem(kept[n].key, kept[n].entry.title, vectors[n]) for n in members]
        window = _window(store, org, feed, since, encoder.name, items, settings)
        earlier = caught.windows.get((org, feed))
        if earlier is not None:
            window = _Both(window, earlier)
        batch = {item.item_id for item in items}
        for item, decision in zip(
            items, assign_events(items, window, settings, encoder.name), strict=True
        ):
            joined += decision.joined is not None
            veto, vetoed = _veto(decision.veto, batch)
            rows.append(
                EventRow(
                    key=item.item_id,
                    vector=to_stored(item.vector),
                    event=_ref(decision.event_id, batch),
                    joined=None if decision.joined is None else _ref(decision.joined, batch),
                    score=decision.score,
                    threshold=decision.threshold,
                    model=decision.model,
                    veto=veto,
                    vetoed=vetoed,
                )
            )
    return EventOutcome(
        tuple(rows),
        joined,
        resolved=tuple(caught.resolved),
        caught_up=caught.count,
        caught_up_joined=caught.joined,
        remaining=caught.remaining,
    )


class _Both:
    """The stored window and the items caught up in this run, as one ``EventWindow``."""

    def __init__(self, stored: EventWindow, caught: MemoryWindow) -> None:
        self._stored = stored
        self._caught = caught

    def nearest(self, vector: np.ndarray, k: int, min_score: float) -> list[Neighbour]:
        return merge_neighbours(
            self._stored.nearest(vector, k, min_score),
            self._caught.nearest(vector, k, min_score),
            k,
        )


def _window(
    store: Store,
    org: str,
    feed: str | None,
    since: datetime,
    model: str,
    items: Sequence[EventItem],
    settings: Settings,
) -> EventWindow:
    """The stored window of a scope, compared with all of ``items`` in one pass (an empty
    window when the org is new)."""
    scan = store.event_scan(org, feed, since, model)
    if scan is None:
        return MemoryWindow()
    # the grouper compares vectors in their stored form: prepare the same rows
    scan.prepare(
        as_stored([item.vector for item in items]), MAX_CANDIDATES, lowest_threshold(settings)
    )
    return scan


def _ref(item_id: str, batch: set[str]) -> Ref:
    """A decision's item: an entry key of this run, else a stored item's id."""
    return item_id if item_id in batch else int(item_id)


def _veto(text: str | None, batch: set[str]) -> tuple[str | None, Ref | None]:
    """A veto's reason and the candidate it refused (the grouper writes them as
    ``reason (nearest ID)``); the store names the candidate by its item id."""
    if text is None:
        return None, None
    reason, _, rest = text.rpartition(" (nearest ")
    if not reason or not rest.endswith(")"):
        return text, None
    return reason, _ref(rest[:-1], batch)
