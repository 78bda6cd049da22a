"""The vetoes on both sides: templated headlines of different events stay apart, rewrites of
one event pass."""

from __future__ import annotations

import pytest

from feedmd.events.veto_words import (
    DOWN,
    DOWN_WORDS,
    MONTH_NAMES,
    MONTH_OF,
    MONTHS,
    UP,
    UP_WORDS,
    WEEKDAY_NAMES,
    WEEKDAY_OF,
    WEEKDAYS,
    positions,
)
from feedmd.events.vetoes import (
    calendar_words,
    different_numbers,
    direction,
    numbers,
    opposite_directions,
    veto,
)


def test_numbers_are_read_without_separators() -> None:
    assert numbers("Sensex gains 1,200 points; Nifty at 6,500.5") == {"1200", "65005"}
    assert numbers("No figure here") == frozenset()


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("QuantumScape Q3 2026 Earnings Date and Estimates", "QuantumScape Q2 2025 Earnings Date"),
        ("Sensex rises 120 points in early trade", "Sensex rises 85 points in early trade"),
        ("오늘의 증시: 코스피 2,650 마감", "오늘의 증시: 코스피 2,610 마감"),
    ],
)
def test_different_numbers_keep_apart(a: str, b: str) -> None:
    assert different_numbers(a, b) is not None
    assert veto(a, b) is not None


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Malaysia Airlines MH370: search area moves 1,100 km", "MH370 search moves north"),
        ("Apple to buy Beats for $3.2 billion", "Apple buys Beats Electronics for $3.2 bn"),
        ("Pope Leo to have surgery", "Pope Leo will undergo an operation"),
    ],
)
def test_shared_or_missing_numbers_pass(a: str, b: str) -> None:
    assert different_numbers(a, b) is None


def test_opposite_directions_keep_apart() -> None:
    assert direction("Dollar rises against the yen") == 1
    assert direction("Dollar falls against the yen") == -1
    assert direction("Dollar falls, then rises against the yen") == 0
    assert opposite_directions("Wall Street closes higher", "Wall Street closes lower")
    assert veto("Gold prices rise on Fed worries", "Gold prices fall on Fed worries")


def test_same_direction_or_none_passes() -> None:
    assert opposite_directions("Stocks rise after Fed", "Stocks climb as Fed holds") is None
    assert opposite_directions("Stocks rise after Fed", "Fed holds rates") is None


def test_different_subjects_before_one_template_keep_apart() -> None:
    # seed 000's Korean templates: two companies / two local governments, one template
    assert veto(
        "어드밴트, 온디바이스 AI 서비스 실증·확산 사업 참여",
        "엠젠솔루션, 온디바이스 AI 서비스 실증·확산 사업 참여",
    )
    assert veto(
        "경북도, 온디바이스 AI 실증사업 공모 2년째 선정", "증평군 온디바이스 AI 실증사업 공모 선정"
    )


def test_same_subject_rewrite_passes() -> None:
    assert (
        veto(
            "진천군, 온디바이스 AI 기반 스마트 돌봄 구축 본격 착수",
            "진천군 온디바이스 AI기반 스마트돌봄 본격화",
        )
        is None
    )
    assert (
        veto("Bitcoin exchange Mt. Gox files for bankruptcy", "Mt. Gox files for bankruptcy")
        is None
    )


def test_vetoes_can_be_chosen() -> None:
    a, b = "Gold rises 2%", "Gold falls 3%"
    assert veto(a, b, enabled=()) is None
    assert (veto(a, b, enabled=("direction",)) or "").startswith("opposite directions")


def test_no_subject_gate_for_unspaced_scripts() -> None:
    assert (
        veto(
            "日銀、マイナス金利解除を決定 17年ぶり利上げ",
            "日本銀行がマイナス金利政策の解除を決定、17年ぶりの利上げ",
        )
        is None
    )
    assert veto("日経平均、300円高で取引終了", "日経平均、450円安で取引終了")  # numbers still count


def test_every_listed_word_is_read_as_written() -> None:
    """Each form in the tables counts, whatever stemming or accents the headline pipeline
    applies elsewhere ("surged" once read "surg" and missed its list)."""
    for table, sign in ((UP, 1), (DOWN, -1)):
        for language, words in table.items():
            for word in words.split():
                assert direction(f"Index {word} today") == sign, (language, word)
                assert direction(f"INDEX {word.upper()}") == sign, (language, word)
    for tables, names, which in ((WEEKDAYS, WEEKDAY_NAMES, 0), (MONTHS, MONTH_NAMES, 1)):
        for language, table in tables.items():
            for position, forms in enumerate(positions(table)):
                for word in forms:
                    assert calendar_words(f"Report {word} x")[which] == {names[position]}, (
                        language,
                        word,
                    )


