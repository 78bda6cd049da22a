"""Issue 13: a run reads the window through candidate keys, and decides exactly as when it
reads the whole window. A seeded store (both sides of every threshold: Jaccard,
containment, simhash, CJK, the subject gate, entry ids and URLs in and out of the window
and scope, TLSH reprint and similar tiers, shingle containment) is decided through
``Store.full_snapshot`` (the old path, the reference) and through ``Store.snapshot`` /
``Store.body_snapshot``; every decision, with its evidence, must be equal."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
import tlsh
from conftest import at, fixture_bodies

from feedmd.models import Decision, Entry, Page
from feedmd.settings import Settings
from feedmd.stages import stage1, stage2
from feedmd.stages.scrape import fingerprint
from feedmd.store import SeedItem, Store, candidates, digest_packs, open_store
from feedmd.store.body_candidates import _near_digests
from feedmd.timeutil import iso

pytestmark = pytest.mark.both_backends

NOW = at(12)
BODIES = fixture_bodies()
TEXTS = sorted(BODIES)
WORDS = [
    "council",
    "approves",
    "budget",
    "plan",
    "after",
    "long",
    "debate",
    "over",
    "transit",
    "funding",
    "city",
    "schools",
    "storm",
    "damages",
    "homes",
    "along",
    "coast",
    "power",
    "restored",
    "thousands",
    "residents",
    "court",
    "rules",
    "against",
    "state",
    "ban",
    "union",
    "workers",
    "strike",
    "port",
    "talks",
    "stall",
    "prices",
    "rise",
    "again",
    "market",
    "shares",
    "fall",
    "investors",
    "worry",
    "inflation",
    "report",
    "bank",
    "raises",
    "rates",
    "energy",
    "costs",
    "climb",
    "police",
    "arrest",
    "suspect",
    "downtown",
    "shooting",
    "hospital",
    "opens",
    "new",
    "wing",
    "cancer",
    "research",
    "team",
    "wins",
    "title",
    "season",
    "final",
    "coach",
    "praises",
    "defense",
    "fans",
    "celebrate",
    "streets",
    "festival",
    "returns",
    "weekend",
    "music",
    "food",
    "vendors",
    "bridge",
    "closes",
    "repairs",
    "traffic",
    "delays",
    "commuters",
    "warned",
    "farmers",
    "market",
    "moves",
    "summer",
    "hours",
    "mayor",
    "unveils",
    "housing",
    "strategy",
    "rents",
    "soar",
]
NAMES = ["QuantumScape", "Rivian", "Nvidia", "Boeing", "Pfizer", "Tesla", "Intel", "Oracle"]
TEMPLATES = [
    "{} Q3 2026 Earnings Date and Estimates",
    "{} stock falls after analyst downgrade",
    "{} shares rise on record quarterly deliveries",
]
KO_LEADS = ["삼성전자", "어드밴트", "서울시", "엠젠솔루션"]
KO_PARTS = [
    "스마트 돌봄 서비스 확대",
    "신형 반도체 공장 착공",
    "온디바이스 AI 기술 공개",
    "지역 상생 협약 체결",
    "하반기 실적 전망 발표",
    "친환경 버스 노선 신설",
]
HOSTS = ["daily.example", "wire.example", "herald.example", "post.example"]


def _entry(n: int, feed: str, title: str, published, host: str, entry_id: str = "") -> Entry:
    url = f"https://{host}/story/{n}"
    return Entry(
        feed=feed,
        org="o",
        entry_id=entry_id or f"e{n}",
        link=url,
        url=url,
        title=title,
        publisher=host,
        published=published,
        fetched=NOW,
    )


def _headline(rng: random.Random, size: int) -> list[str]:
    words = rng.sample(WORDS, size)
    words[0] = words[0].capitalize()
    if rng.random() < 0.5:
        words.insert(1, rng.choice(NAMES))
    return words


def _variant(rng: random.Random, words: list[str], changes: int, extra: int) -> list[str]:
    out = list(words)
    for _ in range(changes):
        out[rng.randrange(1, len(out))] = rng.choice(WORDS)
    if extra > 0:
        out += rng.sample(WORDS, extra)
    if extra < 0:
        out = out[:extra]
    return out


def _prose(rng: random.Random, kind: str, base: str) -> str:
    paragraphs = list(BODIES[base])
    if kind == "trimmed":
        paragraphs = paragraphs[: max(1, len(paragraphs) - 1)]
    elif kind == "mixed":
        other = BODIES[rng.choice(TEXTS)]
        paragraphs = paragraphs[: len(paragraphs) // 2] + list(other)
    elif kind == "different":
        paragraphs = list(BODIES[rng.choice(TEXTS)])
    return "\n\n".join(paragraphs)


def _page(entry: Entry, key: str, markdown: str, settings: Settings) -> Page:
    base = Page(url_hash=key, url=entry.url, org="o", status="ok", markdown=markdown)
    return fingerprint(base, settings)


@dataclasses.dataclass
class Corpus:
    store: Store
    batch: list[Entry]
    bodies: dict[str, str]  # entry key -> markdown of its page ("" failed)


@pytest.fixture
def seeded(database: str) -> Iterator[Callable[..., Corpus]]:
    """``seeded(settings, seed=7)``: a corpus stored in this test's database (closed after)."""
    opened: list[Store] = []

    def make(settings: Settings, seed: int = 7) -> Corpus:
        corpus = _seed(database, settings, seed)
        opened.append(corpus.store)
        return corpus

    yield make
    for store in opened:
        store.close()


