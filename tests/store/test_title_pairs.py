"""Stage 1's headline candidates through the stored token pairs (migration 0017,
``feedmd/store/title_pairs.py``): the same decisions as the whole window at the exact
fewest shared tokens of every pair of sizes, the settings the pairs serve (both sides of
each boundary), and the migration's SQL backfill equal to the rows feedmd writes."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from fractions import Fraction

import pytest
from conftest import at, fixture_bodies

from feedmd.errors import StoreError
from feedmd.fingerprints.headlines import normalize_headline
from feedmd.models import Entry, Page
from feedmd.settings import Settings
from feedmd.stages import stage1
from feedmd.stages.scrape import fingerprint
from feedmd.store import SeedItem, Store, candidates, digest_packs, open_store, title_pairs

pytestmark = pytest.mark.both_backends

NOW = at(12)
SIZES = range(4, 13)


def _entry(n: int, title: str, minutes_ago: int) -> Entry:
    url = f"https://pairs.example/story/{n}"
    return Entry(
        feed="f1",
        org="o",
        entry_id=f"e{n}",
        link=url,
        url=url,
        title=title,
        publisher="pairs.example",
        published=NOW - timedelta(minutes=minutes_ago),
        fetched=NOW,
    )


def _letters(number: int) -> str:
    """Four letters and an "x": a made-up word the stemmer leaves as it is."""
    return "".join(chr(ord("a") + number // 26**place % 26) for place in (3, 2, 1, 0)) + "x"


def _needed(settings: Settings, query: int, stored: int) -> int:
    """The fewest shared tokens ``match_headlines`` accepts for these sizes."""
    jaccard = Fraction(str(settings.jaccard_threshold))
    containment = Fraction(str(settings.containment_threshold))
    need = -(-jaccard.numerator * (query + stored) // (jaccard.numerator + jaccard.denominator))
    if min(query, stored) >= settings.containment_min_tokens:
        smaller = min(query, stored)
        need = min(need, -(-containment.numerator * smaller // containment.denominator))
    return need


def _boundary_cases(settings: Settings) -> list[tuple[str, str, bool]]:
    """(stored title, query title, whether they match) for every pair of sizes, sharing
    exactly the fewest tokens a match needs and one fewer. The shared tokens are the
    shortest, so they come last in the frozen order: the edge of both prefixes."""
    cases = []
    for query in SIZES:
        for stored in SIZES:
            need = _needed(settings, query, stored)
            for shared in (need - 1, need):
                if not 0 <= shared <= min(query, stored):
                    continue
                case = len(cases)
                short = [f"s{_letters(case * 20 + i)}" for i in range(shared)]
                mine = [f"storedword{_letters(case * 20 + i)}" for i in range(stored - shared)]
                theirs = [f"querytoken{_letters(case * 20 + i)}" for i in range(query - shared)]
                cases.append((" ".join(mine + short), " ".join(theirs + short), shared == need))
    return cases


@pytest.mark.parametrize(
    ("jaccard", "pairs"), [(0.6, True), (0.571, False)], ids=["pairs", "postings"]
)
def test_the_fewest_shared_tokens_of_every_size_match_through_the_pairs(
    store: Store, jaccard: float, pairs: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every size pair 4-12 on both sides of its minimum overlap: through the pairs (the
    defaults), or through the token postings where the pairs do not serve (Jaccard
    0.571), each decided as the whole window decides it."""
    monkeypatch.setattr(candidates, "FEW_CANDIDATES", 0)  # no rarest-token shortcut
    settings = dataclasses.replace(
        Settings(), jaccard_threshold=jaccard, subject_gate=False, simhash_max_bits=-1
    )
    assert title_pairs.serves(settings) is pairs
    cases = _boundary_cases(settings)
    ids = store.seed_items(
        [SeedItem(stage1.prepare(_entry(n, title, 60))) for n, (title, _, _) in enumerate(cases)],
        settings,
        NOW,
    )
    matched = 0
    for n, (_, title, expected) in enumerate(cases):
        entry = _entry(1000 + n, title, 5)
        decided = stage1.decide(
            [entry], store.snapshot([entry], settings, NOW), set(), settings, NOW
        )
        reference = stage1.decide(
            [entry], store.full_snapshot([entry], settings, NOW), set(), settings, NOW
        )
        decision = decided.decisions[entry.key]
        assert decision == reference.decisions[entry.key]
        assert (decision.matched.item_id if decision.matched else None) == (
            ids[n] if expected else None
        ), (title, cases[n][0])
        matched += expected
    assert matched > 60  # of 81 size pairs (the others, e.g. 4 and 12 tokens, never match)
    # the pairs are what found them: without the rows, a match is missed
    if pairs:
        with store._conn:
            store._conn.execute("DELETE FROM title_pairs")
        title = next(query for _, query, expected in cases if expected)
        entry = _entry(5000, title, 5)
        decided = stage1.decide(
            [entry], store.snapshot([entry], settings, NOW), set(), settings, NOW
        )
        assert decided.decisions[entry.key].matched is None


@pytest.mark.parametrize(
    ("changes", "serves"),
    [
        ({}, True),
        ({"jaccard_threshold": 0.572}, True),  # ceil(7 x 0.572) = 5 shared of 7
        ({"jaccard_threshold": 0.571}, False),  # ceil(7 x 0.571) = 4 < 5
        ({"jaccard_threshold": 0.9}, True),
        ({"containment_threshold": 0.81}, True),  # ceil(5 x 0.81) = 5
        ({"containment_threshold": 0.8}, False),  # 4 of 5
        ({"containment_min_tokens": 6}, True),
        ({"containment_min_tokens": 4}, False),  # ceil(4 x 0.85) = 4 < 5 for 5+ tokens
        ({"headline_min_tokens": 2}, True),
        ({"headline_min_tokens": 1}, False),  # a 1-token match shares one token: no pair
    ],
)
def test_settings_the_stored_pairs_serve(changes: dict, serves: bool) -> None:
    settings = dataclasses.replace(Settings(), **changes)
    assert title_pairs.serves(settings) is serves


