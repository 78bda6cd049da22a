"""One entry per event in an export (the LLM bundle, JSON Lines, the digest).

Items of one event in a selection fold into one: the event's canonical item when the
selection holds it, else its earliest item there; it keeps its place in the selection's
order, and its ``event`` lists the other members (``also_covered_by`` in the bundle, "Also
covered by" in the digest). An item of the event kept after the export was pulled comes
in a later pull as an entry of its own, naming the same event id.
"""

from __future__ import annotations

from collections.abc import Sequence

from feedmd.store import OutputItem


def one_per_event(items: Sequence[OutputItem]) -> list[OutputItem]:
    """``items`` with each event's other members left out (items in no event stay)."""
    lead: dict[int, OutputItem] = {}
    for item in items:
        if item.event is None:
            continue
        event = item.event
        current = lead.get(event.event_id)
        if current is None or _rank(item) < _rank(current):
            lead[event.event_id] = item
    return [item for item in items if item.event is None or lead[item.event.event_id] is item]


def _rank(item: OutputItem) -> tuple[int, object, int]:
    """Canonical first, then the earliest published."""
    canonical = item.event is not None and item.event.canonical.item_id == item.item_id
    return (0 if canonical else 1, item.published, item.item_id)
