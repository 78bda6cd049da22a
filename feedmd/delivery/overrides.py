"""Reviewers' overrides of dedup decisions: "not a duplicate" and "merge"; and of event
decisions: "not the same event" (``split_event``).

A wrong merge hides a story from every reader of the feed, and a missed duplicate sends
the same story twice; the people who run feedmd correct both from the review page
(``feedmd/service/review``). An override changes the stored decision at once and is recorded
(table ``overrides``, migration 0008) with who made it, when, and the decision it
replaced, so the trail stays complete and later runs can respect it:

- ``restore`` (not a duplicate): the item becomes kept, its match is cleared, its
  webhooks are queued like a new kept item's, and its feed's files are rewritten.
- ``merge`` (a missed duplicate): the item becomes a duplicate of the canonical the
  reviewer chose; the items that pointed at it follow it (every duplicate points at a kept
  item), its webhook messages not yet sent are cancelled, and the files are rewritten.

``never_merge_pairs`` and ``forced_merges`` read the overrides as entry keys (``feed \\x1f
entry id``, as ``Entry.key``), which survive re-deciding: item ids belong to one store, an
entry's key does not. For one pair of entries the newest override wins (a merge undone by
"not a duplicate" is a never-merge pair, and the reverse). Nothing feeds them to stage 1 yet:
a replay keeps an overridden item's decision by its rule (``tools/replay.py``), and a later run
never re-decides a stored item, so the overrides already stand without them.

The SQL of overrides lives in ``feedmd/store/audit.py``; webhooks and files go through
``feedmd.delivery.webhooks`` and ``feedmd.delivery.deliver``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from feedmd.store import EventOverride, Override, Store

# The separator of Entry.key (models.py): stage 1 compares entries by this key.
KEY_SEPARATOR = "\x1f"


@dataclass(frozen=True)
class FileOutput:
    """Where a run writes feed files; an override rewrites the files it changes there."""

    directory: str
    base_url: str
    page_size: int = 100


def entry_key(feed: str, entry_id: str) -> str:
    """The key stage 1 knows an entry by (``Entry.key``)."""
    return f"{feed}{KEY_SEPARATOR}{entry_id}"


# ---- applying an override ------------------------------------------------------------------


def restore(
    store: Store,
    item_id: int,
    who: str,
    now: datetime,
    *,
    retry_hours: float = 24.0,
    output: FileOutput | None = None,
) -> Override:
    """ "Not a duplicate": put a dropped item back in its feed.

    The item is marked kept (rule ``override``, no match, no score), the override is
    recorded with ``who`` and ``now``, then its webhooks are queued for every endpoint,
    per-item or batch, once for this override (``feedmd.delivery.corrections``: a restore after a
    merge sends it again) and, with ``output``, the files of its feed and of the item it
    had matched are rewritten (the latter's "also published by" shrinks).
    """
    record, feeds = store.restore_item(item_id, who, now)
    from feedmd.delivery.corrections import enqueue_correction  # webhooks -> render -> config

    enqueue_correction(store, item_id, record.id, retry_hours, now)
    if output is not None:
        rewrite_files(store, feeds, output)
    return record


def merge(
    store: Store,
    item_id: int,
    canonical_id: int,
    who: str,
    now: datetime,
    *,
    output: FileOutput | None = None,
) -> Override:
    """ "Merge": mark a kept item a duplicate of ``canonical_id`` (a missed duplicate).

    A canonical that is itself a duplicate is followed to its kept item, and the items
    that pointed at ``item_id`` are pointed at the canonical too: a duplicate always points
    at a kept item. Both must be in one org (dedup never crosses orgs). Webhook messages
    of the item not yet sent are cancelled (marked failed with the reason); ones already
    delivered cannot be taken back.
    """
    record, feeds = store.merge_item(item_id, canonical_id, who, now)
    if output is not None:
        rewrite_files(store, feeds, output)
    return record


def split_event(
    store: Store,
    item_id: int,
    who: str,
    now: datetime,
    *,
    output: FileOutput | None = None,
) -> EventOverride:
    """ "Not the same event": the item leaves its event and opens its own (when it was the
    event's first item, the oldest remaining member becomes the others' canonical).

    Recorded (table ``event_overrides``) with ``who``, ``now`` and the event decision it
    replaced; with ``output`` the files of every feed with a member of the event are
    rewritten (their ``_feedmd.event`` and related links change, and a feed in
    'one-per-event' mode may now show the item). No webhook is sent: the item was
    delivered already, and it stays kept.
    """
    record, feeds = store.split_event(item_id, who, now)
    if output is not None:
        rewrite_files(store, feeds, output)
    return record


def rewrite_files(store: Store, feeds: Iterable[str], output: FileOutput) -> None:
    """Rewrite the JSON Feed and Atom files of ``feeds`` in the output folder, as a run's
    step 6 does for the feeds that gained items."""
    from feedmd.delivery import deliver

    for name in sorted(set(feeds)):
        feed = store.find_feed(name)
        if feed is None:
            continue
        items = store.kept_items(feed=name, limit=output.page_size)
        deliver.write_feed_files(output.directory, feed, items, output.base_url)


# ---- reading overrides -------------------------------------------------------------------


def overrides_of(store: Store, item_id: int) -> list[Override]:
    """Every override made on ``item_id`` or naming it as the other item, oldest first."""
    return store.overrides_of(item_id)


def _latest_per_pair(store: Store) -> dict[frozenset[str], tuple[str, str, str]]:
    """{unordered pair of entry keys: (kind, item key, other key)} of the newest override
    of each pair."""
    latest: dict[frozenset[str], tuple[str, str, str]] = {}
    for pair in store.override_pairs():
        first, second = entry_key(*pair.item), entry_key(*pair.other)
        latest[frozenset((first, second))] = (pair.kind, first, second)
    return latest


def never_merge_pairs(store: Store) -> set[tuple[str, str]]:
    """Pairs of entry keys (``Entry.key``) a reviewer said are not duplicates, in both
    orders (``(a, b) in pairs`` tests a pair either way round)."""
    pairs: set[tuple[str, str]] = set()
    for kind, first, second in _latest_per_pair(store).values():
        if kind == "not_duplicate":
            pairs |= {(first, second), (second, first)}
    return pairs


def forced_merges(store: Store) -> dict[str, str]:
    """{entry key of a missed duplicate: entry key of the canonical a reviewer merged it
    into}."""
    return {
        first: second for kind, first, second in _latest_per_pair(store).values() if kind == "merge"
    }
