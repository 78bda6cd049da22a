"""The store's side of events (docs/events.md, migration 0014): each kept item's headline
vector and event decision, the window a run's new items are compared with, the events
the outputs show, and reviewers' "not the same event".

The window is read as packs of many vectors (``event_packs.py``, migration 0018) cut to
the window's time, then the newest rows, one block at a time, so the whole window is never
held at once: a run's new items are compared with every block in one pass
(``EventScan.prepare``), and the grouper then asks for each new item's neighbours
(``EventScan.nearest``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from feedmd.errors import OverrideError
from feedmd.fingerprints.vector_scan import StoredBlock, scan_blocks
from feedmd.models import Neighbour
from feedmd.store import event_packs
from feedmd.store.schema import Connected, Connection, chunks, transaction
from feedmd.timeutil import iso

# Members of an event an output item lists beside itself. An event of a busy story holds
# dozens of items (86 on the development headlines); a reader needs a handful of other
# outlets, and every item of a 100-item page repeating 85 others would swell the file.
MEMBERS_SHOWN = 20

# An item stored in this run is referred to by its entry key (str); a stored item by id.
Ref = str | int


@dataclass(frozen=True)
class EventRow:
    """One kept item's event decision as a run writes it: the item (entry key of this run),
    its stored vector, the event and the item joined (entry keys of this run or stored item
    ids), and what decided."""

    key: str
    vector: bytes
    event: Ref
    joined: Ref | None
    score: float
    threshold: float
    model: str
    veto: str | None
    vetoed: Ref | None = None  # the candidate the veto refused


@dataclass(frozen=True)
class EventMember:
    """A kept item of an event as the outputs list it; ``score`` is its cosine to the item
    it joined (None for the item that opened the event)."""

    item_id: int
    feed: str
    org: str
    url: str
    title: str
    publisher: str
    score: float | None


@dataclass(frozen=True)
class EventInfo:
    """An output item's event: its id (the canonical item's id), the canonical item, the
    other kept members (up to ``MEMBERS_SHOWN``, oldest first) and how many items the
    event holds in all."""

    event_id: int
    canonical: EventMember
    others: tuple[EventMember, ...]
    size: int


@dataclass(frozen=True)
class ItemEvent:
    """An item's stored event decision (``feedmd explain``, the review page)."""

    item_id: int
    event_id: int
    joined_item_id: int | None
    score: float
    threshold: float
    model: str
    veto: str | None
    split_by: str | None = None  # the reviewer who split it from its event, if any
    split_from: int | None = None


@dataclass(frozen=True)
class EventOverride:
    """A recorded "not the same event": ``item_id`` left event ``previous_event_id``."""

    id: int
    item_id: int
    previous_event_id: int
    previous: dict[str, Any]
    created_by: str
    created_at: str


def write_events(conn: Connection, rows: Sequence[EventRow], ids: Mapping[str, int]) -> None:
    """Store a run's event decisions, inside the run's transaction (``RunWrites.persist``),
    its entry keys turned into the item ids just given. Rows of items not stored (a key
    without an id) are skipped."""

    def item(ref: Ref | None) -> int | None:
        if ref is None:
            return None
        return int(ref) if isinstance(ref, int) else ids.get(ref)

    values = []
    for row in rows:
        item_id, event_id = ids.get(row.key), item(row.event)
        if item_id is None or event_id is None:
            continue
        veto = row.veto
        if veto is not None and row.vetoed is not None:
            veto = f"{veto} (nearest item {item(row.vetoed)})"
        joined = item(row.joined)
        values.append(
            (item_id, event_id, joined, row.score, row.threshold, row.model, veto, row.vector)
        )
    conn.executemany(
        "INSERT INTO item_events (item_id, org_id, feed_id, published_at, event_id,"
        " joined_item_id, score, threshold, model, veto, vector)"
        " SELECT ?, i.org_id, i.feed_id, i.published_at, ?, ?, ?, ?, ?, ?, ? FROM items i"
        " WHERE i.id = ? ON CONFLICT (item_id) DO NOTHING",
        [(*value, value[0]) for value in values],
    )
    event_packs.refresh(conn, [value[0] for value in values])


