"""The accuracy gate: the evaluations on the development data (../shared/eval) keep their
floors (tests/accuracy_floors.toml, with the commands that produced them)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from conftest import SHARED

from feedmd.evaluation.headlines import evaluate_headlines, evaluate_pairs
from feedmd.evaluation.pages import evaluate_pages
from feedmd.evaluation.reprints import evaluate_reprints
from feedmd.settings import Settings

FLOORS = tomllib.loads((Path(__file__).parent / "accuracy_floors.toml").read_text())
pytestmark = pytest.mark.skipif(
    not (SHARED / "eval").is_dir(), reason=f"development data not found at {SHARED / 'eval'}"
)


def test_headline_merges_and_their_precision() -> None:
    floors = FLOORS["headlines"]
    report = evaluate_headlines(SHARED / floors["file"], Settings())
    assert report["merges"] >= floors["min_merges"]
    assert report["merge_precision"] >= floors["min_merge_precision"]


def test_headline_pairs_precision_and_recall() -> None:
    floors = FLOORS["pairs"]
    report = evaluate_pairs(SHARED / floors["file"], Settings())
    assert report["precision"] >= floors["min_precision"]
    assert report["recall"] >= floors["min_recall"]


def test_prose_against_checked_bodies() -> None:
    floors = FLOORS["pages"]
    report = evaluate_pages(SHARED / floors["dir"], Settings())
    assert report["pages"] == 111
    assert report["precision"] >= floors["min_precision"]
    assert report["recall"] >= floors["min_recall"]
    assert report["f1"] >= floors["min_f1"]
    assert report["no_digest"] <= floors["max_no_digest"]


@pytest.fixture(scope="module")
def reprint_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("reprints")
    subprocess.run(
        [
            sys.executable,
            str(SHARED / "tools" / "make_reprints.py"),
            str(SHARED / "eval" / "pages"),
            str(out),
            "--seed",
            str(FLOORS["reprints"]["seed"]),
        ],
        check=True,
        capture_output=True,
    )
    return evaluate_reprints(out / "pairs.jsonl", Settings())


def test_reprint_recall_and_no_false_merge(reprint_report: dict[str, Any]) -> None:
    floors = FLOORS["reprints"]
    assert (reprint_report["reprints"], reprint_report["different"]) == (309, 102)
    assert reprint_report["reprint_recall"] >= floors["min_reprint_recall"]
    assert len(reprint_report["false_merges"]) <= floors["max_false_merges"]
    assert reprint_report["no_digest"] <= floors["max_no_digest"]
