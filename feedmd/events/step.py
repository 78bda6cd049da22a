"""A run's event step (between stage 2 and the store, ``feedmd/pipeline.py``): the run's
kept items placed in events against the store's window.

The kept items' headlines are encoded in one call, then each scope (an org, or a feed in
the feed scope, as ``dedup_scope`` says) is compared with its stored window in one blocked
pass (``Store.event_scan``) and ``assign_events`` decides. The decisions are returned as
rows for ``Store.persist`` to write in the run's one transaction with the items, so a run
killed at any point stores both or neither.

With ``events`` off nothing here runs and the model is never loaded. When the model cannot
be loaded (``EventModelMissing``: the package or its weights absent), the run keeps its
items without an event: the error goes into the run report (the run ends ``partial``, exit
code 3) and the log, and the next run tries again for its own items. Items kept without an
event stay without one (docs/events.md).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache

from feedmd.errors import EventModelMissing
from feedmd.events.encoder import E5Encoder, Encoder
from feedmd.events.grouper import (
    MAX_CANDIDATES,
    EventItem,
    EventWindow,
    MemoryWindow,
    assign_events,
)
from feedmd.events.vectors import as_stored, to_stored
from feedmd.models import Candidate, Decision, Stage1Result
from feedmd.settings import Settings
from feedmd.store import Store
from feedmd.store.events import EventRow, Ref

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EventOutcome:
    """What the event step decided: one row per kept item to store, how many joined an
    earlier item's event, and the error that kept the step from running (None when it
    ran or was off)."""

    rows: tuple[EventRow, ...] = ()
    joined: int = 0
    error: str | None = None

    @property
    def opened(self) -> int:
        """Items that opened an event of their own."""
        return len(self.rows) - self.joined


@lru_cache(maxsize=4)
def encoder_for(model_path: str) -> E5Encoder:
    """One encoder per weight file for the process: a second run in the same process
    (serve's scheduler, the tests) does not map the weights again."""
    return E5Encoder(model_path)


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
) -> EventOutcome:
    """Place the run's kept items in events (see the module docstring)."""
    if not settings.events:
        return EventOutcome()
    kept = kept_candidates(stage, final)
    if not kept:
        return EventOutcome()
    encoder = encoder or encoder_for(settings.event_model_path)
    try:
        vectors = encoder.encode([c.entry.title for c in kept])
    except EventModelMissing as exc:
        log.error("events: %s; %d kept items stored without an event", exc, len(kept))
        return EventOutcome(error=str(exc))
    scopes: dict[tuple[str, str | None], list[int]] = {}
    for n, candidate in enumerate(kept):
        feed = candidate.entry.feed if settings.dedup_scope == "feed" else None
        scopes.setdefault((candidate.entry.org, feed), []).append(n)
    since = now - timedelta(hours=settings.dedup_window_hours)
    rows: list[EventRow] = []
    joined = 0
    for (org, feed), members in scopes.items():
        items = [EventItem(kept[n].key, kept[n].entry.title, vectors[n]) for n in members]
        window = _window(store, org, feed, since, encoder.name, items, settings)
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
    return EventOutcome(tuple(rows), joined)


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
        as_stored([item.vector for item in items]), MAX_CANDIDATES, settings.event_threshold
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
