"""The window's event vectors packed many to a row (migration 0018), kept in step with
``item_events`` and read back in a few large blobs.

A run compares its new headlines with every vector of its scope's window. Read one row per
item, 100,000 vectors cost 0.3-0.8 s of the database handing rows to Python (docs/events.md
"Cost"); a pack holds the vectors of one org's items of one model whose ids fall in one
range of ``PACK_ITEMS`` ids, as blobs (item ids, feed ids, publication times, vectors), so a
100k window is ~25 rows and a 1M window ~250. The same layout as the TLSH digest packs
(``digest_packs.py``).

Invariants (every writer of ``item_events`` rows calls ``refresh`` in its transaction;
``split_event`` changes only event ids, which packs do not hold):

- every id range of an (org, model) below its newest range has a pack row (possibly
  empty), built from ``item_events`` after its last change ("sealed");
- the newest range (the largest pack number + 1 and up) has no pack and is read from
  ``item_events`` directly: it holds fewer than ``2 * PACK_ITEMS`` ids.

A store whose vectors predate the packs (migration 0018 creates the table empty: a blob of
many rows cannot be built in portable SQL) is packed by its first scan (``behind`` then
``seal``, ``Events.event_scan``), in one transaction; a vector not packed is read from
``item_events``, so nothing is ever missed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from feedmd.events.scan import BLOCK_ROWS, StoredBlock, block_of
from feedmd.events.vectors import split_stored
from feedmd.store.schema import Connection, has_table

# Item ids per pack. 4,096: a pack is ~1.7 MB (4,096 x 388 bytes of vectors and 20 bytes
# of ids and time each), a 100k window ~25 rows and a 1M window ~250; re-packing one after
# an item of an old range gets its event (a restored item caught up) reads 4,096 rows
# (~10 ms).
PACK_ITEMS = 4096

Touched = tuple[int, str, int]  # (org id, model, item id)


def _sealed(conn: Connection, org_id: int, model: str) -> int | None:
    """The first pack number of the newest (unpacked) range; None before any pack."""
    row = conn.execute(
        "SELECT MAX(pack) FROM event_packs WHERE org_id = ? AND model = ?", (org_id, model)
    ).fetchone()
    return None if row[0] is None else int(row[0]) + 1


def _build(conn: Connection, org_id: int, model: str, pack: int) -> None:
    """(Re)write one pack from ``item_events``."""
    rows = conn.execute(
        "SELECT item_id, feed_id, published_at, vector FROM item_events"
        " WHERE org_id = ? AND model = ? AND item_id >= ? AND item_id < ? ORDER BY item_id",
        (org_id, model, pack * PACK_ITEMS, (pack + 1) * PACK_ITEMS),
    ).fetchall()
    published = [str(row[2]).encode("ascii") for row in rows]
    width = max(map(len, published), default=1)
    conn.execute(
        "INSERT INTO event_packs (org_id, model, pack, oldest, newest, records, width,"
        " item_ids, feed_ids, published, vectors) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (org_id, model, pack) DO UPDATE SET oldest = excluded.oldest,"
        " newest = excluded.newest, records = excluded.records, width = excluded.width,"
        " item_ids = excluded.item_ids, feed_ids = excluded.feed_ids,"
        " published = excluded.published, vectors = excluded.vectors",
        (
            org_id,
            model,
            pack,
            min((str(row[2]) for row in rows), default=""),
            max((str(row[2]) for row in rows), default=""),
            len(rows),
            width,
            np.array([row[0] for row in rows], dtype="<i8").tobytes(),
            np.array([row[1] for row in rows], dtype="<i8").tobytes(),
            np.array(published, dtype=f"S{width}").tobytes(),
            b"".join(bytes(row[3]) for row in rows),
        ),
    )


def _span(conn: Connection, org_id: int, model: str) -> tuple[int, int] | None:
    """The smallest and largest item id of the (org, model)'s vectors; None without any."""
    row = conn.execute(
        "SELECT MIN(item_id), MAX(item_id) FROM item_events WHERE org_id = ? AND model = ?",
        (org_id, model),
    ).fetchone()
    return None if row[1] is None else (int(row[0]), int(row[1]))


