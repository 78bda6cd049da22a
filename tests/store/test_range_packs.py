"""The shared range-pack mechanism (feedmd/store/range_packs.py), tested through a pack
kind of its own over the store's real ``body_digests`` / ``digest_packs`` tables: its blob
is the range's payloads joined, so a pack's content is plain to check. Which ranges are
sealed (both sides of one and two packs' worth of ids), a sealed pack rebuilt after a
changed row, ``behind``, the time cut of a pack the window's bounds cut through, and the
newest range read row by row."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from feedmd.store import Store, digest_packs, range_packs
from feedmd.store.schema import Connection

pytestmark = pytest.mark.both_backends

SIZE = 8  # item ids a pack (small: a few dozen rows cover several packs)
ORG = 1
OTHER = 2  # a second scope in the same tables, never touched by ORG's calls


def _joined(payloads: list[Any]) -> tuple[bytes, ...]:
    """The test kind's blobs: the payloads joined, and an empty second blob."""
    return b"".join(bytes(payload) for payload in payloads), b""


# The digest packs' tables and scope, with this test's own blobs and pack size.
KIND = dataclasses.replace(digest_packs.KIND, encode=_joined, items=lambda: SIZE)


def _time(item_id: int) -> str:
    """Publication times rise with the item id, one minute apart."""
    return f"2026-03-01T{item_id // 60:02d}:{item_id % 60:02d}:00+00:00"


def _payload(item_id: int, version: int = 0) -> bytes:
    return bytes([item_id % 256, version])


def _insert(conn: Connection, org_id: int, item_ids: range | list[int]) -> None:
    """Base rows written without ``refresh`` (as a store written before its packs)."""
    with conn:
        for item_id in item_ids:
            conn.execute(
                "INSERT INTO body_digests (org_id, published_at, item_id, feed_id, tlsh)"
                " VALUES (?, ?, ?, ?, ?)",
                (org_id, _time(item_id), item_id, item_id % 2, _payload(item_id)),
            )


def _packs(conn: Connection, org_id: int = ORG) -> dict[int, tuple[Any, ...]]:
    """pack -> (oldest, newest, records, item ids, payloads joined) of the scope's packs."""
    rows = conn.execute(
        "SELECT pack, oldest, newest, records, item_ids, heads FROM digest_packs"
        " WHERE org_id = ? ORDER BY pack",
        (org_id,),
    ).fetchall()
    return {
        int(pack): (
            oldest,
            newest,
            int(records),
            np.frombuffer(bytes(ids), dtype="<i8").tolist(),
            bytes(heads),
        )
        for pack, oldest, newest, records, ids, heads in rows
    }


def _expected(item_ids: list[int], pack: int, version: dict[int, int] | None = None) -> Any:
    inside = [i for i in item_ids if pack * SIZE <= i < (pack + 1) * SIZE]
    versions = version or {}
    return (
        min(map(_time, inside), default=""),
        max(map(_time, inside), default=""),
        len(inside),
        inside,
        b"".join(_payload(i, versions.get(i, 0)) for i in inside),
    )


def _newest_ids(conn: Connection, org_id: int = ORG, since: str = "", **kw: Any) -> list[int]:
    return [
        int(row[0])
        for block in range_packs.newest(conn, KIND, (org_id,), ("published_at",), since, **kw)
        for row in block
    ]


@pytest.mark.parametrize(
    ("largest", "sealed"),
    [
        (SIZE - 1, []),  # one range's worth of ids: nothing below the newest range
        (SIZE, [0]),  # the first id of the second range seals the first
        (2 * SIZE - 1, [0]),
        (2 * SIZE, [0, 1]),
    ],
)
def test_seal_packs_every_range_below_the_newest(
    store: Store, largest: int, sealed: list[int]
) -> None:
    conn = store._conn
    ids = list(range(largest + 1))
    _insert(conn, ORG, ids)
    _insert(conn, OTHER, range(5 * SIZE))
    assert range_packs.behind(conn, KIND, (ORG,)) == bool(sealed)
    with conn:
        range_packs.seal(conn, KIND, (ORG,))
    assert _packs(conn) == {pack: _expected(ids, pack) for pack in sealed}
    assert _packs(conn, OTHER) == {}  # another scope is not sealed by this one's call
    assert range_packs.sealed(conn, KIND, (ORG,)) == (sealed[-1] + 1 if sealed else None)
    assert not range_packs.behind(conn, KIND, (ORG,))
    newest = _newest_ids(conn)
    assert newest == [i for i in ids if i >= len(sealed) * SIZE]
    assert len(newest) < 2 * SIZE


