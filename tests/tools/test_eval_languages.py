"""`feedmd eval languages`: a language's event threshold carried over from the measured
entries by the share rule (feedmd/tools/evaluation/languages.py). The rule on made-up
medians, the alignment checks, and the command on a small file through the real model; the
bundled NTREX file is measured by the slow accuracy test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from feedmd.cli.main import main
from feedmd.errors import EvalDataError
from feedmd.tools.evaluation.languages import (
    Baseline,
    aligned_sentences,
    carried_thresholds,
    on_step,
    share_of,
)


def test_the_share_runs_from_the_unrelated_median_to_one() -> None:
    assert share_of(0.8, 0.8) == 0.0
    assert share_of(1.0, 0.8) == 1.0
    assert share_of(0.935, 0.7682) == pytest.approx(0.7196, abs=1e-4)


def test_thresholds_are_rounded_to_the_nearest_step() -> None:
    assert on_step(0.9577) == 0.96
    assert on_step(0.9574) == 0.955
    assert on_step(0.9412) == 0.94


def test_a_language_without_an_entry_gets_the_mean_share_of_the_measured_ones() -> None:
    baselines = [Baseline("en", 0.75, 10), Baseline("de", 0.8, 10), Baseline("xx", 0.9, 10)]
    # shares 0.7 (en) and 0.8 (de): mean 0.75
    entries = {"en": 0.925, "de": 0.96}
    carried = {c.key: c for c in carried_thresholds(baselines, entries)}
    assert carried["xx"].carried == 0.975 and carried["xx"].entry is None
    assert carried["xx"].left_out is None and carried["xx"].share is None
    # each entry predicted from the other's share alone
    assert carried["en"].left_out == on_step(0.75 + 0.8 * 0.25) == 0.95
    assert carried["de"].left_out == on_step(0.8 + 0.7 * 0.2) == 0.94
    assert carried["en"].share == pytest.approx(0.7) and carried["de"].entry == 0.96


def test_pairs_across_two_languages_are_fitted_apart_from_pairs_in_one() -> None:
    baselines = [
        Baseline("en", 0.75, 10),
        Baseline("de-en", 0.75, 10),
        Baseline("en-xx", 0.8, 10),
    ]
    entries = {"en": 0.925, "de-en": 0.875}  # shares 0.7 and 0.5
    carried = {c.key: c for c in carried_thresholds(baselines, entries)}
    assert carried["en-xx"].carried == 0.9  # 0.8 + 0.5 * 0.2, not with the share 0.7
    assert carried["de-en"].left_out is None  # alone in its group: nothing to predict it


def test_a_group_without_any_entry_is_left_out() -> None:
    baselines = [Baseline("en", 0.75, 10), Baseline("en-xx", 0.8, 10)]
    carried = carried_thresholds(baselines, {"en": 0.925})
    assert [c.key for c in carried] == ["en"]


def write(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    lines = [
        json.dumps({"id": f"{lang}-{n}", "lang": lang, "article": article, "text": text})
        for n, (lang, article, text) in enumerate(rows)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_sentences_are_aligned_by_position_and_cut_to_what_every_language_has(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path / "s.jsonl",
        [
            ("en", "a", "One"),
            ("en", "b", "Two"),
            ("en", "b", "Three"),
            ("de", "a", "Eins"),
            ("de", "b", "Zwei"),
        ],
    )
    assert aligned_sentences(path) == {
        "de": [("a", "Eins"), ("b", "Zwei")],
        "en": [("a", "One"), ("b", "Two")],
    }


def test_languages_out_of_step_are_refused(tmp_path: Path) -> None:
    rows = [("en", "a", "One"), ("en", "b", "Two"), ("de", "b", "Zwei")]
    path = write(tmp_path / "s.jsonl", rows)
    with pytest.raises(EvalDataError, match="not aligned line by line"):
        aligned_sentences(path)
    one = write(tmp_path / "one.jsonl", [("en", "a", "One"), ("en", "b", "Two")])
    with pytest.raises(EvalDataError, match="at least two languages"):
        aligned_sentences(one)


SENTENCES = {
    "en": [
        ("storm", "A storm cut power to thousands of homes on the coast."),
        ("storm", "Crews worked through the night to restore electricity."),
        ("bank", "The central bank left its interest rate unchanged."),
        ("bank", "Economists had expected the decision."),
    ],
    "de": [
        ("storm", "Ein Sturm hat Tausende Häuser an der Küste vom Strom abgeschnitten."),
        ("storm", "Die Trupps arbeiteten die ganze Nacht, um den Strom wiederherzustellen."),
        ("bank", "Die Zentralbank ließ ihren Leitzins unverändert."),
        ("bank", "Ökonomen hatten die Entscheidung erwartet."),
    ],
    "fr": [
        ("storm", "Une tempête a privé d'électricité des milliers de foyers sur la côte."),
        ("storm", "Les équipes ont travaillé toute la nuit pour rétablir le courant."),
        ("bank", "La banque centrale a laissé son taux d'intérêt inchangé."),
        ("bank", "Les économistes s'attendaient à cette décision."),
    ],
}


def test_the_command_carries_entries_over_to_a_language_without_one(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl",
        [(lang, article, text) for lang, rows in SENTENCES.items() for article, text in rows],
    )
    args = ["eval", "languages", str(path), "--event-thresholds-by-language", "de=0.94 de-en=0.9"]
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["sentences"] == 4 and report["languages"] == ["de", "en", "fr"]
    rows = {row["key"]: row for row in report["thresholds"]}
    assert set(rows) == {"de", "en", "fr", "de-en", "en-fr"}
    assert rows["en"]["entry"] == 0.935 and rows["de"]["entry"] == 0.94
    assert rows["fr"]["entry"] is None and rows["en-fr"]["entry"] is None
    # 4 unrelated pairs in one language (2 x 2 across the two articles), 8 across two
    assert {key: row["pairs"] for key, row in rows.items()} == {
        "de": 4,
        "en": 4,
        "fr": 4,
        "de-en": 8,
        "en-fr": 8,
    }
    assert all(0.5 < row["median"] < 1.0 for row in rows.values())
    assert report["without_entry"] == f"fr={rows['fr']['carried']} en-fr={rows['en-fr']['carried']}"
    text = CliRunner().invoke(main, args)
    assert text.exit_code == 0 and "without_entry: fr=" in text.output


def test_the_command_names_a_missing_reference_language(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", [("de", "a", "Eins"), ("fr", "a", "Un")])
    result = CliRunner().invoke(main, ["eval", "languages", str(path)])
    assert result.exit_code == 1 and "no sentences in the reference language 'en'" in result.output


def test_a_carried_entry_is_shown_and_not_fitted_on(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl",
        [(lang, article, text) for lang, rows in SENTENCES.items() for article, text in rows],
    )
    base = ["eval", "languages", str(path), "--json", "--event-thresholds-by-language"]
    plain = json.loads(CliRunner().invoke(main, [*base, "de=0.94"]).output)
    # fr=0.99 carried over: shown as set, left out of the fit, so nothing else moves
    shown = json.loads(
        CliRunner().invoke(main, [*base, "de=0.94 fr=0.99", "--carried", "fr"]).output
    )
    fitted = json.loads(
        CliRunner().invoke(main, [*base, "de=0.94 fr=0.99", "--carried", ""]).output
    )
    rows = {row["key"]: row for row in shown["thresholds"]}
    assert rows["fr"]["entry"] is None and rows["fr"]["set"] == 0.99
    assert rows["fr"]["share"] is None and rows["fr"]["left_out"] is None
    assert "fr=" in shown["without_entry"]
    carried = {row["key"]: (row["carried"], row["left_out"]) for row in shown["thresholds"]}
    assert carried == {row["key"]: (row["carried"], row["left_out"]) for row in plain["thresholds"]}
    # fitted on, the high French entry pulls the others' carried thresholds up
    moved = {row["key"]: row["carried"] for row in fitted["thresholds"]}
    assert moved["de"] > carried["de"][0] and moved["en"] > carried["en"][0]
