"""`feedmd eval headlines|pairs`: the metrics on hand-made data, errors on bad files, and
the figures on the development data (eval/)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import EVAL

from feedmd.cli.main import main
from feedmd.errors import EvalDataError
from feedmd.settings import Settings
from feedmd.tools.evaluation.headlines import (
    LabelledHeadline,
    evaluate_headlines,
    evaluate_pairs,
    score_headlines,
)


def row(id_: str, story: str, title: str = "t", minute: int = 0) -> LabelledHeadline:
    return LabelledHeadline(
        id_, title, f"https://x.example/{id_}", "p", f"2014-03-10T10:{minute:02d}:00Z", story
    )


def test_metrics_on_a_hand_computed_example() -> None:
    rows = [row("a", "s1"), row("b", "s1"), row("c", "s2"), row("d", "s1")]
    # clusters {a, b, c} and {d}; stories s1 = {a, b, d}, s2 = {c}
    outcome = {
        "a": ("kept", None, None, None),
        "b": ("duplicate", "jaccard", "a", 0.7),
        "c": ("duplicate", "simhash", "a", 2.0),
        "d": ("kept", None, None, None),
    }
    report = score_headlines(rows, outcome)
    assert report["merges"] == 2
    assert report["merge_precision"] == 0.5
    assert report["merges_by_rule"] == {"jaccard": 1, "simhash": 1}
    assert [(m["id"], m["matched_id"]) for m in report["false_merges"]] == [("c", "a")]
    # predicted pairs ab ac bc (3), gold pairs ab ad bd (3), shared ab (1)
    assert report["pairwise"]["precision"] == round(1 / 3, 4)
    assert report["pairwise"]["recall"] == round(1 / 3, 4)
    # B-cubed precision: a 2/3, b 2/3, c 1/3, d 1 -> 8/12; recall: a 2/3, b 2/3, c 1, d 1/3
    assert report["bcubed"]["precision"] == round(8 / 12, 4)
    assert report["bcubed"]["recall"] == round((2 / 3 + 2 / 3 + 1 + 1 / 3) / 4, 4)
    assert report["largest_cluster"]["size"] == 3


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_replay_through_the_real_stage_1(tmp_path: Path) -> None:
    rows = [
        {
            "id": "1",
            "title": "Pope Leo to undergo surgery for lung growth",
            "url": "https://a.example/1",
            "publisher": "A",
            "published": "2014-03-10T10:00:00Z",
            "story": "pope",
        },
        {
            "id": "2",
            "title": "Pope Leo to undergo surgery for lung growth - BBC",
            "url": "https://b.example/2",
            "publisher": "B",
            "published": "2014-03-10T11:30:00Z",
            "story": "pope",
        },
        {
            "id": "3",
            "title": "QuantumScape Q3 2026 Earnings Date and Estimates",
            "url": "https://c.example/3",
            "publisher": "C",
            "published": "2014-03-10T12:00:00Z",
            "story": "qs",
        },
        {
            "id": "4",
            "title": "Pope Leo to undergo surgery for lung growth",
            "url": "https://a.example/1?utm_source=x",
            "publisher": "A",
            "published": "2014-03-10T12:10:00Z",
            "story": "pope",
        },
    ]
    report = evaluate_headlines(write_jsonl(tmp_path / "h.jsonl", rows), Settings())
    assert report["items"] == 4
    assert report["merges"] == 2
    assert report["merges_by_rule"] == {"jaccard": 1, "url": 1}
    assert report["merge_precision"] == 1.0


def test_pairs_counts(tmp_path: Path) -> None:
    rows = [
        {
            "id": "p1",
            "a": "Pope Leo to undergo surgery for lung growth",
            "b": "Pope Leo to undergo surgery for lung growth - AP",
            "label": "same",
        },
        {
            "id": "p2",
            "a": "Stocks rally as inflation cools in March",
            "b": "Pope Leo to undergo surgery for lung growth",
            "label": "different",
        },
        {"id": "p3", "a": "Fed raises rates", "b": "Fed lifts interest rates", "label": "same"},
        {"id": "p4", "a": "x y z w", "b": "x y z w", "label": "unsure"},
    ]
    report = evaluate_pairs(write_jsonl(tmp_path / "p.jsonl", rows), Settings())
    assert (report["tp"], report["fp"], report["fn"], report["tn"]) == (1, 0, 1, 1)
    assert report["precision"] == 1.0 and report["recall"] == 0.5


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json\n", ":1: not JSON"),
        ('{"id": "1"}\n', ":1: missing key(s) title"),
        ("[1, 2]\n", ":1: not a JSON object"),
    ],
)
def test_bad_files_name_the_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(EvalDataError, match=re.escape(message)):
        evaluate_headlines(path, Settings())
    result = CliRunner().invoke(main, ["eval", "headlines", str(path)])
    assert result.exit_code == 1 and message in result.output


UCI = EVAL / "headlines" / "uci-dev.jsonl"
STS = EVAL / "headline-pairs" / "sts-dev.jsonl"


def test_uci_urls_never_normalise_alike() -> None:
    from feedmd import normalize_url

    urls = [json.loads(line)["url"] for line in UCI.read_text().splitlines() if line.strip()]
    normalised = [normalize_url(url) for url in urls]
    assert all(normalised)
    assert len(set(normalised)) == len(urls)
