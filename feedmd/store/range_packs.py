"""Range packs: the window's rows of one scope kept as one row of blobs per range of item
ids, the mechanism shared by the TLSH digest packs (``digest_packs.py``, migration 0013)
and the event vector packs (``event_packs.py``, migration 0018).

A scope is the key that splits a base table into windows: ``(org_id,)`` for
``body_digests``, ``(org_id, model)`` for ``item_events``. A pack holds the scope's rows
whose item ids fall in one range of ``items()`` ids: ``pack`` numbers the range (item id //
``items()``); ``oldest`` / ``newest`` / ``records`` / ``width`` describe its rows; the blobs
``item_ids`` and ``feed_ids`` (little-endian int64) and ``published`` (the publication times
as fixed-width text, compared as SQLite and PostgreSQL's C collation compare text) come
first, then the kind's own blobs, which ``PackKind.encode`` makes from the rows' payload.

Invariants (every writer of the base table calls ``refresh`` or ``seal`` in its
transaction):

- every id range of a scope below its newest range has a pack row (possibly empty), built
  from the base table after its last change ("sealed");
- the newest range (the scope's largest pack number + 1 and up) has no pack and is read
  from the base table directly (``newest``): once sealed it holds fewer than
  ``2 * items()`` ids.

A store whose base rows predate its pack table has every range unsealed: ``behind`` says
so and ``seal`` packs them; until then ``newest`` reads them all, so nothing is missed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from feedmd.store.schema import Connection, has_table

Scope = tuple[Any, ...]  # the scope columns' values, in ``PackKind.scope`` order

# Rows a newest-range read fetches per query when its caller names no block size: 16,384,
# above the ``2 * 4,096`` rows a sealed newest range of 4,096-id packs can hold, so a read
# after ``seal`` is one query (as it was before the packs shared this module).
ROWS = 16_384

# The columns every pack row has besides its scope, its number and its kind's blobs.
_COMMON = ("oldest", "newest", "records", "width", "item_ids", "feed_ids", "published")


@dataclass(frozen=True)
class PackKind:
    """One kind of range pack: its pack table and base table, the scope columns that split
    the base table, the base column holding each row's payload, the pack's own blob columns
    and how a range's payloads become them, and the pack size (``items``: a function, read
    at each call, so the kind's module constant stays the one place to change it)."""

    table: str
    base: str
    scope: tuple[str, ...]
    payload: str
    blobs: tuple[str, ...]
    encode: Callable[[list[Any]], tuple[bytes, ...]]
    items: Callable[[], int]


def _where(kind: PackKind, scope: Scope) -> tuple[str, tuple[Any, ...]]:
    """The SQL condition selecting one scope's rows, and its parameters."""
    if len(scope) != len(kind.scope):
        raise ValueError(f"{kind.table}: scope {scope!r} does not match {kind.scope!r}")
    return " AND ".join(f"{column} = ?" for column in kind.scope), tuple(scope)


def sealed(conn: Connection, kind: PackKind, scope: Scope) -> int | None:
    """The first pack number of the scope's newest (unpacked) range; None before any pack."""
    where, params = _where(kind, scope)
    row = conn.execute(f"SELECT MAX(pack) FROM {kind.table} WHERE {where}", params).fetchone()
    return None if row[0] is None else int(row[0]) + 1


def span(conn: Connection, kind: PackKind, scope: Scope) -> tuple[int, int] | None:
    """The smallest and largest item id of the scope's base rows; None without any."""
    where, params = _where(kind, scope)
    # Two subqueries, not MIN and MAX in one: SQLite answers a lone MIN or MAX from the
    # index's end, but both together by reading the scope's whole range (0.13 s at 1M
    # rows, 10 us as two; this runs several times a run).
    row = conn.execute(
        f"SELECT (SELECT MIN(item_id) FROM {kind.base} WHERE {where}),"
        f" (SELECT MAX(item_id) FROM {kind.base} WHERE {where})",
        (*params, *params),
    ).fetchone()
    return None if row[1] is None else (int(row[0]), int(row[1]))


def build(conn: Connection, kind: PackKind, scope: Scope, pack: int) -> None:
    """(Re)write one pack from the base table's rows of its range."""
    where, params = _where(kind, scope)
    size = kind.items()
    rows = conn.execute(
        f"SELECT item_id, feed_id, published_at, {kind.payload} FROM {kind.base}"
        f" WHERE {where} AND item_id >= ? AND item_id < ? ORDER BY item_id",
        (*params, pack * size, (pack + 1) * size),
    ).fetchall()
    times = [str(row[2]) for row in rows]
    published = [time.encode("utf-8") for time in times]
    width = max(map(len, published), default=1)
    key = (*kind.scope, "pack")
    columns = (*key, *_COMMON, *kind.blobs)
    updates = ", ".join(f"{column} = excluded.{column}" for column in columns[len(key) :])
    values = (
        *params,
        pack,
        min(times, default=""),
        max(times, default=""),
        len(rows),
        width,
        np.array([row[0] for row in rows], dtype="<i8").tobytes(),
        np.array([row[1] for row in rows], dtype="<i8").tobytes(),
        np.array(published, dtype=f"S{width}").tobytes(),
        *kind.encode([row[3] for row in rows]),
    )
    conn.execute(
        f"INSERT INTO {kind.table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
        f" ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates}",
        values,
    )


