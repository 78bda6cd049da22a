"""`feedmd eval pages`: the benchmark's shingle metric, the real extraction path, clear
errors for bad data, and floors on the development pages (eval/pages)."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import EVAL, article_html

from feedmd.errors import EvalDataError, FeedmdError
from feedmd.settings import Settings
from feedmd.tools.evaluation.pages import evaluate_pages, score_page, shingles, summarise

PAGES = EVAL / "pages"


def paragraph(name: str) -> str:
    """20 tokens found nowhere else, so shared shingles can be counted by hand."""
    return " ".join(f"{name}x{i}" for i in range(20)) + "."


def write_pages(folder: Path, pages: Sequence[tuple[str, str, str]]) -> Path:
    """Write (id, html, body) pages in the benchmark layout; return the folder."""
    (folder / "html").mkdir(parents=True)
    lines = []
    for page_id, html, body in pages:
        (folder / "html" / f"{page_id}.html.gz").write_bytes(gzip.compress(html.encode()))
        lines.append(
            json.dumps({"id": page_id, "url": f"https://x.example/{page_id}", "body": body})
        )
    (folder / "truth.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def test_shingles_are_word_4grams_with_counts() -> None:
    assert shingles("a b c d e") == {("a", "b", "c", "d"): 1, ("b", "c", "d", "e"): 1}
    assert shingles("Fort Worth, P.D.!") == {("Fort", "Worth", "P", "D"): 1}
    assert shingles("x y") == {("x", "y"): 1}  # under 4 tokens: one shingle
    assert shingles("a b c d a b c d") == {
        ("a", "b", "c", "d"): 2,
        ("b", "c", "d", "a"): 1,
        ("c", "d", "a", "b"): 1,
        ("d", "a", "b", "c"): 1,
    }
    assert shingles("") == {} and shingles("— …") == {}


def test_page_scores_by_hand() -> None:
    # truth 6 shingles, prediction 3; 2 shared: tp 2, fp 1, fn 4, normalised by 7
    score = score_page("p", "a b c d e f g h i", "d e f g h x")
    assert (score.tp, score.fp, score.fn) == pytest.approx((2 / 7, 1 / 7, 4 / 7))
    assert score.precision == pytest.approx(2 / 3)
    assert score.recall == pytest.approx(1 / 3)
    empty = score_page("q", "a b c d", "")
    assert (empty.tp, empty.fp, empty.fn) == (0.0, 0.0, 1.0)
    assert empty.recall == 0.0
    both_empty = score_page("r", "", "")
    assert both_empty.precision == both_empty.recall == 1.0


def test_summary_averages_precision_over_predictions_and_recall_over_bodies() -> None:
    scores = [score_page("a", "a b c d e f g h i", "d e f g h x"), score_page("b", "a b c d", "")]
    summary = summarise(scores)
    # precision over page a only; recall over both: (1/3 + 0) / 2
    assert summary["precision"] == round(2 / 3, 4)
    assert summary["recall"] == round(1 / 6, 4)
    assert summary["f1"] == round(2 * (2 / 3) * (1 / 6) / (2 / 3 + 1 / 6), 4)
    assert summarise([]) == {"precision": None, "recall": None, "f1": None}


def test_evaluate_pages_runs_the_real_extraction_and_scores_by_hand(tmp_path: Path) -> None:
    story = [paragraph(f"alpha{n}") for n in range(5)]
    folder = write_pages(
        tmp_path / "pages",
        [
            # the checked body lacks the last paragraph: 80 tokens, 77 shingles, all predicted;
            # the prose has 100 tokens, 97 shingles: precision 77/97, recall 1
            ("a", article_html("Alpha", story), "\n\n".join(story[:4])),
            # too little prose for a digest: no prediction, recall 0
            ("b", article_html("Beta", ["A short story."]), "A short story of a few words."),
        ],
    )
    report = evaluate_pages(folder, Settings(), per_page=True)
    precision = 77 / 97
    assert report["pages"] == 2
    assert report["precision"] == round(precision, 4)
    assert report["recall"] == 0.5
    assert report["f1"] == round(2 * precision * 0.5 / (precision + 0.5), 4)
    assert report["no_digest"] == 1 and report["no_digest_pages"] == ["b"]
    rows = {row["id"]: row for row in report["per_page"]}
    assert rows["a"]["precision"] == round(precision, 4) and rows["a"]["recall"] == 1.0
    assert rows["b"]["precision"] is None and rows["b"]["recall"] == 0.0
    assert rows["b"]["no_digest_reason"].startswith("prose too short")
    assert "per_page" not in evaluate_pages(folder, Settings())

    reference = evaluate_pages(folder, Settings(), reference=True)
    assert reference["extraction"] == "trafilatura-txt"
    assert reference["no_digest"] == 0
    assert reference["recall"] == 0.5  # page a whole; page b text shares no 4-gram


def bad_folder(tmp_path: Path, truth: str, html: dict[str, bytes] | None = None) -> Path:
    folder = tmp_path / "pages"
    (folder / "html").mkdir(parents=True)
    (folder / "truth.jsonl").write_text(truth)
    for name, data in (html or {}).items():
        (folder / "html" / name).write_bytes(data)
    return folder


GOOD = gzip.compress(b"<html><body><p>text</p></body></html>")


@pytest.mark.parametrize(
    ("truth", "html", "message"),
    [
        ('{"id": "a", "url": "u", "body": "b"}\nnot json\n', {"a.html.gz": GOOD}, ":2: not JSON"),
        ('{"id": "a", "url": "u"}\n', {}, ":1: missing key(s) body"),
        ("[1, 2]\n", {}, ":1: not a JSON object"),
        ('{"id": "a", "url": "u", "body": "b"}\n', {}, "a.html.gz: missing (page a"),
        ('{"id": "a", "url": "u", "body": "b"}\n', {"a.html.gz": b"plain"}, "cannot read"),
        (
            '{"id": "a", "url": "u", "body": "b"}\n{"id": "a", "url": "u", "body": "c"}\n',
            {"a.html.gz": GOOD},
            "duplicate id 'a'",
        ),
        ('{"id": "../a", "url": "u", "body": "b"}\n', {}, "bad page id '../a'"),
        ('{"id": "a", "url": "u", "body": 3}\n', {}, "page a: body is not a string"),
        ("\n", {}, "no pages"),
    ],
)
def test_bad_data_gives_a_clear_error(
    tmp_path: Path, truth: str, html: dict[str, bytes], message: str
) -> None:
    folder = bad_folder(tmp_path, truth, html)
    with pytest.raises(EvalDataError, match=re.escape(message)):
        evaluate_pages(folder, Settings())


def test_missing_folder_or_truth_file(tmp_path: Path) -> None:
    with pytest.raises(EvalDataError, match="not a directory"):
        evaluate_pages(tmp_path / "nowhere", Settings())
    (tmp_path / "empty").mkdir()
    with pytest.raises(EvalDataError, match=r"truth\.jsonl: missing"):
        evaluate_pages(tmp_path / "empty", Settings())
    assert issubclass(EvalDataError, FeedmdError)


@pytest.fixture(scope="module")
def dev_report() -> dict[str, Any]:
    return evaluate_pages(PAGES, Settings(), per_page=True)


# The floors on the development pages are in tests/accuracy_floors.toml.


def test_no_real_page_is_junk(dev_report: dict[str, Any]) -> None:
    junk = [
        row["id"]
        for row in dev_report["per_page"]
        if (row["no_digest_reason"] or "").startswith("junk page")
    ]
    assert junk == []