class EventScan:
    """The stored window of one scope as an ``EventWindow``: the vectors of the kept items
    of an org (and feed, in the feed scope) published since a cutoff, decided by one model.

    ``prepare`` compares all of a run's query vectors with the window in one pass over its
    packs and newest rows (``event_packs.window_blocks``); ``nearest`` then answers from
    that pass (a vector not prepared is scanned alone)."""

    def __init__(
        self,
        conn: Connection,
        org_id: int,
        feed_id: int | None,
        since: datetime,
        model: str,
        until: datetime | None = None,
    ) -> None:
        self._conn = conn
        self._org_id = org_id
        self._feed_id = feed_id
        self._since = iso(since)
        self._until = None if until is None else iso(until)
        self._model = model
        self._found: dict[bytes, list[Neighbour]] = {}
        self.rows_read = 0  # stored vectors compared (packed or not)

    def _blocks(self) -> Iterator[StoredBlock]:
        """The window's vectors, pack by pack then the newest rows (no join with items:
        an item a reviewer merged away since is dropped from the few hits, ``_details``)."""
        for block in event_packs.window_blocks(
            self._conn, self._org_id, self._model, self._since, self._until, self._feed_id
        ):
            self.rows_read += len(block)
            yield block

    def neighbours(
        self,
        queries: np.ndarray,
        k: int,
        min_score: float,
        limits: Sequence[tuple[tuple[str, int], tuple[str, int]]] | None = None,
    ) -> list[list[Neighbour]]:
        """Each query's up to ``k`` stored neighbours with cosine >= ``min_score``, best
        first, in one pass over the window; with ``limits``, query n only sees the items
        whose (published_at, item id) is ``>= low`` and ``< high`` of its pair."""
        hits = self.hits(queries, k, min_score, limits)
        details = self._details({int(i) for found in hits for i, _ in found})
        return [
            [
                Neighbour(str(item_id), *details[int(item_id)], score)
                for item_id, score in found
                if int(item_id) in details
            ]
            for found in hits
        ]

    def hits(
        self,
        queries: np.ndarray,
        k: int,
        min_score: float,
        limits: Sequence[tuple[tuple[str, int], tuple[str, int]]] | None = None,
    ) -> list[list[tuple[int, float]]]:
        """Each query's up to ``k`` (stored item id, cosine) with cosine >= ``min_score``,
        best first, in one pass over the window, kept or not (``neighbours`` keeps the
        items kept now); ``limits`` as in ``neighbours``."""
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        if not len(queries):
            return []
        return scan_blocks(queries, self._blocks(), k, min_score, limits)

    def prepare(self, queries: np.ndarray, k: int, min_score: float) -> None:
        """Compare every row of ``queries`` (vectors in their stored form, as the grouper
        compares them) with the whole window in one pass and keep each one's neighbours."""
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        for vector, found in zip(queries, self.neighbours(queries, k, min_score), strict=True):
            self._found[vector.tobytes()] = found

    def _details(self, item_ids: set[int]) -> dict[int, tuple[str, str]]:
        """{item id: (its event id, its title)} of the items among ``item_ids`` that are
        kept now."""
        out: dict[int, tuple[str, str]] = {}
        for chunk in chunks(sorted(item_ids)):
            marks = ",".join("?" * len(chunk))
            for item_id, event_id, title in self._conn.execute(
                "SELECT e.item_id, e.event_id, i.title_raw FROM item_events e"
                f" JOIN items i ON i.id = e.item_id WHERE e.item_id IN ({marks})"
                " AND i.decision = 'kept'",
                list(chunk),
            ):
                out[int(item_id)] = (str(event_id), str(title))
        return out

    def nearest(self, vector: np.ndarray, k: int, min_score: float) -> list[Neighbour]:
        """Up to ``k`` stored items with cosine >= ``min_score``, best first."""
        key = np.asarray(vector, dtype=np.float32).tobytes()
        if key not in self._found:
            self.prepare(np.asarray(vector, dtype=np.float32), k, min_score)
        return [n for n in self._found[key] if n.score >= min_score][:k]