def seal(conn: Connection, kind: PackKind, scope: Scope, changed: Iterable[int] = ()) -> None:
    """Rebuild the scope's packs among ``changed`` that are sealed, then pack every range
    below the one holding its largest item id."""
    first_unpacked = sealed(conn, kind, scope)
    if first_unpacked is not None:
        for pack in sorted(set(changed)):
            if pack < first_unpacked:
                build(conn, kind, scope, pack)
    ids = span(conn, kind, scope)
    if ids is None:
        return
    size = kind.items()
    first = first_unpacked if first_unpacked is not None else ids[0] // size
    for pack in range(first, ids[1] // size):
        build(conn, kind, scope, pack)


def refresh(conn: Connection, kind: PackKind, touched: Iterable[tuple[Scope, int]]) -> None:
    """After the base rows of these ``(scope, item id)`` changed: rebuild the sealed packs
    they fall in and seal every range of their scopes below the newest one (scopes in the
    order they first appear)."""
    size = kind.items()
    by_scope: dict[Scope, set[int]] = {}
    for scope, item_id in touched:
        by_scope.setdefault(scope, set()).add(item_id // size)
    for scope, packs in by_scope.items():
        seal(conn, kind, scope, packs)


def behind(conn: Connection, kind: PackKind, scope: Scope) -> bool:
    """Whether the scope's newest, unpacked range spans more than one pack (base rows stored
    before the pack table existed): ``seal`` it before reading."""
    if not has_table(conn, kind.table):  # a store not migrated this far
        return False
    ids = span(conn, kind, scope)
    if ids is None:
        return False
    first_unpacked = sealed(conn, kind, scope)
    size = kind.items()
    first = first_unpacked if first_unpacked is not None else ids[0] // size
    return ids[1] // size > first


def time_cut(
    published: bytes, width: int, since: str, until: str | None = None
) -> npt.NDArray[np.bool_]:
    """Which records of a pack, by its ``published`` blob, were published at or after
    ``since`` (and at or before ``until``)."""
    times = np.frombuffer(published, dtype=f"S{int(width)}")
    inside = times >= since.encode("utf-8")
    if until is not None:
        inside &= times <= until.encode("utf-8")
    return inside


def packs(
    conn: Connection,
    kind: PackKind,
    scope: Scope,
    columns: Sequence[str],
    since: str,
    until: str | None = None,
) -> Iterator[tuple[tuple[Any, ...], npt.NDArray[np.bool_] | None]]:
    """The scope's non-empty packs that reach into [``since``, ``until``], in pack order:
    the values of ``columns`` and, for a pack the window's bounds cut through, which of its
    records are inside (None: all of them). ``published`` is read only for a cut pack,
    unless ``columns`` name it (and ``width``) anyway."""
    where, params = _where(kind, scope)
    bound = "" if until is None else " AND oldest <= ?"
    args = (*params, since, *(() if until is None else (until,)))
    for pack, oldest, newest, *values in conn.execute(
        f"SELECT pack, oldest, newest, {', '.join(columns)} FROM {kind.table}"
        f" WHERE {where} AND newest >= ?{bound} AND records > 0 ORDER BY pack",
        args,
    ):
        low = oldest < since  # the window's start cuts through this pack
        high = until is not None and newest > until
        inside = None
        if low or high:
            if "width" in columns and "published" in columns:
                width = values[list(columns).index("width")]
                published = values[list(columns).index("published")]
            else:
                width, published = conn.execute(
                    f"SELECT width, published FROM {kind.table} WHERE {where} AND pack = ?",
                    (*params, pack),
                ).fetchone()
            inside = time_cut(published, width, since if low else "", until if high else None)
        yield tuple(values), inside


def newest(
    conn: Connection,
    kind: PackKind,
    scope: Scope,
    columns: Sequence[str],
    since: str | None,
    until: str | None = None,
    where: str = "",
    params: Sequence[Any] = (),
    rows: int = ROWS,
) -> Iterator[list[Any]]:
    """The scope's base rows of the newest (unpacked) range published at or after ``since``
    (None: at any time; and at or before ``until``; matching the extra SQL condition
    ``where``, which starts with `` AND``, with ``params``), as rows of (item id,
    *``columns``) in item id order, in blocks of at most ``rows``: fewer than
    ``2 * items()`` once sealed, every row of a scope not sealed yet.

    Without ``since`` the query is the range's item-id range alone (the digest packs filter
    the times themselves: a time bound there could steer a planner with statistics onto
    ``body_digests``' (org_id, published_at) key and a scan of the whole window)."""
    scoped, scope_params = _where(kind, scope)
    after = (sealed(conn, kind, scope) or 0) * kind.items() - 1
    times = "" if since is None else " AND published_at >= ?"
    times += "" if until is None else " AND published_at <= ?"
    bounds = tuple(bound for bound in (since, until) if bound is not None)
    args = (*scope_params, *bounds, *params)
    while True:
        block = conn.execute(
            f"SELECT item_id, {', '.join(columns)} FROM {kind.base}"
            f" WHERE {scoped}{times}{where} AND item_id > ? ORDER BY item_id LIMIT ?",
            (*args, after, rows),
        ).fetchall()
        if not block:
            return
        yield block
        if len(block) < rows:
            return
        after = int(block[-1][0])