def _seed(database: str, settings: Settings, seed: int = 7) -> Corpus:
    rng = random.Random(seed)
    store = open_store(database)
    items: list[SeedItem] = []
    stories: list[tuple[list[str], str, str]] = []  # words, body, host
    long_titles: list[list[str]] = []
    n = 0

    def stored(title: str, hours: float, feed: str, host: str, body: str | None) -> int:
        nonlocal n
        n += 1
        entry = _entry(n, feed, title, NOW - timedelta(hours=hours), host)
        candidate = stage1.prepare(entry)
        page = None
        if body is not None:
            page = _page(entry, candidate.page_key, _prose(rng, "same", body), settings)
        items.append(SeedItem(candidate=candidate, page=page))
        return n

    for number in range(60):
        words = _headline(rng, rng.randint(4, 8))
        body = rng.choice(TEXTS)
        host = rng.choice(HOSTS)
        hours = rng.choice([1, 5, 20, 40, 47.9, 48.1, 60])
        stored(" ".join(words), hours, rng.choice(["f1", "f2"]), host, body)
        stories.append((words, body, host))
        if number % 3 == 0:  # a second kept telling, partly overlapping
            stored(" ".join(_variant(rng, words, 2, 1)), hours / 2, "f1", host, body)
    for _ in range(20):
        words = rng.sample(WORDS, 20)
        long_titles.append(words)
        stored(
            " ".join(words), rng.choice([3, 30, 50]), rng.choice(["f1", "f2"]), "wire.example", None
        )
    for template in TEMPLATES:
        for name in NAMES[:4]:
            stored(template.format(name), rng.choice([2, 10, 30]), "f1", rng.choice(HOSTS), None)
    for lead in KO_LEADS:
        for _ in range(4):
            title = f"{lead}, " + " ".join(rng.sample(KO_PARTS, 3))
            stored(
                title, rng.choice([2, 10, 30, 50]), rng.choice(["f1", "f2"]), "news.example", None
            )
    ids = store.seed_items(items, settings, NOW)
    # duplicates and failures: their entry ids and URLs still count, their titles do not
    extra = []
    for position in range(0, 40, 4):
        candidate = items[position].candidate
        n += 1
        entry = _entry(n, "f2", candidate.entry.title, candidate.entry.published, "copy.example")
        extra.append(SeedItem(stage1.prepare(entry), "duplicate", ids[position]))
        n += 1
        entry = _entry(
            n, "f1", "Failed " + candidate.entry.title, candidate.entry.published, "x.example"
        )
        extra.append(SeedItem(stage1.prepare(entry), "failed"))
    store.seed_items(extra, settings, NOW)

    batch: list[Entry] = []
    bodies: dict[str, str] = {}

    def new(
        title: str, feed: str, host: str, markdown: str, entry_id: str = "", url_n: int = 0
    ) -> None:
        nonlocal n
        n += 1
        entry = _entry(
            url_n or n,
            feed,
            title,
            NOW - timedelta(minutes=rng.randint(1, 50)),
            host,
            entry_id or f"new{n}",
        )
        batch.append(entry)
        bodies[entry.key] = markdown

    for words, body, host in stories:
        for changes, extra_words in ((0, 0), (1, 0), (2, 0), (3, 1), (1, 3), (0, -1), (0, 2)):
            if rng.random() < 0.45:
                kind = rng.choice(["same", "trimmed", "mixed", "different"])
                markdown = "" if rng.random() < 0.05 else _prose(rng, kind, body)
                new(
                    " ".join(_variant(rng, words, changes, extra_words)),
                    rng.choice(["f1", "f2"]),
                    rng.choice([host, host, "other.example"]),
                    markdown,
                )
    for words in long_titles:
        new(
            " ".join(_variant(rng, words, 1, 0)),
            rng.choice(["f1", "f2"]),
            "wire.example",
            _prose(rng, "different", TEXTS[0]),
        )
    for template in TEMPLATES:
        for name in NAMES[2:]:
            new(template.format(name), "f1", rng.choice(HOSTS), _prose(rng, "different", TEXTS[1]))
    for lead in [*KO_LEADS, "새로운"]:
        for _ in range(3):
            new(
                f"{lead}: " + " ".join(rng.sample(KO_PARTS, rng.randint(2, 4))),
                rng.choice(["f1", "f2"]),
                "news.example",
                _prose(rng, "different", TEXTS[2]),
            )
    for position in rng.sample(range(len(items)), 25):  # repeated entry ids and URLs
        entry = items[position].candidate.entry
        if position % 2:
            new(
                "Entirely unrelated words here today",
                rng.choice(["f1", "f2"]),
                "z.example",
                "",
                entry_id=entry.entry_id,
            )
        else:
            new(
                "Another unrelated headline appears somewhere",
                rng.choice(["f1", "f2"]),
                entry.url.split("/")[2],
                "",
                url_n=int(entry.entry_id[1:]),
            )
    return Corpus(store, batch, bodies)