_MEMBER_SELECT = (
    "SELECT e.event_id, i.id, f.name, o.name, i.url_raw, i.title_raw, i.publisher,"
    " e.joined_item_id, e.score FROM item_events e JOIN items i ON i.id = e.item_id"
    " JOIN feeds f ON f.id = i.feed_id JOIN orgs o ON o.id = i.org_id"
)


def _member(row: Any) -> EventMember:
    score = float(row[8]) if row[7] is not None else None
    return EventMember(int(row[1]), row[2], row[3], row[4], row[5], row[6], score)


def events_of(conn: Connection, item_ids: Sequence[int]) -> dict[int, EventInfo]:
    """{item id: its event} for the items among ``item_ids`` that have one; members are
    the event's items kept now, oldest first."""
    event_of: dict[int, int] = {}
    for chunk in chunks(list(dict.fromkeys(item_ids))):
        marks = ",".join("?" * len(chunk))
        for item_id, event_id in conn.execute(
            f"SELECT item_id, event_id FROM item_events WHERE item_id IN ({marks})", list(chunk)
        ):
            event_of[int(item_id)] = int(event_id)
    members: dict[int, list[EventMember]] = {e: [] for e in event_of.values()}
    for chunk in chunks(sorted(members)):
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(
            f"{_MEMBER_SELECT} WHERE e.event_id IN ({marks}) AND i.decision = 'kept'"
            " ORDER BY i.published_at, i.id",
            list(chunk),
        ):
            members[int(row[0])].append(_member(row))
    out: dict[int, EventInfo] = {}
    for item_id, event_id in event_of.items():
        kept = members[event_id]
        if not kept:
            continue
        canonical = next((m for m in kept if m.item_id == event_id), kept[0])
        others = tuple(m for m in kept if m.item_id != item_id)
        out[item_id] = EventInfo(event_id, canonical, others[:MEMBERS_SHOWN], len(kept))
    return out