def test_pair_keys_follow_the_frozen_order() -> None:
    """Longest first, then by code point; a prefix of n - a(n) + 2 tokens."""
    tokens = ["dd", "aaaa", "ccc", "bbbb", "zz", "éé"]  # 6 tokens: a(6) = 4, prefix 4
    assert sorted(tokens, key=title_pairs.order) == ["aaaa", "bbbb", "ccc", "dd", "zz", "éé"]
    assert title_pairs.pair_keys(tokens) == [
        "aaaa bbbb",
        "aaaa ccc",
        "aaaa dd",
        "bbbb ccc",
        "bbbb dd",
        "ccc dd",
    ]
    assert [title_pairs.rule_overlap(n) for n in range(1, 11)] == [1, 2, 2, 3, 3, 4, 5, 5, 5, 5]
    assert title_pairs.pair_keys(["one"]) == []


def test_the_migration_backfills_the_rows_feedmd_writes(store: Store) -> None:
    """0017's SQL (ranked tokens, prefix, pairs) gives exactly the rows keys.py writes,
    with ties, accented and CJK titles among them."""
    titles = [
        "Zürich café owners protest über rent rises across old town",
        "Bank of Canada holds rates as inflation eases in autumn",
        "Ab cd ef gh ij kl",  # every token the same length: the code point order decides
        "Élan vital: ça va très bien, merci beaucoup",
        "삼성전자 신형 반도체 공장 착공",  # CJK: no pairs
        "Storm damages homes along the coast",
    ]
    items = [SeedItem(stage1.prepare(_entry(n, title, 30))) for n, title in enumerate(titles)]
    store.seed_items(items, Settings(), NOW)
    query = "SELECT org_id, key, published_at, item_id, tokens, simhash FROM title_pairs"
    written = sorted(store._conn.execute(query).fetchall())
    assert len({row[3] for row in written}) == len(titles) - 1
    expected = {
        " ".join(pair)
        for title in titles[:4] + titles[5:]
        for pair in [key.split() for key in title_pairs.pair_keys(normalize_headline(title))]
    }
    assert {row[1] for row in written} == expected
    with store._conn:
        store._conn.execute("DROP TABLE title_pairs")
        store._conn.execute("DELETE FROM schema_migrations WHERE name = '0017_title_pairs'")
    assert store.apply_migrations() == ["0017_title_pairs"]
    assert sorted(store._conn.execute(query).fetchall()) == written


def test_a_bulk_load_stores_the_keys_a_run_stores(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The seeder's bulk load stages the key rows and sorts them in at the end: every key
    table (and the digest packs) equal to a store seeded item by item."""
    monkeypatch.setattr(digest_packs, "PACK_ITEMS", 5)  # ~12 sealed packs
    settings = Settings()
    texts = ["\n\n".join(paragraphs) for _, paragraphs in sorted(fixture_bodies().items())]
    items = []
    for n in range(60):
        entry = _entry(n, f"Council approves budget plan number {n} after debate {n % 7}", 50)
        candidate = stage1.prepare(entry)
        page = fingerprint(
            Page(candidate.page_key, entry.url, "o", "ok", markdown=texts[n % len(texts)]),
            settings,
        )
        items.append(SeedItem(candidate, page=page))
    tables = ["title_keys", "body_keys", "body_digests", "title_pairs", "digest_packs"]
    found = []
    for bulk in (False, True):
        store = open_store(tmp_path / f"{bulk}.db")
        if bulk:
            store.bulk_load_mode()
        for start in range(0, len(items), 25):
            store.seed_items(items[start : start + 25], settings, NOW)
        if bulk:
            assert store._conn.execute("SELECT COUNT(*) FROM title_keys").fetchone()[0] == 0
            assert _indexes(store, "items") == []  # built at the end
            store.finish_bulk_load()
        found.append({t: sorted(store._conn.execute(f"SELECT * FROM {t}")) for t in tables})
        found[-1]["indexes"] = _indexes(store, "items") + _indexes(store, "bodies")
        store.close()
    assert all(found[0][table] for table in tables)
    assert len(found[0]["indexes"]) >= 8
    assert found[1] == found[0]
    assert sorted(p.name for p in tmp_path.iterdir() if "True.db" in p.name) == ["True.db"]


def _indexes(store: Store, table: str) -> list[tuple[str, str]]:
    return store._conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ?"
        " AND sql IS NOT NULL ORDER BY name",
        (table,),
    ).fetchall()


def test_a_bulk_load_whose_second_sort_fails_says_so(tmp_path) -> None:
    """The second process sorts body_keys from the staging file: when it fails (here the
    file is gone), finishing raises instead of leaving a store without body keys."""
    settings = Settings()
    text = "\n\n".join(next(iter(sorted(fixture_bodies().items())))[1])
    entry = _entry(1, "Council approves budget plan after long debate", 50)
    candidate = stage1.prepare(entry)
    page = fingerprint(Page(candidate.page_key, entry.url, "o", "ok", markdown=text), settings)
    store = open_store(tmp_path / "s.db")
    store.bulk_load_mode()
    store.seed_items([SeedItem(candidate, page=page)], settings, NOW)
    (tmp_path / "s.db.staging").unlink()
    with pytest.raises(StoreError, match="sorting the staged body_keys rows failed"):
        store.finish_bulk_load()
    store.close()