def test_seal_starts_at_the_first_id_and_keeps_empty_ranges(store: Store) -> None:
    """No pack below the scope's smallest id; a range without rows inside the span gets an
    empty pack (records 0), which a read skips."""
    conn = store._conn
    ids = [3 * SIZE + 2, 3 * SIZE + 5, 5 * SIZE + 1, 7 * SIZE]
    _insert(conn, ORG, ids)
    assert range_packs.span(conn, KIND, (ORG,)) == (ids[0], ids[-1])
    with conn:
        range_packs.seal(conn, KIND, (ORG,))
    assert _packs(conn) == {pack: _expected(ids, pack) for pack in range(3, 7)}
    assert _packs(conn)[4][2] == 0 and _packs(conn)[6][2] == 0
    read = [
        np.frombuffer(bytes(values[0]), dtype="<i8").tolist()
        for values, _ in range_packs.packs(conn, KIND, (ORG,), ("item_ids",), "")
    ]
    assert read == [ids[:2], ids[2:3]]
    assert _newest_ids(conn) == [7 * SIZE]


def test_refresh_rebuilds_a_sealed_pack_and_seals_a_filled_range(store: Store) -> None:
    conn = store._conn
    ids = list(range(2 * SIZE + 3))
    _insert(conn, ORG, ids)
    with conn:
        range_packs.seal(conn, KIND, (ORG,))
    before = _packs(conn)
    changed = SIZE + 2  # in pack 1, sealed
    with conn:
        conn.execute(
            "UPDATE body_digests SET tlsh = ? WHERE org_id = ? AND item_id = ?",
            (_payload(changed, 1), ORG, changed),
        )
    assert _packs(conn) == before  # a write without refresh leaves the pack as it was
    with conn:
        range_packs.refresh(conn, KIND, [((ORG,), changed), ((ORG,), 2 * SIZE + 1)])
    after = _packs(conn)
    assert after[1] == _expected(ids, 1, {changed: 1}) != before[1]
    assert after[0] == before[0]  # an untouched pack is not rebuilt differently
    assert set(after) == {0, 1}  # a change in the newest range seals nothing new
    # a row three ranges up: the ranges between become sealed (one of them empty)
    _insert(conn, ORG, [5 * SIZE])
    with conn:
        range_packs.refresh(conn, KIND, [((ORG,), 5 * SIZE)])
    assert _packs(conn) == {
        pack: _expected([*ids, 5 * SIZE], pack, {changed: 1}) for pack in range(5)
    }
    assert _newest_ids(conn) == [5 * SIZE]


def test_behind_after_rows_stored_without_packs(store: Store) -> None:
    """Rows written past the newest range without refresh (a store older than its pack
    table): behind until sealed; one range's worth is not behind."""
    conn = store._conn
    assert not range_packs.behind(conn, KIND, (ORG,))  # no rows
    _insert(conn, ORG, range(SIZE, 2 * SIZE))
    assert not range_packs.behind(conn, KIND, (ORG,))  # all in one range
    _insert(conn, ORG, [2 * SIZE])
    assert range_packs.behind(conn, KIND, (ORG,))
    assert _newest_ids(conn) == list(range(SIZE, 2 * SIZE + 1))  # read, though unpacked
    with conn:
        range_packs.seal(conn, KIND, (ORG,))
    assert not range_packs.behind(conn, KIND, (ORG,))
    assert set(_packs(conn)) == {1}
    _insert(conn, ORG, [4 * SIZE])
    assert range_packs.behind(conn, KIND, (ORG,))  # packs exist, but two ranges unpacked


