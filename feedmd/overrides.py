"""Reviewers' overrides of dedup decisions: "not a duplicate" and "merge".

A wrong merge hides a story from every reader of the feed, and a missed duplicate sends
the same story twice; the people who run feedmd correct both from the review page
(``feedmd/review``). An override changes the stored decision at once and is recorded
(table ``overrides``, migration 0008) with who made it, when, and the decision it
replaced, so the trail stays complete and later runs can respect it:

- ``restore`` (not a duplicate): the item becomes kept, its match is cleared, its
  webhooks are queued like a new kept item's, and its feed's files are rewritten.
- ``merge`` (a missed duplicate): the item becomes a duplicate of the canonical the
  reviewer chose; the items that pointed at it follow it (every duplicate points at a kept
  item), its webhook messages not yet sent are cancelled, and the files are rewritten.

``never_merge_pairs`` and ``forced_merges`` give stage 1 and replay the overrides as
entry keys (``feed \\x1f entry id``, as ``Entry.key``), which survive re-deciding: item ids
belong to one store, an entry's key does not. For one pair of entries the newest override
wins (a merge undone by "not a duplicate" is a never-merge pair, and the reverse).

All SQL of overrides lives here; webhooks and files go through ``feedmd.webhooks`` and
``feedmd.stages.deliver``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import sqlite_utils

from feedmd import deliveries
from feedmd.db import transaction
from feedmd.errors import OverrideError
from feedmd.timeutil import iso, parse_iso

Kind = Literal["not_duplicate", "merge"]
# The rule an overridden item shows in its trail and in `feedmd explain`.
OVERRIDE_RULE = "override"
# The separator of Entry.key (models.py): stage 1 compares entries by this key.
KEY_SEPARATOR = "\x1f"


@dataclass(frozen=True)
class Override:
    """One recorded override: ``item_id`` restored from, or merged into, ``other_item_id``."""

    id: int
    kind: str
    item_id: int
    other_item_id: int
    previous: dict[str, Any]
    created_by: str
    created_at: datetime


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

_STATE_SQL = (
    "SELECT i.id, i.org_id, i.decision, i.stage, i.rule, i.score, i.threshold,"
    " i.matched_item_id, f.name FROM items i JOIN feeds f ON f.id = i.feed_id WHERE i.id = ?"
)


@dataclass(frozen=True)
class _State:
    id: int
    org_id: int
    decision: str
    stage: str
    rule: str | None
    score: float | None
    threshold: float | None
    matched_item_id: int | None
    feed: str

    def previous(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "stage": self.stage,
            "rule": self.rule,
            "score": self.score,
            "threshold": self.threshold,
            "matched_item_id": self.matched_item_id,
        }


def _state(conn: Any, item_id: int) -> _State:
    row = conn.execute(_STATE_SQL, (item_id,)).fetchone()
    if row is None:
        raise OverrideError(f"no item {item_id}")
    return _State(*row)


def _record(
    conn: Any, kind: Kind, item: _State, other_id: int, who: str, now: datetime
) -> Override:
    previous = item.previous()
    cursor = conn.execute(
        "INSERT INTO overrides (kind, org_id, item_id, other_item_id, previous_json,"
        " created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (kind, item.org_id, item.id, other_id, json.dumps(previous), who, iso(now)),
    )
    evidence = {"kind": kind, "other_item_id": other_id, "by": who, "at": iso(now)}
    conn.execute(
        "UPDATE items SET evidence_json = json_set(COALESCE(NULLIF(evidence_json, ''), '{}'),"
        " '$.override', json(?)) WHERE id = ?",
        (json.dumps(evidence), item.id),
    )
    return Override(int(cursor.lastrowid), kind, item.id, other_id, previous, who, now)


def restore(
    db: sqlite_utils.Database,
    item_id: int,
    who: str,
    now: datetime,
    *,
    retry_hours: float = 24.0,
    output: FileOutput | None = None,
) -> Override:
    """ "Not a duplicate": put a dropped item back in its feed.

    The item is marked kept (rule ``override``, no match, no score), the override is
    recorded with ``who`` and ``now``, then its webhooks are queued like a new kept item's
    (each endpoint gets it once, ever) and, with ``output``, the files of its feed and of
    the item it had matched are rewritten (the latter's "also published by" shrinks).
    """
    with transaction(db) as conn:
        item = _state(conn, item_id)
        if item.decision != "duplicate" or item.matched_item_id is None:
            raise OverrideError(f"item {item_id} is {item.decision}, not a duplicate")
        other = _state(conn, item.matched_item_id)
        record = _record(conn, "not_duplicate", item, other.id, who, now)
        conn.execute(
            "UPDATE items SET decision = 'kept', rule = ?, score = NULL, threshold = NULL,"
            " matched_item_id = NULL WHERE id = ?",
            (OVERRIDE_RULE, item_id),
        )
    _queue_webhooks(db, [item_id], retry_hours, now)
    if output is not None:
        rewrite_files(db, {item.feed, other.feed}, output)
    return record


def merge(
    db: sqlite_utils.Database,
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
    with transaction(db) as conn:
        item = _state(conn, item_id)
        if item.decision != "kept":
            raise OverrideError(f"item {item_id} is {item.decision}: only a kept item merges")
        canonical = _state(conn, canonical_id)
        if canonical.decision == "duplicate" and canonical.matched_item_id is not None:
            canonical = _state(conn, canonical.matched_item_id)
        if canonical.decision != "kept":
            raise OverrideError(f"item {canonical.id} is {canonical.decision}: not a canonical")
        if canonical.id == item.id:
            raise OverrideError(f"item {item_id} cannot merge into itself")
        if canonical.org_id != item.org_id:
            raise OverrideError(f"items {item_id} and {canonical.id} are in different orgs")
        record = _record(conn, "merge", item, canonical.id, who, now)
        conn.execute(
            "UPDATE items SET decision = 'duplicate', rule = ?, score = NULL,"
            " threshold = NULL, matched_item_id = ? WHERE id = ?",
            (OVERRIDE_RULE, canonical.id, item_id),
        )
        followers = [
            row[0]
            for row in conn.execute(
                "SELECT DISTINCT f.name FROM items i JOIN feeds f ON f.id = i.feed_id"
                " WHERE i.matched_item_id = ? AND i.decision = 'duplicate'",
                (item_id,),
            )
        ]
        conn.execute(
            "UPDATE items SET matched_item_id = ? WHERE matched_item_id = ?"
            " AND decision = 'duplicate'",
            (canonical.id, item_id),
        )
        conn.execute(
            "UPDATE deliveries SET status = 'failed', next_attempt_at = NULL, last_error = ?"
            " WHERE item_id = ? AND status = 'pending' AND endpoint_id IS NOT NULL AND batch = 0",
            (f"cancelled: merged into item {canonical.id} by {who}", item_id),
        )
    if output is not None:
        rewrite_files(db, {item.feed, canonical.feed, *followers}, output)
    return record


def _queue_webhooks(
    db: sqlite_utils.Database, item_ids: list[int], retry_hours: float, now: datetime
) -> int:
    """Queue the items for their endpoints; the next delivery pass (the server's scheduler
    or the next run) sends them."""
    from feedmd import webhooks  # webhooks imports the renderer, which imports config

    policy = webhooks.WebhookPolicy(retry_hours=retry_hours)
    return webhooks.enqueue_items(db, item_ids, policy, now)


def rewrite_files(db: sqlite_utils.Database, feeds: Iterable[str], output: FileOutput) -> None:
    """Rewrite the JSON Feed and Atom files of ``feeds`` in the output folder, as a run's
    step 6 does for the feeds that gained items."""
    from feedmd.stages import deliver

    for name in sorted(set(feeds)):
        feed = deliveries.find_feed(db, name)
        if feed is None:
            continue
        items = deliveries.kept_items(db, feed=name, limit=output.page_size)
        deliver.write_feed_files(output.directory, feed, items, output.base_url)


# ---- reading overrides -------------------------------------------------------------------


def overrides_of(db: sqlite_utils.Database, item_id: int) -> list[Override]:
    """Every override made on ``item_id`` or naming it as the other item, oldest first."""
    rows = db.conn.execute(
        "SELECT id, kind, item_id, other_item_id, previous_json, created_by, created_at"
        " FROM overrides WHERE item_id = ?1 OR other_item_id = ?1 ORDER BY id",
        (item_id,),
    ).fetchall()
    return [
        Override(row[0], row[1], row[2], row[3], json.loads(row[4]), row[5], parse_iso(row[6]))
        for row in rows
    ]


def _latest_per_pair(db: sqlite_utils.Database) -> dict[frozenset[str], tuple[str, str, str]]:
    """{unordered pair of entry keys: (kind, item key, other key)} of the newest override
    of each pair."""
    rows = db.conn.execute(
        "SELECT o.kind, fa.name, a.entry_id, fb.name, b.entry_id FROM overrides o"
        " JOIN items a ON a.id = o.item_id JOIN feeds fa ON fa.id = a.feed_id"
        " JOIN items b ON b.id = o.other_item_id JOIN feeds fb ON fb.id = b.feed_id"
        " ORDER BY o.id"
    ).fetchall()
    latest: dict[frozenset[str], tuple[str, str, str]] = {}
    for kind, feed_a, entry_a, feed_b, entry_b in rows:
        first, second = entry_key(feed_a, entry_a), entry_key(feed_b, entry_b)
        latest[frozenset((first, second))] = (kind, first, second)
    return latest


def never_merge_pairs(db: sqlite_utils.Database) -> set[tuple[str, str]]:
    """Pairs of entry keys (``Entry.key``) a reviewer said are not duplicates, in both
    orders, so stage 1 and replay test ``(candidate.key, kept.key) in pairs`` and never
    merge them again."""
    pairs: set[tuple[str, str]] = set()
    for kind, first, second in _latest_per_pair(db).values():
        if kind == "not_duplicate":
            pairs |= {(first, second), (second, first)}
    return pairs


def forced_merges(db: sqlite_utils.Database) -> dict[str, str]:
    """{entry key of a missed duplicate: entry key of the canonical it was merged into}, so
    stage 1 and replay mark that entry a duplicate of that canonical (rule ``override``)."""
    return {
        first: second for kind, first, second in _latest_per_pair(db).values() if kind == "merge"
    }
