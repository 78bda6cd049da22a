"""Stored headline tokens kept in step with the tokeniser (migration 0019).

Every item stores its headline's tokens (``items.title_norm``) and their simhash, and its
candidate keys (``title_keys``, ``title_pairs``) are made from them. When
``normalize_headline`` changes (``HEADLINE_TOKENS_VERSION``), the items stored before
would keep the old tokens: the same headline arriving again would be tokenised one way
and its stored twin another ("2 dead ..." against "two dead ..."), and miss for as long
as the twin stays in the window. So the first window read after such a change
re-tokenises every stored item whose tokens differ, in one transaction with its headline
keys (dropped from the old tokens, written from the new; body keys do not depend on
them), and records the version: a killed run leaves all of it or none. Items whose tokens
did not change are not written. It is one pass over the store's items, once per tokeniser
version.
"""

from __future__ import annotations

from feedmd.fingerprints.headlines import (
    HEADLINE_TOKENS_VERSION,
    normalize_headline,
    simhash,
)
from feedmd.store.keys import add_title_keys, drop_title_keys
from feedmd.store.schema import Connection, has_table, to_signed64

TABLE = "headline_tokens"
# Items read per query while re-tokenising: ~1 MB of titles a batch.
BATCH = 5000


def stored_version(conn: Connection) -> int:
    """The tokeniser version the stored tokens were made with (1 before migration 0019
    recorded any)."""
    if not has_table(conn, TABLE):
        return HEADLINE_TOKENS_VERSION  # not migrated this far: nothing to do here
    row = conn.execute(f"SELECT MAX(version) FROM {TABLE}").fetchone()
    return int(row[0]) if row and row[0] is not None else 1


def behind(conn: Connection) -> bool:
    """True when stored tokens were made by an older tokeniser than this one."""
    return stored_version(conn) < HEADLINE_TOKENS_VERSION


def retokenise(conn: Connection) -> int:
    """Inside the caller's transaction: give every stored item the tokens and simhash of
    the current tokeniser, with its keys, and record the version. Returns how many items
    changed."""
    changed = 0
    last = 0
    while True:
        rows = conn.execute(
            "SELECT id, title_raw, title_norm, simhash FROM items WHERE id > ? ORDER BY id LIMIT ?",
            (last, BATCH),
        ).fetchall()
        if not rows:
            break
        last = int(rows[-1][0])
        updates = []
        for item_id, title, norm, stored_hash in rows:
            tokens = normalize_headline(title or "")
            new_norm = " ".join(tokens)
            new_hash = to_signed64(simhash(tokens))
            if new_norm != norm or new_hash != stored_hash:
                updates.append((new_norm, new_hash, int(item_id)))
        if updates:
            ids = [item_id for _, _, item_id in updates]
            drop_title_keys(conn, ids)  # computed from the old tokens, so before the update
            conn.executemany("UPDATE items SET title_norm = ?, simhash = ? WHERE id = ?", updates)
            add_title_keys(conn, ids)  # the body keys do not depend on the headline
            changed += len(updates)
    conn.execute(f"DELETE FROM {TABLE}")
    conn.execute(f"INSERT INTO {TABLE} (version) VALUES (?)", (HEADLINE_TOKENS_VERSION,))
    return changed