def test_no_word_is_listed_with_two_meanings() -> None:
    assert not UP_WORDS & DOWN_WORDS
    assert not (UP_WORDS | DOWN_WORDS) & (set(WEEKDAY_OF) | set(MONTH_OF))
    assert not set(WEEKDAY_OF) & set(MONTH_OF)
    for tables in (WEEKDAYS, MONTHS):
        seen: dict[str, int] = {}
        for table in tables.values():
            for position, forms in enumerate(positions(table)):
                for word in forms:
                    assert seen.setdefault(word, position) == position, word
    assert all(len(positions(table)) == 7 for table in WEEKDAYS.values())
    assert all(len(positions(table)) == 12 for table in MONTHS.values())


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("DAX schließt höher", "DAX schließt tiefer"),
        ("El Ibex 35 sube en la apertura", "El Ibex 35 baja en la apertura"),
        ("Le CAC 40 termine en hausse", "Le CAC 40 termine en baisse"),
        ("WIG20 rośnie na otwarciu", "WIG20 spada na otwarciu"),
        ("Borsa güne yükselişle başladı", "Borsa güne düşüşle başladı"),
        ("Stocks surged after the Fed", "Stocks declined after the Fed"),
        ("Dow closes higher", "DAX schliesst tiefer"),  # across languages
        ("DAX steigt", "DAX fallt"),  # an unaccented "fällt"
        ("Złoty zyskuje", "ZLOTY SPADL"),  # capitals, "ł" written "L"
        ("BORSA YÜKSELİŞLE AÇILDI", "BORSA DÜŞÜŞLE AÇILDI"),  # Turkish capital "İ"
        ("ENDEKS ARTIŞ GÖSTERDİ", "Endeks geriledi"),  # Turkish "I" for "ı"
    ],
)
def test_opposite_directions_in_every_language(a: str, b: str) -> None:
    assert (opposite_directions(a, b) or "").startswith("opposite directions")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("DAX schließt höher", "DAX klettert zum Handelsschluss"),
        ("Le CAC 40 termine en hausse", "CAC 40 closes higher"),
        ("Borsa güne düşüşle başladı", "Borsa güne geriledi"),
        ("Bayern gewinnt gegen Dortmund", "Dortmund loses to Bayern"),  # who won is no direction
        ("Legia traci punkty", "Legia zyskuje punkt"),  # "loses" is left out with "wins"
        ("Schäden in vielen Fällen", "Schäden steigen"),  # "Fällen" ("cases") is not "fallen"
    ],
)
def test_same_or_no_direction_passes_in_every_language(a: str, b: str) -> None:
    assert opposite_directions(a, b) is None


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Inflation im März gestiegen", "Inflation im April gestiegen"),
        ("Chômage: les chiffres de janvier", "Chômage: les chiffres de février"),
        ("Enflasyon Ekim'de beklentiyi aştı", "Enflasyon Eylül'de beklentiyi aştı"),
        ("Sesja w środę na GPW", "Sesja w piątek na GPW"),
        ("Sesja w srode na GPW", "Sesja w piatek na GPW"),  # unaccented
        ("CUMARTESİ MAÇI", "Pazartesi maçı"),  # Turkish capital "İ"
        ("Bolsa cierra el lunes", "Stocks close on Friday"),
        ("Wall Street closes on Wednesday, January 5", "Wall Street closes on Thursday"),
    ],
)
def test_different_days_or_months_keep_apart_in_every_language(a: str, b: str) -> None:
    assert (different_numbers(a, b) or "").startswith("different dates")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Inflation im März gestiegen", "Inflation rose in March"),
        ("Bolsa cierra el lunes", "Stocks close on Monday"),
        ("Sesja w środę na GPW", "Sesja w srode na GPW"),  # an unaccented headline
        ("Mission to Mars lands", "Rover lands on the red planet in August"),  # "mars": a planet
        ("Storm hits the coast - Sunday Times", "Storm hits the coast on Monday"),  # a publisher
        ("Jan Kowalski odchodzi z rządu", "Kowalski odchodzi z rządu w lipcu"),  # a name
        ("Messi marca dos goles", "Messi brilla en abril"),  # "marca": he scores
        ("Trump hosts Abe at Mar-a-Lago", "Trump hosts Abe in April"),  # "mär", "mar"
        ("Marco Rubio visits Kyiv", "Rubio visits Kyiv in June"),  # "março" unaccented
        ("Wal-Mart raises wages", "Walmart raises wages in July"),  # Turkish "mart"
        ("Mayo Clinic study on sleep", "Sleep study published in June"),  # Spanish "mayo"
        ("Un homme tue sa femme", "Un homme arrêté samedi"),  # "tue": French "kills"
        ("Sept morts dans un accident", "Accident: morts en octobre"),  # "sept": seven
        ("Floods hit Santo Domingo", "Floods hit the capital on Monday"),  # "domingo"
        ("Storm hits - Chicago Sun-Times", "Storm hits on Monday"),  # "sun"
        ("Kasım Süleymani öldürüldü", "Ocak'ta öldürüldü"),  # "Kasım", a name
    ],
)
def test_one_day_or_month_or_none_passes(a: str, b: str) -> None:
    assert different_numbers(a, b) is None
