"""`feedmd export --format jsonl|markdown` (the LLM bundle) and its cursor, on the demo store.

The store is the demo's (the real pipeline on the fixture news day), built once for the
module and copied per test; corrections go through ``feedmd.delivery.overrides`` as the review page
does. Expected items are read straight from the SQLite file, not through the code under
test.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import (
    DemoStores,
    FeedItemSpec,
    Site,
    article_html,
    at,
    copy_of,
    make_config,
    rss,
    story,
)
from stores import copy_db, export, item_id, query

from feedmd.cli.main import main
from feedmd.delivery import overrides
from feedmd.delivery.exports import cursor
from feedmd.delivery.exports.text import detect_language, estimate_tokens
from feedmd.pipeline import run
from feedmd.store import Store, open_store
from feedmd.store.schema import available_migrations
from feedmd.timeutil import utcnow

pytestmark = pytest.mark.both_backends


@pytest.fixture(scope="module")
def demo_db(demo_stores: DemoStores) -> Path:
    # events off: these tests count one export entry per kept item
    # (tests/delivery/test_events_outputs.py has the one-entry-per-event exports)
    return demo_stores.copy(events=False)


@pytest.fixture
def db(demo_db: Path, backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A private copy of the demo store on the test's backend."""
    return copy_of(request, backend, demo_db, tmp_path / "feedmd.db")


def ids_of(jsonl: str) -> list[int]:
    return [int(json.loads(line)["id"].rsplit(":", 1)[1]) for line in jsonl.splitlines()]


def test_jsonl_has_one_object_per_kept_item_in_the_order_they_were_kept(db: Path | str) -> None:
    out, _ = export(db, "--format", "jsonl")
    kept = [row[0] for row in query(db, "SELECT id FROM items WHERE decision = 'kept'")]
    assert len(kept) == 38
    assert ids_of(out) == sorted(kept)  # one run: kept in id order
    records = [json.loads(line) for line in out.splitlines()]
    merged = {
        row[0]: row[1]
        for row in query(
            db,
            "SELECT matched_item_id, COUNT(*) FROM items WHERE decision = 'duplicate'"
            " GROUP BY matched_item_id",
        )
    }
    for record in records:
        number = int(record["id"].rsplit(":", 1)[1])
        assert record["text"].strip(), record["id"]
        assert record["tokens"] == estimate_tokens(record["text"]) > 0
        assert len(record["also_published_by"]) == merged.get(number, 0), record["id"]
        assert set(record) >= {"url", "title", "publisher", "published", "language", "tier"}
    pope = next(r for r in records if r["title"].startswith("Pope Leo will have surgery"))
    assert pope["publisher"] == "Continental Press" and pope["tier"] == "similar"
    assert [(a["publisher"], a["rule"]) for a in pope["also_published_by"]] == [
        ("KXLT 7 News", "jaccard"),
        ("WBRN 4 News", "jaccard"),
    ]
    assert pope["possible_duplicate_of"]["publisher"] == "Pilgrim Herald"
    korean = [r for r in records if r["publisher"] == "한빛일보"]
    assert korean and {r["language"] for r in korean} == {"ko"}
    assert {r["language"] for r in records} == {"en", "ko"}


def test_a_second_pull_with_the_cursor_is_empty_and_the_cursor_file_matches(
    db: Path, tmp_path: Path
) -> None:
    first, printed = export(db, "--format", "jsonl", "--cursor-file", str(tmp_path / "c"))
    assert (tmp_path / "c").read_text().strip() == printed
    again, same = export(db, "--format", "jsonl", "--since", printed)
    assert again == "" and same == printed
    assert len(first.splitlines()) == 38


def test_limit_pages_through_the_log_without_repeats(db: Path | str) -> None:
    seen: list[int] = []
    since: list[str] = []
    for _ in range(5):
        out, position = export(db, "--format", "jsonl", "--limit", "10", *since)
        seen += ids_of(out)
        since = ["--since", position]
    assert len(seen) == len(set(seen)) == 38


