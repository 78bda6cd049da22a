"""The window's event vectors read as packs (migration 0018, feedmd/store/event_packs.py)
give exactly what the row-by-row read and a brute-force scan give: the same items, the same
scores bit for bit, on both sides of the threshold, cut by window time and feed, after
writes into sealed ranges, and for vectors stored before the packs existed."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from conftest import at, event_packs_in_step

from feedmd.fingerprints.vectors import as_stored, normalise, split_stored, to_stored
from feedmd.store import Store, event_packs, open_store
from feedmd.store.schema import available_migrations
from feedmd.timeutil import iso

pytestmark = pytest.mark.both_backends

MODEL = "test-model"
THRESHOLD = 0.935
EVERYTHING = 10**9  # a pack size no id reaches: every vector is read row by row


def _vectors(count: int, seed: int) -> np.ndarray:
    return normalise(np.random.default_rng(seed).normal(size=(count, 384)))


def _at_cosine(base: np.ndarray, target: float, seed: int) -> np.ndarray:
    """A unit vector at about ``target`` cosine to ``base``."""
    noise = normalise(np.random.default_rng(seed).normal(size=(1, 384)))[0]
    noise = normalise(noise - (noise @ base) * base)[0]
    return normalise(target * base + np.sqrt(1 - target**2) * noise)[0]


def _seed(store: Store, count: int = 300) -> list[tuple[int, str, bytes, str]]:
    """``count`` vectors over 30 hours in two feeds, ids with gaps; returns (id, time,
    bytes, feed) as stored."""
    vectors = _vectors(count, 1)
    rows = []
    for n, vector in enumerate(vectors):
        item_id = 7 + 3 * n
        rows.append((item_id, iso(at(0) + timedelta(minutes=6 * n)), to_stored(vector)))
    feeds = {"feed-a": rows[0::2], "feed-b": rows[1::2]}
    for feed, part in feeds.items():
        store.seed_window_vectors("o", feed, MODEL, part, THRESHOLD)
    return [(*row, feed) for feed, part in feeds.items() for row in part]


def _queries(stored: list[tuple[int, str, bytes, str]]) -> np.ndarray:
    """Queries near stored vectors just above and just below the threshold, an exact copy
    and a random one."""
    by_id = {row[0]: row for row in stored}
    base = [split_stored([by_id[i][2]]) for i in (7 + 3 * 250, 7 + 3 * 40, 7 + 3 * 120)]
    units = [(c.astype(np.float32) * v)[0] for c, v in base]
    made = [
        _at_cosine(units[0], THRESHOLD + 0.003, 2),
        _at_cosine(units[1], THRESHOLD - 0.003, 3),
        units[2],
        _vectors(1, 9)[0],
    ]
    return as_stored(np.stack(made))


def _brute(stored, queries, since: str, feed: str | None = None):  # type: ignore[no-untyped-def]
    """The exact answer from the rows themselves, best first, ties oldest first."""
    rows = [r for r in stored if r[1] >= since and (feed is None or r[3] == feed)]
    rows.sort(key=lambda r: (r[1], r[0]))
    codes, inverses = split_stored([r[2] for r in rows])
    out = []
    for query in queries:
        qcodes, _ = split_stored([to_stored(query)])
        dots = codes.astype(np.int64) @ qcodes[0].astype(np.int64)
        lengths = np.sqrt(float(np.sum(qcodes[0].astype(np.int64) ** 2)))
        scores = dots * inverses.astype(np.float64) * (1.0 / lengths)
        order = sorted(range(len(rows)), key=lambda i: (-scores[i], rows[i][1], rows[i][0]))
        out.append([(rows[i][0], float(scores[i])) for i in order if scores[i] >= THRESHOLD][:8])
    return out


def _scan(store: Store, queries: np.ndarray, hours: int, feed: str | None = None):  # type: ignore[no-untyped-def]
    scan = store.event_scan("o", feed, at(0) + timedelta(hours=hours), MODEL)
    assert scan is not None
    return scan.hits(queries, 8, THRESHOLD), scan.rows_read


@pytest.mark.parametrize("pack_items", [1, 5, 64, EVERYTHING])
@pytest.mark.parametrize(("hours", "feed"), [(0, None), (13, None), (13, "feed-b")])
def test_packs_give_the_rows_and_brute_force_answer(
    store: Store, monkeypatch: pytest.MonkeyPatch, pack_items: int, hours: int, feed: str | None
) -> None:
    monkeypatch.setattr(event_packs, "PACK_ITEMS", pack_items)
    stored = _seed(store)
    if pack_items < EVERYTHING:
        assert event_packs_in_step(store) > 1
    queries = _queries(stored)
    since = iso(at(0) + timedelta(hours=hours))
    found, read = _scan(store, queries, hours, feed)
    expected = _brute(stored, queries, since, feed)
    assert found == expected  # same items, same order, same scores bit for bit
    assert read == sum(1 for r in stored if r[1] >= since and feed in (None, r[3]))
    if hours == 0 and feed is None:
        assert found[0] and found[0][0][1] >= THRESHOLD  # just above: found
        assert all(item != 7 + 3 * 40 for item, _ in found[1])  # just below: not found
        assert found[2][0] == (7 + 3 * 120, pytest.approx(1.0))
        assert found[3] == []
    if hours == 13:  # item 40 (4 h) is out of the window, 250 (25 h) and 120 (12 h) too
        assert all(item != 7 + 3 * 120 for item, _ in found[2])


def test_a_write_into_a_sealed_range_rebuilds_its_pack(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An item of an old id range gets its vector late (a restored item caught up): its
    pack is rebuilt in the same transaction and the scan finds it."""
    monkeypatch.setattr(event_packs, "PACK_ITEMS", 5)
    stored = _seed(store)
    late = _vectors(1, 42)[0]
    row = (8, iso(at(3)), to_stored(late))  # id 8 lies in the first, sealed range
    store.seed_window_vectors("o", "feed-a", MODEL, [row], THRESHOLD)
    event_packs_in_step(store)
    found, _ = _scan(store, as_stored(late[None, :]), 0)
    assert found == _brute([*stored, (*row, "feed-a")], as_stored(late[None, :]), iso(at(0)))
    assert found[0][0][0] == 8


