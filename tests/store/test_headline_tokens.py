"""Stored headline tokens follow the tokeniser (migration 0019, feedmd/store/headline_tokens.py).

A store written by the tokeniser before number words and peoples became one token holds
"Six dead in Philippine restaurant blast" as the tokens "six ... philippine ...". The next
window read re-tokenises it, so "6 dead in Philippines restaurant blast" from another
outlet is found as its twin; left with the old tokens (the version claimed current) the
twin is missed (Jaccard 3/7). All of it happens in one transaction."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from conftest import at

import feedmd.fingerprints.headlines as headlines
from feedmd.fingerprints.headlines import HEADLINE_TOKENS_VERSION
from feedmd.models import Entry
from feedmd.settings import Settings
from feedmd.stages import stage1
from feedmd.store import SeedItem, Store, headline_tokens
from feedmd.store.keys import item_key_rows
from feedmd.store.schema import transaction

pytestmark = pytest.mark.both_backends

NOW = at(12)
SETTINGS = dataclasses.replace(Settings(), subject_gate=False)
OLD = "Six dead in Philippine restaurant blast"
UNCHANGED = "Council budget vote in May"  # the same tokens for every version
NEW = "6 dead in Philippines restaurant blast"


def _entry(n: int, title: str, host: str, minutes_ago: int) -> Entry:
    url = f"https://{host}/story/{n}"
    return Entry(
        feed="f1",
        org="o",
        entry_id=f"e{n}",
        link=url,
        url=url,
        title=title,
        publisher=host,
        published=NOW - timedelta(minutes=minutes_ago),
        fetched=NOW,
    )


def _stored_by_the_old_tokeniser(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Seed two items as version 1 made them: number words, peoples and inflections as
    themselves."""
    with monkeypatch.context() as old:
        old.setattr(headlines, "canonical_token", lambda token: token)
        ids = store.seed_items(
            [
                SeedItem(stage1.prepare(_entry(1, OLD, "a.example", 90))),
                SeedItem(stage1.prepare(_entry(2, UNCHANGED, "a.example", 80))),
            ],
            SETTINGS,
            NOW,
        )
    with transaction(store._db) as conn:
        conn.execute("UPDATE headline_tokens SET version = 1")
    return ids


def _tokens(store: Store, item_id: int) -> str:
    row = store._db.conn.execute("SELECT title_norm FROM items WHERE id = ?", (item_id,))
    return str(row.fetchone()[0])


def _decide(store: Store, entry: Entry) -> int | None:
    snapshot = store.snapshot([entry], SETTINGS, NOW)
    decided = stage1.decide([entry], snapshot, set(), SETTINGS, NOW).decisions[entry.key]
    reference = stage1.decide(
        [entry], store.full_snapshot([entry], SETTINGS, NOW), set(), SETTINGS, NOW
    ).decisions[entry.key]
    assert decided == reference  # the keys and the stored tokens agree
    return decided.matched.item_id if decided.matched else None


def test_a_store_of_older_tokens_is_retokenised_and_its_twin_found(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    twin, _ = _stored_by_the_old_tokeniser(store, monkeypatch)
    assert _tokens(store, twin) == "six dead philippine restaurant blast"
    with transaction(store._db) as conn:
        assert headline_tokens.behind(conn)
    assert _decide(store, _entry(3, NEW, "b.example", 5)) == twin
    assert _tokens(store, twin) == " ".join(headlines.normalize_headline(NEW))
    assert _tokens(store, twin).startswith("6 dead philippin")
    with transaction(store._db) as conn:
        assert not headline_tokens.behind(conn)
        assert headline_tokens.stored_version(conn) == HEADLINE_TOKENS_VERSION


def test_left_with_older_tokens_the_twin_is_missed(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other side: the same store claiming current tokens keeps "two" apart from "2"."""
    _stored_by_the_old_tokeniser(store, monkeypatch)
    with transaction(store._db) as conn:
        conn.execute("UPDATE headline_tokens SET version = ?", (HEADLINE_TOKENS_VERSION,))
    assert _decide(store, _entry(3, NEW, "b.example", 5)) is None


def test_only_items_whose_tokens_changed_are_written(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stored_by_the_old_tokeniser(store, monkeypatch)
    with transaction(store._db) as conn:
        assert headline_tokens.retokenise(conn) == 1  # "Six dead ...", not the budget
        assert headline_tokens.retokenise(conn) == 0


def test_a_failed_retokenising_changes_nothing(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    twin, _ = _stored_by_the_old_tokeniser(store, monkeypatch)

    def fail(*args: object) -> None:
        raise RuntimeError("killed while writing keys")

    monkeypatch.setattr(headline_tokens, "add_title_keys", fail)
    with pytest.raises(RuntimeError):
        store.snapshot([_entry(3, NEW, "b.example", 5)], SETTINGS, NOW)
    monkeypatch.undo()
    assert _tokens(store, twin) == "six dead philippine restaurant blast"
    with transaction(store._db) as conn:
        assert headline_tokens.stored_version(conn) == 1
    assert _decide(store, _entry(3, NEW, "b.example", 5)) == twin  # and the next read does it


def test_retokenising_leaves_the_body_keys_and_makes_the_keys_a_fresh_store_would(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stored_by_the_old_tokeniser(store, monkeypatch)
    conn = store._db.conn

    def keys() -> tuple[list[tuple[object, ...]], ...]:
        return tuple(
            sorted(tuple(row) for row in conn.execute(f"SELECT * FROM {table}").fetchall())
            for table in ("title_keys", "title_pairs", "body_keys", "body_digests")
        )

    before = keys()
    with transaction(store._db) as conn_in:
        headline_tokens.retokenise(conn_in)
    after = keys()
    assert after[2:] == before[2:]  # body keys untouched
    assert after[:2] != before[:2]  # the headline keys follow the new tokens
    ids = [row[0] for row in conn.execute("SELECT id FROM items").fetchall()]
    made = item_key_rows(conn, ids)  # what the current tokens give, as a new store writes
    assert len(after[0]) == len({row[:5] for row in made.titles})
