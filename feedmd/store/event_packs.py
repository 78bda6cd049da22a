"""The window's event vectors packed many to a row (migration 0018), kept in step with
``item_events`` and read back in a few large blobs.

A run compares its new headlines with every vector of its scope's window. Read one row per
item, 100,000 vectors cost 0.3-0.8 s of the database handing rows to Python (docs/events.md
"Cost"); a pack holds the vectors of one org's items of one model whose ids fall in one
range of ``PACK_ITEMS`` ids, as blobs (item ids, feed ids, publication times, vectors), so a
100k window is ~25 rows and a 1M window ~250.

The mechanism (sealed ranges, building and refreshing a pack, ``behind``, the time cut of a
pack, the newest range read row by row, and its invariants) is ``range_packs.py``, shared
with the TLSH digest packs (``digest_packs.py``); this module says what an event pack holds
(``KIND``) and turns it into ``StoredBlock``s. Every writer of ``item_events`` rows calls
``refresh`` in its transaction (``split_event`` changes only event ids, which packs do not
hold).

A store whose vectors predate the packs (migration 0018 creates the table empty: a blob of
many rows cannot be built in portable SQL) is packed by its first scan (``behind`` then
``seal``, ``Events.event_scan``), in one transaction; a vector not packed is read from
``item_events``, so nothing is ever missed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from feedmd.fingerprints.vector_scan import BLOCK_ROWS, StoredBlock, block_of
from feedmd.fingerprints.vectors import split_stored
from feedmd.store import range_packs
from feedmd.store.range_packs import PackKind
from feedmd.store.schema import Connection

# Item ids per pack. 4,096: a pack is ~1.7 MB (4,096 x 388 bytes of vectors and 20 bytes
# of ids and time each), a 100k window ~25 rows and a 1M window ~250; re-packing one after
# an item of an old range gets its event (a restored item caught up) reads 4,096 rows
# (~10 ms).
PACK_ITEMS = 4096

Touched = tuple[int, str, int]  # (org id, model, item id)


def _encode(payloads: list[Any]) -> tuple[bytes, ...]:
    """A range's stored vectors (in item id order) as the ``vectors`` blob."""
    return (b"".join(bytes(payload) for payload in payloads),)


def _items() -> int:
    """The pack size, read at each call (tests change ``PACK_ITEMS``)."""
    return PACK_ITEMS


KIND = PackKind(
    table="event_packs",
    base="item_events",
    scope=("org_id", "model"),
    payload="vector",
    blobs=("vectors",),
    encode=_encode,
    items=_items,
)


def seal(conn: Connection, org_id: int, model: str, changed: Iterable[int] = ()) -> None:
    """Rebuild the packs among ``changed`` that are sealed, then pack every range below the
    one holding the largest item id."""
    range_packs.seal(conn, KIND, (org_id, model), changed)


def refresh(conn: Connection, item_ids: Iterable[int]) -> None:
    """After ``item_events`` rows of these items were written: rebuild the sealed packs
    they fall in and seal every range of their (org, model) below the newest one."""
    wanted = sorted(set(item_ids))
    touched: list[tuple[tuple[int, str], int]] = []
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for org_id, model, item_id in conn.execute(
            f"SELECT org_id, model, item_id FROM item_events WHERE item_id IN ({marks})",
            chunk,
        ):
            touched.append(((int(org_id), str(model)), int(item_id)))
    range_packs.refresh(conn, KIND, touched)


def behind(conn: Connection, org_id: int, model: str) -> bool:
    """Whether the (org, model)'s newest, unpacked range spans more than one pack (vectors
    stored before migration 0018): ``seal`` it before reading."""
    return range_packs.behind(conn, KIND, (org_id, model))


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
    columns = ("width", "item_ids", "feed_ids", "published", "vectors")
    for row, inside in range_packs.packs(conn, KIND, (org_id, model), columns, since, until):
        block, feeds = _pack_block(row)
        mask = np.ones(len(block), dtype=bool) if inside is None else inside
        if feed_id is not None:
            mask &= feeds == feed_id
        yield block.select(mask)
    where = "" if feed_id is None else " AND feed_id = ?"
    params = () if feed_id is None else (feed_id,)
    for rows in range_packs.newest(
        conn,
        KIND,
        (org_id, model),
        ("vector", "published_at"),
        since,
        until,
        where,
        params,
        BLOCK_ROWS,
    ):
        ids, blobs, published = zip(*rows, strict=True)
        yield block_of(ids, [bytes(b) for b in blobs], [str(p) for p in published])
