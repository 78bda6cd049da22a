"""The window's TLSH digests packed as columns (migration 0013), kept in step with
``body_digests`` and read back in a few large blobs.

Stage 2 compares each new body with every digest of its scope's window (at the
similar-tier radius about half a window is "within", so no key narrows the set exactly).
Reading ``body_digests`` one row per body cost ~3 us a body in Python (most of a run at
1M items); a pack holds the digests of one org's items whose ids fall in one range of
``PACK_ITEMS`` ids, as ``tlsh_scan.DigestColumns`` blobs, so a 1M-item window is ~250
rows of ~200 KB.

The mechanism (which ranges are sealed, building and refreshing a pack, ``behind``, the
time cut of a pack, the newest range read row by row) is ``range_packs.py``, shared with the
event vector packs; this module says what a digest pack holds (``KIND``) and turns it into
``WindowDigests``. Every writer of ``body_digests`` goes through ``keys.insert_rows`` and
``keys.drop_item_keys``, which call ``refresh``, so every id range of an org below its
newest range is sealed and the newest range, read from ``body_digests`` directly, holds
fewer than ``2 * PACK_ITEMS`` rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from feedmd.fingerprints.tlsh_scan import DigestColumns
from feedmd.store import range_packs
from feedmd.store.range_packs import PackKind
from feedmd.store.schema import Connection, has_table

# Item ids per pack. 4,096: a pack is ~200 KB of blobs (a 1M-item window ~250 rows), and
# re-packing one after an override or a refingerprinted body reads 4,096 rows (~10 ms).
PACK_ITEMS = 4096

I64 = npt.NDArray[np.int64]


@dataclass
class WindowDigests:
    """One org's window digests as columns: item ids, feed ids, the digests, and which
    records are inside the window (None: all of them)."""

    item_ids: I64
    feed_ids: I64
    columns: DigestColumns
    inside: npt.NDArray[np.bool_] | None


def _encode(payloads: list[Any]) -> tuple[bytes, ...]:
    """A range's TLSH digests (raw bytes, in item id order) as the ``heads`` and ``planes``
    blobs of ``DigestColumns``."""
    return DigestColumns.from_raw(b"".join(payloads)).to_bytes()


def _items() -> int:
    """The pack size, read at each call (tests change ``PACK_ITEMS``)."""
    return PACK_ITEMS


KIND = PackKind(
    table="digest_packs",
    base="body_digests",
    scope=("org_id",),
    payload="tlsh",
    blobs=("heads", "planes"),
    encode=_encode,
    items=_items,
)


def _sealed(conn: Connection, org_id: int) -> int | None:
    """The first pack number of the org's newest (unpacked) range; None before any pack."""
    return range_packs.sealed(conn, KIND, (org_id,))


def _build(conn: Connection, org_id: int, pack: int) -> None:
    """(Re)write one pack from ``body_digests``."""
    range_packs.build(conn, KIND, (org_id,), pack)


def refresh(conn: Connection, touched: Iterable[tuple[int, int]]) -> None:
    """After ``body_digests`` rows of these ``(org id, item id)`` changed: rebuild the
    sealed packs they fall in, and seal every range of their orgs below the newest one."""
    range_packs.refresh(conn, KIND, [((org_id,), item_id) for org_id, item_id in touched])


def seal(conn: Connection, org_id: int, changed: Iterable[int] = ()) -> None:
    """Rebuild the org's packs among ``changed`` that are sealed, then pack every range
    below the one holding its largest item id."""
    range_packs.seal(conn, KIND, (org_id,), changed)


def behind(conn: Connection) -> list[int]:
    """The orgs whose newest, unpacked range spans more than one pack (a store migrated
    to 0013 with digests already stored): ``seal`` them before reading."""
    if not has_table(conn, KIND.table):  # a store not migrated this far
        return []
    orgs = conn.execute("SELECT id FROM orgs").fetchall()
    return [int(org_id) for (org_id,) in orgs if range_packs.behind(conn, KIND, (org_id,))]


def window_digests(conn: Connection, org_id: int, cutoff: str) -> WindowDigests:
    """Every digest of the org's kept items with ``published_at >= cutoff``, in packs and
    from the newest range; records of packs the cutoff cuts through are masked."""
    ids: list[I64] = []
    feeds: list[I64] = []
    parts: list[DigestColumns] = []
    masks: list[npt.NDArray[np.bool_] | None] = []
    columns = ("item_ids", "feed_ids", "heads", "planes")
    for (item_ids, feed_ids, heads, planes), mask in range_packs.packs(
        conn, KIND, (org_id,), columns, cutoff
    ):
        ids.append(np.frombuffer(item_ids, dtype="<i8").astype(np.int64))
        feeds.append(np.frombuffer(feed_ids, dtype="<i8").astype(np.int64))
        parts.append(DigestColumns.from_bytes(heads, planes))
        masks.append(mask)
    newest = range_packs.newest(conn, KIND, (org_id,), ("feed_id", "published_at", "tlsh"), None)
    tail = [(row[0], row[1], row[3]) for block in newest for row in block if row[2] >= cutoff]
    ids.append(np.array([row[0] for row in tail], dtype=np.int64))
    feeds.append(np.array([row[1] for row in tail], dtype=np.int64))
    parts.append(DigestColumns.from_raw(b"".join(row[2] for row in tail)))
    masks.append(None)
    inside = None
    if any(mask is not None for mask in masks):
        inside = np.concatenate(
            [
                np.ones(len(part), dtype=bool) if mask is None else mask
                for part, mask in zip(parts, masks, strict=True)
            ]
        )
    return WindowDigests(
        item_ids=np.concatenate(ids),
        feed_ids=np.concatenate(feeds),
        columns=DigestColumns.concatenate(parts),
        inside=inside,
    )


def published_of(conn: Connection, org_id: int, item_ids: Iterable[int]) -> dict[int, str]:
    """The publication time of these items' digest rows (for window order among ties)."""
    found: dict[int, str] = {}
    wanted = sorted(set(item_ids))
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ",".join("?" * len(chunk))
        found.update(
            conn.execute(
                f"SELECT item_id, published_at FROM body_digests WHERE org_id = ?"
                f" AND item_id IN ({marks})",
                (org_id, *chunk),
            ).fetchall()
        )
    return found
