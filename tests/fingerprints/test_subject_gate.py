"""The subject gate: templated headlines of different subjects stay apart, real rewrites
whose first words differ keep merging."""

from __future__ import annotations

import pytest

from feedmd import normalize_headline
from feedmd.fingerprints.headlines import Headline
from feedmd.fingerprints.subject_gate import (
    CasingStats,
    alike,
    gated_match,
    is_sentence_case,
    subject_gate,
)
from feedmd.settings import Settings


def gate(a: str, b: str, casing: CasingStats | None = None) -> str | None:
    return subject_gate(
        a, normalize_headline(a), b, normalize_headline(b), casing or CasingStats(), 3
    )


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "QuantumScape Q3 2026 Earnings Date and Estimates",
            "B2Gold Q3 2026 Earnings Date and Estimates",
        ),
        (
            "Swiss stocks - Factors to watch on October 12",
            "UK stocks-factors to watch on October 12",
        ),
        ("Neighbors Review [SXSW 2014]", "Chef: SXSW 2014 Review"),
    ],
)
def test_templates_with_different_subjects_are_blocked(a: str, b: str) -> None:
    assert gate(a, b) is not None
    assert gate(b, a) is not None


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "Mt. Gox files for US bankruptcy protection",
            "Bitcoin exchange Mt. Gox files US bankruptcy amid fraud allegations",
        ),
        (
            "Bitcoin Exchange Mt. Gox Seeks US Bankruptcy Relief",
            "Mt. Gox bitcoin exchange seeks bankruptcy in Dallas",
        ),
        (
            "RPT-Mt. Gox files for US bankruptcy protection",
            "Following the Japan Filing, Now Mt. Gox Files For Bankruptcy Protection in the US",
        ),
        (
            "MtGox files for bankruptcy protection in Japan",
            "Mt Gox files for bankruptcy protection",
        ),
        (
            "Pope Leo to undergo surgery for lung growth",
            "Pope Leo to undergo surgery for lung growth",
        ),
    ],
)
def test_rewrites_are_not_blocked(a: str, b: str) -> None:
    assert gate(a, b) is None


def test_a_shared_known_name_lets_qualified_leads_through() -> None:
    a, b = "George Zimmerman to sell painting of flag", "Disgraceful: Zimmerman to sell painting"
    casing = CasingStats.build(
        [
            "Why the jury acquitted Zimmerman on all counts",
            "Protest after Zimmerman verdict in Florida",
        ]
    )
    assert gate(a, b, casing) is None


def test_a_shared_known_name_is_known_by_its_word_not_its_stem() -> None:
    # "Williams" is the token "william": the corpus has seen the word, never the stem
    a, b = "Serena Williams To Open Tennis Academy", "Tearful: Williams To Open Tennis Academy"
    casing = CasingStats.build(
        ["Why the crowd cheered for Williams on the court", "Fans greet Williams at the airport"]
    )
    assert gate(a, b, casing) is None
    assert gate(a, b) is not None  # the other side: title case says nothing, two subjects
    assert "'serena' / 'tearful'" in str(gate(a, b))  # named by their words


def test_ordinary_words_are_not_subjects_when_the_corpus_lowercases_them() -> None:
    a, b = "Falling stocks weigh on the markets today", "Rising stocks weigh on the markets today"
    assert gate(a, b) is not None  # title-case evidence missing: case says nothing
    casing = CasingStats.build(
        [
            "Traders fear falling prices this week",
            "Oil and falling demand",
            "Homes with rising prices in the city",
            "The rising tide of debt",
        ]
    )
    assert gate(a, b, casing) is None


def test_longer_differing_openings_are_rewrites() -> None:
    a = "Chinese regulators Beijing officials say Q3 2026 Earnings Date and Estimates"
    b = "B2Gold Q3 2026 Earnings Date and Estimates"
    assert gate(a, b) is None  # four tokens before the template


def test_spelling_variants() -> None:
    assert alike("mtgox", ["mt", "gox"])
    assert alike("hk", ["hong", "kong"])
    assert alike("titanfalls", ["titanfall"])
    assert alike("beiber", ["bieber"])
    assert not alike("uk", ["swiss"])


def test_sentence_case_detection() -> None:
    assert is_sentence_case(["Pope", "Leo", "undergo", "surgery", "small", "growth"])
    assert not is_sentence_case(["Pope", "Leo", "Undergo", "Surgery", "Small", "Growth"])


def test_the_gate_is_a_setting() -> None:
    a = "QuantumScape Q3 2026 Earnings Date and Estimates"
    b = "B2Gold Q3 2026 Earnings Date and Estimates"
    ta, tb = normalize_headline(a), normalize_headline(b)
    ha, hb = Headline.from_tokens(ta), Headline.from_tokens(tb)
    blocked, reason = gated_match(b, tb, hb, a, ta, ha, Settings(), CasingStats())
    assert blocked is None and reason is not None
    merged, reason = gated_match(b, tb, hb, a, ta, ha, Settings(subject_gate=False), CasingStats())
    assert merged is not None and merged.rule == "jaccard" and reason is None