def _pages(corpus: Corpus, first: stage1.Stage1Result, settings: Settings) -> dict:
    pages = {}
    for candidate in first.survivors:
        markdown = corpus.bodies[candidate.key]
        key = (candidate.entry.org, candidate.page_key)
        if not markdown:
            pages[key] = Page(
                url_hash=candidate.page_key,
                url=candidate.entry.url,
                org="o",
                status="failed",
                error="gone",
            )
        else:
            pages[key] = _page(candidate.entry, candidate.page_key, markdown, settings)
    return pages


def _both_ways(corpus: Corpus, settings: Settings) -> tuple[Counter[str], Counter[str]]:
    store, batch = corpus.store, corpus.batch
    known = store.known_entries(batch)
    full = store.full_snapshot(batch, settings, NOW)
    keyed = store.snapshot(batch, settings, NOW)
    few = store.snapshot(batch[:2], settings, NOW)
    assert len(few.headlines) < len(full.headlines) / 4  # the point: fewer rows read
    reference = stage1.decide(batch, full, known, settings, NOW)
    result = stage1.decide(batch, keyed, known, settings, NOW)
    assert result.decisions == reference.decisions
    assert result.candidates == reference.candidates
    pages = _pages(corpus, reference, settings)
    survivors = reference.survivors
    body_reference = stage2.decide(survivors, pages, full, settings, NOW)
    keyed_bodies = store.body_snapshot(survivors, pages, settings, NOW)
    few_bodies = store.body_snapshot(survivors[:1], pages, settings, NOW)
    assert len(few_bodies.bodies) < len(full.bodies) / 2
    assert stage2.decide(survivors, pages, keyed_bodies, settings, NOW) == body_reference
    first_rules = Counter(d.rule or d.decision for d in reference.decisions.values())
    first_rules["blocked"] = sum(
        "subject_gate_blocked" in d.evidence for d in reference.decisions.values()
    )
    second = Counter(
        f"{d.decision}:{d.rule}:{d.evidence.get('verdict', '')}" for d in body_reference.values()
    )
    return first_rules, second


