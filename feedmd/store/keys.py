"""The candidate keys of kept items (migration 0012): written when an item is stored kept,
kept in step with overrides and refingerprinted bodies, filled once for older stores.

Each kept item of the window is findable by what could make a new entry match it, so a run
reads only those items (``candidates.py``) instead of the whole window:

- ``title_keys``: a space-separated headline's distinct tokens (``TOKEN``) and the four
  16-bit blocks of its simhash (``SIMHASH``, kinds 1-4); the words its title writes
  mid-sentence, capitalised or lowercase, with counts (``CAPITAL`` / ``LOWER``: the subject
  gate's ``CasingStats``, summed per word over the window); a CJK headline's lead token
  (``LEAD``) and character 3-grams (``GRAM``: ``cjk.GramStats``, counted per gram).
- ``body_keys``: the sampled shingle hashes of its body (``bodies.sample_keys``).
- ``body_digests``: its TLSH digest, 35 bytes, and its feed (for the feed scope).
- ``title_pairs`` (migration 0017): a non-CJK headline's prefix token pairs, with its
  tokens and simhash (``title_pairs.py``).

Every row carries the item's org and publication time, so the window is an index range.
Keys are computed from the stored row (title, normalised tokens, simhash, body) by the
same functions the deciders use, so dropping an item's keys recomputes exactly the rows
that were written.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np

from feedmd.fingerprints import cjk
from feedmd.fingerprints.shingles import sample_keys
from feedmd.fingerprints.subject_gate import casing_counts
from feedmd.fingerprints.tlsh_index import decode_digest
from feedmd.store import digest_packs, title_pairs
from feedmd.store.dialect import POSTGRESQL, dialect_of
from feedmd.store.schema import Connection, chunks, has_table, to_unsigned64

TOKEN = 0
SIMHASH = (1, 2, 3, 4)  # blocks of bits 0-15, 16-31, 32-47, 48-63
SIMHASH_BLOCK_BITS = 16
CAPITAL = 5
LOWER = 6
LEAD = 7
GRAM = 8

TitleRow = tuple[int, int, object, str, int, int]  # org, kind, key, published, item, n
BodyRow = tuple[int, int, str, int]  # org, key, published, item
DigestRow = tuple[int, str, int, int, bytes]  # org, published, item, feed, 35 bytes

_ITEM_ROWS = (
    "SELECT i.id, i.org_id, i.feed_id, i.published_at, i.title_raw, i.title_norm, i.simhash,"
    " b.digest, b.shingles FROM items i LEFT JOIN bodies b ON b.id = i.body_id"
    " WHERE {kept} i.id IN ({marks})"
)


def simhash_blocks(value: int) -> list[int]:
    """The four 16-bit blocks of an unsigned 64-bit simhash, lowest first."""
    mask = (1 << SIMHASH_BLOCK_BITS) - 1
    return [value >> (SIMHASH_BLOCK_BITS * block) & mask for block in range(len(SIMHASH))]


def title_rows(
    org_id: int, published: str, item_id: int, title: str, norm: str, simhash: int
) -> list[TitleRow]:
    """The title keys of one kept item (``simhash`` as stored, signed)."""
    rows: list[TitleRow] = []
    if cjk.is_cjk(title):
        rows.append((org_id, LEAD, cjk.lead_token(title), published, item_id, 1))
        rows += [(org_id, GRAM, gram, published, item_id, 1) for gram in cjk.char_grams(title)]
        return rows
    rows += [(org_id, TOKEN, token, published, item_id, 1) for token in set(norm.split())]
    blocks = simhash_blocks(to_unsigned64(simhash))
    rows += [
        (org_id, kind, block, published, item_id, 1)
        for kind, block in zip(SIMHASH, blocks, strict=True)
    ]
    rows += [
        (org_id, CAPITAL if capital else LOWER, word, published, item_id, count)
        for word, capital, count in casing_counts(title)
    ]
    return rows


def body_rows(
    org_id: int,
    feed_id: int,
    published: str,
    item_id: int,
    digest: str | None,
    shingles: bytes | None,
) -> tuple[list[BodyRow], list[DigestRow]]:
    """The body keys and digest row of one kept item (none without a digest: such an item
    is not in the window's bodies)."""
    if not digest:
        return [], []
    values = np.frombuffer(shingles or b"", dtype=np.uint32)
    keys = [(org_id, key, published, item_id) for key in sample_keys(values)]
    return keys, [(org_id, published, item_id, feed_id, decode_digest(digest))]


class KeyRows(NamedTuple):
    """Computed key rows of items, per table."""

    titles: list[TitleRow]
    bodies: list[BodyRow]
    digests: list[DigestRow]
    pairs: list[title_pairs.PairRow]


def item_key_rows(conn: Connection, item_ids: Sequence[int], kept_only: bool = True) -> KeyRows:
    """The key rows of these items (of the kept ones, unless ``kept_only`` is False),
    computed from their stored rows."""
    titles: list[TitleRow] = []
    pairs: list[title_pairs.PairRow] = []
    bodies: list[BodyRow] = []
    digests: list[DigestRow] = []
    for chunk in chunks(sorted(set(item_ids))):
        kept = "i.decision = 'kept' AND" if kept_only else ""
        query = _ITEM_ROWS.format(kept=kept, marks=",".join("?" * len(chunk)))
        for (
            item_id,
            org_id,
            feed_id,
            published,
            title,
            norm,
            value,
            digest,
            shingles,
        ) in conn.execute(query, tuple(chunk)):
            titles += title_rows(org_id, published, item_id, title, norm, value)
            if not cjk.is_cjk(title):
                pairs += title_pairs.rows(org_id, published, item_id, norm, value)
            keys, digest_rows = body_rows(org_id, feed_id, published, item_id, digest, shingles)
            bodies += keys
            digests += digest_rows
    return KeyRows(titles, bodies, digests, pairs)


def add_item_keys(conn: Connection, item_ids: Iterable[int]) -> None:
    """Write the keys of these items that are kept (others are skipped)."""
    found = item_key_rows(conn, list(item_ids))
    insert_rows(conn, found.titles, found.bodies, found.digests)
    title_pairs.insert(conn, found.pairs)


def stored_key(conn: Connection, key: object) -> object:
    """A title key as bound on this backend: as it is on SQLite (an untyped column holds
    integers and text), as text on PostgreSQL (migrations/postgresql/0012)."""
    return str(key) if dialect_of(conn) == POSTGRESQL else key


def _keyed(conn: Connection, titles: Sequence[TitleRow]) -> Sequence[TitleRow]:
    if dialect_of(conn) != POSTGRESQL:
        return titles
    return [(org, kind, str(key), *rest) for org, kind, key, *rest in titles]  # type: ignore[misc]


def insert_rows(
    conn: Connection,
    titles: Sequence[TitleRow],
    bodies: Sequence[BodyRow],
    digests: Sequence[DigestRow],
) -> None:
    """Insert computed key rows (a row already there is left as it is), each table's in
    its key order: a batch then walks each index once, front to back, instead of landing
    on random pages (a key of one kind is always of one type, so the rows sort)."""
    conn.executemany(
        "INSERT INTO title_keys (org_id, kind, key, published_at, item_id, n)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        sorted(_keyed(conn, titles)),
    )
    conn.executemany(
        "INSERT INTO body_keys (org_id, key, published_at, item_id) VALUES (?, ?, ?, ?)"
        " ON CONFLICT DO NOTHING",
        sorted(bodies),
    )
    conn.executemany(
        "INSERT INTO body_digests (org_id, published_at, item_id, feed_id, tlsh)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        sorted(digests),
    )
    digest_packs.refresh(conn, [(row[0], row[2]) for row in digests])


def drop_item_keys(conn: Connection, item_ids: Iterable[int]) -> None:
    """Delete the keys of these items, kept or not (before their body changes: the rows
    to delete are recomputed from the stored title and body)."""
    titles, bodies, digests, pairs = item_key_rows(conn, list(item_ids), kept_only=False)
    title_pairs.delete(conn, pairs)
    conn.executemany(
        "DELETE FROM title_keys WHERE org_id = ? AND kind = ? AND key = ?"
        " AND published_at = ? AND item_id = ?",
        [row[:5] for row in _keyed(conn, titles)],
    )
    conn.executemany(
        "DELETE FROM body_keys WHERE org_id = ? AND key = ? AND published_at = ? AND item_id = ?",
        bodies,
    )
    conn.executemany(
        "DELETE FROM body_digests WHERE org_id = ? AND published_at = ? AND item_id = ?",
        [row[:3] for row in digests],
    )
    digest_packs.refresh(conn, [(row[0], row[2]) for row in digests])


def drop_title_keys(conn: Connection, item_ids: Iterable[int]) -> None:
    """Delete the headline keys of these items (``title_keys``, ``title_pairs``), kept or
    not, computed from their stored tokens: before the tokens change. Body keys stay."""
    found = item_key_rows(conn, list(item_ids), kept_only=False)
    title_pairs.delete(conn, found.pairs)
    conn.executemany(
        "DELETE FROM title_keys WHERE org_id = ? AND kind = ? AND key = ?"
        " AND published_at = ? AND item_id = ?",
        [row[:5] for row in _keyed(conn, found.titles)],
    )


def add_title_keys(conn: Connection, item_ids: Iterable[int]) -> None:
    """Write the headline keys of these items that are kept, from their stored tokens."""
    found = item_key_rows(conn, list(item_ids))
    insert_rows(conn, found.titles, [], [])
    title_pairs.insert(conn, found.pairs)


def kept_items_of_bodies(conn: Connection, body_ids: Iterable[int]) -> list[int]:
    """The kept items showing these bodies (whose body keys follow the body)."""
    found: list[int] = []
    for chunk in chunks(sorted(set(body_ids))):
        marks = ",".join("?" * len(chunk))
        found += [
            row[0]
            for row in conn.execute(
                f"SELECT id FROM items WHERE decision = 'kept' AND body_id IN ({marks})",
                tuple(chunk),
            )
        ]
    return found


@contextmanager
def bodies_changing(conn: Connection, body_ids: Iterable[int]) -> Iterator[None]:
    """Around a write that changes these bodies' digests or shingles: the body keys of
    their kept items are dropped before and written again after."""
    items = kept_items_of_bodies(conn, body_ids)
    drop_item_keys(conn, items)
    yield
    add_item_keys(conn, items)


def keys_dirty(conn: Connection) -> bool:
    """True when items changed (or were stored before migration 0012) since their keys
    were last computed: the triggers of 0012 list them in ``window_keys_dirty``."""
    if not has_table(conn, "window_keys_dirty"):  # a store not migrated this far
        return False
    return conn.execute("SELECT 1 FROM window_keys_dirty LIMIT 1").fetchone() is not None


def sync_dirty(conn: Connection) -> int:
    """Recompute the keys of every item the triggers listed (inside the caller's
    transaction): dropped, then written again if the item is kept. Returns how many.
    Whoever writes items (a run, a review override, a retry) needs no other care."""
    if not keys_dirty(conn):
        return 0
    done = 0
    while True:
        ids = [
            row[0]
            for row in conn.execute(
                "SELECT item_id FROM window_keys_dirty ORDER BY item_id LIMIT 5000"
            )
        ]
        if not ids:
            return done
        drop_item_keys(conn, ids)
        add_item_keys(conn, ids)
        conn.executemany("DELETE FROM window_keys_dirty WHERE item_id = ?", [(i,) for i in ids])
        done += len(ids)
