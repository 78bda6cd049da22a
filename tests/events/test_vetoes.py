"""The vetoes on both sides: templated headlines of different events stay apart, rewrites of
one event pass."""

from __future__ import annotations

import pytest

from feedmd.events.vetoes import (
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
