"""CJK headlines (seeds 000/001): 3-grams, IDF from window plus batch, the lead-token gate,
representatives, through the real stage 1."""

from __future__ import annotations

import dataclasses

from conftest import at

from feedmd.fingerprints import cjk
from feedmd.models import Entry, StoredHeadline, WindowSnapshot
from feedmd.settings import Settings
from feedmd.stages.stage1 import decide

JINCHEON_A = "진천군, 온디바이스 AI 기반 스마트 돌봄 구축 본격 착수"
JINCHEON_B = "진천군 온디바이스 AI기반 스마트돌봄 본격화"
ADVENT = "어드밴트, 온디바이스 AI 서비스 실증·확산 사업 참여"
MGEN = "엠젠솔루션, 온디바이스 AI 서비스 실증·확산 사업 참여"
GYEONGBUK = "경북도, 온디바이스 AI 실증사업 공모 2년째 선정"
JEUNGPYEONG = "증평군 온디바이스 AI 실증사업 공모 선정"
SETTINGS = Settings(dedup_scope="org")


def entry(title: str, minute: int, url: str | None = None, feed: str = "ko") -> Entry:
    return Entry(
        feed=feed,
        org="o",
        entry_id=f"id-{minute}-{title[:4]}",
        link=url or f"https://outlet{minute}.example/{minute}",
        url=url or f"https://outlet{minute}.example/{minute}",
        title=title,
        publisher="p",
        published=at(8, minute),
        fetched=at(12),
    )


def decisions(
    entries: list[Entry], snapshot: WindowSnapshot | None = None, settings: Settings = SETTINGS
) -> dict[str, tuple[str, str | None]]:
    result = decide(entries, snapshot or WindowSnapshot(), [], settings, at(12))
    return {
        c.entry.title: (result.decisions[c.key].decision, result.decisions[c.key].rule)
        for c in result.candidates
    }


def test_script_detection_and_lead_tokens() -> None:
    assert cjk.is_cjk(JINCHEON_A)
    assert cjk.is_cjk("東京都、新型AI活用の介護事業を開始")
    assert not cjk.is_cjk("Pope Leo to undergo surgery")
    assert cjk.lead_token(ADVENT) == "어드밴트"
    assert cjk.lead_token(JEUNGPYEONG) == "증평군"
    assert cjk.lead_token("진천군·음성군 공동 사업 - 충북일보") == "진천군"
    assert cjk.lead_token("…") == ""


def test_spacing_variants_share_grams() -> None:
    assert "스마트" in cjk.char_grams("스마트돌봄") & cjk.char_grams("스마트 돌봄")


def test_jincheon_rewrites_merge_even_in_a_batch_of_two() -> None:
    assert decisions([entry(JINCHEON_A, 1), entry(JINCHEON_B, 2)]) == {
        JINCHEON_A: ("kept", None),
        JINCHEON_B: ("duplicate", "cjk"),
    }


def test_jincheon_rewrites_merge_in_a_batch_of_three_with_a_shared_template() -> None:
    result = decisions([entry(JINCHEON_A, 1), entry(ADVENT, 2), entry(JINCHEON_B, 3)])
    assert result[JINCHEON_B] == ("duplicate", "cjk")


def test_different_subjects_with_one_template_stay_apart() -> None:
    assert decisions(
        [entry(ADVENT, 1), entry(MGEN, 2), entry(GYEONGBUK, 3), entry(JEUNGPYEONG, 4)]
    ) == {
        ADVENT: ("kept", None),
        MGEN: ("kept", None),
        GYEONGBUK: ("kept", None),
        JEUNGPYEONG: ("kept", None),
    }


def test_without_the_gate_the_template_pair_would_pass_the_threshold() -> None:
    # seed 000: 어드밴트 / 엠젠솔루션 score 0.54 weighted, above the 0.30 threshold: only the
    # lead-token gate keeps them apart
    stats = cjk.GramStats.build([cjk.char_grams(ADVENT), cjk.char_grams(MGEN)], 10)
    score = cjk.weighted_jaccard(cjk.char_grams(ADVENT), cjk.char_grams(MGEN), stats)
    assert score > 0.5
    assert (
        cjk.match_cjk(cjk.char_grams(ADVENT), "x", cjk.char_grams(MGEN), "x", stats, 0.30)
        is not None
    )


def test_threshold_both_sides() -> None:
    a, b = cjk.char_grams(JINCHEON_A), cjk.char_grams(JINCHEON_B)
    stats = cjk.GramStats.build([a, b], 10)
    score = cjk.weighted_jaccard(a, b, stats)
    assert cjk.match_cjk(a, "진천군", b, "진천군", stats, round(score, 6) - 0.000001)
    assert cjk.match_cjk(a, "진천군", b, "진천군", stats, round(score, 6) + 0.000001) is None


def test_window_history_counts_in_the_idf_and_a_stored_item_is_matched() -> None:
    stored = StoredHeadline(
        item_id=7, feed="ko", org="o", title=JINCHEON_A, tokens=(), simhash=0, published=at(6)
    )
    result = decide(
        [entry(JINCHEON_B, 5)], WindowSnapshot(headlines=(stored,)), [], SETTINGS, at(12)
    )
    decision = next(iter(result.decisions.values()))
    assert decision.rule == "cjk" and decision.matched.item_id == 7
    assert decision.evidence["lead_token"] == "진천군"


def test_original_outlet_replaces_an_earlier_portal_copy_in_the_run() -> None:
    portal = entry(JINCHEON_A, 1, url="https://v.daum.net/v/20261012080100123")
    original = entry(JINCHEON_A + " ", 5, url="https://www.jincheonnews.kr/news/1")
    later = entry(JINCHEON_B, 9)
    result = decide([portal, original, later], WindowSnapshot(), [], SETTINGS, at(12))
    by_url = {c.entry.url: result.decisions[c.key] for c in result.candidates}
    assert by_url[original.url].decision == "kept"
    assert by_url[portal.url].decision == "duplicate"
    assert by_url[portal.url].matched.batch_key == original.key
    assert by_url[later.url].matched.batch_key == original.key


def test_a_stored_portal_copy_is_never_swapped_out() -> None:
    stored = StoredHeadline(
        item_id=3, feed="ko", org="o", title=JINCHEON_A, tokens=(), simhash=0, published=at(6)
    )
    original = entry(JINCHEON_A, 5, url="https://www.jincheonnews.kr/news/1")
    result = decide([original], WindowSnapshot(headlines=(stored,)), [], SETTINGS, at(12))
    assert next(iter(result.decisions.values())).matched.item_id == 3


def test_cjk_and_english_headlines_never_compare() -> None:
    same_tokens = dataclasses.replace(SETTINGS, jaccard_threshold=0.0)
    result = decisions(
        [entry("Seoul AI care project begins in earnest now", 1), entry(JINCHEON_A, 2)],
        settings=same_tokens,
    )
    assert [d for d, _ in result.values()] == ["kept", "kept"]
