"""The window's TLSH digests packed as columns (migration 0013), kept in step with
``body_digests`` and read back in a few large blobs.

Stage 2 compares each new body with every digest of its scope's window (at the
similar-tier radius about half a window is "within", so no key narrows the set exactly).
Reading ``body_digests`` one row per body cost ~3 us a body in Python (most of a run at
1M items); a pack holds the digests of one org's items whose ids fall in one range of
``PACK_ITEMS`` ids, as ``tlsh_scan.DigestColumns`` blobs, so a 1M-item window is ~250
rows of ~200 KB.

Invariants (every writer of ``body_digests`` goes through ``keys.insert_rows`` and
``keys.drop_item_keys``, which call ``refresh``):

- every id range of an org below its newest range has a pack row (possibly empty), built
  from ``body_digests`` after its last change ("sealed");
- the newest range (the org's largest pack number + 1 and up) has no pack and is read from
  ``body_digests`` directly: it holds fewer than ``2 * PACK_ITEMS`` rows.

A pack keeps its records' publication times (fixed-width text, compared as SQLite compares
text) for the packs the window cutoff cuts through; ``oldest`` / ``newest`` say which.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from feedmd.stages.tlsh_scan import DigestColumns
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


def _sealed(conn: Connection, org_id: int) -> int | None:
    """The first pack number of the org's newest (unpacked) range; None before any pack."""
    row = conn.execute("SELECT MAX(pack) FROM digest_packs WHERE org_id = ?", (org_id,)).fetchone()
    return None if row[0] is None else int(row[0]) + 1


def _build(conn: Connection, org_id: int, pack: int) -> None:
    """(Re)write one pack from ``body_digests``."""
    rows = conn.execute(
        "SELECT item_id, feed_id, published_at, tlsh FROM body_digests"
        " WHERE org_id = ? AND item_id >= ? AND item_id < ? ORDER BY item_id",
        (org_id, pack * PACK_ITEMS, (pack + 1) * PACK_ITEMS),
    ).fetchall()
    published = [row[2].encode("utf-8") for row in rows]
    width = max(map(len, published), default=1)
    heads, planes = DigestColumns.from_raw(b"".join(row[3] for row in rows)).to_bytes()
    conn.execute(
        "INSERT INTO digest_packs (org_id, pack, oldest, newest, records, width, item_ids,"
        " feed_ids, heads, planes, published) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (org_id, pack) DO UPDATE SET oldest = excluded.oldest,"
        " newest = excluded.newest, records = excluded.records, width = excluded.width,"
        " item_ids = excluded.item_ids, feed_ids = excluded.feed_ids,"
        " heads = excluded.heads, planes = excluded.planes, published = excluded.published",
        (
            org_id,
            pack,
            min((row[2] for row in rows), default=""),
            max((row[2] for row in rows), default=""),
            len(rows),
            width,
            np.array([row[0] for row in rows], dtype="<i8").tobytes(),
            np.array([row[1] for row in rows], dtype="<i8").tobytes(),
            heads,
            planes,
            np.array(published, dtype=f"S{width}").tobytes(),
        ),
    )


def refresh(conn: Connection, touched: Iterable[tuple[int, int]]) -> None:
    """After ``body_digests`` rows of these ``(org id, item id)`` changed: rebuild the
    sealed packs they fall in, and seal every range of their orgs below the newest one."""
    by_org: dict[int, set[int]] = {}
    for org_id, item_id in touched:
        by_org.setdefault(org_id, set()).add(item_id // PACK_ITEMS)
    for org_id, packs in by_org.items():
        seal(conn, org_id, packs)


def seal(conn: Connection, org_id: int, changed: Iterable[int] = ()) -> None:
    """Rebuild the org's packs among ``changed`` that are sealed, then pack every range
    below the one holding its largest item id."""
    sealed = _sealed(conn, org_id)
    if sealed is not None:
        for pack in sorted(set(changed)):
            if pack < sealed:
                _build(conn, org_id, pack)
    row = conn.execute(
        "SELECT MIN(item_id), MAX(item_id) FROM body_digests WHERE org_id = ?", (org_id,)
    ).fetchone()
    if row[1] is None:
        return
    first = sealed if sealed is not None else int(row[0]) // PACK_ITEMS
    for pack in range(first, int(row[1]) // PACK_ITEMS):
        _build(conn, org_id, pack)


def behind(conn: Connection) -> list[int]:
    """The orgs whose newest, unpacked range spans more than one pack (a store migrated
    to 0013 with digests already stored): ``seal`` them before reading."""
    late: list[int] = []
    if not has_table(conn, "digest_packs"):  # a store not migrated this far
        return late
    orgs = conn.execute("SELECT id FROM orgs").fetchall()
    for (org_id,) in orgs:
        row = conn.execute(
            "SELECT MIN(item_id), MAX(item_id) FROM body_digests WHERE org_id = ?", (org_id,)
        ).fetchone()
        if row[1] is None:
            continue
        sealed = _sealed(conn, org_id)
        first = sealed if sealed is not None else int(row[0]) // PACK_ITEMS
        if int(row[1]) // PACK_ITEMS > first:
            late.append(int(org_id))
    return late


def window_digests(conn: Connection, org_id: int, cutoff: str) -> WindowDigests:
    """Every digest of the org's kept items with ``published_at >= cutoff``, in packs and
    from the newest range; records of packs the cutoff cuts through are masked."""
    ids: list[I64] = []
    feeds: list[I64] = []
    parts: list[DigestColumns] = []
    masks: list[npt.NDArray[np.bool_] | None] = []
    bound = cutoff.encode("utf-8")
    for pack, oldest, item_ids, feed_ids, heads, planes in conn.execute(
        "SELECT pack, oldest, item_ids, feed_ids, heads, planes FROM digest_packs"
        " WHERE org_id = ? AND newest >= ? ORDER BY pack",
        (org_id, cutoff),
    ):
        ids.append(np.frombuffer(item_ids, dtype="<i8").astype(np.int64))
        feeds.append(np.frombuffer(feed_ids, dtype="<i8").astype(np.int64))
        parts.append(DigestColumns.from_bytes(heads, planes))
        mask = None
        if oldest < cutoff:
            width, published = conn.execute(
                "SELECT width, published FROM digest_packs WHERE org_id = ? AND pack = ?",
                (org_id, pack),
            ).fetchone()
            mask = np.frombuffer(published, dtype=f"S{width}") >= bound
        masks.append(mask)
    sealed = _sealed(conn, org_id) or 0
    tail = [
        row
        for row in conn.execute(
            "SELECT item_id, feed_id, published_at, tlsh FROM body_digests"
            " WHERE org_id = ? AND item_id >= ? ORDER BY item_id",
            (org_id, sealed * PACK_ITEMS),
        )
        if row[2] >= cutoff
    ]
    ids.append(np.array([row[0] for row in tail], dtype=np.int64))
    feeds.append(np.array([row[1] for row in tail], dtype=np.int64))
    parts.append(DigestColumns.from_raw(b"".join(row[3] for row in tail)))
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
