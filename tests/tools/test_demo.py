"""`feedmd demo`: the real pipeline on the fixture news day decides every entry the way
fixtures/expected/scenarios.json says, and its second run scrapes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import feedparser
import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from feedmd.cli.main import main
from feedmd.settings.config import load_config
from feedmd.store.schema import connect
from feedmd.tools.demo import DemoResult, run_demo

SCENARIOS = json.loads((FIXTURES / "expected" / "scenarios.json").read_text())
FEED_NAMES = {feed.url: feed.name for feed in load_config(FIXTURES / "demo.toml", environ={}).feeds}
HEADLINE_RULES = {"jaccard", "containment", "simhash", "cjk"}


def expected(scenario: dict[str, Any]) -> str:
    """What the pipeline should decide for a fixture entry."""
    return str(scenario["expect"])


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DemoResult, dict]]:
    out = tmp_path_factory.mktemp("demo")
    result = run_demo(out, echo=lambda _: None)
    db = connect(result.database)
    rows = {
        (row["feed"], row["entry_id"]): row
        for row in db.query(
            "SELECT i.*, f.name AS feed, m.entry_id AS matched_entry_id FROM items i"
            " JOIN feeds f ON f.id = i.feed_id LEFT JOIN items m ON m.id = i.matched_item_id"
        )
    }
    db.close()
    yield result, rows


def _expected_rows(expect: str) -> list[dict[str, Any]]:
    return [s for s in SCENARIOS if s["expect"] == expect]


def test_the_fixture_day_covers_what_the_issue_asks() -> None:
    scenarios = {s["scenario"] for s in SCENARIOS}
    assert {f"S{n}" for n in range(1, 12)} <= scenarios
    html_pages = list((FIXTURES / "site").rglob("*.html"))
    assert len(html_pages) >= 40


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: f"{s['ref']}-{s['scenario']}")
def test_every_entry_is_decided_as_the_fixtures_say(
    demo: tuple[DemoResult, dict], scenario: dict[str, Any]
) -> None:
    _, rows = demo
    key = (FEED_NAMES[scenario["feed_url"]], scenario["entry_id"])
    row = rows.get(key)
    expect = expected(scenario)
    if expect == "skipped-old" or scenario.get("rule") == "run-repeat":
        # skipped at fetch (too old) or collapsed in the feed (an id listed twice): the
        # first listing is the stored one
        assert row is None or scenario.get("rule") == "run-repeat"
        if scenario.get("rule") == "run-repeat":
            assert row is not None and row["title_raw"] != scenario["title"]
        return
    assert row is not None, key
    assert row["decision"] == expect, (scenario["why"], row["rule"], row["error"])
    if expect == "duplicate":
        assert row["stage"] == f"stage{scenario['stage']}"
        if scenario["rule"] == "headline":
            assert row["rule"] in HEADLINE_RULES
        else:
            assert row["rule"] == scenario["rule"]
        assert row["matched_entry_id"] == scenario["matches"]
    if expect == "failed":
        assert row["stage"] == "scrape" and row["error"]


def test_reports_match_the_fixtures(demo: tuple[DemoResult, dict]) -> None:
    result, _ = demo
    first, second = result.first, result.second
    edition1 = [s for s in SCENARIOS if s["edition"] == 1]
    assert first.found == len(edition1) == 49
    assert first.skipped_old == 1
    assert first.repeated_in_feed == 1
    assert first.new == 47
    stage1_drops = [
        s
        for s in edition1
        if expected(s) == "duplicate" and s["stage"] == 1 and s["rule"] != "run-repeat"
    ]
    assert sum(first.dropped_stage1.values()) == len(stage1_drops)
    assert first.dropped_stage1["url"] == 1
    assert first.dropped_stage2 == {"tlsh": 3}
    survivors = [
        s
        for s in edition1
        if expected(s) in ("kept", "failed") or (expected(s) == "duplicate" and s["stage"] == 2)
    ]
    assert first.scraped == len(survivors)
    assert first.kept == len([s for s in edition1 if expected(s) == "kept"])
    assert first.failed == 2
    assert first.no_digest == 1
    assert first.status == "partial"
    # the second run: two feeds unchanged (304), one with a late original dropped at stage 1
    assert second.feeds_not_modified == 2
    assert second.new == 1
    assert sum(second.dropped_stage1.values()) == 1
    # the two failed pages are fetched again (item retries): no other page is
    assert second.retried == 2 and second.recovered == 0
    assert second.scraped == 2 and second.reused == 0
    assert second.kept == 0


def test_outputs_are_written_per_feed(demo: tuple[DemoResult, dict]) -> None:
    result, _ = demo
    names = sorted(path.name for path in result.outputs)
    assert names == [
        "markets.atom",
        "markets.json",
        "metro.atom",
        "metro.json",
        "pope-leo.atom",
        "pope-leo.json",
    ]
    kept = sum(
        len(json.loads(p.read_text())["items"]) for p in result.outputs if p.suffix == ".json"
    )
    assert kept == result.first.kept
    for path in result.outputs:
        if path.suffix == ".atom":
            assert not feedparser.parse(path.read_bytes()).bozo


def test_demo_command_prints_both_reports(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["demo", "--out", str(tmp_path / "d")])
    assert result.exit_code == 0, result.output
    assert "run 1 as of 2026-10-12T20:00:00Z: partial" in result.output
    assert "run 2 as of 2026-10-12T22:00:00Z: ok" in result.output
    assert (tmp_path / "d" / "feedmd.db").exists()


def test_demo_never_deletes_a_database_it_did_not_make(tmp_path: Path) -> None:
    (tmp_path / "feedmd.db").write_bytes(b"production data")
    result = CliRunner().invoke(main, ["demo", "--out", str(tmp_path)])
    assert result.exit_code == 1
    assert "was not made by feedmd demo" in result.output
    assert (tmp_path / "feedmd.db").read_bytes() == b"production data"
