"""Catching up: kept items that have no event yet get one in a later run (docs/events.md
"Caught up later").

An item waits for its event when its run kept it while the event model could not load or
encode (``group_events`` records it as pending), or when a reviewer restored it with "Not a
duplicate" (``Store.restore_item``). Each run with events on decides up to
``event_catchup_per_run`` waiting items of its orgs, oldest first, before its own items,
and its store transaction writes their decisions and drops them from the waiting list, so
nothing waits silently for ever and a killed run leaves them waiting.

A caught-up item is decided against the window **as of its own publication time**: the
stored items of its scope published in the ``dedup_window_hours`` before it (and the items
caught up before it in the same run), with the same threshold and vetoes as in a run. It
never joins an item published after it, so it cannot become older than the first item of
the event it joins by a join "from the future", and no stored decision changes: items
published after it that were decided while it waited keep their events (it opens its own
event when nothing earlier matches). The run's own items then see the caught-up items as
part of their window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np

from feedmd.events.grouper import (
    MAX_CANDIDATES,
    EventItem,
    MemoryWindow,
    Neighbour,
    assign_events,
    lowest_threshold,
    merge_neighbours,
)
from feedmd.fingerprints.subject_gate import CasingStats
from feedmd.fingerprints.vectors import as_stored, to_stored
from feedmd.model.encoder import Encoder
from feedmd.settings import Settings
from feedmd.store import EventRow, PendingItem, Store
from feedmd.timeutil import iso, parse_iso

Scope = tuple[str, str | None]


@dataclass
class CaughtUp:
    """What a catch-up decided: rows to store (keyed by ``str(item id)``), the waiting
    rows to drop (the decided items and those no longer kept), how many joined an earlier
    event, how many still wait after this run, and the caught-up items each scope's run
    window holds (published within the run's window)."""

    rows: list[EventRow] = field(default_factory=list)
    resolved: list[int] = field(default_factory=list)
    joined: int = 0
    remaining: int = 0
    windows: dict[Scope, MemoryWindow] = field(default_factory=dict)

    @property
    def count(self) -> int:
        """Items placed in an event by this catch-up."""
        return len(self.rows)


class _Fixed:
    """An ``EventWindow`` of neighbours found already (one caught-up item's stored
    candidates) together with the items caught up before it."""

    def __init__(self, found: list[Neighbour], earlier: MemoryWindow) -> None:
        self._found = found
        self._earlier = earlier

    def nearest(self, vector: np.ndarray, k: int, min_score: float) -> list[Neighbour]:
        stored = [n for n in self._found if n.score >= min_score]
        return merge_neighbours(stored, self._earlier.nearest(vector, k, min_score), k)


def catch_up(
    store: Store,
    orgs: Sequence[str],
    settings: Settings,
    encoder: Encoder,
    run_since_iso: str,
) -> CaughtUp:
    """Decide up to ``event_catchup_per_run`` waiting items of ``orgs`` (see the module
    docstring). Raises what the encoder raises (``EventModelMissing``): the items then
    keep waiting."""
    out = CaughtUp()
    waiting = store.pending_events(orgs, settings.event_catchup_per_run)
    out.remaining = store.pending_event_count(orgs) - len(waiting)
    if not waiting:
        return out
    kept = [p for p in waiting if p.kept]
    out.resolved = [p.item_id for p in waiting if not p.kept]
    if kept:
        vectors = as_stored(encoder.encode([p.title for p in kept]))
        casing = CasingStats.build(p.title for p in kept)
        scopes: dict[Scope, list[int]] = {}
        for n, item in enumerate(kept):
            feed = item.feed if settings.dedup_scope == "feed" else None
            scopes.setdefault((item.org, feed), []).append(n)
        for scope, members in scopes.items():
            _decide_scope(
                store,
                scope,
                [kept[n] for n in members],
                vectors[members],
                settings,
                encoder.name,
                casing,
                run_since_iso,
                out,
            )
    return out


def _decide_scope(
    store: Store,
    scope: Scope,
    items: list[PendingItem],
    vectors: np.ndarray,
    settings: Settings,
    model: str,
    casing: CasingStats,
    run_since_iso: str,
    out: CaughtUp,
) -> None:
    """One scope's waiting items (oldest first), each against the window as of its own
    publication time: one blocked pass over the stored range they need."""
    hours = timedelta(hours=settings.dedup_window_hours)
    starts = [iso(parse_iso(item.published_at) - hours) for item in items]
    limits = [
        ((start, -1), (item.published_at, item.item_id))
        for start, item in zip(starts, items, strict=True)
    ]
    threshold = lowest_threshold(settings)
    org, feed = scope
    scan = store.event_scan(
        org, feed, parse_iso(min(starts)), model, until=parse_iso(items[-1].published_at)
    )
    found = (
        scan.neighbours(vectors, MAX_CANDIDATES, threshold, limits)
        if scan is not None
        else [[] for _ in items]
    )
    decided: list[tuple[PendingItem, str, np.ndarray]] = []  # (item, event id, vector)
    for n, item in enumerate(items):
        earlier = MemoryWindow(dimensions=vectors.shape[1])
        for other, event_id, vector in decided:
            if other.published_at >= starts[n]:
                earlier.add(str(other.item_id), event_id, other.title, vector)
        new = EventItem(str(item.item_id), item.title, vectors[n])
        decision = assign_events([new], _Fixed(found[n], earlier), settings, model, casing)[0]
        decided.append((item, decision.event_id, vectors[n]))
        out.joined += decision.joined is not None
        veto, vetoed = decision.veto, None
        if veto is not None:
            reason, _, rest = veto.rpartition(" (nearest ")
            if reason and rest.endswith(")"):
                veto, vetoed = reason, int(rest[:-1])
        out.rows.append(
            EventRow(
                key=str(item.item_id),
                vector=to_stored(vectors[n]),
                event=int(decision.event_id),
                joined=None if decision.joined is None else int(decision.joined),
                score=decision.score,
                threshold=decision.threshold,
                model=decision.model,
                veto=veto,
                vetoed=vetoed,
            )
        )
        out.resolved.append(item.item_id)
        if item.published_at >= run_since_iso:
            window = out.windows.setdefault(scope, MemoryWindow(dimensions=vectors.shape[1]))
            window.add(str(item.item_id), decision.event_id, item.title, vectors[n])
