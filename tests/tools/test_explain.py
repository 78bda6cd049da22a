"""`feedmd explain`: the decision trail of an item, found by id, URL or search string."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import DemoStores

from feedmd.cli.main import main
from feedmd.fingerprints.headlines import normalize_headline

REPRINT_URL = "http://www.circuitdesk.example/news/decart-amazon-report"


@pytest.fixture(scope="module")
def demo_db(demo_stores: DemoStores) -> Path:
    return demo_stores.copy()


def explain(db: Path, *args: str) -> object:
    result = CliRunner().invoke(main, ["explain", *args, "--db", str(db)])
    assert result.exit_code == 0, result.output
    return json.loads(result.output) if "--json" in args else result.output


def test_a_stage_2_reprint_shows_both_items_and_both_scores(demo_db: Path) -> None:
    text = explain(demo_db, REPRINT_URL)
    assert "decision: duplicate at stage2 by rule tlsh" in text
    assert "matched item" in text and "Continental Press" in text
    assert "tlsh_distance:" in text and "containment: 1.0" in text
    assert "window 48 h, scope org" in text
    (trail,) = explain(demo_db, REPRINT_URL, "--json")
    assert trail["item"]["evidence"]["tlsh_match"] == {"item_id": trail["matched"]["id"]}
    assert [s["stage"] for s in trail["stages"]] == ["fetch", "stage1", "scrape", "stage2"]


def test_a_stage_1_duplicate_shows_shared_tokens(demo_db: Path) -> None:
    url = (
        "http://www.wbrn4.example/news/national/pope-leo-surgery-lung-nodule/article_41f6b8d3.html"
    )
    (trail,) = explain(demo_db, url, "--json")
    item = trail["item"]
    assert (item["decision"], item["stage"]) == ("duplicate", "stage1")
    assert item["rule"] in ("jaccard", "containment", "simhash")
    if item["rule"] == "simhash":
        assert item["score"] <= item["threshold"]  # differing bits, at most the threshold
    else:
        assert item["score"] >= item["threshold"]
    assert set(normalize_headline("Pope Leo surgery")) <= set(item["evidence"]["shared_tokens"])
    assert trail["matched"]["decision"] == "kept"


def test_a_korean_portal_copy_shows_the_lead_token_gate(demo_db: Path) -> None:
    (trail,) = explain(demo_db, "http://v.daum.example/v/20261012150512345", "--json")
    evidence = trail["item"]["evidence"]
    assert trail["item"]["rule"] == "cjk"
    assert evidence["lead_token"] == "새솔시" and evidence["subject_gate"] == "same lead token"


def test_the_subject_gate_verdict_is_in_the_trail(demo_db: Path) -> None:
    text = explain(demo_db, "B2Gold")
    assert "subject_gate_blocked" in text
    assert "different subjects 'b2gold' / 'quantumscape'" in text  # the words, not stems


def test_by_id_and_unknown_items(demo_db: Path) -> None:
    (trail,) = explain(demo_db, "1", "--json")
    assert trail["item"]["id"] == 1
    result = CliRunner().invoke(main, ["explain", "no such headline", "--db", str(demo_db)])
    assert result.exit_code == 1 and "no item matches" in result.output
    result = CliRunner().invoke(main, ["explain", "1", "--db", "/nonexistent/x.db"])
    assert result.exit_code == 1 and "no such database" in result.output


def test_long_evidence_is_bounded_in_text_but_complete_in_json(demo_db: Path) -> None:
    from feedmd.tools.explain import EXCERPT_ITEMS, excerpt

    values = [f"token{i}" for i in range(EXCERPT_ITEMS + 5)]
    assert excerpt(values).endswith("... 5 more]")
    assert len(excerpt("x" * 1000)) < 200
