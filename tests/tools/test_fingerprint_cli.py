"""`feedmd fingerprint`, `feedmd compare` and `feedmd eval reprints` on the fixture pages
(the development reprint set is scored by the accuracy gate, tests/test_accuracy.py)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from conftest import FIXTURES, fixture_bodies

from feedmd.cli.main import main

SITE = FIXTURES / "site"
WIRE = SITE / "www.continentalpress.example/article/amazon-decart-acquisition-talks-b7e4c2.html"
REPRINT = SITE / "www.circuitdesk.example/news/decart-amazon-report.html"
OTHER = SITE / "www.capitaltribune.example/world/2026/10/12/pope-leo-lung-surgery-gemelli.html"
VIDEO = SITE / (
    "www.kxlt7.example/video/watch-crowds-st-peters-square-pope-surgery/vid_3b8e21f0.html"
)


def invoke(*args: str) -> object:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.output) if "--json" in args else result.output


def test_fingerprint_reports_digest_or_why_not() -> None:
    rows = invoke("fingerprint", str(WIRE), str(VIDEO), "--json")
    wire, video = rows
    assert wire["digest"].startswith("T1") and wire["prose_chars"] > 400
    assert wire["junk"] is None and wire["shingles"] > 100
    assert video["digest"] is None
    assert video["no_digest_reason"].startswith("prose too short")
    text = invoke("fingerprint", str(WIRE))
    assert "chars of prose, T1" in text


def test_fingerprint_of_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["fingerprint", str(tmp_path / "nope.html")])
    assert result.exit_code == 1 and "cannot read" in result.output


def test_compare_names_the_verdict_and_both_scores() -> None:
    same = invoke("compare", str(WIRE), str(REPRINT), "--json")
    assert same["verdict"] == "reprint"
    assert same["tlsh_distance"] <= 40 and same["containment"] >= 0.5
    different = invoke("compare", str(WIRE), str(OTHER), "--json")
    assert different["verdict"] == "different"
    assert different["tlsh_distance"] > 100 and different["containment"] < 0.3


def test_eval_reprints_on_text_pairs(tmp_path: Path) -> None:
    bodies = fixture_bodies()
    wire = bodies["pope-cp-wire"]
    pairs = [
        {
            "id": "r1",
            "a_text": "\n\n".join(wire),
            "b_text": "\n\n".join(wire[:-1]),
            "label": "reprint",
        },
        {
            "id": "r2",
            "a_text": "\n\n".join(wire),
            "b_text": "\n\n".join(["ROME (Wire) - " + wire[0], *wire[1:3]]),
            "label": "reprint",
        },
        {
            "id": "d1",
            "a_text": "\n\n".join(wire),
            "b_text": "\n\n".join(bodies["canon-law"]),
            "label": "different",
        },
        {"id": "n1", "a_text": "Too short.", "b_text": "\n\n".join(wire), "label": "reprint"},
    ]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in pairs))
    report = invoke("eval", "reprints", str(path), "--json")
    assert report["pairs"] == 4 and report["no_digest"] == 1
    assert report["by_matcher"]["combined"]["reprints_found"] == 2
    assert report["reprint_recall"] == round(2 / 3, 4)
    assert report["false_merges"] == [] and report["precision"] == 1.0
    assert report["by_matcher"]["tlsh"]["reprints_found"] < 2