def test_vectors_stored_before_the_packs_are_packed_by_the_first_scan(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(event_packs, "PACK_ITEMS", 5)
    stored = _seed(store)
    with store._conn:
        store._conn.execute("DELETE FROM event_packs")
    org_id = int(store._conn.execute("SELECT id FROM orgs WHERE name = 'o'").fetchone()[0])
    assert event_packs.behind(store._conn, org_id, MODEL)
    queries = _queries(stored)
    # read before any pack exists (every vector from item_events), then packed
    scan = store.event_scan("o", None, at(0), MODEL)
    assert scan is not None
    assert event_packs_in_step(store) > 10
    assert scan.hits(queries, 8, THRESHOLD) == _brute(stored, queries, iso(at(0)))


def test_a_store_migrated_to_0018_with_vectors_scans_them_all(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Vectors written by a feedmd before migration 0018; opening the store applies it and
    the first scan packs them and finds every one."""
    monkeypatch.setattr(event_packs, "PACK_ITEMS", 5)
    migrations = available_migrations()
    before = [m for m in migrations if m.name < "0018"]
    assert migrations[len(before)].name.startswith("0018_")  # stops just before 0018
    old = open_store(database, before)
    try:
        stored = _seed_raw(old)
    finally:
        old.close()
    store = open_store(database)
    try:
        queries = _queries(stored)
        found, read = _scan(store, queries, 0)
        assert found == _brute(stored, queries, iso(at(0)))
        assert read == len(stored)
        assert event_packs_in_step(store) > 10
    finally:
        store.close()


def _seed_raw(store: Store) -> list[tuple[int, str, bytes, str]]:
    """The rows ``_seed`` writes, written as a store before 0018 holds them (no packs)."""
    scratch = []
    vectors = _vectors(300, 1)
    with store._conn:
        conn = store._conn
        conn.execute("INSERT INTO orgs (name, created_at) VALUES ('o', '2026-01-01')")
        for feed in ("feed-a", "feed-b"):
            conn.execute(
                "INSERT INTO feeds (name, org_id, url, poll_minutes) VALUES"
                " (?, (SELECT id FROM orgs WHERE name = 'o'), 'https://x.invalid/', 60)",
                (feed,),
            )
        for n, vector in enumerate(vectors):
            feed = "feed-a" if n % 2 == 0 else "feed-b"
            row = (7 + 3 * n, iso(at(0) + timedelta(minutes=6 * n)), to_stored(vector), feed)
            conn.execute(
                "INSERT INTO item_events (item_id, org_id, feed_id, published_at, event_id,"
                " score, threshold, model, vector) SELECT ?, o.id, f.id, ?, ?, 0.0, ?, ?, ?"
                " FROM orgs o JOIN feeds f ON f.org_id = o.id WHERE f.name = ?",
                (row[0], row[1], row[0], THRESHOLD, MODEL, row[2], feed),
            )
            scratch.append(row)
    return scratch