class Events(Connected):
    """Event reads and writes beyond a run's own (which ``persist`` makes)."""

    def event_scan(
        self,
        org: str,
        feed: str | None,
        since: datetime,
        model: str,
        until: datetime | None = None,
    ) -> EventScan | None:
        """The stored event window of an org (of one of its feeds with ``feed``) since
        ``since`` (and published at or before ``until``), for ``model``; None when the org
        (or feed) is not stored yet."""
        row = self._conn.execute("SELECT id FROM orgs WHERE name = ?", (org,)).fetchone()
        if row is None:
            return None
        feed_id = None
        if feed is not None:
            found = self._conn.execute("SELECT id FROM feeds WHERE name = ?", (feed,)).fetchone()
            if found is None:
                return None
            feed_id = int(found[0])
        self._pack_behind(int(row[0]), model)
        return EventScan(self._conn, int(row[0]), feed_id, since, model, until=until)

    def _pack_behind(self, org_id: int, model: str) -> None:
        """Pack the (org, model)'s vectors stored before migration 0018, in one transaction
        (the usual case, packed already, takes no write lock)."""
        if not event_packs.behind(self._conn, org_id, model):
            return
        if self._conn.in_transaction:
            event_packs.seal(self._conn, org_id, model)
            return
        with transaction(self._db) as conn:
            event_packs.seal(conn, org_id, model)

    def events_of(self, item_ids: Sequence[int]) -> dict[int, EventInfo]:
        """{item id: its event} (see ``events_of``)."""
        return events_of(self._conn, item_ids)

    def item_event(self, item_id: int) -> ItemEvent | None:
        """An item's event decision, with the reviewer's split if one was made."""
        row = self._conn.execute(
            "SELECT item_id, event_id, joined_item_id, score, threshold, model, veto"
            " FROM item_events WHERE item_id = ?",
            (item_id,),
        ).fetchone()
        if row is None:
            return None
        split = self._conn.execute(
            "SELECT created_by, previous_event_id FROM event_overrides WHERE item_id = ?"
            " ORDER BY id DESC LIMIT 1",
            (item_id,),
        ).fetchone()
        return ItemEvent(*row, *(split or (None, None)))

    def joined_events(self, item_ids: Sequence[int]) -> list[ItemEvent]:
        """The event decisions of the items among ``item_ids`` that joined an earlier
        item's event (the review page's run view), in the order of ``item_ids``."""
        found: dict[int, ItemEvent] = {}
        for chunk in chunks(list(dict.fromkeys(item_ids))):
            marks = ",".join("?" * len(chunk))
            for row in self._conn.execute(
                "SELECT item_id, event_id, joined_item_id, score, threshold, model, veto"
                f" FROM item_events WHERE item_id IN ({marks}) AND joined_item_id IS NOT NULL",
                list(chunk),
            ):
                found[int(row[0])] = ItemEvent(*row)
        return [found[i] for i in dict.fromkeys(item_ids) if i in found]

    def event_member_ids(self, event_id: int) -> list[int]:
        """The ids of every kept item of an event, oldest first (the review page)."""
        return [
            int(row[0])
            for row in self._conn.execute(
                "SELECT e.item_id FROM item_events e JOIN items i ON i.id = e.item_id"
                " WHERE e.event_id = ? AND i.decision = 'kept' ORDER BY i.published_at, i.id",
                (event_id,),
            )
        ]

    def set_event_modes(self, modes: Mapping[str, str]) -> None:
        """Store each feed's event_mode (from the configuration)."""
        with transaction(self._db) as conn:
            conn.executemany(
                "UPDATE feeds SET event_mode = ? WHERE name = ?",
                [(mode, name) for name, mode in modes.items()],
            )

    def split_event(self, item_id: int, who: str, now: datetime) -> tuple[EventOverride, set[str]]:
        """ "Not the same event": the item leaves its event and opens its own; when it was
        the event's canonical item, the oldest remaining kept member becomes the canonical
        of the rest. Recorded with who, when and the decision replaced; returns the
        override and the feeds whose files change (every feed with a member)."""
        with transaction(self._db) as conn:
            row = conn.execute(
                "SELECT e.event_id, e.joined_item_id, e.score, e.threshold, e.model, e.veto,"
                " e.org_id FROM item_events e WHERE e.item_id = ?",
                (item_id,),
            ).fetchone()
            if row is None:
                raise OverrideError(f"item {item_id} is in no event")
            event_id = int(row[0])
            members = [
                int(r[0])
                for r in conn.execute(
                    "SELECT e.item_id FROM item_events e JOIN items i ON i.id = e.item_id"
                    " WHERE e.event_id = ? AND e.item_id != ? ORDER BY i.published_at, i.id",
                    (event_id, item_id),
                )
            ]
            if not members:
                raise OverrideError(f"item {item_id} is alone in its event")
            feeds = {
                str(r[0])
                for r in conn.execute(
                    "SELECT DISTINCT f.name FROM item_events e JOIN items i ON i.id = e.item_id"
                    " JOIN feeds f ON f.id = i.feed_id WHERE e.event_id = ?",
                    (event_id,),
                )
            }
            names = ("event_id", "joined_item_id", "score", "threshold", "model", "veto")
            previous = dict(zip(names, row[:6], strict=True))
            if event_id == item_id:  # the canonical leaves: the oldest other member leads
                conn.execute(
                    "UPDATE item_events SET event_id = ? WHERE event_id = ? AND item_id != ?",
                    (members[0], event_id, item_id),
                )
            conn.execute(
                "UPDATE item_events SET event_id = ?, joined_item_id = NULL WHERE item_id = ?",
                (item_id, item_id),
            )
            cursor = conn.execute(
                "INSERT INTO event_overrides (org_id, item_id, previous_event_id,"
                " previous_json, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?)"
                " RETURNING id",
                (row[6], item_id, event_id, json.dumps(previous), who, iso(now)),
            )
            override_id = int(cursor.fetchone()[0])
        record = EventOverride(override_id, item_id, event_id, previous, who, iso(now))
        return record, feeds

    def event_overrides_of(self, item_id: int) -> list[EventOverride]:
        """Every "not the same event" recorded on ``item_id``, oldest first."""
        rows = self._conn.execute(
            "SELECT id, item_id, previous_event_id, previous_json, created_by, created_at"
            " FROM event_overrides WHERE item_id = ? ORDER BY id",
            (item_id,),
        ).fetchall()
        return [EventOverride(r[0], r[1], r[2], json.loads(r[3]), r[4], r[5]) for r in rows]