def test_cursor_across_review_corrections(db: Path | str) -> None:
    """A restored item appears in the next pull; an item merged away never reappears; one
    restored again after that appears again; the pulls before see nothing else."""
    _, position = export(db, "--format", "jsonl")
    copy = item_id(db, "KXLT 7 News", "Pope Leo will have surgery")
    canonical = item_id(db, "Continental Press", "Pope Leo will have surgery")
    store = open_store(db)
    try:
        overrides.restore(store, copy, "tester", utcnow())
    finally:
        store.close()
    out, position = export(db, "--format", "jsonl", "--since", position)
    (restored,) = [json.loads(line) for line in out.splitlines()]
    assert restored["id"].endswith(f":{copy}") and restored["publisher"] == "KXLT 7 News"
    assert restored["tier"] is None and restored["also_published_by"] == []
    # the full export now lists the restored item last, the canonical without that copy
    everything, _ = export(db, "--format", "jsonl")
    assert ids_of(everything)[-1] == copy and len(everything.splitlines()) == 39
    pope = next(json.loads(x) for x in everything.splitlines() if f':{canonical}"' in x)
    assert [a["publisher"] for a in pope["also_published_by"]] == ["WBRN 4 News"]

    store = open_store(db)
    try:
        overrides.merge(store, copy, canonical, "tester", utcnow())
    finally:
        store.close()
    out, position = export(db, "--format", "jsonl", "--since", position)
    assert out == ""
    assert copy not in ids_of(export(db, "--format", "jsonl")[0])

    store = open_store(db)
    try:
        overrides.restore(store, copy, "tester", utcnow())
    finally:
        store.close()
    out, _ = export(db, "--format", "jsonl", "--since", position)
    assert ids_of(out) == [copy]


def test_the_visibility_log_is_filled_for_a_store_made_before_it(
    demo_db: Path, tmp_path: Path
) -> None:
    """Migration 0010 on an older store: its kept items, in run and id order (a SQLite
    store: PostgreSQL stores were never older than the log)."""
    db = copy_db(demo_db, tmp_path / "old.db")
    with sqlite3.connect(db) as conn:
        conn.executescript(
            "DROP TRIGGER visibility_on_insert; DROP TRIGGER visibility_on_restore;"
            " DROP TABLE visibility;"
            " DELETE FROM schema_migrations WHERE name = '0010_visibility';"
        )
    assert any(m.name == "0010_visibility" for m in available_migrations())
    open_store(db).close()
    rows = query(db, "SELECT item_id, reason FROM visibility ORDER BY seq")
    kept = query(db, "SELECT id FROM items WHERE decision = 'kept' ORDER BY run_id, id")
    assert [r[0] for r in rows] == [k[0] for k in kept]
    assert {r[1] for r in rows} == {"existing"}


def test_bad_and_foreign_cursors_are_refused(db: Path | str) -> None:
    runner = CliRunner()
    _, position = export(db, "--format", "jsonl", "--feed", "metro")
    for since, words in (
        ("nonsense", "not a feedmd cursor"),
        ("fmc1.@@@", "not a feedmd cursor"),
        (position, "this cursor is for feed:metro, not org:newsroom"),
    ):
        result = runner.invoke(
            main, ["export", "--db", str(db), "--format", "jsonl", "--since", since]
        )
        assert result.exit_code == 2 and words in result.stderr, result.stderr
    result = runner.invoke(main, ["export", "--db", str(db), "--since", position])
    assert result.exit_code == 2 and "--since goes with the formats" in result.stderr
    assert cursor.decode(position, "feed:metro").seq > 0


def test_feed_scope_exports_only_that_feed(db: Path | str) -> None:
    out, _ = export(db, "--format", "jsonl", "--feed", "markets")
    records = [json.loads(line) for line in out.splitlines()]
    assert {r["feed"] for r in records} == {"markets"}
    assert len(records) == 14


FRONT_MATTER = re.compile(r"^---\n(id: .*?)\n---\n\n# ", re.MULTILINE | re.DOTALL)


def front_matter(text: str) -> list[dict[str, str]]:
    """The top-level keys of each item's front matter in a bundle file."""
    return [
        {
            key: value.strip()
            for key, _, value in (line.partition(":") for line in header.splitlines())
            if not key.startswith(" ")
        }
        for header in FRONT_MATTER.findall(text)
    ]


def test_markdown_bundle_is_cut_within_the_token_budget(db: Path | str, tmp_path: Path) -> None:
    jsonl_out, _ = export(db, "--format", "jsonl")
    expected = [json.loads(line)["id"] for line in jsonl_out.splitlines()]
    folder = tmp_path / "bundle"
    export(db, "--format", "markdown", "--max-tokens", "4000", "--out-dir", str(folder))
    files = sorted(folder.iterdir())
    assert [f.name for f in files] == [f"bundle-{n:03d}.md" for n in range(1, len(files) + 1)]
    assert len(files) >= 3
    found = []
    for path in files:
        text = path.read_text()
        assert estimate_tokens(text) <= 4000, path.name
        assert text.startswith("---\nid: ")
        items = front_matter(text)
        assert items and text.count("\n---\n\n# ") == len(items)  # whole items only
        found += [json.loads(item["id"]) for item in items]
        for item in items:
            assert set(item) >= {"url", "title", "publisher", "published", "tokens", "tier"}
    assert found == expected
    # a second, smaller bundle into the same folder leaves no stale file behind
    export(db, "--format", "markdown", "--max-tokens", "100000", "--out-dir", str(folder))
    assert [f.name for f in folder.iterdir()] == ["bundle-001.md"]
    # one document on standard output without a budget: the same items
    whole, _ = export(db, "--format", "markdown")
    assert [json.loads(i["id"]) for i in front_matter(whole)] == expected


