"""The accuracy gate: the evaluations on the development data (eval/, vendored in the
repository) keep their floors (tests/accuracy_floors.toml, with the commands that produced
them). The reprint set is built by our own `feedmd eval make-reprints`, as a user would."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import REPO

from feedmd.cli.main import main
from feedmd.settings import Settings
from feedmd.tools.evaluation.headlines import evaluate_headlines, evaluate_pairs
from feedmd.tools.evaluation.pages import evaluate_pages
from feedmd.tools.evaluation.reprints import evaluate_reprints

FLOORS = tomllib.loads((Path(__file__).parent / "accuracy_floors.toml").read_text("utf-8"))


def test_headline_merges_and_their_precision() -> None:
    floors = FLOORS["headlines"]
    report = evaluate_headlines(REPO / floors["file"], Settings())
    assert report["merges"] >= floors["min_merges"]
    assert report["merge_precision"] >= floors["min_merge_precision"]


def test_headline_pairs_precision_and_recall() -> None:
    floors = FLOORS["pairs"]
    report = evaluate_pairs(REPO / floors["file"], Settings())
    assert report["precision"] >= floors["min_precision"]
    assert report["recall"] >= floors["min_recall"]


def test_prose_against_checked_bodies() -> None:
    floors = FLOORS["pages"]
    report = evaluate_pages(REPO / floors["dir"], Settings())
    assert report["pages"] == 111
    assert report["precision"] >= floors["min_precision"]
    assert report["recall"] >= floors["min_recall"]
    assert report["f1"] >= floors["min_f1"]
    assert report["no_digest"] <= floors["max_no_digest"]


@pytest.fixture(scope="module")
def reprint_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    floors = FLOORS["reprints"]
    out = tmp_path_factory.mktemp("reprints")
    args = ["eval", "make-reprints", str(REPO / floors["dir"]), str(out)]
    result = CliRunner().invoke(main, [*args, "--seed", str(floors["seed"]), "--json"])
    assert result.exit_code == 0, result.output
    made = json.loads(result.output)
    assert (made["reprint"], made["different"]) == (floors["reprints"], floors["different"])
    return evaluate_reprints(out / "pairs.jsonl", Settings())


def test_reprint_recall_and_no_false_merge(reprint_report: dict[str, Any]) -> None:
    floors = FLOORS["reprints"]
    assert (reprint_report["reprints"], reprint_report["different"]) == (
        floors["reprints"],
        floors["different"],
    )
    assert reprint_report["reprint_recall"] >= floors["min_reprint_recall"]
    assert len(reprint_report["false_merges"]) <= floors["max_false_merges"]
    assert reprint_report["no_digest"] <= floors["max_no_digest"]