def seal(conn: Connection, org_id: int, model: str, changed: Iterable[int] = ()) -> None:
    """Rebuild the packs among ``changed`` that are sealed, then pack every range below the
    one holding the largest item id."""
    sealed = _sealed(conn, org_id, model)
    if sealed is not None:
        for pack in sorted(set(changed)):
            if pack < sealed:
                _build(conn, org_id, model, pack)
    span = _span(conn, org_id, model)
    if span is None:
        return
    first = sealed if sealed is not None else span[0] // PACK_ITEMS
    for pack in range(first, span[1] // PACK_ITEMS):
        _build(conn, org_id, model, pack)


def refresh(conn: Connection, item_ids: Iterable[int]) -> None:
    """After ``item_events`` rows of these items were written: rebuild the sealed packs
    they fall in and seal every range of their (org, model) below the newest one."""
    wanted = sorted(set(item_ids))
    touched: dict[tuple[int, str], set[int]] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for org_id, model, item_id in conn.execute(
            f"SELECT org_id, model, item_id FROM item_events WHERE item_id IN ({marks})",
            chunk,
        ):
            touched.setdefault((int(org_id), str(model)), set()).add(int(item_id) // PACK_ITEMS)
    for (org_id, model), packs in touched.items():
        seal(conn, org_id, model, packs)


def behind(conn: Connection, org_id: int, model: str) -> bool:
    """Whether the (org, model)'s newest, unpacked range spans more than one pack (vectors
    stored before migration 0018): ``seal`` it before reading."""
    if not has_table(conn, "event_packs"):  # a store not migrated this far
        return False
    span = _span(conn, org_id, model)
    if span is None:
        return False
    sealed = _sealed(conn, org_id, model)
    first = sealed if sealed is not None else span[0] // PACK_ITEMS
    return span[1] // PACK_ITEMS > first


def _pack_block(row: Any) -> tuple[StoredBlock, np.ndarray]:
    """One pack row as a block (no copy of its vectors) and its records' feed ids."""
    width, item_ids, feed_ids, published, vectors = row
    codes, inverses = split_stored(memoryview(vectors))
    block = StoredBlock(
        np.frombuffer(item_ids, dtype="<i8").astype(np.int64),
        np.frombuffer(published, dtype=f"S{int(width)}"),
        codes,
        inverses,
    )
    return block, np.frombuffer(feed_ids, dtype="<i8")


def window_blocks(
    conn: Connection,
    org_id: int,
    model: str,
    since: str,
    until: str | None = None,
    feed_id: int | None = None,
) -> Iterator[StoredBlock]:
    """The vectors of the (org, model)'s items published at or after ``since`` (and at or
    before ``until``; of one feed with ``feed_id``): the packs that reach into that time,
    each cut to it, then the newest range's rows in blocks of ``BLOCK_ROWS``."""
    low = since.encode("ascii")
    high = None if until is None else until.encode("ascii")
    bound = "" if until is None else " AND oldest <= ?"
    params: tuple[Any, ...] = (org_id, model, since) + (() if until is None else (until,))
    for oldest, newest, *row in conn.execute(
        "SELECT oldest, newest, width, item_ids, feed_ids, published, vectors FROM event_packs"
        f" WHERE org_id = ? AND model = ? AND newest >= ?{bound} AND records > 0"
        " ORDER BY pack",
        params,
    ):
        block, feeds = _pack_block(row)
        mask = np.ones(len(block), dtype=bool)
        if oldest < since:  # the window's start cuts through this pack
            mask &= block.published >= low
        if high is not None and until is not None and newest > until:
            mask &= block.published <= high
        if feed_id is not None:
            mask &= feeds == feed_id
        yield block.select(mask)
    yield from _newest(conn, org_id, model, since, until, feed_id)


def _newest(
    conn: Connection,
    org_id: int,
    model: str,
    since: str,
    until: str | None,
    feed_id: int | None,
) -> Iterator[StoredBlock]:
    """The newest range's vectors in the window, read row by row (fewer than
    ``2 * PACK_ITEMS`` once packed; every vector of a store not packed yet)."""
    first = (_sealed(conn, org_id, model) or 0) * PACK_ITEMS
    extra = "" if until is None else " AND published_at <= ?"
    extra += "" if feed_id is None else " AND feed_id = ?"
    params = [org_id, model, since, *(() if until is None else (until,))]
    params += [] if feed_id is None else [feed_id]
    after = first - 1
    while True:
        rows = conn.execute(
            "SELECT item_id, vector, published_at FROM item_events"
            " WHERE org_id = ? AND model = ? AND published_at >= ?"
            f"{extra} AND item_id > ? ORDER BY item_id LIMIT ?",
            (*params, after, BLOCK_ROWS),
        ).fetchall()
        if not rows:
            return
        ids, blobs, published = zip(*rows, strict=True)
        yield block_of(ids, [bytes(b) for b in blobs], [str(p) for p in published])
        if len(rows) < BLOCK_ROWS:
            return
        after = int(rows[-1][0])