def test_an_item_larger_than_the_budget_gets_a_file_of_its_own(
    db: Path | str, tmp_path: Path
) -> None:
    folder = tmp_path / "small"
    export(db, "--format", "markdown", "--max-tokens", "300", "--out-dir", str(folder))
    files = sorted(folder.iterdir())
    sizes = [estimate_tokens(path.read_text()) for path in files]
    alone = [s for s, path in zip(sizes, files, strict=True) if s > 300]
    assert alone, sizes
    for size, path in zip(sizes, files, strict=True):
        if size > 300:
            assert len(front_matter(path.read_text())) == 1
    assert sum(len(front_matter(p.read_text())) for p in files) == 38


def test_max_tokens_needs_a_folder_and_the_markdown_format(db: Path | str) -> None:
    runner = CliRunner()
    for args in (
        ["--format", "markdown", "--max-tokens", "10"],
        ["--format", "jsonl", "--max-tokens", "10", "--out-dir", "x"],
        ["--format", "markdown", "--out-dir", "x", "-o", "y"],
    ):
        result = runner.invoke(main, ["export", "--db", str(db), *args])
        assert result.exit_code == 2, result.output


def test_token_estimate_and_language() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2
    assert estimate_tokens("한국어") == 3 and estimate_tokens("東京 is") == 2 + math.ceil(4 / 4)
    assert detect_language("새솔시, AI 스마트 돌봄 플랫폼으로 홀몸 어르신 1천 명 살핀다") == "ko"
    assert detect_language("東京の天気は晴れです") == "ja"
    assert detect_language("北京今天天气很好") == "zh"
    assert detect_language("Москва сегодня солнечно и тепло") == "ru"
    assert detect_language("The mayor said that the plan was approved on Monday") == "en"
    assert detect_language("Der Bürgermeister sagte, dass die Stadt nicht mit dem Plan") == "de"
    assert detect_language("Le maire a dit que la ville est prête pour les travaux") == "fr"
    assert detect_language("Ok", "https://news.google.com/rss?hl=es-419&gl=MX") == "es"
    assert detect_language("Ok") == "und"


def test_each_run_s_new_items_come_once_and_in_order(site: Site, store: Store) -> None:
    """Two orgs, two runs: each pull returns exactly the items kept since the last one."""
    pope = site.put("http://four.example/pope", article_html("Pope", story("vatican")))
    ferry = site.put("http://other.example/ferry", article_html("Ferry", story("ferry")))
    mine = site.put("http://mine.example/strike", article_html("Strike", story("strike")))
    first = [FeedItemSpec("Pope Leo to undergo surgery for small growth", pope, at(9))]
    feed_a = site.put("http://feeds.example/a.xml", rss(first))
    feed_b = site.put(
        "http://feeds.example/b.xml",
        rss([FeedItemSpec("Miners walk out over pay at the northern pits", mine, at(10))]),
    )
    config = make_config([("pub", "a", feed_a), ("priv", "b", feed_b)], site.start())
    run(store, config, now=at(11))
    db = store.path
    out, position = export(db, "--format", "jsonl", "--org", "pub")
    assert [json.loads(x)["title"] for x in out.splitlines()] == [first[0].title]
    site.put(
        "http://feeds.example/a.xml",
        rss([*first, FeedItemSpec("Harbour council approves new ferry terminal", ferry, at(12))]),
    )
    run(store, config, now=at(13), force=True)
    out, position = export(db, "--format", "jsonl", "--org", "pub", "--since", position)
    assert [json.loads(x)["title"] for x in out.splitlines()] == [
        "Harbour council approves new ferry terminal"
    ]
    assert export(db, "--format", "jsonl", "--org", "pub", "--since", position)[0] == ""
    # the other org's pull is its own
    other, _ = export(db, "--format", "jsonl", "--org", "priv")
    (record,) = [json.loads(x) for x in other.splitlines()]
    assert record["org"] == "priv" and record["title"].startswith("Miners walk out")