def _packs_in_step(store: Store) -> int:
    """Every pack equals a fresh build from body_digests, and only the newest range of an
    org is unpacked; returns how many packs hold records."""
    conn = store._conn
    packs = conn.execute("SELECT * FROM digest_packs ORDER BY org_id, pack").fetchall()
    with store._conn:
        for org_id, pack, *_ in packs:
            digest_packs._build(conn, org_id, pack)
    assert conn.execute("SELECT * FROM digest_packs ORDER BY org_id, pack").fetchall() == packs
    for (org_id,) in conn.execute("SELECT DISTINCT org_id FROM body_digests").fetchall():
        last = conn.execute(
            "SELECT MAX(item_id) FROM body_digests WHERE org_id = ?", (org_id,)
        ).fetchone()[0]
        assert (digest_packs._sealed(conn, org_id) or 0) >= last // digest_packs.PACK_ITEMS - 1
    assert digest_packs.behind(conn) == []
    return sum(1 for row in packs if row[4])


@pytest.mark.both_backends(slow_on_postgresql=True)
@pytest.mark.parametrize(
    ("pack_items", "few", "pairs"), [(4096, 256, True), (4096, 256, False), (5, 0, False)]
)
@pytest.mark.parametrize("scope", ["feed", "org"])
def test_stage1_and_stage2_decide_the_same_through_keys(
    seeded: Callable[..., Corpus],
    scope: str,
    pack_items: int,
    few: int,
    pairs: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the default pack size the corpus is all in the newest (unpacked) range; with
    5 ids a pack, in ~40 packs, some cut by the window cutoff. Headline candidates come
    from the stored token pairs (``title_pairs``), or without them from the rarest
    tokens' postings (the corpus is small: every token is rare) or, with
    ``FEW_CANDIDATES`` 0, from counting every token's postings."""
    monkeypatch.setattr(digest_packs, "PACK_ITEMS", pack_items)
    monkeypatch.setattr(candidates, "FEW_CANDIDATES", few)
    monkeypatch.setattr(candidates, "PAIRS", pairs)
    settings = dataclasses.replace(Settings(), dedup_scope=scope)
    corpus = seeded(settings)
    assert (_packs_in_step(corpus.store) > 10) == (pack_items == 5)
    first, second = _both_ways(corpus, settings)
    # both sides of the thresholds were met
    rules = ["url", "jaccard", "containment", "cjk", "kept", "blocked"]
    # in feed scope a stored entry id of the same feed is an entry seen before, not a match
    for rule in rules + (["entry-id"] if scope == "org" else []):
        assert first[rule] > 0, (rule, first)
    assert any(key.startswith("duplicate:tlsh") for key in second), second
    assert any(key.startswith("duplicate:shingles") for key in second), second
    assert any(key.startswith("kept:similar-") for key in second), second


def _brute_near(
    rows: list[tuple[int, int, str, str]], digest: str, feed: int | None, settings: Settings
) -> set[int]:
    """The two bodies stage 2 can name, by ``tlsh.diff`` over the window rows in window
    order (published, item id): the first within the reprint distance, the closest."""
    hit = best = None
    for item_id, item_feed, _, other in sorted(rows, key=lambda row: (row[2], row[0])):
        if feed is not None and item_feed != feed:
            continue
        distance = tlsh.diff(digest, other)
        if distance > settings.similar_tlsh_distance:
            continue
        if hit is None and distance <= min(
            settings.tlsh_max_distance, settings.similar_tlsh_distance
        ):
            hit = item_id
        if best is None or distance < best[0]:
            best = (distance, item_id)
    return {item for item in (hit, best[1] if best else None) if item is not None}


@pytest.mark.both_backends(slow_on_postgresql=True)
@pytest.mark.parametrize("pack_items", [4096, 5, 1])
def test_tlsh_candidates_equal_a_brute_force_scan(
    seeded: Callable[..., Corpus], pack_items: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window's digests as packs (some cut by the window cutoff) and the newest range:
    for each new digest, in org and feed scope, the same two bodies as ``tlsh.diff`` over
    every row of the window; the records read are exactly the window's."""
    monkeypatch.setattr(digest_packs, "PACK_ITEMS", pack_items)
    settings = Settings()
    corpus = seeded(settings)
    conn = corpus.store._conn
    cutoff = iso(NOW - timedelta(hours=settings.dedup_window_hours))
    org_id = conn.execute("SELECT id FROM orgs").fetchone()[0]
    rows = [
        (item_id, feed_id, published, "T1" + raw.hex().upper())
        for item_id, feed_id, published, raw in conn.execute(
            "SELECT item_id, feed_id, published_at, tlsh FROM body_digests"
        )
    ]
    inside = [row for row in rows if row[2] >= cutoff]
    assert len(inside) < len(rows)  # some stored digests are older than the window
    window = digest_packs.window_digests(conn, org_id, cutoff)
    read = window.item_ids if window.inside is None else window.item_ids[window.inside]
    assert sorted(read.tolist()) == sorted(row[0] for row in inside)
    digests = [
        fingerprint(Page(url_hash="x", url="", org="o", status="ok", markdown=text), settings)
        for text in corpus.bodies.values()
        if text
    ]
    queries = [page.digest for page in digests if page.digest][:40]
    feeds = sorted({row[1] for row in rows})
    near = 0
    for feed in (None, *feeds):
        scoped = [(digest, feed) for digest in queries]
        found = _near_digests(conn, org_id, cutoff, scoped, settings)
        expected = set().union(*(_brute_near(inside, d, feed, settings) for d in queries))
        assert found == expected
        near += len(expected)
    assert near > 10


@pytest.mark.both_backends(slow_on_postgresql=True)
@pytest.mark.parametrize(("few", "pairs"), [(256, True), (256, False), (0, False)])
def test_simhash_matches_come_through_the_blocks(
    seeded: Callable[..., Corpus], few: int, pairs: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(candidates, "FEW_CANDIDATES", few)
    monkeypatch.setattr(candidates, "PAIRS", pairs)
    settings = dataclasses.replace(
        Settings(), jaccard_threshold=0.97, containment_threshold=0.99, subject_gate=False
    )
    first, _ = _both_ways(seeded(settings, seed=11), settings)
    assert first["simhash"] > 0, first


def test_settings_the_keys_cannot_serve_read_the_whole_window(
    seeded: Callable[..., Corpus],
) -> None:
    settings = dataclasses.replace(Settings(), simhash_max_bits=5)
    corpus = seeded(settings)
    snapshot = corpus.store.snapshot(corpus.batch, settings, NOW)
    assert snapshot == corpus.store.full_snapshot(corpus.batch, settings, NOW)


@pytest.mark.both_backends(slow_on_postgresql=True)
def test_keys_follow_overrides_and_backfill(
    seeded: Callable[..., Corpus], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(digest_packs, "PACK_ITEMS", 5)
    settings = Settings()
    corpus = seeded(settings)
    store = corpus.store
    before = store.snapshot(corpus.batch, settings, NOW)
    # the keys of existing stores are filled once after the migration
    with store._conn:
        store._conn.execute("DELETE FROM title_keys")
        store._conn.execute("DELETE FROM title_pairs")
        store._conn.execute("DELETE FROM body_keys")
        store._conn.execute("DELETE FROM body_digests")
        store._conn.execute(
            "INSERT INTO window_keys_dirty (item_id) SELECT id FROM items WHERE decision = 'kept'"
        )
    assert store.sync_window_keys() > 0
    assert store.sync_window_keys() == 0
    assert store.snapshot(corpus.batch, settings, NOW) == before
    _packs_in_step(store)
    # a merged item leaves the window's keys (and its pack); a restored one comes back
    kept = before.headlines[0].item_id
    store.merge_item(kept, before.headlines[1].item_id, "tester", NOW)
    _packs_in_step(store)
    _both_ways(corpus, settings)
    store.restore_item(kept, "tester", NOW)
    _packs_in_step(store)
    _both_ways(corpus, settings)


def test_digests_stored_before_the_packs_are_packed_before_a_read(
    seeded: Callable[..., Corpus], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store migrated to 0013 with its digests already stored: the first read packs
    them, and decides as the whole window does."""
    monkeypatch.setattr(digest_packs, "PACK_ITEMS", 5)
    settings = Settings()
    corpus = seeded(settings)
    with corpus.store._conn:
        corpus.store._conn.execute("DELETE FROM digest_packs")
    assert digest_packs.behind(corpus.store._conn)
    _both_ways(corpus, settings)
    assert _packs_in_step(corpus.store) > 10


def test_keys_follow_any_writer_of_items(
    seeded: Callable[..., Corpus], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer that knows nothing of the keys (a retry recovering a failed item, a
    script): the triggers list what it changed, the next read recomputes it."""
    monkeypatch.setattr(digest_packs, "PACK_ITEMS", 5)
    settings = Settings()
    corpus = seeded(settings)
    store = corpus.store
    with store._conn:
        failed = [
            row[0] for row in store._conn.execute("SELECT id FROM items WHERE decision = 'failed'")
        ]
        store._conn.execute(
            "UPDATE items SET decision = 'kept', stage = 'stage1' WHERE id IN (?, ?, ?)",
            failed[:3],
        )
        store._conn.execute(
            "UPDATE items SET decision = 'failed', stage = 'scrape' WHERE id IN"
            " (SELECT id FROM items WHERE decision = 'kept' ORDER BY id LIMIT 5)"
        )
    _both_ways(corpus, settings)
    _packs_in_step(store)


def _decided_as_the_whole_window_decides(
    store: Store, entry: Entry, settings: Settings
) -> Decision:
    """Stage 1's decision on one entry through the keyed window read, asserted equal to
    the decision through the whole-window reference."""
    snapshot = store.snapshot([entry], settings, NOW)
    decided = stage1.decide([entry], snapshot, set(), settings, NOW).decisions[entry.key]
    reference = stage1.decide(
        [entry], store.full_snapshot([entry], settings, NOW), set(), settings, NOW
    ).decisions[entry.key]
    assert decided == reference
    return decided


@pytest.mark.parametrize(("few", "pairs"), [(256, True), (256, False), (0, False)])
def test_headlines_sharing_exactly_the_minimum_overlap_are_candidates(
    store: Store, few: int, pairs: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fewest shared tokens a match can have, on both sides of each rule: Jaccard
    3 of 4 tokens each (3/5 = 0.6, a match) and 2 of 4 (no); containment of a 5-token
    headline in a 10-token one (5 of 5, a match) and 4 of 5 (0.8 < 0.85, no). Through
    the stored pairs, the rarest tokens and counting every token's postings (every size
    pair: tests/store/test_title_pairs.py)."""
    monkeypatch.setattr(candidates, "FEW_CANDIDATES", few)
    monkeypatch.setattr(candidates, "PAIRS", pairs)
    settings = dataclasses.replace(Settings(), subject_gate=False, simhash_max_bits=-1)
    stored = [
        "Alpha bravo charlie delta",
        "Golf hotel india juliet kilo",
        *[f"Filler{n} alpha golf hotel" for n in range(30)],  # common tokens, long postings
    ]
    ids = store.seed_items(
        [
            SeedItem(stage1.prepare(_entry(n, "f1", title, NOW - timedelta(hours=1), "a.example")))
            for n, title in enumerate(stored)
        ],
        settings,
        NOW,
    )
    cases = {
        "Alpha bravo charlie echo": ids[0],
        "Alpha bravo foxtrot echo": None,
        "Golf hotel india juliet kilo lima mike november oscar papa": ids[1],
        "Golf hotel india juliet lima mike november oscar papa quebec": None,
    }
    batch = [
        _entry(100 + n, "f1", title, NOW - timedelta(minutes=5), "b.example")
        for n, title in enumerate(cases)
    ]
    for entry, expected in zip(batch, cases.values(), strict=True):
        decided = _decided_as_the_whole_window_decides(store, entry, settings)
        assert (decided.matched.item_id if decided.matched else None) == expected, entry.title


def test_the_casing_sums_are_read_for_the_words_not_their_tokens(store: Store) -> None:
    """The subject gate asks the window's casing sums about words as written ("williams"),
    while tokens are stems ("william"): the keyed read must fetch the words' sums, or it
    decides otherwise than the whole window does."""
    settings = Settings()
    stored = [
        "Serena Williams To Open Tennis Academy",
        "Why the crowd cheered for Williams on the court",  # sentence case: Williams is
        "Fans greet Williams at the airport",  # written as a name mid-sentence
    ]
    ids = store.seed_items(
        [
            SeedItem(stage1.prepare(_entry(n, "f1", title, NOW - timedelta(hours=1), "a.example")))
            for n, title in enumerate(stored)
        ],
        settings,
        NOW,
    )
    entry = _entry(9, "f1", "Tearful: Williams To Open Tennis Academy", NOW, "b.example")
    decided = _decided_as_the_whole_window_decides(store, entry, settings)
    assert decided.decision == "duplicate" and decided.matched is not None
    assert decided.matched.item_id == ids[0]  # one name, "Williams": not two subjects