def test_the_window_bounds_cut_the_packs_they_fall_in(store: Store) -> None:
    """A window starting inside pack 1 (at one record's exact time) and ending inside
    pack 3: pack 0 is not read, packs 1 and 3 are cut on both sides of their bound, pack 2
    is whole, the newest range is read from its rows within the bounds."""
    conn = store._conn
    ids = list(range(5 * SIZE + 4))
    _insert(conn, ORG, ids)
    with conn:
        range_packs.seal(conn, KIND, (ORG,))
    since, until = _time(SIZE + 3), _time(3 * SIZE + 5)
    read = {
        np.frombuffer(bytes(values[0]), dtype="<i8")[0] // SIZE: (
            np.frombuffer(bytes(values[0]), dtype="<i8").tolist(),
            None if inside is None else inside.tolist(),
        )
        for values, inside in range_packs.packs(conn, KIND, (ORG,), ("item_ids",), since, until)
    }
    pack1 = list(range(SIZE, 2 * SIZE))
    pack3 = list(range(3 * SIZE, 4 * SIZE))
    assert read == {
        1: (pack1, [i >= SIZE + 3 for i in pack1]),  # SIZE + 3 is at since: inside
        2: (list(range(2 * SIZE, 3 * SIZE)), None),
        3: (pack3, [i <= 3 * SIZE + 5 for i in pack3]),  # 3 * SIZE + 5 is at until
    }
    # without an upper bound packs 3 and 4 are whole; the width and published blobs read
    # with the pack give the same cut as the ones fetched for it
    columns = ("item_ids", "width", "published")
    cuts = [
        (inside is None, None if inside is None else inside.tolist())
        for _, inside in range_packs.packs(conn, KIND, (ORG,), columns, since)
    ]
    assert cuts == [
        (False, [i >= SIZE + 3 for i in pack1]),
        (True, None),
        (True, None),
        (True, None),
    ]
    assert _newest_ids(conn, since=_time(5 * SIZE + 2)) == [5 * SIZE + 2, 5 * SIZE + 3]
    assert _newest_ids(conn, since=since, until=_time(5 * SIZE)) == [5 * SIZE]
    assert _newest_ids(conn, since=since, where=" AND feed_id = ?", params=(1,)) == [
        5 * SIZE + 1,
        5 * SIZE + 3,
    ]


def test_the_newest_range_is_read_in_blocks(store: Store) -> None:
    conn = store._conn
    ids = list(range(3 * SIZE))  # nothing sealed: every row is the newest range's
    _insert(conn, ORG, ids)
    blocks = list(range_packs.newest(conn, KIND, (ORG,), ("feed_id",), "", rows=5))
    assert [len(block) for block in blocks] == [5] * 4 + [4]
    assert [int(row[0]) for block in blocks for row in block] == ids
    # no time bound at all (``None``): the same rows
    exact = list(range_packs.newest(conn, KIND, (ORG,), ("feed_id",), None, rows=len(ids)))
    assert [len(block) for block in exact] == [len(ids)]  # a full block, then nothing
    assert [row for block in exact for row in block] == [row for b in blocks for row in b]
    late = list(range_packs.newest(conn, KIND, (ORG,), ("feed_id",), _time(20), _time(22)))
    assert [int(row[0]) for block in late for row in block] == [20, 21, 22]


def test_time_cut_both_sides() -> None:
    times = np.array([b"2026-01-01", b"2026-01-02", b"2026-01-03"], dtype="S10").tobytes()
    assert range_packs.time_cut(times, 10, "2026-01-02").tolist() == [False, True, True]
    assert range_packs.time_cut(times, 10, "", "2026-01-02").tolist() == [True, True, False]


def test_a_scope_of_the_wrong_shape_is_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="does not match"):
        range_packs.sealed(store._conn, KIND, (ORG, "model"))
